//! The insert path copies a record as parts (sealed header, body header,
//! the caller's data) straight into the ring; the log it writes must be
//! byte-identical to the one the contiguous encoding
//! ([`InsertPath::insert_contiguous`], the encoder it replaced) writes, in
//! every format and reservation design, for records that end or split at
//! every kind of place: empty, one byte, short and long main-data headers,
//! a record header split by a page boundary, a record ending at a page
//! end, several pages, more than a segment, and a switch.

use std::path::Path;
use std::sync::Arc;

use super::parts::Parts;
use super::pending::Pending;
use super::slots::InsertionProgress;
use super::{Caller, InsertPath, RecordSpan, StartPoint, HELPER_REST_RECORDS};
use crate::buffer::{BufferRing, PageIdentity, PageZeroing};
use crate::config::{Config, ReservationKind};
use crate::error::Error;
use crate::format::body::main_data_header_len;
use crate::format::message::BatchMarker;
use crate::format::rmgr::{RM_XLOG_ID, XLOG_NOOP};
use crate::format::WalFormat;
use crate::lsn::{maxalign, Lsn, SegmentSize, PAGE_SIZE};
use crate::read::{ReaderOptions, WalReader};
use crate::record::{Batch, Record};
use crate::segment::{FsStorage, SegmentFiles};
use crate::write::background::Wakeup;
use crate::write::SegmentSupply;

const RMID: u8 = 140;

/// An insert path over a fresh log in `dir`, starting at segment 1, with
/// a fixed system identifier so that two logs can be compared bytewise.
fn insert_path(dir: &Path, config: &Config) -> InsertPath {
    insert_path_over(dir, config, |ring| ring)
}

/// [`insert_path`] over the log's ring as `ring` changes it.
fn insert_path_over(
    dir: &Path,
    config: &Config,
    ring: impl FnOnce(BufferRing) -> BufferRing,
) -> InsertPath {
    let seg = config.segment().expect("valid segment size");
    let ring = ring(InsertPath::ring(
        config,
        seg,
        PageIdentity {
            timeline: 1,
            system_id: 0x5741_4C44_454E,
            format: config.format,
        },
    ));
    let files = SegmentFiles::new(Arc::new(FsStorage), dir, seg, 1);
    let start = seg.segment_start(1);
    InsertPath::new(
        config,
        seg,
        ring,
        SegmentSupply::new(files, config.prepare_for(), config.segments_ahead as u64),
        StartPoint {
            next_pos: seg.lsn_to_pos(start).expect("a segment start is usable"),
            prev: Lsn::INVALID,
            initialized_upto: start,
            written: start,
        },
        Arc::new(Wakeup::new(None, start)),
    )
}

/// Data of `len` bytes that differs from record to record.
fn data(len: usize, salt: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 31 + salt * 7 + i / 251) as u8)
        .collect()
}

/// The main-data length of the record starting at `at` whose aligned end
/// is `target`, if there is one.
fn len_ending_at(format: WalFormat, seg: SegmentSize, at: Lsn, target: Lsn) -> Option<usize> {
    let header = format.record_header_size();
    (0..3 * PAGE_SIZE as usize).find(|&len| {
        let tot_len = header + main_data_header_len(len) + len;
        seg.aligned_end(at, tot_len as u64) == Some(target)
    })
}

/// What the test inserts, in order.
enum Step {
    /// A record with this much main data.
    Data(usize),
    /// A filler record so that the next record starts (or, at 0, the
    /// filler ends) at this offset of a page at least 64 bytes ahead.
    PadTo(u64),
    /// An `XLOG_SWITCH`.
    Switch,
}

/// The records and switches of the comparison: every place a record can
/// start, split or end.
fn steps(seg_bytes: usize) -> Vec<Step> {
    let mut steps = vec![
        Step::Data(0),
        Step::Data(1),
        Step::Data(100),
        Step::Data(255),
        Step::Data(256),
    ];
    // Record headers split after 16 and after 8 bytes, one ending at the
    // page end, one whose main-data header starts the next page.
    for offset in [8176, 8184, 0, 8168] {
        steps.extend([Step::PadTo(offset), Step::Data(40), Step::Data(300)]);
    }
    steps.extend([
        Step::Data(3 * PAGE_SIZE as usize + 123),
        Step::Data(seg_bytes + seg_bytes / 2),
        Step::Data(1 << 20),
        Step::Switch,
        Step::Data(7),
        Step::Switch,
        Step::Switch,
        Step::Data(2 * seg_bytes),
        Step::PadTo(8176),
        Step::Data(seg_bytes - 50),
    ]);
    steps
}

