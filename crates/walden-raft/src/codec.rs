//! The Walden records a [`crate::WaldenLogStore`] writes: one custom
//! resource manager id per kind of change, the payload in postcard's
//! compact binary form (serde) in the record's main data.

use std::fmt;

use openraft::{LogId, NodeId, RaftLogId, RaftTypeConfig, Vote};
use walden::{Lsn, Record};

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

/// A change to the raft log other than an entry append, as logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Meta<NID: NodeId> {
    /// The vote is now this.
    Vote(Vote<NID>),
    /// The committed log id is now this.
    Committed(Option<LogId<NID>>),
    /// Delete the entries at and after this index.
    Truncate {
        /// First index deleted.
        since: u64,
    },
    /// Delete the entries at and before this log id.
    Purge {
        /// Last log id deleted.
        upto: LogId<NID>,
    },
}

impl<NID: NodeId> Meta<NID> {
    /// The kind of this record.
    pub(crate) fn kind(&self) -> RecordKind {
        match self {
            Meta::Vote(_) => RecordKind::Vote,
            Meta::Committed(_) => RecordKind::Committed,
            Meta::Truncate { .. } => RecordKind::Truncate,
            Meta::Purge { .. } => RecordKind::Purge,
        }
    }

    /// The Walden record that carries this change.
    pub(crate) fn encode(&self) -> Result<Record<'static>, postcard::Error> {
        let data = match self {
            Meta::Vote(vote) => postcard::to_stdvec(vote),
            Meta::Committed(committed) => postcard::to_stdvec(committed),
            Meta::Truncate { since } => postcard::to_stdvec(since),
            Meta::Purge { upto } => postcard::to_stdvec(upto),
        }?;
        Ok(Record::new(self.kind().rmid(), 0, data))
    }
}

/// One change to the raft log as replay sees it: an entry is known by its
/// log id and the LSN of its record, never decoded whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Change<NID: NodeId> {
    /// An entry appended: its log id and the start of its record.
    Entry {
        /// The entry's log id.
        log_id: LogId<NID>,
        /// Where its record starts.
        lsn: Lsn,
    },
    /// Any other change.
    Meta(Meta<NID>),
}

impl<NID: NodeId> Change<NID> {
    /// The change a record of `kind` at `lsn` with main data `data` carries;
    /// for an entry only its log id prefix is decoded.
    pub(crate) fn decode(kind: RecordKind, lsn: Lsn, data: &[u8]) -> Result<Self, postcard::Error> {
        Ok(match kind {
            RecordKind::Entry => Change::Entry {
                log_id: postcard::take_from_bytes(data)?.0,
                lsn,
            },
            RecordKind::Vote => Change::Meta(Meta::Vote(postcard::from_bytes(data)?)),
            RecordKind::Committed => Change::Meta(Meta::Committed(postcard::from_bytes(data)?)),
            RecordKind::Truncate => Change::Meta(Meta::Truncate {
                since: postcard::from_bytes(data)?,
            }),
            RecordKind::Purge => Change::Meta(Meta::Purge {
                upto: postcard::from_bytes(data)?,
            }),
        })
    }
}

/// The main data of an entry's record: the entry's log id, then the entry
/// as its serde implementation writes it, both in postcard's compact
/// binary form. The log id prefix lets replay index the entry without
/// decoding its payload.
pub(crate) fn encode_entry<C: RaftTypeConfig>(
    entry: &C::Entry,
) -> Result<Vec<u8>, postcard::Error> {
    let prefix = postcard::to_stdvec(entry.get_log_id())?;
    postcard::to_extend(entry, prefix)
}

/// The entry in `data`, the main data [`encode_entry`] wrote.
pub(crate) fn decode_entry<C: RaftTypeConfig>(data: &[u8]) -> Result<C::Entry, postcard::Error> {
    let (_, entry) = postcard::take_from_bytes::<LogId<C::NodeId>>(data)?;
    postcard::from_bytes(entry)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{entry, log_id, TestConfig};

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
        let data = encode_entry::<TestConfig>(&entry(3, 7, 100)).unwrap();
        assert!(
            data.len() < 120,
            "a 100-byte request takes {} bytes, not JSON's",
            data.len()
        );
        let at = Lsn(0x1234);
        assert_eq!(
            Change::<u64>::decode(RecordKind::Entry, at, &data).unwrap(),
            Change::Entry {
                log_id: log_id(3, 7),
                lsn: at
            }
        );
        let back = decode_entry::<TestConfig>(&data).unwrap();
        assert_eq!(*back.get_log_id(), log_id(3, 7));
        assert_eq!(back.payload, entry(3, 7, 100).payload);

        let metas = [
            Meta::Vote(Vote::new(4, 2)),
            Meta::Committed(Some(log_id(2, 9))),
            Meta::Committed(None),
            Meta::Truncate { since: 9 },
            Meta::Purge { upto: log_id(2, 5) },
        ];
        for meta in metas {
            let rec = meta.encode().unwrap();
            let kind = RecordKind::from_rmid(rec.rmid).unwrap();
            assert_eq!(kind, meta.kind());
            assert_eq!(
                Change::<u64>::decode(kind, at, &rec.data).unwrap(),
                Change::Meta(meta)
            );
        }
    }

    #[test]
    fn a_corrupt_payload_is_an_error() {
        assert!(Change::<u64>::decode(RecordKind::Vote, Lsn(0), &[0xff]).is_err());
        assert!(Change::<u64>::decode(RecordKind::Entry, Lsn(0), &[]).is_err());
        let data = encode_entry::<TestConfig>(&entry(1, 1, 10)).unwrap();
        assert!(decode_entry::<TestConfig>(&data[..data.len() - 3]).is_err());
    }
}
