//! The reader as an [`Iterator`]: the records `next_record` returns, then
//! `None` at the end of WAL with the reason kept, `None` at the end limit,
//! and an I/O error returned once as `Some(Err(..))`.

use std::sync::Arc;

use crate::support::fault::{small_config, DIR};
use walden::internals::StorageSource;
use walden::{
    EndOfWalReason, Lsn, ReadError, ReaderOptions, Record, SimStorage, Storage, Wal, WalReader,
};

/// A log on `sim` with `n` plain-bytes records after the first checkpoint;
/// returns the LSN of the first.
fn log_of(sim: &SimStorage, n: u8) -> Lsn {
    let wal = Wal::create_with_storage(DIR, small_config(16), Arc::new(sim.clone())).unwrap();
    let first = wal.insert_position();
    for i in 0..n {
        wal.insert(&Record::bytes(vec![i; 100 + usize::from(i) * 500]))
            .unwrap();
    }
    wal.close().unwrap();
    first
}

fn reader(sim: &SimStorage, start: Lsn, end: Option<Lsn>) -> WalReader {
    let storage: Arc<dyn Storage> = Arc::new(sim.clone());
    let seg = walden::SegmentSize::new(1 << 20).unwrap();
    let source = StorageSource::new(storage, DIR, seg);
    let opts = ReaderOptions {
        start: Some(start),
        end,
        timeline: 1,
    };
    WalReader::with_source(Box::new(source), opts).unwrap()
}

#[test]
fn iteration_yields_what_next_record_does_and_ends_at_the_end_of_wal() {
    let sim = SimStorage::new(1);
    let first = log_of(&sim, 20);
    let mut by_hand = reader(&sim, first, None);
    let mut expected = Vec::new();
    let end = loop {
        match by_hand.next_record() {
            Ok(Some(r)) => expected.push(r),
            Ok(None) => panic!("no end limit"),
            Err(e) => break e,
        }
    };
    let mut it = reader(&sim, first, None);
    assert!(it.end_of_wal().is_none() && !it.ended_cleanly());
    let got: Vec<_> = (&mut it).collect::<Result<_, _>>().unwrap();
    assert_eq!(got, expected);
    assert_eq!(got.len(), 21, "20 records and the shutdown checkpoint");
    assert!(it.ended_cleanly());
    assert_eq!(
        it.end_of_wal().map(ToString::to_string),
        Some(end.to_string())
    );
    assert!(matches!(
        it.end_reason(),
        Some(EndOfWalReason::InvalidRecordLength { .. })
    ));
    assert!(it.next().is_none(), "stays ended");
}

#[test]
fn iteration_ends_at_the_end_limit_without_an_end_of_wal() {
    let sim = SimStorage::new(2);
    let first = log_of(&sim, 10);
    let all: Vec<_> = reader(&sim, first, None).map(Result::unwrap).collect();
    let limit = all[5].end;
    let mut it = reader(&sim, first, Some(limit));
    let got: Vec<_> = (&mut it).map(Result::unwrap).collect();
    assert_eq!(got, all[..6]);
    assert!(it.ended_cleanly());
    assert!(it.end_of_wal().is_none() && it.end_reason().is_none());
}

#[test]
fn an_io_error_is_returned_once_then_iteration_ends() {
    let sim = SimStorage::new(3);
    let first = log_of(&sim, 10);
    let mut it = reader(&sim, first, None);
    assert!(it.next().is_some_and(|r| r.is_ok()));
    sim.fail_read(1);
    let failed = it.find_map(Result::err).expect("the injected read error");
    assert!(matches!(failed, ReadError::Io { .. }), "{failed:?}");
    assert!(it.next().is_none());
    assert!(!it.ended_cleanly());
    assert!(it.end_of_wal().is_none());
}