/// Runs [`steps`] on a fresh log in `dir`, inserting with `insert`;
/// returns each step's span (the filler's for `PadTo`) and the records
/// inserted, in order.
fn run(
    dir: &Path,
    config: &Config,
    ring: fn(BufferRing) -> BufferRing,
    insert: fn(&InsertPath, &Record) -> Result<RecordSpan, Error>,
) -> (Vec<Option<RecordSpan>>, Vec<Record<'static>>) {
    let path = insert_path_over(dir, config, ring);
    let seg = path.seg;
    let mut spans = Vec::new();
    let mut records = Vec::new();
    for (i, step) in steps(seg.bytes() as usize).into_iter().enumerate() {
        let (len, ends_at) = match step {
            Step::Data(len) => (len, None),
            Step::PadTo(offset) => {
                let at = path.insert_position();
                let page = Lsn((at.0 + 64).next_multiple_of(PAGE_SIZE));
                let target = Lsn(page.0 + offset);
                let len = len_ending_at(config.format, seg, at, target)
                    .or_else(|| len_ending_at(config.format, seg, at, Lsn(target.0 + PAGE_SIZE)))
                    .expect("a filler length reaches any 8-aligned offset");
                (len, Some(offset))
            }
            Step::Switch => {
                spans.push(path.switch().expect("switch"));
                continue;
            }
        };
        let rec = Record::new(RMID, 0x10, data(len, i)).with_xid(i as u32);
        let span = insert(&path, &rec).expect("insert");
        if let Some(offset) = ends_at {
            assert_eq!(span.end.page_offset(), offset, "filler of {len} bytes");
        }
        spans.push(Some(span));
        records.push(rec);
    }
    let end = path.reserved_end();
    assert_eq!(path.flush(end, Caller::Flush).expect("flush"), end);
    (spans, records)
}

/// The segment files up to the one holding `end`.
fn segments(dir: &Path, seg: SegmentSize, end: Lsn) -> Vec<Vec<u8>> {
    (1..=seg.segno(Lsn(end.0 - 1)))
        .map(|segno| std::fs::read(dir.join(seg.file_name(1, segno))).expect("segment file"))
        .collect()
}

/// Asserts that the segment files up to the one holding `end` are the
/// same in `ours` and `reference`, naming the first byte that differs.
fn assert_same_segments(what: &str, ours: &Path, reference: &Path, seg: SegmentSize, end: Lsn) {
    let ours = segments(ours, seg, end);
    let reference = segments(reference, seg, end);
    assert_eq!(ours.len(), reference.len(), "{what}: segments");
    for (n, (a, b)) in ours.iter().zip(&reference).enumerate() {
        if let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) {
            panic!("{what}: segment {} differs at byte {at:#x}", n + 1);
        }
        assert_eq!(a.len(), b.len(), "{what}: segment {} length", n + 1);
    }
}

/// 1 MiB segments and a ring of 32 pages, in `format` with `reservation`.
fn small_config(format: WalFormat, reservation: ReservationKind) -> Config {
    Config {
        format,
        reservation,
        segment_size: 1 << 20,
        buffers: 256 << 10,
        ..Config::default()
    }
}

/// Every format with every reservation design that serves it, over 1 MiB
/// segments and a ring smaller than a record (pages are evicted mid-copy)
/// of 31 pages, not a power of two, so that its slots are found by
/// division (the default ring's by a mask).
fn design_configs() -> Vec<Config> {
    let mut configs = Vec::new();
    for format in WalFormat::ALL {
        for reservation in ReservationKind::ALL {
            let config = Config {
                buffers: 31 * PAGE_SIZE,
                ..small_config(format, reservation)
            };
            if config.validate().is_ok() {
                configs.push(config);
            }
        }
    }
    assert_eq!(configs.len(), 5, "every design with every format it serves");
    configs
}

/// The ring as a log has it, every byte scribbled over first.
fn scribbled(mut ring: BufferRing) -> BufferRing {
    ring.scribble(0xA5);
    ring
}

/// Pages are not zeroed at initialisation (but for the prev-link in the
/// buffer, which needs it): the log written from a ring whose every byte
/// was scribbled over first is byte-identical to the one written by a log
/// configured with [`PageZeroing::WholePage`] (what PostgreSQL does), in
/// every format and design, switches (the zeroed rest of a segment) and
/// records of every alignment included. So no byte written out is one that
/// no header or reservation covered, and the knob's two settings write the
/// same log.
#[test]
fn an_unzeroed_ring_writes_the_same_log_as_a_zeroing_one() {
    for config in design_configs() {
        let zeroing = Config {
            page_zeroing: PageZeroing::WholePage,
            ..config.clone()
        };
        assert_same_log(&config, &zeroing);
    }
}

