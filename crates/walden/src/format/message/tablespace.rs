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
