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
