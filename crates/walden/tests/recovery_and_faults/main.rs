//! Recovery and faults: recovery stops at the end of WAL with PostgreSQL's
//! reason and never replays a stale record; power cuts, failed syncs,
//! storage errors, crashes inside the segment layer and bad input lose no
//! acknowledged record and are typed errors.

#[path = "../support/mod.rs"]
mod support;

mod bad_input;
mod batch_atomicity;
mod end_of_wal_matrix;
mod power_cut;
mod recovery;
mod recovery_modes;
mod segment_crash;
mod storage_faults;
mod sync_failure;
mod torn_splice_after_switch;
