//! [`BatchMarker`]: the record Walden writes in front of a batch, so that
//! recovery keeps a batch whole or drops it whole.
//!
//! PostgreSQL has no batches. The marker is an `XLOG_NOOP` record, whose
//! main data PostgreSQL ignores (pg_waldump prints `NOOP`), carrying a
//! magic, the number of records that follow and the LSN just past the last
//! of them. PostgreSQL: none.

use std::ops::Range;

use crate::format::little_endian::fixed_field;

/// Bytes of a batch marker's main data.
pub const BATCH_MARKER_SIZE: usize = 20;
/// The marker's first eight bytes: "WALDNBAT". An `XLOG_NOOP` record with
/// other main data is not a batch marker.
pub const BATCH_MARKER_MAGIC: [u8; 8] = *b"WALDNBAT";

/// The magic.
const BATCH_MAGIC: Range<usize> = 0..8;
/// Records in the batch, the marker not counted (`u32`).
const BATCH_RECORDS: Range<usize> = 8..12;
/// Usable bytes of the batch's records after the marker (`u64`).
const BATCH_BYTES: Range<usize> = 12..BATCH_MARKER_SIZE;

/// The main data of a batch marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BatchMarker {
    /// Records of the batch after the marker.
    pub records: u32,
    /// Bytes the batch's records take after the marker, alignment padding
    /// included and page headers not: the batch ends that many usable
    /// bytes after the marker's own (aligned) end.
    pub bytes: u64,
}

impl BatchMarker {
    /// The 20 bytes of main data.
    pub fn encode(&self) -> [u8; BATCH_MARKER_SIZE] {
        let mut out = [0u8; BATCH_MARKER_SIZE];
        out[BATCH_MAGIC].copy_from_slice(&BATCH_MARKER_MAGIC);
        out[BATCH_RECORDS].copy_from_slice(&self.records.to_le_bytes());
        out[BATCH_BYTES].copy_from_slice(&self.bytes.to_le_bytes());
        out
    }

    /// The marker whose main data is `main_data`, or `None` if these bytes
    /// are not a batch marker's.
    pub fn decode(main_data: &[u8]) -> Option<BatchMarker> {
        if main_data.len() != BATCH_MARKER_SIZE || main_data[BATCH_MAGIC] != BATCH_MARKER_MAGIC {
            return None;
        }
        Some(BatchMarker {
            records: u32::from_le_bytes(fixed_field(main_data, BATCH_RECORDS)),
            bytes: u64::from_le_bytes(fixed_field(main_data, BATCH_BYTES)),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;

    #[test]
    fn the_fields_tile_the_marker() {
        assert_fields_tile(
            &[
                ("magic", BATCH_MAGIC),
                ("records", BATCH_RECORDS),
                ("bytes", BATCH_BYTES),
            ],
            BATCH_MARKER_SIZE,
        );
    }

    #[test]
    fn a_marker_round_trips_and_other_bytes_are_not_one() {
        let m = BatchMarker {
            records: 64,
            bytes: 64 * 72,
        };
        assert_eq!(BatchMarker::decode(&m.encode()), Some(m));
        let mut wrong_magic = m.encode();
        wrong_magic[0] ^= 1;
        assert_eq!(BatchMarker::decode(&wrong_magic), None);
        assert_eq!(BatchMarker::decode(&m.encode()[..19]), None);
        assert_eq!(BatchMarker::decode(&[0; 21]), None);
    }
}
