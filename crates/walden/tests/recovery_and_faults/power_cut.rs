//! Power-cut testing on the simulated storage ([`SimStorage`]).
//!
//! A *life* is one log on one simulated disk. Each boot of it runs a
//! multi-thread workload (inserts of 0 B to 24 KiB, flushes, segment
//! switches, checkpoints that recycle segments) until the power is cut in
//! the middle of a random storage operation, one of the first 80 after the
//! start of the boot or, one boot in two, after its first acknowledgement
//! (so that a step costing more than 80 operations, such as preparing a
//! segment, cannot starve a life: see [`CUT_AFTER_AN_ACK_ONE_IN`]). One
//! boot in four also fails a sync (the 1st to 24th of the boot, once or
//! persistently, with Linux's loss of what it covered): the log poisons,
//! and the power is cut without any reopen that could rewrite what the
//! failed sync lost. Unsynced sectors then tear, unsynced directory
//! changes are forgotten, reverted sectors hold zeros, random or stale
//! bytes. The log is recovered, and now and then recovery itself is cut
//! and restarted. After every recovery:
//!
//! - every record whose own flush returned `Ok` is read back at its LSN,
//!   byte-identical ([`acked_oracle`]: the test's own list, checked against
//!   a redo point the test validates from the checkpoints it called, not
//!   taken from recovery); and every record below a LSN a flush returned,
//!   or recovered by an earlier recovery, is too;
//! - after a call failed (a failed sync), no record inserted later was
//!   acknowledged, and the log refuses inserts as poisoned; and no call
//!   fails with the power on unless a sync failed;
//! - the records read from the redo point are exactly a prefix, in LSN
//!   order, of the records inserted: nothing after the valid end is
//!   replayed, no stale record from an earlier incarnation or a recycled
//!   segment is accepted, no record is stitched from old and new bytes;
//! - a recovery that was cut and restarted ends with the same records as the
//!   crash image had;
//! - over the run, at least one record per cut is acknowledged on average,
//!   and at least a tenth of the records inserted (see the floor's
//!   reasoning at [`ACKED_FLOOR_DIVISOR`]), so the test cannot pass by
//!   acknowledging nothing;
//! - for Postgres15 logs, `pg_waldump` reads the recovered log with exit 0,
//!   after every recovery (`WALDEN_WALDUMP_EVERY=N`: every N-th, and every
//!   one whose recovery took an unusual path: recovery cut and restarted,
//!   or a cut-off record overwritten).
//!
//! `WALDEN_POWER_CUTS` sets the number of cuts (default 10,000, in lives of
//! 20). Replaying, in all three tests ([`seeds`]): every run prints its
//! `WALDEN_POWER_CUT_BASE`; a failure of a life (a broken invariant, or a
//! panic in any of its threads) prints the life's seed and the command that
//! replays it alone, `WALDEN_POWER_CUT_SEED=<seed>`, with the test's setup;
//! a failed floor prints the command that reruns the run
//! (`WALDEN_POWER_CUT_BASE=<base>`), and the seeds and figures of the lives
//! with the fewest acknowledgements per cut. With one writer thread a life
//! is exactly reproducible; with several, the OS's schedule also plays a
//! part, so run a replay a few times.

mod acked_oracle;
mod seeds;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};

use acked_oracle::{AckedOracle, Checkpoint};
use seeds::{LifeFigures, Run};

use crate::support::fault::{
    count_from_env, is_user_record, payload, read_log, storage, strategy_configs, Rng, DIR,
    DURABLE_SYNC_METHODS, USER_RMID,
};
use walden::internals::maxalign;
use walden::{
    Config, Lsn, Record, RecoveryReport, SegmentSize, SimStats, SimStorage, Wal, WalFormat,
    WalRecord,
};

