//! The end-of-WAL matrix: every bad record or page header PostgreSQL's own
//! end-of-WAL test (`src/test/recovery/t/039_end_of_wal.pl`) plants, and
//! three of Walden's (an all-zero next segment, a recycled next segment with
//! valid headers for its old position, a CRC-valid record copied from an
//! older part of the log), each detected by recovery as the end of WAL with
//! the reason and LSN PostgreSQL 15 reports.
//!
//! Each case writes records with the engine on the simulated storage,
//! stops without a clean shutdown, patches bytes at computed offsets (as
//! 039 does with `pack`), recovers and checks where recovery stopped and
//! why; then appends a record, recovers again, and checks the log reads as
//! the old records, then (after any `XLOG_OVERWRITE_CONTRECORD`) the new one
//! exactly where recovery said the log ended.

use crate::support::wal;
use std::path::{Path, PathBuf};

use crate::support::fault::{read_log, small_config, storage, DIR, USER_RMID};
use walden::internals::format::page::{PG15_PAGE_MAGIC, XLP_FIRST_IS_CONTRECORD};
use walden::internals::{maxalign, PAGE_SIZE, SHORT_PAGE_HEADER_SIZE};
use walden::rmgr::XLOG_SWITCH;
use walden::{
    Config, EndOfWalReason, Lsn, ReadError, Record, SegmentPrep, SegmentSize, SimStorage, Wal,
};

/// What the next record position is made to look like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// A whole record header fits on the page before the end.
    Whole,
    /// Only 16 bytes of a record header fit on the page.
    Split,
    /// The end is a segment boundary (after a segment switch).
    SegmentBoundary,
}

/// A planted damage and the reason it must be reported with.
struct Case {
    name: &'static str,
    layout: Layout,
    plant: fn(&mut Damage),
    expect: fn(&Damage) -> EndOfWalReason,
}

/// The log around the end, and the bytes to patch.
struct Damage {
    seg: SegmentSize,
    /// Start of the last record written.
    last: Lsn,
    /// Where the next record would go.
    end: Lsn,
    /// An early record of the log, and its bytes.
    early: (Lsn, Vec<u8>),
    patches: Vec<(Lsn, Vec<u8>)>,
}

impl Damage {
    fn next_page(&self) -> Lsn {
        Lsn(self.end.page_start().0 + PAGE_SIZE)
    }

    fn write(&mut self, at: Lsn, bytes: Vec<u8>) {
        self.patches.push((at, bytes));
    }

    fn segment_name(&self, page: Lsn) -> String {
        self.seg.file_name(1, self.seg.segno(page))
    }
}

/// A record header as PostgreSQL's `build_record_header` packs it.
fn record_header(tot_len: u32, xid: u32, prev: u64) -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&tot_len.to_le_bytes());
    h.extend_from_slice(&xid.to_le_bytes());
    h.extend_from_slice(&prev.to_le_bytes());
    h.extend_from_slice(&[0, 0, 0, 0]); // info, rmid (XLOG), padding
    h.extend_from_slice(&0u32.to_le_bytes()); // crc
    h
}

/// A short page header as PostgreSQL's `build_page_header` packs it.
fn page_header(magic: u16, info: u16, tli: u32, pageaddr: u64, rem_len: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(24);
    h.extend_from_slice(&magic.to_le_bytes());
    h.extend_from_slice(&info.to_le_bytes());
    h.extend_from_slice(&tli.to_le_bytes());
    h.extend_from_slice(&pageaddr.to_le_bytes());
    h.extend_from_slice(&rem_len.to_le_bytes());
    h.extend_from_slice(&[0; 4]);
    h
}

const HUGE: u32 = 2 * 1024 * 1024 * 1024;

/// `xlp_rem_len` planted by the `xlp_rem_len bad` cases.
const BAD_REM_LEN: u32 = 123_456;

/// Bytes of a record starting at `end` that fit on its page.
fn on_first_page(d: &Damage) -> u32 {
    (PAGE_SIZE - d.end.page_offset()) as u32
}

