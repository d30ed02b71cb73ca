//! CRC-32C of a record, in PostgreSQL's order: body first, then the header.
//!
//! `xl_crc = crc32c(body ‖ header[0..20])`: the record bytes after the
//! 24-byte header, then header bytes 0..20 (everything before `xl_crc`,
//! including the 2 padding bytes). Page headers in the middle of a
//! multi-page record are not covered: the CRC is over the record put back
//! together.
//!
//! The insert path computes the body part over the body's parts without
//! assembling them ([`parts_crc`]), as it copies them in (before the
//! reservation for a record longer than a page, so that it overlaps other
//! inserters' work), and finishes it once the header is complete
//! ([`finish_record_crc`], or `WalFormat::seal_header`).
//!
//! Every CRC here checks the CPU once per call (`extend`) and goes, part by
//! part, to the `crc-fast` crate for long inputs (`append_long`: carry-less
//! multiplication folds, 512 bits wide on a CPU with AVX-512 VPCLMULQDQ), and
//! for short ones (a record header, the body of a small record) to the CPU's
//! CRC-32C instruction run inline over 8 bytes at a time. A run of small
//! records checks the CPU once and gets each record's CRC, computed as its
//! body is copied, from instructions inlined into its loop
//! (`format::record_crc`). The crate's setup for long inputs (choosing its
//! kernel, splitting off unaligned ends) costs more than the CRC of a few
//! dozen bytes, and a batch of small records computes two such CRCs per
//! record.

use super::header_words::HeaderWords;
use super::little_endian::fixed_field;
use super::record::{
    RecordHeader, RECORD_HEADER_SIZE, XL_CRC, XL_INFO, XL_PREV, XL_TOT_LEN, XL_XID,
};

/// Inputs at least this long go to [`append_long`]; shorter ones to one
/// inline stream of CRC instructions, which costs less than the crate's
/// setup (choosing its kernel, splitting off unaligned ends).
pub(super) const SHORT_INPUT: usize = 768;

/// `crc` extended over `bytes` by the `crc-fast` crate (CRC-32/ISCSI, which
/// is CRC-32C): what every input of at least [`SHORT_INPUT`] bytes goes to,
/// and every input on a CPU without SSE4.2. Measured on the project's
/// 2-vCPU AMD EPYC host (AVX-512 VPCLMULQDQ), a 1 MiB input, cached: 58 GB/s
/// against 28 GB/s for the `crc32c` crate's three interleaved streams of
/// CRC instructions (docs/io.md, "The CRC of a large record").
#[inline]
pub(super) fn append_long(crc: u32, bytes: &[u8]) -> u32 {
    // The crate's state is the register before the final inversion, so
    // the CRC so far, inverted, continues it.
    let mut digest =
        crc_fast::Digest::new_with_init_state(crc_fast::CrcAlgorithm::Crc32Iscsi, u64::from(!crc));
    digest.update(bytes);
    // A 32-bit CRC's state and result fit in the low 32 bits.
    digest.finalize() as u32
}

/// `crc` (the CRC-32C of some bytes) extended over `bytes`: equal to
/// `crc32c::crc32c_append`, and faster for inputs of a few dozen bytes.
#[inline]
pub fn append(crc: u32, bytes: &[u8]) -> u32 {
    extend(crc, &[bytes])
}

/// `crc` extended over each of `parts` in order, checking the CPU once.
#[inline]
fn extend(crc: u32, parts: &[&[u8]]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE4.2, checked just above.
        return unsafe { extend_sse42(crc, parts) };
    }
    parts.iter().fold(crc, |crc, part| append_long(crc, part))
}

/// [`extend`] on a CPU with SSE4.2, part by part ([`append_part_sse42`]).
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
fn extend_sse42(crc: u32, parts: &[&[u8]]) -> u32 {
    let mut crc = crc;
    for part in parts {
        crc = append_part_sse42(crc, part);
    }
    crc
}

/// [`append`] on a CPU with SSE4.2: a short part inline
/// ([`append_sse42`]), a long one through [`append_long`].
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
pub(super) fn append_part_sse42(crc: u32, part: &[u8]) -> u32 {
    if part.len() < SHORT_INPUT {
        append_sse42(crc, part)
    } else {
        append_long(crc, part)
    }
}

