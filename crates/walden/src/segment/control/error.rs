//! What can be wrong with a control file: a value no valid one holds, bytes
//! that do not decode, and failures to read or write it.
//!
//! PostgreSQL: the `ereport`s of `ReadControlFile`.

use std::path::PathBuf;

use super::{CONTROL_FILE_LEN, CONTROL_FILE_MAGIC, CONTROL_FILE_VERSION};
use crate::segment::error::IoFailure;

/// A field value that no valid control file holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field} {value} is invalid: {reason}")]
pub struct InvalidControlValue {
    /// The field's name.
    pub field: &'static str,
    /// The value found.
    pub value: u64,
    /// What a valid value looks like.
    pub reason: &'static str,
}

/// Why the bytes of a control file do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CorruptControlFile {
    /// Shorter than its layout.
    #[error("truncated: {len} bytes, expected {CONTROL_FILE_LEN}")]
    Truncated {
        /// Its length.
        len: u64,
    },
    /// Longer than its layout.
    #[error("too long: {len} bytes, expected {CONTROL_FILE_LEN}")]
    TooLong {
        /// Its length.
        len: u64,
    },
    /// Does not start with the control file magic, `WLDC`.
    #[error(
        "bad magic {found:02X?}, expected {CONTROL_FILE_MAGIC:02X?}: not a Walden control file"
    )]
    BadMagic {
        /// The first four bytes.
        found: [u8; 4],
    },
    /// A layout version this code does not read.
    #[error("unsupported version {found}, expected {CONTROL_FILE_VERSION}")]
    UnsupportedVersion {
        /// The version found.
        found: u32,
    },
    /// The CRC does not match the contents.
    #[error("CRC mismatch: stored {stored:#010X}, computed {computed:#010X}")]
    BadCrc {
        /// The CRC in the file.
        stored: u32,
        /// The CRC of the contents.
        computed: u32,
    },
    /// The CRC matches but a field holds an impossible value.
    #[error(transparent)]
    InvalidValue(#[from] InvalidControlValue),
}

/// Why the control file could not be read or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ControlFileError {
    /// There is no control file.
    #[error("control file \"{}\" does not exist", .path.display())]
    Missing {
        /// Where it was looked for.
        path: PathBuf,
    },
    /// A file-system operation failed.
    #[error(transparent)]
    Io(#[from] IoFailure),
    /// The file is not a valid control file.
    #[error("control file \"{}\" is corrupt: {problem}", .path.display())]
    Corrupt {
        /// The control file.
        path: PathBuf,
        /// What is wrong with it.
        problem: CorruptControlFile,
    },
    /// A control file with an impossible value was not written.
    #[error("refusing to write control file \"{}\": {value}", .path.display())]
    Refused {
        /// Where it was to be written.
        path: PathBuf,
        /// The impossible value.
        value: InvalidControlValue,
    },
}
