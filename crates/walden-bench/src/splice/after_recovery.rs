//! The same-LSN scenario under the engine's restart rule, with a real
//! crash and a real recovery: a log is written and left uncleanly, a crash
//! tears one of its records (everything after it is the crashed
//! incarnation's bytes past the end recovery will find), `Wal::open`
//! recovers, and new records are written. Under each new record lies what
//! the file under it held before the recovery, if the engine kept that
//! file, or zeros if the engine created it afresh: which, is observed from
//! the files' identities, not assumed.

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Arc;

use walden::{FsStorage, Wal, WalFormat};

use super::{
    config, fill, io, read_all, read_files, segment_size, tempdir, Experiment, Files, Sizes,
    SpliceError, SpliceSettings, Written, FIRST_SEGMENT, SECTOR, SEGMENT_SIZE,
};

/// Writes, crashes, recovers and writes again; pairs each new segment with
/// what its file held before the recovery.
pub(super) fn build(
    format: WalFormat,
    settings: SpliceSettings,
    parent: &Path,
) -> Result<Experiment, SpliceError> {
    let seg = segment_size();
    let dir = tempdir(parent, "recovered")?;
    // No segment prepared ahead (`config`): every file is the engine's doing.
    let config = config(format, settings);
    let wal = Wal::create_at_segment(
        dir.path(),
        config.clone(),
        Arc::new(FsStorage),
        FIRST_SEGMENT,
    )?;
    let mut sizes = Sizes::new(settings.seed);
    fill(&wal, &mut sizes, settings.segments)?;
    // Dropped without `close`: an unclean shutdown.
    drop(wal);
    let old_records = read_all(dir.path())?;
    // The torn record: one starting on a sector boundary (so that the
    // record written there next is spliced too), a third into the segment.
    let torn = old_records
        .iter()
        .find(|r| {
            let offset = seg.offset(r.lsn);
            seg.segno(r.lsn) == FIRST_SEGMENT
                && offset >= SEGMENT_SIZE / 3
                && offset.is_multiple_of(SECTOR)
                && offset + u64::from(r.header.tot_len) < SEGMENT_SIZE
        })
        .ok_or(SpliceError::NoTearPoint(FIRST_SEGMENT))?;
    let path = dir.path().join(seg.file_name(1, FIRST_SEGMENT));
    let mut bytes = std::fs::read(&path).map_err(io(format!("reading {}", path.display())))?;
    let last = (seg.offset(torn.lsn) + u64::from(torn.header.tot_len) - 1) as usize;
    bytes[last] ^= 0xFF;
    std::fs::write(&path, &bytes).map_err(io(format!("writing {}", path.display())))?;

    // Each file as the crash left it, kept alive under a second name so
    // that no file the engine creates can take its inode number.
    let before = read_files(dir.path(), seg)?;
    let held = tempdir(parent, "before-recovery")?;
    let mut by_inode: HashMap<(u64, u64), Arc<Vec<u8>>> = HashMap::new();
    for (&segno, contents) in &before {
        let name = seg.file_name(1, segno);
        let link = held.path().join(&name);
        std::fs::hard_link(dir.path().join(&name), &link)
            .map_err(io(format!("linking {}", link.display())))?;
        by_inode.insert(identity(&link)?, contents.clone());
    }

    let (wal, _) = Wal::open(dir.path(), config)?;
    let mut sizes = Sizes::new(settings.seed ^ 0x9E37_79B9_7F4A_7C15);
    fill(&wal, &mut sizes, settings.segments)?;
    wal.close()?;
    let new = Written {
        files: read_files(dir.path(), seg)?,
        records: read_all(dir.path())?,
    };
    let zeros = Arc::new(vec![0u8; SEGMENT_SIZE as usize]);
    let mut old_files = Files::new();
    for &segno in new.files.keys() {
        let file = identity(&dir.path().join(seg.file_name(1, segno)))?;
        let under = by_inode.get(&file).unwrap_or(&zeros).clone();
        old_files.insert(segno, under);
    }
    let pairs = new
        .files
        .keys()
        .map(|&segno| (segno, vec![segno]))
        .collect();
    let old = Written {
        files: old_files,
        records: old_records,
    };
    Ok(Experiment { old, new, pairs })
}

/// The device and inode of the file at `path`.
fn identity(path: &Path) -> Result<(u64, u64), SpliceError> {
    let meta = std::fs::metadata(path).map_err(io(format!("reading {}", path.display())))?;
    Ok((meta.dev(), meta.ino()))
}
