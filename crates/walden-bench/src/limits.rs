//! The machine's physical limits, measured in the same run as the engine
//! (DESIGN.md §6): what no WAL can beat on this machine.
//!
//! - memcpy and CRC-32C bandwidth, 1 and 2 threads: an insert copies every
//!   byte into the buffer ring and checksums it;
//! - one cache-line transfer between two cores (`t_x` of algorithms.md §10,
//!   the unit of the many-core projection);
//! - file writes of 8 kB and 1 MiB ([`Probe::FileWrite`]), each with and
//!   without `fdatasync`, into three kinds of target: a *fresh file* (each
//!   write extends a new file: new page-cache pages, new blocks, as a new
//!   segment), an *overwrite of a cached file* (a file written and synced
//!   first, as recycled segments are; without sync, as large as a WAL's
//!   working set) and an *`O_DIRECT` write* over such a file (no page
//!   cache); plus `O_DSYNC` overwrites and two overlapped writers for
//!   durable 1 MiB writes. Where the file system refuses `O_DIRECT`, the
//!   probe's result says so ([`LimitResult::unsupported`]);
//! - memcpy + CRC-32C + overwrite of a cached file ([`Probe::CopyCrcOverwrite`]):
//!   the least work of a WAL that copies each 1 MiB message it was given
//!   into its buffers and writes it; CRC-32C + overwrite
//!   ([`Probe::CrcOverwrite`]): the least work of one that writes the
//!   message straight from the caller's bytes, as Walden's write-through
//!   does (`Config::write_through_from`);
//! - the overwrite of a cached file from as many 1 MiB messages as a case
//!   has sessions ([`Probe::SessionsOverwrite`]): the same copy, with the
//!   source footprint of many callers' payloads.
//!
//! What the file-write probes write from and into: `limits/file_write.rs`.

mod file_write;
pub mod suite;

use std::hint::black_box;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use walden::internals::format::crc::body_crc;

use crate::measure::{run_threads, Measured, Timing};
pub use file_write::{CACHED_FILE, FRESH_FILE};

/// Block each bandwidth operation moves: 1 MiB.
pub const BLOCK: usize = 1 << 20;
/// The sessions of the [`Probe::SessionsOverwrite`] a full run's limits
/// suite measures: the summary's many-thread case, 64 threads.
pub const SUMMARY_SESSIONS: usize = 64;
/// Destination of the memcpy probe, per thread: larger than any cache, as
/// the buffer ring is.
const COPY_DESTINATION: usize = 64 << 20;
/// Round trips of the cache-line probe, all batches together.
const PING_PONGS: u64 = 500_000;
/// Batches of the cache-line probe (the fastest counts).
const PING_PONG_BATCHES: u64 = 50;

/// What a file-write probe writes into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteTarget {
    /// Appends to a new file (emptied again every [`FRESH_FILE`] bytes):
    /// every write allocates page-cache pages and blocks.
    Fresh,
    /// Overwrites a file written and synced first, cycling through it
    /// front to back: [`CACHED_FILE`] bytes, all writers together, with
    /// sync and without.
    Overwrite,
    /// Overwrites such a file with `O_DIRECT` (page-aligned buffers).
    Direct,
}

/// How a file-write probe makes each write durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WriteSync {
    /// Not at all: the write is left to the kernel.
    None,
    /// `pwrite` then `fdatasync`.
    Fdatasync,
    /// `pwrite` on a file opened with `O_DSYNC`.
    OpenDatasync,
}

impl WriteSync {
    /// True if each write is durable when it returns.
    pub fn durable(self) -> bool {
        self != WriteSync::None
    }
}

