//! PostgreSQL timestamps (`TimestampTz`: microseconds since 2000-01-01 UTC).

/// Seconds from the Unix epoch, 1970-01-01, to PostgreSQL's epoch,
/// 2000-01-01 (PostgreSQL: `(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) *
/// SECS_PER_DAY`).
pub const POSTGRES_EPOCH_UNIX_SECS: i64 = 946_684_800;
/// Microseconds per second, the unit of `TimestampTz`
/// (PostgreSQL: `USECS_PER_SEC`).
pub const USECS_PER_SEC: i64 = 1_000_000;

/// Formats a `TimestampTz` as pg_waldump does, in UTC:
/// `2026-11-22 02:37:18.312967 UTC`.
///
/// Like pg_waldump, the seconds and the fraction are split with C's
/// truncating division, so a time before 2000 with a fraction prints a
/// negative fraction. PostgreSQL: `timestamptz_to_str` in pg_waldump's `compat.c`.
pub fn format_timestamptz(us: i64) -> String {
    let secs = us / USECS_PER_SEC + POSTGRES_EPOCH_UNIX_SECS;
    let frac = us % USECS_PER_SEC;
    let days = secs.div_euclid(86_400);
    let day_secs = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}.{frac:06} UTC",
        day_secs / 3600,
        day_secs / 60 % 60,
        day_secs % 60
    )
}

/// (year, month, day) of a count of days since 1970-01-01, proleptic
/// Gregorian calendar (H. Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_pg_waldump() {
        // The COMMIT at 0/700060 of the samples.
        assert_eq!(
            format_timestamptz(848_630_238_312_967),
            "2026-11-22 02:37:18.312967 UTC"
        );
        assert_eq!(format_timestamptz(0), "2000-01-01 00:00:00.000000 UTC");
        assert_eq!(
            format_timestamptz(-USECS_PER_SEC),
            "1999-12-31 23:59:59.000000 UTC"
        );
        // Leap day.
        assert_eq!(
            format_timestamptz(5_097_600 * USECS_PER_SEC),
            "2000-02-29 00:00:00.000000 UTC"
        );
        assert_eq!(
            format_timestamptz(5_184_000 * USECS_PER_SEC + 7),
            "2000-03-01 00:00:00.000007 UTC"
        );
        // The epoch constant is 30 years of days, 7 of them leap days.
        assert_eq!(POSTGRES_EPOCH_UNIX_SECS, (30 * 365 + 7) * 86_400);
        // Extreme values do not overflow.
        assert!(format_timestamptz(i64::MAX).ends_with(" UTC"));
        assert!(format_timestamptz(i64::MIN).ends_with(" UTC"));
    }
}
