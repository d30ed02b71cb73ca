//! Why the FUSE crash tests take turns on their mounts (docs/reliability.md,
//! after the FUSE test's description): a thread that spawns children beside
//! a thread that reads a file on a [`CrashFs`] mount and then crashes it
//! makes the unmount fail with `EBUSY`, since a child between its `fork`
//! and its `exec` holds copies of all the process's descriptors.
//!
//! ```text
//! cargo run --release -p walden-testkit --example unmount_race [CRASHES]
//! ```
//!
//! Runs CRASHES cycles (default 300) of "write a file on the mount, read it
//! back, close it, crash", first alone, then beside a thread that runs
//! `true` in a loop, and prints for each which crash, if any, was refused
//! and what the error said. Needs FUSE and root, as the tests do.

use std::error::Error;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};

use walden_testkit::crashfs::Rng;
use walden_testkit::{CrashFs, CrashFsError, CrashPolicy};

fn main() -> Result<(), Box<dyn Error>> {
    let crashes: u32 = match std::env::args().nth(1) {
        Some(n) => n.parse().map_err(|e| format!("CRASHES {n:?}: {e}"))?,
        None => 300,
    };
    for spawning in [false, true] {
        let beside = if spawning {
            "beside a thread spawning `true`"
        } else {
            "alone"
        };
        match crash_until_refused(crashes, spawning)? {
            Some((n, e)) => println!("{beside}: crash {n} of {crashes} refused: {e}"),
            None => println!("{beside}: {crashes} crashes, every unmount done"),
        }
    }
    Ok(())
}

/// Mounts a fresh file system and runs `crashes` cycles on it, beside a
/// spawning thread if `spawning`; returns the first crash refused (its
/// number and error), after unmounting the file system.
fn crash_until_refused(
    crashes: u32,
    spawning: bool,
) -> Result<Option<(u32, CrashFsError)>, Box<dyn Error>> {
    let tmp = tempfile::tempdir()?;
    let mut crashfs = CrashFs::mount_in(tmp.path())?;
    let mnt = crashfs.path().to_path_buf();
    let stop = AtomicBool::new(false);
    let refused = std::thread::scope(|s| {
        if spawning {
            s.spawn(|| {
                // Relaxed: a stop flag; nothing is published with it.
                while !stop.load(Ordering::Relaxed) {
                    // Its status does not matter, only its fork and exec.
                    let _ = Command::new("true").status();
                }
            });
        }
        let refused = cycles(&mut crashfs, &mnt, crashes);
        // Relaxed: as above.
        stop.store(true, Ordering::Relaxed);
        refused
    })?;
    // The spawning thread has ended and its children with it: a refused
    // unmount is tried again here.
    crashfs.unmount()?;
    Ok(refused)
}

/// Writes, reads back and closes a file on the mount at `mnt`, then
/// crashes, `crashes` times or until a crash is refused as busy.
fn cycles(
    crashfs: &mut CrashFs,
    mnt: &Path,
    crashes: u32,
) -> Result<Option<(u32, CrashFsError)>, Box<dyn Error>> {
    let mut rng = Rng::new(1);
    for n in 0..crashes {
        let file = mnt.join(format!("file{n}"));
        fs::write(&file, b"written, read back, closed")?;
        fs::read(&file)?;
        match crashfs.crash(CrashPolicy::KeepRandomSectors, &mut rng) {
            Ok(_) => {}
            Err(e @ CrashFsError::Busy { .. }) => return Ok(Some((n, e))),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(None)
}
