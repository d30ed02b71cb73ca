//! Sync failure, PostgreSQL's post-2018 rule ("fsyncgate"), injected at
//! every sync of a run in turn, on the simulated storage.
//!
//! A run: four threads insert and flush records (with a segment switch and
//! a checkpoint on the way, so segment creation, recycling and the control
//! file are synced too). For k = 1, 2, ... the k-th sync of the run (an
//! `fsync`, `fdatasync`, directory sync or `O_DSYNC` write) fails with
//! `EIO`, once, and then also persistently, until a run no longer reaches
//! k syncs. As on Linux, the data the failed sync covered is lost at the
//! next power cut even if a later sync succeeds. Then:
//!
//! - every flush that returned `Ok` covered records that survive a power
//!   cut (so every waiter of the failed flush got an error: an `Ok` would
//!   have acknowledged lost data);
//! - after a thread saw an error, its further inserts and flushes fail; once
//!   the threads are done a flush fails and moves the durable point no
//!   further, and an insert fails with a message saying the log is poisoned;
//! - reopening, with the page cache intact and again after a power cut,
//!   recovers a prefix of the inserted records holding every acknowledged
//!   one, and the reopened log accepts and flushes records;
//! - the same run with the power cut right after it, before anything
//!   reopened the log (a reopen rewrites and syncs the WAL it finds, which
//!   would repair what the failed sync lost): every record reported durable
//!   survived.

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::support::fault::{
    is_user_record, payload, read_log, storage, strategy_configs, Rng, DIR, DURABLE_SYNC_METHODS,
    USER_RMID,
};
use walden::internals::maxalign;
use walden::{Config, Lsn, Record, SimStorage, SyncMethod, Wal};

const THREADS: u64 = 4;
const OPS_PER_THREAD: u64 = 40;

/// What a run did.
#[derive(Debug, Default)]
struct Run {
    /// Inserted records: start → (end, tag, len).
    inserted: BTreeMap<Lsn, (Lsn, u64, usize)>,
    /// Everything below is acknowledged by a flush that returned `Ok`.
    acked: Lsn,
    /// The first error each thread saw.
    errors: Vec<String>,
    /// Syncs of the run (after create).
    syncs: u64,
    /// Syncs failed.
    failed: u64,
}

/// The configurations and how densely to inject: every sync, once and
/// persistently, under every sync method for the default strategies; every
/// 7th sync, once, under one sync method each for the other combinations.
fn plans() -> Vec<(Config, &'static [bool], u64)> {
    let mut out = Vec::new();
    for (c, base) in strategy_configs().into_iter().enumerate() {
        let methods: Vec<SyncMethod> = if c == 0 {
            DURABLE_SYNC_METHODS.to_vec()
        } else {
            vec![DURABLE_SYNC_METHODS[c % DURABLE_SYNC_METHODS.len()]]
        };
        for sync_method in methods {
            let config = Config {
                sync_method,
                buffers: 4 * 8192,
                ..base.clone()
            };
            let (modes, stride): (&'static [bool], u64) = if c == 0 {
                (&[false, true], 1)
            } else {
                (&[false], 7)
            };
            out.push((config, modes, stride));
        }
    }
    out
}

/// Runs the workload with the `k`-th sync failing (`None`: no failure).
/// Runs the workload with the sync `fail` says failing, then recovers: with
/// the page cache intact and then after a power cut, or (`cut_first`) after
/// a power cut right away, before anything reopened the log — so that no
/// recovery's rewrite can repair what the failed sync lost before the cut.
fn run(
    config: &Config,
    seed: u64,
    fail: Option<(u64, bool)>,
    cut_first: bool,
) -> Result<Run, String> {
    let sim = SimStorage::new(seed);
    let wal = Wal::create_with_storage(DIR, config.clone(), storage(&sim))
        .map_err(|e| format!("create: {e}"))?;
    let syncs_at_start = sim.stats().syncs;
    if let Some((k, persistent)) = fail {
        sim.fail_sync(k, persistent);
    }
    let result = Mutex::new(Run::default());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (wal, result) = (&wal, &result);
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x2545_F491_4F6C_DD1D));
                for i in 0..OPS_PER_THREAD {
                    let outcome = if t == 0 && i == OPS_PER_THREAD / 3 {
                        wal.switch_segment().map(|_| ())
                    } else if t == 0 && i == 2 * OPS_PER_THREAD / 3 {
                        wal.checkpoint().map(|_| ())
                    } else {
                        let tag = t << 32 | i;
                        let len = rng.payload_len();
                        wal.insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
                            .and_then(|span| {
                                result
                                    .lock()
                                    .unwrap()
                                    .inserted
                                    .insert(span.start, (span.end, tag, len));
                                wal.flush(span.end)
                            })
                            .map(|upto| {
                                let mut r = result.lock().unwrap();
                                r.acked = r.acked.max(upto);
                            })
                    };
                    if let Err(e) = outcome {
                        let again = wal.insert_and_flush(&Record::new(USER_RMID, 0, vec![1]));
                        let message = match again {
                            Ok(lsn) => {
                                format!("an insert and flush after \"{e}\" returned Ok({lsn})")
                            }
                            Err(_) => e.to_string(),
                        };
                        result.lock().unwrap().errors.push(message);
                        return;
                    }
                }
            });
        }
    });
    let mut run = result.into_inner().unwrap();
    sim.clear_faults();
    let stats = sim.stats();
    run.syncs = stats.syncs - syncs_at_start;
    run.failed = stats.sync_failures;
    check_refusal(&wal, &run)?;
    drop(wal);

    if !cut_first {
        recover_and_check(config, &sim, &mut run, "reopened without a power cut")?;
    }
    sim.power_cut();
    sim.restart();
    let how = if cut_first {
        "power cut right after the run, before any reopen"
    } else {
        "reopened after a power cut"
    };
    recover_and_check(config, &sim, &mut run, how)?;
    Ok(run)
}

