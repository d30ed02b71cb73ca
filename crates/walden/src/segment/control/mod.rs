//! The control file: what a WAL directory is and where recovery starts.
//!
//! PostgreSQL keeps this in `global/pg_control`; Walden's control file has
//! its own, smaller format, described at [`ControlFile::encode`]. It fits in
//! one 512-byte sector, so a single write of it is not torn on devices with
//! atomic sector writes, and it is replaced atomically in any case
//! ([`ControlFile::write`]).
//!
//! Parts: `layout`, the bytes (field ranges, encoding, decoding); `error`,
//! what can be wrong with a control file.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::durable::install_durably;
use super::error::{failed, FileOp, IoFailure};
use super::storage::{OpenOptions, Storage};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, TimeLineId};

mod error;
mod layout;

pub use error::{ControlFileError, CorruptControlFile, InvalidControlValue};

/// Name of the control file in the WAL directory.
pub const CONTROL_FILE_NAME: &str = "walden.control";
/// Name the control file is written under before it replaces the old one.
pub const CONTROL_FILE_TEMP_NAME: &str = "walden.control.tmp";
/// The first four bytes of every control file.
pub const CONTROL_FILE_MAGIC: [u8; 4] = *b"WLDC";
/// The layout version this code writes and reads.
pub const CONTROL_FILE_VERSION: u32 = 1;
/// Length of an encoded control file of `CONTROL_FILE_VERSION`.
pub const CONTROL_FILE_LEN: usize = 56;
/// Files longer than this are refused without being read.
const MAX_READ_LEN: u64 = 4096;

/// The control file of a WAL directory (PostgreSQL: `ControlFileData`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ControlFile {
    /// The on-disk record format of the log.
    pub format: WalFormat,
    /// The segment size of the log.
    pub segment_size: SegmentSize,
    /// Identifies this log, so that segments of another are never mixed in;
    /// never 0 (PostgreSQL: `system_identifier`).
    pub system_identifier: u64,
    /// The timeline WAL is written on; never 0.
    pub timeline: TimeLineId,
    /// Start of the last checkpoint record, [`Lsn::INVALID`] before the first
    /// (PostgreSQL: `checkPoint`).
    pub checkpoint: Lsn,
    /// Where recovery starts reading; at or before [`ControlFile::checkpoint`]
    /// when that is valid (PostgreSQL: `checkPointCopy.redo`).
    pub redo: Lsn,
    /// True if the log was closed cleanly, with nothing to recover
    /// (PostgreSQL: `state == DB_SHUTDOWNED`).
    pub clean_shutdown: bool,
}

/// A system identifier unlikely to be shared with any other log: the current
/// time in seconds and microseconds and the low bits of the process ID,
/// never 0 (PostgreSQL: `BootStrapXLOG`).
pub fn generate_system_identifier() -> u64 {
    // A clock before 1970 only makes the identifier less unique.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let id = (now.as_secs() << 32)
        | (u64::from(now.subsec_micros()) << 12)
        | u64::from(std::process::id() & 0xFFF);
    id.max(1)
}

impl ControlFile {
    /// The control file of a new log: a fresh system identifier, no
    /// checkpoint yet, not marked as cleanly shut down.
    pub fn new(format: WalFormat, segment_size: SegmentSize, timeline: TimeLineId) -> Self {
        ControlFile {
            format,
            segment_size,
            system_identifier: generate_system_identifier(),
            timeline,
            checkpoint: Lsn::INVALID,
            redo: Lsn::INVALID,
            clean_shutdown: false,
        }
    }

    /// The path of the control file in `dir`.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join(CONTROL_FILE_NAME)
    }

    /// Checks the values no valid control file holds: a system identifier or
    /// timeline of 0, a redo LSN after a valid checkpoint LSN.
    pub fn validate(&self) -> Result<(), InvalidControlValue> {
        if self.system_identifier == 0 {
            return Err(InvalidControlValue {
                field: "system identifier",
                value: 0,
                reason: "must not be 0",
            });
        }
        if self.timeline == 0 {
            return Err(InvalidControlValue {
                field: "timeline",
                value: 0,
                reason: "timelines start at 1",
            });
        }
        if self.checkpoint.is_valid() && self.redo > self.checkpoint {
            return Err(InvalidControlValue {
                field: "redo LSN",
                value: self.redo.as_u64(),
                reason: "must not be after the checkpoint LSN",
            });
        }
        Ok(())
    }

    /// Reads and validates the control file in `dir`.
    ///
    /// PostgreSQL: `ReadControlFile`.
    pub fn read(storage: &dyn Storage, dir: &Path) -> Result<ControlFile, ControlFileError> {
        let path = Self::path(dir);
        let corrupt = |problem| ControlFileError::Corrupt {
            path: path.clone(),
            problem,
        };
        let file = storage
            .open(&path, &OpenOptions::new().read(true))
            .map_err(|error| match error.kind() {
                std::io::ErrorKind::NotFound => ControlFileError::Missing { path: path.clone() },
                _ => IoFailure::new(FileOp::Open, &path, error).into(),
            })?;
        let len = file.len().map_err(failed(FileOp::Stat, &path))?;
        if len > MAX_READ_LEN {
            return Err(corrupt(CorruptControlFile::TooLong { len }));
        }
        let mut bytes = vec![0u8; len as usize];
        file.read_exact_at(&mut bytes, 0)
            .map_err(failed(FileOp::Read, &path))?;
        Self::decode(&bytes).map_err(corrupt)
    }

    /// Replaces the control file in `dir` atomically and durably: writes
    /// [`CONTROL_FILE_TEMP_NAME`], syncs it, renames it over
    /// [`CONTROL_FILE_NAME`] and syncs `dir`. A crash at any point leaves
    /// either the old or the new control file; after `Ok` the new one is
    /// durable. A control file that fails [`ControlFile::validate`] is
    /// [`ControlFileError::Refused`] and nothing is written.
    ///
    /// PostgreSQL: `update_controlfile` (which overwrites in place instead).
    pub fn write(&self, storage: &dyn Storage, dir: &Path) -> Result<(), ControlFileError> {
        let bytes = self.encode().map_err(|value| ControlFileError::Refused {
            path: Self::path(dir),
            value,
        })?;
        install_durably(
            storage,
            dir,
            CONTROL_FILE_TEMP_NAME,
            CONTROL_FILE_NAME,
            |file| file.write_all_at(&bytes, 0),
        )?;
        Ok(())
    }
}

/// The control file the tests of every part start from.
#[cfg(test)]
mod test_support {
    use super::ControlFile;
    use crate::format::WalFormat;
    use crate::lsn::{Lsn, SegmentSize};

    pub(super) fn sample() -> ControlFile {
        ControlFile {
            format: WalFormat::Postgres15,
            segment_size: SegmentSize::new(16 << 20).unwrap(),
            system_identifier: 0x6F1E_2D3C_4B5A_6978,
            timeline: 3,
            checkpoint: Lsn(0x1_2A00_0128),
            redo: Lsn(0x1_29FF_F000),
            clean_shutdown: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_identifiers_carry_the_process_id_and_are_never_zero() {
        let id = generate_system_identifier();
        assert_ne!(id, 0);
        assert_eq!(id & 0xFFF, u64::from(std::process::id() & 0xFFF));
    }
}
