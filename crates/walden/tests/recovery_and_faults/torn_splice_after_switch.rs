//! Tom Lane's torn-write splice (seed 001) through several generations of
//! one file, in `CompactWalId`. A file that held segment K is recycled to
//! A (another 16-bit id), a switch record ends A early, and the switch's
//! zero pages are lost in a crash: after the switch, A still holds K's
//! bytes. Recycling A to B, whose id is K's (65,536 segments on), is
//! allowed (A's id differs from B's), and then a torn write right after one
//! of B's records may expose one of K's records, whose id is B's. Recovery
//! zeroes the rest of the segment after every switch record it reads, so
//! what lies under B there is zeros (docs/reliability.md, "What the tests
//! found and what changed").

use std::collections::BTreeMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use walden::rmgr::{RM_XLOG_ID, XLOG_SWITCH};
use walden::{
    Config, FsStorage, Lsn, Record, ReservationKind, SegmentSize, SyncMethod, Wal, WalFormat,
    WalRecord,
};

use crate::support::reader::reader_of;
use crate::support::reader::synth::MemSource;
use crate::support::wal::{payload, read_all};

/// Segment size (the smallest).
const SEGMENT: u64 = 1 << 20;
/// What storage writes atomically.
const SECTOR: u64 = 512;
/// The segment the file first held.
const K: u64 = 2;
/// The name the file ends with: its 16-bit id is K's.
const B: u64 = K + (1 << 16);
/// The name the file has when a switch ends it early: after the crash,
/// recovery's switch moves the log to B - 1, and a checkpoint there
/// recycles A, the oldest segment, to B, the first free name.
const A: u64 = B - 3;
/// Resource manager of the records written.
const RMID: u8 = 150;

fn seg() -> SegmentSize {
    SegmentSize::new(SEGMENT).unwrap()
}

fn config() -> Config {
    Config {
        format: WalFormat::CompactWalId,
        reservation: ReservationKind::default_for(WalFormat::CompactWalId),
        segment_size: SEGMENT,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        segments_ahead: 0,
        recycle_segments: 2,
        ..Config::default()
    }
}

/// Inserts records of 8 to `8 + spread` payload bytes (sizes from `seed`)
/// until the insert position reaches `until`.
fn fill_to(wal: &Wal, until: Lsn, spread: u64, seed: u32) {
    let mut x = u64::from(seed) | 1;
    let mut seq = 0;
    while wal.insert_position() < until {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let len = 8 + (x % (spread + 1)) as usize;
        wal.insert(&Record::new(RMID, 0, payload(seed, seq, len)))
            .unwrap();
        seq += 1;
    }
}

/// The bytes of segment `segno` in `dir`.
fn segment_bytes(dir: &Path, segno: u64) -> Vec<u8> {
    std::fs::read(dir.join(seg().file_name(1, segno))).unwrap()
}

/// Stale records the reader accepts when, right after a record of `new`
/// (segment B's final bytes) that ends on a sector boundary, the rest of
/// that page holds `under`'s bytes instead (a torn write), counting only
/// boundaries at or after `from` (an offset) where the bytes differ:
/// (splices, accepted).
fn splices(records: &[WalRecord], new: &[u8], under: &[u8], from: u64) -> (u64, u64) {
    let seg = seg();
    let (mut tried, mut accepted) = (0, 0);
    for pair in records.windows(2) {
        let (last, next) = (&pair[0], &pair[1]);
        let at = seg.offset(next.lsn);
        if at < from || !at.is_multiple_of(SECTOR) || seg.segno(last.lsn) != B {
            continue;
        }
        let page_end = (at / 8192 + 1) * 8192;
        let range = at as usize..page_end as usize;
        if new[range.clone()] == under[range.clone()] {
            continue;
        }
        let mut spliced = new.to_vec();
        spliced[range.clone()].copy_from_slice(&under[range]);
        let source = MemSource {
            seg,
            segments: BTreeMap::from([(B, spliced)]),
        };
        let mut reader = reader_of(source, last.lsn, None).unwrap();
        let first = reader.next_record().unwrap().unwrap();
        assert_eq!(first.lsn, last.lsn, "the record before the splice reads");
        tried += 1;
        if let Ok(Some(stale)) = reader.next_record() {
            assert_eq!(stale.lsn, next.lsn);
            accepted += 1;
        }
    }
    (tried, accepted)
}

