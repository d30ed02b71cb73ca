//! A throwaway PostgreSQL 15 server for tests that need one running: its
//! data directory and unix socket are in a directory the caller owns; it
//! never listens on a network address. Dropping it stops it (immediate).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::pg::pg_bin;
use crate::HarnessError;

/// A running server.
#[derive(Debug)]
pub struct PgServer {
    work: PathBuf,
}

/// `program args...`, as the `postgres` OS user when run as root (initdb and
/// postgres refuse to run as root).
fn as_pg(program: &str) -> Command {
    let path = pg_bin(program);
    if rustix::process::getuid().is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(path);
        c
    } else {
        Command::new(path)
    }
}

/// Runs `cmd`; its stdout, or an error with both streams.
fn output_of(mut cmd: Command, program: &str) -> Result<String, HarnessError> {
    let out = cmd.output().map_err(|source| HarnessError::Spawn {
        program: PathBuf::from(program),
        source,
    })?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() {
        return Err(HarnessError::Program {
            program: program.to_owned(),
            status: out.status,
            output: format!("{stdout}{}", String::from_utf8_lossy(&out.stderr)),
        });
    }
    Ok(stdout)
}

impl PgServer {
    /// Runs initdb (1 MiB segments) in `work/data` and starts the server
    /// with its socket in `work`. `work` must exist and be empty; when run
    /// as root it is handed to the `postgres` user.
    pub fn start(work: &Path) -> Result<PgServer, HarnessError> {
        if rustix::process::getuid().is_root() {
            let mut chown = Command::new("chown");
            chown.arg("postgres:").arg(work);
            output_of(chown, "chown")?;
        }
        let server = PgServer {
            work: work.to_path_buf(),
        };
        let mut initdb = as_pg("initdb");
        initdb.arg("-D").arg(server.data()).args([
            "--wal-segsize=1",
            "-A",
            "trust",
            "-U",
            "postgres",
            "--no-sync",
        ]);
        output_of(initdb, "initdb")?;
        let mut start = as_pg("pg_ctl");
        start
            .arg("-D")
            .arg(server.data())
            .arg("-l")
            .arg(work.join("server.log"))
            .args(["-w", "-t", "60", "start", "-o"])
            .arg(format!(
                "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off -c autovacuum=off",
                work.display()
            ));
        output_of(start, "pg_ctl start")?;
        Ok(server)
    }

    /// The data directory.
    pub fn data(&self) -> PathBuf {
        self.work.join("data")
    }

    /// The WAL directory.
    pub fn wal_dir(&self) -> PathBuf {
        self.data().join("pg_wal")
    }

    /// Runs `sql` with psql and returns its unaligned, tuples-only output,
    /// trimmed.
    pub fn psql(&self, sql: &str) -> Result<String, HarnessError> {
        let mut psql = as_pg("psql");
        psql.args(["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h"])
            .arg(&self.work)
            .args(["-U", "postgres", "-d", "postgres", "-c", sql]);
        Ok(output_of(psql, "psql")?.trim().to_owned())
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let mut stop = as_pg("pg_ctl");
        stop.arg("-D")
            .arg(self.data())
            .args(["-m", "immediate", "-w", "stop"]);
        // A server that did not start has nothing to stop.
        let _ = stop.output();
    }
}
