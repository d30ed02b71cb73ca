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
