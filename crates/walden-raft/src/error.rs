//! [`RaftStoreError`]: everything the log store can fail with, and its
//! mapping onto openraft's [`StorageError`].

use std::io;
use std::path::PathBuf;

use openraft::{AnyError, ErrorSubject, ErrorVerb, NodeId, StorageError, StorageIOError};
use walden::{BadSegmentSize, BodyError, Lsn, ReadError};

use crate::codec::RecordKind;
use crate::contents::Discontinuity;

/// Why a [`crate::WaldenLogStore`] operation failed. Messages name the log
/// directory and, for records, their LSN.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RaftStoreError {
    /// The Walden configuration's segment size is invalid.
    #[error("invalid configuration: {0}")]
    Config(#[from] BadSegmentSize),
    /// The Walden log failed (insert, flush, checkpoint, open, create).
    #[error("Walden log \"{}\": {source}", .dir.display())]
    Wal {
        /// The log directory.
        dir: PathBuf,
        /// The cause.
        source: walden::Error,
    },
    /// Reading the log back on open failed, other than by reaching its end.
    #[error("reading Walden log \"{}\" from {from}: {source}", .dir.display())]
    Read {
        /// The log directory.
        dir: PathBuf,
        /// Where the replay started.
        from: Lsn,
        /// The cause.
        source: ReadError,
    },
    /// Replay stopped before the end of WAL that Walden's recovery found.
    #[error("replaying Walden log \"{}\" stopped at {stopped}, before the end of WAL at {end}: {reason}", .dir.display())]
    ReplayCutShort {
        /// The log directory.
        dir: PathBuf,
        /// Where the replay stopped.
        stopped: Lsn,
        /// The end of WAL recovery found.
        end: Lsn,
        /// Why the reader stopped.
        reason: String,
    },
    /// A record's body does not parse.
    #[error("raft record at {lsn} in \"{}\" has a malformed body: {source}", .dir.display())]
    Body {
        /// The log directory.
        dir: PathBuf,
        /// The record.
        lsn: Lsn,
        /// The cause.
        source: BodyError,
    },
    /// A change could not be serialised.
    #[error("cannot encode a raft {kind} record: {source}")]
    Encode {
        /// What was being logged.
        kind: RecordKind,
        /// The cause.
        source: postcard::Error,
    },
    /// A record's payload does not deserialise.
    #[error("raft {kind} record at {lsn} in \"{}\" is corrupt: {source}", .dir.display())]
    Decode {
        /// The log directory.
        dir: PathBuf,
        /// The record's kind.
        kind: RecordKind,
        /// The record.
        lsn: Lsn,
        /// The cause.
        source: postcard::Error,
    },
    /// An entry read back (from the WAL or the cache) does not decode.
    #[error("raft log entry {index} in \"{}\" is corrupt: {source}", .dir.display())]
    EntryCorrupt {
        /// The log directory.
        dir: PathBuf,
        /// The entry's index.
        index: u64,
        /// The cause.
        source: postcard::Error,
    },
    /// The index points at a record that is not the entry's (or the WAL
    /// ends before it): the WAL changed under the store.
    #[error("raft log entry {index} in \"{}\" is not at {lsn}, where the index has it", .dir.display())]
    EntryMissing {
        /// The log directory.
        dir: PathBuf,
        /// The entry's index.
        index: u64,
        /// Where the index has its record.
        lsn: Lsn,
    },
    /// A logged record does not fit the log rebuilt so far.
    #[error("raft {kind} record at {lsn} in \"{}\" does not fit the log: {source}", .dir.display())]
    Replay {
        /// The log directory.
        dir: PathBuf,
        /// The record's kind.
        kind: RecordKind,
        /// The record.
        lsn: Lsn,
        /// The cause.
        source: Discontinuity,
    },
    /// A change asked of the store would break the log's continuity; nothing
    /// was logged.
    #[error("refusing to log a raft {kind} record: {source}")]
    Rejected {
        /// What was being logged.
        kind: RecordKind,
        /// The cause.
        source: Discontinuity,
    },
    /// The background flush thread could not be started.
    #[error("starting the flush thread for \"{}\": {source}", .dir.display())]
    FlushThread {
        /// The log directory.
        dir: PathBuf,
        /// The cause.
        source: io::Error,
    },
}

impl RaftStoreError {
    /// This error as openraft's storage error about `subject` while doing
    /// `verb`; the message is kept as the source.
    pub fn into_storage_error<NID: NodeId>(
        self,
        subject: ErrorSubject<NID>,
        verb: ErrorVerb,
    ) -> StorageError<NID> {
        StorageIOError::new(subject, verb, AnyError::new(&self)).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_errors_keep_subject_verb_and_message() {
        let err = RaftStoreError::Rejected {
            kind: RecordKind::Entry,
            source: Discontinuity::Hole { index: 9, last: 4 },
        };
        let sto: StorageError<u64> = err.into_storage_error(ErrorSubject::Logs, ErrorVerb::Write);
        let text = sto.to_string();
        assert!(text.contains("Write"), "{text}");
        assert!(text.contains("Logs"), "{text}");
        assert!(
            text.contains("log entry 9 would leave a hole after the last log index 4"),
            "{text}"
        );
    }
}
