//! The machine's limits measured beside a commit run's slices
//! (`walden bench commit --limits-beside MS`).
//!
//! The limits suite measures each limit once, at the start of a run, and
//! on a shared host the disk drifts over the minutes that follow: in this
//! project's five full runs of 2026-12-06/07 the fastest durable 1 MiB
//! write measured 1.32–1.79 GB/s and the overwrite of a cached file
//! 7.1–9.1 GB/s, while Walden's own rates moved far less
//! (docs/performance.md). So a case's ratio to the disk also carried the
//! disk's drift between the two moments. Beside its slices, the limits
//! that match a case ([`Probe::matching`]) run right after each of its
//! steady slices, interleaved with them as the cases' slices are with each
//! other, and the summary reads the case against the mean of those runs.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::commit::CommitCase;
use crate::fresh_wal::{LogSetup, SegmentState};
use crate::limits::{self, LimitError, LimitResult, Probe};

/// The limits run beside one case's steady slices, run by run (each
/// probe's runs in the order they ran; [`LimitResult::means`] takes them
/// together).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CaseLimits {
    /// The case.
    pub case: CommitCase,
    /// Every run of every probe beside its slices.
    pub runs: Vec<LimitResult>,
}

/// Runs the limits matching each case after its steady slices and keeps
/// every run.
pub struct LimitsBeside {
    dir: PathBuf,
    duration: Duration,
    cases: Vec<CaseLimits>,
    failed: Option<LimitError>,
}

impl LimitsBeside {
    /// Probes with files under `dir` (the disk the logs use), each run
    /// for about `duration`.
    pub fn new(dir: PathBuf, duration: Duration) -> LimitsBeside {
        LimitsBeside {
            dir,
            duration,
            cases: Vec::new(),
            failed: None,
        }
    }

    /// The probes to run after a slice of `case` on `setup`: those
    /// matching the case after a steady slice on files (the state the
    /// probes' cached files stand for), none after any other.
    pub fn probes(case: CommitCase, setup: LogSetup) -> Vec<Probe> {
        if setup != LogSetup::files(SegmentState::Steady) {
            return Vec::new();
        }
        Probe::matching(case.payload, case.sync_method.durable(), case.threads)
    }

    /// After a slice of `case` on `setup`: runs [`LimitsBeside::probes`],
    /// telling `each` the label of each before it runs. Once a probe has
    /// failed, none runs again; [`LimitsBeside::finish`] returns the
    /// failure.
    pub fn after_slice(&mut self, case: CommitCase, setup: LogSetup, mut each: impl FnMut(&str)) {
        for probe in LimitsBeside::probes(case, setup) {
            if self.failed.is_some() {
                return;
            }
            each(&probe.label());
            match limits::measure(probe, &self.dir, self.duration) {
                Ok(run) => self.runs_of(case).push(run),
                Err(e) => self.failed = Some(e),
            }
        }
    }

    /// The runs kept for `case`, a new entry for a case not seen yet.
    fn runs_of(&mut self, case: CommitCase) -> &mut Vec<LimitResult> {
        let at = match self.cases.iter().position(|c| c.case == case) {
            Some(at) => at,
            None => {
                self.cases.push(CaseLimits {
                    case,
                    runs: Vec::new(),
                });
                self.cases.len() - 1
            }
        };
        &mut self.cases[at].runs
    }

