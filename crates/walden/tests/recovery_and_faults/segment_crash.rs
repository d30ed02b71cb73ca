//! The durability protocol of the segment layer, through a Storage that logs
//! every operation and can "crash" (fail every operation from the k-th on).
//!
//! A crash at each step must leave the control file old or new and never
//! torn, and never a partial file under a segment's name; files are synced
//! before they are renamed into place, and the directory after.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use walden::internals::format::page::XLP_SEG_SIZE;
use walden::internals::{ControlFile, PrepareFor, SegmentFiles};
use walden::{
    ControlFileError, FileOp, FsStorage, LockOutcome, OpenOptions, SegmentError, SegmentPrep,
    Storage, StorageFile,
};
use walden::{Lsn, SegmentSize, WalFormat};

/// Linux's errno for "no space left on device".
const ENOSPC: i32 = 28;

/// One operation as logged: its kind and the file names involved.
type Op = (&'static str, String);

#[derive(Debug, Default)]
struct Journal {
    ops: Vec<Op>,
    /// Operations allowed before the crash; `None` never crashes.
    crash_at: Option<usize>,
    /// Operations of this kind fail with ENOSPC, without a crash.
    no_space_for: Option<&'static str>,
}

/// FsStorage that logs operations, crashes on request, and turns every
/// write into short writes of at most `max_write` bytes.
#[derive(Debug, Clone)]
struct CrashingStorage {
    journal: Arc<Mutex<Journal>>,
    max_write: usize,
}

fn name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

impl CrashingStorage {
    fn new(crash_at: Option<usize>, max_write: usize) -> Self {
        CrashingStorage {
            journal: Arc::new(Mutex::new(Journal {
                crash_at,
                ..Journal::default()
            })),
            max_write,
        }
    }

    /// Never crashes, but every operation of `kind` fails with ENOSPC.
    fn no_space_for(kind: &'static str) -> Self {
        let storage = CrashingStorage::new(None, usize::MAX);
        storage.journal.lock().unwrap().no_space_for = Some(kind);
        storage
    }

    /// Logs `op`, or fails it if the crash point is reached.
    fn step(&self, kind: &'static str, file: String) -> io::Result<()> {
        let mut j = self.journal.lock().unwrap();
        if j.crash_at.is_some_and(|limit| j.ops.len() >= limit) {
            return Err(io::Error::other("simulated crash"));
        }
        if j.no_space_for == Some(kind) {
            return Err(io::Error::from_raw_os_error(ENOSPC));
        }
        j.ops.push((kind, file));
        Ok(())
    }

    fn ops(&self) -> Vec<Op> {
        self.journal.lock().unwrap().ops.clone()
    }
}

impl Storage for CrashingStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        self.step("open", name(path))?;
        let inner = FsStorage::new().open(path, opts)?;
        Ok(Box::new(CrashingFile {
            storage: self.clone(),
            name: name(path),
            inner,
        }))
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.step("rename", format!("{} -> {}", name(from), name(to)))?;
        FsStorage::new().rename(from, to)
    }

    fn remove_file(&self, path: &Path) -> io::Result<()> {
        self.step("remove", name(path))?;
        FsStorage::new().remove_file(path)
    }

    fn list_dir(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.step("list_dir", String::new())?;
        FsStorage::new().list_dir(dir)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.step("sync_dir", String::new())?;
        FsStorage::new().sync_dir(dir)
    }

    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.step("create_dir_all", String::new())?;
        FsStorage::new().create_dir_all(dir)
    }

    fn remove_dir(&self, dir: &Path) -> io::Result<()> {
        self.step("remove_dir", name(dir))?;
        FsStorage::new().remove_dir(dir)
    }

    fn exists(&self, path: &Path) -> io::Result<bool> {
        self.step("exists", name(path))?;
        FsStorage::new().exists(path)
    }

    fn try_lock(&self, path: &Path, holder: &str) -> io::Result<LockOutcome> {
        FsStorage::new().try_lock(path, holder)
    }
}

#[derive(Debug)]
struct CrashingFile {
    storage: CrashingStorage,
    name: String,
    inner: Box<dyn StorageFile>,
}

impl StorageFile for CrashingFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.storage.step("read", self.name.clone())?;
        self.inner.read_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.storage.step("write", self.name.clone())?;
        let short = &buf[..buf.len().min(self.storage.max_write)];
        self.inner.write_at(short, offset)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.storage.step("sync", self.name.clone())?;
        self.inner.sync_data()
    }

    fn sync_all(&self) -> io::Result<()> {
        self.storage.step("sync", self.name.clone())?;
        self.inner.sync_all()
    }

    fn len(&self) -> io::Result<u64> {
        self.storage.step("len", self.name.clone())?;
        self.inner.len()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.storage.step("set_len", self.name.clone())?;
        self.inner.set_len(len)
    }

    fn allocate(&self, len: u64) -> io::Result<()> {
        self.storage.step("allocate", self.name.clone())?;
        self.inner.allocate(len)
    }
}

