//! A page run: the records of a batch that fit whole in the rest of their
//! page, written there in one loop.
//!
//! One page check for the run (`InsertPath::place_run` maps the page once
//! and hands over the reserved bytes up to the page's or the
//! reservation's end), then for each record: its size from its payload's
//! length, its header built in registers, its payload copied from the
//! caller's slice, and its CRC (body, then header words) computed from
//! the same sources, with the CPU checked once per run and the CRC
//! instructions inlined into the loop ([`RecordCrc`]). Nothing is
//! built per record beyond what lands in the ring: no intermediate
//! record, no call per record. The records' CRC chains do not depend on
//! one another, so the CPU overlaps consecutive records'.
//!
//! A record of a batch that a page boundary cuts goes through
//! `InsertPath::copy_record` as a single record does.

use super::RecordSpan;
use crate::format::body::MainDataHeader;
use crate::format::record::RecordHeader;
use crate::format::record_crc::{self, RecordCrc};
use crate::format::WalFormat;
use crate::lsn::{maxalign, Lsn, SegmentSize};
use crate::record::Record;

/// Where a run of records continues: the next record's start and the
/// prev-link it gets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RunPoint {
    /// The next record's first byte.
    pub(super) at: Lsn,
    /// The next record's `xl_prev`.
    pub(super) prev: Lsn,
}

/// The log a run is written into: its format and segment size, and
/// whether each record links to the one before it (`false` when the
/// reservation keeps no prev-links).
#[derive(Clone, Copy, Debug)]
pub(super) struct RunLog {
    pub(super) format: WalFormat,
    pub(super) seg: SegmentSize,
    pub(super) keep_prev: bool,
}

/// A page run to write: the first of `records` (validated) that fit
/// whole in `out`, the reserved bytes from `point.at` on, within one page.
pub(super) struct PageRun<'r, 'b, 'o> {
    pub(super) log: RunLog,
    pub(super) records: &'r [Record<'b>],
    pub(super) point: &'o mut RunPoint,
    pub(super) out: &'o mut [u8],
}

/// Writes `run`'s records that fit, back to back; reports each one's span
/// to `placed` and moves `run.point` past them. Returns how many were
/// written: 0 if the first does not fit.
pub(super) fn write_page_run(run: PageRun, placed: &mut impl FnMut(RecordSpan)) -> usize {
    #[cfg(target_arch = "x86_64")]
    if let Some(sse42) = record_crc::Sse42::detect() {
        // SAFETY: an `Sse42` exists only on a CPU with SSE4.2.
        return unsafe { write_page_run_sse42(sse42, run, placed) };
    }
    write_run_in_format(record_crc::AnyCpu, run, placed)
}

/// [`write_run`] compiled with SSE4.2, so that [`record_crc::Sse42`]'s
/// instructions are inlined into its loop.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn write_page_run_sse42(
    sse42: record_crc::Sse42,
    run: PageRun,
    placed: &mut impl FnMut(RecordSpan),
) -> usize {
    write_run_in_format(sse42, run, placed)
}

/// [`write_run`] with the run's format a constant in each of its three
/// copies, so that the header's size and layout are not chosen per record.
#[inline(always)]
fn write_run_in_format<C: RecordCrc>(
    crc: C,
    run: PageRun,
    placed: &mut impl FnMut(RecordSpan),
) -> usize {
    let in_format = |format| PageRun {
        log: RunLog { format, ..run.log },
        ..run
    };
    match run.log.format {
        WalFormat::Postgres15 => write_run(crc, in_format(WalFormat::Postgres15), placed),
        WalFormat::SelfLsn => write_run(crc, in_format(WalFormat::SelfLsn), placed),
        WalFormat::CompactWalId => write_run(crc, in_format(WalFormat::CompactWalId), placed),
    }
}

/// [`write_page_run`] with CRCs from `crc`.
#[inline(always)]
fn write_run<C: RecordCrc>(
    crc: C,
    PageRun {
        log,
        records,
        point,
        out,
    }: PageRun,
    placed: &mut impl FnMut(RecordSpan),
) -> usize {
    let header_size = log.format.record_header_size();
    // Kept in registers through the loop, written back at its end.
    let RunPoint { mut at, mut prev } = *point;
    let mut used = 0;
    let mut count = 0;
    for rec in records {
        let data = &rec.data[..];
        let prefix = MainDataHeader::new(data.len());
        let body_len = prefix.as_bytes().len() + data.len();
        let size = reserved_size(log.format, body_len) as usize;
        let Some(dst) = out.get_mut(used..used + size) else {
            break;
        };
        let header = RecordHeader {
            // At most MAX_RECORD_SIZE: `rec` is validated.
            tot_len: (header_size + body_len) as u32,
            xid: rec.xid,
            prev,
            info: rec.info,
            rmid: rec.rmid,
            crc: 0,
        };
        let rec = InPage {
            header: &header,
            at,
            prefix: &prefix,
            data,
        };
        write_record(crc, log, rec, dst);
        let end = Lsn(at.0 + size as u64);
        placed(RecordSpan { start: at, end });
        if log.keep_prev {
            prev = at;
        }
        at = end;
        used += size;
        count += 1;
    }
    *point = RunPoint { at, prev };
    count
}

/// A record to write into its reserved bytes within one page: its header
/// (its prev-link filled), where it starts, and its body: `prefix` (a
/// main-data header, or none) then `data`.
pub(super) struct InPage<'a> {
    pub(super) header: &'a RecordHeader,
    pub(super) at: Lsn,
    pub(super) prefix: &'a MainDataHeader,
    pub(super) data: &'a [u8],
}

/// Writes `rec` into `out`, its reserved bytes: header, body and zero
/// padding, every byte of `out`; its CRC from `crc`, over the sources.
#[inline(always)]
pub(super) fn write_record<C: RecordCrc>(crc: C, log: RunLog, rec: InPage, out: &mut [u8]) {
    let InPage {
        header,
        at,
        prefix,
        data,
    } = rec;
    // The padding, fewer than 8 bytes, lies in the last 8 (a record
    // takes at least 16): zero them with one store, then copy the
    // record over the rest of them.
    let last8 = out.len() - 8;
    out[last8..].copy_from_slice(&[0; 8]);
    let (head, body) = out.split_at_mut(log.format.record_header_size());
    let prefix_len = prefix.as_bytes().len();
    if prefix_len > 0 {
        // One store of the header's word, zeros after it: a body with a
        // main-data header has at least one byte of data, so the record
        // takes at least 8 bytes past its header. The data and the
        // padding's zeros go over the rest.
        body[..8].copy_from_slice(&prefix.word().to_le_bytes());
    }
    let body_crc = crc.copy_body(prefix, data, &mut body[prefix_len..][..data.len()]);
    // The header from its words: reading back bytes just stored in
    // pieces would stall on the stores.
    let words = log.format.header_words(header, at, log.seg);
    words.store(crc.finish(body_crc, &words), head);
}

/// Bytes a record of `body_len` body bytes reserves in a `format` log: its
/// length rounded up to 8.
pub(super) fn reserved_size(format: WalFormat, body_len: usize) -> u64 {
    maxalign((format.record_header_size() + body_len) as u64)
}
