//! The crash-simulating file system under real system calls: what a crash
//! keeps is exactly what was made durable. Needs FUSE (/dev/fuse, root);
//! `WALDEN_SKIP_FUSE=1` skips, saying so.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use walden_testkit::crashfs::{Rng, SECTOR};
use walden_testkit::{CrashFs, CrashFsError, CrashPolicy};

/// A mounted file system over fresh directories, or `None` when the
/// documented variable says to skip.
fn mounted() -> Option<(tempfile::TempDir, CrashFs)> {
    if std::env::var_os("WALDEN_SKIP_FUSE").is_some() {
        println!("WALDEN_SKIP_FUSE is set: skipping a FUSE test");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fs = CrashFs::mount_in(tmp.path()).unwrap();
    Some((tmp, fs))
}

fn sync_dir(dir: &Path) {
    File::open(dir).unwrap().sync_all().unwrap();
}

#[test]
fn only_synced_data_and_entries_survive_a_crash() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let dir = root.join("d");
    fs::create_dir(&dir).unwrap();
    sync_dir(&root);
    let mut synced = File::create(dir.join("synced")).unwrap();
    synced.write_all(b"durable").unwrap();
    synced.sync_data().unwrap();
    synced.write_all(b" and not").unwrap();
    let dsync = OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_DSYNC)
        .open(dir.join("dsync"))
        .unwrap();
    dsync.write_all_at(b"each write", 0).unwrap();
    sync_dir(&dir);
    fs::write(dir.join("unnamed"), b"its entry never synced").unwrap();
    File::open(dir.join("unnamed")).unwrap().sync_all().unwrap();
    fs::rename(dir.join("dsync"), dir.join("renamed")).unwrap();
    drop((synced, dsync));
    assert_eq!(
        fs::read(dir.join("synced")).unwrap(),
        b"durable and not",
        "unsynced data is visible before the crash"
    );

    let report = fs
        .crash(CrashPolicy::LoseUnsynced, &mut Rng::new(7))
        .unwrap();
    assert_eq!(report.dir_ops_unsynced, 2, "{report:?}");
    assert_eq!(report.files_lost, 1, "{report:?}");
    assert_eq!(fs::read(dir.join("synced")).unwrap(), b"durable");
    assert_eq!(fs::read(dir.join("dsync")).unwrap(), b"each write");
    assert!(!dir.join("unnamed").exists());
    assert!(!dir.join("renamed").exists());
    let seen = fs.activity();
    assert!(
        seen.sync_writes >= 1 && seen.file_syncs >= 2 && seen.dir_syncs >= 2,
        "{seen:?}"
    );
    fs.unmount().unwrap();
}

#[test]
fn an_o_dsync_write_syncs_the_whole_file_through_fuse() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let path = root.join("f");
    let plain = File::create(&path).unwrap();
    sync_dir(&root);
    plain.write_all_at(&[1u8; 1024], 0).unwrap();
    let dsync = OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DSYNC)
        .open(&path)
        .unwrap();
    dsync.write_all_at(b"synchronous", 4096).unwrap();
    drop((plain, dsync));
    fs.crash(CrashPolicy::LoseUnsynced, &mut Rng::new(3))
        .unwrap();
    let got = fs::read(&path).unwrap();
    assert_eq!(got.len(), 4096 + 11);
    // The kernel sent an fsync after the O_DSYNC write: the plain write
    // through the other descriptor became durable with it.
    assert!(got[..1024].iter().all(|&b| b == 1));
    assert!(got[1024..4096].iter().all(|&b| b == 0));
    assert_eq!(&got[4096..], b"synchronous");
    assert!(fs.activity().file_syncs >= 1, "{:?}", fs.activity());
}

#[test]
fn a_new_directory_needs_a_sync_of_its_parent() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let dir = fs.path().join("wal");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("f"), b"x").unwrap();
    File::open(dir.join("f")).unwrap().sync_all().unwrap();
    sync_dir(&dir);
    fs.crash(CrashPolicy::LoseUnsynced, &mut Rng::new(1))
        .unwrap();
    assert!(!dir.exists(), "the directory's own entry was never synced");
}