/// Cuts per life.
const CUTS_PER_LIFE: u64 = 20;
/// Every this many cuts (over the run), pg_waldump checks the log, unless
/// `WALDEN_WALDUMP_EVERY` says otherwise.
const WALDUMP_EVERY: u64 = 1;
/// One boot in this many fails a sync.
const SYNC_FAILURE_ONE_IN: u64 = 4;
/// The failed sync is one of the first this many of its boot.
const SYNC_FAILURE_WITHIN: u64 = 24;
/// Cuts from which a run must have failed a sync in at least one boot
/// (at one boot in eight, missing it has a probability of 1e-58).
const FAILED_SYNC_FLOOR_CUTS: u64 = 1000;
/// The power is cut in the middle of one of the first this many storage
/// operations (of any thread: committers, preallocator, background writer)
/// after the cut is armed.
const CUT_WITHIN_OPS: u64 = 80;
/// One boot in this many arms its cut only once a flush of the boot has
/// returned `Ok`; the others arm it at the start, so that the first
/// operations after a recovery are cut too.
///
/// Armed at the start of every boot, the cut starved lives in which one
/// step costs more operations than [`CUT_WITHIN_OPS`]: with
/// `SegmentPrep::PageHeaders` a 1 MiB segment takes about 130 (a write per
/// page header), recovery discards the segments after its end, and the
/// preallocator prepares only those after the one the writer enters. So
/// once a life's WAL reached a segment boundary, every later boot's first
/// flush had to create the next segment and was cut inside it: the life
/// stayed at that boundary for the rest of its cuts, inserting a record or
/// two a boot and acknowledging none (in 120 herd runs on 2026-11-27,
/// 94 % of the page-headers boots acknowledged nothing, against 16 % of
/// the others, and 5 of the 8 runs whose two lives were both page-headers
/// failed the floors). Armed after an acknowledgement, the cut lets that
/// step finish, and the life moves on.
const CUT_AFTER_AN_ACK_ONE_IN: u64 = 2;
/// The floor on acknowledged records: at least one in this many records
/// inserted has its own flush return `Ok`. A boot flushes after one insert
/// in three (every insert under a herd), and a flush is acknowledged unless
/// the power cut or a failed sync comes first; the cut lands within
/// [`CUT_WITHIN_OPS`] operations of its arming, and a flush costs about two
/// (a write and a sync), so most records inserted before the cut had their
/// flush return; and in half the boots (see [`CUT_AFTER_AN_ACK_ONE_IN`])
/// only after a first acknowledgement, however many operations the boot
/// spent before it (creating a segment, say). A tenth leaves a factor of
/// about three below the expected third. Neither floor can hold when
/// committers starve: flushes that never return `Ok` acknowledge nothing.
const ACKED_FLOOR_DIVISOR: u64 = 10;

/// A record inserted and not known to be lost.
#[derive(Clone, Copy, Debug)]
struct Inserted {
    end: Lsn,
    tag: u64,
    len: usize,
}

/// Figures of a run.
#[derive(Debug, Default)]
struct Totals {
    lives: AtomicU64,
    cuts: AtomicU64,
    cuts_mid_workload: AtomicU64,
    recovery_cuts: AtomicU64,
    records_inserted: AtomicU64,
    records_verified: AtomicU64,
    acked_verified: AtomicU64,
    /// Flushes of a thread's own record that returned `Ok`.
    acks: AtomicU64,
    /// Acknowledged records the oracle found read back, over every check.
    oracle_checks: AtomicU64,
    /// Boots in which a sync failed.
    boots_with_failed_sync: AtomicU64,
    /// Of those, boots in which the log was then checked to refuse inserts
    /// (the power was not cut first).
    poisoned_checked: AtomicU64,
    overwritten_contrecords: AtomicU64,
    waldump_runs: AtomicU64,
    auto_checkpoints: AtomicU64,
    sim: Mutex<SimStats>,
    /// Each life's figures, named by the floors' messages.
    lives_figures: Mutex<Vec<LifeFigures>>,
}

impl Totals {
    fn add(&self, counter: &AtomicU64, n: u64) {
        // Relaxed: statistics, read after every worker has joined.
        counter.fetch_add(n, Ordering::Relaxed);
    }

    fn get(&self, counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }

