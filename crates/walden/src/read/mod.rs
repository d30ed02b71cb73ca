//! Reading WAL: segment files → page validation → record reassembly →
//! record validation → [`WalRecord`]s, with PostgreSQL 15's xlogreader
//! semantics and pg_waldump's error wording.
//!
//! - `segment_source`: where segment bytes come from, the [`SegmentSource`]
//!   trait;
//! - `dir_source`: [`DirSource`] over a directory of segment files;
//! - `storage_segments`: [`StorageSource`], segment files read through a
//!   [`Storage`](crate::segment::Storage), as the engine reads its own log;
//! - `pages`: page fetching within the end limit and page header validation;
//! - `validate`: the format-specific checks (page header, record header, prev-link);
//! - `reader`: [`WalReader`], the record state machine;
//! - `error`: [`ReadError`] and [`EndOfWalReason`].

mod dir_source;
mod error;
mod iter;
mod pages;
mod reader;
mod segment_source;
mod storage_segments;
mod validate;

use std::borrow::Cow;

pub use dir_source::DirSource;
pub use error::{EndOfWalReason, ReadError};
pub use reader::WalReader;
pub use segment_source::{SegmentPos, SegmentSource, SourceError};
pub use storage_segments::StorageSource;
pub use validate::MAX_RECORD_LEN;

use crate::format::body::{Body, BodyError};
use crate::format::message::{
    describe_block_details, describe_block_refs, describe_body, record_type_label,
};
use crate::format::record::RecordHeader;
use crate::format::rmgr::rmgr_name;
use crate::lsn::{Lsn, TimeLineId};

/// What to read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReaderOptions {
    /// Where to start: any LSN, not necessarily a record start (the first
    /// record at or after it is found). `None`: the first byte of the
    /// lowest-numbered segment of the timeline.
    pub start: Option<Lsn>,
    /// Where to stop: reading ends cleanly before the first record that
    /// would need bytes at or after this LSN. `None`: read until the end of
    /// WAL, which is then an error, as in pg_waldump.
    pub end: Option<Lsn>,
    /// The timeline whose segment files are read.
    pub timeline: TimeLineId,
}

impl Default for ReaderOptions {
    /// No start, no end, timeline 1.
    fn default() -> Self {
        ReaderOptions {
            start: None,
            end: None,
            timeline: 1,
        }
    }
}

/// A record read and validated (CRC, prev-link, body headers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalRecord {
    /// Where the record starts.
    pub lsn: Lsn,
    /// The LSN just past its last byte (before alignment padding).
    pub end: Lsn,
    /// Its header.
    pub header: RecordHeader,
    /// The bytes after the record header (24 bytes; 16 in `CompactWalId`).
    pub body: Vec<u8>,
}

impl WalRecord {
    /// The body decoded into owned parts.
    pub fn decode_body(&self) -> Result<Body, BodyError> {
        Body::decode(&self.body)
    }

    /// The body decoded without copying its payloads.
    pub fn parse_body(&self) -> Result<Body<&[u8]>, BodyError> {
        Body::parse(&self.body)
    }

    /// The rmgr's name as pg_waldump prints it.
    pub fn rmgr_name(&self) -> Cow<'static, str> {
        rmgr_name(self.header.rmid)
    }

    /// `xl_tot_len` minus the bytes of full-page images: pg_waldump's "rec"
    /// length (PostgreSQL: `XLogRecGetLen`'s `rec_len`).
    pub fn rec_len(&self) -> u32 {
        let images = self.parse_body().map_or(0, |b| b.image_bytes());
        self.header.tot_len.saturating_sub(images as u32)
    }

    /// pg_waldump's `desc:` text: the description
    /// ([`describe_body`](crate::format::message::describe_body)) followed by the
    /// short block reference list (`, blkref #0: rel 1663/5/1247 blk 14 FPW`).
    pub fn describe(&self) -> String {
        let mut out = self.describe_record();
        if let Ok(body) = self.parse_body() {
            out.push_str(&describe_block_refs(&body));
        }
        out
    }

    /// pg_waldump's `desc:` text without the block references, as it
    /// prints it with `--bkp-details` (see [`describe`](Self::describe)).
    pub fn describe_record(&self) -> String {
        let (rmid, info) = (self.header.rmid, self.header.info);
        match self.parse_body() {
            Ok(body) => describe_body(rmid, info, &body),
            Err(e) => format!("{} <{e}>", record_type_label(rmid, info)),
        }
    }

    /// pg_waldump's `--bkp-details` lines for the block references
    /// ([`describe_block_details`]), each ending in a newline; empty without
    /// blocks or when the body does not decode.
    pub fn block_details(&self) -> String {
        self.parse_body()
            .map(|b| describe_block_details(&b))
            .unwrap_or_default()
    }

    /// The record's total length (`xl_tot_len`).
    pub fn tot_len(&self) -> u32 {
        self.header.tot_len
    }
}
