//! WAL with records of every built-in resource manager, written by
//! `scripts/pg-wal-every-rmgr` on a throwaway PostgreSQL 15 server.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pg::{pg_bin_dir, PG_BIN_ENV};
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
    let script = PathBuf::from(EVERY_RMGR_SCRIPT);
    let output = Command::new(&script)
        .arg(out)
        .env(PG_BIN_ENV, pg_bin_dir())
        .output()
        .map_err(|source| HarnessError::Spawn {
            program: script.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(HarnessError::Generator {
            script,
            out: out.to_path_buf(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}
