//! [`EntryIndex`]: where each live entry's record starts in the WAL, and
//! its log id, in a few bytes per entry.
//!
//! Entries are consecutive by index, so the LSNs sit in a ring indexed by
//! `index − first`: 8 bytes an entry. Log ids are not stored per entry: a
//! log id is the entry's index plus the leader that wrote it, and a leader
//! writes runs of consecutive entries, so the index keeps one
//! (first index, leader) pair per run.

use std::collections::VecDeque;
use std::mem::size_of;

use openraft::{CommittedLeaderId, LogId, NodeId};
use walden::Lsn;

/// The LSN and log id of every live entry.
#[derive(Clone, Debug)]
pub(crate) struct EntryIndex<NID: NodeId> {
    /// Index of the entry at `lsns[0]` (meaningless while empty).
    first: u64,
    /// Start of each entry's record, by `index − first`.
    lsns: VecDeque<Lsn>,
    /// The first index of each run of entries one leader wrote, ascending;
    /// the first run starts at or before `first`.
    leaders: VecDeque<(u64, CommittedLeaderId<NID>)>,
}

impl<NID: NodeId> Default for EntryIndex<NID> {
    fn default() -> Self {
        EntryIndex {
            first: 0,
            lsns: VecDeque::new(),
            leaders: VecDeque::new(),
        }
    }
}

impl<NID: NodeId> EntryIndex<NID> {
    /// Index of the first entry.
    pub(crate) fn first_index(&self) -> Option<u64> {
        (!self.lsns.is_empty()).then_some(self.first)
    }

    /// Index of the last entry.
    pub(crate) fn last_index(&self) -> Option<u64> {
        self.first_index().map(|f| f + self.lsns.len() as u64 - 1)
    }

    /// Index the next appended entry must have (when not empty).
    fn next_index(&self) -> u64 {
        self.first + self.lsns.len() as u64
    }

    /// Where entry `index`'s record starts.
    pub(crate) fn lsn(&self, index: u64) -> Option<Lsn> {
        let at = usize::try_from(index.checked_sub(self.first)?).ok()?;
        self.lsns.get(at).copied()
    }

    /// Log id of entry `index`.
    pub(crate) fn log_id(&self, index: u64) -> Option<LogId<NID>> {
        self.lsn(index)?;
        let run = self.leaders.partition_point(|(start, _)| *start <= index);
        let (_, leader) = self.leaders.get(run.checked_sub(1)?)?;
        Some(LogId::new(leader.clone(), index))
    }

    /// Appends entry `log_id` whose record starts at `lsn`; the caller has
    /// checked that it follows the last entry (any index if empty).
    pub(crate) fn push(&mut self, log_id: &LogId<NID>, lsn: Lsn) {
        if self.lsns.is_empty() {
            self.first = log_id.index;
            self.leaders.clear();
        }
        debug_assert_eq!(log_id.index, self.next_index());
        if self
            .leaders
            .back()
            .is_none_or(|(_, l)| *l != log_id.leader_id)
        {
            self.leaders
                .push_back((log_id.index, log_id.leader_id.clone()));
        }
        self.lsns.push_back(lsn);
    }

    /// Sets where entry `index`'s record starts (known only once a batch
    /// is inserted).
    pub(crate) fn set_lsn(&mut self, index: u64, lsn: Lsn) {
        let at = index
            .checked_sub(self.first)
            .and_then(|a| usize::try_from(a).ok());
        if let Some(slot) = at.and_then(|a| self.lsns.get_mut(a)) {
            *slot = lsn;
        }
    }

    /// Deletes the entries at and after `since`.
    pub(crate) fn truncate(&mut self, since: u64) {
        let keep = since.saturating_sub(self.first);
        self.lsns
            .truncate(usize::try_from(keep).unwrap_or(usize::MAX));
        let runs = self.leaders.partition_point(|(start, _)| *start < since);
        self.leaders.truncate(runs);
    }

    /// Deletes the entries at and before `upto`.
    pub(crate) fn purge(&mut self, upto: u64) {
        let Some(first) = self.first_index() else {
            return;
        };
        if upto < first {
            return;
        }
        let drop = (upto - first + 1).min(self.lsns.len() as u64);
        // `drop` is at most the ring's length, a usize.
        self.lsns.drain(..drop as usize);
        self.first = upto + 1;
        // Keep the run that covers the new first entry.
        let covering = self
            .leaders
            .partition_point(|(start, _)| *start <= self.first);
        self.leaders.drain(..covering.saturating_sub(1));
    }

    /// Heap bytes the index holds: its two rings at their capacity.
    pub(crate) fn footprint(&self) -> usize {
        self.lsns.capacity() * size_of::<Lsn>()
            + self.leaders.capacity() * size_of::<(u64, CommittedLeaderId<NID>)>()
    }

    /// Number of leader runs.
    #[cfg(test)]
    pub(crate) fn runs(&self) -> usize {
        self.leaders.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::log_id;

    fn index_of(ids: &[(u64, u64)]) -> EntryIndex<u64> {
        let mut ix = EntryIndex::default();
        for &(term, index) in ids {
            ix.push(&log_id(term, index), Lsn(index * 100));
        }
        ix
    }

    #[test]
    fn log_ids_come_from_leader_runs() {
        let ix = index_of(&[(1, 5), (1, 6), (2, 7), (2, 8), (4, 9)]);
        assert_eq!(ix.runs(), 3);
        let ids: Vec<_> = (4..=10).map(|i| ix.log_id(i)).collect();
        assert_eq!(
            ids,
            [
                None,
                Some(log_id(1, 5)),
                Some(log_id(1, 6)),
                Some(log_id(2, 7)),
                Some(log_id(2, 8)),
                Some(log_id(4, 9)),
                None
            ]
        );
        assert_eq!(ix.lsn(8), Some(Lsn(800)));
        assert_eq!((ix.first_index(), ix.last_index()), (Some(5), Some(9)));
    }

    #[test]
    fn truncate_and_purge_keep_the_runs_that_cover_live_entries() {
        let mut ix = index_of(&[(1, 5), (1, 6), (2, 7), (2, 8), (4, 9)]);
        ix.truncate(8);
        assert_eq!(ix.last_index(), Some(7));
        assert_eq!(ix.runs(), 2);
        ix.push(&log_id(5, 8), Lsn(1));
        assert_eq!(ix.log_id(8), Some(log_id(5, 8)));
        ix.purge(7);
        assert_eq!(ix.first_index(), Some(8));
        assert_eq!(ix.runs(), 1);
        assert_eq!(ix.log_id(8), Some(log_id(5, 8)));
        ix.purge(20);
        assert_eq!(ix.first_index(), None);
        ix.push(&log_id(6, 21), Lsn(2));
        assert_eq!(ix.log_id(21), Some(log_id(6, 21)));
        assert_eq!(ix.runs(), 1);
    }

    #[test]
    fn purge_inside_a_run_keeps_its_leader() {
        let mut ix = index_of(&[(1, 0), (1, 1), (1, 2), (3, 3)]);
        ix.purge(1);
        assert_eq!(ix.log_id(2), Some(log_id(1, 2)));
        assert_eq!(ix.log_id(3), Some(log_id(3, 3)));
        ix.set_lsn(3, Lsn(77));
        assert_eq!(ix.lsn(3), Some(Lsn(77)));
    }
}
