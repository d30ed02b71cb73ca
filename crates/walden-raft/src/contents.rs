//! [`LogContents`]: the raft log as the records so far leave it, kept as
//! an index (log id → LSN) plus the vote, the committed log id and the
//! purge point; the entries themselves stay in the WAL (and the
//! [`TailCache`]). The live write path and replay on open change it
//! through the same [`LogContents::apply`], so what recovery rebuilds is
//! what was there.

use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use openraft::{LogId, LogState, RaftTypeConfig, Vote};
use walden::Lsn;

use crate::cache::TailCache;
use crate::codec::{Change, Meta};
use crate::index::EntryIndex;

/// Why a record cannot be applied: applying it would break the log's
/// continuity. Checked before a record is logged, so a log written by the
/// store never fails this on replay.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Discontinuity {
    /// The entry would leave a hole after the last entry.
    #[error("log entry {index} would leave a hole after the last log index {last}")]
    Hole {
        /// Index of the entry.
        index: u64,
        /// Index of the last entry (or of the last purged one).
        last: u64,
    },
    /// An entry with another log id is already at the index: it should have
    /// been truncated first.
    #[error("log entry {new} conflicts with {existing}, which was not truncated first")]
    Conflict {
        /// The entry already in the log.
        existing: String,
        /// The entry being appended.
        new: String,
    },
}

/// Index, cache, vote, committed log id and purge point of a raft log.
pub(crate) struct LogContents<C: RaftTypeConfig> {
    pub(crate) index: EntryIndex<C::NodeId>,
    pub(crate) cache: TailCache,
    /// End of the last record the store inserted: how far a read of the
    /// newest entries must have the WAL written.
    pub(crate) end: Lsn,
    vote: Option<Vote<C::NodeId>>,
    committed: Option<LogId<C::NodeId>>,
    last_purged: Option<LogId<C::NodeId>>,
}

impl<C: RaftTypeConfig> LogContents<C> {
    /// Empty contents with a cache of `cache_bytes`.
    pub(crate) fn new(cache_bytes: usize) -> Self {
        LogContents {
            index: EntryIndex::default(),
            cache: TailCache::new(cache_bytes),
            end: Lsn::INVALID,
            vote: None,
            committed: None,
            last_purged: None,
        }
    }

    /// Checks that `change` can be applied; [`Self::apply_checked`] then
    /// cannot fail.
    ///
    /// An entry must follow the last one (or the purge point) without a
    /// hole. An entry identical to one present (same log id) is accepted and
    /// changes nothing. An entry at or below the purge point is accepted
    /// and dropped: the log has already moved past it (its effect is in the
    /// state machine's snapshot), so no entry ever sits at or below the
    /// purge point.
    pub(crate) fn check(&self, change: &Change<C::NodeId>) -> Result<(), Discontinuity> {
        let Change::Entry { log_id, .. } = change else {
            return Ok(());
        };
        let index = log_id.index;
        if self.is_purged(index) {
            return Ok(());
        }
        if let Some(existing) = self.index.log_id(index) {
            return if existing == *log_id {
                Ok(())
            } else {
                Err(Discontinuity::Conflict {
                    existing: existing.to_string(),
                    new: log_id.to_string(),
                })
            };
        }
        match self.last_index() {
            Some(last) if index != last + 1 => Err(Discontinuity::Hole { index, last }),
            _ => Ok(()),
        }
    }

    /// Applies a change that [`Self::check`] accepted; returns true if it
    /// added an entry to the index.
    pub(crate) fn apply_checked(&mut self, change: Change<C::NodeId>) -> bool {
        match change {
            Change::Entry { log_id, lsn } => {
                let index = log_id.index;
                let new = !self.is_purged(index) && self.index.lsn(index).is_none();
                if new {
                    self.index.push(&log_id, lsn);
                }
                return new;
            }
            Change::Meta(Meta::Vote(vote)) => self.vote = Some(vote),
            Change::Meta(Meta::Committed(committed)) => self.committed = committed,
            Change::Meta(Meta::Truncate { since }) => {
                self.index.truncate(since);
                self.cache.truncate(since);
            }
            Change::Meta(Meta::Purge { upto }) => {
                if self
                    .last_purged
                    .as_ref()
                    .is_none_or(|p| p.index < upto.index)
                {
                    self.index.purge(upto.index);
                    self.cache.purge(upto.index);
                    self.last_purged = Some(upto);
                }
            }
        }
        false
    }

    /// Checks and applies `change`.
    pub(crate) fn apply(&mut self, change: Change<C::NodeId>) -> Result<bool, Discontinuity> {
        self.check(&change)?;
        Ok(self.apply_checked(change))
    }

