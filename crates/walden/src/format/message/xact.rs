//! Transaction COMMIT records (PostgreSQL: `xl_xact_commit` and the
//! optional parts `ParseCommitRecord` reads).

use std::fmt::Write as _;
use std::ops::Range;

use super::{format_timestamptz, MainDataError};
use crate::format::body::RelFileNode;
use crate::format::little_endian::{field, fixed_field, Cursor};
use crate::format::rmgr::{XLOG_XACT_COMMIT, XLOG_XACT_HAS_INFO, XLOG_XACT_OPMASK};
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
/// Byte range of a `SharedInvalidationMessage`'s `id` (i8): which kind it is.
const INVAL_ID: Range<usize> = 0..1;
/// Byte range of its `dbId` (u32), in every kind that has one.
const INVAL_DB_ID: Range<usize> = 4..8;
/// Byte range of the u32 after `dbId`: `hashValue`, `catId` or `relId`
/// depending on the kind.
const INVAL_OBJECT_ID: Range<usize> = 8..12;

/// Size of a subtransaction id in the subxact array (`TransactionId`).
const SUBXACT_SIZE: usize = 4;
/// Byte range of the only field of a subxact entry.
const SUBXACT_XID: Range<usize> = 0..SUBXACT_SIZE;

/// Size of a `RelFileNode` in the dropped-relation array.
const RELFILENODE_SIZE: usize = 12;
/// Byte ranges of `spcNode`, `dbNode` and `relNode` in a `RelFileNode`.
const RELFILENODE_SPC: Range<usize> = 0..4;
const RELFILENODE_DB: Range<usize> = 4..8;
const RELFILENODE_REL: Range<usize> = 8..RELFILENODE_SIZE;

/// Size of an `xl_xact_stats_item`.
const STATS_ITEM_SIZE: usize = 12;
/// Byte ranges of `kind` (i32), `dboid` and `objoid` in `xl_xact_stats_item`.
const STATS_ITEM_KIND: Range<usize> = 0..4;
const STATS_ITEM_DBOID: Range<usize> = 4..8;
const STATS_ITEM_OBJOID: Range<usize> = 8..STATS_ITEM_SIZE;
/// `GLOBALTABLESPACE_OID` and `DEFAULTTABLESPACE_OID`, for relation paths.
const GLOBAL_TABLESPACE: u32 = 1664;
const DEFAULT_TABLESPACE: u32 = 1663;
/// PostgreSQL 15's `TABLESPACE_VERSION_DIRECTORY`.
const TABLESPACE_VERSION_DIRECTORY: &str = "PG_15_202209061";

const WHAT: &str = "commit";

/// A parsed COMMIT record (PostgreSQL: `xl_xact_parsed_commit`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommitRecord {
    /// Commit time, a `TimestampTz`.
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
    /// The prepared transaction's xid for COMMIT PREPARED, else 0.
    pub twophase_xid: u32,
    /// Replication origin LSN and timestamp, when `XACT_XINFO_HAS_ORIGIN`.
    pub origin: Option<(Lsn, i64)>,
}

fn too_short(main_data: &[u8], c: &Cursor<'_>) -> MainDataError {
    MainDataError::TooShort {
        what: WHAT,
        len: main_data.len(),
        need: c.position() as u64 + 1,
    }
}

/// `count` items of `size` bytes each, preceded by an i32 count.
fn counted<'a>(c: &mut Cursor<'a>, size: usize) -> Option<impl Iterator<Item = &'a [u8]>> {
    let n = usize::try_from(c.i32()?).ok()?;
    Some(c.take(n.checked_mul(size)?)?.chunks_exact(size))
}

impl CommitRecord {
    /// Parses the main data of a Transaction record with `info`
    /// (PostgreSQL: `ParseCommitRecord`). The parts must fit in the main
    /// data; trailing bytes are ignored, as PostgreSQL does.
    pub fn decode(info: u8, main_data: &[u8]) -> Result<CommitRecord, MainDataError> {
        let mut c = Cursor::new(main_data);
        let mut rec = CommitRecord {
            xact_time: c.i64().ok_or_else(|| too_short(main_data, &c))?,
            ..Default::default()
        };
        if info & XLOG_XACT_HAS_INFO != 0 {
            rec.xinfo = c.u32().ok_or_else(|| too_short(main_data, &c))?;
        }
        let x = rec.xinfo;
        let parts = (|| -> Option<()> {
            if x & XACT_XINFO_HAS_DBINFO != 0 {
                rec.db_ts = Some((c.u32()?, c.u32()?));
            }
            if x & XACT_XINFO_HAS_SUBXACTS != 0 {
                rec.subxacts = counted(&mut c, SUBXACT_SIZE)?
                    .map(le_u32(SUBXACT_XID))
                    .collect();
            }
            if x & XACT_XINFO_HAS_RELFILENODES != 0 {
                rec.rels = counted(&mut c, RELFILENODE_SIZE)?
                    .map(|b| RelFileNode {
                        spc: le_u32(RELFILENODE_SPC)(b),
                        db: le_u32(RELFILENODE_DB)(b),
                        rel: le_u32(RELFILENODE_REL)(b),
                    })
                    .collect();
            }
            if x & XACT_XINFO_HAS_DROPPED_STATS != 0 {
                rec.dropped_stats = counted(&mut c, STATS_ITEM_SIZE)?
                    .map(|b| {
                        (
                            le_u32(STATS_ITEM_KIND)(b) as i32,
                            le_u32(STATS_ITEM_DBOID)(b),
                            le_u32(STATS_ITEM_OBJOID)(b),
                        )
                    })
                    .collect();
            }
            if x & XACT_XINFO_HAS_INVALS != 0 {
                rec.invals = counted(&mut c, INVAL_MSG_SIZE)?
                    .map(|b| b.try_into().unwrap_or([0; INVAL_MSG_SIZE]))
                    .collect();
            }
            if x & XACT_XINFO_HAS_TWOPHASE != 0 {
                rec.twophase_xid = c.u32()?;
                if x & XACT_XINFO_HAS_GID != 0 {
                    while c.u8()? != 0 {}
                }
            }
            if x & XACT_XINFO_HAS_ORIGIN != 0 {
                rec.origin = Some((Lsn(c.u64()?), c.i64()?));
            }
            Some(())
        })();
        match parts {
            Some(()) => Ok(rec),
            None => Err(too_short(main_data, &c)),
        }
    }

