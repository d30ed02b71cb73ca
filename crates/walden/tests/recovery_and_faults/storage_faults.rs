//! Storage faults the simulator injects into a whole `Wal`, beyond power
//! cuts and sync failures: short writes, `ENOSPC`, and read `EIO` during
//! `Wal::open` (recovery), `Wal::reader` and the standalone reader
//! (`WalReader::open_with_storage`, what `walden dump`/`stat`/`verify` use,
//! here over `SimStorage`).
//!
//! Invariants: a short write is no error (the writer writes the rest);
//! `ENOSPC` and `EIO` are typed errors whose message names the file; no
//! panic; a reader resumes after a failed read; and once the fault is gone,
//! reopening finds every acknowledged record, byte for byte.
//!
//! Run: `cargo test -p walden --release --test recovery_and_faults storage_faults:: -- --nocapture`
//! (prints the figures).

use crate::support::fault;
use std::path::Path;
use std::sync::Mutex;

use crate::support::fault::{
    assert_acknowledged, payload, read_log, storage, strategy_configs, Acked, Rng, DIR,
    DURABLE_SYNC_METHODS, FORMATS, USER_RMID,
};
use walden::{
    Config, Error, ReadError, ReaderOptions, Record, ReservationKind, SimStorage, Storage, Wal,
    WalFormat, WalReader, WalRecord,
};

/// Threads of the multi-thread workloads.
const THREADS: u64 = 4;
/// Records each thread inserts.
const PER_THREAD: u64 = 40;

/// `THREADS` threads each insert up to `per_thread` records of random sizes
/// (some spanning pages), flushing after about one in three and after the
/// last; a thread stops at its first error. Returns the acknowledged
/// records (their flush returned `Ok`) and the errors.
fn workload(wal: &Wal, seed: u64, per_thread: u64) -> (Vec<Acked>, Vec<Error>) {
    let acked = Mutex::new(Vec::new());
    let errors = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (acked, errors) = (&acked, &errors);
            s.spawn(move || {
                let mut rng = Rng::new(seed ^ (t + 1).wrapping_mul(0x9E37_79B9));
                let mut pending = Vec::new();
                for i in 0..per_thread {
                    let tag = seed << 24 | t << 16 | i;
                    let len = rng.payload_len();
                    let step = wal
                        .insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
                        .and_then(|span| {
                            pending.push((span.start, tag, len));
                            if rng.one_in(3) || i + 1 == per_thread {
                                wal.flush(span.end)?;
                                acked.lock().unwrap().append(&mut pending);
                            }
                            Ok(())
                        });
                    if let Err(e) = step {
                        errors.lock().unwrap().push(e);
                        return;
                    }
                }
            });
        }
    });
    (acked.into_inner().unwrap(), errors.into_inner().unwrap())
}

/// Reopens the log on `sim` (faults as they are) and checks that every
/// record of `acked` is there, byte for byte; returns how many were checked.
fn reopen_and_check(sim: &SimStorage, config: &Config, acked: &[Acked]) -> usize {
    let (wal, report) = Wal::open_with_storage(DIR, config.clone(), storage(sim))
        .unwrap_or_else(|e| panic!("reopening failed: {e}"));
    let (records, _) = read_log(storage(sim), DIR, report.redo).unwrap();
    assert_acknowledged(&records, acked);
    drop(wal);
    acked.len()
}

/// Cuts the power under `wal` (a crash) or closes it cleanly.
fn shut_down(sim: &SimStorage, wal: Wal, crash: bool) {
    if crash {
        sim.power_cut();
        drop(wal);
        sim.restart();
    } else {
        wal.close().unwrap();
    }
}

#[test]
fn short_writes_are_completed_and_lose_nothing() {
    let configs = strategy_configs();
    let (mut short_writes, mut verified) = (0, 0);
    for (i, config) in configs.iter().enumerate() {
        let config = Config {
            sync_method: DURABLE_SYNC_METHODS[i % DURABLE_SYNC_METHODS.len()],
            ..config.clone()
        };
        let seed = 100 + i as u64;
        let sim = SimStorage::new(seed);
        // On from the start: segment creation and the control file too.
        sim.set_short_writes(true);
        let wal = Wal::create_with_storage(DIR, config.clone(), storage(&sim))
            .unwrap_or_else(|e| panic!("create under short writes: {e}; {config:?}"));
        let (acked, errors) = workload(&wal, seed, PER_THREAD);
        assert!(
            errors.is_empty(),
            "a short write is no error, but got {errors:?}; {config:?}"
        );
        assert_eq!(acked.len() as u64, THREADS * PER_THREAD);
        shut_down(&sim, wal, i % 2 == 1);
        verified += reopen_and_check(&sim, &config, &acked);
        let stats = sim.stats();
        assert!(stats.short_writes > 0, "no write was cut short");
        short_writes += stats.short_writes;
    }
    println!(
        "short writes: {} logs (every valid configuration, the durable sync methods in \
         turn), {short_writes} writes cut short, no call failed, {verified} acknowledged \
         records verified, 0 lost",
        configs.len()
    );
}

