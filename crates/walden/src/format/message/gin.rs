//! GIN index records (PostgreSQL: `gindesc.c` and the `ginxlog*` structs of
//! `ginxlog.h`). INSERT and VACUUM_DATA_LEAF_PAGE describe block 0's data
//! unless the block carries a full-page image.

use std::fmt::Write as _;

use super::fields::Fields;
use super::{MainDataError, Rec};

const XLOG_GIN_CREATE_PTREE: u8 = 0x10;
const XLOG_GIN_INSERT: u8 = 0x20;
const XLOG_GIN_SPLIT: u8 = 0x30;
const XLOG_GIN_VACUUM_PAGE: u8 = 0x40;
const XLOG_GIN_DELETE_PAGE: u8 = 0x50;
const XLOG_GIN_UPDATE_META_PAGE: u8 = 0x60;
const XLOG_GIN_INSERT_LISTPAGE: u8 = 0x70;
const XLOG_GIN_DELETE_LISTPAGE: u8 = 0x80;
const XLOG_GIN_VACUUM_DATA_LEAF_PAGE: u8 = 0x90;

const GIN_INSERT_ISDATA: u16 = 0x01;
const GIN_INSERT_ISLEAF: u16 = 0x02;
const GIN_SPLIT_ROOT: u16 = 0x04;

const GIN_SEGMENT_DELETE: u8 = 1;
const GIN_SEGMENT_INSERT: u8 = 2;
const GIN_SEGMENT_REPLACE: u8 = 3;
const GIN_SEGMENT_ADDITEMS: u8 = 4;

/// `sizeof(ItemPointerData)`: block id (4) and offset (2).
const ITEM_POINTER_SIZE: usize = 6;
/// `offsetof(GinPostingList, bytes)`: first item pointer and `nbytes`.
const POSTING_LIST_HEADER: usize = 8;
/// `offsetof(ginxlogDeleteListPages, ndeleted)`: the `GinMetaPageData`
/// before it (52 bytes, padded to its 8-byte alignment).
const DELETE_LIST_PAGES_NDELETED: usize = 56;

/// PostgreSQL: `gin_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_GIN_CREATE_PTREE => "CREATE_PTREE",
        XLOG_GIN_INSERT => "INSERT",
        XLOG_GIN_SPLIT => "SPLIT",
        XLOG_GIN_VACUUM_PAGE => "VACUUM_PAGE",
        XLOG_GIN_VACUUM_DATA_LEAF_PAGE => "VACUUM_DATA_LEAF_PAGE",
        XLOG_GIN_DELETE_PAGE => "DELETE_PAGE",
        XLOG_GIN_UPDATE_META_PAGE => "UPDATE_META_PAGE",
        XLOG_GIN_INSERT_LISTPAGE => "INSERT_LISTPAGE",
        XLOG_GIN_DELETE_LISTPAGE => "DELETE_LISTPAGE",
        _ => return None,
    })
}

fn tf(flags: u16, bit: u16) -> char {
    if flags & bit != 0 {
        'T'
    } else {
        'F'
    }
}

/// ` (full page image[, for WAL verification])` when block 0 has an image;
/// `true` if it did.
fn image_note(rec: &Rec<'_, '_>, out: &mut String) -> bool {
    match rec.block(0).and_then(|b| b.image.as_ref()) {
        Some(img) if img.applies() => out.push_str(" (full page image)"),
        Some(_) => out.push_str(" (full page image, for WAL verification)"),
        None => return false,
    }
    true
}

/// The actions of a recompressed data leaf page: ` N segments: S (add K
/// items) S (delete) ...` (PostgreSQL: `desc_recompress_leaf`).
fn recompress_leaf(f: &mut Fields<'_>, out: &mut String) -> Result<(), MainDataError> {
    let n = f.u16()?;
    let _ = write!(out, " {n} segments:");
    for _ in 0..n {
        let (segno, action) = (f.u8()?, f.u8()?);
        match action {
            GIN_SEGMENT_INSERT | GIN_SEGMENT_REPLACE => {
                f.skip(ITEM_POINTER_SIZE)?;
                let nbytes = usize::from(f.u16()?);
                // The posting list is SHORTALIGNed.
                let size = POSTING_LIST_HEADER + nbytes;
                f.skip(size + size % 2 - POSTING_LIST_HEADER)?;
            }
            GIN_SEGMENT_ADDITEMS => {
                let items = f.u16()?;
                f.skip(usize::from(items) * ITEM_POINTER_SIZE)?;
                let _ = write!(out, " {segno} (add {items} items)");
                continue;
            }
            _ => {}
        }
        let _ = match action {
            GIN_SEGMENT_DELETE => write!(out, " {segno} (delete)"),
            GIN_SEGMENT_INSERT => write!(out, " {segno} (insert)"),
            GIN_SEGMENT_REPLACE => write!(out, " {segno} (replace)"),
            _ => {
                let _ = write!(out, " {segno} unknown action {action} ???");
                return Ok(());
            }
        };
    }
    Ok(())
}

