//! Group commit: one sync serves every thread waiting to flush.

use std::sync::Arc;

use walden::{Config, Record, Stats, SyncMethod, Wal};

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
