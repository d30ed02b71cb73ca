//! The corruption recipes of pgwal-format.md §11, applied to one segment of
//! real WAL: each must stop the reader with the right reason at the right
//! LSN, or (for the changes PostgreSQL ignores) change nothing.
//!
//! [`check_corruptions`] takes a WAL directory and the LSNs it needs, so it
//! runs on the samples and on WAL freshly made by a PostgreSQL server.

use std::path::Path;

use walden::internals::format::crc::record_crc;
use walden::internals::format::page::{PageHeader, XLP_FIRST_IS_CONTRECORD};
use walden::{BodyError, EndOfWalReason, Lsn, ReadError, ReaderOptions, WalReader};

/// A record that continues onto `page`, and the record before it.
#[derive(Clone, Copy, Debug)]
pub struct Crossing {
    /// The record before `record`.
    pub prev: Lsn,
    /// The record that continues onto `page`, the first to touch `page`.
    pub record: Lsn,
    /// The continuation page (not a segment's first page).
    pub page: Lsn,
}

/// The LSNs the recipes need, all in one segment that ends with a SWITCH and
/// whose next segment is not given.
#[derive(Clone, Copy, Debug)]
pub struct CorruptionPoints {
    /// The segment's first byte.
    pub segment_start: Lsn,
    /// The segment's first record; it fits on its page.
    pub first: Lsn,
    /// Two consecutive records on one page; `r1` carries only main data of
    /// at most 254 bytes (body `FF len ...`) and does not cross a page.
    pub r0: Lsn,
    /// See `r0`.
    pub r1: Lsn,
    /// A record continuing onto the segment's second page (`page - 8192` is
    /// the segment's first page).
    pub spanning: Crossing,
    /// A record whose header is split by `page` (it starts at page offset 8176 or 8184).
    pub split_header: Crossing,
    /// A record that ends exactly at a page end.
    pub page_end: Lsn,
    /// The page after it, where the next record starts right after the header.
    pub page_after_end: Lsn,
    /// The SWITCH record that ends the segment.
    pub switch: Lsn,
}

/// How a read of the (changed) segment ended.
#[derive(Debug, PartialEq, Eq)]
struct Outcome {
    records: Vec<Lsn>,
    last_good: Option<Lsn>,
    reason: Option<EndOfWalReason>,
}

fn read_segment(dir: &Path, start: Lsn) -> Outcome {
    let mut reader = WalReader::open(
        dir,
        ReaderOptions {
            start: Some(start),
            ..Default::default()
        },
    )
    .unwrap();
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r.lsn),
            Ok(None) => panic!("no end limit was given"),
            Err(ReadError::EndOfWal { last_good, reason }) => {
                assert_eq!(last_good, reader.last_good());
                return Outcome {
                    records,
                    last_good,
                    reason: Some(reason),
                };
            }
            Err(e) => panic!("unexpected error {e}"),
        }
    }
}

/// The segment's bytes, with helpers addressing them by LSN.
struct Segment {
    bytes: Vec<u8>,
    start: Lsn,
}

impl Segment {
    fn off(&self, lsn: Lsn) -> usize {
        (lsn.0 - self.start.0) as usize
    }

    fn put(&mut self, lsn: Lsn, field: usize, value: &[u8]) {
        let o = self.off(lsn) + field;
        self.bytes[o..o + value.len()].copy_from_slice(value);
    }

    fn page_header(&self, page: Lsn) -> PageHeader {
        PageHeader::decode(&self.bytes[self.off(page)..]).unwrap()
    }

    fn tot_len(&self, rec: Lsn) -> usize {
        let o = self.off(rec);
        u32::from_le_bytes(self.bytes[o..o + 4].try_into().unwrap()) as usize
    }

    /// Recomputes the CRC of a record that lies on one page.
    fn fix_crc(&mut self, rec: Lsn) {
        let (o, len) = (self.off(rec), self.tot_len(rec));
        let header: [u8; 24] = self.bytes[o..o + 24].try_into().unwrap();
        let crc = record_crc(&header, &self.bytes[o + 24..o + len]);
        self.put(rec, 20, &crc.to_le_bytes());
    }
}