/// Runs [`steps`] with `config` over a ring scribbled over first and with
/// `reference` over a fresh one, and asserts that both give the same spans
/// and byte-identical segment files.
fn assert_same_log(config: &Config, reference: &Config) {
    let what = format!("{} with {}", config.format, config.reservation);
    let seg = config.segment().expect("valid segment size");
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (spans, _) = run(ours.path(), config, scribbled, InsertPath::insert);
    let (reference_spans, _) = run(theirs.path(), reference, |r| r, InsertPath::insert);
    assert_eq!(spans, reference_spans, "{what}: spans");
    let end = spans.iter().flatten().map(|s| s.end).max().expect("spans");
    assert_same_segments(&what, ours.path(), theirs.path(), seg, end);
}

/// [`Config::page_zeroing`] reaches the ring: with `WholePage`, every byte
/// of an initialised page past what was inserted is zero, although the
/// ring's memory was scribbled over first; with `HeaderOnly` those bytes
/// keep the scribble (the prev-link in the buffer zeroes them either way).
/// The next record's header is left out: the prev-link in the buffer
/// writes the link to this record into it ahead of that record.
#[test]
fn whole_page_zeroing_leaves_zeros_past_what_was_inserted() {
    for reservation in [ReservationKind::Spinlock, ReservationKind::PrevLinkInBuffer] {
        for page_zeroing in PageZeroing::ALL {
            let config = Config {
                page_zeroing,
                ..small_config(WalFormat::Postgres15, reservation)
            };
            let dir = tempfile::tempdir().unwrap();
            let path = insert_path_over(dir.path(), &config, scribbled);
            // Three pages and a bit: the last page is mostly past the record.
            let span = path
                .insert(&Record::new(RMID, 0x10, data(3 * PAGE_SIZE as usize, 1)))
                .unwrap();
            let page_end = Lsn(span.end.page_start().0 + PAGE_SIZE);
            // SAFETY: no other thread; every insertion has finished.
            let next_header = Lsn(span.end.0 + config.format.record_header_size() as u64);
            let rest = unsafe { path.ring.range(next_header, page_end) };
            let want = match config.page_zeroing_in_effect() {
                PageZeroing::WholePage => 0,
                PageZeroing::HeaderOnly => 0xA5,
            };
            assert!(rest.len() > PAGE_SIZE as usize / 2, "{}", rest.len());
            assert!(
                rest.iter().all(|&b| b == want),
                "{reservation}, {page_zeroing}: a byte past the record is not {want:#x}"
            );
        }
    }
}

