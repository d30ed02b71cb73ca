//! [`SegmentFiles`]: the segment files of one WAL directory and timeline.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::direct_io::refuses_direct_io;
use super::durable::{discard, rename_durably, write_synced};
use super::error::{failed, FileOp, IoFailure, SegmentError};
use super::prepare::{PrepareFor, Target};
use super::recycle::RecyclePlan;
use super::storage::{FileSyncMode, OpenOptions, Storage, StorageFile};
use crate::lsn::{SegmentSize, TimeLineId};

/// Suffix of the temporary file a segment is prepared under before it gets
/// its name (the segment's name plus this suffix).
pub const SEGMENT_TEMP_SUFFIX: &str = ".tmp";

/// Result of segment file operations.
pub type Result<T, E = SegmentError> = std::result::Result<T, E>;

/// The segment files of one WAL directory, for one segment size and timeline:
/// naming, creation, recycling, removal and opening.
///
/// Every creation, rename and removal is followed by a sync of the directory
/// before the call returns, so a segment it reports ready is durably there.
/// Segments are named as PostgreSQL names them
/// ([`SegmentSize::file_name`]). One `SegmentFiles` is assumed to be the only
/// writer of its directory's segment names: checks such as "the name is
/// free" are not atomic with the rename that follows them.
///
/// PostgreSQL: `XLogFileInit`, `InstallXLogFileSegment`, `RemoveOldXlogFiles`.
#[derive(Clone, Debug)]
pub struct SegmentFiles {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    segment_size: SegmentSize,
    timeline: TimeLineId,
}

impl SegmentFiles {
    /// The segment files in `dir` for `segment_size` and `timeline`, accessed
    /// through `storage`. Touches nothing on disk.
    pub fn new(
        storage: Arc<dyn Storage>,
        dir: impl Into<PathBuf>,
        segment_size: SegmentSize,
        timeline: TimeLineId,
    ) -> Self {
        SegmentFiles {
            storage,
            dir: dir.into(),
            segment_size,
            timeline,
        }
    }

    /// The WAL directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The segment size.
    pub fn segment_size(&self) -> SegmentSize {
        self.segment_size
    }

    /// The timeline the segment names carry.
    pub fn timeline(&self) -> TimeLineId {
        self.timeline
    }

    /// The storage all operations go through.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The path of segment `segno` (PostgreSQL: `XLogFilePath`).
    pub fn path(&self, segno: u64) -> PathBuf {
        self.dir.join(self.name(segno))
    }

    fn name(&self, segno: u64) -> String {
        self.segment_size.file_name(self.timeline, segno)
    }

    /// Whether segment `segno` exists.
    pub fn exists(&self, segno: u64) -> Result<bool> {
        let path = self.path(segno);
        Ok(self
            .storage
            .exists(&path)
            .map_err(failed(FileOp::CheckExists, &path))?)
    }

    /// The numbers of this timeline's segments in the directory, ascending.
    /// Other names are ignored: other timelines' segments, `*.history`,
    /// `*.partial`, temporary files, names whose segment part does not fit the
    /// segment size, names in lower-case hex.
    pub fn list(&self) -> Result<Vec<u64>> {
        let names = self
            .storage
            .list_dir(&self.dir)
            .map_err(failed(FileOp::ListDir, &self.dir))?;
        let mut segnos: Vec<u64> = names
            .iter()
            .filter_map(|name| {
                let (tli, segno) = self.segment_size.parse_file_name(name)?;
                // Only the exact name `path` gives, so lower-case hex is ignored.
                (tli == self.timeline && *name == self.name(segno)).then_some(segno)
            })
            .collect();
        segnos.sort_unstable();
        Ok(segnos)
    }

