//! Bounds-checked little-endian reading of on-disk structures.
//!
//! Every decoder in [`crate::format`] reads through [`Cursor`], so no decoder
//! slices past the end of its input: a read that does not fit returns `None`.

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

    /// Bytes read so far.
    pub(crate) fn position(&self) -> usize {
        self.pos
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
    use super::Cursor;

    #[test]
    fn reads_little_endian_and_refuses_to_overrun() {
        let mut c = Cursor::new(&[0x10, 0xD1, 1, 0, 0, 0, 9]);
        assert_eq!(c.u16(), Some(0xD110));
        assert_eq!(c.u32(), Some(1));
        assert_eq!(c.u32(), None, "only one byte is left");
        assert_eq!(c.position(), 6, "a failed read does not move the cursor");
        assert_eq!(c.take(2), None);
        assert_eq!(c.u8(), Some(9));
        assert_eq!(c.remaining(), 0);
        assert_eq!(c.take(usize::MAX), None);
    }
}
