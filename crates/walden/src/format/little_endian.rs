//! Little-endian field access for on-disk structures.
//!
//! Variable-length structures are read through [`Cursor`], so no decoder
//! slices past the end of its input: a read that does not fit returns `None`.
//! Fixed headers are read field by field with [`field`] and [`fixed_field`],
//! at the named byte ranges their modules export (`XLP_*`, `XL_*`,
//! `CONTROL_*`).
//!
//! PostgreSQL: none; it reads its structs in place with `memcpy`.

use std::ops::Range;

/// The `N` bytes at `at` in `bytes`; `None` if `bytes` ends before `at` does.
/// `at` must be `N` bytes long (field ranges are constants; the tiling tests
/// check them), else `None` too.
pub(crate) fn field<const N: usize>(bytes: &[u8], at: Range<usize>) -> Option<[u8; N]> {
    bytes.get(at)?.try_into().ok()
}

/// The `N` bytes at `at` in a buffer already known to hold the whole header.
///
/// Panics if `at` is not `N` bytes inside `bytes`: with constant field ranges
/// and a buffer of the header's size, that is a bug in the ranges.
pub(crate) fn fixed_field<const N: usize>(bytes: &[u8], at: Range<usize>) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at]);
    out
}

/// Asserts that `fields`, in order, cover `0..size` exactly: each starts
/// where the one before ends. Padding must be listed as a field.
#[cfg(test)]
pub(crate) fn assert_fields_tile(fields: &[(&str, Range<usize>)], size: usize) {
    let mut end = 0;
    for (name, range) in fields {
        assert_eq!(
            range.start, end,
            "{name} starts where the field before ends"
        );
        assert!(range.end > range.start, "{name} is not empty");
        end = range.end;
    }
    assert_eq!(end, size, "the fields end at the header's size");
}

/// A read position in a byte slice; every read is bounds-checked.
#[derive(Clone, Debug)]
pub(crate) struct Cursor<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `bytes`.
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Cursor { bytes, pos: 0 }
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len() - self.pos
    }

    /// The next `n` bytes, or `None` (and no progress) if fewer are left.
    pub(crate) fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let out = self.bytes.get(self.pos..end)?;
        self.pos = end;
        Some(out)
    }

    /// Skips `n` bytes (struct padding), or returns `None` if fewer are left.
    pub(crate) fn skip(&mut self, n: usize) -> Option<()> {
        self.take(n).map(|_| ())
    }

    fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N)?.try_into().ok()
    }

    pub(crate) fn u8(&mut self) -> Option<u8> {
        self.array::<1>().map(|b| b[0])
    }

    pub(crate) fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    pub(crate) fn i32(&mut self) -> Option<i32> {
        self.array().map(i32::from_le_bytes)
    }

    pub(crate) fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }

    pub(crate) fn i64(&mut self) -> Option<i64> {
        self.array().map(i64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::{field, fixed_field, Cursor};

    #[test]
    fn reads_little_endian_and_refuses_to_overrun() {
        let mut c = Cursor::new(&[0x10, 0xD1, 1, 0, 0, 0, 9]);
        assert_eq!(c.u16(), Some(0xD110));
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.u32(), None, "only one byte is left");
        assert_eq!(c.remaining(), 1, "a failed read does not move the cursor");
        assert_eq!(c.take(2), None);
        assert_eq!(c.u8(), Some(9));
        assert_eq!(c.remaining(), 0);
        assert_eq!(c.take(usize::MAX), None);
    }

    #[test]
    fn fields_are_read_at_their_range() {
        let bytes = [1, 2, 3, 4, 5];
        assert_eq!(field::<2>(&bytes, 1..3), Some([2, 3]));
        assert_eq!(field::<2>(&bytes, 4..6), None, "past the end");
        assert_eq!(field::<2>(&bytes, 1..4), None, "wrong width");
        assert_eq!(fixed_field::<4>(&bytes, 1..5), [2, 3, 4, 5]);
    }
}
