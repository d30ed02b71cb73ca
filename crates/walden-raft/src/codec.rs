//! The Walden records a [`crate::WaldenLogStore`] writes: one custom
//! resource manager id per kind of change, the payload as JSON in the
//! record's main data.

use std::fmt;

use openraft::{LogId, RaftTypeConfig, Vote};
use walden::Record;

/// Resource manager id of a log entry append.
pub const RM_RAFT_ENTRY: u8 = 0xA0;
/// Resource manager id of a saved vote.
pub const RM_RAFT_VOTE: u8 = 0xA1;
/// Resource manager id of a saved committed log id.
pub const RM_RAFT_COMMITTED: u8 = 0xA2;
/// Resource manager id of a truncation (delete the entries since an index).
pub const RM_RAFT_TRUNCATE: u8 = 0xA3;
/// Resource manager id of a purge (delete the entries up to a log id).
pub const RM_RAFT_PURGE: u8 = 0xA4;

/// The kinds of record the log store writes, one resource manager id each.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RecordKind {
    /// A log entry appended.
    Entry,
    /// The vote saved.
    Vote,
    /// The committed log id saved.
    Committed,
    /// The entries from an index on deleted.
    Truncate,
    /// The entries up to a log id deleted.
    Purge,
}

impl RecordKind {
    /// The resource manager id records of this kind carry.
    pub const fn rmid(self) -> u8 {
        match self {
            RecordKind::Entry => RM_RAFT_ENTRY,
            RecordKind::Vote => RM_RAFT_VOTE,
            RecordKind::Committed => RM_RAFT_COMMITTED,
            RecordKind::Truncate => RM_RAFT_TRUNCATE,
            RecordKind::Purge => RM_RAFT_PURGE,
        }
    }

    /// The kind a resource manager id stands for; `None` for records the
    /// log store does not write (Walden's own checkpoints, for instance).
    pub const fn from_rmid(rmid: u8) -> Option<RecordKind> {
        match rmid {
            RM_RAFT_ENTRY => Some(RecordKind::Entry),
            RM_RAFT_VOTE => Some(RecordKind::Vote),
            RM_RAFT_COMMITTED => Some(RecordKind::Committed),
            RM_RAFT_TRUNCATE => Some(RecordKind::Truncate),
            RM_RAFT_PURGE => Some(RecordKind::Purge),
            _ => None,
        }
    }
}

impl fmt::Display for RecordKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RecordKind::Entry => "entry",
            RecordKind::Vote => "vote",
            RecordKind::Committed => "committed",
            RecordKind::Truncate => "truncate",
            RecordKind::Purge => "purge",
        })
    }
}

/// One change to the raft log, as logged and as replayed.
pub(crate) enum LogRecord<C: RaftTypeConfig> {
    /// Append this entry.
    Entry(C::Entry),
    /// The vote is now this.
    Vote(Vote<C::NodeId>),
    /// The committed log id is now this.
    Committed(Option<LogId<C::NodeId>>),
    /// Delete the entries at and after this index.
    Truncate {
        /// First index deleted.
        since: u64,
    },
    /// Delete the entries at and before this log id.
    Purge {
        /// Last log id deleted.
        upto: LogId<C::NodeId>,
    },
}

impl<C: RaftTypeConfig> LogRecord<C> {
    /// The kind of this record.
    pub(crate) fn kind(&self) -> RecordKind {
        match self {
            LogRecord::Entry(_) => RecordKind::Entry,
            LogRecord::Vote(_) => RecordKind::Vote,
            LogRecord::Committed(_) => RecordKind::Committed,
            LogRecord::Truncate { .. } => RecordKind::Truncate,
            LogRecord::Purge { .. } => RecordKind::Purge,
        }
    }

    /// The Walden record that carries this change; an error if its payload
    /// does not serialise.
    pub(crate) fn encode(&self) -> Result<Record<'static>, serde_json::Error> {
        let data = match self {
            LogRecord::Entry(entry) => serde_json::to_vec(entry),
            LogRecord::Vote(vote) => serde_json::to_vec(vote),
            LogRecord::Committed(committed) => serde_json::to_vec(committed),
            LogRecord::Truncate { since } => serde_json::to_vec(since),
            LogRecord::Purge { upto } => serde_json::to_vec(upto),
        }?;
        Ok(Record::new(self.kind().rmid(), 0, data))
    }

    /// The change a record of `kind` with main data `data` carries.
    pub(crate) fn decode(kind: RecordKind, data: &[u8]) -> Result<Self, serde_json::Error> {
        Ok(match kind {
            RecordKind::Entry => LogRecord::Entry(serde_json::from_slice(data)?),
            RecordKind::Vote => LogRecord::Vote(serde_json::from_slice(data)?),
            RecordKind::Committed => LogRecord::Committed(serde_json::from_slice(data)?),
            RecordKind::Truncate => LogRecord::Truncate {
                since: serde_json::from_slice(data)?,
            },
            RecordKind::Purge => LogRecord::Purge {
                upto: serde_json::from_slice(data)?,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{blank, log_id, TestConfig};
    use openraft::RaftLogId;

    #[test]
    fn every_kind_round_trips_through_its_rmid() {
        let kinds = [
            RecordKind::Entry,
            RecordKind::Vote,
            RecordKind::Committed,
            RecordKind::Truncate,
            RecordKind::Purge,
        ];
        for kind in kinds {
            assert!(
                (128..=255).contains(&kind.rmid()),
                "{kind} uses a custom rmid"
            );
            assert_eq!(RecordKind::from_rmid(kind.rmid()), Some(kind));
        }
        assert_eq!(
            RecordKind::from_rmid(0),
            None,
            "XLOG records are not the store's"
        );
    }

    #[test]
    fn records_decode_to_what_was_encoded() {
        let entry = LogRecord::<TestConfig>::Entry(blank(3, 7));
        let rec = entry.encode().unwrap();
        assert_eq!(rec.rmid, RM_RAFT_ENTRY);
        match LogRecord::<TestConfig>::decode(RecordKind::Entry, &rec.data).unwrap() {
            LogRecord::Entry(e) => assert_eq!(*e.get_log_id(), log_id(3, 7)),
            _ => panic!("decoded to another kind"),
        }

        let purge = LogRecord::<TestConfig>::Purge { upto: log_id(2, 5) }
            .encode()
            .unwrap();
        assert_eq!(purge.rmid, RM_RAFT_PURGE);
        match LogRecord::<TestConfig>::decode(RecordKind::Purge, &purge.data).unwrap() {
            LogRecord::Purge { upto } => assert_eq!(upto, log_id(2, 5)),
            _ => panic!("decoded to another kind"),
        }

        let truncate = LogRecord::<TestConfig>::Truncate { since: 9 }
            .encode()
            .unwrap();
        match LogRecord::<TestConfig>::decode(RecordKind::Truncate, &truncate.data).unwrap() {
            LogRecord::Truncate { since } => assert_eq!(since, 9),
            _ => panic!("decoded to another kind"),
        }
    }

    #[test]
    fn a_corrupt_payload_is_an_error() {
        assert!(LogRecord::<TestConfig>::decode(RecordKind::Vote, b"{not json").is_err());
        assert!(LogRecord::<TestConfig>::decode(RecordKind::Truncate, b"\"seven\"").is_err());
    }
}