    /// The records that restate vote, committed log id and purge point:
    /// what a checkpoint past their original records must log again.
    pub(crate) fn state_records(&self) -> Vec<Meta<C::NodeId>> {
        let mut records = Vec::with_capacity(3);
        if let Some(upto) = &self.last_purged {
            records.push(Meta::Purge { upto: upto.clone() });
        }
        if let Some(vote) = &self.vote {
            records.push(Meta::Vote(vote.clone()));
        }
        if let Some(committed) = &self.committed {
            records.push(Meta::Committed(Some(committed.clone())));
        }
        records
    }

    /// Last purged and last log id, as openraft asks for them.
    pub(crate) fn log_state(&self) -> LogState<C> {
        let last = self.index.last_index().and_then(|i| self.index.log_id(i));
        LogState {
            last_purged_log_id: self.last_purged.clone(),
            last_log_id: last.or_else(|| self.last_purged.clone()),
        }
    }

    /// The saved vote.
    pub(crate) fn vote(&self) -> Option<Vote<C::NodeId>> {
        self.vote.clone()
    }

    /// The saved committed log id.
    pub(crate) fn committed(&self) -> Option<LogId<C::NodeId>> {
        self.committed.clone()
    }

    /// True if `index` is at or below the purge point.
    fn is_purged(&self, index: u64) -> bool {
        self.last_purged.as_ref().is_some_and(|p| index <= p.index)
    }

    /// Index of the last entry, or of the last purged one.
    pub(crate) fn last_index(&self) -> Option<u64> {
        self.index
            .last_index()
            .or_else(|| self.last_purged.as_ref().map(|p| p.index))
    }

    /// Heap bytes held by the index and the cache.
    pub(crate) fn footprint(&self) -> usize {
        self.index.footprint() + self.cache.footprint()
    }
}

/// The in-memory log, shared with [`crate::WaldenLogReader`]s.
pub(crate) type SharedContents<C> = Arc<RwLock<LogContents<C>>>;

/// Read access to shared contents (a panic elsewhere cannot leave them half
/// changed: every change is one `apply_checked`).
pub(crate) fn read<C: RaftTypeConfig>(
    contents: &SharedContents<C>,
) -> RwLockReadGuard<'_, LogContents<C>> {
    contents.read().unwrap_or_else(PoisonError::into_inner)
}