    /// Creates segment `segno` full of zeros, durably: [`SegmentFiles::create`]
    /// with [`SegmentPrep::ZeroFill`](super::SegmentPrep::ZeroFill).
    ///
    /// PostgreSQL: `XLogFileInitInternal` with `wal_init_zero`.
    pub fn create_zeroed(&self, segno: u64) -> Result<()> {
        self.create(segno, &PrepareFor::default())
    }

    /// Creates segment `segno`, prepared as `how` says, durably:
    /// [`SegmentFiles::prepare`] then [`SegmentFiles::install`].
    ///
    /// The file is prepared as `<name>.tmp`, synced and renamed into place
    /// before the directory is synced, so a crash never leaves a partial file
    /// under the segment's name. An existing segment is an error
    /// ([`SegmentError::AlreadyExists`]) and is left untouched. Preparing with
    /// `fallocate` on a storage without it is
    /// [`SegmentError::AllocateUnsupported`].
    pub fn create(&self, segno: u64, how: &PrepareFor) -> Result<()> {
        self.ensure_free(segno)?;
        self.prepare(segno, how, &|| false)?;
        self.install(segno)
    }

    /// Prepares segment `segno` under its temporary name `<name>.tmp`, as
    /// `how` says, and syncs it; nothing carries the segment's name yet, so
    /// this may run while others create or rename segments, as long as no
    /// one else prepares the same segment. On an error the temporary file
    /// is removed if possible. `abandoned` is polled between the fill's
    /// writes: once it says true the fill stops, the file is removed and
    /// the result is an error of kind [`std::io::ErrorKind::Interrupted`].
    pub fn prepare(
        &self,
        segno: u64,
        how: &PrepareFor,
        abandoned: &dyn Fn() -> bool,
    ) -> Result<()> {
        let written = write_synced(&*self.storage, &self.dir, &self.temp_name(segno), |file| {
            how.fill(&Target {
                file,
                seg: self.segment_size,
                timeline: self.timeline,
                segno,
                abandoned,
            })
        });
        match written {
            Err(e) if e.error.kind() == std::io::ErrorKind::Unsupported => {
                Err(SegmentError::AllocateUnsupported {
                    path: e.path,
                    cause: e.error.to_string(),
                })
            }
            other => Ok(other?),
        }
    }

    /// Gives segment `segno`, prepared by [`SegmentFiles::prepare`], its
    /// name and syncs the directory: from then on it is durably there. An
    /// existing segment is an error ([`SegmentError::AlreadyExists`]) and
    /// is left untouched; the prepared file is removed then, as after a
    /// failed rename.
    pub fn install(&self, segno: u64) -> Result<()> {
        let temp_name = self.temp_name(segno);
        if let Err(e) = self.ensure_free(segno) {
            discard(&*self.storage, &self.dir.join(&temp_name));
            return Err(e);
        }
        rename_durably(&*self.storage, &self.dir, &temp_name, &self.name(segno))?;
        Ok(())
    }

    /// The name segment `segno` is prepared under.
    fn temp_name(&self, segno: u64) -> String {
        format!("{}{SEGMENT_TEMP_SUFFIX}", self.name(segno))
    }

    /// Renames obsolete segment `old` to the future segment `new` and syncs
    /// the directory. Its contents stay: readers tell them from new WAL by
    /// the page addresses in the page headers. `new` must not exist
    /// ([`SegmentError::AlreadyExists`]); `old` must.
    ///
    /// PostgreSQL: `InstallXLogFileSegment` called from `RemoveXlogFile`.
    pub fn recycle(&self, old: u64, new: u64) -> Result<()> {
        self.rename(old, new)?;
        self.sync_dir()
    }

    /// Removes segment `segno` and syncs the directory.
    pub fn remove(&self, segno: u64) -> Result<()> {
        self.unlink(segno)?;
        self.sync_dir()
    }

