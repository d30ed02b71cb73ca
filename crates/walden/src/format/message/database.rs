//! Database records: CREATE DATABASE by file copy or WAL log, DROP DATABASE
//! (PostgreSQL: `dbasedesc.c`, `xl_dbase_create_file_copy_rec`,
//! `xl_dbase_create_wal_log_rec`, `xl_dbase_drop_rec`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_DBASE_CREATE_FILE_COPY: u8 = 0x00;
const XLOG_DBASE_CREATE_WAL_LOG: u8 = 0x10;
const XLOG_DBASE_DROP: u8 = 0x20;

/// PostgreSQL: `dbase_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_DBASE_CREATE_FILE_COPY => Some("CREATE_FILE_COPY"),
        XLOG_DBASE_CREATE_WAL_LOG => Some("CREATE_WAL_LOG"),
        XLOG_DBASE_DROP => Some("DROP"),
        _ => None,
    }
}

/// `copy dir SPC/DB to SPC/DB`, `create dir SPC/DB`, `dir SPC/DB...`.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_DBASE_CREATE_FILE_COPY => {
            let mut f = rec.main("xl_dbase_create_file_copy_rec");
            let (db, spc, src_db, src_spc) = (f.u32()?, f.u32()?, f.u32()?, f.u32()?);
            let _ = write!(out, "copy dir {src_spc}/{src_db} to {spc}/{db}");
        }
        XLOG_DBASE_CREATE_WAL_LOG => {
            let mut f = rec.main("xl_dbase_create_wal_log_rec");
            let (db, spc) = (f.u32()?, f.u32()?);
            let _ = write!(out, "create dir {spc}/{db}");
        }
        XLOG_DBASE_DROP => {
            let mut f = rec.main("xl_dbase_drop_rec");
            let db = f.u32()?;
            let n = f.i32()?;
            out.push_str("dir");
            for _ in 0..n {
                let _ = write!(out, " {}/{db}", f.u32()?);
            }
        }
        _ => {}
    }
    Ok(())
}
