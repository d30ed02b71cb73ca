//! Format and reader: the on-disk format round-trips, and the reader reads
//! what PostgreSQL 15 and the synthetic writer wrote exactly as
//! `pg_waldump` does, stops at damage with PostgreSQL's reason, and never
//! panics on damaged or arbitrary bytes.
//!
//! Tests that need the sample WAL (`../shared/pgwal-samples`, or
//! `$WALDEN_PG_SAMPLES`) fail when it is absent unless `WALDEN_SKIP_SAMPLES=1`.

#[path = "../support/mod.rs"]
mod support;

mod format_roundtrip;
mod pg_compat;
mod reader_fresh_wal;
mod reader_fuzz;
mod reader_iterator;
mod reader_samples;
mod reader_synthetic;
