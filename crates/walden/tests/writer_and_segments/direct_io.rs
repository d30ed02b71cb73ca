//! Direct I/O (`Config::direct_io`) on the real file system: segment files
//! are open with `O_DIRECT`, every record written reads back after a clean
//! reopen and after a recovery, with every sync method, across the partial
//! pages the writer writes whole and again at the next flush; and a file
//! system that refuses `O_DIRECT` is a typed error at create and at open.
//!
//! The refusal test mounts a ramfs (which has no direct I/O) in a user and
//! mount namespace of its own (`unshare --user --map-root-user --mount`)
//! and runs itself there. Where `unshare` or user namespaces are not
//! available it fails, saying so; `WALDEN_SKIP_RAMFS=1` skips it, saying so.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::wal::{payload, read_all};
use walden::internals::PAGE_SIZE;
use walden::{Config, Error, Record, SegmentError, SegmentSize, SyncMethod, Wal};

const RMID: u8 = 131;

/// Set in the child of the refusal test: the ramfs mount point.
const RAMFS_DIR: &str = "WALDEN_RAMFS_DIR";
/// Set in the child of the refusal test: where it marks that it ran.
const RAMFS_MARKER: &str = "WALDEN_RAMFS_MARKER";
/// Skips the refusal test where `unshare` cannot mount a ramfs.
const SKIP_RAMFS: &str = "WALDEN_SKIP_RAMFS";

/// 1 MiB segments, a 64 KiB ring (so inserters evict too), no background
/// writer, direct I/O.
fn config(sync_method: SyncMethod) -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 64 << 10,
        sync_method,
        writer_delay: None,
        direct_io: true,
        ..Config::default()
    }
}

/// Inserts records `from..from + n` of 8 B to 20 KiB, flushing after every
/// third (so most flushes end inside a page), and appends their payloads.
fn write_records(wal: &Wal, from: u32, n: u32, written: &mut Vec<Vec<u8>>) {
    for i in from..from + n {
        let len = (i as usize * 7919) % (20 << 10);
        let data = payload(1, i, len.max(8));
        let end = wal.insert(&Record::new(RMID, 0, data.clone())).unwrap();
        if i % 3 == 0 {
            wal.flush(end).unwrap();
        }
        written.push(data);
    }
}

/// The `open(2)` flags of this process's descriptors on segment files in
/// `dir`, from `/proc/self/fdinfo`.
fn segment_file_flags(dir: &Path, seg: SegmentSize) -> Vec<libc::c_int> {
    let mut flags = Vec::new();
    for entry in std::fs::read_dir("/proc/self/fd").unwrap() {
        let fd = entry.unwrap().file_name();
        let Ok(target) = std::fs::read_link(Path::new("/proc/self/fd").join(&fd)) else {
            continue; // closed in the meantime
        };
        let is_segment = target.parent() == Some(dir)
            && target
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| seg.parse_file_name(n).is_some());
        if !is_segment {
            continue;
        }
        let Ok(info) = std::fs::read_to_string(Path::new("/proc/self/fdinfo").join(&fd)) else {
            continue;
        };
        let octal = info
            .lines()
            .find_map(|l| l.strip_prefix("flags:"))
            .unwrap()
            .trim();
        flags.push(libc::c_int::from_str_radix(octal, 8).unwrap());
    }
    flags
}

/// Every record written with direct I/O reads back, byte for byte, after a
/// clean close and reopen and after a reopen that recovers (the log
/// dropped without `close`, ending inside a page the writer then rewrites
/// from the ring): every sync method, `O_DIRECT | O_DSYNC` included.
#[test]
fn every_record_written_with_direct_io_reads_back_after_reopen_and_recovery() {
    for method in SyncMethod::ALL {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let config = config(method);
        let seg = SegmentSize::new(config.segment_size).unwrap();
        let wal = Wal::create(&dir, config.clone()).unwrap();
        let mut written = Vec::new();
        write_records(&wal, 0, 200, &mut written);
        let flags = segment_file_flags(&dir, seg);
        assert!(!flags.is_empty(), "the writer holds a segment open");
        for f in flags {
            assert_eq!(f & libc::O_DIRECT, libc::O_DIRECT, "{method}: O_DIRECT");
            let dsync = if method == SyncMethod::OpenDatasync {
                libc::O_DSYNC
            } else {
                f & libc::O_DSYNC
            };
            assert_eq!(f & libc::O_DSYNC, dsync, "{method}: O_DSYNC");
        }
        let stats = wal.stats().writer;
        assert!(stats.writes > 0);
        assert_eq!(
            stats.bytes_written % PAGE_SIZE,
            0,
            "{method}: direct writes are whole pages: {stats:?}"
        );
        wal.close().unwrap();

        let (wal, report) = Wal::open(&dir, config.clone()).unwrap();
        assert!(report.clean_shutdown);
        write_records(&wal, 200, 100, &mut written);
        // Dropped without close: the next open recovers.
        drop(wal);
        let (wal, report) = Wal::open(&dir, config.clone()).unwrap();
        assert!(!report.clean_shutdown);
        write_records(&wal, 300, 50, &mut written);
        wal.close().unwrap();

        let (records, _) = read_all(&dir);
        let back: Vec<Vec<u8>> = records
            .iter()
            .filter(|r| r.header.rmid == RMID)
            .map(|r| r.decode_body().unwrap().main_data)
            .collect();
        assert_eq!(back.len(), written.len(), "{method}");
        assert!(back == written, "{method}: a record differs");
    }
}