    /// Prints the faults injected and the acknowledgements, and fails
    /// unless the run acknowledged at least one record per cut on average
    /// and one in [`ACKED_FLOOR_DIVISOR`] of the records inserted, and, from
    /// [`FAILED_SYNC_FLOOR_CUTS`] cuts, failed a sync in at least one boot
    /// (one in [`SYNC_FAILURE_ONE_IN`] arms a failure; about half of those
    /// reach it before the power cut).
    /// A failure names the run's seeds and its weakest lives (see
    /// [`Run::replay_run`]).
    fn report_faults_and_assert_floors(&self, run: &Run) {
        let sim = *self.sim.lock().unwrap();
        let (cuts, inserted) = (self.get(&self.cuts), self.get(&self.records_inserted));
        let (acks, failed) = (self.get(&self.acks), self.get(&self.boots_with_failed_sync));
        println!(
            "faults: {} storage ops, {} unsynced sectors lost ({} filled with stale bytes), {} \
             kept, {} directory changes forgotten, {} kept; {} of {} syncs failed, in {failed} \
             boots ({} then checked to refuse inserts as poisoned); acknowledged: {acks} records \
             by their own flush ({:.1} per cut, {:.0}% of {inserted} inserted), {} checks of \
             them after recoveries, 0 lost",
            sim.ops,
            sim.sectors_lost,
            sim.stale_sectors,
            sim.sectors_kept,
            sim.dir_changes_lost,
            sim.dir_changes_kept,
            sim.sync_failures,
            sim.syncs,
            self.get(&self.poisoned_checked),
            acks as f64 / cuts.max(1) as f64,
            100.0 * acks as f64 / inserted.max(1) as f64,
            self.get(&self.oracle_checks),
        );
        let rerun = || run.replay_run(&self.lives_figures.lock().unwrap());
        assert!(
            acks >= cuts && acks * ACKED_FLOOR_DIVISOR >= inserted,
            "too few records acknowledged: {acks} over {cuts} cuts, {inserted} inserted{}",
            rerun()
        );
        // A boot reaches its armed failure about one time in eight; below
        // FAILED_SYNC_FLOOR_CUTS cuts (the herd's 40) a run without one is
        // too likely (0.5 % at 40) for a floor, above it negligible.
        if cuts >= FAILED_SYNC_FLOOR_CUTS {
            assert!(failed > 0, "no boot of {cuts} failed a sync{}", rerun());
        }
    }

    fn add_sim(&self, s: SimStats) {
        let mut t = self.sim.lock().unwrap();
        t.ops += s.ops;
        t.power_cuts += s.power_cuts;
        t.sectors_lost += s.sectors_lost;
        t.sectors_kept += s.sectors_kept;
        t.stale_sectors += s.stale_sectors;
        t.dir_changes_lost += s.dir_changes_lost;
        t.dir_changes_kept += s.dir_changes_kept;
        t.syncs += s.syncs;
        t.sync_failures += s.sync_failures;
    }
}

/// One log on one simulated disk, and what is known about its contents.
struct Life<'a> {
    rng: Rng,
    sim: SimStorage,
    config: Config,
    /// User records inserted and not known to be lost, by start LSN.
    model: BTreeMap<Lsn, Inserted>,
    /// Everything below is acknowledged durable.
    durable: Lsn,
    /// Each record acknowledged by its own flush, checked after every
    /// recovery.
    oracle: AckedOracle,
    boot: u64,
    /// `Some(n)`: every boot runs `n` committers, each flushing every
    /// record it inserts (group commit under a herd), instead of 1 to 4
    /// threads flushing now and then.
    committers: Option<u64>,
    /// Cuts so far, records inserted and acknowledged by their own flush.
    cuts: u64,
    inserted: u64,
    acks: u64,
    totals: &'a Totals,
}

impl<'a> Life<'a> {
    fn new(seed: u64, totals: &'a Totals) -> Self {
        let mut rng = Rng::new(seed);
        let configs = strategy_configs();
        let mut config = configs[rng.below(configs.len() as u64) as usize].clone();
        config.sync_method =
            DURABLE_SYNC_METHODS[rng.below(DURABLE_SYNC_METHODS.len() as u64) as usize];
        config.insert_slots = 1 + rng.below(8) as usize;
        config.buffers = (4 + rng.below(13)) * 8192;
        if config.validate().is_err() {
            config.insert_slots = 4;
        }
        Life {
            rng,
            sim: SimStorage::new(seed),
            config,
            model: BTreeMap::new(),
            durable: Lsn::INVALID,
            oracle: AckedOracle::new(Lsn::INVALID),
            boot: 0,
            committers: None,
            cuts: 0,
            inserted: 0,
            acks: 0,
            totals,
        }
    }