#[test]
fn parts_write_the_same_log_as_the_contiguous_encoding() {
    for config in design_configs() {
        let seg = config.segment().expect("valid segment size");
        let (parts_dir, whole_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let keep = |ring| ring;
        let (spans, records) = run(parts_dir.path(), &config, keep, InsertPath::insert);
        let (whole_spans, _) = run(
            whole_dir.path(),
            &config,
            keep,
            InsertPath::insert_contiguous,
        );
        let what = format!("{} with {}", config.format, config.reservation);
        assert_eq!(spans, whole_spans, "{what}: spans");
        let end = spans.iter().flatten().map(|s| s.end).max().expect("spans");
        assert_same_segments(&what, parts_dir.path(), whole_dir.path(), seg, end);

        // And the log reads back: CRCs, prev-links, continuation
        // lengths, the data.
        let options = ReaderOptions {
            end: Some(end),
            ..ReaderOptions::default()
        };
        let mut reader =
            WalReader::open(parts_dir.path(), options).unwrap_or_else(|e| panic!("{what}: {e}"));
        let mut read = Vec::new();
        while let Some(r) = reader
            .next_record()
            .unwrap_or_else(|e| panic!("{what}: {e}"))
        {
            if r.header.rmid == RMID {
                let body = r.decode_body().expect("body");
                let rec = Record::new(r.header.rmid, r.header.info, body.main_data);
                read.push(rec.with_xid(r.header.xid));
            }
        }
        assert_eq!(read.len(), records.len(), "{what}: records read back");
        assert!(read == records, "{what}: records read back differ");
    }
}

/// Write-through ([`Config::write_through_from`]) writes the same log as
/// the ring's copy: with it at one page (every record that covers a page
/// whole writes that page straight to the file: records of a few pages,
/// records longer than the 31-page ring, records across segment
/// boundaries, whose first whole page has a long header) and over a ring
/// scribbled over first, the segment files are byte-identical to those
/// written with it off, in every format and design; and the writer counts
/// the bytes written through only when it is on.
#[test]
fn write_through_writes_the_same_log_as_the_rings_copy() {
    for config in design_configs() {
        let what = format!("{} with {}", config.format, config.reservation);
        let through = Config {
            write_through_from: PAGE_SIZE,
            ..config.clone()
        };
        let off = Config {
            write_through_from: 0,
            ..config
        };
        assert_same_log(&through, &off);
        let helper = Config {
            crc_helper: true,
            ..through.clone()
        };
        assert_same_log(&helper, &off);
        // The first large record opens the segment (written through as
        // without the helper), the second has its CRC beside the write.
        let dir = tempfile::tempdir().unwrap();
        let mut path = insert_path(dir.path(), &helper);
        // A CPU to spare for the helper beside this thread, whatever the
        // machine running the test has.
        path.cpus = 2;
        for _ in 0..2 {
            path.insert(&Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0)))
                .expect("insert");
        }
        let stats = path.writer.stats();
        assert!(
            stats.writes_ahead >= 1,
            "{what}: CRC beside the write: {stats:?}"
        );
        // No CPU to spare: the inserter computes the CRC itself.
        path.cpus = 1;
        path.insert(&Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0)))
            .expect("insert");
        assert_eq!(
            path.writer.stats().writes_ahead,
            stats.writes_ahead,
            "{what}: no CPU to spare, no write ahead"
        );
        let counted = |dir: &Path, config: &Config| {
            let path = insert_path(dir, config);
            path.insert(&Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0)))
                .expect("insert");
            path.writer.stats().bytes_by_write_through
        };
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        assert!(
            counted(a.path(), &through) >= 4 * PAGE_SIZE,
            "{what}: written through"
        );
        assert_eq!(
            counted(b.path(), &off),
            0,
            "{what}: nothing written through when off"
        );
    }
}

/// After an inserter finds the CPUs crowded (as many insertions in flight
/// as CPUs), the CRC helper rests: the next [`HELPER_REST_RECORDS`] large
/// records compute their CRC themselves though a CPU is to spare, and the
/// one after them has its CRC beside the write again.
#[test]
fn the_crc_helper_rests_after_the_cpus_were_crowded() {
    let config = Config {
        write_through_from: PAGE_SIZE,
        crc_helper: true,
        ..Config::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut path = insert_path(dir.path(), &config);
    let large = || Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0));
    // One CPU: crowded by this insertion alone (and it opens the segment).
    path.cpus = 1;
    path.insert(&large()).expect("insert");
    path.cpus = 2;
    for _ in 0..HELPER_REST_RECORDS {
        path.insert(&large()).expect("insert");
    }
    assert_eq!(path.writer.stats().writes_ahead, 0, "the helper rests");
    path.insert(&large()).expect("insert");
    assert_eq!(path.writer.stats().writes_ahead, 1, "the rest is over");
}

/// A record written through takes the ring's bytes below its first whole
/// page (an earlier record and its own first bytes, one page here), its
/// whole pages and the page its last bytes end in (from the ring, copied
/// there first) in one write: from that ring page to the end of the
/// record's last page, `written` at the record's end; the flush after it
/// then writes nothing. (That the log is the ring copy's, byte for byte,
/// is `write_through_writes_the_same_log_as_the_rings_copy`.)
#[test]
fn write_through_writes_the_rings_pages_below_and_the_tail_in_the_same_write() {
    let dir = tempfile::tempdir().unwrap();
    let path = insert_path(dir.path(), &through_at_one_page());
    let small = path
        .insert(&Record::new(RMID, 0x10, data(100, 0)))
        .expect("insert");
    let before = path.writer.stats();
    assert_eq!(before.writes, 0, "the small record is not written yet");
    let large = Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0));
    let span = path.insert(&large).expect("insert a large record");
    assert_ne!(span.end.page_offset(), 0, "the record ends inside a page");
    let stats = path.writer.stats();
    assert_eq!(
        stats.writes, 1,
        "one write for the ring's page, the record's pages and its last page: {stats:?}"
    );
    assert_eq!(
        path.writer.written(),
        span.end,
        "written up to the record's end"
    );
    let ring_page = small.start.page_start();
    assert_eq!(
        stats.bytes_written,
        span.end.page_start().0 + PAGE_SIZE - ring_page.0,
        "from the ring's page to the end of the record's last page"
    );
    assert!(stats.bytes_by_write_through >= 4 * PAGE_SIZE, "{stats:?}");
    path.flush(span.end, Caller::Flush).expect("flush");
    assert_eq!(
        path.writer.stats().writes,
        1,
        "the flush wrote nothing more"
    );
}

