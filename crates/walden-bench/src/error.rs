//! [`BenchError`]: why a suite run failed, with the context the command
//! line prints before the cause.

use std::path::PathBuf;

use walden::ConfigError;

use crate::fresh_wal::FreshWalError;
use crate::limits::LimitError;
use crate::logical::LogicalError;
use crate::peers::PeerError;
use crate::plot::PlotError;
use crate::raft::RaftBenchError;
use crate::splice::SpliceError;
use crate::switch::{SwitchCase, SwitchError};

/// Why a suite run failed. The message is the context; the cause is its
/// [`std::error::Error::source`] ([`chain`] prints both).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A configuration the suite would run is impossible.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// A slice on a fresh log failed.
    #[error(transparent)]
    FreshWal(#[from] FreshWalError),
    /// A probe of the machine's limits failed.
    #[error(transparent)]
    Limit(#[from] LimitError),
    /// A peer failed, or is not in this build.
    #[error(transparent)]
    Peer(#[from] PeerError),
    /// A Raft log of `walden bench raft` failed.
    #[error(transparent)]
    Raft(#[from] RaftBenchError),
    /// A splice experiment failed.
    #[error(transparent)]
    Splice(#[from] SpliceError),
    /// A chart could not be drawn.
    #[error(transparent)]
    Plot(#[from] PlotError),
    /// A case of `walden bench switch` failed.
    #[error("switch case {case:?} in {}", .dir.display())]
    Switch {
        /// The case.
        case: Box<SwitchCase>,
        /// Its log directory.
        dir: PathBuf,
        /// What failed.
        #[source]
        source: Box<SwitchError>,
    },
    /// A case of `walden bench handoff` failed.
    #[error("handoff with {threads} threads")]
    Handoff {
        /// The thread count.
        threads: usize,
        /// What failed.
        #[source]
        source: walden::Error,
    },
    /// A thread count of `walden bench logical-1mb` failed.
    #[error("logical-1mb with {threads} threads")]
    Logical {
        /// The thread count.
        threads: usize,
        /// What failed.
        #[source]
        source: LogicalError,
    },
    /// A call on a log failed.
    #[error("{what}")]
    Wal {
        /// What was being done.
        what: &'static str,
        /// The error.
        #[source]
        source: walden::Error,
    },
    /// Reading or writing a file or directory failed.
    #[error("{what}")]
    Io {
        /// What was being done, with the path.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
    /// Encoding or parsing JSON failed.
    #[error("{what}")]
    Json {
        /// What was being encoded or parsed.
        what: String,
        /// The error.
        #[source]
        source: serde_json::Error,
    },
    /// The progress bar's template is bad.
    #[error("progress bar template")]
    Progress(#[source] indicatif::style::TemplateError),
    /// Suites of `walden bench all` failed (each reported as it failed).
    #[error("suites failed: {}", .0.join(", "))]
    SuitesFailed(Vec<&'static str>),
}

impl BenchError {
    /// An I/O error while doing `what`.
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> BenchError {
        let what = what.into();
        move |source| BenchError::Io { what, source }
    }

    /// A JSON error while doing `what`.
    pub fn json(what: impl Into<String>) -> impl FnOnce(serde_json::Error) -> BenchError {
        let what = what.into();
        move |source| BenchError::Json { what, source }
    }
}

/// `error` and its causes, outermost first, joined by `: ` (as `anyhow`
/// prints an error with `{:#}`), each cause left out where the message
/// before it already says it: many errors name their cause in their own
/// message (`#[error("...: {source}")]`), which `{:#}` prints twice.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut previous = text.clone();
    let mut cause = error.source();
    while let Some(e) = cause {
        let message = e.to_string();
        if !previous.contains(&message) {
            text.push_str(": ");
            text.push_str(&message);
        }
        previous = message;
        cause = e.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chain_names_the_context_then_the_cause() {
        let e = BenchError::io("reading x.json")(std::io::Error::other("disk gone"));
        assert_eq!(chain(&e), "reading x.json: disk gone");
        let e = BenchError::from(ConfigError::InsertSlots(0));
        assert_eq!(chain(&e), ConfigError::InsertSlots(0).to_string());
    }

    /// An error whose message names its cause, as `#[error("...: {source}")]` does.
    #[derive(Debug)]
    struct Naming(std::io::Error);

    impl std::fmt::Display for Naming {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "opening the log: {}", self.0)
        }
    }

    impl std::error::Error for Naming {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_message_names_is_printed_once() {
        let e = Naming(std::io::Error::other("no such directory"));
        assert_eq!(chain(&e), "opening the log: no such directory");
        let e = BenchError::io("walden write")(std::io::Error::other(e));
        assert_eq!(
            chain(&e),
            "walden write: opening the log: no such directory"
        );
    }
}
