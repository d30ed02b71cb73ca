//! [`Pending`]: one record ready to be placed (a single insert, a batch's
//! marker, a batch's record that a page boundary cuts), and how one that
//! fits in the rest of its page is written there in one go.
//!
//! A record that fits in its page is written straight into its bytes of
//! the ring as a page run writes each of its records
//! (`page_run::write_record`): padding, body, then its header built from
//! its words, its CRC from the sources. A record that crosses a page is
//! copied part by part (`InsertPath::copy_record`); one too long to fit
//! in any page gets its body's CRC before the reservation, so that
//! computing it overlaps other inserters' work.
//!
//! PostgreSQL: `XLogRecordAssemble` computes the body CRC over the rdata
//! chain before reserving; `CopyXLogRecordToWAL` copies it.

use super::page_run::{reserved_size, write_record, InPage, RunLog};
use crate::format::body::MainDataHeader;
use crate::format::crc;
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::record_crc;
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, USABLE_BYTES_IN_PAGE};
use crate::record::Record;

/// One record of a run, ready to be placed: its header (prev-link still to
/// fill), its body (a main-data header, then the data), and the bytes it
/// takes.
pub(super) struct Pending<'b> {
    pub(super) header: RecordHeader,
    /// Whether the body starts with the main-data header for `data`
    /// (built as the record is written: a copy of it here would be stored
    /// byte by byte and read back whole, which stalls the CPU).
    main_data_header: bool,
    data: &'b [u8],
    /// The body's CRC if computed before the reservation: for a record
    /// too long to fit in any page; `None` for the others, whose CRC is
    /// computed as they are placed.
    body_crc: Option<u32>,
    /// Reserved bytes: the record's length rounded up to 8.
    pub(super) size: u64,
}

/// Bytes of a record's body: the main-data header and the data.
pub(super) fn body_len(rec: &Record) -> usize {
    rec.encoded_len() - RECORD_HEADER_SIZE
}

impl<'b> Pending<'b> {
    /// `rec` (validated) in a `format` log.
    pub(super) fn new(format: WalFormat, rec: &'b Record) -> Self {
        Pending::build(format, rec, true, &rec.data, u64::MAX)
    }

    /// `rec` (validated) in a `format` log; if it is at least
    /// `deferred_from` bytes long, its body's CRC is left to compute after
    /// the reservation ([`Self::crc_deferred`]).
    pub(super) fn deferring_crc(format: WalFormat, rec: &'b Record, deferred_from: u64) -> Self {
        Pending::build(format, rec, true, &rec.data, deferred_from)
    }

    /// A record with `rec`'s header fields (`rec` validated) and the body
    /// `data`, after its main-data header if `main_data_header`, in a
    /// `format` log.
    #[cfg(test)]
    pub(super) fn with_body(
        format: WalFormat,
        rec: &Record,
        main_data_header: bool,
        data: &'b [u8],
    ) -> Self {
        Pending::build(format, rec, main_data_header, data, u64::MAX)
    }

    /// The record (see [`Self::deferring_crc`]): the body's CRC computed
    /// here if the record is too long to fit in any page and shorter than
    /// `deferred_from`.
    #[inline(always)]
    fn build(
        format: WalFormat,
        rec: &Record,
        main_data_header: bool,
        data: &'b [u8],
        deferred_from: u64,
    ) -> Self {
        let prefix = Pending::prefix_for(main_data_header, data);
        let body_len = prefix.as_bytes().len() + data.len();
        let tot_len = format.record_header_size() + body_len;
        // No page holds more record bytes than this.
        let fits_a_page = tot_len as u64 <= USABLE_BYTES_IN_PAGE;
        Pending {
            header: RecordHeader {
                // At most MAX_RECORD_SIZE: `rec` is validated.
                tot_len: tot_len as u32,
                xid: rec.xid,
                prev: Lsn::INVALID,
                info: rec.info,
                rmid: rec.rmid,
                crc: 0,
            },
            main_data_header,
            data,
            body_crc: (!fits_a_page && reserved_size(format, body_len) < deferred_from)
                .then(|| crc::parts_crc(&[prefix.as_bytes(), data])),
            size: reserved_size(format, body_len),
        }
    }

