//! Heap and Heap2 records: tuple inserts, updates, deletes, locks, page
//! pruning, freezing, visibility and the rest (PostgreSQL: `heapdesc.c` and
//! the `xl_heap_*` structs of `heapam_xlog.h`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

/// The operation bits of a Heap/Heap2 record's info (`XLOG_HEAP_OPMASK`);
/// the fourth bit is `XLOG_HEAP_INIT_PAGE`.
const XLOG_HEAP_OPMASK: u8 = 0x70;

const XLOG_HEAP_INSERT: u8 = 0x00;
const XLOG_HEAP_DELETE: u8 = 0x10;
const XLOG_HEAP_UPDATE: u8 = 0x20;
const XLOG_HEAP_TRUNCATE: u8 = 0x30;
const XLOG_HEAP_HOT_UPDATE: u8 = 0x40;
const XLOG_HEAP_CONFIRM: u8 = 0x50;
const XLOG_HEAP_LOCK: u8 = 0x60;
const XLOG_HEAP_INPLACE: u8 = 0x70;

const XLOG_HEAP2_REWRITE: u8 = 0x00;
const XLOG_HEAP2_PRUNE: u8 = 0x10;
const XLOG_HEAP2_VACUUM: u8 = 0x20;
const XLOG_HEAP2_FREEZE_PAGE: u8 = 0x30;
const XLOG_HEAP2_VISIBLE: u8 = 0x40;
const XLOG_HEAP2_MULTI_INSERT: u8 = 0x50;
const XLOG_HEAP2_LOCK_UPDATED: u8 = 0x60;
const XLOG_HEAP2_NEW_CID: u8 = 0x70;

/// `XLOG_HEAP_INIT_PAGE`: the record initialises the page.
const XLOG_HEAP_INIT_PAGE: u8 = 0x80;

const XLH_TRUNCATE_CASCADE: u8 = 1 << 0;
const XLH_TRUNCATE_RESTART_SEQS: u8 = 1 << 1;

/// PostgreSQL: `heap_identify`.
pub(super) fn identify_heap(info: u8) -> Option<&'static str> {
    let init = info & XLOG_HEAP_INIT_PAGE != 0;
    Some(match (info & XLOG_HEAP_OPMASK, init) {
        (XLOG_HEAP_INSERT, false) => "INSERT",
        (XLOG_HEAP_INSERT, true) => "INSERT+INIT",
        (XLOG_HEAP_DELETE, false) => "DELETE",
        (XLOG_HEAP_UPDATE, false) => "UPDATE",
        (XLOG_HEAP_UPDATE, true) => "UPDATE+INIT",
        (XLOG_HEAP_HOT_UPDATE, false) => "HOT_UPDATE",
        (XLOG_HEAP_HOT_UPDATE, true) => "HOT_UPDATE+INIT",
        (XLOG_HEAP_TRUNCATE, false) => "TRUNCATE",
        (XLOG_HEAP_CONFIRM, false) => "HEAP_CONFIRM",
        (XLOG_HEAP_LOCK, false) => "LOCK",
        (XLOG_HEAP_INPLACE, false) => "INPLACE",
        _ => return None,
    })
}

/// PostgreSQL: `heap2_identify`.
pub(super) fn identify_heap2(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_HEAP2_PRUNE => "PRUNE",
        XLOG_HEAP2_VACUUM => "VACUUM",
        XLOG_HEAP2_FREEZE_PAGE => "FREEZE_PAGE",
        XLOG_HEAP2_VISIBLE => "VISIBLE",
        XLOG_HEAP2_MULTI_INSERT => "MULTI_INSERT",
        i if i == XLOG_HEAP2_MULTI_INSERT | XLOG_HEAP_INIT_PAGE => "MULTI_INSERT+INIT",
        XLOG_HEAP2_LOCK_UPDATED => "LOCK_UPDATED",
        XLOG_HEAP2_NEW_CID => "NEW_CID",
        XLOG_HEAP2_REWRITE => "REWRITE",
        _ => return None,
    })
}

/// The `infobits` of a deleted, updated or locked tuple's xmax, each
/// followed by a space (PostgreSQL: `out_infobits`).
fn infobits(bits: u8, out: &mut String) {
    for (bit, name) in [
        (0x01, "IS_MULTI"),
        (0x02, "LOCK_ONLY"),
        (0x04, "EXCL_LOCK"),
        (0x08, "KEYSHR_LOCK"),
        (0x10, "KEYS_UPDATED"),
    ] {
        if bits & bit != 0 {
            out.push_str(name);
            out.push(' ');
        }
    }
}