    /// Carries out a [`RecyclePlan`]: its renames, then its removals, then one
    /// directory sync. Stops at the first error; a crash midway leaves each
    /// obsolete segment under its old name, its new name, or gone.
    pub fn apply(&self, plan: &RecyclePlan) -> Result<()> {
        tracing::debug!(
            recycled = ?plan.recycle,
            removed = ?plan.remove,
            dir = %self.dir.display(),
            "recycling segments"
        );
        for &(old, new) in &plan.recycle {
            self.rename(old, new)?;
        }
        for &segno in &plan.remove {
            self.unlink(segno)?;
        }
        self.sync_dir()
    }

    /// Removes temporary files left by a [`SegmentFiles::create`] that
    /// crashed, and syncs the directory if it removed any; returns how many
    /// it removed. Call it before any segment is being created.
    ///
    /// PostgreSQL: `RemoveTempXlogFiles`.
    pub fn remove_temp_files(&self) -> Result<usize> {
        let names = self
            .storage
            .list_dir(&self.dir)
            .map_err(failed(FileOp::ListDir, &self.dir))?;
        let mut removed = 0;
        for name in names {
            let is_temp = name
                .strip_suffix(SEGMENT_TEMP_SUFFIX)
                .is_some_and(crate::lsn::is_segment_file_name);
            if is_temp {
                let path = self.dir.join(&name);
                self.storage
                    .remove_file(&path)
                    .map_err(failed(FileOp::Remove, &path))?;
                removed += 1;
            }
        }
        if removed > 0 {
            self.sync_dir()?;
        }
        Ok(removed)
    }

    /// Opens existing segment `segno` for reading and writing, with writes
    /// reaching stable storage as `sync` says.
    pub fn open_for_write(&self, segno: u64, sync: FileSyncMode) -> Result<Box<dyn StorageFile>> {
        self.open(segno, &OpenOptions::new().read(true).write(true).sync(sync))
    }

    /// Opens existing segment `segno` for reading.
    pub fn open_for_read(&self, segno: u64) -> Result<Box<dyn StorageFile>> {
        self.open(segno, &OpenOptions::new().read(true))
    }

    /// Opens segment `segno` as `opts` say (the writer's options: read,
    /// write, a sync mode, direct I/O); a missing segment is
    /// [`SegmentError::Missing`] unless `opts` create it. With
    /// [`OpenOptions::direct`] on a file system that refuses it, fails with
    /// [`SegmentError::DirectIoUnsupported`].
    pub fn open(&self, segno: u64, opts: &OpenOptions) -> Result<Box<dyn StorageFile>> {
        let path = self.path(segno);
        self.storage.open(&path, opts).map_err(|error| {
            if error.kind() == std::io::ErrorKind::NotFound {
                SegmentError::Missing { segno, path }
            } else if opts.direct && refuses_direct_io(&error) {
                SegmentError::DirectIoUnsupported {
                    dir: self.dir.clone(),
                    cause: error.to_string(),
                }
            } else {
                IoFailure::new(FileOp::Open, &path, error).into()
            }
        })
    }

    fn ensure_free(&self, segno: u64) -> Result<()> {
        if self.exists(segno)? {
            return Err(SegmentError::AlreadyExists {
                path: self.path(segno),
            });
        }
        Ok(())
    }

    /// Renames segment `old` to `new` without syncing the directory.
    fn rename(&self, old: u64, new: u64) -> Result<()> {
        self.ensure_free(new)?;
        let (from, to) = (self.path(old), self.path(new));
        self.storage
            .rename(&from, &to)
            .map_err(|e| IoFailure::rename(&from, &to, e))?;
        Ok(())
    }

    /// Removes segment `segno` without syncing the directory.
    fn unlink(&self, segno: u64) -> Result<()> {
        let path = self.path(segno);
        self.storage
            .remove_file(&path)
            .map_err(failed(FileOp::Remove, &path))?;
        Ok(())
    }

    fn sync_dir(&self) -> Result<()> {
        self.storage
            .sync_dir(&self.dir)
            .map_err(failed(FileOp::SyncDir, &self.dir))?;
        Ok(())
    }
}
