//! Reopening a store rebuilds exactly the log that was there: entries,
//! vote, committed log id, truncations and purges, across segments and
//! across the checkpoints that purging takes.

mod common;

use common::{entries, entry, log_id, log_state, payload, segment_files, wal_config, Store};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::Vote;
use walden_raft::Compaction;

const BIG: usize = 20_000;

async fn append_range(store: &mut Store, term: u64, indexes: std::ops::Range<u64>, len: usize) {
    for i in indexes {
        store
            .blocking_append([entry(term, i, payload(i, len))])
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn reopen_rebuilds_entries_vote_committed_truncation_and_purge() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    append_range(&mut store, 1, 0..20, 100).await;
    store.save_vote(&Vote::new(3, 1)).await.unwrap();
    store.save_committed(Some(log_id(1, 15))).await.unwrap();
    store.truncate(log_id(1, 18)).await.unwrap();
    append_range(&mut store, 2, 18..20, 100).await;
    store.purge(log_id(1, 4)).await.unwrap();

    let before = (entries(&mut store).await, log_state(&mut store).await);
    assert_eq!(before.1, (Some(log_id(1, 4)), Some(log_id(2, 19))));
    assert_eq!(before.0.len(), 15);
    assert_eq!(
        before.0[13].0,
        log_id(2, 18),
        "the truncated entry was replaced"
    );
    drop(store);

    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    assert_eq!(
        (entries(&mut store).await, log_state(&mut store).await),
        before
    );
    assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(3, 1)));
    assert_eq!(store.read_committed().await.unwrap(), Some(log_id(1, 15)));
}

#[tokio::test]
async fn entries_spanning_many_segments_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    append_range(&mut store, 1, 0..200, BIG).await;
    drop(store);
    assert!(
        segment_files(dir.path()).len() >= 4,
        "the log spans several 1 MiB segments"
    );

    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    let got = entries(&mut store).await;
    assert_eq!(got.len(), 200);
    for (i, (id, request)) in got.into_iter().enumerate() {
        let i = i as u64;
        assert_eq!((id, request), (log_id(1, i), Some(payload(i, BIG))));
    }
}

#[tokio::test]
async fn purge_reclaims_old_segments_and_reopen_keeps_the_live_log() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    append_range(&mut store, 1, 0..200, BIG).await;
    store.save_vote(&Vote::new(7, 2)).await.unwrap();
    store.save_committed(Some(log_id(1, 190))).await.unwrap();
    let first_segment = segment_files(dir.path())[0].clone();

    store.purge(log_id(1, 179)).await.unwrap();
    assert!(
        !segment_files(dir.path()).contains(&first_segment),
        "the purge's checkpoint recycled or removed {first_segment}"
    );
    assert_eq!(
        store.compact().unwrap(),
        Compaction::NothingToReclaim,
        "nothing more to reclaim until entry 180 is purged"
    );

    let check = |got: Vec<(openraft::LogId<u64>, Option<String>)>, last: u64| {
        let want: Vec<_> = (180..=last)
            .map(|i| (log_id(1, i), Some(payload(i, BIG))))
            .collect();
        assert_eq!(got, want);
    };
    drop(store);
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    check(entries(&mut store).await, 199);
    assert_eq!(
        log_state(&mut store).await,
        (Some(log_id(1, 179)), Some(log_id(1, 199)))
    );
    assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(7, 2)));
    assert_eq!(store.read_committed().await.unwrap(), Some(log_id(1, 190)));

    // A second generation: more entries after the compacted segment, then
    // another purge and compaction, then reopen.
    append_range(&mut store, 1, 200..300, BIG).await;
    store.purge(log_id(1, 289)).await.unwrap();
    drop(store);
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    let got = entries(&mut store).await;
    assert_eq!(got.first().map(|e| e.0), Some(log_id(1, 290)));
    assert_eq!(got.len(), 10);
    assert_eq!(store.read_vote().await.unwrap(), Some(Vote::new(7, 2)));
}

/// Bytes of WAL inserted since `store` opened.
fn store_bytes(store: &Store) -> u64 {
    store.wal_stats().bytes
}

#[tokio::test]
async fn a_live_log_larger_than_a_segment_is_purged_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    append_range(&mut store, 1, 0..200, BIG).await;
    let first_segment = segment_files(dir.path())[0].clone();
    let inserted = store_bytes(&store);
    store.purge(log_id(1, 59)).await.unwrap();
    assert!(
        !segment_files(dir.path()).contains(&first_segment),
        "the purge's checkpoint recycled or removed {first_segment}"
    );
    assert!(
        store_bytes(&store) - inserted < 1000,
        "the 140 live entries were not rewritten"
    );
    drop(store);
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    let got = entries(&mut store).await;
    assert_eq!(got.len(), 140);
    assert_eq!(got[0], (log_id(1, 60), Some(payload(60, BIG))));
}

#[tokio::test]
async fn a_conflicting_append_is_refused_and_not_logged() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    append_range(&mut store, 1, 0..5, 10).await;
    let err = store
        .blocking_append([entry(2, 3, "conflict".into())])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("conflicts with"), "{err}");
    let err = store
        .blocking_append([entry(1, 9, "hole".into())])
        .await
        .unwrap_err();
    assert!(err.to_string().contains("would leave a hole"), "{err}");
    drop(store);

    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    let got = entries(&mut store).await;
    assert_eq!(
        got.iter().map(|e| e.0).collect::<Vec<_>>(),
        (0..5).map(|i| log_id(1, i)).collect::<Vec<_>>()
    );
}

#[tokio::test]
async fn an_empty_append_completes_after_open_and_after_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    store.blocking_append([]).await.unwrap();
    append_range(&mut store, 1, 0..100, BIG).await;
    store.purge(log_id(1, 95)).await.unwrap();
    store.blocking_append([]).await.unwrap();
    drop(store);

    let mut store = Store::open(dir.path(), wal_config()).unwrap();
    store.blocking_append([]).await.unwrap();
    append_range(&mut store, 1, 100..101, 10).await;
    assert_eq!(
        log_state(&mut store).await,
        (Some(log_id(1, 95)), Some(log_id(1, 100)))
    );
}
