//! How much WAL below the redo point a checkpoint keeps on disk
//! (PostgreSQL: `wal_keep_size` in `KeepLogSeg`), by size and by age:
//!
//! - [`Config::wal_keep_size`] bytes are always kept;
//! - with [`Config::wal_keep_for`], a segment is kept that long after the
//!   checkpoint that left it behind (the redo point moved past it), but
//!   never more than [`Config::wal_keep_max_size`] bytes for this reason.
//!
//! Sizes count whole segments (rounded up). The segments below what is
//! kept go to [`crate::segment::plan_recycling`], which recycles them into
//! future names or removes them; kept segments are never recycled, so a
//! reader of retained WAL sees it unchanged.

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::config::Config;

/// The retention limits of one log and the age of its obsolete segments.
#[derive(Debug)]
pub(crate) struct Retention {
    keep_segments: u64,
    keep_for: Option<Duration>,
    keep_max_segments: Option<u64>,
    /// `(when, segno)`: every segment from `segno` up to the next entry's
    /// (or the redo point's) became obsolete at `when`; oldest first.
    left_behind: Mutex<VecDeque<(Instant, u64)>>,
}

impl Retention {
    /// The limits `config` asks for. Segments already below the redo
    /// point count as left behind now (their age is not on disk).
    pub(crate) fn new(config: &Config, now: Instant) -> Self {
        let segments = |bytes: u64| bytes.div_ceil(config.segment_size);
        Retention {
            keep_segments: segments(config.wal_keep_size),
            keep_for: config.wal_keep_for,
            keep_max_segments: config.wal_keep_max_size.map(segments),
            left_behind: Mutex::new(VecDeque::from([(now, 0)])),
        }
    }

    /// The oldest segment to keep once the redo point is in segment
    /// `redo_segno` at time `now`, where before it was in `old_redo_segno`:
    /// the segments from there up to `redo_segno` are left behind now.
    pub(crate) fn keep_from(&self, old_redo_segno: u64, redo_segno: u64, now: Instant) -> u64 {
        let mut left = self.left_behind.lock().unwrap_or_else(|e| e.into_inner());
        if old_redo_segno < redo_segno {
            left.push_back((now, old_redo_segno));
        }
        let by_size = redo_segno.saturating_sub(self.keep_segments);
        let Some(keep_for) = self.keep_for else {
            left.clear();
            return by_size;
        };
        while left
            .front()
            .is_some_and(|&(at, _)| now.saturating_duration_since(at) >= keep_for)
        {
            left.pop_front();
        }
        let by_age = left.front().map_or(redo_segno, |&(_, segno)| segno);
        let cap = self
            .keep_max_segments
            .map_or(0, |max| redo_segno.saturating_sub(max));
        by_age.max(cap).min(by_size)
    }

    /// True if a segment kept by age has aged out since `keep_from` was
    /// last asked: the background writer then retires segments without a
    /// checkpoint.
    pub(crate) fn aged_out(&self, now: Instant) -> bool {
        let (Some(keep_for), Ok(left)) = (self.keep_for, self.left_behind.try_lock()) else {
            return false;
        };
        left.front()
            .is_some_and(|&(at, _)| now.saturating_duration_since(at) >= keep_for)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEG: u64 = 1 << 20;

    fn retention(keep: u64, keep_for: Option<u64>, max: Option<u64>, now: Instant) -> Retention {
        let config = Config {
            segment_size: SEG,
            wal_keep_size: keep,
            wal_keep_for: keep_for.map(Duration::from_secs),
            wal_keep_max_size: max,
            ..Config::default()
        };
        Retention::new(&config, now)
    }

    #[test]
    fn keep_size_keeps_whole_segments_below_the_redo_point() {
        let t = Instant::now();
        assert_eq!(retention(0, None, None, t).keep_from(3, 10, t), 10);
        assert_eq!(retention(2 * SEG, None, None, t).keep_from(3, 10, t), 8);
        // A part of a segment keeps the whole segment.
        assert_eq!(retention(SEG + 1, None, None, t).keep_from(3, 10, t), 8);
        assert_eq!(retention(100 * SEG, None, None, t).keep_from(3, 10, t), 0);
    }

    #[test]
    fn age_keeps_what_a_checkpoint_left_behind_until_it_is_old() {
        let t0 = Instant::now();
        let r = retention(0, Some(60), None, t0);
        let s = Duration::from_secs;
        // Opened with segments below redo 5: they count as left behind at t0.
        assert_eq!(r.keep_from(5, 5, t0), 0);
        // At t0+30 the redo point moves 5 → 9: 5..9 left behind at t0+30.
        assert_eq!(r.keep_from(5, 9, t0 + s(30)), 0);
        assert!(!r.aged_out(t0 + s(59)));
        assert!(r.aged_out(t0 + s(60)));
        // At t0+60 what was there at open has aged out; 5..9 has not.
        assert_eq!(r.keep_from(9, 9, t0 + s(60)), 5);
        // At t0+90 5..9 has aged out too.
        assert_eq!(r.keep_from(9, 12, t0 + s(90)), 9);
        assert_eq!(r.keep_from(12, 12, t0 + s(150)), 12);
    }

    #[test]
    fn age_is_capped_by_the_max_size_and_floored_by_the_keep_size() {
        let t = Instant::now();
        let r = retention(SEG, Some(60), Some(3 * SEG), t);
        assert_eq!(r.keep_from(0, 10, t), 7);
        let r = retention(4 * SEG, Some(1), Some(4 * SEG), t);
        assert_eq!(r.keep_from(8, 10, t + Duration::from_secs(5)), 6);
    }
}
