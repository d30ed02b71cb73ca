//! Real crashes: `walden write --flush-every 1 --acked F` is killed with
//! SIGKILL at random moments; after each kill, `walden verify --acked F`
//! must find every acknowledged record, and the next run appends to the
//! recovered log. At the end `pg_waldump` reads the whole log. The runs go
//! round every way of preparing segments (`--segment-prep`), several
//! counts of segments kept ready ahead, without and with direct I/O
//! (`--direct-io`), without and with write-through of records that
//! cover a page (`--write-through-from`), and with the default syncs, with
//! every round's sync overlapped and two syncs in flight at once (often,
//! with 8 committers), and with every round's sync overlapped one at a time
//! (`--overlap-syncs-from`, `--concurrent-syncs`), without and with
//! the CRC beside the write (`--crc-helper`), and with writes as they come
//! and cut at every page with their write-back started
//! (`--writeback-every`), so one log mixes them all.
//!
//! `WALDEN_CRASH_KILLS` sets the number of kills (default 50);
//! `WALDEN_CRASH_LONG=1` is the long mode, 500 kills (docs/reliability.md);
//! `WALDEN_CRASH_SEED` replays a run (the seed is printed).

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{kill_running, pg_waldump_reads, verify_acked, walden};
use walden::{ReaderOptions, WalReader};

/// Segment size of the log `walden write` makes, in bytes.
const SEGMENT_BYTES: u64 = 1 << 20;
/// The `--segment-prep` values the runs go round.
const SEGMENT_PREPS: [&str; 3] = ["zero-fill", "fallocate", "page-headers"];
/// The `--segments-ahead` values the runs go round.
const SEGMENTS_AHEAD: [&str; 3] = ["2", "0", "5"];
/// Runs without and with `--direct-io`.
const DIRECT_IO: [&[&str]; 2] = [&[], &["--direct-io"]];
/// Payload sizes and `--write-through-from`: small records with the
/// default (nothing written through), and records up to 20 KB with every
/// page a record covers whole written through.
const WRITE_THROUGH: [[&str; 4]; 2] = [
    ["--size", "0-3KB", "--write-through-from", "256KB"],
    ["--size", "0-20KB", "--write-through-from", "8KB"],
];
/// Syncs: the defaults (overlapped for rounds of 64 KiB and more, one at
/// a time), every round overlapped with two syncs in flight at once (often,
/// with 8 committers), and every round overlapped one sync at a time.
const SYNCS: [&[&str]; 3] = [
    &[],
    &["--overlap-syncs-from", "0", "--concurrent-syncs", "true"],
    &["--overlap-syncs-from", "0"],
];

/// Writes cut as by default (every 256 KiB: these records' writes are
/// seldom that long), and cut at every page, with the write-back of each
/// cut started (`--writeback-every`).
const WRITEBACK_EVERY: [&str; 2] = ["256KB", "8KB"];

/// Without and with the CRC beside the write (`--crc-helper`; it acts on
/// the records written through, with 8 committers when fewer insertions
/// than CPUs are in flight).
const CRC_HELPER: [&str; 2] = ["false", "true"];

#[test]
fn sigkill_loop_loses_no_acknowledged_record() {
    let kills: u32 = std::env::var("WALDEN_CRASH_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if std::env::var_os("WALDEN_CRASH_LONG").is_some() {
            500
        } else {
            50
        });
    let seed: u64 = std::env::var("WALDEN_CRASH_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    println!("crash loop: {kills} kills, WALDEN_CRASH_SEED={seed}");
    let tmp = tempfile::tempdir().unwrap();
    let (dir, acked) = (tmp.path().join("wal"), tmp.path().join("acked"));
    let mut x = seed | 1;
    for kill in 0..kills {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let child = walden()
            .arg("write")
            .arg(&dir)
            .args([
                "--records",
                "100000000",
                "--threads",
                "8",
                "--flush-every",
                "1",
            ])
            .args(
                WRITE_THROUGH[kill as usize
                    / (SEGMENT_PREPS.len() * SEGMENTS_AHEAD.len() * DIRECT_IO.len())
                    % WRITE_THROUGH.len()],
            )
            .args([
                "--segment-size",
                &SEGMENT_BYTES.to_string(),
                "--buffers",
                "256KB",
                "--sync",
                "fdatasync",
                "--segment-prep",
                SEGMENT_PREPS[kill as usize % SEGMENT_PREPS.len()],
                "--segments-ahead",
                SEGMENTS_AHEAD[kill as usize / SEGMENT_PREPS.len() % SEGMENTS_AHEAD.len()],
            ])
            .args(
                DIRECT_IO[kill as usize / (SEGMENT_PREPS.len() * SEGMENTS_AHEAD.len())
                    % DIRECT_IO.len()],
            )
            // kill / 2: not in step with the preparation (kill % 3), so the
            // sync settings meet every preparation.
            .args(SYNCS[kill as usize / 2 % SYNCS.len()])
            // kill / 3: on and off for every preparation alike.
            .args([
                "--crc-helper",
                CRC_HELPER[kill as usize / 3 % CRC_HELPER.len()],
            ])
            // kill / 5: not in step with the helper nor the syncs.
            .args([
                "--writeback-every",
                WRITEBACK_EVERY[kill as usize / 5 % WRITEBACK_EVERY.len()],
            ])
            .arg("--acked")
            .arg(&acked)
            .arg("--seed")
            .arg(x.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The kill moment: anywhere from during recovery to well into the run.
        std::thread::sleep(Duration::from_millis(5 + (x >> 33) % 400));
        kill_running(child, &format!("kill {kill}"));
        // With nothing acknowledged yet the log may hold no record (killed
        // while it was being created: its first segment prepared, its first
        // page not yet written), which the standalone reader cannot open;
        // the next run must recover it all the same.
        let anything_acked = std::fs::metadata(&acked).is_ok_and(|m| m.len() > 0);
        if dir.join("walden.control").exists() && anything_acked {
            let summary = verify_acked(&dir, &acked, &format!("after kill {kill}"));
            if kill + 1 == kills {
                println!("after {kills} kills: {summary}");
            }
        }
    }
    let acks = std::fs::read_to_string(&acked)
        .unwrap_or_default()
        .lines()
        .count();
    assert!(
        acks > kills as usize,
        "the runs acknowledged records ({acks})"
    );

    // pg_waldump reads the whole log, across every crash and recovery.
    let mut reader = WalReader::open(&dir, ReaderOptions::default()).unwrap();
    let first = reader.next_record().unwrap().unwrap();
    let mut last = first.end;
    while let Ok(Some(r)) = reader.next_record() {
        last = r.end;
    }
    pg_waldump_reads(&dir, SEGMENT_BYTES, first.lsn, last, "after the crash loop");
}
