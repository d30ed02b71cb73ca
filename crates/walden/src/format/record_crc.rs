//! [`RecordCrc`]: a small record's CRC computed as its body is copied, the
//! CPU checked once for a whole run of records.
//!
//! A run of records is written by code generic over [`RecordCrc`]: with
//! [`Sse42`], called from a function compiled with the feature
//! (`#[target_feature(enable = "sse4.2")]`), every CRC instruction is
//! inlined into the run's loop, and a short payload is copied and CRC'd
//! in one pass, each word loaded once (no call to `memcpy`). The
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
        unsafe {
            let state = prefix_state(prefix);
            if data.len() < crc::SHORT_INPUT {
                !copy_crc_short(state, data, out)
            } else {
                out.copy_from_slice(data);
                crc::append_part_sse42(!state, data)
            }
        }
    }

    #[inline(always)]
    fn finish(self, body_crc: u32, words: &HeaderWords) -> u32 {
        // SAFETY: an `Sse42` exists only on a CPU with SSE4.2 (`detect`).
        unsafe { crc::words_sse42(body_crc, words) }
    }
}

// The helpers below are `#[inline(always)]` rather than compiled with
// `#[target_feature]`: a function with the feature is a call the compiler
// may keep out of line (it did, for a copy and CRC per record), while
// these are inlined into their caller, which has the feature
// (`page_run`'s loop, `Pending::write_in_page`), and so are the CRC
// instructions they use. Called from code without the feature, each CRC
// instruction would be a call: callers must have it.

/// The CRC state (not inverted) after a main-data header, from its word:
/// bytes stored one by one and read back as a whole would stall on the
/// stores.
///
/// # Safety
/// The CPU has SSE4.2, and the caller is compiled with it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn prefix_state(prefix: &MainDataHeader) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u8};
    let word = prefix.word();
    // SAFETY: the CPU has SSE4.2 (this function's contract).
    unsafe {
        // None, the short form (2 bytes) or the long one (5: one byte then 4).
        match prefix.as_bytes().len() {
            0 => !0,
            2 => _mm_crc32_u16(!0, word as u16),
            _ => _mm_crc32_u32(_mm_crc32_u8(!0, word as u8), (word >> 8) as u32),
        }
    }
}

/// Copies `src` into `dst` (of the same length: a caller bug otherwise)
/// and returns the CRC state `state` (not inverted) extended over it: each
/// 8-byte word loaded once, stored and CRC'd from the register, then 4, 2
/// and 1 bytes. For short inputs: one chain of CRC instructions.
///
/// # Safety
/// The CPU has SSE4.2, and the caller is compiled with it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_crc_short(mut state: u32, src: &[u8], dst: &mut [u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    debug_assert_eq!(dst.len(), src.len());
    let dst = &mut dst[..src.len()];
    let (words, mut src) = src.as_chunks::<8>();
    let (dst_words, mut dst) = dst.as_chunks_mut::<8>();
    // SAFETY: the CPU has SSE4.2 (this function's contract).
    unsafe {
        for (d, w) in dst_words.iter_mut().zip(words) {
            let word = u64::from_le_bytes(*w);
            *d = word.to_le_bytes();
            // The instruction leaves the upper 32 bits zero.
            state = _mm_crc32_u64(u64::from(state), word) as u32;
        }
        // `dst` is as long as `src`: each split below is within it.
        if let Some((w, s)) = src.split_first_chunk::<4>() {
            let (d, t) = std::mem::take(&mut dst).split_at_mut(4);
            d.copy_from_slice(w);
            state = _mm_crc32_u32(state, u32::from_le_bytes(*w));
            (src, dst) = (s, t);
        }
        if let Some((w, s)) = src.split_first_chunk::<2>() {
            let (d, t) = std::mem::take(&mut dst).split_at_mut(2);
            d.copy_from_slice(w);
            state = _mm_crc32_u16(state, u16::from_le_bytes(*w));
            (src, dst) = (s, t);
        }
        if let (Some(&b), Some(d)) = (src.first(), dst.first_mut()) {
            *d = b;
            state = _mm_crc32_u8(state, b);
        }
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

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