    /// The header `data` starts with in the body: the main-data header,
    /// or none.
    fn prefix_for(main_data_header: bool, data: &[u8]) -> MainDataHeader {
        MainDataHeader::new(if main_data_header { data.len() } else { 0 })
    }

    /// The header the body starts with, before [`Self::data`].
    pub(super) fn prefix(&self) -> MainDataHeader {
        Pending::prefix_for(self.main_data_header, self.data)
    }

    /// The body's bytes after [`Self::prefix`].
    pub(super) fn data(&self) -> &'b [u8] {
        self.data
    }

    /// True if the body's CRC is still to compute although the record
    /// does not fit in any page ([`Self::deferring_crc`]).
    pub(super) fn crc_deferred(&self) -> bool {
        self.body_crc.is_none() && self.size > USABLE_BYTES_IN_PAGE
    }

    /// The body's CRC, from its parts unless computed already.
    pub(super) fn body_crc(&self) -> u32 {
        self.body_crc
            .unwrap_or_else(|| crc::parts_crc(&[self.prefix().as_bytes(), self.data]))
    }

    /// Writes the record with `header` (this record's, its prev-link
    /// filled) into `out`, its reserved bytes at `at` within one page, in
    /// a `format` log over `seg`: header, body and zero padding, every
    /// byte of `out`.
    pub(super) fn write_in_page(
        &self,
        header: &RecordHeader,
        format: WalFormat,
        at: Lsn,
        seg: SegmentSize,
        out: &mut [u8],
    ) {
        debug_assert_eq!(out.len() as u64, self.size);
        let log = RunLog {
            format,
            seg,
            keep_prev: true,
        };
        let prefix = self.prefix();
        let rec = InPage {
            header,
            at,
            prefix: &prefix,
            data: self.data,
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(sse42) = record_crc::Sse42::detect() {
            // SAFETY: an `Sse42` exists only on a CPU with SSE4.2.
            return unsafe { write_record_sse42(sse42, log, rec, out) };
        }
        write_record(record_crc::AnyCpu, log, rec, out);
    }
}

/// [`write_record`] compiled with SSE4.2, so that [`record_crc::Sse42`]'s
/// instructions are inlined into it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn write_record_sse42(sse42: record_crc::Sse42, log: RunLog, rec: InPage, out: &mut [u8]) {
    write_record(sse42, log, rec, out);
}

#[cfg(test)]
mod tests {
    use super::super::page_run::{write_page_run, PageRun, RunPoint};
    use super::super::RecordSpan;
    use super::*;
    use crate::lsn::maxalign;

