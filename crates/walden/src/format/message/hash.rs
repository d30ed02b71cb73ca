//! Hash index records (PostgreSQL: `hashdesc.c` and the `xl_hash_*` structs
//! of `hash_xlog.h`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

const XLOG_HASH_INIT_META_PAGE: u8 = 0x00;
const XLOG_HASH_INIT_BITMAP_PAGE: u8 = 0x10;
const XLOG_HASH_INSERT: u8 = 0x20;
const XLOG_HASH_ADD_OVFL_PAGE: u8 = 0x30;
const XLOG_HASH_SPLIT_ALLOCATE_PAGE: u8 = 0x40;
const XLOG_HASH_SPLIT_PAGE: u8 = 0x50;
const XLOG_HASH_SPLIT_COMPLETE: u8 = 0x60;
const XLOG_HASH_MOVE_PAGE_CONTENTS: u8 = 0x70;
const XLOG_HASH_SQUEEZE_PAGE: u8 = 0x80;
const XLOG_HASH_DELETE: u8 = 0x90;
const XLOG_HASH_SPLIT_CLEANUP: u8 = 0xA0;
const XLOG_HASH_UPDATE_META_PAGE: u8 = 0xB0;
const XLOG_HASH_VACUUM_ONE_PAGE: u8 = 0xC0;

const XLH_SPLIT_META_UPDATE_MASKS: u8 = 1 << 0;
const XLH_SPLIT_META_UPDATE_SPLITPOINT: u8 = 1 << 1;

/// PostgreSQL: `hash_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_HASH_INIT_META_PAGE => "INIT_META_PAGE",
        XLOG_HASH_INIT_BITMAP_PAGE => "INIT_BITMAP_PAGE",
        XLOG_HASH_INSERT => "INSERT",
        XLOG_HASH_ADD_OVFL_PAGE => "ADD_OVFL_PAGE",
        XLOG_HASH_SPLIT_ALLOCATE_PAGE => "SPLIT_ALLOCATE_PAGE",
        XLOG_HASH_SPLIT_PAGE => "SPLIT_PAGE",
        XLOG_HASH_SPLIT_COMPLETE => "SPLIT_COMPLETE",
        XLOG_HASH_MOVE_PAGE_CONTENTS => "MOVE_PAGE_CONTENTS",
        XLOG_HASH_SQUEEZE_PAGE => "SQUEEZE_PAGE",
        XLOG_HASH_DELETE => "DELETE",
        XLOG_HASH_SPLIT_CLEANUP => "SPLIT_CLEANUP",
        XLOG_HASH_UPDATE_META_PAGE => "UPDATE_META_PAGE",
        XLOG_HASH_VACUUM_ONE_PAGE => "VACUUM_ONE_PAGE",
        _ => return None,
    })
}

/// `T` or `F`, as the hash descriptions print flags.
fn tf(b: bool) -> char {
    if b {
        'T'
    } else {
        'F'
    }
}

/// A double as C's `%g` prints it: six significant digits, trailing zeros
/// dropped, exponent form below 1e-4 or from 1e6.
fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            if v > 0.0 { "inf" } else { "-inf" }.into()
        } else {
            "0".into()
        };
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_owned()
        } else {
            s.to_owned()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", trim(mantissa), exp.abs())
    } else {
        let decimals = usize::try_from(5 - exp).unwrap_or(0);
        trim(&format!("{v:.decimals$}"))
    }
}