/// With the CRC beside the write, a record's pages after its first go
/// ahead of the written point with the page its last bytes end in (from
/// the ring, copied there first) in one write, and the flush after the
/// insert writes only the record's first page, sealed with the CRC: two
/// writes a record (before, the flush wrote the first and the last page
/// apart, three). (That the log is the ring copy's, byte for byte, is
/// `write_through_writes_the_same_log_as_the_rings_copy`.)
#[test]
fn the_crc_beside_the_write_writes_the_last_page_ahead_with_the_pages() {
    let config = Config {
        crc_helper: true,
        ..through_at_one_page()
    };
    let dir = tempfile::tempdir().unwrap();
    let mut path = insert_path(dir.path(), &config);
    // A CPU to spare for the helper beside this thread.
    path.cpus = 2;
    let large = Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0));
    // The first large record opens the segment (written through).
    let first = path.insert(&large).expect("insert");
    path.flush(first.end, Caller::Flush).expect("flush");
    let before = path.writer.stats();
    let span = path.insert(&large).expect("insert beside the helper");
    assert_ne!(span.end.page_offset(), 0, "the record ends inside a page");
    let ahead = path.writer.stats();
    assert_eq!(ahead.writes_ahead, before.writes_ahead + 1, "{ahead:?}");
    assert_eq!(
        ahead.writes,
        before.writes + 1,
        "one write ahead: {ahead:?}"
    );
    let pages_from = span.start.page_start().0 + PAGE_SIZE;
    assert_eq!(
        ahead.bytes_written - before.bytes_written,
        span.end.page_start().0 + PAGE_SIZE - pages_from,
        "from the page after the first to the end of the last page"
    );
    path.flush(span.end, Caller::Flush).expect("flush");
    let flushed = path.writer.stats();
    assert_eq!(
        (flushed.writes, flushed.bytes_written),
        (ahead.writes + 1, ahead.bytes_written + PAGE_SIZE),
        "the flush writes the first page alone"
    );
    assert_eq!(path.writer.written(), span.end, "written up to the end");
}

/// A config that writes through every record covering a page whole,
/// choosing slots so that a thread holding one still gets another.
fn through_at_one_page() -> Config {
    Config {
        write_through_from: PAGE_SIZE,
        slot_choice: crate::config::SlotChoice::Attempts(2),
        // A wait for a slot that is never released fails the test.
        stuck_wait_timeout: Some(std::time::Duration::from_secs(5)),
        ..Config::default()
    }
}

/// Beside another insertion in flight below the record (a slot held with
/// nothing advertised): with no more insertions in flight than CPUs, a
/// record that covers pages whole declines and copies them into the ring,
/// so the writer counts nothing written through; with more, it writes them
/// ahead of the written point (`Writer::write_ahead`, outside the write
/// lock, without waiting) where the writer has their segment open. Either
/// way the log is the ring copy's, byte for byte.
#[test]
fn write_through_beside_an_insertion_in_flight_writes_ahead_or_declines() {
    let (ours, theirs) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = through_at_one_page();
    let mut path = insert_path(ours.path(), &config);
    // Two insertions in flight (the held slot and ours), two CPUs.
    path.cpus = 2;
    let stats = || path.writer.stats();
    let record = Record::new(RMID, 0x10, data(5 * PAGE_SIZE as usize, 0));
    let in_flight = path.slots.acquire(config.slot_choice);
    path.insert(&record)
        .expect("insert beside an insertion in flight");
    assert_eq!(
        stats().bytes_by_write_through,
        0,
        "written through into a segment the writer has not opened"
    );
    drop(in_flight);
    let alone = path.insert(&record).expect("insert alone");
    let through = stats().bytes_by_write_through;
    assert!(through >= 4 * PAGE_SIZE, "not written through alone");
    path.flush(alone.end, Caller::Flush).expect("flush");
    // The segment open, still no more in flight than CPUs: declined.
    let in_flight = path.slots.acquire(config.slot_choice);
    let beside = path
        .insert(&record)
        .expect("insert beside an insertion in flight");
    assert_eq!(stats().bytes_by_write_through, through, "{:?}", stats());
    drop(in_flight);
    path.flush(beside.end, Caller::Flush).expect("flush");
    // More in flight than CPUs: written ahead, without waiting (a wait
    // for the held slot would end in the watchdog's panic).
    path.cpus = 1;
    let in_flight = path.slots.acquire(config.slot_choice);
    let crowded = path
        .insert(&record)
        .expect("insert beside an insertion in flight, CPUs crowded");
    let ahead = stats();
    assert_eq!(ahead.writes_ahead, 1, "not written ahead: {ahead:?}");
    assert!(ahead.bytes_by_write_through >= through + 4 * PAGE_SIZE);
    assert!(
        path.writer.written() <= crowded.start,
        "written passed an insertion in flight"
    );
    drop(in_flight);
    path.flush(crowded.end, Caller::Flush).expect("flush");
    assert_eq!(path.writer.written(), crowded.end);
    let seg = config.segment().expect("valid segment size");
    let reference = Config {
        write_through_from: 0,
        ..config
    };
    let copied = insert_path(theirs.path(), &reference);
    for _ in 0..4 {
        copied.insert(&record).expect("insert");
    }
    copied.flush(crowded.end, Caller::Flush).expect("flush");
    assert_same_segments("beside", ours.path(), theirs.path(), seg, crowded.end);
}

