//! Acknowledged writes survive SIGKILL. A child process (this same test
//! binary, switched by an environment variable) appends entries, saves
//! votes and purges (which compacts), printing a line after each call's
//! acknowledgement: the append callback, or the return of `save_vote` and
//! `purge`. The parent kills it with SIGKILL after a number of
//! acknowledgements, reopens the log and checks that everything
//! acknowledged is there, intact and without holes. The WAL buffers live in
//! the child's memory, so an append acknowledged before its flush would be
//! lost; a crash inside a compaction must lose nothing either.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{entries, entry, log_id, log_state, payload, segment_files, wal_config, Store};
use openraft::storage::{RaftLogStorage, RaftLogStorageExt};
use openraft::Vote;

const CHILD_DIR_ENV: &str = "WALDEN_RAFT_CRASH_CHILD_DIR";
const TEST_NAME: &str = "acknowledged_writes_survive_sigkill";
/// The log's first segment, gone once a purge has compacted the log.
const FIRST_SEGMENT: &str = "000000010000000000000001";
/// Most entries a child appends before it stops by itself.
const CHILD_ENTRY_LIMIT: u64 = 3_000;

fn entry_len(index: u64) -> usize {
    4_096 + (index * 7_919 % 12_288) as usize
}

/// The child's workload; prints `ACK <what> <number>` after each
/// acknowledged call.
async fn child(dir: &Path) {
    let mut store = Store::open(dir, wal_config()).unwrap();
    for i in 0..CHILD_ENTRY_LIMIT {
        store
            .blocking_append([entry(1, i, payload(i, entry_len(i)))])
            .await
            .unwrap();
        println!("ACK entry {i}");
        if i % 25 == 24 {
            let term = i / 25 + 1;
            store.save_vote(&Vote::new(term, 0)).await.unwrap();
            println!("ACK vote {term}");
        }
        if i % 20 == 19 {
            store.purge(log_id(1, i - 10)).await.unwrap();
            println!("ACK purge {}", i - 10);
        }
    }
}

#[derive(Default, Debug)]
struct Acked {
    entry: Option<u64>,
    vote: Option<u64>,
    purge: Option<u64>,
}

impl Acked {
    fn record(&mut self, line: &str) {
        let mut words = line.split_whitespace();
        if words.next() != Some("ACK") {
            return;
        }
        let (Some(what), Some(Ok(n))) = (words.next(), words.next().map(str::parse::<u64>)) else {
            panic!("malformed line from the child: {line:?}");
        };
        let slot = match what {
            "entry" => &mut self.entry,
            "vote" => &mut self.vote,
            "purge" => &mut self.purge,
            _ => panic!("unknown acknowledgement {line:?}"),
        };
        *slot = (*slot).max(Some(n));
    }
}

/// Runs a child in `dir`, kills it after `kill_after` acknowledged entries
/// and returns what it acknowledged.
fn run_child_and_kill(dir: &Path, kill_after: u64) -> Acked {
    let exe = std::env::current_exe().unwrap();
    let mut child = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_DIR_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut acked = Acked::default();
    let mut killed = false;
    for line in BufReader::new(stdout).lines() {
        acked.record(&line.unwrap());
        if !killed && acked.entry >= Some(kill_after) {
            child.kill().unwrap();
            killed = true;
        }
    }
    child.wait().unwrap();
    assert!(
        killed,
        "the child stopped by itself before {kill_after} entries: {acked:?}"
    );
    acked
}

async fn check_reopened(dir: &Path, acked: &Acked) {
    let mut store = Store::open(dir, wal_config()).unwrap();
    let (purged, last) = log_state(&mut store).await;
    let last_acked = acked.entry.unwrap();
    assert!(
        last.map(|l| l.index) >= Some(last_acked),
        "last log {last:?}, acknowledged up to {last_acked}"
    );
    assert!(
        purged.map(|p| p.index) >= acked.purge,
        "purged {purged:?}, acknowledged purge {:?}",
        acked.purge
    );
    let first = purged.map_or(0, |p| p.index + 1);
    let got = entries(&mut store).await;
    let want: Vec<_> = (first..=last.unwrap().index)
        .map(|i| (log_id(1, i), Some(payload(i, entry_len(i)))))
        .collect();
    assert_eq!(got.len(), want.len(), "entries from {first} without holes");
    assert!(got == want, "every entry from {first} is intact");
    let vote = store.read_vote().await.unwrap();
    assert!(
        vote.map(|v| v.leader_id.term) >= acked.vote,
        "vote {vote:?}, acknowledged {:?}",
        acked.vote
    );
}

#[test]
fn acknowledged_writes_survive_sigkill() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Some(dir) = std::env::var_os(CHILD_DIR_ENV) {
        runtime.block_on(child(Path::new(&dir)));
        return;
    }
    let mut compacted = 0;
    for kill_after in [30, 75, 130, 190, 260, 330, 420, 500] {
        let dir = tempfile::tempdir().unwrap();
        let acked = run_child_and_kill(dir.path(), kill_after);
        runtime.block_on(check_reopened(dir.path(), &acked));
        if !segment_files(dir.path()).contains(&FIRST_SEGMENT.to_owned()) {
            compacted += 1;
        }
    }
    assert!(
        compacted >= 4,
        "purges reclaimed segments in only {compacted} of the runs"
    );
}
