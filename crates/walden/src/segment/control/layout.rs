//! The bytes of a control file: named field ranges, encoding and decoding.
//!
//! PostgreSQL: none; `pg_control` is `ControlFileData` written as it lies in
//! memory, while Walden's file has its own little-endian layout.

use std::ops::Range;

use super::{
    ControlFile, CorruptControlFile, InvalidControlValue, CONTROL_FILE_LEN, CONTROL_FILE_MAGIC,
    CONTROL_FILE_VERSION,
};
use crate::format::little_endian::{field, fixed_field};
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize};

/// Byte range of the magic, [`CONTROL_FILE_MAGIC`].
pub const CONTROL_MAGIC: Range<usize> = 0..4;
/// Byte range of the layout version (u32), [`CONTROL_FILE_VERSION`].
pub const CONTROL_VERSION: Range<usize> = 4..8;
/// Byte range of the WAL format's code (u32).
pub const CONTROL_FORMAT_CODE: Range<usize> = 8..12;
/// Byte range of the timeline (u32).
pub const CONTROL_TIMELINE: Range<usize> = 12..16;
/// Byte range of the segment size in bytes (u64).
pub const CONTROL_SEGMENT_SIZE: Range<usize> = 16..24;
/// Byte range of the system identifier (u64).
pub const CONTROL_SYSTEM_IDENTIFIER: Range<usize> = 24..32;
/// Byte range of the checkpoint LSN (u64).
pub const CONTROL_CHECKPOINT: Range<usize> = 32..40;
/// Byte range of the redo LSN (u64).
pub const CONTROL_REDO: Range<usize> = 40..48;
/// Byte range of the clean-shutdown flag (u32, 0 or 1).
pub const CONTROL_CLEAN_SHUTDOWN: Range<usize> = 48..52;
/// Byte range of the CRC-32C (u32) of every byte before it.
pub const CONTROL_CRC: Range<usize> = 52..CONTROL_FILE_LEN;

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