    /// pg_waldump's details of a COMMIT: `[xid: ]<time>[; rels: ...][;
    /// subxacts: ...][; dropped stats: ...][; inval msgs: ...][;
    /// apply_feedback][; sync][; origin: ...]`, with `origin_id` the
    /// record's replication origin (PostgreSQL: `xact_desc_commit`).
    pub fn describe(&self, origin_id: u16) -> String {
        let mut out = String::new();
        if self.twophase_xid != 0 {
            let _ = write!(out, "{}: ", self.twophase_xid);
        }
        out.push_str(&format_timestamptz(self.xact_time));
        if !self.rels.is_empty() {
            out.push_str("; rels:");
            for r in &self.rels {
                let _ = write!(out, " {}", relation_path(r));
            }
        }
        if !self.subxacts.is_empty() {
            out.push_str("; subxacts:");
            for x in &self.subxacts {
                let _ = write!(out, " {x}");
            }
        }
        if !self.dropped_stats.is_empty() {
            out.push_str("; dropped stats:");
            for (kind, db, obj) in &self.dropped_stats {
                let _ = write!(out, " {kind}/{db}/{obj}");
            }
        }
        self.describe_invals(&mut out);
        if self.xinfo & XACT_COMPLETION_APPLY_FEEDBACK != 0 {
            out.push_str("; apply_feedback");
        }
        if self.xinfo & XACT_COMPLETION_FORCE_SYNC_COMMIT != 0 {
            out.push_str("; sync");
        }
        if let Some((lsn, time)) = self.origin {
            let _ = write!(
                out,
                "; origin: node {origin_id}, lsn {lsn}, at {}",
                format_timestamptz(time)
            );
        }
        out
    }

    /// PostgreSQL: `standby_desc_invalidations`.
    fn describe_invals(&self, out: &mut String) {
        if self.invals.is_empty() {
            return;
        }
        if self.xinfo & XACT_COMPLETION_UPDATE_RELCACHE_FILE != 0 {
            let (db, ts) = self.db_ts.unwrap_or_default();
            let _ = write!(out, "; relcache init file inval dbid {db} tsid {ts}");
        }
        out.push_str("; inval msgs:");
        for m in &self.invals {
            let id = i8::from_le_bytes(fixed_field(m, INVAL_ID));
            let (at4, at8) = (le_u32(INVAL_DB_ID)(m), le_u32(INVAL_OBJECT_ID)(m));
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
    }
}

/// A reader of the little-endian u32 at `at` of a slice known to be long
/// enough (0 if it is not).
fn le_u32(at: Range<usize>) -> impl Fn(&[u8]) -> u32 {
    move |b| field(b, at.clone()).map_or(0, u32::from_le_bytes)
}

/// The main-fork path of a relation, relative to the data directory
/// (PostgreSQL: `relpathperm`).
fn relation_path(r: &RelFileNode) -> String {
    match r.spc {
        GLOBAL_TABLESPACE => format!("global/{}", r.rel),
        DEFAULT_TABLESPACE => format!("base/{}/{}", r.db, r.rel),
        spc => format!(
            "pg_tblspc/{spc}/{TABLESPACE_VERSION_DIRECTORY}/{}/{}",
            r.db, r.rel
        ),
    }
}

/// Details of a Transaction record: a COMMIT's, nothing for other types.
pub(super) fn describe(
    info: u8,
    main_data: &[u8],
    origin: u16,
    out: &mut String,
) -> Result<(), MainDataError> {
    if info & XLOG_XACT_OPMASK == XLOG_XACT_COMMIT {
        out.push_str(&CommitRecord::decode(info, main_data)?.describe(origin));
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
    fn relation_paths() {
        assert_eq!(
            relation_path(&RelFileNode {
                spc: 1663,
                db: 5,
                rel: 16384
            }),
            "base/5/16384"
        );
        assert_eq!(
            relation_path(&RelFileNode {
                spc: 1664,
                db: 0,
                rel: 1262
            }),
            "global/1262"
        );
        assert_eq!(
            relation_path(&RelFileNode {
                spc: 16500,
                db: 5,
                rel: 7
            }),
            "pg_tblspc/16500/PG_15_202209061/5/7"
        );
    }
}