/// [`append`] with SSE4.2's CRC-32C instruction, one stream, 8 bytes at a
/// time, then 4, 2 and 1.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
pub(super) fn append_sse42(crc: u32, bytes: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let (words, mut rest) = bytes.as_chunks::<8>();
    let mut c = !crc;
    for w in words {
        // The instruction leaves the upper 32 bits zero.
        c = _mm_crc32_u64(u64::from(c), u64::from_le_bytes(*w)) as u32;
    }
    if let Some((w, tail)) = rest.split_first_chunk::<4>() {
        c = _mm_crc32_u32(c, u32::from_le_bytes(*w));
        rest = tail;
    }
    if let Some((w, tail)) = rest.split_first_chunk::<2>() {
        c = _mm_crc32_u16(c, u16::from_le_bytes(*w));
        rest = tail;
    }
    if let Some(&b) = rest.first() {
        c = _mm_crc32_u8(c, b);
    }
    !c
}

/// The CRC-32C of a record body, the first half of [`record_crc`].
///
/// PostgreSQL: the `COMP_CRC32C` over the rdata chain in `XLogRecordAssemble`.
#[inline]
pub fn body_crc(body: &[u8]) -> u32 {
    append(0, body)
}

/// The CRC-32C of a record body given as consecutive parts (headers and
/// payload slices, in order): equal to [`body_crc`] of their concatenation,
/// without putting them together.
///
/// PostgreSQL: the `COMP_CRC32C` loop over the rdata chain in
/// `XLogRecordAssemble`.
#[inline]
pub fn parts_crc(parts: &[&[u8]]) -> u32 {
    parts.iter().fold(0, |crc, part| append(crc, part))
}

/// Completes a record CRC from [`body_crc`] and the finished header.
///
/// Only `header[0..20]` is used; the `xl_crc` field itself is ignored.
/// PostgreSQL: the final `COMP_CRC32C`/`FIN_CRC32C` in `XLogInsertRecord`.
#[inline]
pub fn finish_record_crc(body_crc: u32, header: &[u8; RECORD_HEADER_SIZE]) -> u32 {
    finish_words(
        body_crc,
        &HeaderWords {
            first: u64::from_le_bytes(fixed_field(header, XL_TOT_LEN.start..XL_XID.end)),
            link: Some(u64::from_le_bytes(fixed_field(header, XL_PREV))),
            last: u32::from_le_bytes(fixed_field(header, XL_INFO.start..XL_CRC.start)),
        },
    )
}

/// [`finish_record_crc`] from the header's covered bytes given as words
/// ([`WalFormat::header_words`](super::WalFormat::header_words), any
/// format): a header built from its fields is CRC'd from registers, not
/// stored and read back.
#[inline]
pub fn finish_words(body_crc: u32, words: &HeaderWords) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: the CPU has SSE4.2, checked just above.
        return unsafe { words_sse42(body_crc, words) };
    }
    let crc = append_long(body_crc, &words.first.to_le_bytes());
    let crc = match words.link {
        Some(link) => append_long(crc, &link.to_le_bytes()),
        None => crc,
    };
    append_long(crc, &words.last.to_le_bytes())
}

/// [`finish_words`] on a CPU with SSE4.2.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "sse4.2")]
pub(super) fn words_sse42(crc: u32, words: &HeaderWords) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u32, _mm_crc32_u64};
    // The instruction leaves the upper 32 bits zero.
    let mut c = _mm_crc32_u64(u64::from(!crc), words.first);
    if let Some(link) = words.link {
        c = _mm_crc32_u64(c, link);
    }
    !_mm_crc32_u32(c as u32, words.last)
}

/// The `xl_crc` of a record with this header and body.
///
/// PostgreSQL: the check in `ValidXLogRecord`.
#[inline]
pub fn record_crc(header: &[u8; RECORD_HEADER_SIZE], body: &[u8]) -> u32 {
    finish_record_crc(body_crc(body), header)
}

