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

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // Heap at 0/01166860
            (10, 0x10, "000000007f060000050000000b40000000000000ff12088000000300100403000100180103000000", "DELETE off 3 flags 0x04 KEYS_UPDATED "),
            // Heap at 0/01179AF0
            (10, 0x50, "000000007f060000050000000b4000002b000000ff028e00", "HEAP_CONFIRM off 142"),
            // Heap at 0/01041578
            (10, 0x40, "002014007f06000005000000eb04000000000000ff0e6c0047002180032820ffffffbf00000000000e400280000002000060000000000500", "HOT_UPDATE off 2 xmax 32770 flags 0x60 ; new off 5 xmax 0"),
            // Heap at 0/010412F8
            (10, 0x70, "00208c007f06000005000000eb04000000000000ff020e40000070675f746f6173745f313633393500000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000006300000000000000000000000a000000020000000e4000000000000000000000000080bf000000000000000001007074030000000000000000016e000000000002800000000800000300", "INPLACE off 3"),
            // Heap at 0/01015E10
            (10, 0x00, "00202c007f06000005000000310a00002b000000ff0304000208180002400000290a00000000000035626c6f6f6d20696e64657820616363657373206d6574686f643c0000", "INSERT off 60 flags 0x00"),
            // Heap at 0/0104C770
            (10, 0x80, "006032007f060000050000000b40000000000000ff030300020818000100000043633463613432333861306239323338323064636335303961366637353834396200000001000000010008", "INSERT+INIT off 1 flags 0x08"),
            // Heap at 0/01179950
            (10, 0x60, "000000007f060000050000000b40000000000000ff080980000001000600", "LOCK off 1: xid 32777: flags 0x00 LOCK_ONLY EXCL_LOCK "),
            // Heap at 0/011A7458
            (10, 0x30, "ff10050000000100000000efde6913400000", "TRUNCATE nrelids 1 relids 16403"),
            // Heap at 0/0114D0F0
            (10, 0x20, "002032007f060000050000000b40000000000000ff0e0300022818000b00000045363531326264343364396361613665303263393930623061383236353264636178000001000000078000000b000010000000005600", "UPDATE off 11 xmax 32775 flags 0x10 ; new off 86 xmax 0"),
            // Heap2 at 0/01012518
            (9, 0x50, "002021007f06000005000000300a00000d000000ff061a00070000081800e70400000140000000000000070c0000004000000000000065022801004400", "MULTI_INSERT 1 tuples flags 0x02"),
            // Heap2 at 0/011A6408
            (9, 0xD0, "006080007f06000005000000e104000038000000ff0479001a00010820ffff3f000000000000134000006100000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000017000000ffffffff0400010000000000ffffffffffffffff016970000000000000000100000000000000000002000100", "MULTI_INSERT+INIT 1 tuples flags 0x02"),
            // Heap2 at 0/010002E8
            (9, 0x70, "ff220180000000000000ffffffffffffffff7f06000005000000070c0000000000000200", "NEW_CID rel 1663/5/3079; tid 0/2; cmin: 0, cmax: 4294967295, combo: 4294967295"),
            // Heap2 at 0/0114D090
            (9, 0x10, "002028007f060000050000000b40000000000000ff0807004c000e004d0015004e001c004f00230050002a00510031005200380053003f00540046005500068000000a000000", "PRUNE latestRemovedXid 32774 nredirected 10 ndead 0"),
            // Heap2 at 0/0117D010
            (9, 0x20, "00203e007f060000050000000b40000000000000ff020300060009000b000c000f0012001500160018001b001e002100240027002a002c002d00300033003600370039003c003f004200450048004b0058005b001f00", "VACUUM nunused 31"),
            // Heap2 at 0/0117F148
            (9, 0x40, "000200007f060000050000000b400000000000000180000001000000ff050780000001", "VISIBLE cutoff xid 32775 flags 0x01"),
        ]);
    }
}