#[test]
fn a_torn_write_keeps_whole_sectors_of_either_version() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let path = root.join("f");
    let file = File::create(&path).unwrap();
    file.write_all_at(&[1u8; 8192], 0).unwrap();
    file.sync_all().unwrap();
    drop(file);
    sync_dir(&root);
    let mut torn = 0;
    for seed in 0..8 {
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[2u8; 4096], 0).unwrap();
        file.write_all_at(&[3u8; 4096], 2048).unwrap();
        drop(file);
        fs.crash(CrashPolicy::TearLastWrite, &mut Rng::new(seed))
            .unwrap();
        let got = fs::read(&path).unwrap();
        assert_eq!(got.len(), 8192);
        let mut kinds = [0usize; 4];
        for sector in got.chunks(SECTOR as usize) {
            assert!(sector.iter().all(|&b| b == sector[0]), "a sector was split");
            kinds[sector[0] as usize] += 1;
        }
        // The first write reached the disk whole; of the second, which
        // covered sectors 4..12, a subset.
        assert!(
            got[..2048].iter().all(|&b| b == 2),
            "seed {seed}: {kinds:?}"
        );
        torn += usize::from(kinds[3] != 0 && kinds[3] != 8);
        // Back to all ones for the next round.
        let file = OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[1u8; 8192], 0).unwrap();
        file.sync_data().unwrap();
    }
    assert!(torn > 0, "no round tore the last write");
}

#[test]
fn a_power_cut_after_a_write_fails_everything_after_it() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let path = root.join("f");
    let file = File::create(&path).unwrap();
    file.sync_all().unwrap();
    sync_dir(&root);
    fs.cut_power_after_writes(2);
    file.write_all_at(b"one", 0).unwrap();
    assert!(!fs.power_is_cut());
    file.write_all_at(b"two", 3).unwrap();
    assert!(fs.power_is_cut());
    let err = file.write_all_at(b"three", 6).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EIO));
    assert_eq!(
        file.sync_data().unwrap_err().raw_os_error(),
        Some(libc::EIO)
    );
    drop(file);
    fs.crash(CrashPolicy::TearLastWrite, &mut Rng::new(4))
        .unwrap();
    assert!(!fs.power_is_cut());
    let got = fs::read(&path).unwrap();
    assert!(got == b"onetwo" || got == b"one\0\0\0", "{got:?}");
}

/// A page-aligned buffer, as O_DIRECT wants.
#[repr(align(4096))]
struct Page([u8; 4096]);

#[test]
fn o_direct_writes_are_served_and_lost_without_a_sync() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let path = root.join("direct");
    fs::write(&path, b"").unwrap();
    sync_dir(&root);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(&path)
        .unwrap();
    file.write_all_at(&Page([5u8; 4096]).0, 0).unwrap();
    drop(file);
    assert_eq!(fs.activity().direct_opens, 1);
    assert_eq!(fs.activity().direct_writes, 1);
    assert_eq!(fs::read(&path).unwrap(), vec![5u8; 4096]);
    fs.crash(CrashPolicy::LoseUnsynced, &mut Rng::new(2))
        .unwrap();
    assert_eq!(
        fs::read(&path).unwrap(),
        b"",
        "an O_DIRECT write is not a sync"
    );
}

/// A crash while a file on the mount is open fails, naming who holds it;
/// the unmount succeeds once the file is closed.
#[test]
fn an_unmount_refused_for_an_open_file_names_its_holder() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_path_buf();
    let held = File::create(root.join("held")).unwrap();
    let err = fs
        .crash(CrashPolicy::LoseUnsynced, &mut Rng::new(5))
        .unwrap_err();
    let message = err.to_string();
    let holder = format!("pid {} ", std::process::id());
    assert!(
        matches!(err, CrashFsError::Busy { .. })
            && message.contains(&holder)
            && message.contains(&root.join("held").display().to_string()),
        "{message}"
    );
    drop(held);
    fs.unmount().unwrap();
}
