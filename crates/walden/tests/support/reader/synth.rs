//! A small synthetic WAL writer built on Walden's format encoders: records
//! placed as PostgreSQL places them (usable byte positions), page headers
//! with continuation flags and `xlp_rem_len`, switch, and a recovery-style
//! overwrite of a missing continuation. Segments live in memory and can be
//! served to the reader through [`MemSource`].

use std::collections::BTreeMap;

use walden::internals::format::body::encode_main_data;
use walden::internals::format::crc::seal;
use walden::internals::format::page::{
    LongPageHeader, PageHeader, PG15_PAGE_MAGIC, XLOG_BLCKSZ, XLP_BKP_REMOVABLE,
    XLP_FIRST_IS_CONTRECORD, XLP_FIRST_IS_OVERWRITE_CONTRECORD, XLP_LONG_HEADER,
};
use walden::internals::format::record::RECORD_HEADER_SIZE;
use walden::internals::{maxalign, PAGE_SIZE};
use walden::message::{switch_record_header, LogicalMessage};
use walden::{Lsn, RecordHeader, SegmentPos, SegmentSize, SegmentSource, SourceError};

/// System identifier written into every long header.
const SYSID: u64 = 0x5A5A_0000_1234_5678;

/// A record as written: where it is and its bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    pub lsn: Lsn,
    pub header: RecordHeader,
    pub body: Vec<u8>,
}

/// WAL being written into in-memory segment files of timeline 1.
pub struct SynthWal {
    pub seg: SegmentSize,
    pub segments: BTreeMap<u64, Vec<u8>>,
    /// Usable byte position of the next record.
    pos: u64,
    prev: Lsn,
    /// The page to flag `XLP_FIRST_IS_OVERWRITE_CONTRECORD` when written.
    overwrite_page: Option<Lsn>,
    pub written: Vec<Written>,
}

impl SynthWal {
    /// Empty WAL whose first record goes at the start of segment `first_segno`.
    pub fn new(seg: SegmentSize, first_segno: u64) -> Self {
        SynthWal {
            seg,
            segments: BTreeMap::new(),
            pos: first_segno * seg.usable_bytes(),
            prev: Lsn::INVALID,
            overwrite_page: None,
            written: Vec::new(),
        }
    }

    /// Where the next record starts.
    pub fn next_lsn(&self) -> Lsn {
        self.seg.pos_to_start_lsn(self.pos)
    }

    fn segment(&mut self, segno: u64) -> &mut Vec<u8> {
        let size = self.seg.bytes() as usize;
        self.segments.entry(segno).or_insert_with(|| vec![0; size])
    }

    /// Writes a page header unless the page has one.
    fn ensure_page_header(&mut self, page: Lsn, contrecord_rem: Option<u32>) {
        let (segno, off) = (self.seg.segno(page), self.seg.offset(page) as usize);
        let seg_bytes = self.seg.bytes() as u32;
        let overwrite = self.overwrite_page == Some(page);
        let bytes = self.segment(segno);
        if bytes[off..off + 2] != [0, 0] {
            return;
        }
        let mut info = XLP_BKP_REMOVABLE;
        let long = (off == 0).then(|| {
            info |= XLP_LONG_HEADER;
            LongPageHeader {
                sysid: SYSID,
                seg_size: seg_bytes,
                xlog_blcksz: XLOG_BLCKSZ,
            }
        });
        if contrecord_rem.is_some() {
            info |= XLP_FIRST_IS_CONTRECORD;
        }
        if overwrite {
            info |= XLP_FIRST_IS_OVERWRITE_CONTRECORD;
        }
        let h = PageHeader {
            magic: PG15_PAGE_MAGIC,
            info,
            tli: 1,
            pageaddr: page,
            rem_len: contrecord_rem.unwrap_or(0),
            long,
        };
        h.encode(&mut bytes[off..]);
    }

    /// Appends a record; returns its LSN.
    pub fn append(&mut self, rmid: u8, info: u8, xid: u32, body: &[u8]) -> Lsn {
        let mut header = RecordHeader {
            tot_len: (RECORD_HEADER_SIZE + body.len()) as u32,
            xid,
            prev: self.prev,
            info,
            rmid,
            crc: 0,
        };
        seal(&mut header, body);
        let mut record = header.encode().to_vec();
        record.extend_from_slice(body);
        let lsn = self.next_lsn();
        let mut done = 0usize;
        while done < record.len() {
            let at = self.seg.pos_to_start_lsn(self.pos + done as u64);
            let page = at.page_start();
            let rem = (done > 0).then(|| (record.len() - done) as u32);
            self.ensure_page_header(page, rem);
            let room = (PAGE_SIZE - at.page_offset()) as usize;
            let n = room.min(record.len() - done);
            let (segno, off) = (self.seg.segno(at), self.seg.offset(at) as usize);
            self.segment(segno)[off..off + n].copy_from_slice(&record[done..done + n]);
            done += n;
        }
        self.pos += maxalign(record.len() as u64);
        self.prev = lsn;
        self.written.push(Written {
            lsn,
            header,
            body: body.to_vec(),
        });
        lsn
    }

