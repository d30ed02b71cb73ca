//! Bounds-checked reading of an rmgr's main data or block data for its
//! description: every read that does not fit is a [`MainDataError::TooShort`]
//! naming the struct.
//!
//! PostgreSQL: none; its `rm_desc` functions cast the bytes to the struct.

use super::MainDataError;
use crate::format::body::RelFileNode;

/// A read position in the bytes of one on-disk struct.
pub(super) struct Fields<'a> {
    what: &'static str,
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Fields<'a> {
    /// Reads `bytes` as the struct `what` (named in errors).
    pub(super) fn new(what: &'static str, bytes: &'a [u8]) -> Self {
        Fields {
            what,
            bytes,
            pos: 0,
        }
    }

    /// The next `n` bytes.
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], MainDataError> {
        let out = self
            .pos
            .checked_add(n)
            .and_then(|end| self.bytes.get(self.pos..end))
            .ok_or(MainDataError::TooShort {
                what: self.what,
                len: self.bytes.len(),
                need: (self.pos as u64).saturating_add(n as u64),
            })?;
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], MainDataError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Skips `n` bytes: alignment padding, or fields the description leaves out.
    pub(super) fn skip(&mut self, n: usize) -> Result<(), MainDataError> {
        self.take(n).map(|_| ())
    }

    /// The bytes not yet read.
    pub(super) fn rest(&self) -> &'a [u8] {
        &self.bytes[self.pos..]
    }

    /// A `uint8`.
    pub(super) fn u8(&mut self) -> Result<u8, MainDataError> {
        self.array::<1>().map(|[b]| b)
    }

    /// A C `bool` (one byte, non-zero is true).
    pub(super) fn bool(&mut self) -> Result<bool, MainDataError> {
        self.u8().map(|b| b != 0)
    }

    /// A `uint16` (also `OffsetNumber`).
    pub(super) fn u16(&mut self) -> Result<u16, MainDataError> {
        self.array().map(u16::from_le_bytes)
    }

    /// A `uint32` (also `TransactionId`, `Oid`, `BlockNumber`).
    pub(super) fn u32(&mut self) -> Result<u32, MainDataError> {
        self.array().map(u32::from_le_bytes)
    }

    /// An `int32`.
    pub(super) fn i32(&mut self) -> Result<i32, MainDataError> {
        self.array().map(i32::from_le_bytes)
    }

    /// A `uint64` (also `XLogRecPtr`).
    pub(super) fn u64(&mut self) -> Result<u64, MainDataError> {
        self.array().map(u64::from_le_bytes)
    }

    /// An `int64` (also `TimestampTz`).
    pub(super) fn i64(&mut self) -> Result<i64, MainDataError> {
        self.array().map(i64::from_le_bytes)
    }

    /// A `double`.
    pub(super) fn f64(&mut self) -> Result<f64, MainDataError> {
        self.u64().map(f64::from_bits)
    }

    /// A `BlockIdData`: the high then the low 16 bits of a block number.
    pub(super) fn block_id(&mut self) -> Result<u32, MainDataError> {
        let hi = self.u16()?;
        let lo = self.u16()?;
        Ok(u32::from(hi) << 16 | u32::from(lo))
    }

    /// A `RelFileNode`.
    pub(super) fn rel_file_node(&mut self) -> Result<RelFileNode, MainDataError> {
        Ok(RelFileNode {
            spc: self.u32()?,
            db: self.u32()?,
            rel: self.u32()?,
        })
    }

    /// A `FullTransactionId` as pg_waldump prints it: `epoch:xid`.
    pub(super) fn full_xid(&mut self) -> Result<String, MainDataError> {
        let v = self.u64()?;
        Ok(format!("{}:{}", v >> 32, v & u64::from(u32::MAX)))
    }

    /// A NUL-terminated string, lossily decoded, NUL consumed. Without a
    /// NUL, it is the rest of the bytes.
    pub(super) fn c_string(&mut self) -> String {
        let rest = self.rest();
        let len = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        self.pos += (len + 1).min(rest.len());
        String::from_utf8_lossy(&rest[..len]).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_in_order_and_names_what_is_short() {
        let bytes = [1, 0, 0x10, 0, 0, 0, b'a', b'b', 0, 7];
        let mut f = Fields::new("thing", &bytes);
        assert_eq!(f.u16().unwrap(), 1);
        assert_eq!(f.block_id().unwrap(), 0x10 << 16);
        assert_eq!(f.c_string(), "ab");
        assert_eq!(f.rest(), [7]);
        assert_eq!(f.u8().unwrap(), 7);
        assert_eq!(
            f.u32(),
            Err(MainDataError::TooShort {
                what: "thing",
                len: 10,
                need: 14
            })
        );
        assert_eq!(Fields::new("s", b"xy").c_string(), "xy");
    }
}
