//! The control file: what a WAL directory is and where recovery starts.
//!
//! PostgreSQL keeps this in `global/pg_control`; Walden's control file has
//! its own, smaller format, described at [`ControlFile::encode`]. It fits in
//! one 512-byte sector, so a single write of it is not torn on devices with
//! atomic sector writes, and it is replaced atomically in any case
//! ([`ControlFile::write`]).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use super::durable::install_durably;
use super::error::{failed, FileOp, IoFailure};
use super::storage::{OpenOptions, Storage};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, TimeLineId};

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
/// Offset of the CRC: it covers every byte before it.
const CRC_OFFSET: usize = CONTROL_FILE_LEN - 4;

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

/// The code stored for a format. Adding a format adds a new code here.
fn format_code(format: WalFormat) -> u32 {
    match format {
        WalFormat::Postgres15 => 0,
        WalFormat::SelfLsn => 1,
        WalFormat::CompactWalId => 2,
    }
}

fn format_from_code(code: u32) -> Option<WalFormat> {
    WalFormat::ALL
        .into_iter()
        .find(|&format| format_code(format) == code)
}

/// Reads little-endian fields from the front of a control file's bytes.
struct FieldReader<'a> {
    rest: &'a [u8],
    /// The length of the whole file, for errors.
    len: u64,
}

