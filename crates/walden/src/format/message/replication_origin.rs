//! ReplicationOrigin records (PostgreSQL: `replorigindesc.c`,
//! `xl_replorigin_set`, `xl_replorigin_drop`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};
use crate::lsn::Lsn;

const XLOG_REPLORIGIN_SET: u8 = 0x00;
const XLOG_REPLORIGIN_DROP: u8 = 0x10;

/// PostgreSQL: `replorigin_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_REPLORIGIN_SET => Some("SET"),
        XLOG_REPLORIGIN_DROP => Some("DROP"),
        _ => None,
    }
}

/// `set NODE; lsn X/Y; force: 0|1` and `drop NODE`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_REPLORIGIN_SET => {
            let mut f = rec.main("xl_replorigin_set");
            let lsn = Lsn(f.u64()?);
            let node = f.u16()?;
            let force = f.u8()?;
            let _ = write!(out, "set {node}; lsn {lsn}; force: {force}");
        }
        XLOG_REPLORIGIN_DROP => {
            let _ = write!(out, "drop {}", rec.main("xl_replorigin_drop").u16()?);
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
            // ReplicationOrigin at 0/01E78CD0
            (19, 0x10, "ff020100", "DROP drop 1"),
            // ReplicationOrigin at 0/01E78CA0
            (
                19,
                0x00,
                "ff103412000000000000010001425f7f0000",
                "SET set 1; lsn 0/1234; force: 1",
            ),
        ]);
    }
}
