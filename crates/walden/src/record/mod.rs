//! [`Record`]: what a caller inserts, its payload borrowed or owned; and
//! [`Batch`]: records inserted together, all or none.

mod batch;

pub use batch::Batch;

use std::borrow::Cow;

#[cfg(test)]
use crate::format::body::encode_main_data;
use crate::format::body::main_data_header_len;
use crate::format::message::LogicalMessage;
use crate::format::record::RECORD_HEADER_SIZE;
use crate::format::rmgr;
use crate::lsn::maxalign;

/// Largest record PostgreSQL accepts (`XLogRecordMaxSize`, 1020 MiB).
pub const MAX_RECORD_SIZE: usize = 1020 << 20;

/// Database OID `pg_logical_emit_message` records when run in the
/// `postgres` database of a fresh PostgreSQL 15 cluster.
pub const POSTGRES_DATABASE_OID: u32 = 5;

/// A record to insert: resource manager, info byte, transaction id and main
/// data. Walden writes it as a PostgreSQL record with no block references.
///
/// Engine-private records should use a custom resource manager id
/// (128..=255): `pg_waldump` still verifies them. For plain bytes,
/// [`Record::bytes`] (or [`crate::Wal::append`]) uses [`DEFAULT_RMID`].
///
/// The payload is a [`Cow`]: [`Record::new`] takes an owned `Vec<u8>`
/// (a `Record<'static>`) or a borrowed `&[u8]` (nothing copied before the
/// one copy into the log).
///
/// ```
/// use walden::Record;
/// let r = Record::new(128, 0x10, b"put k=v".to_vec()).with_xid(42);
/// assert_eq!(r.encoded_len(), 24 + 2 + 7);
/// let m = Record::logical_message(true, "test", b"");
/// assert_eq!(m.encoded_len(), 55); // as pg_logical_emit_message(true, 'test', '')
/// let payload = [7u8; 66];
/// let borrowed = Record::bytes(&payload[..]);
/// assert_eq!(borrowed.rmid, walden::DEFAULT_RMID);
/// assert_eq!(&borrowed.data[..], &payload[..]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Resource manager id: 0..=21 are PostgreSQL's, 128..=255 are custom.
    pub rmid: u8,
    /// Info byte: the high 4 bits choose the record type.
    pub info: u8,
    /// Transaction id, 0 for none.
    pub xid: u32,
    /// Main data, borrowed or owned.
    pub data: Cow<'a, [u8]>,
}

/// The resource manager id of plain-bytes records ([`Record::bytes`],
/// [`crate::Wal::append`]): 128, the first custom id. pg_waldump shows such
/// records as `custom128` and verifies them like any other; an application
/// that also writes its own resource managers should pick other ids.
pub const DEFAULT_RMID: u8 = rmgr::RM_MIN_CUSTOM_ID;

/// Why a record cannot be inserted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The record is larger than PostgreSQL's limit.
    #[error("record of {len} bytes is larger than the maximum of {MAX_RECORD_SIZE} bytes")]
    TooLarge {
        /// Encoded length.
        len: usize,
    },
    /// The resource manager id is reserved.
    #[error("resource manager id {0} is invalid: use 0..=21 (PostgreSQL's) or 128..=255 (custom)")]
    InvalidRmid(u8),
    /// A batch of more records than its marker can count (`u32::MAX`).
    #[error("a batch of {0} records is more than the {max} a batch may hold", max = u32::MAX)]
    BatchTooLarge(usize),
    /// Low info bits are PostgreSQL's generic flags, meaningless here.
    #[error("info 0x{0:02X} sets low bits: only the high 4 bits (the record type) may be set")]
    InvalidInfo(u8),
}

impl<'a> Record<'a> {
    /// A record with no transaction id; `data` is a `Vec<u8>` (owned) or a
    /// `&[u8]` (borrowed).
    pub fn new(rmid: u8, info: u8, data: impl Into<Cow<'a, [u8]>>) -> Self {
        Record {
            rmid,
            info,
            xid: 0,
            data: data.into(),
        }
    }

    /// A plain-bytes record: [`DEFAULT_RMID`], info 0, no transaction id.
    pub fn bytes(data: impl Into<Cow<'a, [u8]>>) -> Self {
        Record::new(DEFAULT_RMID, 0, data)
    }

    /// The same record with its payload owned (copied if borrowed).
    pub fn into_owned(self) -> Record<'static> {
        Record {
            data: Cow::Owned(self.data.into_owned()),
            ..self
        }
    }

    /// Sets the transaction id.
    pub fn with_xid(mut self, xid: u32) -> Self {
        self.xid = xid;
        self
    }

    /// The record `pg_logical_emit_message(transactional, prefix, payload)`
    /// writes in the `postgres` database. A transactional message should also
    /// get an xid ([`Record::with_xid`]), as PostgreSQL assigns one.
    pub fn logical_message(transactional: bool, prefix: &str, payload: &[u8]) -> Record<'static> {
        let msg = LogicalMessage {
            db_id: POSTGRES_DATABASE_OID,
            transactional,
            prefix: prefix.as_bytes().to_vec(),
            payload: payload.to_vec(),
        };
        let mut data = Vec::with_capacity(msg.encoded_len());
        msg.encode(&mut data);
        Record::new(rmgr::RM_LOGICALMSG_ID, 0, data)
    }

    /// Length of the encoded record (`xl_tot_len`).
    pub fn encoded_len(&self) -> usize {
        let body = if self.data.is_empty() {
            0
        } else {
            main_data_header_len(self.data.len()) + self.data.len()
        };
        RECORD_HEADER_SIZE + body
    }

    /// Bytes the record takes in a `Postgres15` log: [`Record::encoded_len`]
    /// rounded up to the 8-byte alignment every record starts on (page
    /// headers it may cross are not counted).
    pub fn aligned_len(&self) -> u64 {
        maxalign(self.encoded_len() as u64)
    }

    /// Checks the record can be inserted.
    pub fn validate(&self) -> Result<(), RecordError> {
        if !rmgr::is_valid_rmid(self.rmid) {
            return Err(RecordError::InvalidRmid(self.rmid));
        }
        if self.info & 0x0F != 0 {
            return Err(RecordError::InvalidInfo(self.info));
        }
        let len = self.encoded_len();
        if len > MAX_RECORD_SIZE {
            return Err(RecordError::TooLarge { len });
        }
        Ok(())
    }

    /// Appends the body (everything after the 24-byte header) to `out`: the
    /// contiguous encoding, the reference the insert path's parts (the
    /// main-data header, then the data) are checked against.
    #[cfg(test)]
    pub(crate) fn encode_body(&self, out: &mut Vec<u8>) {
        if !self.data.is_empty() {
            encode_main_data(&self.data, out);
        }
    }
}
