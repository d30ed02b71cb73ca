//! [`ReservationKind`]: which reservation design a log uses, by name, and
//! the sizing rules of the `PrevLinkTable` design's table.
//!
//! PostgreSQL: `ReserveXLogInsertLocation` (`Spinlock`); seed 003
//! (`PrevLinkTable`, `PrevLinkInBuffer`); seed 001 (`Unlinked`). The
//! designs themselves are `insert::reserve`.

use crate::format::WalFormat;
use crate::named_enum::named_enum;

/// Smallest `PrevLinkTable` table: two buckets of four entries, so that a
/// key's two buckets differ (`insert::reserve::cuckoo` checks it agrees).
pub const LINK_TABLE_MIN_CAPACITY: usize = 8;
/// Smallest table [`link_table_capacity_for`] chooses (seed 003 sizes it
/// at twice the 8 insertion locks).
pub const LINK_TABLE_DEFAULT_MIN_CAPACITY: usize = 16;

/// Which reservation design to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReservationKind {
    /// Current and previous position under one PostgreSQL-style spinlock
    /// (PostgreSQL master: `ReserveXLogInsertLocation`).
    #[default]
    Spinlock,
    /// `fetch_add` on the position; prev-links go through a lock-free
    /// cuckoo hash table (seed 003, Yura Sokolov's v1–v7).
    PrevLinkTable,
    /// `fetch_add` on the position; each inserter writes the next record's
    /// prev-link into the WAL buffer and the next inserter waits for it
    /// (seed 003, Zhiguo Zhou's original patch).
    PrevLinkInBuffer,
    /// `fetch_add` only: for formats whose records carry no prev-link
    /// (`SelfLsn`, `CompactWalId`; seed 001).
    Unlinked,
    /// **Bench only; the log it writes cannot be read.** `fetch_add` only,
    /// in the `Postgres15` format, every record's `xl_prev` set to its own
    /// start − 1: seed 003's "Dumb" patch, the ceiling of dropping the
    /// prev-link step (records of one batch after the first link to the
    /// one before). pg_waldump, Walden's reader and recovery refuse the
    /// second record ([`crate::ReadError`] on its prev-link), so recovery
    /// would end the log there. [`crate::Config::validate`] accepts it only
    /// with [`crate::Config::bench_unreadable_ceiling`]. Not in
    /// [`ReservationKind::ALL`].
    DumbCeiling,
}

impl ReservationKind {
    /// Every design, in the order tables list them.
    pub const ALL: [ReservationKind; 4] = [
        ReservationKind::Spinlock,
        ReservationKind::PrevLinkTable,
        ReservationKind::PrevLinkInBuffer,
        ReservationKind::Unlinked,
    ];

    /// Every design by name: [`ReservationKind::ALL`] and the bench-only
    /// [`ReservationKind::DumbCeiling`].
    pub const NAMED: [ReservationKind; 5] = [
        ReservationKind::Spinlock,
        ReservationKind::PrevLinkTable,
        ReservationKind::PrevLinkInBuffer,
        ReservationKind::Unlinked,
        ReservationKind::DumbCeiling,
    ];

    /// The name used on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            ReservationKind::Spinlock => "spinlock",
            ReservationKind::PrevLinkTable => "prev-link-table",
            ReservationKind::PrevLinkInBuffer => "prev-link-in-buffer",
            ReservationKind::Unlinked => "unlinked",
            ReservationKind::DumbCeiling => "dumb-ceiling",
        }
    }

    /// True if the design hands each record its predecessor's start.
    pub const fn keeps_prev_link(self) -> bool {
        !matches!(
            self,
            ReservationKind::Unlinked | ReservationKind::DumbCeiling
        )
    }

    /// True if the design can serve `format` (DESIGN.md §3): a format with
    /// a prev-link needs a design that keeps one, and a format without one
    /// takes [`ReservationKind::Unlinked`], the only design that does not
    /// pay for links nobody reads.
    /// [`ReservationKind::DumbCeiling`] fills the prev-link field of
    /// the format that has one, with a value no reader accepts.
    pub const fn pairs_with(self, format: WalFormat) -> bool {
        match self {
            ReservationKind::DumbCeiling => format.has_prev_link(),
            _ => self.keeps_prev_link() == format.has_prev_link(),
        }
    }

    /// The default design for `format`: [`ReservationKind::default`] for a
    /// format with a prev-link, [`ReservationKind::Unlinked`] otherwise.
    pub fn default_for(format: WalFormat) -> ReservationKind {
        if format.has_prev_link() {
            ReservationKind::default()
        } else {
            ReservationKind::Unlinked
        }
    }
}

named_enum!(ReservationKind, "reservation", NAMED);

/// The `PrevLinkTable` capacity for `reservers` threads reserving at once:
/// a power of two of at least twice that (links in flight ≤ reservers + 1,
/// so the table stays at most about half full), and at least
/// `LINK_TABLE_DEFAULT_MIN_CAPACITY`.
pub fn link_table_capacity_for(reservers: usize) -> usize {
    reservers
        .saturating_mul(2)
        .next_power_of_two()
        .max(LINK_TABLE_DEFAULT_MIN_CAPACITY)
}

/// True if a `PrevLinkTable` table of `capacity` entries can serve
/// `reservers` concurrent reservers: a power of two, at least
/// [`LINK_TABLE_MIN_CAPACITY`] and at least twice the reservers.
pub fn link_table_capacity_serves(capacity: usize, reservers: usize) -> bool {
    capacity.is_power_of_two()
        && capacity >= LINK_TABLE_MIN_CAPACITY
        && capacity >= reservers.saturating_mul(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_is_twice_the_reservers_at_least() {
        assert_eq!(link_table_capacity_for(8), 16);
        assert_eq!(link_table_capacity_for(9), 32);
        assert_eq!(link_table_capacity_for(1), 16);
        assert_eq!(link_table_capacity_for(1024), 2048);
        for reservers in 1..=1024 {
            assert!(link_table_capacity_serves(
                link_table_capacity_for(reservers),
                reservers
            ));
        }
        assert!(!link_table_capacity_serves(16, 9));
        assert!(!link_table_capacity_serves(24, 8), "not a power of two");
        assert!(!link_table_capacity_serves(4, 1), "fewer than two buckets");
    }

    #[test]
    fn formats_pair_as_design_section_3_says() {
        use ReservationKind::*;
        for kind in ReservationKind::ALL {
            assert_eq!(kind.pairs_with(WalFormat::Postgres15), kind != Unlinked);
            assert_eq!(kind.pairs_with(WalFormat::SelfLsn), kind == Unlinked);
            assert_eq!(kind.pairs_with(WalFormat::CompactWalId), kind == Unlinked);
        }
        for format in WalFormat::ALL {
            assert!(ReservationKind::default_for(format).pairs_with(format));
        }
    }

    #[test]
    fn names_parse_back() {
        for kind in ReservationKind::NAMED {
            assert_eq!(kind.name().parse::<ReservationKind>().unwrap(), kind);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!(
            "Prev_Link_Table".parse::<ReservationKind>().unwrap(),
            ReservationKind::PrevLinkTable
        );
        assert!("mutex".parse::<ReservationKind>().is_err());
    }
}
