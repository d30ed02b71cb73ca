//! Standby records: AccessExclusive locks, running transactions, and
//! invalidations (PostgreSQL: `standbydesc.c`, `xl_standby_locks`,
//! `xl_running_xacts`, `xl_invalidations`).

use std::fmt::Write as _;

use super::fields::Fields;
use super::{MainDataError, Rec};

const XLOG_STANDBY_LOCK: u8 = 0x00;
const XLOG_RUNNING_XACTS: u8 = 0x10;
const XLOG_INVALIDATIONS: u8 = 0x20;

/// Size of one `SharedInvalidationMessage`.
const INVAL_MSG_SIZE: usize = 16;

/// PostgreSQL: `standby_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    match info {
        XLOG_STANDBY_LOCK => Some("LOCK"),
        XLOG_RUNNING_XACTS => Some("RUNNING_XACTS"),
        XLOG_INVALIDATIONS => Some("INVALIDATIONS"),
        _ => None,
    }
}

/// `xid X db D rel R ` per lock; the running-xacts snapshot; invalidations.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    match rec.info {
        XLOG_STANDBY_LOCK => {
            let mut f = rec.main("xl_standby_locks");
            for _ in 0..f.i32()? {
                let (xid, db, rel) = (f.u32()?, f.u32()?, f.u32()?);
                let _ = write!(out, "xid {xid} db {db} rel {rel} ");
            }
        }
        XLOG_RUNNING_XACTS => describe_running_xacts(&mut rec.main("xl_running_xacts"), out)?,
        XLOG_INVALIDATIONS => {
            let mut f = rec.main("xl_invalidations");
            let (db, ts) = (f.u32()?, f.u32()?);
            let init_file = f.bool()?;
            f.skip(3)?; // padding
            let n = f.i32()?;
            describe_invalidations(&mut f, n, db, ts, init_file, out)?;
        }
        _ => {}
    }
    Ok(())
}

/// PostgreSQL: `standby_desc_running_xacts`.
fn describe_running_xacts(f: &mut Fields<'_>, out: &mut String) -> Result<(), MainDataError> {
    let (xcnt, subxcnt) = (f.i32()?, f.i32()?);
    let overflowed = f.bool()?;
    f.skip(3)?; // padding
    let (next, oldest, latest) = (f.u32()?, f.u32()?, f.u32()?);
    let _ = write!(
        out,
        "nextXid {next} latestCompletedXid {latest} oldestRunningXid {oldest}"
    );
    if xcnt > 0 {
        let _ = write!(out, "; {xcnt} xacts:");
        for _ in 0..xcnt {
            let _ = write!(out, " {}", f.u32()?);
        }
    }
    if overflowed {
        out.push_str("; subxid overflowed");
    }
    if subxcnt > 0 {
        let _ = write!(out, "; {subxcnt} subxacts:");
        for _ in 0..subxcnt {
            let _ = write!(out, " {}", f.u32()?);
        }
    }
    Ok(())
}

/// `n` invalidation messages read from `f`: `; [relcache init file inval
/// dbid D tsid T; ]inval msgs: catcache N relcache R ...`; nothing when `n`
/// is not positive (PostgreSQL: `standby_desc_invalidations`).
pub(super) fn describe_invalidations(
    f: &mut Fields<'_>,
    n: i32,
    db: u32,
    ts: u32,
    relcache_init_file: bool,
    out: &mut String,
) -> Result<(), MainDataError> {
    if n <= 0 {
        return Ok(());
    }
    if relcache_init_file {
        let _ = write!(out, "; relcache init file inval dbid {db} tsid {ts}");
    }
    out.push_str("; inval msgs:");
    for _ in 0..n {
        let mut m = Fields::new("SharedInvalidationMessage", f.take(INVAL_MSG_SIZE)?);
        // id (int8), then the kind's fields: dbId at 4, the object at 8.
        let id = m.u8()? as i8;
        m.skip(3)?;
        let (at4, at8) = (m.u32()?, m.u32()?);
        let _ = match id {
            0.. => write!(out, " catcache {id}"),
            -1 => write!(out, " catalog {at8}"),
            -2 => write!(out, " relcache {at8}"),
            -3 => write!(out, " smgr"),
            -4 => write!(out, " relmap db {at4}"),
            -5 => write!(out, " snapshot {at8}"),
            _ => write!(out, " unrecognized id {id}"),
        };
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
            // Standby at 0/011852E8
            (8, 0x20, "ffa0050000007f0600000000000009000000370000000500000098eadfb23156000036e80d420500000029502bab315600003748de690500000074b5910c3156000036ffffff050000005acd17f1000000003700000005000000550d178d000000003600000005000000f0988231eb040000fe000001050000001040000031560000fe000001050000001240000031560000fe000001050000000b40000031560000", "INVALIDATIONS ; inval msgs: catcache 55 catcache 54 catcache 55 catcache 54 catcache 55 catcache 54 relcache 16400 relcache 16402 relcache 16395"),
            // Standby at 0/010298D0
            (8, 0x00, "ff100100000002800000050000000b400000", "LOCK xid 32770 db 5 rel 16395 "),
            // Standby at 0/01A052C0
            (8, 0x10, "ff1c0100000000000000007c05642d8000002c8000002b8000002c800000", "RUNNING_XACTS nextXid 32813 latestCompletedXid 32811 oldestRunningXid 32812; 1 xacts: 32812"),
        ]);
    }
}