/// One limit to measure.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "probe", rename_all = "kebab-case")]
pub enum Probe {
    /// memcpy of 1 MiB blocks into a 64 MiB buffer per thread.
    Memcpy {
        /// Threads.
        threads: usize,
    },
    /// CRC-32C of 1 MiB blocks.
    Crc32c {
        /// Threads.
        threads: usize,
    },
    /// memcpy then CRC-32C of each block: the insert path's floor.
    CopyCrc {
        /// Threads.
        threads: usize,
    },
    /// One cache-line transfer between two threads (ping-pong on one atomic).
    LineTransfer,
    /// `threads` threads each copying a 1 MiB record into the next block of
    /// a ring, checksumming it (CRC-32C) and writing the block over the
    /// next 1 MiB of their share of a cached [`CACHED_FILE`]: what a WAL
    /// does at least per 1 MiB message it writes without sync.
    CopyCrcOverwrite {
        /// Threads.
        threads: usize,
    },
    /// `threads` threads each checksumming a 1 MiB record (CRC-32C) and
    /// writing it, from where it lies, over the next 1 MiB of their share
    /// of a cached [`CACHED_FILE`]: what a WAL that writes a record's
    /// whole pages straight from the caller's bytes
    /// (`Config::write_through_from`) does at least per 1 MiB message
    /// without sync.
    CrcOverwrite {
        /// Threads.
        threads: usize,
    },
    /// One writer overwriting a cached [`CACHED_FILE`] 1 MiB at a time, as
    /// the [`WriteTarget::Overwrite`] probe without sync does, but from
    /// `sessions` MiB of source (one block per session, in turn) rather
    /// than from a buffer ring's 16 MiB: the bytes a WAL writes the 1 MiB
    /// messages of `sessions` committing threads from, each its own,
    /// where that is more than the ring. On this project's 2-vCPU host the
    /// kernel copied from a 64 MiB source at 0.65–0.85 of its rate from a
    /// 16 MiB one (docs/io.md, "The limit a WAL's page-cache writes are
    /// read against").
    SessionsOverwrite {
        /// Sessions: MiB of source.
        sessions: usize,
    },
    /// `writers` threads each writing `bytes` at a time sequentially into
    /// `target` (each its own region), each write made durable as `sync`
    /// says.
    FileWrite {
        /// What is written into.
        target: WriteTarget,
        /// Bytes per write.
        bytes: usize,
        /// How each write is made durable.
        sync: WriteSync,
        /// Writers, each with its own region (overlapped syncs with 2).
        writers: usize,
    },
}

impl Probe {
    /// The probes of a full run, in report order.
    pub fn all() -> Vec<Probe> {
        let mut out = Vec::new();
        for threads in [1, 2] {
            out.extend([
                Probe::Memcpy { threads },
                Probe::Crc32c { threads },
                Probe::CopyCrc { threads },
            ]);
        }
        out.push(Probe::LineTransfer);
        out.extend([1, 2].map(|threads| Probe::CopyCrcOverwrite { threads }));
        out.extend([1, 2].map(|threads| Probe::CrcOverwrite { threads }));
        let write = |target, bytes, sync, writers| Probe::FileWrite {
            target,
            bytes,
            sync,
            writers,
        };
        for target in [
            WriteTarget::Fresh,
            WriteTarget::Overwrite,
            WriteTarget::Direct,
        ] {
            for bytes in [8 << 10, BLOCK] {
                for sync in [WriteSync::None, WriteSync::Fdatasync] {
                    out.push(write(target, bytes, sync, 1));
                }
            }
        }
        for bytes in [8 << 10, BLOCK] {
            out.push(write(
                WriteTarget::Overwrite,
                bytes,
                WriteSync::OpenDatasync,
                1,
            ));
        }
        for target in [WriteTarget::Overwrite, WriteTarget::Direct] {
            out.push(write(target, BLOCK, WriteSync::Fdatasync, 2));
        }
        out.push(Probe::SessionsOverwrite {
            sessions: SUMMARY_SESSIONS,
        });
        out
    }

