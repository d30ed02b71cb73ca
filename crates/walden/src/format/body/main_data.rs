//! The main-data header: `0xFF` with a u8 length, or `0xFE` with a u32
//! length, or nothing for no main data.
//!
//! PostgreSQL: the `XLR_BLOCK_ID_DATA_SHORT`/`_LONG` branch of
//! `XLogRecordAssemble`.

use super::{XLR_BLOCK_ID_DATA_LONG, XLR_BLOCK_ID_DATA_SHORT};

/// Encoded size of the short main-data header: id and u8 length.
const SHORT_HEADER_SIZE: usize = 2;
/// Encoded size of the long main-data header: id and u32 length.
const LONG_HEADER_SIZE: usize = 5;

/// Encoded size of the main-data header for `len` bytes of main data: 0 when
/// empty, 2 for the short form (len <= 255), 5 for the long form.
pub fn main_data_header_len(len: usize) -> usize {
    match len {
        0 => 0,
        1..=255 => SHORT_HEADER_SIZE,
        _ => LONG_HEADER_SIZE,
    }
}

/// Appends the main-data header and `data`, as PostgreSQL does: the short
/// form (`0xFF`, u8 length) iff `data.len() <= 255`, nothing at all when
/// `data` is empty. This is a whole body for a record without blocks, origin
/// or top-level xid. `data` longer than `u32::MAX` is a caller bug; its
/// length is then recorded truncated and no reader accepts the record.
pub fn encode_main_data(data: &[u8], out: &mut Vec<u8>) {
    encode_main_data_header(data.len(), out);
    out.extend_from_slice(data);
}

/// Appends the main-data header for `len` bytes (nothing when 0).
pub(super) fn encode_main_data_header(len: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(MainDataHeader::new(len).as_bytes());
}

/// The encoded main-data header for some length, held on the stack: the
/// first part of a record body without blocks, origin or top-level xid, so
/// that the insert path can write the main data straight from the caller's
/// slice after it (PostgreSQL: the `rdata` entry `XLogRecordAssemble`
/// chains before the main data).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MainDataHeader {
    /// The header's bytes, then zeros: built as one little-endian word,
    /// so that it is stored and CRC'd from a register ([`Self::word`]).
    bytes: [u8; 8],
    len: usize,
}

impl MainDataHeader {
    /// The header for `len` bytes of main data, in the form
    /// [`encode_main_data`] writes; `len` above `u32::MAX` is recorded
    /// truncated, as there.
    #[inline]
    pub fn new(len: usize) -> Self {
        let header_len = main_data_header_len(len);
        let word = match header_len {
            0 => 0,
            SHORT_HEADER_SIZE => u64::from(XLR_BLOCK_ID_DATA_SHORT) | (len as u64) << 8,
            _ => u64::from(XLR_BLOCK_ID_DATA_LONG) | u64::from(len as u32) << 8,
        };
        MainDataHeader {
            bytes: word.to_le_bytes(),
            len: header_len,
        }
    }

    /// The header's encoded bytes: empty for no main data.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// The header's bytes as a little-endian word, zeros past
    /// [`Self::as_bytes`]: 8 bytes stored at the header's place put the
    /// header there (and zeros after it).
    #[inline]
    pub fn word(&self) -> u64 {
        u64::from_le_bytes(self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::body::test_support::encoded;
    use crate::format::body::Body;

    #[test]
    fn main_data_forms_follow_postgres() {
        for (len, header) in [
            (0usize, vec![]),
            (1, vec![0xFF, 1]),
            (255, vec![0xFF, 255]),
            (256, vec![0xFE, 0, 1, 0, 0]),
        ] {
            let data = vec![0x78; len];
            let mut out = Vec::new();
            encode_main_data(&data, &mut out);
            assert_eq!(&out[..header.len()], &header[..], "len {len}");
            assert_eq!(out.len(), main_data_header_len(len) + len);
            let h = MainDataHeader::new(len);
            assert_eq!(h.as_bytes(), &header[..], "len {len}");
            let mut word = [0; 8];
            word[..header.len()].copy_from_slice(&header);
            assert_eq!(h.word(), u64::from_le_bytes(word), "len {len}");
            let body = Body {
                main_data: data.clone(),
                ..Default::default()
            };
            assert_eq!(encoded(&body), out);
            assert_eq!(Body::decode(&out).unwrap(), body);
        }
        // The long form is accepted for short data too.
        let b = Body::decode(&[0xFE, 2, 0, 0, 0, 7, 8]).unwrap();
        assert_eq!(b.main_data, vec![7, 8]);
    }
}
