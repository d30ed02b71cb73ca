//! Which old segments to recycle into future names after a checkpoint, and
//! which to remove: a pure policy, applied by
//! [`SegmentFiles::apply`](super::SegmentFiles::apply).
//!
//! A recycled file keeps its old bytes until they are written over, and a
//! torn write may expose some of them after a crash. They must never read
//! as records of the new name: the page addresses, prev-links and self-LSNs
//! of the PostgreSQL and self-LSN formats name the old position, but the
//! compact format's 16-bit segment id repeats every 65,536 segments (seed
//! 001's condition: "WAL files are either recycled in such a way that the
//! xl_walid of the previous use differs … or we zero-out"). So a segment is
//! never renamed to a name whose id is its own ([`may_recycle`]): it is
//! given another free name, or removed (a new file is zero-filled).

use crate::format::compact::segment_wal_id;

/// Whether segment `old` may be renamed to `new`: false when their
/// 16-bit ids (`CompactWalId`'s `xl_walid`) are equal, in any format.
pub fn may_recycle(old: u64, new: u64) -> bool {
    segment_wal_id(old) != segment_wal_id(new)
}

/// What to do with the segments a checkpoint made obsolete.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecyclePlan {
    /// `(old, new)`: rename segment `old` to the future segment `new`, in
    /// ascending order of `old`; never two segments with the same id
    /// ([`may_recycle`]).
    pub recycle: Vec<(u64, u64)>,
    /// Segments to remove, ascending.
    pub remove: Vec<u64>,
}

impl RecyclePlan {
    /// True if the plan changes nothing.
    pub fn is_empty(&self) -> bool {
        self.recycle.is_empty() && self.remove.is_empty()
    }
}

