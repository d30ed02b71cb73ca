//! Sequence records (PostgreSQL: `seqdesc.c`, `xl_seq_rec`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_SEQ_LOG: u8 = 0x00;

/// PostgreSQL: `seq_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    (info == XLOG_SEQ_LOG).then_some("LOG")
}

/// `rel SPC/DB/REL`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    if rec.info == XLOG_SEQ_LOG {
        let _ = write!(out, "rel {}", rec.main("xl_seq_rec").rel_file_node()?);
    }
    Ok(())
}