    /// The probes of [`Probe::all`] that a Walden case of `payload`-byte
    /// messages at `threads` threads, in the steady state, is read against
    /// in the summary: for durable 1 MiB messages every durable 1 MiB
    /// write into a cached file or with `O_DIRECT` by at most `threads`
    /// writers (the fastest counts; a fresh file's, never the fastest, is
    /// no steady state's limit); for 1 MiB messages without sync the
    /// overwrite of a cached file by one writer, from as many sessions'
    /// messages too where they are more bytes than its source ring
    /// ([`Probe::SessionsOverwrite`]), and, at 1 or 2 threads, CRC-32C
    /// (+ memcpy) + that overwrite at as many; none for other payloads.
    pub fn matching(payload: usize, durable: bool, threads: usize) -> Vec<Probe> {
        if payload != BLOCK {
            return Vec::new();
        }
        let sessions = (!durable && threads * BLOCK > file_write::source_ring_len())
            .then_some(Probe::SessionsOverwrite { sessions: threads });
        Probe::all()
            .into_iter()
            .filter(|probe| match *probe {
                Probe::FileWrite {
                    target,
                    bytes,
                    sync,
                    writers,
                } => {
                    bytes == BLOCK
                        && sync.durable() == durable
                        && if durable {
                            target != WriteTarget::Fresh && writers <= threads
                        } else {
                            target == WriteTarget::Overwrite && writers == 1
                        }
                }
                Probe::CrcOverwrite { threads: t } | Probe::CopyCrcOverwrite { threads: t } => {
                    !durable && t == threads
                }
                _ => false,
            })
            .chain(sessions)
            .collect()
    }

    /// A short label for tables and charts.
    pub fn label(&self) -> String {
        match *self {
            Probe::Memcpy { threads } => format!("memcpy, {threads} thread(s)"),
            Probe::Crc32c { threads } => format!("CRC-32C, {threads} thread(s)"),
            Probe::CopyCrc { threads } => format!("memcpy + CRC-32C, {threads} thread(s)"),
            Probe::LineTransfer => "cache-line transfer between cores".to_owned(),
            Probe::CopyCrcOverwrite { threads } => {
                format!("memcpy + CRC-32C + overwrite of a cached file, 1 MiB, {threads} thread(s)")
            }
            Probe::CrcOverwrite { threads } => {
                format!("CRC-32C + overwrite of a cached file, 1 MiB, {threads} thread(s)")
            }
            Probe::SessionsOverwrite { sessions } => {
                format!("overwrite of a cached file, 1 MiB, from {sessions} sessions' messages")
            }
            Probe::FileWrite {
                target,
                bytes,
                sync,
                writers,
            } => {
                let what = match target {
                    WriteTarget::Fresh => "fresh file write",
                    WriteTarget::Overwrite => "overwrite of a cached file",
                    WriteTarget::Direct => "O_DIRECT write",
                };
                let how = match sync {
                    WriteSync::None => "",
                    WriteSync::Fdatasync => " + fdatasync",
                    WriteSync::OpenDatasync => ", O_DSYNC",
                };
                let size = if bytes >= BLOCK {
                    format!("{} MiB", bytes / BLOCK)
                } else {
                    format!("{} kB", bytes >> 10)
                };
                let writers = if writers > 1 {
                    format!(", {writers} writers")
                } else {
                    String::new()
                };
                format!("{what}{how}, {size}{writers}")
            }
        }
    }
}

/// What one probe measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LimitResult {
    /// The probe.
    pub probe: Probe,
    /// Operations (blocks, transfers or durable writes) per second.
    pub ops_per_sec: f64,
    /// Bytes per second, in GB (10⁹); `None` for the cache-line probe.
    pub gb_per_sec: Option<f64>,
    /// Mean time of one operation, ns.
    pub ns_per_op: f64,
    /// Median latency of one operation, ns (durable writes only).
    pub p50_ns: Option<u64>,
    /// 99th-percentile latency, ns (durable writes only).
    pub p99_ns: Option<u64>,
    /// Why the probe could not run on this machine (the file system
    /// refused `O_DIRECT`); its rates are then 0.
    #[serde(default)]
    pub unsupported: Option<String>,
    /// Bytes of file a file-write probe cycles through, all writers
    /// together; `None` for the other probes, and in results from before
    /// the non-durable overwrite cycled through [`CACHED_FILE`].
    #[serde(default)]
    pub working_set_bytes: Option<u64>,
}