/// Details of a Gin record (PostgreSQL: `gin_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_GIN_INSERT => {
            let mut f = rec.main("ginxlogInsert");
            let flags = f.u16()?;
            let _ = write!(
                out,
                "isdata: {} isleaf: {}",
                tf(flags, GIN_INSERT_ISDATA),
                tf(flags, GIN_INSERT_ISLEAF)
            );
            if flags & GIN_INSERT_ISLEAF == 0 {
                let (left, right) = (f.block_id()?, f.block_id()?);
                let _ = write!(out, " children: {left}/{right}");
            }
            if image_note(rec, out) {
                return Ok(());
            }
            if flags & GIN_INSERT_ISDATA == 0 {
                let mut b = rec.block_data(0, "ginxlogInsertEntry");
                b.skip(2)?; // offset
                let _ = write!(out, " isdelete: {}", if b.bool()? { 'T' } else { 'F' });
            } else if flags & GIN_INSERT_ISLEAF != 0 {
                recompress_leaf(&mut rec.block_data(0, "ginxlogRecompressDataLeaf"), out)?;
            } else {
                let mut b = rec.block_data(0, "ginxlogInsertDataInternal");
                b.skip(2)?; // offset
                let (child, blk, off) = (b.block_id()?, b.block_id()?, b.u16()?);
                let _ = write!(out, " pitem: {child}-{blk}/{off}");
            }
        }
        XLOG_GIN_SPLIT => {
            let mut f = rec.main("ginxlogSplit");
            f.skip(24)?; // node, rrlink, leftChildBlkno, rightChildBlkno
            let flags = f.u16()?;
            let _ = write!(
                out,
                "isrootsplit: {} isdata: {} isleaf: {}",
                tf(flags, GIN_SPLIT_ROOT),
                tf(flags, GIN_INSERT_ISDATA),
                tf(flags, GIN_INSERT_ISLEAF)
            );
        }
        XLOG_GIN_VACUUM_DATA_LEAF_PAGE if !image_note(rec, out) => {
            recompress_leaf(&mut rec.block_data(0, "ginxlogVacuumDataLeafPage"), out)?;
        }
        XLOG_GIN_DELETE_LISTPAGE => {
            let mut f = rec.main("ginxlogDeleteListPages");
            f.skip(DELETE_LIST_PAGES_NDELETED)?;
            let _ = write!(out, "ndeleted: {}", f.i32()?);
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
            // Gin at 0/014451C8
            (13, 0x80, "004000007f06000005000000284000000000000001c000000200000002c000000300000003c000000400000004c000000500000005c000000600000006c000000700000007c000000800000008c000000900000009c000000a000000ff40ffffffffffffffff0000000000000000000000000000000002000000010000000000000000000000000000000000000002000000000000000900000000000000", "DELETE_LISTPAGE ndeleted: 9"),
            // Gin at 0/011C5318
            (13, 0x20, "00201c007f060000050000002740000001000000ff02010000000080100001001800010000000000000000000000010000000200", "INSERT isdata: F isleaf: T isdelete: F"),
            // Gin at 0/011C5368
            (13, 0x70, "006010007f060000050000002840000002000000ff0800000000010010000100000000000000ffffffff01000000", "INSERT_LISTPAGE "),
            // Gin at 0/011C53B0
            (13, 0x60, "004000007f060000050000002840000000000000ff587f0600000500000028400000000000000200000002000000cc1f00000100000001000000000000000200000001000000000000000000000000000000000000000200000000000000ffffffffffffffff0000000031560000", "UPDATE_META_PAGE "),
        ]);
    }
}
