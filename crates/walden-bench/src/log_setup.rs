//! How a benchmark slice's log is set up ([`LogSetup`]): on which storage
//! ([`StorageKind`]) and in which segment state ([`SegmentState`]), as the
//! suites' `--storage` and `--segment-state` lists name them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The state of a log's segment files when a slice is measured.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SegmentState {
    /// A new log: every segment written is a new file.
    #[default]
    Fresh,
    /// After a warm-up and a checkpoint that recycled the log's segments:
    /// the writes overwrite recycled segment files.
    Steady,
}

/// Where a slice's log keeps its bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StorageKind {
    /// Files in the slice's directory.
    #[default]
    Files,
    /// [`crate::discard::DiscardStorage`]: every byte written is dropped, so only the
    /// insert path is measured.
    Discard,
}

/// A value of a command-line list that names none of the choices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} `{value}`: expected {choices}")]
pub struct UnknownChoice {
    /// What was being named.
    pub what: &'static str,
    /// The value given.
    pub value: String,
    /// The choices, as help text.
    pub choices: &'static str,
}

macro_rules! named {
    ($ty:ty, $what:literal, $choices:literal, $($variant:ident = $name:literal),+) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $(<$ty>::$variant => $name),+ })
            }
        }

        impl FromStr for $ty {
            type Err = UnknownChoice;

            fn from_str(s: &str) -> Result<Self, UnknownChoice> {
                match s {
                    $($name => Ok(<$ty>::$variant),)+
                    _ => Err(UnknownChoice { what: $what, value: s.to_owned(), choices: $choices }),
                }
            }
        }
    };
}

named!(
    SegmentState,
    "segment state",
    "fresh or steady",
    Fresh = "fresh",
    Steady = "steady"
);
named!(
    StorageKind,
    "storage",
    "files or discard",
    Files = "files",
    Discard = "discard"
);

/// How a slice's log is set up: its storage and segment state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct LogSetup {
    /// Where the log keeps its bytes.
    #[serde(default)]
    pub storage: StorageKind,
    /// The state of its segments when measured.
    #[serde(default)]
    pub segment_state: SegmentState,
}

impl LogSetup {
    /// Files in `segment_state`.
    pub fn files(segment_state: SegmentState) -> LogSetup {
        LogSetup {
            storage: StorageKind::Files,
            segment_state,
        }
    }

    /// Every storage with every segment state, but steady discarding
    /// storage: dropped bytes have no segment state to warm up, so it
    /// would measure the fresh case again.
    pub fn combinations(storages: &[StorageKind], states: &[SegmentState]) -> Vec<LogSetup> {
        let mut out = Vec::new();
        for &storage in storages {
            for &segment_state in states {
                let segment_state = match storage {
                    StorageKind::Files => segment_state,
                    StorageKind::Discard => SegmentState::Fresh,
                };
                let setup = LogSetup {
                    storage,
                    segment_state,
                };
                if !out.contains(&setup) {
                    out.push(setup);
                }
            }
        }
        out
    }

    /// A short label for tables: `files, steady` or `discard`.
    pub fn label(&self) -> String {
        match self.storage {
            StorageKind::Files => format!("files, {}", self.segment_state),
            StorageKind::Discard => "discard".to_owned(),
        }
    }
}

impl LogSetup {
    /// A longer label for chart legends, saying what the state means.
    pub fn legend(&self) -> &'static str {
        match (self.storage, self.segment_state) {
            (StorageKind::Files, SegmentState::Steady) => "steady (recycled segments)",
            (StorageKind::Files, SegmentState::Fresh) => "fresh (new segment files)",
            (StorageKind::Discard, _) => "discarding storage (no kernel)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setups_parse_and_discard_has_no_steady_state() {
        assert_eq!("steady".parse(), Ok(SegmentState::Steady));
        assert_eq!("discard".parse(), Ok(StorageKind::Discard));
        let err = "warm".parse::<SegmentState>().unwrap_err().to_string();
        assert_eq!(
            err,
            "unknown segment state `warm`: expected fresh or steady"
        );
        let all = LogSetup::combinations(
            &[StorageKind::Files, StorageKind::Discard],
            &[SegmentState::Steady, SegmentState::Fresh],
        );
        let labels: Vec<String> = all.iter().map(LogSetup::label).collect();
        assert_eq!(labels, ["files, steady", "files, fresh", "discard"]);
        let legends: Vec<&str> = all.iter().map(LogSetup::legend).collect();
        assert_eq!(
            legends,
            [
                "steady (recycled segments)",
                "fresh (new segment files)",
                "discarding storage (no kernel)"
            ]
        );
    }
}
