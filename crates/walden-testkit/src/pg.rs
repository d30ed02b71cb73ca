//! PostgreSQL 15's programs.

use std::ffi::OsStr;
use std::path::PathBuf;
use std::process::{Command, Output};

use crate::HarnessError;

/// Environment variable naming the directory of PostgreSQL 15's programs
/// (`scripts/pg-wal-gen` honours it too).
pub const PG_BIN_ENV: &str = "WALDEN_PG_BIN";

/// Where Debian's `postgresql-15` package puts its programs (not on `$PATH`).
pub const DEBIAN_PG15_BIN: &str = "/usr/lib/postgresql/15/bin";

/// The directory of PostgreSQL 15's programs: `$WALDEN_PG_BIN`, else
/// [`DEBIAN_PG15_BIN`].
pub fn pg_bin_dir() -> PathBuf {
    std::env::var_os(PG_BIN_ENV)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEBIAN_PG15_BIN))
}

/// The path of PostgreSQL program `name` (e.g. `"pg_waldump"`).
pub fn pg_bin(name: &str) -> PathBuf {
    pg_bin_dir().join(name)
}

/// True if the programs the harness runs are installed: `initdb`, `pg_ctl`,
/// `postgres`, `psql`, `pgbench`, `pg_controldata` and `pg_waldump`.
pub fn pg_available() -> bool {
    [
        "initdb",
        "pg_ctl",
        "postgres",
        "psql",
        "pgbench",
        "pg_controldata",
        "pg_waldump",
    ]
    .iter()
    .all(|name| pg_bin(name).is_file())
}

/// Runs `pg_waldump` with `args` and returns its exit status and output.
/// A non-zero exit is not an error here: tests compare it.
pub fn run_pg_waldump<I, S>(args: I) -> Result<Output, HarnessError>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    let program = pg_bin("pg_waldump");
    Command::new(&program)
        .args(args)
        .output()
        .map_err(|source| HarnessError::Spawn { program, source })
}
