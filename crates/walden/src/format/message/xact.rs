//! Transaction records: commit, abort, prepare, commit/abort prepared,
//! subtransaction assignment, invalidations (PostgreSQL: `xactdesc.c`,
//! `xl_xact_commit` and the optional parts `ParseCommitRecord`,
//! `ParseAbortRecord` and `ParsePrepareRecord` read).

use std::fmt::Write as _;

use super::fields::Fields;
use super::relpath::relpath;
use super::standby::describe_invalidations;
use super::{format_timestamptz, MainDataError, Rec};
use crate::format::body::RelFileNode;
use crate::format::rmgr::{
    XLOG_XACT_ABORT, XLOG_XACT_ABORT_PREPARED, XLOG_XACT_ASSIGNMENT, XLOG_XACT_COMMIT,
    XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_HAS_INFO, XLOG_XACT_INVALIDATIONS, XLOG_XACT_OPMASK,
    XLOG_XACT_PREPARE,
};
use crate::lsn::Lsn;

const XACT_XINFO_HAS_DBINFO: u32 = 1 << 0;
const XACT_XINFO_HAS_SUBXACTS: u32 = 1 << 1;
const XACT_XINFO_HAS_RELFILENODES: u32 = 1 << 2;
const XACT_XINFO_HAS_INVALS: u32 = 1 << 3;
const XACT_XINFO_HAS_TWOPHASE: u32 = 1 << 4;
const XACT_XINFO_HAS_ORIGIN: u32 = 1 << 5;
const XACT_XINFO_HAS_GID: u32 = 1 << 7;
const XACT_XINFO_HAS_DROPPED_STATS: u32 = 1 << 8;
const XACT_COMPLETION_APPLY_FEEDBACK: u32 = 1 << 29;
const XACT_COMPLETION_UPDATE_RELCACHE_FILE: u32 = 1 << 30;
const XACT_COMPLETION_FORCE_SYNC_COMMIT: u32 = 1 << 31;

/// Size of one `SharedInvalidationMessage`.
const INVAL_MSG_SIZE: usize = 16;
/// `MAXALIGN(sizeof(xl_xact_prepare))`: where a PREPARE's GID starts.
const PREPARE_HEADER_SIZE: usize = 72;
/// `sizeof(RelFileNode)` and `sizeof(xl_xact_stats_item)`.
const REL_SIZE: usize = 12;
const STATS_ITEM_SIZE: usize = 12;

/// A parsed COMMIT or ABORT record (PostgreSQL: `xl_xact_parsed_commit`,
/// `xl_xact_parsed_abort`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitRecord {
    /// Commit (or abort) time, a `TimestampTz`.
    pub xact_time: i64,
    /// `XACT_XINFO_*` and `XACT_COMPLETION_*` bits; 0 without `XLOG_XACT_HAS_INFO`.
    pub xinfo: u32,
    /// Database and tablespace OIDs, when `XACT_XINFO_HAS_DBINFO`.
    pub db_ts: Option<(u32, u32)>,
    /// Committed subtransaction ids.
    pub subxacts: Vec<u32>,
    /// Relations dropped at commit.
    pub rels: Vec<RelFileNode>,
    /// Dropped statistics entries: (kind, database OID, object OID).
    pub dropped_stats: Vec<(i32, u32, u32)>,
    /// Invalidation messages, raw (`SharedInvalidationMessage`, 16 bytes each).
    pub invals: Vec<[u8; INVAL_MSG_SIZE]>,
    /// The prepared transaction's xid for COMMIT/ABORT PREPARED, else 0.
    pub twophase_xid: u32,
    /// Replication origin LSN and timestamp, when `XACT_XINFO_HAS_ORIGIN`.
    pub origin: Option<(Lsn, i64)>,
}

/// An i32 count, then that many u32s.
fn xids(f: &mut Fields<'_>) -> Result<Vec<u32>, MainDataError> {
    let n = f.i32()?;
    (0..n).map(|_| f.u32()).collect()
}

