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
