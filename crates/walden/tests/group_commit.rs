//! Group commit: one sync serves every thread waiting to flush.

use std::sync::Arc;

use walden::{Config, Record, SyncMethod, Wal};

#[test]
fn thirty_two_committers_share_syncs() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        segment_size: 16 << 20,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    };
    let wal = Arc::new(Wal::create(dir.path(), config).unwrap());
    let before = wal.stats();
    let (threads, per_thread) = (32u64, 40u64);
    std::thread::scope(|s| {
        for t in 0..threads {
            let wal = wal.clone();
            s.spawn(move || {
                for i in 0..per_thread {
                    let rec = Record::new(128, 0, [t.to_le_bytes(), i.to_le_bytes()].concat());
                    let end = wal.insert_and_flush(&rec).unwrap();
                    assert!(
                        wal.flushed() >= end,
                        "a commit returned before its record was durable"
                    );
                }
            });
        }
    });
    let after = wal.stats();
    let commits = threads * per_thread;
    let syncs = after.syncs - before.syncs;
    println!(
        "{commits} commits, {syncs} syncs, {} flushes covered by another's sync",
        after.flushes_covered_by_others
    );
    assert!(syncs > 0);
    assert!(
        syncs * 4 < commits,
        "{syncs} syncs for {commits} commits: no group commit"
    );
}