    /// The configuration that matters most to a replay, in a few words.
    fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "{:?}, sync {}, segments {} with {} ahead, direct I/O {}, {} committers",
            c.format,
            c.sync_method,
            c.segment_prep,
            c.segments_ahead,
            c.direct_io,
            self.committers
                .map_or("1 to 4".to_string(), |n| n.to_string())
        )
    }

    fn run(&mut self, cuts: u64, waldump: &WaldumpSchedule) -> Result<(), String> {
        let wal = Wal::create_with_storage(DIR, self.config.clone(), storage(&self.sim))
            .map_err(|e| format!("create: {e}"))?;
        let control = walden::internals::ControlFile::read(&self.sim, DIR.as_ref())
            .map_err(|e| format!("the new log's control file: {e}"))?;
        self.oracle = AckedOracle::new(control.redo);
        let mut wal = Some(wal);
        for cut in 0..cuts {
            let live = wal.take().ok_or("no log")?;
            self.boot_and_cut(live)
                .map_err(|e| format!("cut {cut} (boot {}): {e}", self.boot))?;
            let (recovered, report, unusual) = self.recover()?;
            self.verify(&recovered, &report)
                .map_err(|e| format!("after cut {cut} (boot {}): {e}", self.boot))?;
            if self.config.format == WalFormat::Postgres15 && waldump.due(unusual) {
                self.waldump(&report)
                    .map_err(|e| format!("after cut {cut}: {e}"))?;
            }
            wal = Some(recovered);
        }
        drop(wal);
        self.totals.add_sim(self.sim.stats());
        Ok(())
    }

    /// Runs the workload on `wal` until an armed power cut hits, or cuts
    /// the power after it; one boot in [`SYNC_FAILURE_ONE_IN`] also fails a
    /// sync. Fails if a record inserted after a call failed was
    /// acknowledged, or if the log, a call having failed before the power
    /// was cut, still takes inserts.
    fn boot_and_cut(&mut self, wal: Wal) -> Result<(), String> {
        self.boot += 1;
        let drawn = 1 + self.rng.below(4);
        let threads = self.committers.unwrap_or(drawn);
        let always_flush = self.committers.is_some();
        let ops_per_thread = 10 + self.rng.below(50);
        let cut_after = 1 + self.rng.below(CUT_WITHIN_OPS);
        let arm_at_first_ack = self.rng.one_in(CUT_AFTER_AN_ACK_ONE_IN);
        if !arm_at_first_ack {
            self.sim.arm_power_cut(cut_after);
        }
        let failures_before = self.sim.stats().sync_failures;
        if self.rng.one_in(SYNC_FAILURE_ONE_IN) {
            let k = 1 + self.rng.below(SYNC_FAILURE_WITHIN);
            self.sim.fail_sync(k, self.rng.one_in(2));
        }
        let inserted = Mutex::new(Vec::new());
        let acked_records = Mutex::new(Vec::new());
        let checkpoints = Mutex::new(Vec::new());
        let violations = Mutex::new(Vec::new());
        let acked = AtomicU64::new(0);
        // Without a background writer, automatic checkpoints run in `flush`.
        let auto_checkpoints =
            self.config.max_wal_size.is_some() || self.config.checkpoint_timeout.is_some();
        // Set once any call of the boot failed.
        let refused = AtomicBool::new(false);
        // The threads start together: spawning a herd takes milliseconds,
        // during which its first committers would spend the cut's budget
        // alone (a debugger at a cut found 2 of 64 spawned).
        let start = Barrier::new(threads as usize);
        std::thread::scope(|s| {
            for t in 0..threads {
                let mut rng = Rng::new(self.rng.next());
                let (wal, inserted, acked) = (&wal, &inserted, &acked);
                let (acked_records, checkpoints) = (&acked_records, &checkpoints);
                let (violations, refused) = (&violations, &refused);
                let (boot, sim, start) = (self.boot, &self.sim, &start);
                s.spawn(move || {
                    start.wait();
                    // Release: a thread that reads `refused` as set (Acquire,
                    // below) sees the log poisoned by the failure before it.
                    let fail = || refused.store(true, Ordering::Release);
                    for i in 0..ops_per_thread {
                        let roll = rng.below(100);
                        if t == 0 && roll < 2 {
                            let before = wal.insert_position();
                            let done = wal.checkpoint().ok();
                            checkpoints
                                .lock()
                                .unwrap()
                                .push(Checkpoint { before, done });
                            if done.is_none() {
                                return fail();
                            }
                            continue;
                        }
                        if t == 0 && roll < 3 {
                            if wal.switch_segment().is_err() {
                                return fail();
                            }
                            continue;
                        }
                        let tag = boot << 24 | t << 16 | i;
                        let len = rng.payload_len();
                        // Acquire: pairs with the Release in `fail`.
                        let after_a_failure = refused.load(Ordering::Acquire);
                        let Ok(span) =
                            wal.insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
                        else {
                            return fail();
                        };
                        let record = Inserted {
                            end: span.end,
                            tag,
                            len,
                        };
                        inserted.lock().unwrap().push((span.start, record));
                        if rng.one_in(3) || always_flush {
                            if auto_checkpoints {
                                // The flush may take an automatic checkpoint,
                                // whose redo point is at or after this.
                                let before = wal.insert_position();
                                let done = None;
                                checkpoints
                                    .lock()
                                    .unwrap()
                                    .push(Checkpoint { before, done });
                            }
                            let before = wal.flushed();
                            match wal.flush(span.end) {
                                Ok(upto) => {
                                    let now = wal.flushed();
                                    assert!(
                                        span.end <= upto && upto <= now && before <= now,
                                        "flush to {} returned {upto}; durable point {before}, \
                                         then {now}",
                                        span.end
                                    );
                                    if after_a_failure {
                                        violations.lock().unwrap().push(format!(
                                            "record at {} inserted after a call had failed \
                                             was acknowledged durable (flush returned {upto})",
                                            span.start
                                        ));
                                    }
                                    // Relaxed: read after the threads are joined.
                                    acked.fetch_max(upto.0, Ordering::Relaxed);
                                    let mut acked_records = acked_records.lock().unwrap();
                                    acked_records.push((span.start, record));
                                    if arm_at_first_ack && acked_records.len() == 1 {
                                        sim.arm_power_cut(cut_after);
                                    }
                                }
                                Err(_) => return fail(),
                            }
                        }
                    }
                });
            }
        });
        let failed_sync = self.sim.stats().sync_failures > failures_before;
        self.sim.clear_faults();
        if failed_sync {
            self.totals.add(&self.totals.boots_with_failed_sync, 1);
        }
        let refused = refused.into_inner();
        if refused && !failed_sync && !self.sim.is_cut() {
            // Nothing explains the failure: a flush or insert that fails
            // by itself starves committers as surely as one that hangs.
            violations
                .lock()
                .unwrap()
                .push("a call failed with the power on and no sync failed".into());
        }
        if refused && failed_sync && !self.sim.is_cut() {
            // The power is still on: the failure was the sync's, and the
            // log must refuse new records until it is reopened.
            match wal.insert(&Record::new(USER_RMID, 0, vec![2])) {
                Ok(lsn) => violations
                    .lock()
                    .unwrap()
                    .push(format!("an insert after a failed sync succeeded at {lsn}")),
                Err(e) if e.to_string().contains("poisoned") => {
                    self.totals.add(&self.totals.poisoned_checked, 1);
                }
                Err(e) => violations
                    .lock()
                    .unwrap()
                    .push(format!("unclear refusal after a failed sync: {e}")),
            }
        }
        if self.sim.is_cut() {
            self.totals.add(&self.totals.cuts_mid_workload, 1);
        } else {
            self.sim.disarm_power_cut();
            self.sim.power_cut();
        }
        let stats = wal.stats();
        let auto = stats.checkpoints_by_volume + stats.checkpoints_by_time;
        self.totals.add(&self.totals.auto_checkpoints, auto);
        drop(wal);
        self.sim.restart();
        self.totals.add(&self.totals.cuts, 1);
        self.cuts += 1;
        let inserted = inserted.into_inner().unwrap();
        self.totals
            .add(&self.totals.records_inserted, inserted.len() as u64);
        self.inserted += inserted.len() as u64;
        self.model.extend(inserted);
        self.durable = self.durable.max(Lsn(acked.into_inner()));
        let acked_records = acked_records.into_inner().unwrap();
        self.totals
            .add(&self.totals.acks, acked_records.len() as u64);
        self.acks += acked_records.len() as u64;
        self.oracle
            .record_boot(acked_records, checkpoints.into_inner().unwrap());
        let violations = violations.into_inner().unwrap();
        match violations.first() {
            Some(v) => Err(format!("{v} ({} violations)", violations.len())),
            None => Ok(()),
        }
    }

    /// Opens the log after a cut, sometimes cutting recovery itself (and
    /// then the interrupted recovery's successor) and restarting it.
    fn recover(&mut self) -> Result<(Wal, RecoveryReport, bool), String> {
        let cut_recovery = self.rng.one_in(8);
        let before = if cut_recovery {
            Some(self.user_records_on_disk()?)
        } else {
            None
        };
        let mut unusual = false;
        for attempt in 0..10 {
            if cut_recovery && attempt < 2 {
                self.sim.arm_power_cut(1 + self.rng.below(60));
            }
            let opened = Wal::open_with_storage(DIR, self.config.clone(), storage(&self.sim));
            self.sim.disarm_power_cut();
            match opened {
                Ok((wal, report)) if !self.sim.is_cut() => {
                    if report.overwritten.is_some() {
                        unusual = true;
                        self.totals.add(&self.totals.overwritten_contrecords, 1);
                    }
                    if let Some(before) = before {
                        let after = self.user_records_on_disk()?;
                        if before != after {
                            return Err(format!(
                                "recovery cut and restarted changed the records: {} before, {} after",
                                before.len(),
                                after.len()
                            ));
                        }
                    }
                    return Ok((wal, report, unusual));
                }
                Ok((wal, _)) => drop(wal),
                Err(e) if !self.sim.is_cut() => {
                    return Err(format!("recovery failed without a power cut: {e}"))
                }
                Err(_) => {}
            }
            unusual = true;
            self.totals.add(&self.totals.recovery_cuts, 1);
            self.sim.restart();
        }
        Err("recovery never finished".into())
    }

    /// The user records of the log as the disk holds it now: (LSN, end).
    fn user_records_on_disk(&self) -> Result<Vec<(Lsn, Lsn)>, String> {
        let control = walden::internals::ControlFile::read(&self.sim, DIR.as_ref())
            .map_err(|e| e.to_string())?;
        let (records, _) = read_log(storage(&self.sim), DIR, control.redo)?;
        Ok(records
            .iter()
            .filter(|r| r.header.rmid == USER_RMID)
            .map(|r| (r.lsn, r.end))
            .collect())
    }

    /// Checks the invariants of the module docs and makes the model the
    /// recovered log.
    fn verify(&mut self, wal: &Wal, report: &RecoveryReport) -> Result<(), String> {
        let (records, _) = read_log(storage(&self.sim), DIR, report.redo)?;
        let user: Vec<&WalRecord> = records
            .iter()
            .filter(|r| r.header.rmid == USER_RMID)
            .collect();
        let checked = self.oracle.check(report.redo, &user)?;
        self.totals.add(&self.totals.oracle_checks, checked as u64);
        self.model = self.model.split_off(&report.redo);
        let expected: Vec<(Lsn, Inserted)> = self.model.iter().map(|(k, v)| (*k, *v)).collect();
        for (i, r) in user.iter().enumerate() {
            let Some((lsn, e)) = expected.get(i) else {
                return Err(format!(
                    "record at {} replayed past the end of what was inserted (stale or garbage)",
                    r.lsn
                ));
            };
            if r.lsn != *lsn || Lsn(maxalign(r.end.0)) != e.end || !is_user_record(r, e.tag, e.len)
            {
                let body = r.decode_body().map(|b| b.main_data).unwrap_or_default();
                return Err(format!(
                    "record at {} (end {}, {} bytes, tag {:?}) is not the record inserted at {lsn} \
                     (end {}, {} bytes, tag {:#x}): stale, stitched or a hole",
                    r.lsn,
                    r.end,
                    body.len(),
                    body.get(..8).map(|t| format!("{t:02x?}")),
                    e.end,
                    e.len,
                    e.tag
                ));
            }
        }
        let kept = user.len();
        if let Some((lsn, lost)) = expected[kept..].iter().find(|(_, e)| e.end <= self.durable) {
            return Err(format!(
                "acknowledged record at {lsn} (end {}) lost: durable up to {}, recovery ended at {} ({})",
                lost.end, self.durable, report.end, report.stop
            ));
        }
        if report.end > wal.insert_position() {
            return Err(format!(
                "recovery reported end {} past the insert position {}",
                report.end,
                wal.insert_position()
            ));
        }
        let acked = expected[..kept]
            .iter()
            .filter(|(_, e)| e.end <= self.durable)
            .count();
        self.totals.add(&self.totals.records_verified, kept as u64);
        self.totals.add(&self.totals.acked_verified, acked as u64);
        self.model = expected[..kept].iter().copied().collect();
        if let Some(last) = user.last() {
            // What recovery found is durable: it must survive every later cut.
            self.durable = self.durable.max(last.end);
        }
        Ok(())
    }

    /// Writes the disk's log to a real directory and runs pg_waldump on it.
    fn waldump(&self, report: &RecoveryReport) -> Result<(), String> {
        let (records, _) = read_log(storage(&self.sim), DIR, report.redo)?;
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return Err("no record after the redo point".into());
        };
        let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
        self.sim
            .materialize(DIR.as_ref(), tmp.path())
            .map_err(|e| e.to_string())?;
        // pg_waldump takes the segment size from whichever segment file it
        // lists first: leave only the ones it reads.
        let seg = SegmentSize::new(self.config.segment_size).map_err(|e| e.to_string())?;
        let wanted = seg.segno(first.lsn)..=seg.segno(Lsn(last.end.0 - 1));
        for entry in std::fs::read_dir(tmp.path()).map_err(|e| e.to_string())? {
            let path = entry.map_err(|e| e.to_string())?.path();
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if !seg
                .parse_file_name(name)
                .is_some_and(|(_, s)| wanted.contains(&s))
            {
                std::fs::remove_file(&path).map_err(|e| e.to_string())?;
            }
        }
        let out = walden_testkit::run_pg_waldump([
            "-q".as_ref(),
            "-p".as_ref(),
            tmp.path().as_os_str(),
            "-s".as_ref(),
            first.lsn.to_string().as_ref(),
            "-e".as_ref(),
            last.end.to_string().as_ref(),
        ])
        .map_err(|e| e.to_string())?;
        self.totals.add(&self.totals.waldump_runs, 1);
        if !out.status.success() {
            return Err(format!(
                "pg_waldump -s {} -e {} failed: {}",
                first.lsn,
                last.end,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    }
}

/// Which recoveries pg_waldump checks: every `every`-th over the run, and
/// every unusual one.
struct WaldumpSchedule {
    every: u64,
    tickets: AtomicU64,
}

impl WaldumpSchedule {
    fn from_env() -> Self {
        WaldumpSchedule {
            every: count_from_env("WALDEN_WALDUMP_EVERY", WALDUMP_EVERY).max(1),
            tickets: AtomicU64::new(0),
        }
    }

    fn due(&self, unusual: bool) -> bool {
        // Relaxed: a ticket counter.
        let ticket = self.tickets.fetch_add(1, Ordering::Relaxed);
        unusual || ticket.is_multiple_of(self.every)
    }
}

/// Runs the lives of `run` that make `cuts` cuts (a replay: its one life),
/// `workers` at a time, each set up by `setup` after [`Life::new`]; stops
/// taking new lives at the first failure. A failure (a broken invariant,
/// or a panic in the life, a committer's included) names the life's seed
/// and how to replay it.
fn run_lives(
    run: &Run,
    cuts: u64,
    workers: usize,
    totals: &Totals,
    setup: impl Fn(&mut Life) + Sync,
) -> Result<(), String> {
    let waldump = WaldumpSchedule::from_env();
    let seeds = run.seeds(cuts, CUTS_PER_LIFE);
    let next = AtomicU64::new(0);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| loop {
                // Relaxed: a ticket counter.
                let i = next.fetch_add(1, Ordering::Relaxed) as usize;
                let Some(&seed) = seeds.get(i) else { return };
                if !failures.lock().unwrap().is_empty() {
                    return;
                }
                let mut life = Life::new(seed, totals);
                setup(&mut life);
                let setup = life.describe();
                let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    life.run(CUTS_PER_LIFE, &waldump)
                }));
                let failed = match ran {
                    Ok(Ok(())) => None,
                    Ok(Err(e)) => Some(e),
                    Err(panic) => Some(format!("panicked: {}", panic_message(&panic))),
                };
                if let Some(e) = failed {
                    failures.lock().unwrap().push(format!(
                        "life seed {seed} ({setup}): {e}\n  {}",
                        run.replay_life(seed)
                    ));
                }
                totals.add(&totals.lives, 1);
                totals.lives_figures.lock().unwrap().push(LifeFigures {
                    seed,
                    setup,
                    cuts: life.cuts,
                    inserted: life.inserted,
                    acks: life.acks,
                });
            });
        }
    });
    let failures = failures.into_inner().unwrap();
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// The message of a panic's payload.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    match (panic.downcast_ref::<&str>(), panic.downcast_ref::<String>()) {
        (Some(s), _) => s,
        (_, Some(s)) => s,
        _ => "(a thread of the life panicked: see its message above)",
    }
}

