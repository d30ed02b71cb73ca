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

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // Sequence at 0/011A9910
            (15, 0x00, "004000007f060000050000001d40000000000000ff357f060000050000001d4000000200000000000000000000000000000001000300000b18000100000000000000000000000000000000", "LOG rel 1663/5/16413"),
        ]);
    }
}