/// Index of the first op of `kind` on `file`, and of the last.
fn first_and_last(ops: &[Op], kind: &str, file: &str) -> (usize, usize) {
    let hits: Vec<usize> = ops
        .iter()
        .enumerate()
        .filter(|(_, (k, f))| *k == kind && f == file)
        .map(|(i, _)| i)
        .collect();
    assert!(!hits.is_empty(), "no {kind} {file} in {ops:?}");
    (hits[0], hits[hits.len() - 1])
}

/// Checks: the temp file is written (or allocated), then synced, then
/// renamed to `target`, then the directory is synced, which is the last
/// operation.
fn assert_durable_install(ops: &[Op], temp: &str, target: &str) {
    let filled = |k: &str| ["write", "allocate"].contains(&k);
    let last_write = ops
        .iter()
        .rposition(|(k, f)| filled(k) && f == temp)
        .unwrap_or_else(|| panic!("{temp} is neither written nor allocated: {ops:?}"));
    let (sync, _) = first_and_last(ops, "sync", temp);
    let (rename, _) = first_and_last(ops, "rename", &format!("{temp} -> {target}"));
    let (_, dir_sync) = first_and_last(ops, "sync_dir", "");
    assert!(
        last_write < sync && sync < rename && rename < dir_sync,
        "{ops:?}"
    );
    assert_eq!(dir_sync, ops.len() - 1, "{ops:?}");
}

fn control(checkpoint: u64) -> ControlFile {
    ControlFile {
        format: WalFormat::Postgres15,
        segment_size: SegmentSize::new(1 << 20).unwrap(),
        system_identifier: 42,
        timeline: 1,
        checkpoint: Lsn(checkpoint),
        redo: Lsn(checkpoint - 0x100),
        clean_shutdown: false,
    }
}

#[test]
fn control_file_write_syncs_before_rename_and_the_directory_after() {
    let dir = tempfile::tempdir().unwrap();
    let storage = CrashingStorage::new(None, 7);
    control(0x1000).write(&storage, dir.path()).unwrap();
    assert_durable_install(&storage.ops(), "walden.control.tmp", "walden.control");
    assert_eq!(
        ControlFile::read(&storage, dir.path()).unwrap(),
        control(0x1000)
    );
}

#[test]
fn a_crash_at_any_step_of_a_control_file_write_leaves_old_or_new() {
    let dir = tempfile::tempdir().unwrap();
    let (old, new) = (control(0x1000), control(0x2000));
    old.write(&FsStorage::new(), dir.path()).unwrap();
    let full = CrashingStorage::new(None, 16);
    new.write(&full, dir.path()).unwrap();
    let steps = full.ops().len();
    let renamed_at = first_and_last(
        &full.ops(),
        "rename",
        "walden.control.tmp -> walden.control",
    )
    .0;
    for crash_at in 0..steps {
        old.write(&FsStorage::new(), dir.path()).unwrap();
        let crashing = CrashingStorage::new(Some(crash_at), 16);
        assert!(
            new.write(&crashing, dir.path()).is_err(),
            "crash at {crash_at}"
        );
        let after = ControlFile::read(&FsStorage::new(), dir.path()).unwrap();
        let expected = if crash_at <= renamed_at { old } else { new };
        assert_eq!(after, expected, "crash at {crash_at}");
    }
}

fn segment_files(dir: &Path, storage: CrashingStorage) -> SegmentFiles {
    SegmentFiles::new(
        Arc::new(storage),
        dir,
        SegmentSize::new(1 << 20).unwrap(),
        1,
    )
}

fn names_in(dir: &Path) -> Vec<PathBuf> {
    let mut names: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    names.sort();
    names
}

/// Every way of preparing a segment, for the Postgres15 format.
fn preparations() -> impl Iterator<Item = PrepareFor> {
    SegmentPrep::ALL.into_iter().map(|prep| PrepareFor {
        prep,
        format: WalFormat::Postgres15,
    })
}

