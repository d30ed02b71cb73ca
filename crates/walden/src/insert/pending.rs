//! [`Pending`]: one record of a run, ready to be placed, and how a record
//! that fits in the rest of its page is written there in one go.
//!
//! A record that fits in its page (every record of a batch of small ones
//! but those a page boundary cuts) is written straight into its bytes of
//! the ring, padding first, then its body, then its header, sealed in
//! place, with the rest of the record's CRC over the header bytes there. A record that crosses a page
//! is copied part by part (`InsertPath::copy_record`); one too long to
//! fit in any page gets its body's CRC before the reservation, so that
//! computing it overlaps other inserters' work.
//!
//! PostgreSQL: `XLogRecordAssemble` computes the body CRC over the rdata
//! chain before reserving; `CopyXLogRecordToWAL` copies it.

use crate::format::body::MainDataHeader;
use crate::format::crc;
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::WalFormat;
use crate::lsn::{maxalign, Lsn, SegmentSize, USABLE_BYTES_IN_PAGE};
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
    /// too long to fit in any page, and for the records of a batch
    /// ([`pending_run`]); `None` for the others, whose CRC is computed as
    /// they are placed.
    body_crc: Option<u32>,
    /// Reserved bytes: the record's length rounded up to 8.
    pub(super) size: u64,
}

/// How many records of a batch get their body CRCs together, as that many
/// interleaved chains of CRC instructions ([`crc::parts_crc_many`]): 3 keep
/// the CRC unit busy (3 cycles latency, one started per cycle).
const CRC_GROUP: usize = 3;

/// `records` (validated) in a `format` log, one [`Pending`] each, their
/// body CRCs computed [`CRC_GROUP`] records at a time as interleaved
/// chains: the body CRCs do not depend on where the records land.
pub(super) fn pending_run<'b>(
    format: WalFormat,
    records: &'b [Record],
) -> impl Iterator<Item = Pending<'b>> {
    // All the body CRCs first, into one buffer: building each group's
    // records inside a `flat_map` over the groups copied every `Pending`
    // through the stack twice, with stores and loads of different widths
    // (store-forwarding stalls took 40 % of a batch's profile).
    let mut crcs = Vec::with_capacity(records.len());
    for group in records.chunks(CRC_GROUP) {
        let mut bodies: [[&[u8]; 2]; CRC_GROUP] = [[&[]; 2]; CRC_GROUP];
        let mut prefixes = [MainDataHeader::new(0); CRC_GROUP];
        for ((body, prefix), rec) in bodies.iter_mut().zip(&mut prefixes).zip(group) {
            *prefix = Pending::prefix_for(true, &rec.data);
            *body = [prefix.as_bytes(), &rec.data[..]];
        }
        crcs.extend_from_slice(&crc::parts_crc_many(bodies)[..group.len()]);
    }
    records
        .iter()
        .zip(crcs)
        .map(move |(rec, crc)| Pending::build(format, rec, true, &rec.data, Some(crc)))
}

/// Bytes a record of `body_len` body bytes reserves in a `format` log: its
/// length rounded up to 8.
pub(super) fn reserved_size(format: WalFormat, body_len: usize) -> u64 {
    maxalign((format.record_header_size() + body_len) as u64)
}

/// Bytes of a record's body: the main-data header and the data.
pub(super) fn body_len(rec: &Record) -> usize {
    rec.encoded_len() - RECORD_HEADER_SIZE
}

impl<'b> Pending<'b> {
    /// `rec` (validated) in a `format` log.
    pub(super) fn new(format: WalFormat, rec: &'b Record) -> Self {
        Pending::with_body(format, rec, true, &rec.data)
    }

    /// A record with `rec`'s header fields (`rec` validated) and the body
    /// `data`, after its main-data header if `main_data_header`, in a
    /// `format` log.
    pub(super) fn with_body(
        format: WalFormat,
        rec: &Record,
        main_data_header: bool,
        data: &'b [u8],
    ) -> Self {
        Pending::build(format, rec, main_data_header, data, None)
    }

    /// [`Self::with_body`] with the body's CRC if known already: computed
    /// here if not and the record is too long to fit in any page.
    #[inline(always)]
    fn build(
        format: WalFormat,
        rec: &Record,
        main_data_header: bool,
        data: &'b [u8],
        body_crc: Option<u32>,
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
            body_crc: body_crc
                .or_else(|| (!fits_a_page).then(|| crc::parts_crc(&[prefix.as_bytes(), data]))),
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
        // The padding, fewer than 8 bytes, lies in the last 8 (a record
        // takes at least 16): zero them with one store, then copy the
        // record over the rest of them.
        let last8 = out.len() - 8;
        out[last8..].copy_from_slice(&[0; 8]);
        let (head, body) = out.split_at_mut(format.record_header_size());
        let prefix = self.prefix();
        let prefix = prefix.as_bytes();
        let (body_prefix, body_data) = body.split_at_mut(prefix.len());
        let body_data = &mut body_data[..self.data.len()];
        copy_short(body_prefix, prefix);
        copy_short(body_data, self.data);
        // From the sources (unless computed already): reading back bytes
        // just stored in pieces would stall on the stores.
        format.seal_header(header, at, seg, self.body_crc(), head);
    }
}

/// `dst.copy_from_slice(src)` (of equal lengths) without calling libc's
/// `memmove` for up to 64 bytes: two copies of a fixed size that overlap
/// in the middle, which the compiler makes a few loads and stores.
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

    /// A run of records built together, their body CRCs interleaved, is
    /// the same records built one by one: same header, size and body CRC,
    /// for runs of every length around the group size and bodies of
    /// unequal lengths, short and longer than a page.
    #[test]
    fn a_run_built_together_is_the_records_built_alone() {
        let lens = [0, 1, 40, 7, 300, 9000, 64, 2, 41, 1000];
        let data: Vec<Vec<u8>> = lens
            .iter()
            .map(|&len| (0..len).map(|i| (i * 13 + len) as u8).collect())
            .collect();
        let recs: Vec<Record> = data
            .iter()
            .map(|d| Record::new(130, 0x10, &d[..]))
            .collect();
        for format in WalFormat::ALL {
            for n in 0..=recs.len() {
                let run: Vec<Pending> = pending_run(format, &recs[..n]).collect();
                assert_eq!(run.len(), n);
                for (p, rec) in run.iter().zip(&recs) {
                    let alone = Pending::new(format, rec);
                    let what = format!("{format}, run of {n}, {} bytes", rec.data.len());
                    assert_eq!(p.header, alone.header, "{what}");
                    assert_eq!(p.size, alone.size, "{what}");
                    let mut body = Vec::new();
                    rec.encode_body(&mut body);
                    assert_eq!(p.body_crc, Some(crc32c::crc32c(&body)), "{what}");
                    assert_eq!(p.body_crc(), alone.body_crc(), "{what}");
                }
            }
        }
    }

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
}
