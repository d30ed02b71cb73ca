//! `Wal::checkpoint_to`: the caller's purge point becomes the redo point,
//! the segments wholly before it go, recovery starts there (clean or not),
//! and every record from it on survives.

use std::sync::Arc;

use walden::{Config, Error, Lsn, ReadError, Record, SimStorage, SyncMethod, Wal};

use crate::support::fault::DIR;

const SEG: u64 = 1 << 20;

fn config() -> Config {
    Config {
        segment_size: SEG,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        recycle_segments: 0,
        segments_ahead: 0,
        ..Config::default()
    }
}

/// Inserts numbered 4 kB records until the log reaches segment `segs + 1`;
/// returns each record's (start, end).
fn fill(wal: &Wal, segs: u64) -> Vec<(Lsn, Lsn)> {
    let mut spans = Vec::new();
    while wal.insert_position().0 < (segs + 1) * SEG {
        let n = spans.len() as u32;
        let span = wal
            .insert_span(&Record::new(
                128,
                0,
                [n.to_le_bytes().to_vec(), vec![7; 4096]].concat(),
            ))
            .unwrap();
        spans.push((span.start, span.end));
    }
    wal.flush(wal.insert_position()).unwrap();
    spans
}

/// The numbers of the user records a reader finds from `from`.
fn numbers_from(wal: &Wal, from: Lsn) -> Vec<u32> {
    let mut reader = wal.reader(from).unwrap();
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(rec)) if rec.header.rmid == 128 => {
                let body = rec.decode_body().unwrap();
                out.push(u32::from_le_bytes(body.main_data[..4].try_into().unwrap()));
            }
            Ok(Some(_)) => {}
            // The end of WAL: the page after the last record is unwritten.
            Ok(None) | Err(ReadError::EndOfWal { .. }) => return out,
            Err(e) => panic!("{e}"),
        }
    }
}

fn segment_numbers(sim: &SimStorage) -> Vec<u64> {
    use walden::Storage;
    let mut segs: Vec<u64> = sim
        .list_dir(DIR.as_ref())
        .unwrap()
        .iter()
        .filter(|n| n.len() == 24)
        .map(|n| u64::from_str_radix(&n[16..], 16).unwrap())
        .collect();
    segs.sort();
    segs
}

#[test]
fn the_purge_point_becomes_the_redo_point_and_earlier_segments_go() {
    for clean in [true, false] {
        let sim = Arc::new(SimStorage::new(11));
        let wal = Wal::create_with_storage(DIR, config(), sim.clone()).unwrap();
        let spans = fill(&wal, 4);
        // The record before one well into segment 2: its end is the purge
        // point.
        let keep_from = spans.iter().position(|s| s.0 .0 > 2 * SEG + 4096).unwrap();
        let purge = spans[keep_from - 1].1;
        wal.checkpoint_to(purge).unwrap();
        // The log starts in segment 1; the redo point is in segment 2.
        let redo_segment = spans[keep_from].0 .0 / SEG;
        assert_eq!(redo_segment, 2);
        assert_eq!(segment_numbers(&sim)[0], redo_segment, "segment 1 is gone");
        if clean {
            wal.close().unwrap();
        } else {
            drop(wal);
            sim.power_cut();
            sim.restart();
        }
        let (wal, report) = Wal::open_with_storage(DIR, config(), sim.clone()).unwrap();
        assert_eq!(report.clean_shutdown, clean);
        assert_eq!(report.redo, spans[keep_from].0, "redo at the next record");
        let numbers = numbers_from(&wal, report.redo);
        let expected: Vec<u32> = (keep_from as u32..spans.len() as u32).collect();
        assert_eq!(numbers, expected, "clean = {clean}");
    }
}

#[test]
fn a_purge_point_never_moves_back_nor_past_the_end() {
    let sim = Arc::new(SimStorage::new(12));
    let wal = Wal::create_with_storage(DIR, config(), sim.clone()).unwrap();
    let spans = fill(&wal, 2);
    let now = wal.checkpoint().unwrap();
    let later = wal.insert(&Record::new(128, 0, vec![1; 10])).unwrap();
    // Back to the first record: the redo point stays at the checkpoint's.
    wal.checkpoint_to(spans[0].0).unwrap();
    wal.close().unwrap();
    let (wal, report) = Wal::open_with_storage(DIR, config(), sim).unwrap();
    assert!(report.redo >= now && report.redo < later, "{report:?}");
    let beyond = Lsn(wal.insert_position().0 + 8);
    match wal.checkpoint_to(beyond) {
        Err(Error::CheckpointBeyondEnd { requested, .. }) => assert_eq!(requested, beyond),
        other => panic!("{other:?}"),
    }
}