/// Beside an insertion in flight below its page (a slot held, advertising
/// the byte just below it), write-through into a segment the writer has
/// not opened (a new log's) declines at once, writing and consuming
/// nothing, while no more insertions are in flight than CPUs;
/// with more, it waits for that insertion instead (held here for good, so
/// the watchdog reports the wait, naming the held slot's advertisement).
#[test]
fn write_through_waits_only_with_more_insertions_in_flight_than_cpus() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        stuck_wait_timeout: Some(std::time::Duration::from_millis(100)),
        ..through_at_one_page()
    };
    let mut path = insert_path(dir.path(), &config);
    let page = Lsn(path.seg.segment_start(1).0 + PAGE_SIZE);
    let below = Lsn(page.0 - 1);
    let in_flight = path.slots.acquire(config.slot_choice);
    InsertionProgress::advertise(&in_flight, below);
    let ours = path.slots.acquire(config.slot_choice);
    let _reserved = path.reserver.reserve(4 * PAGE_SIZE);
    let body = data(2 * PAGE_SIZE as usize, 0);
    let parts: [&[u8]; 1] = [&body];
    let mut src = Parts::new(&[], &parts);
    // Two in flight (theirs and ours), two CPUs: decline.
    path.cpus = 2;
    let declined = path.write_through(page, &mut src, &ours).expect("no error");
    assert_eq!(
        declined, None,
        "written through beside an insertion in flight"
    );
    assert_eq!(src.remaining(), body.len(), "bytes consumed by a decline");
    assert_eq!(path.writer.stats().bytes_by_write_through, 0);
    // One CPU: wait for the insertion below.
    path.cpus = 1;
    let report = crate::sync::watchdog::stuck_report(|| {
        let _ = path.write_through(page, &mut src, &ours);
    });
    let waited = format!("the insertions below {page} to finish");
    assert!(report.contains(&waited), "{waited} missing from: {report}");
    assert!(report.contains(&format!("advertised {below}")), "{report}");
}

/// The configured `stuck_wait_timeout` reaches the slots: a flush waiting
/// for an insertion that never finishes (the test holds every slot, as a
/// stalled switch would) panics after it, naming the slot and the LSN.
#[test]
fn a_flush_stuck_on_a_held_slot_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        stuck_wait_timeout: Some(std::time::Duration::from_millis(100)),
        ..Config::default()
    };
    let path = insert_path(dir.path(), &config);
    let span = path.insert(&Record::new(RMID, 0x10, data(100, 1))).unwrap();
    let _all = path.slots.acquire_all();
    let report = crate::sync::watchdog::stuck_report(|| {
        let _ = path.flush(span.end, Caller::Flush);
    });
    let last = config.insert_slots - 1;
    for part in [
        format!("slot {last} is held"),
        format!("below {}", span.end),
    ] {
        assert!(report.contains(&part), "{part} missing from: {report}");
    }
}

/// Set (to the log's directory) in the child process of
/// [`a_panic_inside_the_critical_section_aborts_the_process`].
const ABORT_CHILD_DIR: &str = "WALDEN_TEST_ABORT_CHILD_DIR";