impl LimitResult {
    /// Several runs of probes (each about as long) as one result per
    /// probe, in the order of each probe's first run: the mean of its
    /// runs' rates, the mean time per operation that follows, and no
    /// latency percentiles (a run's are its own); a probe the machine
    /// refused stays its first run, which says so.
    pub fn means(runs: &[LimitResult]) -> Vec<LimitResult> {
        let mut out: Vec<LimitResult> = Vec::new();
        for first in runs {
            if out.iter().any(|m| m.probe == first.probe) {
                continue;
            }
            let same: Vec<&LimitResult> = runs.iter().filter(|r| r.probe == first.probe).collect();
            if same.iter().any(|r| r.unsupported.is_some()) {
                out.push(first.clone());
                continue;
            }
            let n = same.len() as f64;
            let ops_per_sec = same.iter().map(|r| r.ops_per_sec).sum::<f64>() / n;
            let gb_per_sec = same
                .iter()
                .map(|r| r.gb_per_sec)
                .sum::<Option<f64>>()
                .map(|sum| sum / n);
            out.push(LimitResult {
                probe: first.probe,
                ops_per_sec,
                gb_per_sec,
                ns_per_op: 1e9 / ops_per_sec,
                p50_ns: None,
                p99_ns: None,
                unsupported: None,
                working_set_bytes: first.working_set_bytes,
            });
        }
        out
    }
}

/// A probe that could not run.
#[derive(Debug, thiserror::Error)]
#[error("{probe}: {path}: {source}")]
pub struct LimitError {
    /// The probe's label.
    pub probe: String,
    /// The file it used.
    pub path: PathBuf,
    /// The cause.
    pub source: io::Error,
}

/// Measures `probe` for about `duration`, with files under `dir`.
pub fn measure(probe: Probe, dir: &Path, duration: Duration) -> Result<LimitResult, LimitError> {
    match probe {
        Probe::Memcpy { threads } | Probe::Crc32c { threads } | Probe::CopyCrc { threads } => {
            let m = bandwidth(probe, threads, duration);
            Ok(result(probe, &m, Some(BLOCK)))
        }
        Probe::LineTransfer => {
            let ns = line_transfer_ns(duration);
            Ok(LimitResult {
                probe,
                ops_per_sec: 1e9 / ns,
                gb_per_sec: None,
                ns_per_op: ns,
                p50_ns: None,
                p99_ns: None,
                unsupported: None,
                working_set_bytes: None,
            })
        }
        Probe::FileWrite { .. }
        | Probe::CopyCrcOverwrite { .. }
        | Probe::CrcOverwrite { .. }
        | Probe::SessionsOverwrite { .. } => file_write::measure(probe, dir, duration),
    }
}

fn result(probe: Probe, m: &Measured, bytes_per_op: Option<usize>) -> LimitResult {
    let ops_per_sec = m.per_sec();
    LimitResult {
        probe,
        ops_per_sec,
        gb_per_sec: bytes_per_op.map(|b| ops_per_sec * b as f64 / 1e9),
        ns_per_op: if ops_per_sec > 0.0 {
            1e9 / ops_per_sec
        } else {
            f64::INFINITY
        },
        p50_ns: m.latency.percentile(50),
        p99_ns: m.latency.percentile(99),
        unsupported: None,
        working_set_bytes: None,
    }
}

