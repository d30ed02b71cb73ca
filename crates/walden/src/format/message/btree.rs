//! Btree records: inserts, splits, deduplication, vacuum, page deletion
//! (PostgreSQL: `nbtdesc.c` and the `xl_btree_*` structs of `nbtxlog.h`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_BTREE_INSERT_LEAF: u8 = 0x00;
const XLOG_BTREE_INSERT_UPPER: u8 = 0x10;
const XLOG_BTREE_INSERT_META: u8 = 0x20;
const XLOG_BTREE_SPLIT_L: u8 = 0x30;
const XLOG_BTREE_SPLIT_R: u8 = 0x40;
const XLOG_BTREE_INSERT_POST: u8 = 0x50;
const XLOG_BTREE_DEDUP: u8 = 0x60;
const XLOG_BTREE_DELETE: u8 = 0x70;
const XLOG_BTREE_UNLINK_PAGE: u8 = 0x80;
const XLOG_BTREE_UNLINK_PAGE_META: u8 = 0x90;
const XLOG_BTREE_NEWROOT: u8 = 0xA0;
const XLOG_BTREE_MARK_PAGE_HALFDEAD: u8 = 0xB0;
const XLOG_BTREE_VACUUM: u8 = 0xC0;
const XLOG_BTREE_REUSE_PAGE: u8 = 0xD0;
const XLOG_BTREE_META_CLEANUP: u8 = 0xE0;

/// PostgreSQL: `btree_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_BTREE_INSERT_LEAF => "INSERT_LEAF",
        XLOG_BTREE_INSERT_UPPER => "INSERT_UPPER",
        XLOG_BTREE_INSERT_META => "INSERT_META",
        XLOG_BTREE_SPLIT_L => "SPLIT_L",
        XLOG_BTREE_SPLIT_R => "SPLIT_R",
        XLOG_BTREE_INSERT_POST => "INSERT_POST",
        XLOG_BTREE_DEDUP => "DEDUP",
        XLOG_BTREE_VACUUM => "VACUUM",
        XLOG_BTREE_DELETE => "DELETE",
        XLOG_BTREE_MARK_PAGE_HALFDEAD => "MARK_PAGE_HALFDEAD",
        XLOG_BTREE_UNLINK_PAGE => "UNLINK_PAGE",
        XLOG_BTREE_UNLINK_PAGE_META => "UNLINK_PAGE_META",
        XLOG_BTREE_NEWROOT => "NEWROOT",
        XLOG_BTREE_REUSE_PAGE => "REUSE_PAGE",
        XLOG_BTREE_META_CLEANUP => "META_CLEANUP",
        _ => return None,
    })
}