/// Group commit under a herd: lives whose boots run many committers, each
/// flushing every record, with a power cut in the middle; every flush
/// returns a durable point at or past its record that the log's durable
/// point has reached and never goes back from, and nothing acknowledged is
/// lost. `WALDEN_COMMITTERS` sets the number of threads (default 64),
/// `WALDEN_COMMITTER_CUTS` the cuts (default 40); a failure prints the
/// seeds to replay it with (`WALDEN_POWER_CUT_SEED`, `WALDEN_POWER_CUT_BASE`:
/// see the module docs).
#[test]
fn power_cuts_under_many_committers_lose_nothing_acknowledged() {
    let run =
        Run::from_env("power_cut::power_cuts_under_many_committers_lose_nothing_acknowledged");
    let totals = Totals::default();
    let committers = count_from_env("WALDEN_COMMITTERS", 64);
    let cuts = count_from_env("WALDEN_COMMITTER_CUTS", 40);
    if let Err(e) = run_lives(&run, cuts, 1, &totals, |life| {
        life.committers = Some(committers)
    }) {
        panic!("{committers} committers: {e}");
    }
    println!(
        "{committers} committers: {} power cuts ({} mid-workload), {} records acknowledged and \
         verified, 0 lost",
        totals.get(&totals.cuts),
        totals.get(&totals.cuts_mid_workload),
        totals.get(&totals.acked_verified)
    );
    totals.report_faults_and_assert_floors(&run);
}

