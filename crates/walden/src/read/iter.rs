//! [`WalReader`] as an [`Iterator`]: records until the end of WAL, then
//! `None`, with the reason kept; any other error is returned once.
//! PostgreSQL: none (pg_waldump loops on `XLogReadRecord`).

use super::error::{EndOfWalReason, ReadError};
use super::reader::{Stopped, WalReader};
use super::WalRecord;

/// Each item is the next valid record. Iteration ends with `None` at the
/// end of WAL ([`ReadError::EndOfWal`]: every log ends at the first record
/// that is not valid; see [`WalReader::end_of_wal`] for where and why) or
/// at [`super::ReaderOptions::end`]; any other error (I/O, a missing start
/// segment, ...) is returned as `Some(Err(..))`, once, and then the
/// iterator ends.
///
/// ```
/// # let dir = tempfile::tempdir().unwrap();
/// use walden::{Config, Wal, WalReader, ReaderOptions};
/// let wal = Wal::create(dir.path(), Config::default()).unwrap();
/// let start = wal.append(b"one").unwrap();
/// wal.append(b"two").unwrap();
/// wal.close().unwrap();
///
/// let mut reader = WalReader::open(dir.path(), ReaderOptions::default()).unwrap();
/// let mut payloads = Vec::new();
/// for record in &mut reader {
///     let record = record.unwrap(); // an I/O error, not the end of WAL
///     if record.header.rmid == walden::DEFAULT_RMID {
///         payloads.push(record.decode_body().unwrap().main_data);
///     }
/// }
/// assert_eq!(payloads, [b"one".to_vec(), b"two".to_vec()]);
/// assert!(reader.end_reason().is_some(), "stopped at the end of WAL");
/// # let _ = start;
/// ```
impl Iterator for WalReader {
    type Item = Result<WalRecord, ReadError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped.is_some() {
            return None;
        }
        let (stopped, item) = match self.next_record() {
            Ok(Some(record)) => return Some(Ok(record)),
            Ok(None) => (Stopped::EndLimit, None),
            Err(e @ ReadError::EndOfWal { .. }) => (Stopped::EndOfWal(e), None),
            Err(e) => (Stopped::Failed, Some(Err(e))),
        };
        self.stopped = Some(stopped);
        item
    }
}

impl WalReader {
    /// After iteration ended at the end of WAL: the [`ReadError::EndOfWal`]
    /// it ended on (the last good record and the reason, as pg_waldump
    /// prints them). `None` while records remain, at the end limit, or
    /// after another error.
    pub fn end_of_wal(&self) -> Option<&ReadError> {
        match &self.stopped {
            Some(Stopped::EndOfWal(e)) => Some(e),
            _ => None,
        }
    }

    /// The reason of [`WalReader::end_of_wal`].
    pub fn end_reason(&self) -> Option<&EndOfWalReason> {
        match self.end_of_wal() {
            Some(ReadError::EndOfWal { reason, .. }) => Some(reason),
            _ => None,
        }
    }

    /// True once iteration ended cleanly: at the end of WAL or at the end
    /// limit (not on another error, and not before the end).
    pub fn ended_cleanly(&self) -> bool {
        matches!(self.stopped, Some(Stopped::EndLimit | Stopped::EndOfWal(_)))
    }
}
