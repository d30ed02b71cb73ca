//! CLOG records: a commit-log page zeroed or truncated away (PostgreSQL:
//! `clogdesc.c`, `xl_clog_truncate`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const CLOG_ZEROPAGE: u8 = 0x00;
const CLOG_TRUNCATE: u8 = 0x10;

/// PostgreSQL: `clog_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        CLOG_ZEROPAGE => Some("ZEROPAGE"),
        CLOG_TRUNCATE => Some("TRUNCATE"),
        _ => None,
    }
}

/// `page N` and `page N; oldestXact X`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        CLOG_ZEROPAGE => {
            let _ = write!(out, "page {}", rec.main("clog page").i32()?);
        }
        CLOG_TRUNCATE => {
            let mut f = rec.main("xl_clog_truncate");
            let page = f.i32()?;
            let _ = write!(out, "page {page}; oldestXact {}", f.u32()?);
        }
        _ => {}
    }
    Ok(())
}

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // CLOG at 0/01000278
            (3, 0x00, "ff0401000000", "ZEROPAGE page 1"),
        ]);
    }
}