/// memcpy and/or CRC-32C of 1 MiB blocks on `threads` threads.
fn bandwidth(probe: Probe, threads: usize, duration: Duration) -> Measured {
    let copy = matches!(probe, Probe::Memcpy { .. } | Probe::CopyCrc { .. });
    let crc = matches!(probe, Probe::Crc32c { .. } | Probe::CopyCrc { .. });
    let run = run_threads(threads, duration, Timing::CountOnly, |t| {
        let src = vec![b'0' + t as u8; BLOCK];
        let mut dst = if copy {
            vec![0u8; COPY_DESTINATION]
        } else {
            Vec::new()
        };
        // Touch the destination first, as the ring is pre-faulted.
        dst.iter_mut().step_by(4096).for_each(|b| *b = 1);
        let mut at = 0;
        Ok::<_, std::convert::Infallible>(move || {
            let block: &[u8] = if copy {
                let chunk = &mut dst[at..at + BLOCK];
                chunk.copy_from_slice(&src);
                at = (at + BLOCK) % COPY_DESTINATION;
                chunk
            } else {
                &src
            };
            if crc {
                black_box(body_crc(black_box(block)));
            } else {
                black_box(block);
            }
            Ok(())
        })
    });
    match run {
        Ok(m) => m,
        Err(never) => match never {},
    }
}

/// Nanoseconds to move one cache line from one core to the other: two
/// threads hand a counter back and forth; each handoff is one transfer.
/// The fastest of several batches counts: on a shared 2-vCPU host a batch
/// during which one thread was descheduled measures the scheduler, not the
/// line. The probe stops once `budget` has passed (the batch under way
/// too), and a thread whose partner is off its CPU yields rather than spin
/// out its time slice, so that such a host does not spend seconds on it:
/// in profiles of `walden bench insert --batch 64` on this project's
/// 2-vCPU machine, this probe (run for the projection, outside the
/// measured slices) was the spin loop that took a third of the samples
/// (and 97 % at a load average of 15).
fn line_transfer_ns(budget: Duration) -> f64 {
    let deadline = Instant::now() + budget;
    let mut fastest = f64::INFINITY;
    for batch in 0..PING_PONG_BATCHES {
        if batch > 0 && Instant::now() >= deadline {
            break;
        }
        fastest = fastest.min(ping_pong_ns(PING_PONGS / PING_PONG_BATCHES, deadline));
    }
    fastest
}

/// Spins on the handoff counter before yielding the CPU: far more than a
/// transfer takes, so a yield only happens while the other thread is off
/// its CPU (and lets it back on, rather than spinning out a time slice).
const SPINS_BEFORE_YIELD: u32 = 1 << 12;
/// Handoffs between two looks at the clock.
const HANDOFFS_PER_CLOCK: u64 = 1 << 10;