/// Details of a Heap record (PostgreSQL: `heap_desc`).
pub(super) fn describe_heap(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info & XLOG_HEAP_OPMASK {
        XLOG_HEAP_INSERT => {
            let mut f = rec.main("xl_heap_insert");
            let (off, flags) = (f.u16()?, f.u8()?);
            let _ = write!(out, "off {off} flags 0x{flags:02X}");
        }
        XLOG_HEAP_DELETE => {
            let mut f = rec.main("xl_heap_delete");
            f.skip(4)?; // xmax
            let (off, bits, flags) = (f.u16()?, f.u8()?, f.u8()?);
            let _ = write!(out, "off {off} flags 0x{flags:02X} ");
            infobits(bits, out);
        }
        XLOG_HEAP_UPDATE | XLOG_HEAP_HOT_UPDATE => {
            let mut f = rec.main("xl_heap_update");
            let (old_xmax, old_off, bits, flags) = (f.u32()?, f.u16()?, f.u8()?, f.u8()?);
            let (new_xmax, new_off) = (f.u32()?, f.u16()?);
            let _ = write!(out, "off {old_off} xmax {old_xmax} flags 0x{flags:02X} ");
            infobits(bits, out);
            let _ = write!(out, "; new off {new_off} xmax {new_xmax}");
        }
        XLOG_HEAP_TRUNCATE => {
            let mut f = rec.main("xl_heap_truncate");
            f.skip(4)?; // dbId
            let n = f.u32()?;
            let flags = f.u8()?;
            f.skip(3)?; // padding
            if flags & XLH_TRUNCATE_CASCADE != 0 {
                out.push_str("cascade ");
            }
            if flags & XLH_TRUNCATE_RESTART_SEQS != 0 {
                out.push_str("restart_seqs ");
            }
            let _ = write!(out, "nrelids {n} relids");
            for _ in 0..n {
                let _ = write!(out, " {}", f.u32()?);
            }
        }
        XLOG_HEAP_CONFIRM => {
            let _ = write!(out, "off {}", rec.main("xl_heap_confirm").u16()?);
        }
        XLOG_HEAP_LOCK => {
            let mut f = rec.main("xl_heap_lock");
            let (xid, off, bits, flags) = (f.u32()?, f.u16()?, f.u8()?, f.u8()?);
            let _ = write!(out, "off {off}: xid {xid}: flags 0x{flags:02X} ");
            infobits(bits, out);
        }
        XLOG_HEAP_INPLACE => {
            let _ = write!(out, "off {}", rec.main("xl_heap_inplace").u16()?);
        }
        _ => {}
    }
    Ok(())
}

/// Details of a Heap2 record (PostgreSQL: `heap2_desc`); REWRITE has none.
pub(super) fn describe_heap2(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info & XLOG_HEAP_OPMASK {
        XLOG_HEAP2_PRUNE => {
            let mut f = rec.main("xl_heap_prune");
            let (xid, redirected, dead) = (f.u32()?, f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "latestRemovedXid {xid} nredirected {redirected} ndead {dead}"
            );
        }
        XLOG_HEAP2_VACUUM => {
            let _ = write!(out, "nunused {}", rec.main("xl_heap_vacuum").u16()?);
        }
        XLOG_HEAP2_FREEZE_PAGE => {
            let mut f = rec.main("xl_heap_freeze_page");
            let (xid, n) = (f.u32()?, f.u16()?);
            let _ = write!(out, "cutoff xid {xid} ntuples {n}");
        }
        XLOG_HEAP2_VISIBLE => {
            let mut f = rec.main("xl_heap_visible");
            let (xid, flags) = (f.u32()?, f.u8()?);
            let _ = write!(out, "cutoff xid {xid} flags 0x{flags:02X}");
        }
        XLOG_HEAP2_MULTI_INSERT => {
            let mut f = rec.main("xl_heap_multi_insert");
            let flags = f.u8()?;
            f.skip(1)?; // padding
            let n = f.u16()?;
            let _ = write!(out, "{n} tuples flags 0x{flags:02X}");
        }
        XLOG_HEAP2_LOCK_UPDATED => {
            let mut f = rec.main("xl_heap_lock_updated");
            let (xmax, off, bits, flags) = (f.u32()?, f.u16()?, f.u8()?, f.u8()?);
            let _ = write!(out, "off {off}: xmax {xmax}: flags 0x{flags:02X} ");
            infobits(bits, out);
        }
        XLOG_HEAP2_NEW_CID => {
            let mut f = rec.main("xl_heap_new_cid");
            f.skip(4)?; // top_xid
            let (cmin, cmax, combo) = (f.u32()?, f.u32()?, f.u32()?);
            let node = f.rel_file_node()?;
            let (blk, off) = (f.block_id()?, f.u16()?);
            let _ = write!(
                out,
                "rel {node}; tid {blk}/{off}; cmin: {cmin}, cmax: {cmax}, combo: {combo}"
            );
        }
        _ => {}
    }
    Ok(())
}