/// Space limits the full-disk test tries.
const LIMITS: u64 = 24;

#[test]
fn a_full_disk_fails_with_enospc_at_any_point_and_loses_nothing() {
    let (mut no_space, mut failed_runs, mut verified) = (0, 0, 0);
    // From no room left to 1.44 MiB more (the workload writes about 2 MiB).
    for k in 0..LIMITS {
        // No preallocator: the limit is the space used after create plus
        // k × 64 KiB, and segments prepared ahead between create and
        // reading the space used would raise it by whole segments, so
        // that how many runs reach a full disk depended on thread timing
        // (12 of 24 in one loop of this binary).
        let config = Config {
            segments_ahead: 0,
            ..fault::small_config(8)
        };
        let sim = SimStorage::new(200 + k);
        let wal = Wal::create_with_storage(DIR, config.clone(), storage(&sim)).unwrap();
        sim.set_space_limit(Some(sim.used_bytes() + k * (64 << 10)));
        let (acked, errors) = workload(&wal, 200 + k, 10 * PER_THREAD);
        for e in &errors {
            let text = e.to_string();
            assert!(
                (text.contains("No space left on device") && text.contains(DIR))
                    || text.contains("poisoned"),
                "{text}"
            );
        }
        failed_runs += u64::from(!errors.is_empty());
        no_space += sim.stats().no_space;
        drop(wal);
        sim.set_space_limit(None);
        verified += reopen_and_check(&sim, &config, &acked);
    }
    assert!(
        failed_runs > LIMITS / 2,
        "the disk was full in {failed_runs} of {LIMITS} runs"
    );
    println!(
        "ENOSPC: {LIMITS} space limits, {failed_runs} runs hit a full disk, {no_space} ENOSPC \
         injected, {verified} acknowledged records verified, 0 lost"
    );
}

/// A config for `format` with its default reservation.
fn config_for(format: WalFormat) -> Config {
    Config {
        format,
        reservation: ReservationKind::default_for(format),
        ..fault::small_config(8)
    }
}

/// A fresh log on its own `SimStorage` in `dir`: 30 flushed records of 0 B
/// to 20 KiB across two segments, then a clean close or a crash. Returns
/// the storage and the records.
fn flushed_log(config: &Config, dir: &str, crash: bool) -> (SimStorage, Vec<Acked>) {
    let sim = SimStorage::new(3);
    let wal = Wal::create_with_storage(dir, config.clone(), storage(&sim)).unwrap();
    let mut rng = Rng::new(7);
    let mut acked = Vec::new();
    for tag in 0..30u64 {
        if tag == 15 {
            wal.switch_segment().unwrap();
        }
        let len = rng.payload_len();
        let span = wal
            .insert_span(&Record::new(USER_RMID, 0, payload(tag, len)))
            .unwrap();
        wal.flush(span.end).unwrap();
        acked.push((span.start, tag, len));
    }
    shut_down(&sim, wal, crash);
    (sim, acked)
}

/// Asserts that `text`, an error's message, names a file of `dir` and the
/// injected `EIO`.
fn assert_names_file_and_eio(text: &str, dir: &str) {
    assert!(text.contains(&format!("{dir}/")), "no file named: {text}");
    assert!(text.contains("EIO"), "the cause is missing: {text}");
}

#[test]
fn read_errors_during_open_fail_it_and_a_later_open_recovers_everything() {
    let mut opens_failed = 0;
    let mut verified = 0;
    for &format in FORMATS {
        let config = config_for(format);
        for crash in [false, true] {
            for n in 1.. {
                let (sim, acked) = flushed_log(&config, DIR, crash);
                sim.fail_read(n);
                let result = Wal::open_with_storage(DIR, config.clone(), storage(&sim));
                if sim.stats().read_failures == 0 {
                    // The open made fewer than n reads: the sweep is done.
                    let (wal, _) = result.unwrap();
                    assert!(n > 3, "too few reads in an open: {n}");
                    drop(wal);
                    break;
                }
                let err = match result {
                    Ok(_) => panic!(
                        "read {n} of open failed and open succeeded ({format:?}, crash {crash})"
                    ),
                    Err(e) => e,
                };
                assert!(
                    matches!(
                        err,
                        Error::Read(ReadError::Io { .. }) | Error::Control(_) | Error::Segment(_)
                    ),
                    "{err:?}"
                );
                assert_names_file_and_eio(&err.to_string(), DIR);
                opens_failed += 1;
                sim.clear_faults();
                verified += reopen_and_check(&sim, &config, &acked);
            }
        }
    }
    println!(
        "read EIO in open: {opens_failed} opens failed with a typed error naming the file, \
         {verified} acknowledged records verified on reopening, 0 lost"
    );
}

