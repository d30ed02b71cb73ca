//! The main data of the records Walden writes or reports on, and
//! pg_waldump's description of records.
//!
//! - [`LogicalMessage`]: `pg_logical_emit_message`'s record;
//! - [`CheckPoint`], [`OverwriteContrecord`], [`switch_record_header`]: XLOG records;
//! - [`CommitRecord`]: a Transaction COMMIT or ABORT;
//! - [`BatchMarker`]: the `XLOG_NOOP` record in front of a batch;
//! - [`describe_body`] (and [`describe`] for main data alone): the text
//!   pg_waldump 15 prints after `desc: ` for every record type of every
//!   built-in rmgr, [`record_type_name`] its `rm_identify`, and
//!   [`describe_block_refs`] / [`describe_block_details`] its block
//!   references, short and with `--bkp-details`.
//!
//! One file per rmgr family, each with the family's `identify` and
//! `describe`, decoding the `xl_*` structs field by field (padding skipped
//! by name) through `fields`; `relpath` names relation files.

mod batch;
mod brin;
mod btree;
mod clog;
mod commit_ts;
mod database;
mod fields;
mod generic;
mod gin;
mod gist;
mod hash;
mod heap;
mod logical;
mod multixact;
mod relmap;
mod relpath;
mod replication_origin;
mod sequence;
mod spgist;
mod standby;
mod storage;
mod tablespace;
mod timestamp;
mod xact;
mod xlog;

use std::fmt::Write as _;

pub use batch::{BatchMarker, BATCH_MARKER_MAGIC, BATCH_MARKER_SIZE};
pub use logical::{LogicalMessage, LOGICAL_MESSAGE_HEADER_SIZE};
pub use timestamp::{format_timestamptz, POSTGRES_EPOCH_UNIX_SECS, USECS_PER_SEC};
pub use xact::CommitRecord;
pub use xlog::{
    switch_record_header, CheckPoint, OverwriteContrecord, CHECKPOINT_SIZE,
    OVERWRITE_CONTRECORD_SIZE,
};

use std::borrow::Cow;

use fields::Fields;
use relpath::fork_name;

use super::body::{
    BlockRef, Body, BKPIMAGE_COMPRESS_LZ4, BKPIMAGE_COMPRESS_PGLZ, BKPIMAGE_COMPRESS_ZSTD, BLCKSZ,
};
use super::record::XLR_RMGR_INFO_MASK;
use super::rmgr::{
    RM_BRIN_ID, RM_BTREE_ID, RM_CLOG_ID, RM_COMMIT_TS_ID, RM_DBASE_ID, RM_GENERIC_ID, RM_GIN_ID,
    RM_GIST_ID, RM_HASH_ID, RM_HEAP2_ID, RM_HEAP_ID, RM_LOGICALMSG_ID, RM_MIN_CUSTOM_ID,
    RM_MULTIXACT_ID, RM_RELMAP_ID, RM_REPLORIGIN_ID, RM_SEQ_ID, RM_SMGR_ID, RM_SPGIST_ID,
    RM_STANDBY_ID, RM_TBLSPC_ID, RM_XACT_ID, RM_XLOG_ID,
};

/// Why main data is not the struct its record type says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MainDataError {
    /// Fewer bytes than the fixed part of the struct.
    #[error("{what}: main data of {len} bytes is shorter than the {need} bytes it needs")]
    TooShort {
        /// The struct being decoded.
        what: &'static str,
        /// Bytes of main data.
        len: usize,
        /// Bytes needed.
        need: u64,
    },
    /// The sizes inside the struct do not add up to the main data length.
    #[error("{what}: main data is {len} bytes but its own sizes add up to {announced}")]
    SizeMismatch {
        /// The struct being decoded.
        what: &'static str,
        /// Bytes of main data.
        len: usize,
        /// What the struct's size fields announce.
        announced: u64,
    },
    /// A logical message prefix without its terminating NUL.
    #[error("logical message: the prefix is not NUL-terminated")]
    PrefixNotTerminated,
}

/// One record as the rmgrs' descriptions see it (PostgreSQL: the
/// `XLogReaderState` an `rm_desc` function reads).
struct Rec<'r, 'a> {
    /// The rmgr's four bits of `xl_info` (`info & XLR_RMGR_INFO_MASK`).
    info: u8,
    /// The decoded body: blocks, origin, main data.
    body: &'r Body<&'a [u8]>,
}

