//! BRIN index records (PostgreSQL: `brindesc.c` and the `xl_brin_*` structs
//! of `brin_xlog.h`).

use std::fmt::Write as _;

use super::fields::Fields;
use super::{MainDataError, Rec};

/// The operation bits of a BRIN record's info (`XLOG_BRIN_OPMASK`).
const XLOG_BRIN_OPMASK: u8 = 0x70;
/// `XLOG_BRIN_INIT_PAGE`: the record initialises the page.
const XLOG_BRIN_INIT_PAGE: u8 = 0x80;

const XLOG_BRIN_CREATE_INDEX: u8 = 0x00;
const XLOG_BRIN_INSERT: u8 = 0x10;
const XLOG_BRIN_UPDATE: u8 = 0x20;
const XLOG_BRIN_SAMEPAGE_UPDATE: u8 = 0x30;
const XLOG_BRIN_REVMAP_EXTEND: u8 = 0x40;
const XLOG_BRIN_DESUMMARIZE: u8 = 0x50;

/// PostgreSQL: `brin_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    let init = info & XLOG_BRIN_INIT_PAGE != 0;
    Some(match (info & XLOG_BRIN_OPMASK, init) {
        (XLOG_BRIN_CREATE_INDEX, false) => "CREATE_INDEX",
        (XLOG_BRIN_INSERT, false) => "INSERT",
        (XLOG_BRIN_INSERT, true) => "INSERT+INIT",
        (XLOG_BRIN_UPDATE, false) => "UPDATE",
        (XLOG_BRIN_UPDATE, true) => "UPDATE+INIT",
        (XLOG_BRIN_SAMEPAGE_UPDATE, false) => "SAMEPAGE_UPDATE",
        (XLOG_BRIN_REVMAP_EXTEND, false) => "REVMAP_EXTEND",
        (XLOG_BRIN_DESUMMARIZE, false) => "DESUMMARIZE",
        _ => return None,
    })
}

/// `xl_brin_insert`: heapBlk, pagesPerRange, offnum.
fn insert(f: &mut Fields<'_>) -> Result<(u32, u32, u16), MainDataError> {
    Ok((f.u32()?, f.u32()?, f.u16()?))
}

/// Details of a BRIN record (PostgreSQL: `brin_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info & XLOG_BRIN_OPMASK {
        XLOG_BRIN_CREATE_INDEX => {
            let mut f = rec.main("xl_brin_createidx");
            let pages = f.u32()?;
            let _ = write!(out, "v{} pagesPerRange {pages}", f.u16()?);
        }
        XLOG_BRIN_INSERT => {
            let (blk, pages, off) = insert(&mut rec.main("xl_brin_insert"))?;
            let _ = write!(out, "heapBlk {blk} pagesPerRange {pages} offnum {off}");
        }
        XLOG_BRIN_UPDATE => {
            let mut f = rec.main("xl_brin_update");
            let old = f.u16()?;
            f.skip(2)?; // padding
            let (blk, pages, off) = insert(&mut f)?;
            let _ = write!(
                out,
                "heapBlk {blk} pagesPerRange {pages} old offnum {old}, new offnum {off}"
            );
        }
        XLOG_BRIN_SAMEPAGE_UPDATE => {
            let _ = write!(out, "offnum {}", rec.main("xl_brin_samepage_update").u16()?);
        }
        XLOG_BRIN_REVMAP_EXTEND => {
            let _ = write!(
                out,
                "targetBlk {}",
                rec.main("xl_brin_revmap_extend").u32()?
            );
        }
        XLOG_BRIN_DESUMMARIZE => {
            let mut f = rec.main("xl_brin_desummarize");
            let (pages, blk, off) = (f.u32()?, f.u32()?, f.u16()?);
            let _ = write!(
                out,
                "pagesPerRange {pages}, heapBlk {blk}, page offset {off}"
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
            // BRIN at 0/011BB6F0
            (17, 0x00, "004000007f060000050000002c40000000000000ff06010000000100", "CREATE_INDEX v1 pagesPerRange 1"),
            // BRIN at 0/019F7470
            (17, 0x50, "000000007f060000050000002c400000010000000180000002000000ff0a01000000000000000100", "DESUMMARIZE pagesPerRange 1, heapBlk 0, page offset 1"),
            // BRIN at 0/019C9358
            (17, 0x10, "002008007f060000050000002c400000020000000180000001000000ff0a01000000e801000001000000010000000200", "INSERT heapBlk 1 pagesPerRange 1 offnum 2"),
            // BRIN at 0/011BB768
            (17, 0x90, "006008007f060000050000002c400000020000000180000001000000ff0a00000000a801000000000000010000000100", "INSERT+INIT heapBlk 0 pagesPerRange 1 offnum 1"),
            // BRIN at 0/011BB728
            (17, 0x40, "000000007f060000050000002c4000000000000001c0000001000000ff0401000000", "REVMAP_EXTEND targetBlk 1"),
            // BRIN at 0/011C5540
            (17, 0x30, "002010007f060000050000002c40000002000000ff02000000000800000001000000010000000100", "SAMEPAGE_UPDATE offnum 1"),
        ]);
    }
}