/// Automatic checkpoints by volume (every two segments) and by time
/// (every millisecond with records) under power cuts: they move the redo
/// point and retire segments while the workload runs, and recovery still
/// loses no acknowledged record from the redo point on and replays nothing
/// stale. Without a background writer, so that they run inside the
/// workload's flushes and never between a recovery and its checks (the
/// background writer's rounds are `writer_and_segments::auto_checkpoint`'s).
/// `WALDEN_AUTO_CHECKPOINT_CUTS` sets the cuts (default 200); replay as
/// the module docs say.
#[test]
fn power_cuts_with_automatic_checkpoints_lose_nothing_acknowledged() {
    let run =
        Run::from_env("power_cut::power_cuts_with_automatic_checkpoints_lose_nothing_acknowledged");
    let totals = Totals::default();
    let cuts = count_from_env("WALDEN_AUTO_CHECKPOINT_CUTS", 200);
    if let Err(e) = run_lives(&run, cuts, 1, &totals, |life| {
        life.config.writer_delay = None;
        life.config.async_commit = false;
        life.config.max_wal_size = Some(2 * life.config.segment_size);
        life.config.checkpoint_timeout = Some(std::time::Duration::from_millis(1));
        life.config.wal_keep_size = life.rng.below(3) * life.config.segment_size;
    }) {
        panic!("automatic checkpoints: {e}");
    }
    println!(
        "automatic checkpoints: {} power cuts ({} mid-workload), {} automatic checkpoints, {} \
         records acknowledged and verified, 0 lost",
        totals.get(&totals.cuts),
        totals.get(&totals.cuts_mid_workload),
        totals.get(&totals.auto_checkpoints),
        totals.get(&totals.acked_verified)
    );
    let rerun = run.replay_run(&totals.lives_figures.lock().unwrap());
    assert!(
        totals.get(&totals.cuts) >= run.cuts(cuts, CUTS_PER_LIFE),
        "too few cuts{rerun}"
    );
    assert!(
        totals.get(&totals.acked_verified) > 0,
        "no acknowledged record verified{rerun}"
    );
    assert!(
        totals.get(&totals.auto_checkpoints) > 0,
        "no automatic checkpoint ran during the workload{rerun}"
    );
}