/// Mean time of one handoff over `round_trips` round trips, or over those
/// done by `deadline` if that comes first.
fn ping_pong_ns(round_trips: u64, deadline: Instant) -> f64 {
    let turn = AtomicU64::new(0);
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    std::thread::scope(|s| {
        for parity in [0, 1] {
            let (turn, stop) = (&turn, &stop);
            s.spawn(move || {
                let mut next = parity;
                while next < 2 * round_trips {
                    // Acquire/Release: the handoff orders nothing but itself;
                    // any ordering makes the line move, these match a lock's.
                    let mut spins = 0u32;
                    while turn.load(Ordering::Acquire) != next {
                        spins += 1;
                        if !spins.is_multiple_of(SPINS_BEFORE_YIELD) {
                            std::hint::spin_loop();
                            continue;
                        }
                        // Relaxed: a flag that orders nothing; the other
                        // thread has stopped handing over.
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        std::thread::yield_now();
                    }
                    turn.store(next + 1, Ordering::Release);
                    next += 2;
                    if next % HANDOFFS_PER_CLOCK < 2 && Instant::now() >= deadline {
                        // Relaxed: as above.
                        stop.store(true, Ordering::Relaxed);
                        return;
                    }
                }
            });
        }
    });
    // Relaxed: both threads are joined.
    let handoffs = turn.load(Ordering::Relaxed).max(1);
    started.elapsed().as_nanos() as f64 / handoffs as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_probe_measures_a_positive_rate_or_says_why_not_and_cleans_up() {
        let dir = tempfile::tempdir().unwrap();
        let probes = Probe::all();
        let file_writes = probes
            .iter()
            .filter(|p| matches!(p, Probe::FileWrite { .. }))
            .count();
        assert_eq!(file_writes, 3 * 2 * 2 + 2 + 2);
        let copies = [1, 2].map(|threads| Probe::CopyCrcOverwrite { threads });
        assert!(copies.iter().all(|c| probes.contains(c)), "{probes:?}");
        let checksums = [1, 2].map(|threads| Probe::CrcOverwrite { threads });
        assert!(checksums.iter().all(|c| probes.contains(c)), "{probes:?}");
        let sessions = Probe::SessionsOverwrite {
            sessions: SUMMARY_SESSIONS,
        };
        assert!(probes.contains(&sessions), "{probes:?}");
        for probe in probes {
            let r = measure(probe, dir.path(), Duration::from_millis(30)).unwrap();
            if let Some(why) = &r.unsupported {
                // Only O_DIRECT may be refused, and then it says so.
                assert!(
                    matches!(
                        probe,
                        Probe::FileWrite {
                            target: WriteTarget::Direct,
                            ..
                        }
                    ),
                    "{r:?}"
                );
                assert!(why.contains("O_DIRECT"), "{why}");
                continue;
            }
            assert!(r.ops_per_sec > 0.0 && r.ns_per_op > 0.0, "{r:?}");
            match probe {
                Probe::LineTransfer => assert!(r.gb_per_sec.is_none()),
                _ => assert!(r.gb_per_sec.unwrap() > 0.0, "{r:?}"),
            }
            if let Probe::FileWrite { sync, .. } = probe {
                if sync.durable() {
                    assert!(r.p50_ns.unwrap() > 0 && r.p99_ns >= r.p50_ns, "{r:?}");
                }
            }
            // Every non-durable overwrite cycles through the whole working set.
            let cached = matches!(
                probe,
                Probe::CopyCrcOverwrite { .. }
                    | Probe::CrcOverwrite { .. }
                    | Probe::SessionsOverwrite { .. }
                    | Probe::FileWrite {
                        target: WriteTarget::Overwrite,
                        sync: WriteSync::None,
                        ..
                    }
            );
            if cached {
                assert_eq!(r.working_set_bytes, Some(CACHED_FILE), "{r:?}");
            }
        }
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn the_matching_limits_are_the_1_mib_writes_of_the_same_durability() {
        let all = Probe::all();
        for threads in [1, 2, 64] {
            let durable = Probe::matching(BLOCK, true, threads);
            assert!(!durable.is_empty());
            for probe in &durable {
                assert!(all.contains(probe), "{probe:?}");
                let Probe::FileWrite {
                    target,
                    bytes,
                    sync,
                    writers,
                } = *probe
                else {
                    panic!("{probe:?} is not a write");
                };
                assert!(bytes == BLOCK && sync.durable() && writers <= threads);
                assert_ne!(target, WriteTarget::Fresh);
            }
            let two_writers = durable
                .iter()
                .any(|p| matches!(p, Probe::FileWrite { writers: 2, .. }));
            assert_eq!(two_writers, threads >= 2, "{durable:?}");
            let overwrite = |sync| Probe::FileWrite {
                target: WriteTarget::Overwrite,
                bytes: BLOCK,
                sync,
                writers: 1,
            };
            let open_datasync = overwrite(WriteSync::OpenDatasync);
            assert!(durable.contains(&open_datasync), "{durable:?}");
            let cached = Probe::matching(BLOCK, false, threads);
            assert!(cached.contains(&overwrite(WriteSync::None)), "{cached:?}");
            let checksummed = cached
                .iter()
                .filter(|p| {
                    matches!(p, Probe::CrcOverwrite { threads: t } | Probe::CopyCrcOverwrite { threads: t } if *t == threads)
                })
                .count();
            assert_eq!(checksummed, if threads <= 2 { 2 } else { 0 });
            // As many sessions' messages as the case has threads, where
            // they are more than the 16 MiB source ring.
            let sessions = Probe::SessionsOverwrite { sessions: threads };
            assert_eq!(cached.contains(&sessions), threads > 16, "{cached:?}");
            let more = usize::from(threads > 16);
            assert_eq!(cached.len(), 1 + checksummed + more, "{cached:?}");
        }
        let cached = Probe::matching(BLOCK, false, 256);
        assert!(cached.contains(&Probe::SessionsOverwrite { sessions: 256 }));
        assert!(Probe::matching(100, true, 1).is_empty());
        assert!(Probe::matching(8 << 10, false, 2).is_empty());
    }

    #[test]
    fn means_take_each_probes_runs_together_in_order() {
        let run = |probe, ops_per_sec: f64| LimitResult {
            probe,
            ops_per_sec,
            gb_per_sec: Some(ops_per_sec * BLOCK as f64 / 1e9),
            ns_per_op: 1e9 / ops_per_sec,
            p50_ns: Some(1),
            p99_ns: Some(2),
            unsupported: None,
            working_set_bytes: Some(CACHED_FILE),
        };
        let write = |target| Probe::FileWrite {
            target,
            bytes: BLOCK,
            sync: WriteSync::Fdatasync,
            writers: 1,
        };
        let (overwrite, direct) = (write(WriteTarget::Overwrite), write(WriteTarget::Direct));
        let mut refused = run(direct, 0.0);
        refused.unsupported = Some("O_DIRECT refused".into());
        let runs = [
            run(overwrite, 1000.0),
            refused.clone(),
            run(overwrite, 3000.0),
            refused,
        ];
        let means = LimitResult::means(&runs);
        assert_eq!(means.len(), 2, "{means:?}");
        assert_eq!(means[0].probe, overwrite);
        assert!((means[0].ops_per_sec - 2000.0).abs() < 1e-9);
        assert!((means[0].gb_per_sec.unwrap() - 2000.0 * BLOCK as f64 / 1e9).abs() < 1e-9);
        assert!((means[0].ns_per_op - 5e5).abs() < 1e-6);
        assert_eq!((means[0].p50_ns, means[0].p99_ns), (None, None));
        assert_eq!(means[0].working_set_bytes, Some(CACHED_FILE));
        assert_eq!(means[1].probe, direct);
        assert!(means[1].unsupported.is_some());
        assert!(LimitResult::means(&[]).is_empty());
    }

    #[test]
    fn a_missing_directory_is_named_in_the_error() {
        let probe = Probe::FileWrite {
            target: WriteTarget::Overwrite,
            bytes: BLOCK,
            sync: WriteSync::None,
            writers: 1,
        };
        let err = measure(
            probe,
            Path::new("/nonexistent-walden-dir"),
            Duration::from_millis(10),
        )
        .unwrap_err();
        assert!(err.to_string().contains("/nonexistent-walden-dir"), "{err}");
        assert!(
            err.to_string().starts_with("overwrite of a cached file"),
            "{err}"
        );
    }

    #[test]
    fn labels_say_target_sync_size_and_writers() {
        let p = |target, bytes, sync, writers| {
            Probe::FileWrite {
                target,
                bytes,
                sync,
                writers,
            }
            .label()
        };
        assert_eq!(
            p(WriteTarget::Overwrite, 8 << 10, WriteSync::OpenDatasync, 1),
            "overwrite of a cached file, O_DSYNC, 8 kB"
        );
        assert_eq!(
            p(WriteTarget::Direct, BLOCK, WriteSync::Fdatasync, 2),
            "O_DIRECT write + fdatasync, 1 MiB, 2 writers"
        );
        assert_eq!(
            p(WriteTarget::Fresh, BLOCK, WriteSync::None, 1),
            "fresh file write, 1 MiB"
        );
        assert_eq!(
            Probe::CopyCrcOverwrite { threads: 2 }.label(),
            "memcpy + CRC-32C + overwrite of a cached file, 1 MiB, 2 thread(s)"
        );
        assert_eq!(
            Probe::CrcOverwrite { threads: 1 }.label(),
            "CRC-32C + overwrite of a cached file, 1 MiB, 1 thread(s)"
        );
    }
}
