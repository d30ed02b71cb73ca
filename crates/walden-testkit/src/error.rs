//! Why a harness step failed.

use std::path::PathBuf;
use std::process::ExitStatus;

/// A failure of the test harness itself (not of the code under test).
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    /// A program could not be started.
    #[error("could not run {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `scripts/pg-wal-gen` exited unsuccessfully.
    #[error("{script} {out} failed ({status}); its stderr:\n{stderr}")]
    Generator {
        /// The script.
        script: PathBuf,
        /// The output directory it was given.
        out: PathBuf,
        /// Its exit status.
        status: ExitStatus,
        /// Everything it wrote to stderr.
        stderr: String,
    },
    /// A PostgreSQL program the server helper ran failed.
    #[error("{program} failed ({status}): {output}")]
    Program {
        /// The program.
        program: String,
        /// Its exit status.
        status: std::process::ExitStatus,
        /// Its stdout and stderr.
        output: String,
    },
    /// A file or directory operation failed.
    #[error("{op} {path}: {source}")]
    Io {
        /// What was being done, e.g. "could not read".
        op: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A line of `facts.env` is not `KEY=VALUE`.
    #[error("line {line} of {path} is not KEY=VALUE: {text:?}")]
    BadFactsLine {
        /// The facts file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// A fact the caller needs is not in `facts.env`.
    #[error("fact {key} is missing from facts.env")]
    MissingFact {
        /// The key.
        key: String,
    },
    /// A fact's value does not have the expected form.
    #[error("fact {key}={value:?} is not {expected}")]
    BadFact {
        /// The key.
        key: String,
        /// Its value.
        value: String,
        /// What it should have been, e.g. "an LSN".
        expected: &'static str,
    },
}
