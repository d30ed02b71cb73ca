//! WAL with records of every built-in resource manager, written by
//! `scripts/pg-wal-every-rmgr` on a throwaway PostgreSQL 15 server.

use std::path::{Path, PathBuf};

use crate::generated::run_generator;
use crate::HarnessError;

/// The generator script, `scripts/pg-wal-every-rmgr` in this workspace.
pub const EVERY_RMGR_SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../scripts/pg-wal-every-rmgr"
);

/// Runs `scripts/pg-wal-every-rmgr OUT` (a throwaway PostgreSQL 15 server,
/// a few seconds): `out` receives the segment files. Fails with the
/// script's stderr if it fails.
pub fn every_rmgr_wal(out: &Path) -> Result<(), HarnessError> {
    run_generator(PathBuf::from(EVERY_RMGR_SCRIPT), out, &[])
}
