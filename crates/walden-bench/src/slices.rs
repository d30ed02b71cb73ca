//! [`SliceArgs`]: the timing and file arguments the Walden-side suites
//! share (each case runs in slices interleaved with the other cases').

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::defaults;
use crate::error::BenchError;
use crate::measure::SliceSettings;
use crate::run_output::progress;
use clap::Args;

/// How long each case runs, in how many interleaved slices, and where the
/// logs go.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct SliceArgs {
    /// Milliseconds of one slice of one case.
    #[arg(long, default_value_t = 500)]
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
    /// What `walden bench all --quick` gives the suites that run in
    /// slices: one slice of 150 ms per case.
    pub fn quick_plan() -> SliceArgs {
        SliceArgs {
            slice_ms: 150,
            slices: 1,
            ..defaults()
        }
    }

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