/// The power-cut loop of the module docs, `WALDEN_POWER_CUTS` cuts (default
/// 10,000) over lives of 1 to 4 threads, several lives at a time; replay
/// as the module docs say.
#[test]
fn power_cuts_lose_no_acknowledged_record_and_replay_nothing_stale() {
    let run =
        Run::from_env("power_cut::power_cuts_lose_no_acknowledged_record_and_replay_nothing_stale");
    let totals = Totals::default();
    let cuts = count_from_env("WALDEN_POWER_CUTS", 10_000);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
    let started = std::time::Instant::now();
    if let Err(e) = run_lives(&run, cuts, workers, &totals, |_| {}) {
        panic!("{e}");
    }
    println!(
        "{} lives, {} power cuts ({} mid-workload), {} recovery cuts, {} records inserted, \
         {} records verified ({} acknowledged), 0 acknowledged lost, 0 stale accepted, \
         {} cut-off records overwritten, {} pg_waldump runs, in {:.1} s",
        totals.get(&totals.lives),
        totals.get(&totals.cuts),
        totals.get(&totals.cuts_mid_workload),
        totals.get(&totals.recovery_cuts),
        totals.get(&totals.records_inserted),
        totals.get(&totals.records_verified),
        totals.get(&totals.acked_verified),
        totals.get(&totals.overwritten_contrecords),
        totals.get(&totals.waldump_runs),
        started.elapsed().as_secs_f64()
    );
    totals.report_faults_and_assert_floors(&run);
    let cuts = run.cuts(cuts, CUTS_PER_LIFE);
    let rerun = run.replay_run(&totals.lives_figures.lock().unwrap());
    assert!(totals.get(&totals.cuts) >= cuts, "too few cuts{rerun}");
    assert!(
        totals.get(&totals.acked_verified) > 0 && totals.get(&totals.cuts_mid_workload) > cuts / 2,
        "the workload acknowledged records and most cuts hit it mid-way{rerun}"
    );
}
