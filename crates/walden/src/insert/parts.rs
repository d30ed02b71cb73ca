//! [`Parts`]: a record's bytes as its inserter copies them, the sealed
//! header then the body's parts, consumed front to back.

/// A cursor over a record's sealed header and body parts, read in order.
#[derive(Debug)]
pub(super) struct Parts<'a> {
    header: &'a [u8],
    body: &'a [&'a [u8]],
    /// The part being read: 0 the header, `i + 1` the body's `i`.
    part: usize,
    /// Bytes of that part already taken.
    offset: usize,
    remaining: usize,
}

impl<'a> Parts<'a> {
    /// `header`, then `body`'s parts.
    pub(super) fn new(header: &'a [u8], body: &'a [&'a [u8]]) -> Self {
        Parts {
            header,
            body,
            part: 0,
            offset: 0,
            remaining: header.len() + body.iter().map(|p| p.len()).sum::<usize>(),
        }
    }

    /// Bytes not taken yet.
    pub(super) fn remaining(&self) -> usize {
        self.remaining
    }

    /// The next at most `max` bytes, from one part: fewer where that part
    /// ends first; empty only when nothing remains or `max` is 0.
    pub(super) fn take(&mut self, max: usize) -> &'a [u8] {
        loop {
            let part = match self.part {
                0 => self.header,
                i => match self.body.get(i - 1) {
                    Some(p) => p,
                    None => return &[],
                },
            };
            if self.offset == part.len() {
                self.part += 1;
                self.offset = 0;
                continue;
            }
            let n = max.min(part.len() - self.offset);
            let bytes = &part[self.offset..self.offset + n];
            self.offset += n;
            self.remaining -= n;
            return bytes;
        }
    }

    /// Consumes the next `n` bytes (at most what remains).
    pub(super) fn skip(&mut self, mut n: usize) {
        while n > 0 && self.remaining() > 0 {
            n -= self.take(n).len();
        }
    }

    /// Takes the next `n` bytes (at most [`Self::remaining`]) as slices,
    /// one per part they span, into the front of `out`; returns how many.
    /// `out` must have room for one per part left.
    pub(super) fn take_whole<'b>(&mut self, mut n: usize, out: &mut [&'b [u8]]) -> usize
    where
        'a: 'b,
    {
        debug_assert!(n <= self.remaining);
        let mut used = 0;
        while n > 0 {
            let bytes = self.take(n);
            n -= bytes.len();
            out[used] = bytes;
            used += 1;
        }
        used
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_every_byte_once_in_order_across_parts() {
        let body: [&[u8]; 3] = [b"abc", b"", b"defgh"];
        let mut parts = Parts::new(b"HH", &body);
        assert_eq!(parts.remaining(), 10);
        assert_eq!(parts.take(3), b"HH");
        assert_eq!(parts.take(2), b"ab");
        let mut out: [&[u8]; 3] = [&[]; 3];
        assert_eq!(parts.take_whole(4, &mut out), 2);
        assert_eq!(out[..2], [&b"c"[..], &b"def"[..]]);
        assert_eq!(parts.remaining(), 2);
        assert_eq!(parts.take(8), b"gh");
        assert_eq!(parts.take(8), b"");
        assert_eq!(parts.remaining(), 0);
    }
}
