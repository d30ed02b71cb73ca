//! Writer and segments: flushes are durable and shared (group commit, the
//! background writer), segment files and the control file behave on the
//! real file system, direct I/O writes every record and is refused where
//! the file system has none, and `pg_waldump` reads what the writer wrote,
//! across recycling, reopen and SIGKILL.

#[path = "../support/mod.rs"]
mod support;

mod background_writer;
mod direct_io;
mod group_commit;
mod segment_control;
mod segment_files;
mod segments_ahead;
mod write_pg_compat;