/// Every record a reader returns until the end of WAL, going on after each
/// I/O error (the reader retries where it stopped); also the errors'
/// messages. Any other error fails the test.
fn read_through(mut reader: WalReader) -> (Vec<WalRecord>, Vec<String>) {
    let (mut records, mut errors) = (Vec::new(), Vec::new());
    loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r),
            Ok(None) => panic!("a reader without an end limit stopped cleanly"),
            Err(ReadError::EndOfWal { .. }) => return (records, errors),
            Err(e @ ReadError::Io { .. }) => {
                assert!(errors.len() < 4, "the reader does not get past {e}");
                errors.push(e.to_string());
            }
            Err(e) => panic!("unexpected read error: {e}"),
        }
    }
}

/// Faults a sweep injected, and how many of them were reported.
#[derive(Default)]
struct Swept {
    injected: u64,
    reported: u64,
}

/// Sweeps a read `EIO` on `sim` over every read that `read()` makes, which
/// opens a reader (or fails: `Err` with the message) and reads through it.
/// Each failure must name a file of `dir`, and the records read, retrying
/// past it, must be those of a run without faults.
fn sweep_read_errors(
    sim: &SimStorage,
    dir: &str,
    read: impl Fn() -> Result<(Vec<WalRecord>, Vec<String>), String>,
) -> Swept {
    let (expected, errors) = read().unwrap();
    assert!(errors.is_empty() && expected.len() > 30, "{errors:?}");
    let mut swept = Swept::default();
    for n in 1.. {
        let before = sim.stats().read_failures;
        sim.fail_read(n);
        let result = read();
        let fired = sim.stats().read_failures - before;
        sim.clear_faults();
        if fired == 0 {
            assert_eq!(result.unwrap().0, expected);
            return swept;
        }
        swept.injected += fired;
        match result {
            Err(text) => {
                assert_names_file_and_eio(&text, dir);
                swept.reported += 1;
            }
            Ok((records, errors)) => {
                assert_eq!(records, expected, "read {n} failed");
                for text in &errors {
                    assert_names_file_and_eio(text, dir);
                }
                swept.reported += errors.len() as u64;
            }
        }
    }
    unreachable!()
}

#[test]
fn read_errors_in_wal_reader_name_the_segment_and_the_reader_goes_on() {
    let mut injected = 0;
    for &format in FORMATS {
        let config = config_for(format);
        let (sim, acked) = flushed_log(&config, DIR, false);
        let (wal, report) = Wal::open_with_storage(DIR, config.clone(), storage(&sim)).unwrap();
        let swept = sweep_read_errors(&sim, DIR, || {
            let reader = wal.reader(report.redo).map_err(|e| e.to_string())?;
            Ok(read_through(reader))
        });
        assert!(swept.injected > 0);
        assert_eq!(
            swept.reported, swept.injected,
            "a read error went unreported"
        );
        injected += swept.injected;
        drop(wal);
        reopen_and_check(&sim, &config, &acked);
    }
    println!("read EIO in Wal::reader: {injected} faults, every one reported and read past");
}

#[test]
fn the_standalone_reader_reads_a_log_on_simulated_storage() {
    let mut injected = 0;
    for &format in FORMATS {
        let config = config_for(format);
        // In a pg_wal subdirectory, which the reader finds as pg_waldump does.
        let (sim, acked) = flushed_log(&config, "/data/pg_wal", false);
        let open = || {
            WalReader::open_with_storage("/data", ReaderOptions::default(), storage(&sim))
                .map_err(|e| e.to_string())
        };
        let reader = open().unwrap();
        assert_eq!(reader.format(), Some(format), "from the control file");
        let (records, errors) = read_through(reader);
        assert!(errors.is_empty(), "{errors:?}");
        assert_acknowledged(&records, &acked);
        let user = records.iter().filter(|r| r.header.rmid == USER_RMID);
        assert_eq!(user.count(), acked.len(), "every record, nothing else");
        let swept = sweep_read_errors(&sim, "/data/pg_wal", || Ok(read_through(open()?)));
        // But for a failed read of the control file, which only leaves the
        // format to the page magic.
        assert!(swept.injected > 0);
        assert!(
            swept.injected - swept.reported <= 1,
            "a read error went unreported"
        );
        injected += swept.injected;
    }
    println!(
        "read EIO in WalReader::open_with_storage: {injected} faults, every one reported \
         but for the control file's"
    );
}

#[test]
fn the_standalone_reader_reports_a_directory_without_segments() {
    let sim = SimStorage::new(1);
    sim.create_dir_all(Path::new("/empty/pg_wal")).unwrap();
    let err = WalReader::open_with_storage("/empty", ReaderOptions::default(), storage(&sim))
        .err()
        .expect("no segments");
    assert!(matches!(err, ReadError::NoSegments { .. }), "{err:?}");
    let err = WalReader::open_with_storage("/nowhere", ReaderOptions::default(), storage(&sim))
        .err()
        .expect("no directory");
    assert!(
        matches!(&err, ReadError::Io { path, .. } if path == Path::new("/nowhere")),
        "{err:?}"
    );
}
