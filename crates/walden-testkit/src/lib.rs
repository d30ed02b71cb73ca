//! Test support for Walden: throwaway PostgreSQL 15 servers, `pg_waldump`
//! runs, parsing of `pg_waldump`'s output, and a file system that loses
//! what was not made durable.
//!
//! - [`pg`]: where PostgreSQL 15's programs are, and running `pg_waldump`;
//! - [`generated`]: the [`generated_wal`] fixture, fresh WAL written by a
//!   real server through `scripts/pg-wal-gen`, with the facts it recorded;
//! - [`every_rmgr`]: [`every_rmgr_wal`], WAL with records of every built-in
//!   resource manager (`scripts/pg-wal-every-rmgr`);
//! - [`server`]: [`PgServer`], a throwaway server kept running for a test;
//! - [`waldump`]: parsers for `pg_waldump`'s record lines and `--stats` table;
//! - [`crashfs`]: a crash-simulating FUSE file system ([`CrashFs`]) that
//!   keeps only what was made durable across a simulated crash;
//! - [`lsn`]: LSN text in PostgreSQL's form (this crate does not depend on
//!   `walden`, so that `walden`'s own tests can use it).
//!
//! The fixture never skips: the test command installs PostgreSQL 15, and a
//! test that cannot start it fails with the generator's stderr. Likewise
//! [`CrashFs::mount`] fails without FUSE (`/dev/fuse` and root); the tests
//! that mount it skip only under `WALDEN_SKIP_FUSE=1`.

pub mod crashfs;
pub mod error;
pub mod every_rmgr;
pub mod generated;
pub mod lsn;
pub mod pg;
pub mod server;
pub mod waldump;

pub use crashfs::{CrashFs, CrashFsError, CrashPolicy, CrashReport};
pub use error::HarnessError;
pub use every_rmgr::every_rmgr_wal;
pub use generated::{generated_wal, Facts, GeneratedWal, MessageFact};
pub use lsn::{format_lsn, parse_lsn, record_end, PAGE_SIZE};
pub use pg::{pg_available, pg_bin, pg_bin_dir, run_pg_waldump};
pub use server::PgServer;
pub use waldump::{
    parse_waldump_output, parse_waldump_stats, BlockImage, ParseError, SkipNote, StatsRow,
    WaldumpBlockRef, WaldumpOutput, WaldumpRecord, WaldumpStats,
};
