//! Group commit: one sync serves every thread waiting to flush.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::support::wal::{payload, read_all};
use walden::{Config, Lsn, Record, Stats, SyncMethod, Wal};

/// A new log with `config`, `Fdatasync` and no background writer: only
/// the committers flush (one in progress at the last snapshot would be a
/// request not yet served), so the counters add up exactly.
fn committers_log(config: Config) -> (tempfile::TempDir, Arc<Wal>) {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        sync_method: SyncMethod::Fdatasync,
        writer_delay: None,
        ..config
    };
    let wal = Arc::new(Wal::create(dir.path(), config).unwrap());
    (dir, wal)
}

#[test]
fn thirty_two_committers_share_syncs() {
    let (_dir, wal) = committers_log(Config {
        segment_size: 16 << 20,
        ..Config::default()
    });
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
    let syncs = after.writer.syncs - before.writer.syncs;
    let covered = after.writer.flushes_covered_by_others - before.writer.flushes_covered_by_others;
    println!("{commits} commits, {syncs} syncs, {covered} flushes covered by another's sync");
    assert!(syncs > 0);
    assert!(
        syncs * 4 < commits,
        "{syncs} syncs for {commits} commits: no group commit"
    );
    check_flush_groups(&before, &after, syncs, covered);
}

/// A herd of committers on a small ring and small segments (runs across
/// the ring's wrap, segment switches with syncs in flight): every commit
/// returns with its record durable, the durable point never goes back, the
/// flush-group counters add up, and reading the log back finds every
/// acknowledged record intact.
#[test]
fn a_herd_of_committers_loses_nothing_and_the_durable_point_only_advances() {
    herd(Config::default());
}

/// The herd with two syncs in flight at once (every round handed on before
/// its sync): the same, and some syncs did run beside another.
#[test]
fn a_herd_with_concurrent_syncs_loses_nothing_and_the_durable_point_only_advances() {
    let stats = herd(Config {
        concurrent_syncs: true,
        overlap_syncs_from: 0,
        ..Config::default()
    });
    assert!(stats.writer.concurrent_syncs > 0, "{:?}", stats.writer);
}

/// Runs the herd on a log with `config`'s strategies; returns the log's
/// last counters.
fn herd(config: Config) -> Stats {
    let (dir, wal) = committers_log(Config {
        segment_size: 1 << 20,
        buffers: 16 * 8192,
        ..config
    });
    let before = wal.stats();
    let (threads, per_thread) = (192u32, 12u32);
    let done = AtomicBool::new(false);
    let acked: Vec<Vec<(Lsn, Vec<u8>)>> = std::thread::scope(|s| {
        let observer = s.spawn(|| {
            let mut last = wal.flushed();
            // Relaxed: only ends the loop; each read of `flushed` is checked.
            while !done.load(Ordering::Relaxed) {
                let now = wal.flushed();
                assert!(
                    now >= last,
                    "the durable point went back from {last} to {now}"
                );
                last = now;
                std::thread::yield_now();
            }
        });
        let committers: Vec<_> = (0..threads)
            .map(|t| {
                let wal = wal.clone();
                s.spawn(move || {
                    (0..per_thread)
                        .map(|i| {
                            // 100 B to 12 KiB: records span pages, and runs
                            // wrap around the 16-page ring.
                            let len = 100 + (t as usize * 7919 + i as usize * 104_729) % 12_000;
                            let data = payload(t, i, len);
                            let span = wal.insert_span(&Record::new(128, 0, data.clone())).unwrap();
                            let upto = wal.flush(span.end).unwrap();
                            assert!(upto >= span.end && wal.flushed() >= span.end);
                            (span.start, data)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let acked = committers.into_iter().map(|h| h.join().unwrap()).collect();
        // Relaxed: the scope's join orders the observer's last reads.
        done.store(true, Ordering::Relaxed);
        observer.join().unwrap();
        acked
    });
    let after = wal.stats();
    let commits = u64::from(threads * per_thread);
    let requests = after.writer.flush_requests - before.writer.flush_requests;
    let members = after.writer.flush_group_members - before.writer.flush_group_members;
    // Commits that found their record durable already never ask the
    // writer; each one that does is a member of exactly one group.
    assert!(requests <= commits, "{requests} flush calls");
    assert_eq!(members, requests, "{:?}", after.writer);
    assert!(after.writer.syncs - before.writer.syncs < commits);
    drop(wal);
    let (records, _) = read_all(dir.path());
    let by_lsn: HashMap<Lsn, Vec<u8>> = records
        .iter()
        .filter(|r| r.header.rmid == 128)
        .map(|r| (r.lsn, r.decode_body().unwrap().main_data.to_vec()))
        .collect();
    for (lsn, data) in acked.iter().flatten() {
        assert_eq!(by_lsn.get(lsn), Some(data), "acknowledged record at {lsn}");
    }
    after
}

/// What the flush-group counters must say about a run of committers with
/// `Fdatasync`, between two snapshots taken with no flush in progress.
fn check_flush_groups(before: &Stats, after: &Stats, syncs: u64, covered: u64) {
    let groups = after.writer.flush_groups - before.writer.flush_groups;
    let members = after.writer.flush_group_members - before.writer.flush_group_members;
    let requests = after.writer.flush_requests - before.writer.flush_requests;
    let by_size: Vec<u64> = (after.writer.flush_group_sizes.iter())
        .zip(before.writer.flush_group_sizes.iter())
        .map(|(a, b)| a - b)
        .collect();
    println!(
        "{requests} flush calls in {groups} group flushes ({members} members, largest {}); \
         groups by size (1, 2, 3-4, 5-8, ...): {by_size:?}",
        after.writer.largest_flush_group
    );
    // Every flush call was satisfied, each by exactly one group flush.
    assert_eq!(members, requests, "flush calls served vs made");
    // Every group flush with Fdatasync syncs at least once.
    assert!(
        groups > 0 && groups <= syncs,
        "{groups} groups, {syncs} syncs"
    );
    assert_eq!(by_size.iter().sum::<u64>(), groups, "histogram vs groups");
    // A group is its leader and the calls it served: each waiter covered
    // by another's sync is a member of a group it did not lead.
    assert!(
        members >= groups + covered,
        "{members} < {groups} + {covered}"
    );
    assert!(
        by_size[1..].iter().sum::<u64>() > 0 && after.writer.largest_flush_group > 1,
        "no group flush served more than its leader"
    );
}