#[test]
fn a_switched_segment_recycled_to_an_older_generations_id_exposes_no_stale_record() {
    let seg = seg();
    let tmp = tempfile::tempdir().unwrap();
    let (old_dir, dir) = (tmp.path().join("k"), tmp.path().join("wal"));

    // Generation K: a segment full of small records.
    let wal = Wal::create_at_segment(&old_dir, config(), Arc::new(FsStorage), K).unwrap();
    fill_to(&wal, seg.segment_start(K + 1), 24, 1);
    wal.close().unwrap();
    let gen_k = segment_bytes(&old_dir, K);

    // The file as A: a few records, a switch, records in A + 1, a crash.
    let wal = Wal::create_at_segment(&dir, config(), Arc::new(FsStorage), A).unwrap();
    fill_to(&wal, Lsn(seg.segment_start(A).0 + 20_000), 200, 2);
    let switch = wal.switch_segment().unwrap().unwrap();
    fill_to(&wal, Lsn(seg.segment_start(A + 1).0 + 20_000), 200, 3);
    wal.flush(wal.insert_position()).unwrap();
    drop(wal);
    let (records, _) = read_all(&dir);
    let switch = records
        .iter()
        .find(|r| r.lsn == switch.start)
        .expect("the switch record");
    assert_eq!(
        (switch.header.rmid, switch.header.info & 0xF0),
        (RM_XLOG_ID, XLOG_SWITCH)
    );
    // The switch's zero pages did not reach the disk: what the file held
    // before, as K, is still there after the switch record.
    let tail = seg.offset(switch.end) as usize;
    let path_a = dir.join(seg.file_name(1, A));
    let mut file_a = std::fs::read(&path_a).unwrap();
    file_a[tail..].copy_from_slice(&gen_k[tail..]);
    std::fs::write(&path_a, &file_a).unwrap();
    let inode_a = std::fs::metadata(&path_a).unwrap().ino();

    // Recovery, then a checkpoint in B - 1 that recycles A to B.
    let (wal, report) = Wal::open(&dir, config()).unwrap();
    assert!(!report.clean_shutdown);
    assert_eq!(seg.segno(wal.insert_position()), B - 1);
    wal.checkpoint().unwrap();
    let path_b = dir.join(seg.file_name(1, B));
    assert_eq!(
        std::fs::metadata(&path_b).map(|m| m.ino()).ok(),
        Some(inode_a),
        "the checkpoint recycled A to B"
    );
    let under = segment_bytes(&dir, B);
    assert_eq!(under[..tail], file_a[..tail], "B holds A's records");
    fill_to(&wal, Lsn(seg.segment_start(B).0 + SEGMENT * 9 / 10), 200, 4);
    wal.close().unwrap();
    let new = segment_bytes(&dir, B);
    let (records, _) = read_all(&dir);

    // Raw: had K's bytes stayed after the switch, the format would accept
    // some of them under B's records (their id is B's).
    let mut kept = under.clone();
    kept[tail..].copy_from_slice(&gen_k[tail..]);
    let (tried, raw) = splices(&records, &new, &kept, tail as u64);
    eprintln!("{tried} splices after the switch: {raw} stale records accepted raw");
    assert!(tried >= 50, "splices after the switch: {tried}");
    assert!(raw > 0, "K's records alias B's raw");
    // What the engine left under B.
    let (tried, accepted) = splices(&records, &new, &under, 0);
    eprintln!("{tried} splices over what the engine left: {accepted} accepted");
    assert!(tried >= 50, "splices: {tried}");
    assert_eq!(accepted, 0, "stale records accepted under B");
}