/// A panic inside an insertion's critical section aborts the process, as
/// PostgreSQL PANICs (seed 000's second revert: a wait there must never
/// end in an orderly exit that leaves a reserved range unfilled). The test
/// re-runs its own binary with only itself selected and
/// [`ABORT_CHILD_DIR`] set; the child holds every insertion slot and
/// inserts, so the insert's wait for a slot runs into the watchdog
/// (`stuck_wait_timeout` 50 ms), which panics inside `CriticalSection`.
/// The child must die of SIGABRT after the watchdog's report and the
/// guard's message: not exit normally, nor fail by an unwound panic
/// (libtest's exit code 101).
#[test]
fn a_panic_inside_the_critical_section_aborts_the_process() {
    use std::os::unix::process::ExitStatusExt;
    if let Some(dir) = std::env::var_os(ABORT_CHILD_DIR) {
        let config = Config {
            stuck_wait_timeout: Some(std::time::Duration::from_millis(50)),
            ..Config::default()
        };
        let path = insert_path(Path::new(&dir), &config);
        let _all = path.slots.acquire_all();
        let inserted = path.insert(&Record::new(RMID, 0x10, data(100, 1)));
        panic!("the insert returned ({inserted:?}) instead of aborting");
    }
    let dir = tempfile::tempdir().unwrap();
    let test = module_path!()
        .split_once("::")
        .map(|(_crate, path)| path)
        .expect("a module path inside the crate");
    let out = std::process::Command::new(std::env::current_exe().expect("this test binary"))
        .args([
            "--exact",
            &format!("{test}::a_panic_inside_the_critical_section_aborts_the_process"),
            "--test-threads=1",
            "--nocapture",
        ])
        .env(ABORT_CHILD_DIR, dir.path())
        // A core dump of the abort, where the system writes one, lands in
        // the log's directory and goes with it.
        .current_dir(dir.path())
        .output()
        .expect("the child runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGABRT),
        "the child ended with {:?}, not SIGABRT; its stderr: {stderr}",
        out.status
    );
    for part in [
        "insertion slot",
        "to be released",
        "panic inside a WAL insertion critical section; aborting",
    ] {
        assert!(stderr.contains(part), "{part} missing from: {stderr}");
    }
}

/// With prev-links in the buffer, a record whose predecessor's inserter
/// never writes its link (the test reserves that predecessor and leaves
/// it) waits until `stuck_wait_timeout`, then panics naming the record.
#[test]
fn a_prev_link_never_written_into_the_buffer_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        reservation: ReservationKind::PrevLinkInBuffer,
        stuck_wait_timeout: Some(std::time::Duration::from_millis(100)),
        ..Config::default()
    };
    let path = insert_path(dir.path(), &config);
    let slot = path.slots.acquire(crate::config::SlotChoice::Sticky);
    let _abandoned = path.reserver.reserve(64);
    let waiting = path.reserver.reserve(64);
    let start = path.seg.pos_to_start_lsn(waiting.start);
    let report = crate::sync::watchdog::stuck_report(|| {
        let _ = path.prev_link(&waiting, start, &slot);
    });
    let record = format!("record at {start}");
    assert!(report.contains(&record), "{record} missing from: {report}");
    assert!(report.contains("in the buffer"), "{report}");
}

/// A batch eviction writes everything finished in one write, across the
/// ring's wrap: after a flush leaves the written point inside page 3 of an
/// 8-page ring, a record running on to page 11 needs page 3's slot, and
/// the one eviction that frees it writes pages 3 to 10, past the wrap at
/// page 8, rather than stopping there.
#[test]
fn a_batch_eviction_writes_across_the_rings_wrap() {
    let dir = tempfile::tempdir().unwrap();
    let ring_pages = 8;
    let config = Config {
        eviction: crate::buffer::Eviction::Batch,
        buffers: ring_pages * PAGE_SIZE,
        segment_size: 1 << 20,
        ..Config::default()
    };
    let path = insert_path(dir.path(), &config);
    let first = path
        .insert(&Record::new(RMID, 0x10, data(3 * PAGE_SIZE as usize, 1)))
        .unwrap();
    assert_eq!(path.flush(first.end, Caller::Flush).unwrap(), first.end);
    let page = |n: u64| Lsn(path.seg.segment_start(1).0 + n * PAGE_SIZE);
    assert_eq!(first.end.page_start(), page(3), "the flush ends in page 3");
    let writes = path.writer.stats().writes;

    let len = ring_pages * PAGE_SIZE + PAGE_SIZE / 4;
    let second = path
        .insert(&Record::new(RMID, 0x10, data(len as usize, 2)))
        .unwrap();
    assert_eq!(
        second.end.page_start(),
        page(11),
        "the record ends in page 11"
    );
    assert_eq!(path.evictions(), 1, "page 3's slot is the only one evicted");
    assert_eq!(path.writer.stats().writes, writes + 1, "one write");
    assert_eq!(
        path.writer.written(),
        page(11),
        "the eviction wrote everything finished, across the ring's wrap at {}",
        page(ring_pages)
    );
}