/// Checks a prepared segment 5 of 1 MiB: zeros but for the segment size
/// in the first page (`xlp_seg_size`), and with page headers the valid
/// header of every page after the first.
fn assert_prepared(bytes: &[u8], how: PrepareFor) {
    assert_eq!(bytes.len(), 1 << 20, "{how:?}");
    assert_eq!(bytes[XLP_SEG_SIZE], (1u32 << 20).to_le_bytes(), "{how:?}");
    let mut bytes = bytes.to_vec();
    bytes[XLP_SEG_SIZE].fill(0);
    let seg = SegmentSize::new(1 << 20).unwrap();
    for (i, page) in bytes.chunks(8192).enumerate() {
        let header_len = if how.prep == SegmentPrep::PageHeaders && i > 0 {
            24
        } else {
            0
        };
        assert!(page[header_len..].iter().all(|&b| b == 0), "{how:?}");
        if header_len > 0 {
            let pageaddr = seg.segment_start(5).0 + i as u64 * 8192;
            assert_eq!(page[0..2], 0xD110u16.to_le_bytes(), "{how:?} magic");
            assert_eq!(page[4..8], 1u32.to_le_bytes(), "{how:?} timeline");
            assert_eq!(page[8..16], pageaddr.to_le_bytes(), "{how:?} page {i}");
        }
    }
}

#[test]
fn every_preparation_survives_short_writes_and_installs_durably() {
    for how in preparations() {
        let dir = tempfile::tempdir().unwrap();
        let storage = CrashingStorage::new(None, 100_000);
        let files = segment_files(dir.path(), storage.clone());
        files.create(5, &how).unwrap();
        let seg_name = name(&files.path(5));
        assert_durable_install(&storage.ops(), &format!("{seg_name}.tmp"), &seg_name);
        assert_prepared(&fs::read(files.path(5)).unwrap(), how);
    }
}

#[test]
fn a_crash_at_any_step_of_a_preparation_leaves_no_partial_segment() {
    for how in preparations() {
        let dir = tempfile::tempdir().unwrap();
        let full = CrashingStorage::new(None, 300_000);
        segment_files(dir.path(), full.clone())
            .create(5, &how)
            .unwrap();
        let steps = full.ops().len();
        // Every step around the start and the end; every 16th of the page
        // headers' many small writes in between.
        let points = (0..steps).filter(|&k| k < 8 || k + 8 >= steps || k % 16 == 0);
        for crash_at in points {
            let dir = tempfile::tempdir().unwrap();
            let files = segment_files(dir.path(), CrashingStorage::new(Some(crash_at), 300_000));
            assert!(
                files.create(5, &how).is_err(),
                "{how:?}: crash at {crash_at}"
            );
            if let Ok(bytes) = fs::read(files.path(5)) {
                assert_prepared(&bytes, how);
            }
            // Whatever is left besides the segment is a temp file that the
            // cleanup removes, after which a retry succeeds.
            let sane = segment_files(dir.path(), CrashingStorage::new(None, 1 << 20));
            sane.remove_temp_files().unwrap();
            let left = names_in(dir.path());
            assert!(left.is_empty() || left == [files.path(5)], "{left:?}");
            if left.is_empty() {
                sane.create(5, &how).unwrap();
            }
            assert_eq!(sane.list().unwrap(), [5]);
        }
    }
}

#[test]
fn recycling_syncs_the_directory_after_each_rename() {
    let dir = tempfile::tempdir().unwrap();
    let storage = CrashingStorage::new(None, 1 << 20);
    let files = segment_files(dir.path(), storage.clone());
    files.create_zeroed(1).unwrap();
    files.create_zeroed(2).unwrap();
    let before = storage.ops().len();
    files.recycle(1, 3).unwrap();
    files.remove(2).unwrap();
    let ops = storage.ops().split_off(before);
    let kinds: Vec<&str> = ops.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        ["exists", "rename", "sync_dir", "remove", "sync_dir"]
    );
    assert_eq!(
        ops[1].1,
        format!("{} -> {}", name(&files.path(1)), name(&files.path(3)))
    );
}

#[test]
fn a_failed_install_removes_its_temp_file_and_names_the_step() {
    let dir = tempfile::tempdir().unwrap();
    let files = segment_files(dir.path(), CrashingStorage::no_space_for("write"));
    let err = files.create_zeroed(2).unwrap_err();
    match &err {
        SegmentError::Io(f) => {
            assert_eq!(f.op, FileOp::Write);
            assert_eq!(
                f.path,
                dir.path().join(format!("{}.tmp", name(&files.path(2))))
            );
            assert_eq!(f.error.raw_os_error(), Some(ENOSPC));
        }
        other => panic!("{other:?}"),
    }
    assert!(names_in(dir.path()).is_empty());

    let old = control(0x1000);
    old.write(&FsStorage::new(), dir.path()).unwrap();
    let err = control(0x2000)
        .write(&CrashingStorage::no_space_for("sync"), dir.path())
        .unwrap_err();
    assert!(
        matches!(&err, ControlFileError::Io(f) if f.op == FileOp::Sync),
        "{err:?}"
    );
    assert_eq!(names_in(dir.path()), [dir.path().join("walden.control")]);
    assert_eq!(
        ControlFile::read(&FsStorage::new(), dir.path()).unwrap(),
        old
    );
}