impl<'r, 'a> Rec<'r, 'a> {
    /// The main data read as the struct `what`.
    fn main(&self, what: &'static str) -> Fields<'a> {
        Fields::new(what, self.body.main_data)
    }

    /// Block reference `id`, if the record has it.
    fn block(&self, id: u8) -> Option<&'r BlockRef<&'a [u8]>> {
        self.body.blocks.iter().find(|b| b.id == id)
    }

    /// The data of block reference `id` read as the struct `what` (empty
    /// when the record has no such block).
    fn block_data(&self, id: u8, what: &'static str) -> Fields<'a> {
        Fields::new(what, self.block(id).map_or(&[][..], |b| b.data))
    }
}

/// The record type's name (PostgreSQL: the rmgrs' `rm_identify`), `None` for
/// a type the rmgr does not know and for custom rmgrs.
pub fn record_type_name(rmid: u8, info: u8) -> Option<&'static str> {
    let info = info & XLR_RMGR_INFO_MASK;
    match rmid {
        RM_XLOG_ID => xlog::identify(info),
        RM_XACT_ID => xact::identify(info),
        RM_SMGR_ID => storage::identify(info),
        RM_CLOG_ID => clog::identify(info),
        RM_DBASE_ID => database::identify(info),
        RM_TBLSPC_ID => tablespace::identify(info),
        RM_MULTIXACT_ID => multixact::identify(info),
        RM_RELMAP_ID => relmap::identify(info),
        RM_STANDBY_ID => standby::identify(info),
        RM_HEAP2_ID => heap::identify_heap2(info),
        RM_HEAP_ID => heap::identify_heap(info),
        RM_BTREE_ID => btree::identify(info),
        RM_HASH_ID => hash::identify(info),
        RM_GIN_ID => gin::identify(info),
        RM_GIST_ID => gist::identify(info),
        RM_SEQ_ID => sequence::identify(info),
        RM_SPGIST_ID => spgist::identify(info),
        RM_BRIN_ID => brin::identify(info),
        RM_COMMIT_TS_ID => commit_ts::identify(info),
        RM_REPLORIGIN_ID => replication_origin::identify(info),
        RM_GENERIC_ID => Some(generic::IDENTIFY),
        RM_LOGICALMSG_ID => logical::identify(info),
        _ => None,
    }
}

/// The record type's label: its name, or pg_waldump's `UNKNOWN (x)` with the
/// type bits in lower-case hex (e.g. `UNKNOWN (d0)`, `UNKNOWN (0)`).
pub fn record_type_label(rmid: u8, info: u8) -> Cow<'static, str> {
    match record_type_name(rmid, info) {
        Some(name) => Cow::Borrowed(name),
        None => Cow::Owned(format!("UNKNOWN ({:x})", info & XLR_RMGR_INFO_MASK)),
    }
}

/// pg_waldump 15's description of a record with only main data: see
/// [`describe_body`].
pub fn describe(rmid: u8, info: u8, main_data: &[u8]) -> String {
    describe_body(
        rmid,
        info,
        &Body {
            main_data,
            ..Default::default()
        },
    )
}

/// pg_waldump 15's description of a record, exactly the text it prints after
/// `desc: ` and before the block references: the record type (or
/// `UNKNOWN (x)`), a space, then the rmgr's details, for every record type
/// of every built-in rmgr of PostgreSQL 15 (`rmid: N` for a custom rmgr).
/// Some details come from block data (Gin, Btree META_CLEANUP) or from the
/// record's replication origin (Transaction), so the whole body is given.
/// Bytes that do not decode as the type's struct are described as `<error>`
/// where pg_waldump would print garbage. Timestamps print in UTC.
///
/// PostgreSQL: `XLogDumpDisplayRecord` with the rmgrs' `rm_identify` and
/// `rm_desc` (`src/backend/access/rmgrdesc/`).
pub fn describe_body(rmid: u8, info: u8, body: &Body<&[u8]>) -> String {
    let mut out = String::from(record_type_label(rmid, info));
    out.push(' ');
    let rec = Rec {
        info: info & XLR_RMGR_INFO_MASK,
        body,
    };
    let out_ref = &mut out;
    let details = match rmid {
        RM_XLOG_ID => xlog::describe(&rec, out_ref),
        RM_XACT_ID => xact::describe(&rec, out_ref),
        RM_SMGR_ID => storage::describe(&rec, out_ref),
        RM_CLOG_ID => clog::describe(&rec, out_ref),
        RM_DBASE_ID => database::describe(&rec, out_ref),
        RM_TBLSPC_ID => tablespace::describe(&rec, out_ref),
        RM_MULTIXACT_ID => multixact::describe(&rec, out_ref),
        RM_RELMAP_ID => relmap::describe(&rec, out_ref),
        RM_STANDBY_ID => standby::describe(&rec, out_ref),
        RM_HEAP2_ID => heap::describe_heap2(&rec, out_ref),
        RM_HEAP_ID => heap::describe_heap(&rec, out_ref),
        RM_BTREE_ID => btree::describe(&rec, out_ref),
        RM_HASH_ID => hash::describe(&rec, out_ref),
        RM_GIN_ID => gin::describe(&rec, out_ref),
        RM_GIST_ID => gist::describe(&rec, out_ref),
        RM_SEQ_ID => sequence::describe(&rec, out_ref),
        RM_SPGIST_ID => spgist::describe(&rec, out_ref),
        RM_BRIN_ID => brin::describe(&rec, out_ref),
        RM_COMMIT_TS_ID => commit_ts::describe(&rec, out_ref),
        RM_REPLORIGIN_ID => replication_origin::describe(&rec, out_ref),
        RM_GENERIC_ID => generic::describe(&rec, out_ref),
        RM_LOGICALMSG_ID => logical::describe(&rec, out_ref),
        r if r >= RM_MIN_CUSTOM_ID => {
            let _ = write!(out_ref, "rmid: {rmid}");
            Ok(())
        }
        _ => Ok(()),
    };
    if let Err(e) = details {
        let _ = write!(out, "<{e}>");
    }
    out
}

