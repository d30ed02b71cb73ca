//! SP-GiST index records (PostgreSQL: `spgdesc.c` and the `spgxlog*`
//! structs of `spgxlog.h`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_SPGIST_ADD_LEAF: u8 = 0x10;
const XLOG_SPGIST_MOVE_LEAFS: u8 = 0x20;
const XLOG_SPGIST_ADD_NODE: u8 = 0x30;
const XLOG_SPGIST_SPLIT_TUPLE: u8 = 0x40;
const XLOG_SPGIST_PICKSPLIT: u8 = 0x50;
const XLOG_SPGIST_VACUUM_LEAF: u8 = 0x60;
const XLOG_SPGIST_VACUUM_ROOT: u8 = 0x70;
const XLOG_SPGIST_VACUUM_REDIRECT: u8 = 0x80;

/// PostgreSQL: `spg_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_SPGIST_ADD_LEAF => "ADD_LEAF",
        XLOG_SPGIST_MOVE_LEAFS => "MOVE_LEAFS",
        XLOG_SPGIST_ADD_NODE => "ADD_NODE",
        XLOG_SPGIST_SPLIT_TUPLE => "SPLIT_TUPLE",
        XLOG_SPGIST_PICKSPLIT => "PICKSPLIT",
        XLOG_SPGIST_VACUUM_LEAF => "VACUUM_LEAF",
        XLOG_SPGIST_VACUUM_ROOT => "VACUUM_ROOT",
        XLOG_SPGIST_VACUUM_REDIRECT => "VACUUM_REDIRECT",
        _ => return None,
    })
}

/// Appends ` (note)` for each set flag, in order.
fn notes(out: &mut String, flags: &[(bool, &str)]) {
    for (set, note) in flags {
        if *set {
            let _ = write!(out, " ({note})");
        }
    }
}

/// Details of an SPGist record (PostgreSQL: `spg_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_SPGIST_ADD_LEAF => {
            let mut f = rec.main("spgxlogAddLeaf");
            let (new_page, nulls) = (f.bool()?, f.bool()?);
            let (leaf, head, parent, node) = (f.u16()?, f.u16()?, f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "off: {leaf}, headoff: {head}, parentoff: {parent}, nodeI: {node}"
            );
            notes(out, &[(new_page, "newpage"), (nulls, "nulls")]);
        }
        XLOG_SPGIST_MOVE_LEAFS => {
            let mut f = rec.main("spgxlogMoveLeafs");
            let moves = f.u16()?;
            let (new_page, replace_dead, nulls) = (f.bool()?, f.bool()?, f.bool()?);
            f.skip(1)?; // padding
            let (parent, node) = (f.u16()?, f.u16()?);
            let _ = write!(out, "nmoves: {moves}, parentoff: {parent}, nodeI: {node}");
            notes(
                out,
                &[
                    (new_page, "newpage"),
                    (replace_dead, "replacedead"),
                    (nulls, "nulls"),
                ],
            );
        }
        XLOG_SPGIST_ADD_NODE => {
            let mut f = rec.main("spgxlogAddNode");
            let (off, new_off, new_page) = (f.u16()?, f.u16()?, f.bool()?);
            let parent_blk = f.u8()? as i8;
            let (parent, node) = (f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "off: {off}, newoff: {new_off}, parentBlk: {parent_blk}, parentoff: {parent}, nodeI: {node}"
            );
            notes(out, &[(new_page, "newpage")]);
        }
        XLOG_SPGIST_SPLIT_TUPLE => {
            let mut f = rec.main("spgxlogSplitTuple");
            let (prefix, postfix) = (f.u16()?, f.u16()?);
            let (new_page, same) = (f.bool()?, f.bool()?);
            let _ = write!(out, "prefixoff: {prefix}, postfixoff: {postfix}");
            notes(out, &[(new_page, "newpage"), (same, "same")]);
        }
        XLOG_SPGIST_PICKSPLIT => {
            let mut f = rec.main("spgxlogPickSplit");
            let root_split = f.bool()?;
            f.skip(1)?; // padding
            let (ndelete, ninsert) = (f.u16()?, f.u16()?);
            f.skip(2)?; // initSrc, initDest
            let inner = f.u16()?;
            f.skip(1)?; // initInner
            let (nulls, inner_is_parent) = (f.bool()?, f.bool()?);
            f.skip(1)?; // padding
            let (parent, node) = (f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "ndelete: {ndelete}, ninsert: {ninsert}, inneroff: {inner}, parentoff: {parent}, nodeI: {node}"
            );
            notes(
                out,
                &[
                    (inner_is_parent, "innerIsParent"),
                    (nulls, "nulls"),
                    (root_split, "isRootSplit"),
                ],
            );
        }
        XLOG_SPGIST_VACUUM_LEAF => {
            let mut f = rec.main("spgxlogVacuumLeaf");
            let (dead, placeholder, moves, chain) = (f.u16()?, f.u16()?, f.u16()?, f.u16()?);
            let _ = write!(
                out,
                "ndead: {dead}, nplaceholder: {placeholder}, nmove: {moves}, nchain: {chain}"
            );
        }
        XLOG_SPGIST_VACUUM_ROOT => {
            let _ = write!(out, "ndelete: {}", rec.main("spgxlogVacuumRoot").u16()?);
        }
        XLOG_SPGIST_VACUUM_REDIRECT => {
            let mut f = rec.main("spgxlogVacuumRedirect");
            let (n, first, xid) = (f.u16()?, f.u16()?, f.u32()?);
            let _ = write!(
                out,
                "ntoplaceholder: {n}, firstplaceholder: {first}, newestredirectxid: {xid}"
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
            // SPGist at 0/011C5498
            (16, 0x10, "000000007f060000050000002a40000001000000ff2a0000010000000000000080000000000000000000010000000000000000000000f03f000000000000f03f", "ADD_LEAF off: 1, headoff: 0, parentoff: 0, nodeI: 0"),
            // SPGist at 0/019ACDB0
            (16, 0x60, "000000007f060000050000002a40000008000000ff9200001b0001001200000000000000ffff45003f00390033002c00260020001a0049004700430041003d003b003700350031002e002a002800240022001e001c0018001600010048004b004b0042003c0036002f00290023001d004a0044003e00380032002b0025001f001900150042003c0036003000290023001d001700460040003a0034002d00270021001b0015000000", "VACUUM_LEAF ndead: 0, nplaceholder: 27, nmove: 1, nchain: 18"),
            // SPGist at 0/019ACA08
            (16, 0x80, "000000007f060000050000002a40000003000000ff120500720020800000e200dc0097008f008d00", "VACUUM_REDIRECT ntoplaceholder: 5, firstplaceholder: 114, newestredirectxid: 32800"),
        ]);
    }
}