/// Sets `header.crc` to the CRC of this header with `body` (the bytes
/// after the header).
pub fn seal(header: &mut RecordHeader, body: &[u8]) {
    header.crc = record_crc(&header.encode(), body);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::record::XL_PADDING;
    use crate::lsn::Lsn;

    /// The record at 0/700028 of the PostgreSQL samples (pgwal-format.md §8).
    const HEADER: [u8; 24] = [
        0x37, 0x00, 0x00, 0x00, 0xd4, 0x02, 0x00, 0x00, 0x18, 0x1b, 0x61, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x15, 0x00, 0x00, 0xd4, 0x6a, 0x90, 0xf9,
    ];
    const BODY: [u8; 31] = [
        0xff, 0x1d, 0x05, 0x00, 0x00, 0x00, 0x01, 0x56, 0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x74, 0x65, 0x73, 0x74,
        0x00,
    ];

    #[test]
    fn check_value_is_crc32c() {
        assert_eq!(body_crc(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn append_is_the_crates_crc_at_every_length_and_alignment() {
        // Lengths on both sides of SHORT_INPUT, every tail of 0..8 bytes,
        // slices starting at every offset modulo 8.
        let bytes: Vec<u8> = (0..SHORT_INPUT as u32 + 80)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        for start in 0..8 {
            for end in start..bytes.len() {
                let part = &bytes[start..end];
                for crc in [0, 0xFFFF_FFFF, 0x1234_5678] {
                    assert_eq!(
                        append(crc, part),
                        crc32c::crc32c_append(crc, part),
                        "bytes {start}..{end} after {crc:#x}"
                    );
                }
            }
        }
    }

    /// The long inputs, through `crc-fast`, against the `crc32c` crate:
    /// lengths from the threshold to past 64 KiB (each kernel's block size
    /// and the ends either side of it), from every offset modulo 64, after
    /// several CRCs so far.
    #[test]
    fn append_long_is_the_crates_crc_for_long_inputs() {
        let bytes: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_246_822_519) >> 11) as u8)
            .collect();
        let mut lengths: Vec<usize> = (SHORT_INPUT..bytes.len() - 64).step_by(997).collect();
        for shift in 8..=16 {
            lengths.extend([(1 << shift) - 1, 1 << shift, (1 << shift) + 1]);
        }
        for &len in &lengths {
            for start in [0, 1, 7, 8, 31, 63] {
                let part = &bytes[start..start + len];
                for crc in [0, 0xFFFF_FFFF, 0x9ABC_DEF0] {
                    assert_eq!(
                        append_long(crc, part),
                        crc32c::crc32c_append(crc, part),
                        "{len} bytes from {start} after {crc:#x}"
                    );
                    assert_eq!(append(crc, part), append_long(crc, part));
                }
            }
        }
    }

    #[test]
    fn worked_example_body_then_header() {
        assert_eq!(record_crc(&HEADER, &BODY), 0xF990_6AD4);
        assert_eq!(
            u32::from_le_bytes(HEADER[XL_CRC].try_into().unwrap()),
            0xF990_6AD4
        );
        assert_eq!(finish_record_crc(body_crc(&BODY), &HEADER), 0xF990_6AD4);
        // Header first would be wrong.
        let mut wrong = HEADER[..XL_CRC.start].to_vec();
        wrong.extend_from_slice(&BODY);
        assert_eq!(crc32c::crc32c(&wrong), 0xE182_8345);
    }

    #[test]
    fn parts_crc_is_the_crc_of_the_concatenation() {
        assert_eq!(parts_crc(&[]), body_crc(&[]));
        for cut in 0..=BODY.len() {
            let (a, b) = BODY.split_at(cut);
            assert_eq!(parts_crc(&[a, b]), body_crc(&BODY), "cut at {cut}");
            assert_eq!(
                parts_crc(&[&[], a, &[], b]),
                body_crc(&BODY),
                "cut at {cut}"
            );
        }
    }

    /// The CRC from a header's words is the CRC over its encoded bytes
    /// before `xl_crc`, in every format, for the sample header and one
    /// with every field's bytes distinct.
    #[test]
    fn header_words_are_the_covered_bytes() {
        use crate::format::WalFormat;
        use crate::lsn::SegmentSize;
        let other = RecordHeader {
            tot_len: 0x0403_0201,
            xid: 0x0807_0605,
            prev: Lsn(0x100F_0E0D_0C0B_0A09),
            info: 0x11,
            rmid: 0x12,
            crc: 0,
        };
        let seg = SegmentSize::new(1 << 20).unwrap();
        let at = Lsn(seg.segment_start(0x1_0203).0 + 0x48);
        for format in WalFormat::ALL {
            for h in [RecordHeader::decode(&HEADER), other] {
                let words = format.header_words(&h, at, seg);
                let mut encoded = [0; RECORD_HEADER_SIZE];
                format.encode_header(&h, at, seg, &mut encoded);
                let covered = &encoded[..format.crc_offset()];
                let body_crc = body_crc(&BODY);
                let want = crc32c::crc32c_append(body_crc, covered);
                assert_eq!(finish_words(body_crc, &words), want, "{format} {h:?}");
            }
        }
    }

    #[test]
    fn crc_field_is_not_covered() {
        let mut other = HEADER;
        other[XL_CRC].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(record_crc(&other, &BODY), record_crc(&HEADER, &BODY));
        other[XL_PADDING.start] = 0x41; // padding is covered
        assert_ne!(record_crc(&other, &BODY), record_crc(&HEADER, &BODY));
    }

    #[test]
    fn seal_matches_a_real_switch_record() {
        // The SWITCH at 0/70E0B8 (pgwal-format.md §9.2).
        let mut h = RecordHeader {
            tot_len: 24,
            xid: 0,
            prev: Lsn(0x70E018),
            info: 0x40,
            rmid: 0,
            crc: 0,
        };
        seal(&mut h, &[]);
        assert_eq!(h.crc, 0xC43F_6B0B);
    }
}
