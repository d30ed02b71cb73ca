//! RelMap records: a relation map file rewritten (PostgreSQL: `relmapdesc.c`,
//! `xl_relmap_update`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_RELMAP_UPDATE: u8 = 0x00;

/// PostgreSQL: `relmap_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    (info == XLOG_RELMAP_UPDATE).then_some("UPDATE")
}

/// `database DB tablespace SPC size N`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    if rec.info == XLOG_RELMAP_UPDATE {
        let mut f = rec.main("xl_relmap_update");
        let (db, ts, size) = (f.u32()?, f.u32()?, f.i32()?);
        let _ = write!(out, "database {db} tablespace {ts} size {size}");
    }
    Ok(())
}