/// `n` RelFileNodes.
fn rels(f: &mut Fields<'_>, n: i32) -> Result<Vec<RelFileNode>, MainDataError> {
    (0..n).map(|_| f.rel_file_node()).collect()
}

/// `n` `xl_xact_stats_item`s: kind (i32), database OID, object OID.
fn stats(f: &mut Fields<'_>, n: i32) -> Result<Vec<(i32, u32, u32)>, MainDataError> {
    (0..n).map(|_| Ok((f.i32()?, f.u32()?, f.u32()?))).collect()
}

/// `n` raw invalidation messages.
fn invals(f: &mut Fields<'_>, n: i32) -> Result<Vec<[u8; INVAL_MSG_SIZE]>, MainDataError> {
    (0..n)
        .map(|_| {
            let mut m = [0u8; INVAL_MSG_SIZE];
            m.copy_from_slice(f.take(INVAL_MSG_SIZE)?);
            Ok(m)
        })
        .collect()
}

impl CommitRecord {
    /// Parses the main data of a COMMIT, ABORT, COMMIT PREPARED or ABORT
    /// PREPARED record with `info` (PostgreSQL: `ParseCommitRecord`,
    /// `ParseAbortRecord`: an abort's `xinfo` never has invalidations). The
    /// parts must fit in the main data; trailing bytes are ignored, as
    /// PostgreSQL does.
    pub fn decode(info: u8, main_data: &[u8]) -> Result<CommitRecord, MainDataError> {
        let mut f = Fields::new("commit", main_data);
        let mut rec = CommitRecord {
            xact_time: f.i64()?,
            ..Default::default()
        };
        if info & XLOG_XACT_HAS_INFO != 0 {
            rec.xinfo = f.u32()?;
        }
        let x = rec.xinfo;
        if x & XACT_XINFO_HAS_DBINFO != 0 {
            rec.db_ts = Some((f.u32()?, f.u32()?));
        }
        if x & XACT_XINFO_HAS_SUBXACTS != 0 {
            rec.subxacts = xids(&mut f)?;
        }
        if x & XACT_XINFO_HAS_RELFILENODES != 0 {
            let n = f.i32()?;
            rec.rels = rels(&mut f, n)?;
        }
        if x & XACT_XINFO_HAS_DROPPED_STATS != 0 {
            let n = f.i32()?;
            rec.dropped_stats = stats(&mut f, n)?;
        }
        if x & XACT_XINFO_HAS_INVALS != 0 {
            let n = f.i32()?;
            rec.invals = invals(&mut f, n)?;
        }
        if x & XACT_XINFO_HAS_TWOPHASE != 0 {
            rec.twophase_xid = f.u32()?;
            if x & XACT_XINFO_HAS_GID != 0 {
                f.c_string();
            }
        }
        if x & XACT_XINFO_HAS_ORIGIN != 0 {
            rec.origin = Some((Lsn(f.u64()?), f.i64()?));
        }
        Ok(rec)
    }

    /// `[xid: ]<time>`: the prepared xid, if any, and the time.
    fn describe_start(&self, out: &mut String) {
        if self.twophase_xid != 0 {
            let _ = write!(out, "{}: ", self.twophase_xid);
        }
        out.push_str(&format_timestamptz(self.xact_time));
    }

    /// `; origin: node N, lsn X/Y, at <time>` when the record has origin details.
    fn describe_origin(&self, origin_id: u16, out: &mut String) {
        if let Some((lsn, time)) = self.origin {
            describe_origin(origin_id, lsn, time, out);
        }
    }