/// Plants at the end a record header claiming [`HUGE`] bytes, so that the
/// record goes on to the next page.
fn huge_record(d: &mut Damage, xid: u32, prev: u64) {
    d.write(d.end, record_header(HUGE, xid, prev));
}

/// Plants a short page header at the start of the next page;
/// `pageaddr: None` is the page's own (correct) address.
fn next_page_header(d: &mut Damage, info: u16, pageaddr: Option<u64>, rem_len: u32) {
    let page = d.next_page();
    let header = page_header(
        PG15_PAGE_MAGIC,
        info,
        1,
        pageaddr.unwrap_or(page.0),
        rem_len,
    );
    d.write(page, header);
}

/// A bad `xlp_magic` on the next page.
fn bad_magic(d: &Damage, magic: u16) -> EndOfWalReason {
    let page = d.next_page();
    EndOfWalReason::BadMagic {
        magic,
        segment: d.segment_name(page),
        offset: d.seg.offset(page),
        page,
    }
}

/// A bad `xlp_pageaddr` on the next page.
fn bad_pageaddr(d: &Damage, pageaddr: u64) -> EndOfWalReason {
    let page = d.next_page();
    EndOfWalReason::UnexpectedPageAddr {
        pageaddr: Lsn(pageaddr),
        segment: d.segment_name(page),
        offset: d.seg.offset(page),
        page,
    }
}

/// The next page's [`BAD_REM_LEN`] for the [`HUGE`] record at the end.
fn bad_rem_len(d: &Damage) -> EndOfWalReason {
    EndOfWalReason::BadContrecordLength {
        got: BAD_REM_LEN,
        expected: HUGE - on_first_page(d),
        at: d.end,
    }
}