/// The records' main-data lengths of each batch of
/// [`a_batch_writes_the_same_log_as_its_marker_and_records_one_by_one`]:
/// runs of 66-byte records (the page run; 72 bytes each, so that they
/// start at every 8-aligned offset of a page, headers split by page
/// boundaries included), mixed lengths (no main data, short and long
/// main-data headers, records longer than a page), and one longer than a
/// segment between small ones.
fn batch_lens(seg_bytes: usize) -> Vec<Vec<usize>> {
    let mut batches = vec![vec![40; 2], vec![40; 3]];
    for n in [16, 64, 256] {
        batches.extend(std::iter::repeat_n(vec![40; n], 24));
    }
    batches.extend([
        vec![0, 1, 7, 40, 255, 256, 300, 8000, 9000, 0, 40, 40],
        vec![40, 3 * PAGE_SIZE as usize + 123, 40, 40],
        vec![40; 1],
    ]);
    batches.extend(std::iter::repeat_n(vec![40; 64], 200));
    batches.push(vec![40, 40, seg_bytes + seg_bytes / 2, 40, 40]);
    batches
}

/// Inserts `rec` (a marker, or validated) as the contiguous encoding
/// does ([`InsertPath::insert_contiguous`]), without its validation,
/// which refuses the marker's resource manager.
fn insert_contiguous_unchecked(path: &InsertPath, rec: &Record) -> RecordSpan {
    let mut body = Vec::new();
    rec.encode_body(&mut body);
    path.insert_pending(Pending::with_body(path.format, rec, false, &body))
        .expect("insert")
}

/// A batch writes the same log as its marker and then its records
/// inserted one at a time with the contiguous encoding, and reports the
/// same spans, in every format and design: runs of small records through
/// the page run (crossing pages, segments and the ring's wrap), records
/// that cross a page or are longer than a page or a segment among them,
/// batches of 2 to 256 records.
#[test]
fn a_batch_writes_the_same_log_as_its_marker_and_records_one_by_one() {
    for config in design_configs() {
        let seg = config.segment().expect("valid segment size");
        let what = format!("{} with {}", config.format, config.reservation);
        let (batch_dir, single_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let batched = insert_path(batch_dir.path(), &config);
        let single = insert_path(single_dir.path(), &config);
        for (i, lens) in batch_lens(seg.bytes() as usize).into_iter().enumerate() {
            let payloads: Vec<Vec<u8>> = lens
                .iter()
                .enumerate()
                .map(|(k, &len)| data(len, i * 1000 + k))
                .collect();
            let batch: Batch = payloads
                .iter()
                .enumerate()
                .map(|(k, p)| Record::new(RMID, 0x10, &p[..]).with_xid(k as u32))
                .collect();
            let spans = batched.insert_batch(&batch).expect("batch");

            let records = batch.records();
            if records.len() > 1 {
                let marker = BatchMarker {
                    records: records.len() as u32,
                    bytes: records
                        .iter()
                        .map(|r| {
                            maxalign(
                                (config.format.record_header_size() + r.encoded_len() - 24) as u64,
                            )
                        })
                        .sum(),
                };
                let marker = marker.encode();
                insert_contiguous_unchecked(
                    &single,
                    &Record::new(RM_XLOG_ID, XLOG_NOOP, &marker[..]),
                );
            }
            let one_by_one: Vec<RecordSpan> = records
                .iter()
                .map(|r| insert_contiguous_unchecked(&single, r))
                .collect();
            assert_eq!(spans.records, one_by_one, "{what}: batch {i}'s spans");
            assert_eq!(Some(spans.end), one_by_one.last().map(|s| s.end), "{what}");
        }
        let end = batched.reserved_end();
        assert_eq!(end, single.reserved_end(), "{what}: the logs' ends");
        assert!(seg.segno(end) >= 3, "{what}: across segments");
        for path in [&batched, &single] {
            assert_eq!(path.flush(end, Caller::Flush).expect("flush"), end);
        }
        assert_same_segments(&what, batch_dir.path(), single_dir.path(), seg, end);
    }
}