impl ControlFile {
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
        out[CONTROL_MAGIC].copy_from_slice(&CONTROL_FILE_MAGIC);
        out[CONTROL_VERSION].copy_from_slice(&CONTROL_FILE_VERSION.to_le_bytes());
        out[CONTROL_FORMAT_CODE].copy_from_slice(&format_code(self.format).to_le_bytes());
        out[CONTROL_TIMELINE].copy_from_slice(&self.timeline.to_le_bytes());
        out[CONTROL_SEGMENT_SIZE].copy_from_slice(&self.segment_size.bytes().to_le_bytes());
        out[CONTROL_SYSTEM_IDENTIFIER].copy_from_slice(&self.system_identifier.to_le_bytes());
        out[CONTROL_CHECKPOINT].copy_from_slice(&self.checkpoint.as_u64().to_le_bytes());
        out[CONTROL_REDO].copy_from_slice(&self.redo.as_u64().to_le_bytes());
        out[CONTROL_CLEAN_SHUTDOWN].copy_from_slice(&u32::from(self.clean_shutdown).to_le_bytes());
        let crc = crc32c::crc32c(&out[..CONTROL_CRC.start]);
        out[CONTROL_CRC].copy_from_slice(&crc.to_le_bytes());
        Ok(out)
    }

    /// Decodes and validates the bytes of a control file. Checks, in order:
    /// magic, version, length, CRC, field values; the first failure is the
    /// error.
    pub fn decode(bytes: &[u8]) -> Result<ControlFile, CorruptControlFile> {
        let len = bytes.len() as u64;
        let truncated = CorruptControlFile::Truncated { len };
        let magic: [u8; 4] = field(bytes, CONTROL_MAGIC).ok_or(truncated)?;
        if magic != CONTROL_FILE_MAGIC {
            return Err(CorruptControlFile::BadMagic { found: magic });
        }
        let version = u32::from_le_bytes(field(bytes, CONTROL_VERSION).ok_or(truncated)?);
        if version != CONTROL_FILE_VERSION {
            return Err(CorruptControlFile::UnsupportedVersion { found: version });
        }
        if bytes.len() > CONTROL_FILE_LEN {
            return Err(CorruptControlFile::TooLong { len });
        }
        if bytes.len() < CONTROL_FILE_LEN {
            return Err(truncated);
        }
        let stored = u32::from_le_bytes(fixed_field(bytes, CONTROL_CRC));
        let computed = crc32c::crc32c(&bytes[..CONTROL_CRC.start]);
        if stored != computed {
            return Err(CorruptControlFile::BadCrc { stored, computed });
        }
        let u32_at = |at| u32::from_le_bytes(fixed_field(bytes, at));
        let u64_at = |at| u64::from_le_bytes(fixed_field(bytes, at));
        let format_code = u32_at(CONTROL_FORMAT_CODE);
        let timeline = u32_at(CONTROL_TIMELINE);
        let segment_size = u64_at(CONTROL_SEGMENT_SIZE);
        let system_identifier = u64_at(CONTROL_SYSTEM_IDENTIFIER);
        let checkpoint = Lsn(u64_at(CONTROL_CHECKPOINT));
        let redo = Lsn(u64_at(CONTROL_REDO));
        let state = u32_at(CONTROL_CLEAN_SHUTDOWN);
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;
    use crate::segment::control::test_support::sample;
    use proptest::prelude::*;

    /// The encoding with `patch` applied at `offset` and the CRC fixed up, so
    /// that only the field check can reject it.
    fn with_valid_crc(offset: usize, patch: &[u8]) -> Vec<u8> {
        let mut bytes = sample().encode().unwrap().to_vec();
        bytes[offset..offset + patch.len()].copy_from_slice(patch);
        let crc = crc32c::crc32c(&bytes[..CONTROL_CRC.start]);
        bytes[CONTROL_CRC].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    #[test]
    fn round_trips_and_fits_one_sector() {
        let c = sample();
        let bytes = c.encode().unwrap();
        assert!(bytes.len() <= 512);
        assert_eq!(&bytes[CONTROL_MAGIC], b"WLDC");
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
                    at if CONTROL_MAGIC.contains(&at) => {
                        assert!(matches!(err, CorruptControlFile::BadMagic { .. }))
                    }
                    at if CONTROL_VERSION.contains(&at) => {
                        assert!(matches!(err, CorruptControlFile::UnsupportedVersion { .. }))
                    }
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
        bytes[CONTROL_MAGIC].copy_from_slice(&[0x10, 0xD1, 0x06, 0x00]);
        assert_eq!(
            ControlFile::decode(&bytes),
            Err(CorruptControlFile::BadMagic {
                found: [0x10, 0xD1, 0x06, 0x00]
            })
        );
        for version in [0u32, 2, u32::MAX] {
            let bytes = with_valid_crc(CONTROL_VERSION.start, &version.to_le_bytes());
            assert_eq!(
                ControlFile::decode(&bytes),
                Err(CorruptControlFile::UnsupportedVersion { found: version })
            );
        }
    }

    #[test]
    fn impossible_values_are_rejected_even_with_a_valid_crc() {
        let (format, tli, seg) = (
            CONTROL_FORMAT_CODE.start,
            CONTROL_TIMELINE.start,
            CONTROL_SEGMENT_SIZE.start,
        );
        let (sysid, redo, clean) = (
            CONTROL_SYSTEM_IDENTIFIER.start,
            CONTROL_REDO.start,
            CONTROL_CLEAN_SHUTDOWN.start,
        );
        let cases: [(usize, Vec<u8>, &str, u64); 7] = [
            (format, 7u32.to_le_bytes().to_vec(), "format code", 7),
            (tli, 0u32.to_le_bytes().to_vec(), "timeline", 0),
            (
                seg,
                (3u64 << 20).to_le_bytes().to_vec(),
                "segment size",
                3 << 20,
            ),
            (
                seg,
                (2u64 << 30).to_le_bytes().to_vec(),
                "segment size",
                2 << 30,
            ),
            (sysid, 0u64.to_le_bytes().to_vec(), "system identifier", 0),
            (
                redo,
                0x1_2A00_0130u64.to_le_bytes().to_vec(),
                "redo LSN",
                0x1_2A00_0130,
            ),
            (clean, 2u32.to_le_bytes().to_vec(), "clean-shutdown flag", 2),
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
    fn invalid_values_are_not_encoded() {
        let c = ControlFile {
            system_identifier: 0,
            ..sample()
        };
        assert_eq!(c.encode().unwrap_err().field, "system identifier");
    }

    #[test]
    fn named_fields_tile_the_file() {
        let fields = [
            ("magic", CONTROL_MAGIC),
            ("version", CONTROL_VERSION),
            ("format code", CONTROL_FORMAT_CODE),
            ("timeline", CONTROL_TIMELINE),
            ("segment size", CONTROL_SEGMENT_SIZE),
            ("system identifier", CONTROL_SYSTEM_IDENTIFIER),
            ("checkpoint LSN", CONTROL_CHECKPOINT),
            ("redo LSN", CONTROL_REDO),
            ("clean-shutdown flag", CONTROL_CLEAN_SHUTDOWN),
            ("crc", CONTROL_CRC),
        ];
        assert_fields_tile(&fields, CONTROL_FILE_LEN);
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