    /// pg_waldump's details of a COMMIT: `[xid: ]<time>[; rels: ...][;
    /// subxacts: ...][; dropped stats: ...][; inval msgs: ...][;
    /// apply_feedback][; sync][; origin: ...]`, with `origin_id` the
    /// record's replication origin (PostgreSQL: `xact_desc_commit`).
    pub fn describe(&self, origin_id: u16) -> String {
        let mut out = String::new();
        self.describe_start(&mut out);
        describe_rels("rels", &self.rels, &mut out);
        describe_subxacts(&self.subxacts, &mut out);
        describe_stats("", &self.dropped_stats, &mut out);
        let (db, ts) = self.db_ts.unwrap_or_default();
        let flat: Vec<u8> = self.invals.iter().flatten().copied().collect();
        let n = i32::try_from(self.invals.len()).unwrap_or(i32::MAX);
        let init_file = self.xinfo & XACT_COMPLETION_UPDATE_RELCACHE_FILE != 0;
        // The messages were read whole above, so this cannot run short.
        let _ = describe_invalidations(
            &mut Fields::new("invalidations", &flat),
            n,
            db,
            ts,
            init_file,
            &mut out,
        );
        if self.xinfo & XACT_COMPLETION_APPLY_FEEDBACK != 0 {
            out.push_str("; apply_feedback");
        }
        if self.xinfo & XACT_COMPLETION_FORCE_SYNC_COMMIT != 0 {
            out.push_str("; sync");
        }
        self.describe_origin(origin_id, &mut out);
        out
    }

    /// pg_waldump's details of an ABORT: `[xid: ]<time>[; rels: ...][;
    /// subxacts: ...][; origin: ...][; dropped stats: ...]`
    /// (PostgreSQL: `xact_desc_abort`).
    pub fn describe_abort(&self, origin_id: u16) -> String {
        let mut out = String::new();
        self.describe_start(&mut out);
        describe_rels("rels", &self.rels, &mut out);
        describe_subxacts(&self.subxacts, &mut out);
        self.describe_origin(origin_id, &mut out);
        describe_stats("", &self.dropped_stats, &mut out);
        out
    }
}

fn describe_origin(origin_id: u16, lsn: Lsn, time: i64, out: &mut String) {
    let _ = write!(
        out,
        "; origin: node {origin_id}, lsn {lsn}, at {}",
        format_timestamptz(time)
    );
}

/// PostgreSQL: `xact_desc_relations`.
fn describe_rels(label: &str, rels: &[RelFileNode], out: &mut String) {
    if !rels.is_empty() {
        let _ = write!(out, "; {label}:");
        for r in rels {
            let _ = write!(out, " {}", relpath(r, 0));
        }
    }
}

/// PostgreSQL: `xact_desc_subxacts`.
fn describe_subxacts(subxacts: &[u32], out: &mut String) {
    if !subxacts.is_empty() {
        out.push_str("; subxacts:");
        for x in subxacts {
            let _ = write!(out, " {x}");
        }
    }
}

/// PostgreSQL: `xact_desc_stats`.
fn describe_stats(label: &str, items: &[(i32, u32, u32)], out: &mut String) {
    if !items.is_empty() {
        let _ = write!(out, "; {label}dropped stats:");
        for (kind, db, obj) in items {
            let _ = write!(out, " {kind}/{db}/{obj}");
        }
    }
}

/// Rounds `n` up to a multiple of 8 (PostgreSQL: `MAXALIGN`).
fn maxalign(n: usize) -> usize {
    n.div_ceil(8) * 8
}

