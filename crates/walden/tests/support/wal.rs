//! Helpers shared by the tests that write a log on disk: reading it back,
//! payloads, placing a record at a page offset, and `pg_waldump` agreeing.

use std::path::Path;

use walden::internals::maxalign;
use walden::{
    Lsn, ReadError, ReaderOptions, Record, RecordSpan, SegmentSize, Wal, WalReader, WalRecord,
};

/// Reads every record from the first segment's first record to the end of
/// WAL, and the error that ended the scan.
pub fn read_all(dir: &Path) -> (Vec<WalRecord>, ReadError) {
    read_from(dir, None)
}

/// Like [`read_all`] from `start`.
pub fn read_from(dir: &Path, start: Option<Lsn>) -> (Vec<WalRecord>, ReadError) {
    let mut reader = WalReader::open(
        dir,
        ReaderOptions {
            start,
            ..ReaderOptions::default()
        },
    )
    .unwrap();
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(r),
            Ok(None) => panic!("no end given, so the reader must stop at end of WAL"),
            Err(e) => return (out, e),
        }
    }
}

/// Deterministic payload of `len` bytes (at least 8) for record `seq` of `thread`.
pub fn payload(thread: u32, seq: u32, len: usize) -> Vec<u8> {
    let mut p = Vec::with_capacity(len.max(8));
    p.extend_from_slice(&thread.to_le_bytes());
    p.extend_from_slice(&seq.to_le_bytes());
    let mut x = (u64::from(thread) << 32 | u64::from(seq)) | 1;
    while p.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p.push(x as u8);
    }
    p
}

/// The record of resource manager `rmid` whose encoded length rounds up to
/// exactly `aligned` bytes, if one exists.
pub fn record_of_aligned_size(rmid: u8, aligned: u64) -> Option<Record<'static>> {
    let base = aligned.checked_sub(24)? as usize;
    [
        base.checked_sub(2),
        base.checked_sub(5),
        (base == 0).then_some(0),
    ]
    .into_iter()
    .flatten()
    .map(|d| Record::new(rmid, 0, vec![0x5A; d]))
    .find(|r| maxalign(r.encoded_len() as u64) == aligned)
}

/// Inserts a filler so that the next record starts at `page_offset` of a
/// later page, then a record of `len` main-data bytes there; returns its span.
pub fn insert_at_page_offset(
    wal: &Wal,
    seg: SegmentSize,
    rmid: u8,
    page_offset: u64,
    len: usize,
) -> RecordSpan {
    let here = wal.insert_position();
    let mut target = Lsn(here.page_start().0 + walden::internals::PAGE_SIZE + page_offset);
    loop {
        let gap = seg.lsn_to_pos(target).unwrap() - seg.lsn_to_pos(here).unwrap();
        if let Some(filler) = record_of_aligned_size(rmid, gap) {
            wal.insert(&filler).unwrap();
            break;
        }
        target = Lsn(target.0 + walden::internals::PAGE_SIZE);
    }
    let span = wal
        .insert_span(&Record::new(rmid, 0, vec![0xA5; len]))
        .unwrap();
    assert_eq!(span.start, target, "placement");
    span
}

/// Runs `pg_waldump` over `[start, end of WAL)`: with `-q` and without, it
/// must exit 0 and show as many records as Walden's reader reads there.
/// Returns those records and pg_waldump's output.
///
/// The first and last segments are named: without them pg_waldump takes
/// the segment size from whichever segment file `readdir` lists first, and
/// a zero-filled one prepared ahead of need has none.
pub fn pg_waldump_agrees(dir: &Path, seg: SegmentSize, start: Lsn) -> (Vec<WalRecord>, String) {
    let (records, _) = read_from(dir, Some(start));
    let end = records.last().unwrap().end;
    let d = dir.to_str().unwrap();
    let (s, e) = (start.to_string(), end.to_string());
    let first_seg = seg.file_name(1, seg.segno(start));
    let last_seg = seg.file_name(1, seg.segno(Lsn(end.as_u64() - 1)));
    let run = |quiet: bool| {
        let args = ["-q", "-p", d, "-s", &s, "-e", &e, &first_seg, &last_seg];
        let out = walden_testkit::run_pg_waldump(&args[usize::from(!quiet)..]).unwrap();
        assert!(
            out.status.success(),
            "pg_waldump{} -p {d} -s {s} -e {e} {first_seg} {last_seg}: {}",
            if quiet { " -q" } else { "" },
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    assert_eq!(run(true), "", "pg_waldump -q reports nothing");
    let text = run(false);
    let lines = text.lines().filter(|l| l.starts_with("rmgr:")).count();
    assert_eq!(
        lines,
        records.len(),
        "records shown by pg_waldump vs read by Walden"
    );
    (records, text)
}