fn cases() -> Vec<Case> {
    vec![
        // Single-page end-of-WAL detection.
        Case {
            name: "xl_tot_len zero",
            layout: Layout::Whole,
            plant: |_| {},
            expect: |d| EndOfWalReason::InvalidRecordLength { at: d.end, got: 0 },
        },
        Case {
            name: "xl_tot_len short",
            layout: Layout::Whole,
            plant: |d| d.write(d.end, record_header(23, 0, 0)),
            expect: |d| EndOfWalReason::InvalidRecordLength { at: d.end, got: 23 },
        },
        Case {
            name: "xl_prev bad",
            layout: Layout::Whole,
            plant: |d| huge_record(d, 0, 0xDEAD_BEEF),
            expect: |d| EndOfWalReason::BadPrevLink {
                prev: Lsn(0xDEAD_BEEF),
                at: d.end,
            },
        },
        Case {
            name: "xl_crc bad",
            layout: Layout::Whole,
            plant: |d| d.write(Lsn(d.end.0 - 8), b"!".to_vec()),
            expect: |d| EndOfWalReason::BadCrc { at: d.last },
        },
        // Multi-page end-of-WAL detection, header not split.
        Case {
            name: "xlp_magic zero",
            layout: Layout::Whole,
            plant: |d| huge_record(d, 0, d.last.0),
            expect: |d| bad_magic(d, 0),
        },
        Case {
            name: "xlp_magic bad",
            layout: Layout::Whole,
            plant: |d| {
                huge_record(d, 0, d.last.0);
                d.write(d.next_page(), page_header(0xCAFE, 0, 1, 0, 0));
            },
            expect: |d| bad_magic(d, 0xCAFE),
        },
        Case {
            name: "xlp_pageaddr bad",
            layout: Layout::Whole,
            plant: |d| {
                huge_record(d, 0, d.last.0);
                next_page_header(d, 0, Some(0xBAAA_AAAD), 0);
            },
            expect: |d| bad_pageaddr(d, 0xBAAA_AAAD),
        },
        Case {
            name: "xlp_info bad",
            layout: Layout::Whole,
            plant: |d| {
                huge_record(d, 42, d.last.0);
                next_page_header(d, 0x1234, None, 0);
            },
            expect: |d| {
                let page = d.next_page();
                EndOfWalReason::InvalidInfoBits {
                    info: 0x1234,
                    segment: d.segment_name(page),
                    offset: d.seg.offset(page),
                    page,
                }
            },
        },
        Case {
            name: "xlp_info lacks XLP_FIRST_IS_CONTRECORD",
            layout: Layout::Whole,
            plant: |d| {
                huge_record(d, 42, d.last.0);
                next_page_header(d, 0, None, 0);
            },
            expect: |d| EndOfWalReason::MissingContrecordFlag { at: d.end },
        },
        Case {
            name: "xlp_rem_len bad",
            layout: Layout::Whole,
            plant: |d| {
                huge_record(d, 42, d.last.0);
                next_page_header(d, XLP_FIRST_IS_CONTRECORD, None, BAD_REM_LEN);
            },
            expect: bad_rem_len,
        },
        // Multi-page, header split: the page checks come first.
        Case {
            name: "xlp_magic zero (split record header)",
            layout: Layout::Split,
            plant: |d| huge_record(d, 0, 0xDEAD_BEEF),
            expect: |d| bad_magic(d, 0),
        },
        Case {
            name: "xlp_pageaddr bad (split record header)",
            layout: Layout::Split,
            plant: |d| {
                huge_record(d, 0, 0xDEAD_BEEF);
                next_page_header(d, XLP_FIRST_IS_CONTRECORD, Some(0xBAAA_AAAD), 0);
            },
            expect: |d| bad_pageaddr(d, 0xBAAA_AAAD),
        },
        Case {
            name: "xlp_rem_len bad (split record header)",
            layout: Layout::Split,
            plant: |d| {
                huge_record(d, 0, 0xDEAD_BEEF);
                next_page_header(d, XLP_FIRST_IS_CONTRECORD, None, BAD_REM_LEN);
            },
            expect: bad_rem_len,
        },
        // Walden's additions.
        Case {
            name: "all-zero next segment",
            layout: Layout::SegmentBoundary,
            plant: |d| d.write(d.end, vec![0; PAGE_SIZE as usize]),
            expect: |d| EndOfWalReason::BadMagic {
                magic: 0,
                segment: d.segment_name(d.end),
                offset: 0,
                page: d.end.page_start(),
            },
        },
        Case {
            name: "recycled next segment (valid headers, old pageaddr)",
            layout: Layout::SegmentBoundary,
            plant: |d| {
                // The first page of an older segment, as recycling leaves it.
                let old = d.early.0.page_start();
                let mut page = d.early.1.clone();
                page.truncate(PAGE_SIZE as usize);
                d.write(d.end.page_start(), page);
                assert_eq!(d.seg.offset(old), 0);
            },
            expect: |d| EndOfWalReason::UnexpectedPageAddr {
                pageaddr: d.early.0.page_start(),
                segment: d.segment_name(d.end),
                offset: 0,
                page: d.end.page_start(),
            },
        },
        Case {
            name: "CRC-valid record of an older cycle (xl_prev points back)",
            layout: Layout::Whole,
            plant: |d| {
                let (lsn, bytes) = d.early.clone();
                let at = lsn.page_offset() as usize;
                let tot = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
                d.write(d.end, bytes[at..at + tot].to_vec());
            },
            expect: |d| {
                let (lsn, bytes) = &d.early;
                let at = lsn.page_offset() as usize + 8;
                let prev = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap());
                EndOfWalReason::BadPrevLink {
                    prev: Lsn(prev),
                    at: d.end,
                }
            },
        },
    ]
}

fn config() -> Config {
    small_config(16)
}

fn segment_path(seg: SegmentSize, lsn: Lsn) -> PathBuf {
    Path::new(DIR).join(seg.file_name(1, seg.segno(lsn)))
}

