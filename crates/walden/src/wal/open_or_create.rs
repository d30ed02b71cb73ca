//! [`Wal::open_or_create`]: open the log in a directory, or create it
//! there if there is none. PostgreSQL: none (initdb, then start).

use std::path::Path;
use std::sync::Arc;

use super::{RecoveryReport, Wal};
use crate::config::Config;
use crate::error::Error;
use crate::segment::{ControlFile, FileOp, FsStorage, IoFailure, SegmentError, Storage};

impl Wal {
    /// Opens the log in `dir` if there is one (recovering it, see
    /// [`Wal::open`]), else creates it (see [`Wal::create`]); the report is
    /// `None` when the log was created.
    ///
    /// ```
    /// # let dir = tempfile::tempdir().unwrap();
    /// use walden::{Config, Wal};
    /// let (wal, report) = Wal::open_or_create(dir.path(), Config::default()).unwrap();
    /// assert!(report.is_none(), "created");
    /// wal.append(b"kept").unwrap();
    /// wal.close().unwrap();
    /// let (_wal, report) = Wal::open_or_create(dir.path(), Config::default()).unwrap();
    /// assert!(report.is_some_and(|r| r.clean_shutdown), "opened");
    /// ```
    pub fn open_or_create(
        dir: impl AsRef<Path>,
        config: Config,
    ) -> Result<(Wal, Option<RecoveryReport>), Error> {
        Wal::open_or_create_with_storage(dir, config, Arc::new(FsStorage))
    }

    /// [`Wal::open_or_create`] over another [`Storage`].
    pub fn open_or_create_with_storage(
        dir: impl AsRef<Path>,
        config: Config,
        storage: Arc<dyn Storage>,
    ) -> Result<(Wal, Option<RecoveryReport>), Error> {
        let dir = dir.as_ref();
        let control = ControlFile::path(dir);
        let exists = storage
            .exists(&control)
            .map_err(|e| SegmentError::from(IoFailure::new(FileOp::CheckExists, &control, e)))?;
        if exists {
            let (wal, report) = Wal::open_with_storage(dir, config, storage)?;
            Ok((wal, Some(report)))
        } else {
            Ok((Wal::create_with_storage(dir, config, storage)?, None))
        }
    }
}
