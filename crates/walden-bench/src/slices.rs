//! [`SliceArgs`]: the timing and file arguments the Walden-side suites
//! share (each case runs in slices interleaved with the other cases').

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::BenchError;
use crate::fresh_wal::{LogSetup, SegmentState, StorageKind};
use crate::measure::SliceSettings;
use crate::run_output::progress;
use clap::Args;

/// How long each case runs, in how many interleaved slices, and where the
/// logs go.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SliceArgs {
    /// Milliseconds of one slice of one case.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..))]
    pub slice_ms: u64,
    /// Slices per case, interleaved with the other cases' so that a change
    /// in background load falls on all alike.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub slices: u32,
    /// Directory for the logs (each slice creates and removes its own);
    /// default: the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

impl SliceArgs {
    /// The time of one slice.
    pub fn slice(&self) -> Duration {
        Duration::from_millis(self.slice_ms)
    }

    /// Where the logs go.
    pub fn dir(&self) -> PathBuf {
        self.dir.clone().unwrap_or_else(std::env::temp_dir)
    }

    /// Where the logs go and how long each slice runs, for the workloads.
    pub fn settings(&self) -> SliceSettings {
        SliceSettings {
            dir: self.dir(),
            slice: self.slice(),
            slices: self.slices,
        }
    }

    /// A progress bar for `cases` cases of this many slices each.
    pub fn progress(&self, cases: usize) -> Result<indicatif::ProgressBar, BenchError> {
        progress(cases * self.slices as usize)
    }

    /// The JSON file, if asked for.
    pub fn json(&self) -> Option<&Path> {
        self.json.as_deref()
    }
}

/// `--segment-state`: the segment states each case is measured in.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SegmentStateArgs {
    /// Segment states, comma-separated: steady (after a warm-up and a
    /// checkpoint that recycled the log's segments: writes overwrite
    /// recycled files) and fresh (a new log per slice: every segment a new
    /// file).
    #[arg(long, value_delimiter = ',', default_value = "steady,fresh")]
    pub segment_state: Vec<SegmentState>,
}

impl SegmentStateArgs {
    /// The setups to run: files in each listed state.
    pub fn setups(&self) -> Vec<LogSetup> {
        LogSetup::combinations(&[StorageKind::Files], &self.segment_state)
    }
}

/// `--storage` and `--segment-state`, for `walden bench insert`.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct StorageArgs {
    /// Storages, comma-separated: files, or discard (every byte written
    /// is dropped: the insert path alone, without the kernel; it has no
    /// segment state, so it runs once, fresh).
    #[arg(long, value_delimiter = ',', default_value = "files,discard")]
    pub storage: Vec<StorageKind>,
    /// `--segment-state`.
    #[command(flatten)]
    pub states: SegmentStateArgs,
}

impl StorageArgs {
    /// The setups to run: every storage in every listed state (discard
    /// once).
    pub fn setups(&self) -> Vec<LogSetup> {
        LogSetup::combinations(&self.storage, &self.states.segment_state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::{defaults, parse_args};

    #[test]
    fn by_default_files_run_steady_and_fresh_and_discard_once() {
        let labels =
            |setups: Vec<LogSetup>| -> Vec<String> { setups.iter().map(LogSetup::label).collect() };
        let states: SegmentStateArgs = defaults();
        assert_eq!(labels(states.setups()), ["files, steady", "files, fresh"]);
        let storage: StorageArgs = defaults();
        assert_eq!(
            labels(storage.setups()),
            ["files, steady", "files, fresh", "discard"]
        );
        let one: StorageArgs =
            parse_args(&["--storage", "discard", "--segment-state", "steady"]).unwrap();
        assert_eq!(labels(one.setups()), ["discard"]);
        assert!(parse_args::<StorageArgs>(&["--storage", "tape"]).is_err());
        assert!(parse_args::<SegmentStateArgs>(&["--segment-state", "warm"]).is_err());
    }
}