impl FieldReader<'_> {
    fn array<const N: usize>(&mut self) -> Result<[u8; N], CorruptControlFile> {
        let (head, rest) = self
            .rest
            .split_first_chunk::<N>()
            .ok_or(CorruptControlFile::Truncated { len: self.len })?;
        self.rest = rest;
        Ok(*head)
    }

    fn u32(&mut self) -> Result<u32, CorruptControlFile> {
        self.array().map(u32::from_le_bytes)
    }

    fn u64(&mut self) -> Result<u64, CorruptControlFile> {
        self.array().map(u64::from_le_bytes)
    }
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

    /// Encodes the control file, after [`ControlFile::validate`].
    ///
    /// Layout (little-endian, [`CONTROL_FILE_LEN`] bytes): magic (4 bytes,
    /// [`CONTROL_FILE_MAGIC`]), version u32, format code u32, timeline u32,
    /// segment size u64, system identifier u64, checkpoint LSN u64, redo LSN
    /// u64, clean-shutdown flag u32 (0 or 1), then the CRC-32C of all the
    /// bytes before it as u32.
    pub fn encode(&self) -> Result<[u8; CONTROL_FILE_LEN], InvalidControlValue> {
        self.validate()?;
        let mut out = [0u8; CONTROL_FILE_LEN];
        let fields: [&[u8]; 9] = [
            &CONTROL_FILE_MAGIC,
            &CONTROL_FILE_VERSION.to_le_bytes(),
            &format_code(self.format).to_le_bytes(),
            &self.timeline.to_le_bytes(),
            &self.segment_size.bytes().to_le_bytes(),
            &self.system_identifier.to_le_bytes(),
            &self.checkpoint.as_u64().to_le_bytes(),
            &self.redo.as_u64().to_le_bytes(),
            &u32::from(self.clean_shutdown).to_le_bytes(),
        ];
        let mut at = 0;
        for field in fields {
            out[at..at + field.len()].copy_from_slice(field);
            at += field.len();
        }
        let crc = crc32c::crc32c(&out[..CRC_OFFSET]);
        out[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Decodes and validates the bytes of a control file. Checks, in order:
    /// magic, version, length, CRC, field values; the first failure is the
    /// error.
    pub fn decode(bytes: &[u8]) -> Result<ControlFile, CorruptControlFile> {
        let len = bytes.len() as u64;
        let mut fields = FieldReader { rest: bytes, len };
        let magic = fields.array::<4>()?;
        if magic != CONTROL_FILE_MAGIC {
            return Err(CorruptControlFile::BadMagic { found: magic });
        }
        let version = fields.u32()?;
        if version != CONTROL_FILE_VERSION {
            return Err(CorruptControlFile::UnsupportedVersion { found: version });
        }
        if bytes.len() > CONTROL_FILE_LEN {
            return Err(CorruptControlFile::TooLong { len });
        }
        let (covered, stored) = bytes
            .split_last_chunk::<4>()
            .filter(|_| bytes.len() == CONTROL_FILE_LEN)
            .ok_or(CorruptControlFile::Truncated { len })?;
        let stored = u32::from_le_bytes(*stored);
        let computed = crc32c::crc32c(covered);
        if stored != computed {
            return Err(CorruptControlFile::BadCrc { stored, computed });
        }
        let format_code = fields.u32()?;
        let timeline = fields.u32()?;
        let segment_size = fields.u64()?;
        let system_identifier = fields.u64()?;
        let checkpoint = Lsn(fields.u64()?);
        let redo = Lsn(fields.u64()?);
        let state = fields.u32()?;
        let format = format_from_code(format_code).ok_or(InvalidControlValue {
            field: "format code",
            value: format_code.into(),
            reason: "no such WAL format",
        })?;
        let segment_size = SegmentSize::new(segment_size).map_err(|_| InvalidControlValue {
            field: "segment size",
            value: segment_size,
            reason: "must be a power of two between 1 MiB and 1 GiB",
        })?;
        let clean_shutdown = match state {
            0 => false,
            1 => true,
            _ => {
                return Err(InvalidControlValue {
                    field: "clean-shutdown flag",
                    value: state.into(),
                    reason: "must be 0 or 1",
                }
                .into())
            }
        };
        let control = ControlFile {
            format,
            segment_size,
            system_identifier,
            timeline,
            checkpoint,
            redo,
            clean_shutdown,
        };
        control.validate()?;
        Ok(control)
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> ControlFile {
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

    /// The encoding with `patch` applied at `offset` and the CRC fixed up, so
    /// that only the field check can reject it.
    fn with_valid_crc(offset: usize, patch: &[u8]) -> Vec<u8> {
        let mut bytes = sample().encode().unwrap().to_vec();
        bytes[offset..offset + patch.len()].copy_from_slice(patch);
        let crc = crc32c::crc32c(&bytes[..CRC_OFFSET]);
        bytes[CRC_OFFSET..].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    #[test]
    fn round_trips_and_fits_one_sector() {
        let c = sample();
        let bytes = c.encode().unwrap();
        assert!(bytes.len() <= 512);
        assert_eq!(&bytes[..4], b"WLDC");
        assert_eq!(ControlFile::decode(&bytes), Ok(c));
        let fresh = ControlFile::new(WalFormat::Postgres15, SegmentSize::default(), 1);
        assert_ne!(fresh.system_identifier, 0);
        assert_eq!(ControlFile::decode(&fresh.encode().unwrap()), Ok(fresh));
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let good = sample().encode().unwrap();
        for at in 0..good.len() {
            for mask in [0x01u8, 0x80, 0xFF] {
                let mut bad = good;
                bad[at] ^= mask;
                let err = ControlFile::decode(&bad).unwrap_err();
                match at {
                    0..=3 => assert!(matches!(err, CorruptControlFile::BadMagic { .. })),
                    4..=7 => assert!(matches!(err, CorruptControlFile::UnsupportedVersion { .. })),
                    _ => assert!(
                        matches!(err, CorruptControlFile::BadCrc { .. }),
                        "{at}: {err}"
                    ),
                }
            }
        }
    }

    #[test]
    fn every_truncation_and_extension_is_detected() {
        let good = sample().encode().unwrap();
        for len in 0..good.len() {
            assert_eq!(
                ControlFile::decode(&good[..len]),
                Err(CorruptControlFile::Truncated { len: len as u64 })
            );
        }
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(
            ControlFile::decode(&long),
            Err(CorruptControlFile::TooLong { len: 57 })
        );
    }

    #[test]
    fn foreign_magic_and_versions_are_named() {
        let mut bytes = sample().encode().unwrap();
        bytes[..4].copy_from_slice(&[0x10, 0xD1, 0x06, 0x00]);
        assert_eq!(
            ControlFile::decode(&bytes),
            Err(CorruptControlFile::BadMagic {
                found: [0x10, 0xD1, 0x06, 0x00]
            })
        );
        for version in [0u32, 2, u32::MAX] {
            let bytes = with_valid_crc(4, &version.to_le_bytes());
            assert_eq!(
                ControlFile::decode(&bytes),
                Err(CorruptControlFile::UnsupportedVersion { found: version })
            );
        }
    }

    #[test]
    fn impossible_values_are_rejected_even_with_a_valid_crc() {
        let cases: [(usize, Vec<u8>, &str, u64); 7] = [
            (8, 7u32.to_le_bytes().to_vec(), "format code", 7),
            (12, 0u32.to_le_bytes().to_vec(), "timeline", 0),
            (
                16,
                (3u64 << 20).to_le_bytes().to_vec(),
                "segment size",
                3 << 20,
            ),
            (
                16,
                (2u64 << 30).to_le_bytes().to_vec(),
                "segment size",
                2 << 30,
            ),
            (24, 0u64.to_le_bytes().to_vec(), "system identifier", 0),
            (
                40,
                0x1_2A00_0130u64.to_le_bytes().to_vec(),
                "redo LSN",
                0x1_2A00_0130,
            ),
            (48, 2u32.to_le_bytes().to_vec(), "clean-shutdown flag", 2),
        ];
        for (offset, patch, field, value) in cases {
            match ControlFile::decode(&with_valid_crc(offset, &patch)) {
                Err(CorruptControlFile::InvalidValue(v)) => {
                    assert_eq!((v.field, v.value), (field, value));
                }
                other => panic!("{field}: {other:?}"),
            }
        }
    }

    #[test]
    fn redo_before_the_first_checkpoint_is_free() {
        let c = ControlFile {
            checkpoint: Lsn::INVALID,
            redo: Lsn(0x0100_0028),
            ..sample()
        };
        assert_eq!(ControlFile::decode(&c.encode().unwrap()), Ok(c));
    }

    #[test]
    fn system_identifiers_carry_the_process_id_and_are_never_zero() {
        let id = generate_system_identifier();
        assert_ne!(id, 0);
        assert_eq!(id & 0xFFF, u64::from(std::process::id() & 0xFFF));
    }

    #[test]
    fn invalid_values_are_not_encoded() {
        let c = ControlFile {
            system_identifier: 0,
            ..sample()
        };
        assert_eq!(c.encode().unwrap_err().field, "system identifier");
    }

    proptest! {
        #[test]
        fn valid_files_round_trip(
            seg_shift in 20u32..=30,
            system_identifier in 1u64..,
            timeline in 1u32..,
            checkpoint in any::<u64>(),
            redo_back in any::<u64>(),
            clean_shutdown in any::<bool>(),
            format in proptest::sample::select(WalFormat::ALL.to_vec()),
        ) {
            let c = ControlFile {
                format,
                segment_size: SegmentSize::new(1 << seg_shift).unwrap(),
                system_identifier,
                timeline,
                checkpoint: Lsn(checkpoint),
                redo: Lsn(checkpoint.saturating_sub(redo_back)),
                clean_shutdown,
            };
            prop_assert_eq!(ControlFile::decode(&c.encode().unwrap()), Ok(c));
        }

        #[test]
        fn corrupted_bytes_never_decode_to_a_different_value(
            edits in proptest::collection::vec((0..CONTROL_FILE_LEN, 1u8..), 1..8),
            cut in 0..=CONTROL_FILE_LEN,
        ) {
            let good = sample().encode().unwrap();
            let mut bad = good.to_vec();
            for (at, mask) in edits {
                bad[at] ^= mask;
            }
            bad.truncate(cut);
            if bad[..] != good[..] {
                prop_assert!(ControlFile::decode(&bad).is_err());
            }
        }

        #[test]
        fn any_fields_under_a_valid_crc_decode_to_themselves_or_name_the_bad_one(
            format_code in 0u32..3,
            timeline in prop_oneof![Just(0u32), any::<u32>()],
            seg_shift in 18u32..33,
            system_identifier in prop_oneof![Just(0u64), any::<u64>()],
            checkpoint in prop_oneof![Just(0u64), any::<u64>()],
            redo in any::<u64>(),
            state in 0u32..3,
        ) {
            let mut bytes = CONTROL_FILE_MAGIC.to_vec();
            for word in [CONTROL_FILE_VERSION, format_code, timeline] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            for word in [1u64 << seg_shift, system_identifier, checkpoint, redo] {
                bytes.extend_from_slice(&word.to_le_bytes());
            }
            bytes.extend_from_slice(&state.to_le_bytes());
            let crc = crc32c::crc32c(&bytes);
            bytes.extend_from_slice(&crc.to_le_bytes());
            match ControlFile::decode(&bytes) {
                Ok(c) => {
                    prop_assert_eq!(&c.encode().unwrap()[..], &bytes[..]);
                    prop_assert_eq!(
                        (c.timeline, c.system_identifier, c.checkpoint, c.redo, c.clean_shutdown),
                        (timeline, system_identifier, Lsn(checkpoint), Lsn(redo), state == 1)
                    );
                }
                Err(e) => prop_assert!(matches!(e, CorruptControlFile::InvalidValue(_)), "{}", e),
            }
        }
    }
}