/// Write access to shared contents (see [`read`]).
pub(crate) fn write<C: RaftTypeConfig>(
    contents: &SharedContents<C>,
) -> RwLockWriteGuard<'_, LogContents<C>> {
    contents.write().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::{log_id, TestConfig};
    use proptest::prelude::*;

    type Contents = LogContents<TestConfig>;

    /// Everything the contents answer, in comparable form.
    #[derive(Debug, Clone, PartialEq)]
    struct Summary {
        entries: Vec<LogId<u64>>,
        vote: Option<Vote<u64>>,
        committed: Option<LogId<u64>>,
        state: LogState<TestConfig>,
    }

    fn summary(c: &Contents) -> Summary {
        let entries = match (c.index.first_index(), c.index.last_index()) {
            (Some(first), Some(last)) => (first..=last).filter_map(|i| c.index.log_id(i)).collect(),
            _ => Vec::new(),
        };
        Summary {
            entries,
            vote: c.vote(),
            committed: c.committed(),
            state: c.log_state(),
        }
    }

    fn at(term: u64, index: u64) -> Change<u64> {
        Change::Entry {
            log_id: log_id(term, index),
            lsn: Lsn(index),
        }
    }

    fn append(c: &mut Contents, term: u64, index: u64) -> Result<bool, Discontinuity> {
        c.apply(at(term, index))
    }

    #[test]
    fn entries_must_follow_without_a_hole() {
        let mut c = Contents::new(0);
        append(&mut c, 1, 0).unwrap();
        append(&mut c, 1, 1).unwrap();
        assert_eq!(
            append(&mut c, 1, 3),
            Err(Discontinuity::Hole { index: 3, last: 1 })
        );
        assert_eq!(c.log_state().last_log_id, Some(log_id(1, 1)));
    }

    #[test]
    fn a_conflicting_entry_needs_a_truncate_first() {
        let mut c = Contents::new(0);
        for i in 0..4 {
            assert_eq!(append(&mut c, 1, i), Ok(true));
        }
        assert!(matches!(
            append(&mut c, 2, 2),
            Err(Discontinuity::Conflict { .. })
        ));
        assert_eq!(append(&mut c, 1, 2), Ok(false), "identical: no change");
        assert_eq!(summary(&c).entries.len(), 4);
        c.apply(Change::Meta(Meta::Truncate { since: 2 })).unwrap();
        append(&mut c, 2, 2).unwrap();
        assert_eq!(c.log_state().last_log_id, Some(log_id(2, 2)));
        assert_eq!(summary(&c).entries.len(), 3);
    }

    #[test]
    fn purge_past_the_last_entry_moves_the_last_log_id() {
        let mut c = Contents::new(0);
        for i in 0..3 {
            append(&mut c, 1, i).unwrap();
        }
        c.apply(Change::Meta(Meta::Purge {
            upto: log_id(1, 20),
        }))
        .unwrap();
        let st = c.log_state();
        assert_eq!(
            (st.last_purged_log_id, st.last_log_id),
            (Some(log_id(1, 20)), Some(log_id(1, 20)))
        );
        assert_eq!(append(&mut c, 1, 20), Ok(false), "dropped: purged");
        assert_eq!(
            append(&mut c, 1, 23),
            Err(Discontinuity::Hole {
                index: 23,
                last: 20
            })
        );
        append(&mut c, 2, 21).unwrap();
        // An older purge changes nothing.
        c.apply(Change::Meta(Meta::Purge { upto: log_id(1, 5) }))
            .unwrap();
        assert_eq!(c.log_state().last_purged_log_id, Some(log_id(1, 20)));
        assert_eq!(summary(&c).entries, [log_id(2, 21)]);
    }

    /// One operation of a random but valid history.
    #[derive(Clone, Debug)]
    enum Op {
        Append(u8),
        Truncate(u8),
        Purge(u8),
        Vote(u8),
        Commit(u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (1..5u8).prop_map(Op::Append),
            1 => any::<u8>().prop_map(Op::Truncate),
            1 => any::<u8>().prop_map(Op::Purge),
            1 => any::<u8>().prop_map(Op::Vote),
            1 => any::<u8>().prop_map(Op::Commit),
        ]
    }

    /// Turns `ops` into valid changes, applying them to `c` as it goes;
    /// returns the log they make, each entry's LSN its position in it.
    fn play(c: &mut Contents, ops: &[Op]) -> Vec<Change<u64>> {
        let mut log = Vec::new();
        let mut term = 1;
        for op in ops {
            let st = c.log_state();
            let next = st.last_log_id.map_or(0, |l| l.index + 1);
            let first = st.last_purged_log_id.map_or(0, |p| p.index + 1);
            let meta = match *op {
                Op::Append(n) => {
                    for i in next..next + u64::from(n) {
                        let change = Change::Entry {
                            log_id: log_id(term, i),
                            lsn: Lsn(log.len() as u64),
                        };
                        c.apply(change.clone()).unwrap();
                        log.push(change);
                    }
                    continue;
                }
                Op::Truncate(k) => {
                    term += 1;
                    Meta::Truncate {
                        since: first + u64::from(k) % (next - first + 1),
                    }
                }
                Op::Purge(k) => Meta::Purge {
                    upto: log_id(term, first + u64::from(k) % 4),
                },
                Op::Vote(k) => Meta::Vote(Vote::new(term + u64::from(k % 2), u64::from(k % 3))),
                Op::Commit(k) => Meta::Committed(st.last_log_id.filter(|_| k % 2 == 0)),
            };
            c.apply(Change::Meta(meta.clone())).unwrap();
            log.push(Change::Meta(meta));
        }
        log
    }

    proptest! {
        /// The invariant purging relies on: replaying the log from the
        /// first live entry's record, followed by the state records,
        /// rebuilds the contents exactly, as it does from the start.
        #[test]
        fn replay_from_the_first_live_entry_plus_state_records_rebuilds(ops in proptest::collection::vec(op(), 0..40)) {
            let mut c = Contents::new(0);
            let log = play(&mut c, &ops);
            let want = summary(&c);

            let mut full = Contents::new(0);
            for change in log.iter().cloned() {
                full.apply(change).unwrap();
            }
            prop_assert_eq!(summary(&full), want.clone());

            let from = c.index.first_index().and_then(|i| c.index.lsn(i)).map_or(log.len(), |l| l.0 as usize);
            let mut tail = Contents::new(0);
            for change in log[from..].iter().cloned() {
                tail.apply(change).unwrap();
            }
            for meta in c.state_records() {
                tail.apply(Change::Meta(meta)).unwrap();
            }
            prop_assert_eq!(summary(&tail), want);
        }
    }
}
