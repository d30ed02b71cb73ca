//! [`RecordCrc`]: a small record's CRC computed as its body is copied, the
//! CPU checked once for a whole run of records.
//!
//! A run of records is written by code generic over [`RecordCrc`]: with
//! [`Sse42`], called from a function compiled with the feature
//! (`#[target_feature(enable = "sse4.2")]`), every CRC instruction is
//! inlined into the run's loop, and a short payload is copied with a few
//! fixed-size moves rather than a call to `memcpy`. The
//! main-data header and the record header are CRC'd from their words
//! (`MainDataHeader::word`, [`HeaderWords`]), never read back from the
//! bytes just stored. [`AnyCpu`] is the same on any CPU, through
//! `format::crc`.
//!
//! PostgreSQL: `XLogRecordAssemble`'s `COMP_CRC32C` over the rdata chain,
//! then `XLogInsertRecord`'s over the header; `CopyXLogRecordToWAL`'s copy.

use super::body::MainDataHeader;
use super::crc;
use super::header_words::HeaderWords;

/// How a record's CRC is computed; see the module docs.
pub trait RecordCrc: Copy {
    /// Copies `data` into `out` (of the same length: a caller bug
    /// otherwise) and returns the CRC of the body `prefix` (a main-data
    /// header, or none) then `data`.
    fn copy_body(self, prefix: &MainDataHeader, data: &[u8], out: &mut [u8]) -> u32;

    /// The record's CRC from its body's and its header's words
    /// ([`crc::finish_words`]).
    fn finish(self, body_crc: u32, words: &HeaderWords) -> u32;
}

/// [`RecordCrc`] on any CPU: a copy, then [`crc::parts_crc`] and
/// [`crc::finish_words`], which check the CPU on each call.
#[derive(Clone, Copy, Debug)]
pub struct AnyCpu;

impl RecordCrc for AnyCpu {
    #[inline]
    fn copy_body(self, prefix: &MainDataHeader, data: &[u8], out: &mut [u8]) -> u32 {
        out.copy_from_slice(data);
        crc::parts_crc(&[prefix.as_bytes(), data])
    }

    #[inline]
    fn finish(self, body_crc: u32, words: &HeaderWords) -> u32 {
        crc::finish_words(body_crc, words)
    }
}

/// [`RecordCrc`] with SSE4.2's CRC-32C instruction: only made on a CPU
/// that has it ([`Sse42::detect`]).
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, Debug)]
pub struct Sse42(());

#[cfg(target_arch = "x86_64")]
impl Sse42 {
    /// `Some` if this CPU has SSE4.2.
    #[inline]
    pub fn detect() -> Option<Self> {
        std::arch::is_x86_feature_detected!("sse4.2").then_some(Sse42(()))
    }
}

#[cfg(target_arch = "x86_64")]
impl RecordCrc for Sse42 {
    #[inline(always)]
    fn copy_body(self, prefix: &MainDataHeader, data: &[u8], out: &mut [u8]) -> u32 {
        // SAFETY: an `Sse42` exists only on a CPU with SSE4.2 (`detect`).
        unsafe { copy_append_sse42(prefix_sse42(prefix), data, out) }
    }

    #[inline(always)]
    fn finish(self, body_crc: u32, words: &HeaderWords) -> u32 {
        // SAFETY: an `Sse42` exists only on a CPU with SSE4.2 (`detect`).
        unsafe { crc::words_sse42(body_crc, words) }
    }
}

/// The CRC of a main-data header, from its word: bytes stored one by one
/// and read back as a whole would stall on the stores.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
fn prefix_sse42(prefix: &MainDataHeader) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u8};
    let word = prefix.word();
    // None, the short form (2 bytes) or the long one (5: one byte then 4).
    let c = match prefix.as_bytes().len() {
        0 => return 0,
        2 => _mm_crc32_u16(!0, word as u16),
        _ => _mm_crc32_u32(_mm_crc32_u8(!0, word as u8), (word >> 8) as u32),
    };
    !c
}

