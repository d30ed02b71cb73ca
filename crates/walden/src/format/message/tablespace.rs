//! Tablespace records (PostgreSQL: `tblspcdesc.c`, `xl_tblspc_create_rec`,
//! `xl_tblspc_drop_rec`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_TBLSPC_CREATE: u8 = 0x00;
const XLOG_TBLSPC_DROP: u8 = 0x10;

/// PostgreSQL: `tblspc_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_TBLSPC_CREATE => Some("CREATE"),
        XLOG_TBLSPC_DROP => Some("DROP"),
        _ => None,
    }
}

/// `OID "path"` and `OID`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_TBLSPC_CREATE => {
            let mut f = rec.main("xl_tblspc_create_rec");
            let id = f.u32()?;
            let _ = write!(out, "{id} \"{}\"", f.c_string());
        }
        XLOG_TBLSPC_DROP => {
            let _ = write!(out, "{}", rec.main("xl_tblspc_drop_rec").u32()?);
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
            // Tablespace at 0/01E25110
            (
                5,
                0x00,
                "ff25314000002f746d702f70672d77616c2d65766572792d726d67722e7245305939772f747300",
                "CREATE 16433 \"/tmp/pg-wal-every-rmgr.rE0Y9w/ts\"",
            ),
            // Tablespace at 0/01E3D400
            (5, 0x10, "ff0431400000", "DROP 16433"),
        ]);
    }
}