/// A PREPARE's main data, the two-phase state file (PostgreSQL:
/// `xl_xact_prepare`, `ParsePrepareRecord`, `xact_desc_prepare`):
/// `gid G: <time>[; rels(commit): ...][; rels(abort): ...][; commit dropped
/// stats: ...][; abort dropped stats: ...][; subxacts: ...][; inval msgs:
/// ...][; origin: ...]`.
fn describe_prepare(main: &[u8], origin_id: u16, out: &mut String) -> Result<(), MainDataError> {
    let mut h = Fields::new("xl_xact_prepare", main);
    h.skip(12)?; // magic, total_len, xid
    let db = h.u32()?;
    let time = h.i64()?;
    h.skip(4)?; // owner
    let counts = [h.i32()?, h.i32()?, h.i32()?, h.i32()?, h.i32()?, h.i32()?];
    let [nsubxacts, ncommitrels, nabortrels, ncommitstats, nabortstats, ninvals] = counts;
    let init_file = h.bool()?;
    h.skip(1)?; // padding
    let gid_len = usize::from(h.u16()?);
    let (origin_lsn, origin_time) = (Lsn(h.u64()?), h.i64()?);

    // Each part after the header starts MAXALIGNed.
    let mut at = PREPARE_HEADER_SIZE;
    let mut part = |what: &'static str, len: usize| -> Result<Fields<'_>, MainDataError> {
        let mut f = Fields::new(what, main);
        f.skip(at)?;
        let bytes = f.take(len)?;
        at += maxalign(len);
        Ok(Fields::new(what, bytes))
    };
    let size = |n: i32, each: usize| usize::try_from(n).unwrap_or(0).saturating_mul(each);
    let gid = part("prepare gid", gid_len)?.c_string();
    let subxacts: Vec<u32> = {
        let mut f = part("prepare subxacts", size(nsubxacts, 4))?;
        (0..nsubxacts).map(|_| f.u32()).collect::<Result<_, _>>()?
    };
    let commit_rels = rels(
        &mut part("prepare rels", size(ncommitrels, REL_SIZE))?,
        ncommitrels,
    )?;
    let abort_rels = rels(
        &mut part("prepare rels", size(nabortrels, REL_SIZE))?,
        nabortrels,
    )?;
    let commit_stats = stats(
        &mut part("prepare stats", size(ncommitstats, STATS_ITEM_SIZE))?,
        ncommitstats,
    )?;
    let abort_stats = stats(
        &mut part("prepare stats", size(nabortstats, STATS_ITEM_SIZE))?,
        nabortstats,
    )?;
    let mut msgs = part("prepare invalidations", size(ninvals, INVAL_MSG_SIZE))?;

    let _ = write!(out, "gid {gid}: {}", format_timestamptz(time));
    describe_rels("rels(commit)", &commit_rels, out);
    describe_rels("rels(abort)", &abort_rels, out);
    describe_stats("commit ", &commit_stats, out);
    describe_stats("abort ", &abort_stats, out);
    describe_subxacts(&subxacts, out);
    describe_invalidations(&mut msgs, ninvals, db, 0, init_file, out)?;
    if origin_id != 0 {
        describe_origin(origin_id, origin_lsn, origin_time, out);
    }
    Ok(())
}

/// PostgreSQL: `xact_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info & XLOG_XACT_OPMASK {
        XLOG_XACT_COMMIT => "COMMIT",
        XLOG_XACT_PREPARE => "PREPARE",
        XLOG_XACT_ABORT => "ABORT",
        XLOG_XACT_COMMIT_PREPARED => "COMMIT_PREPARED",
        XLOG_XACT_ABORT_PREPARED => "ABORT_PREPARED",
        XLOG_XACT_ASSIGNMENT => "ASSIGNMENT",
        XLOG_XACT_INVALIDATIONS => "INVALIDATION",
        _ => return None,
    })
}