/// Copies `src` into `dst` (of the same length) and returns `crc`
/// extended over it: a short `src` copied with a few fixed-size moves
/// ([`copy_short`]) and CRC'd from the source by `crc::append_part_sse42`
/// (a loop that copied and CRC'd each word at once became a `memcpy`
/// call and a second loop in the compiler's hands).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
fn copy_append_sse42(crc: u32, src: &[u8], dst: &mut [u8]) -> u32 {
    copy_short(dst, src);
    crc::append_part_sse42(crc, src)
}

/// `dst.copy_from_slice(src)` (of equal lengths) without calling libc's
/// `memmove` for up to 64 bytes: two copies of a fixed size that overlap
/// in the middle, which the compiler makes a few loads and stores.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn copy_short(dst: &mut [u8], src: &[u8]) {
    debug_assert_eq!(dst.len(), src.len());
    let n = src.len().min(dst.len());
    match n {
        0 => {}
        1..=3 => {
            for i in [0, n / 2, n - 1] {
                dst[i] = src[i];
            }
        }
        4..=7 => copy_ends::<4>(dst, src, n),
        8..=15 => copy_ends::<8>(dst, src, n),
        16..=31 => copy_ends::<16>(dst, src, n),
        32..=64 => copy_ends::<32>(dst, src, n),
        _ => dst.copy_from_slice(src),
    }
}

/// Copies the first and the last `K` of `n` bytes (`K <= n <= 2K`) of
/// `src` to `dst`.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn copy_ends<const K: usize>(dst: &mut [u8], src: &[u8], n: usize) {
    dst[..K].copy_from_slice(&src[..K]);
    dst[n - K..n].copy_from_slice(&src[n - K..n]);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `copy_short` copies every byte and nothing else, at every length
    /// from 0 to past its short cases.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn copy_short_copies_exactly_the_bytes() {
        let src: Vec<u8> = (1..=100).collect();
        for n in 0..=src.len() {
            let mut dst = vec![0u8; n + 2];
            copy_short(&mut dst[1..=n], &src[..n]);
            assert_eq!(&dst[1..=n], &src[..n], "{n} bytes");
            assert_eq!((dst[0], dst[n + 1]), (0, 0), "{n} bytes: outside untouched");
        }
    }

    /// Each [`RecordCrc`] copies the data exactly and gives the body's
    /// CRC (the `crc32c` crate's over the main-data header and the data),
    /// for data of every length around the word size, the short and long
    /// main-data headers' bounds and the long-input threshold, at every
    /// alignment; and finishes it as [`crc::finish_words`] does.
    #[test]
    fn a_copied_body_has_its_crc() {
        let bytes: Vec<u8> = (0..2 * crc::SHORT_INPUT as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let lens = (0..=80).chain([254, 255, 256, 257, 767, 768, 769, 1000]);
        let words = HeaderWords {
            first: 0x0807_0605_0403_0201,
            link: Some(0x100F_0E0D_0C0B_0A09),
            last: 0x1413_1211,
        };
        for len in lens {
            for offset in 0..8 {
                let data = &bytes[offset..offset + len];
                let prefix = MainDataHeader::new(len);
                let want = crc32c::crc32c(&[prefix.as_bytes(), data].concat());
                let check = |name: &str, got: u32, out: &[u8], finished: u32| {
                    let what = format!("{name}: {len} bytes at offset {offset}");
                    assert_eq!(got, want, "{what}");
                    assert_eq!(&out[1..=len], data, "{what}: copied");
                    assert_eq!((out[0], out[len + 1]), (0, 0), "{what}: nothing outside");
                    assert_eq!(finished, crc::finish_words(want, &words), "{what}");
                };
                let mut out = vec![0; len + 2];
                let got = AnyCpu.copy_body(&prefix, data, &mut out[1..=len]);
                check("any CPU", got, &out, AnyCpu.finish(got, &words));
                #[cfg(target_arch = "x86_64")]
                if let Some(sse42) = Sse42::detect() {
                    let mut out = vec![0; len + 2];
                    let got = sse42.copy_body(&prefix, data, &mut out[1..=len]);
                    check("SSE4.2", got, &out, sse42.finish(got, &words));
                }
            }
        }
    }
}