/// Applies every recipe to a copy of the segment at `p.segment_start` in
/// `wal_dir`, read alone from its start, and checks the outcome.
pub fn check_corruptions(wal_dir: &Path, p: &CorruptionPoints) {
    let seg_size = WalReader::open(
        wal_dir,
        ReaderOptions {
            start: Some(p.segment_start),
            ..Default::default()
        },
    )
    .unwrap()
    .segment_size();
    let name = seg_size.file_name(1, seg_size.segno(p.segment_start));
    let orig = Segment {
        bytes: std::fs::read(wal_dir.join(&name)).unwrap(),
        start: p.segment_start,
    };
    let run = |change: &dyn Fn(&mut Segment)| -> Outcome {
        let mut seg = Segment {
            bytes: orig.bytes.clone(),
            start: p.segment_start,
        };
        change(&mut seg);
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(&name), &seg.bytes).unwrap();
        read_segment(tmp.path(), p.segment_start)
    };

    // Unchanged: every record up to the switch, then the next segment is missing.
    let base = run(&|_| {});
    let next = seg_size.segment_start(seg_size.segno(p.segment_start) + 1);
    assert_eq!(base.last_good, Some(p.switch));
    assert_eq!(
        base.reason,
        Some(EndOfWalReason::MissingSegment {
            name: seg_size.file_name(1, seg_size.segno(next)),
            segment_start: next
        })
    );
    for lsn in [
        p.first,
        p.r0,
        p.r1,
        p.spanning.prev,
        p.spanning.record,
        p.split_header.record,
        p.page_end,
    ] {
        assert!(base.records.contains(&lsn), "{lsn} is not a record");
    }

    let page_off = |page: Lsn| seg_size.offset(page);
    let stops =
        |what: &str, change: &dyn Fn(&mut Segment), last_good: Lsn, reason: EndOfWalReason| {
            let got = run(change);
            assert_eq!(
                (got.last_good, got.reason.as_ref()),
                (Some(last_good), Some(&reason)),
                "{what}"
            );
            let expected: Vec<Lsn> = base
                .records
                .iter()
                .copied()
                .take_while(|&l| l <= last_good)
                .collect();
            assert_eq!(
                got.records, expected,
                "{what}: the records before the damage"
            );
        };
    let accepted = |what: &str, change: &dyn Fn(&mut Segment)| {
        assert_eq!(run(change), base, "{what} must change nothing");
    };
    let no_first_record = |what: &str, change: &dyn Fn(&mut Segment)| {
        let got = run(change);
        assert!(got.records.is_empty(), "{what}");
        match got.reason {
            Some(EndOfWalReason::NoValidFirstRecord {
                after,
                cause: Some(_),
            }) => assert_eq!(after, p.segment_start, "{what}"),
            other => panic!("{what}: {other:?}"),
        }
    };

    let r1_last_byte = |s: &mut Segment| {
        let o = s.off(p.r1) + s.tot_len(p.r1) - 1;
        s.bytes[o] ^= 0x01;
    };
    stops(
        "flipped body byte",
        &r1_last_byte,
        p.r0,
        EndOfWalReason::BadCrc { at: p.r1 },
    );
    stops(
        "changed prev-link",
        &|s| s.put(p.r1, 8, &p.segment_start.0.to_le_bytes()),
        p.r0,
        EndOfWalReason::BadPrevLink {
            prev: p.segment_start,
            at: p.r1,
        },
    );
    accepted("first record's prev-link 0", &|s| {
        s.put(p.first, 8, &0u64.to_le_bytes());
        s.fix_crc(p.first);
    });
    no_first_record("first record's prev-link in the future", &|s| {
        s.put(p.first, 8, &next.0.to_le_bytes());
        s.fix_crc(p.first);
    });
    no_first_record("first record broken", &|s| {
        let o = s.off(p.first) + s.tot_len(p.first) - 1;
        s.bytes[o] ^= 0x01;
    });

    let sp = p.spanning;
    let sp_header = orig.page_header(sp.page);
    let (segment, offset, page) = (name.clone(), page_off(sp.page), sp.page);
    stops(
        "bad magic",
        &|s| s.put(sp.page, 0, &[0, 0]),
        sp.prev,
        EndOfWalReason::BadMagic {
            magic: 0,
            segment: segment.clone(),
            offset,
            page,
        },
    );
    let stale = Lsn(sp.page.0 - seg_size.bytes());
    stops(
        "wrong pageaddr",
        &|s| s.put(sp.page, 8, &stale.0.to_le_bytes()),
        sp.prev,
        EndOfWalReason::UnexpectedPageAddr {
            pageaddr: stale,
            segment: segment.clone(),
            offset,
            page,
        },
    );
    let cleared = sp_header.info & !XLP_FIRST_IS_CONTRECORD;
    stops(
        "cleared contrecord flag",
        &|s| s.put(sp.page, 2, &cleared.to_le_bytes()),
        sp.prev,
        EndOfWalReason::MissingContrecordFlag { at: sp.record },
    );
    for got in [sp_header.rem_len + 1, 0] {
        stops(
            "wrong rem_len",
            &|s| s.put(sp.page, 16, &got.to_le_bytes()),
            sp.prev,
            EndOfWalReason::BadContrecordLength {
                got,
                expected: sp_header.rem_len,
                at: sp.record,
            },
        );
    }
    let bad_info = sp_header.info | 0x0010;
    stops(
        "bad info bits",
        &|s| s.put(sp.page, 2, &bad_info.to_le_bytes()),
        sp.prev,
        EndOfWalReason::InvalidInfoBits {
            info: bad_info,
            segment: segment.clone(),
            offset,
            page,
        },
    );
    let first_page = Lsn(sp.page.0 - 8192);
    stops(
        "timeline going down",
        &|s| s.put(first_page, 4, &(sp_header.tli + 1).to_le_bytes()),
        sp.prev,
        EndOfWalReason::TimelineOutOfSequence {
            tli: sp_header.tli,
            after: sp_header.tli + 1,
            segment: segment.clone(),
            offset,
            page,
        },
    );
    let cut = page_off(sp.page) as usize + 100;
    let truncated = run(&|s| s.bytes.truncate(cut));
    assert_eq!(truncated.last_good, Some(sp.prev), "truncated segment");
    assert_eq!(
        truncated.reason,
        Some(EndOfWalReason::TruncatedSegment {
            name: segment.clone(),
            offset,
            read: 100,
            wanted: 8192,
            page
        }),
        "truncated segment"
    );

    let split = p.split_header;
    let split_rem = orig.page_header(split.page).rem_len;
    assert!(
        split.page.0 - split.record.0 <= 16,
        "the header of {} is not split",
        split.record
    );
    stops(
        "wrong rem_len after a split header",
        &|s| s.put(split.page, 16, &(split_rem + 1).to_le_bytes()),
        split.prev,
        EndOfWalReason::BadContrecordLength {
            got: split_rem + 1,
            expected: split_rem,
            at: split.record,
        },
    );

    for got in [10u32, 0] {
        stops(
            "tot_len below 24",
            &|s| s.put(p.r1, 0, &got.to_le_bytes()),
            p.r0,
            EndOfWalReason::InvalidRecordLength { at: p.r1, got },
        );
    }
    stops(
        "rmid 50",
        &|s| {
            s.put(p.r1, 17, &[50]);
            s.fix_crc(p.r1);
        },
        p.r0,
        EndOfWalReason::InvalidRmid { rmid: 50, at: p.r1 },
    );
    let r1_body = orig.off(p.r1) + 24;
    assert_eq!(
        orig.bytes[r1_body], 0xFF,
        "{} must carry short main data only",
        p.r1
    );
    let bumped = orig.bytes[r1_body + 1] + 1;
    stops(
        "bad data-short length",
        &|s| {
            s.put(p.r1, 25, &[bumped]);
            s.fix_crc(p.r1);
        },
        p.r0,
        EndOfWalReason::BadBody {
            at: p.r1,
            error: BodyError::InvalidLength,
        },
    );
    for id in [0x40u8, 0x21] {
        stops(
            "bad block id",
            &|s| {
                s.put(p.r1, 24, &[id]);
                s.fix_crc(p.r1);
            },
            p.r0,
            EndOfWalReason::BadBody {
                at: p.r1,
                error: BodyError::InvalidBlockId(id),
            },
        );
    }
    accepted("custom rmid 128", &|s| {
        s.put(p.r1, 17, &[128]);
        s.fix_crc(p.r1);
    });
    accepted("record padding", &|s| {
        s.put(p.r1, 18, b"AB");
        s.fix_crc(p.r1);
    });
    accepted("system identifier", &|s| {
        s.put(p.segment_start, 24, &0x0123_4567_89AB_CDEFu64.to_le_bytes())
    });
    accepted("BKP_REMOVABLE cleared", &|s| {
        let info = s.page_header(sp.page).info & !0x0004;
        s.put(sp.page, 2, &info.to_le_bytes());
    });
    accepted("junk after the switch", &|s| {
        let o = s.off(p.switch) + 24;
        s.bytes[o..].fill(0xA5);
    });

    let zero_page = page_off(p.page_after_end) as usize;
    stops(
        "zeroed page",
        &|s| s.bytes[zero_page..zero_page + 8192].fill(0),
        p.page_end,
        EndOfWalReason::BadMagic {
            magic: 0,
            segment: segment.clone(),
            offset: page_off(p.page_after_end),
            page: p.page_after_end,
        },
    );
    let flagged = orig.page_header(p.page_after_end).info | XLP_FIRST_IS_CONTRECORD;
    let after_header = Lsn(p.page_after_end.0 + 24);
    stops(
        "contrecord flag where a record starts",
        &|s| s.put(p.page_after_end, 2, &flagged.to_le_bytes()),
        p.page_end,
        EndOfWalReason::ContrecordRequested { at: after_header },
    );
}
