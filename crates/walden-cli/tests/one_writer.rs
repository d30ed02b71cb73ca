//! One writer per log: while a process has a log open, a second writer, in
//! another process or the same one, is refused with the error naming the
//! holder, and changes no byte of the log; read-only tools still work.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{run, succeeded, walden};
use walden::{Config, DirLockError, Error, Record, SyncMethod, Wal};

/// How long the test waits for the child writer to have its log open.
const CHILD_DEADLINE: Duration = Duration::from_secs(60);

fn config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        // No background thread touches the directory while it is hashed.
        segments_ahead: 0,
        writer_delay: None,
        ..Config::default()
    }
}

/// Every file of `dir`, by name, with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn held_by(result: Result<(Wal, walden::RecoveryReport), Error>) -> Option<u32> {
    match result {
        Err(Error::Locked(DirLockError::Held { holder, .. })) => holder,
        Err(e) => panic!("expected the log to be locked, got: {e}"),
        Ok(_) => panic!("a second writer opened a log in use"),
    }
}

#[test]
fn a_second_writer_process_is_refused_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let wal = Wal::create(&dir, config()).unwrap();
    for i in 0..100u32 {
        wal.insert(&Record::new(128, 0, i.to_le_bytes().repeat(50)))
            .unwrap();
    }
    wal.flush(wal.insert_position()).unwrap();
    let before = contents(&dir);

    let out = walden()
        .arg("write")
        .arg(&dir)
        .args(["--records", "10", "--flush-every", "1"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a second writer ran: {stderr}");
    let me = format!("process {}", std::process::id());
    assert!(
        stderr.contains("is in use") && stderr.contains(&me),
        "the error does not name the holder ({me}): {stderr}"
    );
    // The same process is refused too, with the typed error.
    assert_eq!(held_by(Wal::open(&dir, config())), Some(std::process::id()));
    assert_eq!(contents(&dir), before, "a refused writer changed the log");

    // Read-only tools need no lock.
    let dir_arg = dir.to_str().unwrap();
    succeeded(run(&["verify", dir_arg]), "verify of a log in use");
    succeeded(run(&["stat", dir_arg]), "stat of a log in use");
    // dump, as pg_waldump, reports the end of WAL as an error.
    let dump = run(&["dump", dir_arg]);
    let listed = String::from_utf8_lossy(&dump.stdout);
    assert_eq!(listed.matches("rmid: 128").count(), 100, "dump: {listed}");
    assert_eq!(contents(&dir), before, "a read-only tool changed the log");

    drop(wal);
    let (wal, report) = Wal::open(&dir, config()).unwrap();
    assert!(report.records >= 100);
    wal.close().unwrap();
}

/// Kills the child writer when the test ends, however it ends.
struct Writer(Child);

impl Drop for Writer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_error_names_another_process_and_its_death_frees_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("wal");
    let mut child = Writer(
        walden()
            .arg("write")
            .arg(&dir)
            .args(["--records", "1000000000", "--threads", "1"])
            .args([
                "--segment-size",
                "1MB",
                "--buffers",
                "1MB",
                "--sync",
                "none",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let started = Instant::now();
    // The control file is written with the lock held: from then on the
    // child has the log open.
    while !Wal::exists(&dir) {
        assert!(
            child.0.try_wait().unwrap().is_none(),
            "the writer exited early"
        );
        assert!(
            started.elapsed() < CHILD_DEADLINE,
            "the writer never created its log"
        );
        std::thread::yield_now();
    }
    let child_config = Config {
        sync_method: SyncMethod::None,
        ..config()
    };
    assert_eq!(
        held_by(Wal::open(&dir, child_config.clone())),
        Some(child.0.id())
    );
    drop(child);
    let (wal, _) = Wal::open(&dir, child_config).unwrap();
    wal.close().unwrap();
}