/// pg_waldump's short list of block references, appended after the
/// description: `, blkref #N: rel S/D/R[ fork F] blk B[ FPW]` per block
/// (` FPW for WAL verification` for an image that replay does not apply).
///
/// PostgreSQL: the block loop of `XLogDumpDisplayRecord`.
pub fn describe_block_refs<B: AsRef<[u8]>>(body: &Body<B>) -> String {
    let mut out = String::new();
    for (b, rel) in body.block_rels() {
        let rel = rel.unwrap_or_default();
        let _ = write!(out, ", blkref #{}: rel {rel}", b.id);
        match fork_name(i32::from(b.fork)) {
            Some("main") => {}
            Some(name) => {
                let _ = write!(out, " fork {name}");
            }
            None => {
                let _ = write!(out, " fork {}", b.fork);
            }
        }
        let _ = write!(out, " blk {}", b.block);
        match &b.image {
            Some(img) if img.applies() => out.push_str(" FPW"),
            Some(_) => out.push_str(" FPW for WAL verification"),
            None => {}
        }
    }
    out
}

/// pg_waldump's `--bkp-details` list of block references: one line per
/// block, each `\tblkref #N: rel S/D/R fork F blk B` and, for an image,
/// ` (FPW[ for WAL verification]); hole: offset: O, length: L` with
/// `, compression saved: N, method: M` for a compressed one, then `\n`.
///
/// PostgreSQL: the detailed branch of `XLogDumpDisplayRecord`.
pub fn describe_block_details<B: AsRef<[u8]>>(body: &Body<B>) -> String {
    let mut out = String::new();
    for (b, rel) in body.block_rels() {
        let rel = rel.unwrap_or_default();
        let _ = write!(out, "\tblkref #{}: rel {rel} fork ", b.id);
        match fork_name(i32::from(b.fork)) {
            Some(name) => out.push_str(name),
            None => {
                let _ = write!(out, "{}", b.fork);
            }
        }
        let _ = write!(out, " blk {}", b.block);
        if let Some(img) = &b.image {
            let verification = if img.applies() {
                ""
            } else {
                " for WAL verification"
            };
            let _ = write!(
                out,
                " (FPW{verification}); hole: offset: {}, length: {}",
                img.hole_offset, img.hole_length
            );
            if img.is_compressed() {
                let method = if img.info & BKPIMAGE_COMPRESS_PGLZ != 0 {
                    "pglz"
                } else if img.info & BKPIMAGE_COMPRESS_LZ4 != 0 {
                    "lz4"
                } else if img.info & BKPIMAGE_COMPRESS_ZSTD != 0 {
                    "zstd"
                } else {
                    "unknown"
                };
                let saved = i64::from(BLCKSZ)
                    - i64::from(img.hole_length)
                    - img.bytes.as_ref().len() as i64;
                let _ = write!(out, ", compression saved: {saved}, method: {method}");
            }
        }
        out.push('\n');
    }
    out
}

/// What the rmgr families' tests share.
#[cfg(test)]
mod test_support {
    use super::{describe_body, Body};

    /// Asserts each record's description: (rmid, info, body as hex, text).
    pub(super) fn assert_described(records: &[(u8, u8, &str, &str)]) {
        for (rmid, info, hex, want) in records {
            let bytes: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            let body = Body::parse(&bytes).unwrap();
            assert_eq!(describe_body(*rmid, *info, &body), *want, "{hex}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_descriptions() {
        assert_eq!(describe(0, 0x40, &[]), "SWITCH ");
        assert_eq!(describe(0, 0x20, &[1, 2, 3, 4, 5, 6, 7, 8]), "NOOP ");
        assert_eq!(describe(0, 0xB0, &[]), "FPI ");
        assert_eq!(describe(0, 0x30, &24576u32.to_le_bytes()), "NEXTOID 24576");
        assert_eq!(describe(128, 0, &[]), "UNKNOWN (0) rmid: 128");
        assert_eq!(describe(3, 0x20, &[1]), "UNKNOWN (20) ");
        assert_eq!(
            describe(10, 0x00, &[1]),
            "INSERT <xl_heap_insert: main data of 1 bytes is shorter than the 2 bytes it needs>"
        );
        assert_eq!(
            describe(0, 0x00, &[1, 2]),
            "CHECKPOINT_SHUTDOWN <checkpoint: main data of 2 bytes is shorter than the 88 bytes it needs>"
        );
    }
}
