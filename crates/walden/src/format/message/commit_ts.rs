//! CommitTs records: a commit-timestamp page zeroed or truncated away
//! (PostgreSQL: `committsdesc.c`, `xl_commit_ts_truncate`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const COMMIT_TS_ZEROPAGE: u8 = 0x00;
const COMMIT_TS_TRUNCATE: u8 = 0x10;

/// PostgreSQL: `commit_ts_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        COMMIT_TS_ZEROPAGE => Some("ZEROPAGE"),
        COMMIT_TS_TRUNCATE => Some("TRUNCATE"),
        _ => None,
    }
}

/// `N` (the page) and `pageno N, oldestXid X`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        COMMIT_TS_ZEROPAGE => {
            let _ = write!(out, "{}", rec.main("commit_ts page").i32()?);
        }
        COMMIT_TS_TRUNCATE => {
            let mut f = rec.main("xl_commit_ts_truncate");
            let page = f.i32()?;
            let _ = write!(out, "pageno {page}, oldestXid {}", f.u32()?);
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
            // CommitTs at 0/010000D8
            (18, 0x00, "ff0428000000", "ZEROPAGE 40"),
        ]);
    }
}