/// Plans what to do with obsolete segments after a checkpoint.
///
/// - `present`: the segment numbers in the directory (any order);
/// - `redo_segno`: the segment of the checkpoint's redo LSN: every segment
///   below it is obsolete (recovery never reads it), no other is touched;
/// - `current_segno`: the segment holding the insert position; the future
///   names are the `keep_ready` segments after it (after `redo_segno` if that
///   is higher);
/// - `keep_ready`: how many future segments should exist, ready to write.
///
/// Obsolete segments, oldest first, are renamed to the missing future names,
/// lowest first, skipping a name whose id is the old segment's
/// ([`may_recycle`]); the obsolete segments left over are removed. Future
/// names that already exist and segments beyond the future window are left
/// alone.
///
/// PostgreSQL: `RemoveOldXlogFiles` with `XLOGfileslop`'s limit on recycling.
///
/// ```
/// use walden::internals::{plan_recycling, RecyclePlan};
/// // Segments 1..=6 exist, the redo point is in 4, inserts are in 5;
/// // keep 3 ready: 6 exists, so 1 becomes 7 and 2 becomes 8; 3 goes.
/// let plan = plan_recycling(&[1, 2, 3, 4, 5, 6], 4, 5, 3);
/// assert_eq!(plan, RecyclePlan { recycle: vec![(1, 7), (2, 8)], remove: vec![3] });
/// ```
pub fn plan_recycling(
    present: &[u64],
    redo_segno: u64,
    current_segno: u64,
    keep_ready: u64,
) -> RecyclePlan {
    let mut present = present.to_vec();
    present.sort_unstable();
    present.dedup();
    let newest_in_use = current_segno.max(redo_segno);
    let mut free_names: Vec<u64> = (1..=keep_ready)
        .map_while(|ahead| newest_in_use.checked_add(ahead))
        .filter(|segno| present.binary_search(segno).is_err())
        .collect();
    let mut plan = RecyclePlan::default();
    for &old in present.iter().take_while(|&&segno| segno < redo_segno) {
        match free_names.iter().position(|&new| may_recycle(old, new)) {
            Some(i) => plan.recycle.push((old, free_names.remove(i))),
            None => plan.remove.push(old),
        }
    }
    plan
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn nothing_obsolete_means_nothing_to_do() {
        assert!(plan_recycling(&[4, 5], 4, 5, 8).is_empty());
        assert!(plan_recycling(&[], 4, 5, 8).is_empty());
    }

    #[test]
    fn keep_ready_zero_removes_every_obsolete_segment() {
        let plan = plan_recycling(&[3, 1, 2, 7], 3, 7, 0);
        assert_eq!(plan.recycle, vec![]);
        assert_eq!(plan.remove, vec![1, 2]);
    }

    #[test]
    fn existing_future_segments_are_not_replaced() {
        // 8 and 10 are ready already; 9 and 11 are missing.
        let plan = plan_recycling(&[0, 1, 2, 7, 8, 10], 7, 7, 4);
        assert_eq!(plan.recycle, vec![(0, 9), (1, 11)]);
        assert_eq!(plan.remove, vec![2]);
    }

    #[test]
    fn future_window_starts_after_redo_when_current_lags() {
        let plan = plan_recycling(&[1, 2], 5, 3, 2);
        assert_eq!(plan.recycle, vec![(1, 6), (2, 7)]);
    }

    #[test]
    fn a_segment_is_never_renamed_to_a_name_with_its_own_id() {
        let wrap = 1u64 << 16;
        // Segment 1 would take 1 + 2^16, the lowest free name: its id is 1's.
        let plan = plan_recycling(&[1, 2], 3, wrap, 2);
        assert_eq!(plan.recycle, vec![(1, wrap + 2), (2, wrap + 1)]);
        assert!(plan.recycle.iter().all(|&(old, new)| may_recycle(old, new)));
        // With only the aliasing name free, the segment is removed instead.
        let plan = plan_recycling(&[1], 3, wrap, 1);
        assert_eq!(
            plan,
            RecyclePlan {
                recycle: vec![],
                remove: vec![1]
            }
        );
    }

    #[test]
    fn window_at_the_end_of_the_segment_space_does_not_overflow() {
        let plan = plan_recycling(&[1, u64::MAX - 1], u64::MAX - 1, u64::MAX - 1, 5);
        assert_eq!(plan.recycle, vec![(1, u64::MAX)]);
        assert!(plan.remove.is_empty());
    }

    proptest! {
        #[test]
        fn plan_is_consistent(
            present in proptest::collection::vec(0u64..64, 0..40),
            redo in 0u64..64,
            ahead in 0u64..8,
            keep_ready in 0u64..16,
        ) {
            let current = redo + ahead;
            let plan = plan_recycling(&present, redo, current, keep_ready);
            let present: BTreeSet<u64> = present.into_iter().collect();
            let obsolete: Vec<u64> = present.iter().copied().filter(|&s| s < redo).collect();

            // Every obsolete segment is recycled or removed exactly once, oldest first.
            let mut handled: Vec<u64> = plan.recycle.iter().map(|&(old, _)| old).collect();
            handled.extend(&plan.remove);
            prop_assert_eq!(&handled, &obsolete);

            // Targets are distinct, ascending, free, and inside the window.
            let targets: Vec<u64> = plan.recycle.iter().map(|&(_, new)| new).collect();
            prop_assert!(targets.windows(2).all(|w| w[0] < w[1]));
            for &new in &targets {
                prop_assert!(!present.contains(&new));
                prop_assert!(new > current && new <= current + keep_ready);
            }

            // Recycling fills the window as far as obsolete segments allow,
            // and removes only when the window is full.
            let ready_before = (current + 1..=current + keep_ready)
                .filter(|s| present.contains(s))
                .count() as u64;
            let missing = keep_ready - ready_before;
            prop_assert_eq!(targets.len() as u64, missing.min(obsolete.len() as u64));
            if !plan.remove.is_empty() {
                prop_assert_eq!(targets.len() as u64, missing);
            }
            // The lowest missing names are filled first.
            let lowest_free: Vec<u64> = (current + 1..=current + keep_ready)
                .filter(|s| !present.contains(s))
                .take(targets.len())
                .collect();
            prop_assert_eq!(targets, lowest_free);
        }
    }
}