/// Details of a Hash record (PostgreSQL: `hash_desc`); SPLIT_PAGE and
/// SPLIT_CLEANUP have none.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_HASH_INIT_META_PAGE => {
            let mut f = rec.main("xl_hash_init_meta_page");
            let n = f.f64()?;
            f.skip(4)?; // procid
            let _ = write!(out, "num_tuples {}, fillfactor {}", format_g(n), f.u16()?);
        }
        XLOG_HASH_INIT_BITMAP_PAGE => {
            let _ = write!(
                out,
                "bmsize {}",
                rec.main("xl_hash_init_bitmap_page").u16()?
            );
        }
        XLOG_HASH_INSERT => {
            let _ = write!(out, "off {}", rec.main("xl_hash_insert").u16()?);
        }
        XLOG_HASH_ADD_OVFL_PAGE => {
            let mut f = rec.main("xl_hash_add_ovfl_page");
            let (bmsize, found) = (f.u16()?, f.bool()?);
            let _ = write!(out, "bmsize {bmsize}, bmpage_found {}", tf(found));
        }
        XLOG_HASH_SPLIT_ALLOCATE_PAGE => {
            let mut f = rec.main("xl_hash_split_allocate_page");
            let bucket = f.u32()?;
            f.skip(4)?; // old_bucket_flag, new_bucket_flag
            let flags = f.u8()?;
            let _ = write!(
                out,
                "new_bucket {bucket}, meta_page_masks_updated {}, issplitpoint_changed {}",
                tf(flags & XLH_SPLIT_META_UPDATE_MASKS != 0),
                tf(flags & XLH_SPLIT_META_UPDATE_SPLITPOINT != 0)
            );
        }
        XLOG_HASH_SPLIT_COMPLETE => {
            let mut f = rec.main("xl_hash_split_complete");
            let (old, new) = (f.u16()?, f.u16()?);
            let _ = write!(out, "old_bucket_flag {old}, new_bucket_flag {new}");
        }
        XLOG_HASH_MOVE_PAGE_CONTENTS => {
            let mut f = rec.main("xl_hash_move_page_contents");
            let (n, primary) = (f.u16()?, f.bool()?);
            let _ = write!(out, "ntups {n}, is_primary {}", tf(primary));
        }
        XLOG_HASH_SQUEEZE_PAGE => {
            let mut f = rec.main("xl_hash_squeeze_page");
            let (prev, next, n, primary) = (f.u32()?, f.u32()?, f.u16()?, f.bool()?);
            let _ = write!(
                out,
                "prevblkno {prev}, nextblkno {next}, ntups {n}, is_primary {}",
                tf(primary)
            );
        }
        XLOG_HASH_DELETE => {
            let mut f = rec.main("xl_hash_delete");
            let (clear, primary) = (f.bool()?, f.bool()?);
            let _ = write!(
                out,
                "clear_dead_marking {}, is_primary {}",
                tf(clear),
                tf(primary)
            );
        }
        XLOG_HASH_UPDATE_META_PAGE => {
            let n = rec.main("xl_hash_update_meta_page").f64()?;
            let _ = write!(out, "ntuples {}", format_g(n));
        }
        XLOG_HASH_VACUUM_ONE_PAGE => {
            let mut f = rec.main("xl_hash_vacuum_one_page");
            let (xid, n) = (f.u32()?, f.i32()?);
            let _ = write!(out, "ntuples {n}, latestRemovedXid {xid}");
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn percent_g_like_c() {
        for (v, s) in [
            (450.0, "450"),
            (2000.0, "2000"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (0.0, "0"),
            (-3.25, "-3.25"),
        ] {
            assert_eq!(format_g(v), s, "{v}");
        }
    }
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
            // Hash at 0/012AB740
            (12, 0x30, "006004007f060000050000002640000006000000018000000200000004a0040000000000ff030100000002000000001000", "ADD_OVFL_PAGE bmsize 4096, bmpage_found F"),
            // Hash at 0/0128C580
            (12, 0x90, "012098007f060000050000002640000001000000ff020100020003000400050006000700080009000a000b000c0026002700280029002a002b002c002d002e002f00300031004b004c004d004e004f00500051005200530054005500560057007c007d007e007f00800081008200830084008500860087008800af00b000b100b200b300b400b500b600b700b800b900ba00bb00bc00bd00be00bf00c000c100c200c300c400c500c600c700c8000001", "DELETE clear_dead_marking F, is_primary T"),
            // Hash at 0/011B7A38
            (12, 0x10, "004000007f0600000500000026400000030000000180000000000000ff020010", "INIT_BITMAP_PAGE bmsize 4096"),
            // Hash at 0/011B7938
            (12, 0x00, "004000007f060000050000002640000000000000ff0e0000000000207c40c20100003301", "INIT_META_PAGE num_tuples 450, fillfactor 307"),
            // Hash at 0/011C52D0
            (12, 0x20, "002010007f0600000500000026400000010000000180000000000000ff0200000000010010004617738e000000000100", "INSERT off 1"),
            // Hash at 0/0128BE88
            (12, 0x40, "000000007f06000005000000264000000100000001c000000400000002a0080000000000ff090200000001000000020000002200120002", "SPLIT_ALLOCATE_PAGE new_bucket 2, meta_page_masks_updated F, issplitpoint_changed T"),
            // Hash at 0/0128C648
            (12, 0xA0, "000000007f060000050000002640000001000000", "SPLIT_CLEANUP "),
            // Hash at 0/0128C540
            (12, 0x60, "000000007f0600000500000026400000010000000180000004000000ff0442000200", "SPLIT_COMPLETE old_bucket_flag 66, new_bucket_flag 2"),
            // Hash at 0/019A3CF8
            (12, 0xB0, "000000007f060000050000002640000000000000ff080000000000409f40", "UPDATE_META_PAGE ntuples 2000"),
        ]);
    }
}
