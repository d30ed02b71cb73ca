//! Writer and segments: flushes are durable and shared (group commit, the
//! background writer, async flushes that never block their executor),
//! segment files and the control file behave on the real file system,
//! direct I/O writes every record and is refused where the file system has
//! none, a failed create leaves the directory as it found it, and `pg_waldump` reads what the writer wrote, across recycling,
//! reopen and SIGKILL; `Config`, `Stats` and the recovery report travel
//! through serde, and the log reports its life as `tracing` events (its
//! counts as `metrics`: `tests/metrics_export.rs`, a binary of its own).

#[path = "../support/mod.rs"]
mod support;

mod async_flush;
mod auto_checkpoint;
mod background_writer;
mod checkpoint_to;
mod direct_io;
mod failed_create;
mod group_commit;
mod init_ahead;
mod open_or_create;
mod segment_control;
mod segment_files;
mod segments_ahead;
mod serde_forms;
mod tracing_events;
mod write_pg_compat;