/// Details of a Transaction record (PostgreSQL: `xact_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    let main = rec.body.main_data;
    let origin = rec.body.origin.unwrap_or(0);
    match rec.info & XLOG_XACT_OPMASK {
        XLOG_XACT_COMMIT | XLOG_XACT_COMMIT_PREPARED => {
            out.push_str(&CommitRecord::decode(rec.info, main)?.describe(origin));
        }
        XLOG_XACT_ABORT | XLOG_XACT_ABORT_PREPARED => {
            out.push_str(&CommitRecord::decode(rec.info, main)?.describe_abort(origin));
        }
        XLOG_XACT_PREPARE => describe_prepare(main, origin, out)?,
        XLOG_XACT_ASSIGNMENT => {
            let mut f = rec.main("xl_xact_assignment");
            let top = f.u32()?;
            let _ = write!(out, "xtop {top}: subxacts:");
            for x in xids(&mut f)? {
                let _ = write!(out, " {x}");
            }
        }
        XLOG_XACT_INVALIDATIONS => {
            let mut f = rec.main("xl_xact_invals");
            let n = f.i32()?;
            describe_invalidations(&mut f, n, 0, 0, false, out)?;
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minimal_commit() {
        let data = 848_630_238_312_967i64.to_le_bytes();
        let c = CommitRecord::decode(0, &data).unwrap();
        assert_eq!(c.describe(0), "2026-11-22 02:37:18.312967 UTC");
        assert!(CommitRecord::decode(0, &data[..7]).is_err());
    }

    #[test]
    fn commit_with_invalidations_and_sync() {
        // The shape of the 66-byte sample commits: "...; inval msgs: catcache 21; sync".
        let mut data = 0i64.to_le_bytes().to_vec();
        let xinfo =
            XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_INVALS | XACT_COMPLETION_FORCE_SYNC_COMMIT;
        data.extend_from_slice(&xinfo.to_le_bytes());
        data.extend_from_slice(&[1, 0, 0, 0, 0x7F, 6, 0, 0]);
        data.extend_from_slice(&2i32.to_le_bytes());
        let mut catcache = [0u8; 16];
        catcache[0] = 21;
        let mut snapshot = [0u8; 16];
        snapshot[0] = (-5i8) as u8;
        snapshot[8..12].copy_from_slice(&2396u32.to_le_bytes());
        data.extend_from_slice(&catcache);
        data.extend_from_slice(&snapshot);
        let c = CommitRecord::decode(XLOG_XACT_HAS_INFO, &data).unwrap();
        assert_eq!(
            c.describe(0),
            "2000-01-01 00:00:00.000000 UTC; inval msgs: catcache 21 snapshot 2396; sync"
        );
        // A hostile count is an error, not an allocation.
        let n = 12;
        data[n + 8..n + 12].copy_from_slice(&i32::MAX.to_le_bytes());
        assert!(CommitRecord::decode(XLOG_XACT_HAS_INFO, &data).is_err());
    }

    #[test]
    fn abort_of_a_prepared_transaction_with_subxacts_and_rels() {
        let mut data = 0i64.to_le_bytes().to_vec();
        let xinfo = XACT_XINFO_HAS_SUBXACTS | XACT_XINFO_HAS_RELFILENODES | XACT_XINFO_HAS_TWOPHASE;
        data.extend_from_slice(&xinfo.to_le_bytes());
        for v in [1u32, 900, 1, 1663, 5, 16384, 812] {
            data.extend_from_slice(&v.to_le_bytes());
        }
        let c = CommitRecord::decode(XLOG_XACT_HAS_INFO, &data).unwrap();
        assert_eq!(
            c.describe_abort(0),
            "812: 2000-01-01 00:00:00.000000 UTC; rels: base/5/16384; subxacts: 900"
        );
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
            // Transaction at 0/019F84A0
            (1, 0x20, "ff0872ef1a931c040300", "ABORT 2026-11-25 18:15:03.743346 UTC"),
            // Transaction at 0/019F7C58
            (1, 0xC0, "ff1bfcec1a931c040300d1000000050000007f06000024800000703200", "ABORT_PREPARED 32804: 2026-11-25 18:15:03.742716 UTC"),
            // Transaction at 0/010000F8
            (1, 0x80, "ff14c9ae17931c04030001000000050000007f060000", "COMMIT 2026-11-25 18:15:03.530185 UTC"),
            // Transaction at 0/019F7880
            (1, 0xB0, "ff1b2ede1a931c040300d1000000050000007f06000023800000703100", "COMMIT_PREPARED 32803: 2026-11-25 18:15:03.738926 UTC"),
            // Transaction at 0/01008060
            (1, 0x60, "ff340300000053000000050000004657085300000000fbbd424205000000300a000000000000fb80000005000000310a000000000000", "INVALIDATION ; inval msgs: catcache 83 snapshot 2608 snapshot 2609"),
        ]);
    }
}
