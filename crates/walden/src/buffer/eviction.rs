//! How much to write out when an inserter needs a ring slot whose page is
//! still unwritten.
//!
//! PostgreSQL master writes only up to the end of that one page
//! (`AdvanceXLInsertBuffer` → `XLogWrite` with `Write = OldPageRqstPtr`):
//! in steady state one 8 KiB write per page needed. With `open_datasync`
//! every write is durable, so a switch record that zero-fills the rest of a
//! large segment through a small ring crawls at one durable write per page
//! (seed 002: 64 s for one `pg_switch_wal()`). [`Eviction::Batch`] writes
//! every finished page up to a bound instead, in one contiguous run.

use crate::lsn::Lsn;
use crate::named_enum::named_enum;

/// How much to write when an inserter needs a slot whose page is unwritten.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Eviction {
    /// Write only what must be freed: up to the end of that one page
    /// (PostgreSQL master's `AdvanceXLInsertBuffer`).
    #[default]
    OnePage,
    /// Write every finished page past it too, up to
    /// [`crate::Config::eviction_chunk`] bytes beyond the page that must be
    /// freed, stopping early at the segment's end, so that the slots after
    /// it need no eviction of their own (seed 002's proposed fix). The
    /// ring's wrap point does not stop it: the writer writes across it in
    /// one vectored write.
    Batch,
}

impl Eviction {
    /// Every policy, for command-line help and benchmarks.
    pub const ALL: [Eviction; 2] = [Eviction::OnePage, Eviction::Batch];

    /// The policy's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Eviction::OnePage => "one-page",
            Eviction::Batch => "batch",
        }
    }

    /// Where an eviction should write up to.
    ///
    /// - `need`: end of the page whose slot must be freed;
    /// - `finished`: a point `>= need` below which every insertion has
    ///   finished (what waiting for insertions up to `need` returned);
    /// - `run_end`: where a write starting at the writer's position must
    ///   split anyway (the end of its segment);
    /// - `chunk`: most bytes to write beyond `need` ([`Eviction::Batch`]).
    ///
    /// The result is never above `finished` and, when `finished >= need`,
    /// never below `need`.
    pub fn target(self, need: Lsn, finished: Lsn, run_end: Lsn, chunk: u64) -> Lsn {
        let floor = need.min(finished);
        match self {
            Eviction::OnePage => floor,
            Eviction::Batch => {
                let bounded = finished.min(Lsn(need.0.saturating_add(chunk))).max(floor);
                // Stopping at the split point costs nothing (that page is
                // freed anyway) and makes the next eviction start a fresh
                // run there, so every batch is one write.
                if bounded > run_end && run_end >= need {
                    run_end
                } else {
                    bounded
                }
            }
        }
    }
}

named_enum!(Eviction, "eviction policy");

/// How far a [`Eviction::Batch`] eviction made by the switch record
/// writes (seed 002.6: "we even know for sure that we are going to fill a
/// lot more buffers, so no heuristic would be needed").
///
/// The switch record zero-fills the rest of its segment through the ring,
/// so every page it evicts is followed by more of its own: the
/// `eviction_chunk` bound, there so that one inserter does not write for
/// everyone, only splits its writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SwitchEviction {
    /// Everything the switch has filled, up to where the write must split
    /// anyway (the ring's wrap point or the segment's end): one write per
    /// pass over the ring.
    #[default]
    Whole,
    /// As every eviction: at most [`crate::Config::eviction_chunk`] bytes
    /// beyond the page to free (the behaviour before seed 002.6 was built).
    Chunked,
}

impl SwitchEviction {
    /// Every choice, for command-line help and benchmarks.
    pub const ALL: [SwitchEviction; 2] = [SwitchEviction::Whole, SwitchEviction::Chunked];

    /// The choice's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            SwitchEviction::Whole => "whole",
            SwitchEviction::Chunked => "chunked",
        }
    }

    /// The most bytes beyond the page to free that one of the switch's
    /// evictions writes, given the log's `eviction_chunk`.
    pub fn chunk(self, eviction_chunk: u64) -> u64 {
        match self {
            SwitchEviction::Whole => u64::MAX,
            SwitchEviction::Chunked => eviction_chunk,
        }
    }
}

named_enum!(SwitchEviction, "switch eviction");

#[cfg(test)]
mod tests {
    use super::*;

    const P: u64 = crate::lsn::PAGE_SIZE;

    /// `e.target` with `need`, `finished` and the result in pages, and
    /// `run_end` in bytes.
    fn target(e: Eviction, need: u64, finished: u64, run_end: u64, chunk: u64) -> u64 {
        let t = e.target(Lsn(need * P), Lsn(finished * P), Lsn(run_end), chunk);
        assert_eq!(t.0 % P, 0, "{t} is a page boundary");
        t.0 / P
    }

    #[test]
    fn one_page_writes_only_what_must_be_freed() {
        assert_eq!(target(Eviction::OnePage, 10, 40, 64 * P, 1 << 20), 10);
    }

    #[test]
    fn batch_writes_everything_finished_up_to_the_chunk() {
        // Bounded by what is finished ...
        assert_eq!(target(Eviction::Batch, 10, 40, 64 * P, 1 << 20), 40);
        // ... and by the chunk beyond the needed page.
        assert_eq!(target(Eviction::Batch, 10, 40, 64 * P, 4 * P), 14);
    }

    #[test]
    fn batch_stops_at_the_split_point_when_that_frees_the_page() {
        // The segment ends at page 16: the batch ends there, one run.
        assert_eq!(target(Eviction::Batch, 10, 25, 16 * P, 1 << 20), 16);
        // A split before the needed page's end cannot be honoured.
        assert_eq!(target(Eviction::Batch, 10, 25, 9 * P + 8, 1 << 20), 25);
    }

    #[test]
    fn never_beyond_what_is_finished() {
        for e in Eviction::ALL {
            assert_eq!(target(e, 10, 8, 64 * P, 1 << 20), 8, "{e}");
        }
    }

    #[test]
    fn a_whole_switch_eviction_stops_only_at_the_split_point() {
        let chunk = SwitchEviction::Whole.chunk(4 * P);
        // Everything finished, up to the ring's wrap at page 40 ...
        assert_eq!(target(Eviction::Batch, 10, 60, 40 * P, chunk), 40);
        // ... or to what is finished, if that comes first.
        assert_eq!(target(Eviction::Batch, 10, 30, 40 * P, chunk), 30);
        let chunked = SwitchEviction::Chunked.chunk(4 * P);
        assert_eq!(target(Eviction::Batch, 10, 60, 40 * P, chunked), 14);
        for s in SwitchEviction::ALL {
            assert_eq!(s.name().parse::<SwitchEviction>().unwrap(), s);
        }
    }

    #[test]
    fn names_round_trip() {
        for e in Eviction::ALL {
            assert_eq!(e.name().parse::<Eviction>().unwrap(), e);
        }
        assert_eq!("ONE_PAGE".parse::<Eviction>().unwrap(), Eviction::OnePage);
        let err = "all".parse::<Eviction>().unwrap_err().to_string();
        assert!(err.contains("\"all\"") && err.contains("batch"), "{err}");
    }
}