/// Writes a log laid out as `layout`, crashes it, and returns the disk and
/// the log's end.
fn build(layout: Layout, config: &Config) -> (SimStorage, Damage) {
    let sim = SimStorage::new(1);
    let seg = SegmentSize::new(config.segment_size).unwrap();
    let wal = Wal::create_with_storage(DIR, config.clone(), storage(&sim)).unwrap();
    for i in 0..40u8 {
        wal.insert(&Record::new(
            USER_RMID,
            0,
            vec![i; 100 + 50 * usize::from(i)],
        ))
        .unwrap();
    }
    let first = seg.segment_start(1);
    let early_lsn = Lsn(first.0 + seg.page_header_size(first));
    let last = match layout {
        Layout::Whole => {
            // The last record ends mid-page, a header's length from the end.
            wal::insert_at_page_offset(&wal, seg, USER_RMID, 4000, 10)
        }
        Layout::Split => {
            // The next record would start 16 bytes before the page end.
            wal::insert_at_page_offset(&wal, seg, USER_RMID, PAGE_SIZE - 16 - 24, 0)
        }
        Layout::SegmentBoundary => {
            let span = wal.switch_segment().unwrap().unwrap();
            // The next segment exists and is all zeros.
            let next = seg.segment_start(seg.segno(span.end));
            assert_eq!(span.end, next);
            span
        }
    };
    let end = wal.insert_position();
    if layout == Layout::SegmentBoundary {
        // Past the next segment's long header.
        assert_eq!(seg.offset(end), seg.page_header_size(end));
    }
    let end = if layout == Layout::SegmentBoundary {
        Lsn(end.0 - seg.page_header_size(end))
    } else {
        end
    };
    wal.flush(last.end).unwrap();
    drop(wal);
    let early_bytes =
        sim.contents(&segment_path(seg, early_lsn)).unwrap()[..PAGE_SIZE as usize].to_vec();
    let damage = Damage {
        seg,
        last: last.start,
        end,
        early: (early_lsn, early_bytes),
        patches: Vec::new(),
    };
    (sim, damage)
}

fn apply(sim: &SimStorage, d: &Damage) {
    for (at, bytes) in &d.patches {
        let path = segment_path(d.seg, *at);
        let mut data = sim
            .contents(&path)
            .unwrap_or_else(|| vec![0; d.seg.bytes() as usize]);
        let off = d.seg.offset(*at) as usize;
        data[off..off + bytes.len()].copy_from_slice(bytes);
        sim.set_contents(&path, &data).unwrap();
    }
}

#[test]
fn every_planted_bad_header_is_the_end_of_wal_with_the_right_reason() {
    let mut passed = 0;
    for case in cases() {
        check(&case, &config());
        passed += 1;
    }
    assert_eq!(passed, 16);
}

/// Segments prepared with the page headers written ahead: a page holding
/// only its prepared header ends the WAL where it ends, with the reason
/// PostgreSQL gives, and is never taken for WAL nor for an end elsewhere.
#[test]
fn page_headers_written_ahead_end_the_wal_where_it_ends() {
    let config = Config {
        segment_prep: SegmentPrep::PageHeaders,
        ..config()
    };
    // The page after the end holds the prepared header, and nothing else.
    let (sim, d) = build(Layout::Whole, &config);
    let data = sim.contents(&segment_path(d.seg, d.end)).unwrap();
    let at = d.seg.offset(d.next_page()) as usize;
    assert_eq!(data[at..at + 2], PG15_PAGE_MAGIC.to_le_bytes());
    assert_eq!(data[at + 8..at + 16], d.next_page().0.to_le_bytes());
    assert!(data[at + 24..at + PAGE_SIZE as usize]
        .iter()
        .all(|&b| b == 0));
    let cases = [
        Case {
            name: "xl_tot_len zero before a prepared page",
            layout: Layout::Whole,
            plant: |_| {},
            expect: |d| EndOfWalReason::InvalidRecordLength { at: d.end, got: 0 },
        },
        Case {
            name: "a record going on to a prepared page",
            layout: Layout::Whole,
            plant: |d| huge_record(d, 42, d.last.0),
            expect: |d| EndOfWalReason::MissingContrecordFlag { at: d.end },
        },
        Case {
            name: "a record header split before a prepared page",
            layout: Layout::Split,
            plant: |_| {},
            expect: |d| EndOfWalReason::InvalidRecordLength { at: d.end, got: 0 },
        },
    ];
    for case in &cases {
        check(case, &config);
    }
}