    /// Every case's runs, cases in the order of their first; the first
    /// probe's failure, if one failed.
    pub fn finish(self) -> Result<Vec<CaseLimits>, LimitError> {
        match self.failed {
            Some(e) => Err(e),
            None => Ok(self.cases),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commit::{self, CommitRecord};
    use crate::fresh_wal::StorageKind;
    use crate::limits::BLOCK;
    use crate::measure::SliceSettings;
    use walden::{Config, SyncMethod};

    #[test]
    fn only_a_steady_slice_on_files_has_limits_beside_it() {
        let case = CommitCase {
            sync_method: SyncMethod::Fdatasync,
            payload: BLOCK,
            threads: 2,
        };
        let steady = LimitsBeside::probes(case, LogSetup::files(SegmentState::Steady));
        assert_eq!(steady, Probe::matching(BLOCK, true, 2));
        assert!(!steady.is_empty());
        assert!(LimitsBeside::probes(case, LogSetup::files(SegmentState::Fresh)).is_empty());
        let discard = LogSetup {
            storage: StorageKind::Discard,
            segment_state: SegmentState::Fresh,
        };
        assert!(LimitsBeside::probes(case, discard).is_empty());
    }

    #[test]
    fn every_durable_method_is_read_against_the_durable_limits() {
        let steady = LogSetup::files(SegmentState::Steady);
        for sync_method in SyncMethod::ALL {
            let case = CommitCase {
                sync_method,
                payload: BLOCK,
                threads: 1,
            };
            let durable = sync_method != SyncMethod::None;
            // `open_datasync` writes are durable without a sync call: its
            // case is read against the durable writes, not the overwrite
            // of a cached file.
            assert_eq!(
                LimitsBeside::probes(case, steady),
                Probe::matching(BLOCK, durable, 1),
                "{sync_method:?}"
            );
        }
        assert_ne!(
            Probe::matching(BLOCK, true, 1),
            Probe::matching(BLOCK, false, 1)
        );
    }

    #[test]
    fn each_steady_slice_of_a_1_mib_case_gets_its_matching_limits_run_by_run() {
        let dir = tempfile::tempdir().unwrap();
        let cases = commit::cases(&[SyncMethod::Fdatasync], &[100, BLOCK], &[1]);
        let setups = [
            LogSetup::files(SegmentState::Steady),
            LogSetup::files(SegmentState::Fresh),
        ];
        let settings = SliceSettings {
            dir: dir.path().to_path_buf(),
            slice: Duration::from_millis(30),
            slices: 2,
        };
        let config = Config {
            segment_size: 1 << 20,
            buffers: 1 << 20,
            ..Config::default()
        };
        let mut beside = LimitsBeside::new(dir.path().to_path_buf(), Duration::from_millis(20));
        let mut labels = Vec::new();
        commit::run(
            &cases,
            &setups,
            CommitRecord::LogicalMessage,
            &config,
            &settings,
            |case, setup| beside.after_slice(case, setup, |l| labels.push(l.to_owned())),
        )
        .unwrap();
        let cases = beside.finish().unwrap();
        let matching = Probe::matching(BLOCK, true, 1);
        // Two steady slices of the one 1 MiB case, each followed by its
        // probes in order.
        let expected: Vec<String> = [&matching, &matching]
            .into_iter()
            .flatten()
            .map(Probe::label)
            .collect();
        assert_eq!(labels, expected);
        assert_eq!(cases.len(), 1, "{cases:?}");
        assert_eq!(cases[0].case.payload, BLOCK);
        let probes: Vec<Probe> = cases[0].runs.iter().map(|l| l.probe).collect();
        let twice: Vec<Probe> = [&matching, &matching]
            .into_iter()
            .flatten()
            .copied()
            .collect();
        assert_eq!(probes, twice);
        assert!(cases[0]
            .runs
            .iter()
            .all(|l| l.unsupported.is_some() || l.ops_per_sec > 0.0));
    }

    #[test]
    fn a_failed_probe_stops_the_probes_and_is_returned() {
        let case = CommitCase {
            sync_method: SyncMethod::None,
            payload: BLOCK,
            threads: 1,
        };
        let mut beside = LimitsBeside::new(
            PathBuf::from("/nonexistent-walden-dir"),
            Duration::from_millis(10),
        );
        let mut ran = 0;
        let steady = LogSetup::files(SegmentState::Steady);
        beside.after_slice(case, steady, |_| ran += 1);
        beside.after_slice(case, steady, |_| ran += 1);
        assert_eq!(ran, 1);
        let err = beside.finish().unwrap_err();
        assert!(err.to_string().contains("/nonexistent-walden-dir"), "{err}");
    }
}
