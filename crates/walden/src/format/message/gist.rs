//! GiST index records (PostgreSQL: `gistdesc.c` and the `gistxlog*` structs
//! of `gistxlog.h`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_GIST_PAGE_UPDATE: u8 = 0x00;
const XLOG_GIST_DELETE: u8 = 0x10;
const XLOG_GIST_PAGE_REUSE: u8 = 0x20;
const XLOG_GIST_PAGE_SPLIT: u8 = 0x30;
const XLOG_GIST_PAGE_DELETE: u8 = 0x60;
const XLOG_GIST_ASSIGN_LSN: u8 = 0x70;

/// PostgreSQL: `gist_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_GIST_PAGE_UPDATE => "PAGE_UPDATE",
        XLOG_GIST_DELETE => "DELETE",
        XLOG_GIST_PAGE_REUSE => "PAGE_REUSE",
        XLOG_GIST_PAGE_SPLIT => "PAGE_SPLIT",
        XLOG_GIST_PAGE_DELETE => "PAGE_DELETE",
        XLOG_GIST_ASSIGN_LSN => "ASSIGN_LSN",
        _ => return None,
    })
}

/// Details of a Gist record (PostgreSQL: `gist_desc`); PAGE_UPDATE and
/// ASSIGN_LSN have none.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_GIST_PAGE_REUSE => {
            let mut f = rec.main("gistxlogPageReuse");
            let (node, block) = (f.rel_file_node()?, f.u32()?);
            let _ = write!(
                out,
                "rel {node}; blk {block}; latestRemovedXid {}",
                f.full_xid()?
            );
        }
        XLOG_GIST_DELETE => {
            let mut f = rec.main("gistxlogDelete");
            let (xid, n) = (f.u32()?, f.u16()?);
            let _ = write!(out, "delete: latestRemovedXid {xid}, nitems: {n}");
        }
        XLOG_GIST_PAGE_SPLIT => {
            let mut f = rec.main("gistxlogPageSplit");
            f.skip(18)?; // origrlink, padding, orignsn, origleaf, padding
            let _ = write!(out, "page_split: splits to {} pages", f.u16()?);
        }
        XLOG_GIST_PAGE_DELETE => {
            let mut f = rec.main("gistxlogPageDelete");
            let xid = f.full_xid()?;
            let _ = write!(out, "deleteXid {xid}; downlink {}", f.u16()?);
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
            // Gist at 0/019E90A0
            (14, 0x60, "000000007f0600000500000029400000010000000180000000000000ff0a23800000000000000100", "PAGE_DELETE deleteXid 0:32803; downlink 1"),
            // Gist at 0/011C5438
            (14, 0x00, "002028007f060000050000002940000000000000ff04000000000100280000000000000000400000000000000840000000000000f03f000000000000f03f00000100", "PAGE_UPDATE "),
        ]);
    }
}
