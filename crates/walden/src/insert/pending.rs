//! [`Pending`]: one record of a run, ready to be placed, and how a record
//! that fits in the rest of its page is written there in one go.
//!
//! A record that fits in its page (every record of a batch of small ones
//! but those a page boundary cuts) is written straight into its bytes of
//! the ring, padding first, then its body, and its CRC is computed over
//! the body where it now lies, contiguous, rather than over the parts it
//! was copied from: one CRC call per part of a record costs more than the
//! CRC itself for records of tens of bytes. A record that crosses a page
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
    prefix: MainDataHeader,
    data: &'b [u8],
    /// The body's CRC, computed before the reservation for a record too
    /// long to fit in any page; `None` for the others, whose CRC is
    /// computed as they are placed.
    body_crc: Option<u32>,
    /// Reserved bytes: the record's length rounded up to 8.
    pub(super) size: u64,
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
        Pending::with_body(format, rec, rec.body_header(), &rec.data)
    }

    /// A record with `rec`'s header fields (`rec` validated) and the body
    /// `prefix` then `data`, in a `format` log.
    pub(super) fn with_body(
        format: WalFormat,
        rec: &Record,
        prefix: MainDataHeader,
        data: &'b [u8],
    ) -> Self {
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
            prefix,
            data,
            body_crc: (!fits_a_page).then(|| crc::parts_crc(&[prefix.as_bytes(), data])),
            size: reserved_size(format, body_len),
        }
    }

    /// The body's parts, in order.
    pub(super) fn body(&self) -> [&[u8]; 2] {
        [self.prefix.as_bytes(), self.data]
    }

    /// The body's CRC, from its parts unless computed already.
    pub(super) fn body_crc(&self) -> u32 {
        self.body_crc
            .unwrap_or_else(|| crc::parts_crc(&self.body()))
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
        let prefix = self.prefix.as_bytes();
        let (body_prefix, body_data) = body.split_at_mut(prefix.len());
        body_prefix.copy_from_slice(prefix);
        body_data[..self.data.len()].copy_from_slice(self.data);
        let body_len = prefix.len() + self.data.len();
        let body_crc = self
            .body_crc
            .unwrap_or_else(|| crc::body_crc(&body[..body_len]));
        format.seal_header(header, at, seg, body_crc, head);
    }
}