/// After an error: every later call failed, nothing more became durable,
/// and the log refuses writes with a clear message.
fn check_refusal(wal: &Wal, run: &Run) -> Result<(), String> {
    if run.errors.is_empty() {
        return Ok(());
    }
    if let Some(message) = run.errors.iter().find(|m| m.contains("returned Ok")) {
        return Err(message.clone());
    }
    let before = wal.flushed();
    if let Ok(lsn) = wal.flush(wal.insert_position()) {
        return Err(format!("a flush after a sync failure returned Ok({lsn})"));
    }
    if wal.flushed() != before {
        return Err(format!(
            "the durable point moved from {before} to {} after a sync failure",
            wal.flushed()
        ));
    }
    match wal.insert(&Record::new(USER_RMID, 0, vec![2])) {
        Ok(lsn) => Err(format!("an insert after a sync failure succeeded at {lsn}")),
        Err(e) if e.to_string().contains("poisoned") => Ok(()),
        Err(e) => Err(format!("unclear refusal after a sync failure: {e}")),
    }
}

/// Opens the log on `sim` and checks it holds a prefix of the inserted
/// records with every acknowledged one, and takes new records.
fn recover_and_check(
    config: &Config,
    sim: &SimStorage,
    run: &mut Run,
    how: &str,
) -> Result<(), String> {
    let (wal, report) = Wal::open_with_storage(DIR, config.clone(), storage(sim))
        .map_err(|e| format!("{how}: recovery failed: {e}"))?;
    let (records, _) =
        read_log(storage(sim), DIR, report.redo).map_err(|e| format!("{how}: {e}"))?;
    let user: Vec<_> = records
        .iter()
        .filter(|r| r.header.rmid == USER_RMID)
        .collect();
    let expected: Vec<_> = run.inserted.range(report.redo..).collect();
    for (i, r) in user.iter().enumerate() {
        let Some((&lsn, &(end, tag, len))) = expected.get(i) else {
            return Err(format!("{how}: record at {} was never inserted", r.lsn));
        };
        if r.lsn != lsn || Lsn(maxalign(r.end.0)) != end || !is_user_record(r, tag, len) {
            return Err(format!(
                "{how}: record at {} is not the one inserted at {lsn}",
                r.lsn
            ));
        }
    }
    if let Some((lsn, (end, ..))) = expected[user.len()..]
        .iter()
        .find(|(_, (end, ..))| *end <= run.acked)
    {
        return Err(format!(
            "{how}: acknowledged record at {lsn} (end {end}) lost; acknowledged up to {}, recovery stopped: {}",
            run.acked, report.stop
        ));
    }
    // Records not recovered are gone for good; the log continues after
    // the recovered ones.
    let lost: Vec<Lsn> = expected[user.len()..].iter().map(|(&lsn, _)| lsn).collect();
    for lsn in lost {
        run.inserted.remove(&lsn);
    }
    let tag = u64::MAX - run.inserted.len() as u64;
    let span = wal
        .insert_span(&Record::new(USER_RMID, 0, payload(tag, 100)))
        .map_err(|e| format!("{how}: the reopened log refused a record: {e}"))?;
    run.acked = wal
        .flush(span.end)
        .map_err(|e| format!("{how}: the reopened log failed a flush: {e}"))?;
    run.inserted.insert(span.start, (span.end, tag, 100));
    Ok(())
}

#[test]
fn a_failed_sync_fails_its_waiters_poisons_the_log_and_loses_nothing_acknowledged() {
    let mut injected = 0;
    let mut poisoned_runs = 0;
    let mut cut_first_runs = 0;
    for (c, (config, modes, stride)) in plans().iter().enumerate() {
        let seed = 0x5EED_0000 + c as u64;
        let clean =
            run(config, seed, None, false).unwrap_or_else(|e| panic!("{config:?}, no fault: {e}"));
        assert_eq!(clean.failed, 0);
        assert!(clean.errors.is_empty(), "{:?}", clean.errors);
        assert!(clean.acked > Lsn::INVALID && clean.syncs > 10, "{clean:?}");
        for &persistent in *modes {
            let mut k = 1;
            loop {
                let r = run(config, seed, Some((k, persistent)), false).unwrap_or_else(|e| {
                    panic!(
                        "sync {k} failing{} ({config:?}): {e}",
                        if persistent { " persistently" } else { "" },
                    )
                });
                // The same run, cut off from the page cache at once: every
                // record reported durable must have reached the disk.
                let cut = run(config, seed, Some((k, persistent)), true).unwrap_or_else(|e| {
                    panic!(
                        "sync {k} failing{}, then a power cut ({config:?}): {e}",
                        if persistent { " persistently" } else { "" },
                    )
                });
                cut_first_runs += usize::from(cut.failed > 0);
                if r.failed == 0 {
                    break;
                }
                injected += 1;
                poisoned_runs += usize::from(!r.errors.is_empty());
                k += stride;
            }
            assert!(k > 10, "the failure reached {k} syncs");
        }
    }
    println!(
        "{injected} runs with an injected sync failure, {poisoned_runs} of them poisoned the log; \
         {cut_first_runs} more cut the power before any reopen"
    );
    assert!(
        cut_first_runs * 2 > injected,
        "{cut_first_runs} of {injected}"
    );
    assert!(
        poisoned_runs * 2 > injected,
        "most failures hit a WAL flush"
    );
}