    /// Appends a logical message with a payload of `len` bytes.
    pub fn message(&mut self, len: usize) -> Lsn {
        let msg = LogicalMessage {
            db_id: 5,
            transactional: false,
            prefix: b"synth".to_vec(),
            payload: vec![0x73; len],
        };
        let mut main = Vec::new();
        msg.encode(&mut main);
        let mut body = Vec::new();
        encode_main_data(&main, &mut body);
        self.append(21, 0, 0, &body)
    }

    /// Payload length making a message record exactly `tot_len` bytes long.
    fn message_len_for(tot_len: usize) -> usize {
        // 24 header + 24 message struct + "synth\0"; short form up to 255 bytes of main data.
        let fixed = 24 + 24 + 6;
        let short = tot_len - fixed - 2;
        if 24 + 6 + short <= 255 {
            short
        } else {
            tot_len - fixed - 5
        }
    }

    /// Appends a filler message that ends at `page_offset` (up to 8192) of
    /// the current page, or of the next page if that is too close.
    pub fn fill_to(&mut self, page_offset: u64) {
        let next = self.next_lsn();
        let mut target = Lsn(next.page_start().0 + page_offset);
        if target.0 < next.0 + 64 {
            target = Lsn(target.0 + PAGE_SIZE);
        }
        let target_pos = self.seg.lsn_to_pos(target).unwrap();
        let distance = (target_pos - self.seg.lsn_to_pos(next).unwrap()) as usize;
        self.message(SynthWal::message_len_for(distance));
        assert_eq!(
            self.next_lsn(),
            self.seg.pos_to_start_lsn(target_pos),
            "filler of {distance} bytes"
        );
    }

    /// Appends an XLOG_SWITCH; the next record goes to the next segment.
    pub fn switch(&mut self) -> Lsn {
        let prev = self.prev;
        let lsn = self.append(0, 0x40, 0, &[]);
        assert_eq!(
            self.written.last().map(|w| w.header),
            Some(switch_record_header(prev))
        );
        let usable = self.seg.usable_bytes();
        self.pos = self.pos.div_ceil(usable) * usable;
        lsn
    }

    /// Simulates crash recovery that found the record at `aborted`
    /// incomplete: everything from `page` on is erased, and the next record
    /// written starts `page`, which is flagged
    /// `XLP_FIRST_IS_OVERWRITE_CONTRECORD`. `prev` is the last complete record.
    pub fn overwrite_from(&mut self, page: Lsn, prev: Lsn) {
        for (&segno, bytes) in self.segments.iter_mut() {
            let start = self.seg.segment_start(segno).0;
            let from = page.0.saturating_sub(start).min(bytes.len() as u64) as usize;
            bytes[from..].fill(0);
        }
        self.written.retain(|w| w.lsn < page && w.lsn <= prev);
        self.pos = self.seg.lsn_to_pos(page).unwrap();
        self.prev = prev;
        self.overwrite_page = Some(page);
    }

    /// A reader source over these segments.
    pub fn source(&self) -> MemSource {
        MemSource {
            seg: self.seg,
            segments: self.segments.clone(),
        }
    }
}

/// In-memory segments of timeline 1, served to the reader.
pub struct MemSource {
    pub seg: SegmentSize,
    pub segments: BTreeMap<u64, Vec<u8>>,
}

impl SegmentSource for MemSource {
    fn segment_size(&self) -> SegmentSize {
        self.seg
    }

    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError> {
        let SegmentPos { tli, segno, offset } = at;
        let bytes = match self.segments.get(&segno) {
            Some(b) if tli == 1 => b,
            _ => {
                return Err(SourceError::Missing {
                    name: self.seg.file_name(tli, segno),
                })
            }
        };
        let from = (offset as usize).min(bytes.len());
        let n = buf.len().min(bytes.len() - from);
        buf[..n].copy_from_slice(&bytes[from..from + n]);
        Ok(n)
    }
}

/// WAL from segment 1 with every placement edge case, and the edge records:
/// headers split 16/8 and 8/16 (records at page offsets 8176 and 8184), the
/// record after one ending exactly at a page end, a record spanning three
/// segments, a switch, and the record after it.
pub fn edge_case_wal(seg: SegmentSize) -> (SynthWal, Vec<Lsn>) {
    let mut w = SynthWal::new(seg, 1);
    let mut edges = Vec::new();
    for len in [0, 1, 100, 225, 226, 5000] {
        w.message(len);
    }
    for offset in [8176, 8184, 8192] {
        w.fill_to(offset);
        edges.push(w.message(100));
    }
    edges.push(w.message(2_200_000));
    w.message(7);
    edges.push(w.switch());
    edges.push(w.message(3));
    (w, edges)
}