    /// A record written in its page is the contiguous encoding: its header
    /// fields and link, its body (short and long main-data headers, and
    /// none), a CRC over the body then the header (computed here with the
    /// `crc32c` crate alone), and zero padding, every byte of its
    /// reservation written, in every format.
    #[test]
    fn a_record_written_in_its_page_is_the_contiguous_encoding() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let at = Lsn(seg.segment_start(3).0 + 5 * 8192 + 48);
        let prev = Lsn(seg.segment_start(3).0 + 5 * 8192 + 24);
        for format in WalFormat::ALL {
            for len in [0, 1, 2, 6, 7, 8, 40, 42, 255, 256, 300, 1000, 4000] {
                let data: Vec<u8> = (0..len).map(|i| (i * 7 + len) as u8).collect();
                let rec = Record::new(130, 0x10, &data[..]).with_xid(9);
                let pending = Pending::new(format, &rec);
                let header = RecordHeader {
                    prev,
                    ..pending.header
                };
                let mut out = vec![0xA5; pending.size as usize];
                pending.write_in_page(&header, format, at, seg, &mut out);

                let what = format!("{format}, {len} bytes");
                let mut body = Vec::new();
                rec.encode_body(&mut body);
                let hs = format.record_header_size();
                assert_eq!(
                    out.len() as u64,
                    maxalign((hs + body.len()) as u64),
                    "{what}"
                );
                assert_eq!(&out[hs..hs + body.len()], &body[..], "{what}: body");
                assert!(
                    out[hs + body.len()..].iter().all(|&b| b == 0),
                    "{what}: padding zeroed"
                );
                let (h, link) = format.decode_header(&out).expect("a header");
                assert_eq!(
                    (h.tot_len as usize, h.xid, h.info, h.rmid),
                    (hs + body.len(), 9, 0x10, 130),
                    "{what}"
                );
                assert_eq!(link, format.link(at, prev, seg), "{what}");
                let crc = crc32c::crc32c_append(crc32c::crc32c(&body), &out[..format.crc_offset()]);
                assert_eq!(h.crc, crc, "{what}: CRC");
            }
        }
    }

    /// A page run is each record written alone ([`Pending::write_in_page`],
    /// the single-record path) at the same place with the same link:
    /// same bytes and spans, in every format, with and without
    /// prev-links kept, payloads of every main-data form (none, short,
    /// long), and the run stopping at the first record that does not fit.
    #[test]
    fn a_page_run_is_its_records_written_alone() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let lens = [40, 0, 1, 7, 255, 256, 300, 41, 2, 1000, 66, 3];
        let data: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| (0..len).map(|i| (i * 13 + len) as u8).collect())
            .collect();
        let recs: Vec<Record> = data
            .iter()
            .enumerate()
            .map(|(k, d)| Record::new(130 + k as u8, 0x10, &d[..]).with_xid(k as u32))
            .collect();
        for format in WalFormat::ALL {
            for keep_prev in [true, false] {
                let log = RunLog {
                    format,
                    seg,
                    keep_prev,
                };
                let sizes: Vec<usize> = recs
                    .iter()
                    .map(|r| Pending::new(format, r).size as usize)
                    .collect();
                let total: usize = sizes.iter().sum();
                // Room for all, and room ending inside the 6th record.
                let cut = sizes[..5].iter().sum::<usize>() + sizes[5] - 8;
                for room in [total, cut] {
                    let what = format!("{format}, keep_prev {keep_prev}, room {room}");
                    let start = RunPoint {
                        at: Lsn(seg.segment_start(2).0 + 3 * 8192 + 40),
                        prev: Lsn(seg.segment_start(2).0 + 3 * 8192 + 24),
                    };
                    let mut point = start;
                    let mut out = vec![0xA5; room];
                    let mut spans = Vec::new();
                    let run = PageRun {
                        log,
                        records: &recs,
                        point: &mut point,
                        out: &mut out,
                    };
                    let n = write_page_run(run, &mut |s| spans.push(s));
                    let want_n = if room == total { recs.len() } else { 5 };
                    assert_eq!(n, want_n, "{what}");
                    assert_eq!(spans.len(), n, "{what}");

                    let mut alone = start;
                    let mut expected = vec![0xA5; room];
                    let mut used = 0;
                    for (rec, span) in recs[..n].iter().zip(&spans) {
                        let p = Pending::new(format, rec);
                        let header = RecordHeader {
                            prev: alone.prev,
                            ..p.header
                        };
                        let size = p.size as usize;
                        p.write_in_page(
                            &header,
                            format,
                            alone.at,
                            seg,
                            &mut expected[used..][..size],
                        );
                        let end = Lsn(alone.at.0 + p.size);
                        assert_eq!(
                            *span,
                            RecordSpan {
                                start: alone.at,
                                end
                            },
                            "{what}"
                        );
                        if keep_prev {
                            alone.prev = alone.at;
                        }
                        alone.at = end;
                        used += size;
                    }
                    assert_eq!(point, alone, "{what}: where the run continues");
                    assert_eq!(out, expected, "{what}: bytes, the rest untouched");
                }
            }
        }
    }
}
