//! [`LogContents`]: the raft log as the records so far leave it, kept in
//! memory. The live write path and replay on open change it through the
//! same [`LogContents::apply`], so what recovery rebuilds is what was there.

use std::collections::BTreeMap;
use std::ops::RangeBounds;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use openraft::{LogId, LogState, RaftLogId, RaftTypeConfig, Vote};

use crate::codec::LogRecord;

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

/// Entries, vote, committed log id and purge point of a raft log.
pub(crate) struct LogContents<C: RaftTypeConfig> {
    entries: BTreeMap<u64, C::Entry>,
    vote: Option<Vote<C::NodeId>>,
    committed: Option<LogId<C::NodeId>>,
    last_purged: Option<LogId<C::NodeId>>,
}

impl<C: RaftTypeConfig> Default for LogContents<C> {
    fn default() -> Self {
        LogContents {
            entries: BTreeMap::new(),
            vote: None,
            committed: None,
            last_purged: None,
        }
    }
}

impl<C: RaftTypeConfig> LogContents<C>
where
    C::Entry: Clone,
{
    /// Checks that `record` can be applied; [`Self::apply_checked`] then
    /// cannot fail.
    ///
    /// An entry must follow the last one (or the purge point) without a
    /// hole. An entry identical to one present (same log id) is accepted and
    /// changes nothing, which is what makes replaying a re-logged copy of the
    /// contents, or any prefix of it, a no-op. An entry at or below the purge
    /// point is accepted and dropped: the log has already moved past it (its
    /// effect is in the state machine's snapshot), so no entry ever sits at
    /// or below the purge point.
    pub(crate) fn check(&self, record: &LogRecord<C>) -> Result<(), Discontinuity> {
        let LogRecord::Entry(entry) = record else {
            return Ok(());
        };
        let log_id = entry.get_log_id();
        let index = log_id.index;
        if self.is_purged(index) {
            return Ok(());
        }
        if let Some(existing) = self.entries.get(&index) {
            let existing = existing.get_log_id();
            return if existing == log_id {
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

    /// Applies a record that [`Self::check`] accepted.
    pub(crate) fn apply_checked(&mut self, record: LogRecord<C>) {
        match record {
            LogRecord::Entry(entry) => {
                let index = entry.get_log_id().index;
                if !self.is_purged(index) {
                    self.entries.entry(index).or_insert(entry);
                }
            }
            LogRecord::Vote(vote) => self.vote = Some(vote),
            LogRecord::Committed(committed) => self.committed = committed,
            LogRecord::Truncate { since } => {
                self.entries.split_off(&since);
            }
            LogRecord::Purge { upto } => {
                if self
                    .last_purged
                    .as_ref()
                    .is_none_or(|p| p.index < upto.index)
                {
                    self.entries = self.entries.split_off(&(upto.index + 1));
                    self.last_purged = Some(upto);
                }
            }
        }
    }

    /// Checks and applies `record`.
    pub(crate) fn apply(&mut self, record: LogRecord<C>) -> Result<(), Discontinuity> {
        self.check(&record)?;
        self.apply_checked(record);
        Ok(())
    }

    /// The records that rebuild these contents: applied to empty contents
    /// they give these contents; applied to these contents, they, and every
    /// prefix of them, change nothing.
    pub(crate) fn rebuild_records(&self) -> Vec<LogRecord<C>> {
        let mut records = Vec::with_capacity(self.entries.len() + 3);
        if let Some(upto) = &self.last_purged {
            records.push(LogRecord::Purge { upto: upto.clone() });
        }
        if let Some(vote) = &self.vote {
            records.push(LogRecord::Vote(vote.clone()));
        }
        if let Some(committed) = &self.committed {
            records.push(LogRecord::Committed(Some(committed.clone())));
        }
        records.extend(self.entries.values().cloned().map(LogRecord::Entry));
        records
    }

    /// Last purged and last log id, as openraft asks for them.
    pub(crate) fn log_state(&self) -> LogState<C> {
        let last = self
            .entries
            .values()
            .next_back()
            .map(|e| e.get_log_id().clone());
        LogState {
            last_purged_log_id: self.last_purged.clone(),
            last_log_id: last.or_else(|| self.last_purged.clone()),
        }
    }

    /// The entries present in `range`, in index order.
    pub(crate) fn entries<R: RangeBounds<u64>>(&self, range: R) -> Vec<C::Entry> {
        self.entries.range(range).map(|(_, e)| e.clone()).collect()
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
    fn last_index(&self) -> Option<u64> {
        self.entries
            .keys()
            .next_back()
            .copied()
            .or_else(|| self.last_purged.as_ref().map(|p| p.index))
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
    use crate::test_support::{blank, log_id, TestConfig};
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
        let entries = c.entries(..).iter().map(|e| *e.get_log_id()).collect();
        Summary {
            entries,
            vote: c.vote(),
            committed: c.committed(),
            state: c.log_state(),
        }
    }

    fn append(c: &mut Contents, term: u64, index: u64) -> Result<(), Discontinuity> {
        c.apply(LogRecord::Entry(blank(term, index)))
    }

    #[test]
    fn entries_must_follow_without_a_hole() {
        let mut c = Contents::default();
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
        let mut c = Contents::default();
        for i in 0..4 {
            append(&mut c, 1, i).unwrap();
        }
        assert!(matches!(
            append(&mut c, 2, 2),
            Err(Discontinuity::Conflict { .. })
        ));
        append(&mut c, 1, 2).unwrap();
        assert_eq!(
            c.entries(..).len(),
            4,
            "re-appending an identical entry keeps the ones after it"
        );
        c.apply(LogRecord::Truncate { since: 2 }).unwrap();
        append(&mut c, 2, 2).unwrap();
        assert_eq!(c.log_state().last_log_id, Some(log_id(2, 2)));
        assert_eq!(c.entries(..).len(), 3);
    }

    #[test]
    fn purge_past_the_last_entry_moves_the_last_log_id() {
        let mut c = Contents::default();
        for i in 0..3 {
            append(&mut c, 1, i).unwrap();
        }
        c.apply(LogRecord::Purge {
            upto: log_id(1, 20),
        })
        .unwrap();
        let st = c.log_state();
        assert_eq!(
            (st.last_purged_log_id, st.last_log_id),
            (Some(log_id(1, 20)), Some(log_id(1, 20)))
        );
        assert!(c.entries(..).is_empty());
        append(&mut c, 1, 20).unwrap();
        assert!(
            c.entries(..).is_empty(),
            "an entry at the purge point is dropped"
        );
        assert_eq!(
            append(&mut c, 1, 23),
            Err(Discontinuity::Hole {
                index: 23,
                last: 20
            })
        );
        append(&mut c, 2, 21).unwrap();
        // An older purge changes nothing.
        c.apply(LogRecord::Purge { upto: log_id(1, 5) }).unwrap();
        assert_eq!(c.log_state().last_purged_log_id, Some(log_id(1, 20)));
        assert_eq!(c.entries(..).len(), 1);
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

    /// Turns `ops` into valid records, applying them to `c` as it goes.
    fn play(c: &mut Contents, ops: &[Op]) {
        let mut term = 1;
        for op in ops {
            let st = c.log_state();
            let next = st.last_log_id.map_or(0, |l| l.index + 1);
            let first = st.last_purged_log_id.map_or(0, |p| p.index + 1);
            let record = match *op {
                Op::Append(n) => {
                    for i in next..next + u64::from(n) {
                        append(c, term, i).unwrap();
                    }
                    continue;
                }
                Op::Truncate(k) => {
                    term += 1;
                    LogRecord::Truncate {
                        since: first + u64::from(k) % (next - first + 1),
                    }
                }
                Op::Purge(k) => LogRecord::Purge {
                    upto: log_id(term, first + u64::from(k) % 4),
                },
                Op::Vote(k) => {
                    LogRecord::Vote(Vote::new(term + u64::from(k % 2), u64::from(k % 3)))
                }
                Op::Commit(k) => LogRecord::Committed(st.last_log_id.filter(|_| k % 2 == 0)),
            };
            c.apply(record).unwrap();
        }
    }

    proptest! {
        /// The invariant compaction relies on: the rebuild records recreate
        /// the contents from nothing, and replaying them, or any prefix of
        /// them (a compaction cut short by a crash), over the contents
        /// changes nothing.
        #[test]
        fn rebuild_records_recreate_and_replay_as_no_ops(ops in proptest::collection::vec(op(), 0..40)) {
            let mut c = Contents::default();
            play(&mut c, &ops);
            let want = summary(&c);

            let mut fresh = Contents::default();
            for r in c.rebuild_records() {
                fresh.apply(r).unwrap();
            }
            prop_assert_eq!(summary(&fresh), want.clone());

            let records = c.rebuild_records();
            for cut in 0..=records.len() {
                let mut again = Contents::default();
                play(&mut again, &ops);
                for r in c.rebuild_records().into_iter().take(cut) {
                    again.apply(r).unwrap();
                }
                prop_assert_eq!(summary(&again), want.clone());
            }
        }
    }
}