/// Builds the log of `case`, plants its damage, recovers, checks where and
/// why recovery stopped, appends and recovers again.
fn check(case: &Case, config: &Config) {
    let (sim, mut d) = build(case.layout, config);
    (case.plant)(&mut d);
    apply(&sim, &d);
    let reason = (case.expect)(&d);
    let (wal, report) = Wal::open_with_storage(DIR, config.clone(), storage(&sim))
        .unwrap_or_else(|e| panic!("{}: recovery failed: {e}", case.name));
    let expected_stop = ReadError::EndOfWal {
        last_good: report.last_record,
        reason: reason.clone(),
    }
    .to_string();
    assert_eq!(report.stop, expected_stop, "{}: reason", case.name);
    let stopped_at = reason.lsn().unwrap();
    // New WAL goes where recovery stopped: at the bad record, or (a
    // multi-page record abandoned) on the page it was missing.
    let (expected_end, overwritten) = match report.overwritten {
        Some(aborted) => {
            assert_eq!(aborted, d.end, "{}: the abandoned record", case.name);
            (Lsn(d.next_page().0 + SHORT_PAGE_HEADER_SIZE), true)
        }
        None if case.layout == Layout::SegmentBoundary => {
            (Lsn(d.end.0 + d.seg.page_header_size(d.end)), false)
        }
        None => (stopped_at, false),
    };
    assert_eq!(report.end, expected_end, "{}: end of WAL", case.name);
    if stopped_at != d.last {
        assert_eq!(
            report.last_record,
            Some(d.last),
            "{}: last record",
            case.name
        );
    }

    // Append, recover again: old records, then the new one exactly at the end.
    let new = wal
        .insert_span(&Record::new(USER_RMID, 0x10, b"after recovery".to_vec()))
        .unwrap();
    wal.flush(new.end).unwrap();
    drop(wal);
    sim.power_cut();
    sim.restart();
    let (_, again) = Wal::open_with_storage(DIR, config.clone(), storage(&sim)).unwrap();
    let (records, _) = read_log(storage(&sim), DIR, again.redo).unwrap();
    // After the unclean shutdown a switch record ends the segment.
    let after: Vec<_> = records
        .iter()
        .filter(|r| r.lsn >= report.end && (r.header.rmid, r.header.info) != (0, XLOG_SWITCH))
        .collect();
    let first_new = if overwritten {
        after.get(1)
    } else {
        after.first()
    };
    let first_new = first_new.unwrap_or_else(|| panic!("{}: new record missing", case.name));
    assert_eq!(first_new.lsn, new.start, "{}", case.name);
    // New WAL starts in a segment no earlier incarnation wrote: the one
    // after the end, or the end's own if the end is where it starts.
    let end_seg = d.seg.segment_start(d.seg.segno(report.end));
    let fresh = if report.end.0 == end_seg.0 + d.seg.page_header_size(end_seg) {
        report.end
    } else {
        let next = Lsn(end_seg.0 + d.seg.bytes());
        Lsn(next.0 + d.seg.page_header_size(next))
    };
    assert_eq!(
        new.start, fresh,
        "{}: new WAL starts a fresh segment",
        case.name
    );
    assert_eq!(
        first_new.decode_body().unwrap().main_data,
        b"after recovery"
    );
    assert_eq!(Lsn(maxalign(first_new.end.0)), new.end);
    assert!(
        records
            .iter()
            .all(|r| r.lsn < report.end || r.lsn >= new.start || r.header.rmid == 0),
        "{}: nothing stale between the old end and the new record",
        case.name
    );
}
