//! Storage (smgr) records: relation file creation and truncation
//! (PostgreSQL: `smgrdesc.c`, `xl_smgr_create`, `xl_smgr_truncate`).

use std::fmt::Write as _;

use super::relpath::relpath;
use super::{MainDataError, Rec};

const XLOG_SMGR_CREATE: u8 = 0x10;
const XLOG_SMGR_TRUNCATE: u8 = 0x20;

/// PostgreSQL: `smgr_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_SMGR_CREATE => Some("CREATE"),
        XLOG_SMGR_TRUNCATE => Some("TRUNCATE"),
        _ => None,
    }
}

/// `CREATE path` and `TRUNCATE path to N blocks flags F`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_SMGR_CREATE => {
            let mut f = rec.main("xl_smgr_create");
            let rnode = f.rel_file_node()?;
            let fork = f.i32()?;
            out.push_str(&relpath(&rnode, fork));
        }
        XLOG_SMGR_TRUNCATE => {
            let mut f = rec.main("xl_smgr_truncate");
            let blkno = f.u32()?;
            let rnode = f.rel_file_node()?;
            let flags = f.i32()?;
            let _ = write!(
                out,
                "{} to {blkno} blocks flags {flags}",
                relpath(&rnode, 0)
            );
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
            // Storage at 0/01029900
            (
                2,
                0x11,
                "ff107f060000050000000b40000000000000",
                "CREATE base/5/16395",
            ),
        ]);
    }
}
