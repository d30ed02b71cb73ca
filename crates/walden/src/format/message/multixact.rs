//! MultiXact records: offset and member pages zeroed, a multixact created,
//! truncation (PostgreSQL: `mxactdesc.c`, `xl_multixact_create`,
//! `xl_multixact_truncate`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_MULTIXACT_ZERO_OFF_PAGE: u8 = 0x00;
const XLOG_MULTIXACT_ZERO_MEM_PAGE: u8 = 0x10;
const XLOG_MULTIXACT_CREATE_ID: u8 = 0x20;
const XLOG_MULTIXACT_TRUNCATE_ID: u8 = 0x30;

/// PostgreSQL: `multixact_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_MULTIXACT_ZERO_OFF_PAGE => Some("ZERO_OFF_PAGE"),
        XLOG_MULTIXACT_ZERO_MEM_PAGE => Some("ZERO_MEM_PAGE"),
        XLOG_MULTIXACT_CREATE_ID => Some("CREATE_ID"),
        XLOG_MULTIXACT_TRUNCATE_ID => Some("TRUNCATE_ID"),
        _ => None,
    }
}

/// A member's lock mode as pg_waldump abbreviates it
/// (PostgreSQL: `MultiXactStatus`, `out_member`).
fn status_name(status: i32) -> &'static str {
    match status {
        0 => "keysh",
        1 => "sh",
        2 => "fornokeyupd",
        3 => "forupd",
        4 => "nokeyupd",
        5 => "upd",
        _ => "unk",
    }
}

/// `PAGE`; `MXID offset OFF nmembers N: XID (mode) ...`;
/// `offsets [A, B), members [C, D)`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_MULTIXACT_ZERO_OFF_PAGE | XLOG_MULTIXACT_ZERO_MEM_PAGE => {
            let _ = write!(out, "{}", rec.main("multixact page").i32()?);
        }
        XLOG_MULTIXACT_CREATE_ID => {
            let mut f = rec.main("xl_multixact_create");
            let (mid, moff, n) = (f.u32()?, f.u32()?, f.i32()?);
            let _ = write!(out, "{mid} offset {moff} nmembers {n}: ");
            for _ in 0..n {
                let xid = f.u32()?;
                let _ = write!(out, "{xid} ({}) ", status_name(f.i32()?));
            }
        }
        XLOG_MULTIXACT_TRUNCATE_ID => {
            let mut f = rec.main("xl_multixact_truncate");
            f.skip(4)?; // oldestMultiDB
            let (off_start, off_end) = (f.u32()?, f.u32()?);
            let (mem_start, mem_end) = (f.u32()?, f.u32()?);
            let _ = write!(
                out,
                "offsets [{off_start}, {off_end}), members [{mem_start}, {mem_end})"
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
            // MultiXact at 0/01A04D50
            (
                6,
                0x20,
                "ff1c0008000064060000020000002a800000010000002b80000001000000",
                "CREATE_ID 2048 offset 1636 nmembers 2: 32810 (sh) 32811 (sh) ",
            ),
            // MultiXact at 0/01A04D30
            (6, 0x10, "ff0401000000", "ZERO_MEM_PAGE 1"),
        ]);
    }
}
