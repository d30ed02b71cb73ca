//! Recovery edge cases: a multi-page record cut off by a crash is abandoned
//! the way PostgreSQL 15 abandons it, and what Walden writes afterwards
//! reads straight across; logical messages are PostgreSQL's bytes.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;

use crate::support::wal::{pg_waldump_agrees, read_from};
use walden::internals::PAGE_SIZE;
use walden::rmgr::{RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD, XLOG_SWITCH};
use walden::{Config, Lsn, ReaderOptions, Record, SegmentSize, SyncMethod, Wal, WalReader};

fn config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    }
}

#[test]
fn a_record_cut_off_at_a_page_boundary_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let seg = SegmentSize::new(1 << 20).unwrap();
    let wal = Wal::create(dir.path(), config()).unwrap();
    for i in 0..20u8 {
        wal.insert(&Record::new(129, 0, vec![i; 300])).unwrap();
    }
    let before = wal.insert_span(&Record::new(129, 0, vec![7; 100])).unwrap();
    let big = wal
        .insert_span(&Record::new(129, 0, vec![9; 3 * PAGE_SIZE as usize]))
        .unwrap();
    wal.flush(big.end).unwrap();
    drop(wal);

    // The crash lost every page after the big record's first one.
    let missing = Lsn(big.start.page_start().0 + PAGE_SIZE);
    let file = OpenOptions::new()
        .write(true)
        .open(dir.path().join(seg.file_name(1, seg.segno(missing))))
        .unwrap();
    let from = seg.offset(missing);
    file.write_all_at(&vec![0u8; (seg.bytes() - from) as usize], from)
        .unwrap();
    drop(file);

    let (wal, report) = Wal::open(dir.path(), config()).unwrap();
    assert_eq!(report.overwritten, Some(big.start));
    assert_eq!(report.last_record, Some(before.start));
    let after = wal
        .insert_span(&Record::new(129, 0, b"after the crash".to_vec()))
        .unwrap();
    wal.close().unwrap();

    // Walden's reader drops the partial record and restarts at the page.
    let (records, _) = read_from(dir.path(), None);
    let i = records.iter().position(|r| r.lsn == before.start).unwrap();
    let overwrite = &records[i + 1];
    assert_eq!(
        (overwrite.header.rmid, overwrite.header.info),
        (RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD)
    );
    assert_eq!(
        overwrite.lsn,
        Lsn(missing.0 + seg.page_header_size(missing))
    );
    assert_eq!(
        overwrite.header.prev, before.start,
        "chained to the last complete record"
    );
    // The unclean shutdown: a switch, then new WAL in the next segment.
    let switch = &records[i + 2];
    assert_eq!(
        (switch.header.rmid, switch.header.info),
        (RM_XLOG_ID, XLOG_SWITCH)
    );
    assert_eq!(records[i + 3].lsn, after.start);
    assert_eq!(seg.offset(after.start), seg.page_header_size(after.start));
    assert_eq!(seg.segno(after.start), seg.segno(missing) + 1);
    assert!(
        records.iter().all(|r| r.lsn != big.start),
        "the cut-off record is never returned"
    );

    // So does pg_waldump, record for record, across the overwrite.
    let (_, text) = pg_waldump_agrees(dir.path(), seg, records[0].lsn);
    assert!(text.contains("OVERWRITE_CONTRECORD"), "{text}");
}

#[test]
fn a_torn_tail_is_cut_and_new_records_start_a_fresh_segment() {
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config()).unwrap();
    let kept = wal.insert_span(&Record::new(129, 0, vec![1; 500])).unwrap();
    let torn = wal.insert_span(&Record::new(129, 0, vec![2; 500])).unwrap();
    wal.flush(torn.end).unwrap();
    drop(wal);
    // Tear the second record: flip a byte of its body.
    let seg = SegmentSize::new(1 << 20).unwrap();
    let file = OpenOptions::new()
        .write(true)
        .open(dir.path().join(seg.file_name(1, 1)))
        .unwrap();
    file.write_all_at(&[0xFF], seg.offset(torn.start) + 100)
        .unwrap();
    drop(file);

    let (wal, report) = Wal::open(dir.path(), config()).unwrap();
    assert_eq!(report.last_record, Some(kept.start));
    assert_eq!(report.end, torn.start, "the WAL ends at the torn record");
    assert!(report.stop.contains("checksum"), "{}", report.stop);
    let next = wal.insert_span(&Record::new(129, 0, vec![3; 40])).unwrap();
    // A switch record where the torn one was; new records in segment 2,
    // never over bytes the crashed incarnation may have left.
    let second = seg.segment_start(2);
    assert_eq!(next.start, Lsn(second.0 + seg.page_header_size(second)));
    wal.close().unwrap();
    let (records, _) = read_from(dir.path(), None);
    let switch = records.iter().find(|r| r.lsn == torn.start).unwrap();
    assert_eq!(
        (switch.header.rmid, switch.header.info),
        (RM_XLOG_ID, XLOG_SWITCH)
    );
    let tail: Vec<_> = records
        .iter()
        .filter(|r| r.header.rmid == 129)
        .map(|r| r.decode_body().unwrap().main_data[0])
        .collect();
    assert_eq!(tail, vec![1, 3]);
}

#[test]
fn logical_messages_are_postgres_bytes() {
    let pg = walden_testkit::generated_wal();
    let messages = pg.facts().messages().unwrap();
    assert!(messages.len() >= 5);
    for m in messages {
        let opts = ReaderOptions {
            start: Some(Lsn(m.lsn)),
            ..ReaderOptions::default()
        };
        let real = WalReader::open(pg.dir(), opts)
            .unwrap()
            .next_record()
            .unwrap()
            .unwrap();
        assert_eq!(real.lsn, Lsn(m.lsn));
        let ours =
            Record::logical_message(m.transactional, "test", &vec![b'x'; m.payload as usize]);
        let mut body = Vec::new();
        walden::internals::format::body::encode_main_data(&ours.data, &mut body);
        let mut theirs = real.body.clone();
        // PostgreSQL leaves 3 bytes of stack garbage after `transactional`.
        let pad = body.len() - ours.data.len() + 5;
        theirs[pad..pad + 3].fill(0);
        assert_eq!(body, theirs, "message of {} bytes", m.payload);
        assert_eq!((ours.rmid, ours.info), (real.header.rmid, real.header.info));
        assert_eq!(ours.encoded_len(), real.header.tot_len as usize);
    }
}