/// The error a direct-I/O create or open on the ramfs must fail with.
fn assert_refused(result: Result<(), Error>, dir: &Path) {
    match result {
        Err(Error::Segment(SegmentError::DirectIoUnsupported { dir: d, cause })) => {
            assert_eq!(d, dir);
            assert!(cause.contains("nvalid argument"), "EINVAL: {cause}");
        }
        other => panic!(
            "expected DirectIoUnsupported for {}: {other:?}",
            dir.display()
        ),
    }
}

/// On a file system without `O_DIRECT` (ramfs), `Wal::create` and
/// `Wal::open` with direct I/O fail with `DirectIoUnsupported` naming the
/// directory, before anything of the log is written; the refused create
/// leaves the directory as it found it (none, or an empty one: no lock
/// file, no probe), and a retry without direct I/O creates the log.
#[test]
fn a_file_system_without_direct_io_is_refused_at_create_and_open() {
    if let Some(mount) = std::env::var_os(RAMFS_DIR) {
        let mount = PathBuf::from(mount);
        let plain = Config {
            direct_io: false,
            ..config(SyncMethod::Fdatasync)
        };
        let existing = mount.join("existing");
        let wal = Wal::create(&existing, plain.clone()).unwrap();
        wal.close().unwrap();
        let opened = Wal::open(&existing, config(SyncMethod::Fdatasync)).map(drop);
        assert_refused(opened, &existing);
        let fresh = mount.join("fresh");
        let created = Wal::create(&fresh, config(SyncMethod::OpenDatasync)).map(drop);
        assert_refused(created, &fresh);
        // The directory the create made is gone: no log, no lock file, no
        // probe.
        assert!(!fresh.exists(), "a refused create removes what it made");
        // One that was there is left as it was found: empty.
        std::fs::create_dir(&fresh).unwrap();
        let message = Wal::create(&fresh, config(SyncMethod::Fdatasync))
            .map(drop)
            .unwrap_err()
            .to_string();
        assert!(
            message.starts_with("direct I/O (O_DIRECT) is not supported by the file system"),
            "{message}"
        );
        let left: Vec<_> = std::fs::read_dir(&fresh).unwrap().collect();
        assert!(left.is_empty(), "no lock file, no probe: {left:?}");
        // A retry without direct I/O creates the log.
        Wal::create(&fresh, plain).unwrap().close().unwrap();
        std::fs::write(std::env::var_os(RAMFS_MARKER).unwrap(), b"ran").unwrap();
        return;
    }
    if std::env::var_os(SKIP_RAMFS).is_some() {
        println!("skipped: {SKIP_RAMFS} is set");
        return;
    }
    let (mount, marks) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let marker = marks.path().join("ran");
    let module = module_path!().split_once("::").map_or("", |(_, m)| m);
    let filter = format!("{module}::a_file_system_without_direct_io_is_refused_at_create_and_open");
    let script =
        r#"mount -t ramfs none "$1" && exec "$2" "$3" --exact --nocapture --test-threads=1"#;
    let out = Command::new("unshare")
        .args([
            "--user",
            "--map-root-user",
            "--mount",
            "sh",
            "-c",
            script,
            "sh",
        ])
        .arg(mount.path())
        .arg(std::env::current_exe().unwrap())
        .arg(&filter)
        .env(RAMFS_DIR, mount.path())
        .env(RAMFS_MARKER, &marker)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run unshare ({e}): install util-linux or set {SKIP_RAMFS}=1")
        });
    assert!(
        out.status.success(),
        "the test in a ramfs namespace failed ({}; set {SKIP_RAMFS}=1 where user namespaces \
         are unavailable):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(marker.exists(), "the test ran in the namespace");
}