/// Details of a Btree record (PostgreSQL: `btree_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_BTREE_INSERT_LEAF
        | XLOG_BTREE_INSERT_UPPER
        | XLOG_BTREE_INSERT_META
        | XLOG_BTREE_INSERT_POST => {
            let _ = write!(out, "off {}", rec.main("xl_btree_insert").u16()?);
        }
        XLOG_BTREE_SPLIT_L | XLOG_BTREE_SPLIT_R => {
            let mut f = rec.main("xl_btree_split");
            let (level, first_right, new_item, posting) = (f.u32()?, f.u16()?, f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "level {level}, firstrightoff {first_right}, newitemoff {new_item}, postingoff {posting}"
            );
        }
        XLOG_BTREE_DEDUP => {
            let _ = write!(out, "nintervals {}", rec.main("xl_btree_dedup").u16()?);
        }
        XLOG_BTREE_VACUUM => {
            let mut f = rec.main("xl_btree_vacuum");
            let (deleted, updated) = (f.u16()?, f.u16()?);
            let _ = write!(out, "ndeleted {deleted}; nupdated {updated}");
        }
        XLOG_BTREE_DELETE => {
            let mut f = rec.main("xl_btree_delete");
            let (xid, deleted, updated) = (f.u32()?, f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "latestRemovedXid {xid}; ndeleted {deleted}; nupdated {updated}"
            );
        }
        XLOG_BTREE_MARK_PAGE_HALFDEAD => {
            let mut f = rec.main("xl_btree_mark_page_halfdead");
            f.skip(4)?; // poffset and padding
            let (leaf, left, right, top) = (f.u32()?, f.u32()?, f.u32()?, f.u32()?);
            let _ = write!(
                out,
                "topparent {top}; leaf {leaf}; left {left}; right {right}"
            );
        }
        XLOG_BTREE_UNLINK_PAGE | XLOG_BTREE_UNLINK_PAGE_META => {
            let mut f = rec.main("xl_btree_unlink_page");
            let (left, right, level) = (f.u32()?, f.u32()?, f.u32()?);
            f.skip(4)?; // padding before the 8-byte-aligned safexid
            let safexid = f.full_xid()?;
            let (leaf_left, leaf_right, top) = (f.u32()?, f.u32()?, f.u32()?);
            let _ = write!(
                out,
                "left {left}; right {right}; level {level}; safexid {safexid}; \
                 leafleft {leaf_left}; leafright {leaf_right}; leaftopparent {top}"
            );
        }
        XLOG_BTREE_NEWROOT => {
            let mut f = rec.main("xl_btree_newroot");
            f.skip(4)?; // rootblk
            let _ = write!(out, "lev {}", f.u32()?);
        }
        XLOG_BTREE_REUSE_PAGE => {
            let mut f = rec.main("xl_btree_reuse_page");
            let node = f.rel_file_node()?;
            f.skip(4)?; // block
            let _ = write!(out, "rel {node}; latestRemovedXid {}", f.full_xid()?);
        }
        XLOG_BTREE_META_CLEANUP => {
            // xl_btree_metadata as block 0's data: version, root, level,
            // fastroot, fastlevel, then last_cleanup_num_delpages.
            let mut f = rec.block_data(0, "xl_btree_metadata");
            f.skip(20)?;
            let _ = write!(out, "last_cleanup_num_delpages {}", f.u32()?);
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
            // Btree at 0/0112F0F0
            (11, 0x60, "002004007f06000005000000124000000e000000ff024c0002000100", "DEDUP nintervals 1"),
            // Btree at 0/01012490
            (11, 0x00, "002018007f06000005000000720a000007000000ff0200000d0043001800370a00009808000000000000000000008700", "INSERT_LEAF off 135"),
            // Btree at 0/0105B080
            (11, 0x10, "002030007f0600000500000012400000030000000180000001000000ff020000040001003060433732623332613166373534626131633039623336393565306362366364653766000000000000000200", "INSERT_UPPER off 2"),
            // Btree at 0/0119A758
            (11, 0xB0, "004000007f0600000500000010400000020000000180000003000000ff1402000000020000000100000004000000ffffffff", "MARK_PAGE_HALFDEAD topparent 4294967295; leaf 2; left 1; right 4"),
            // Btree at 0/0119D898
            (11, 0xE0, "00601c007f06000005000000104000000000000004000000030000000100000003000000010000000400000001f80464", "META_CLEANUP last_cleanup_num_delpages 4"),
            // Btree at 0/0104C7D8
            (11, 0xA0, "004000007f06000005000000104000000100000002e01c0000000000ff0804000000010000000000000001000000000000000000000001ff02420100000000000000", "NEWROOT lev 0"),
            // Btree at 0/0119A7A8
            (11, 0x80, "004000007f06000005000000104000000200000001800000010000000280000004000000ff24010000000400000000000000040000000d800000000000000100000004000000ffffffff", "UNLINK_PAGE left 1; right 4; level 0; safexid 0:32781; leafleft 1; leafright 4; leaftopparent 4294967295"),
            // Btree at 0/0117BD28
            (11, 0xC0, "002048007f060000050000001240000001000000ff0403000400050008000a000b000d000f001b001c001d00230025002a002c002e002f003100330035003600370039003a003b003c003e003f004100420043004400460047004d004f0024000000", "VACUUM ndeleted 36; nupdated 0"),
        ]);
    }
}
