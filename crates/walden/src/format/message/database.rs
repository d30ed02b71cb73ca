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

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // Database at 0/01A05370
            (
                4,
                0x01,
                "ff102f4000007f060000010000007f060000",
                "CREATE_FILE_COPY copy dir 1663/1 to 1663/16431",
            ),
            // Database at 0/01A05A28
            (
                4,
                0x10,
                "ff08304000007f060000",
                "CREATE_WAL_LOG create dir 1663/16432",
            ),
            // Database at 0/01E24D30
            (
                4,
                0x21,
                "ff0c2f400000010000007f060000",
                "DROP dir 1663/16431",
            ),
        ]);
    }
}
