//! Insert path: concurrent reservation, copy and eviction produce a log
//! that tiles, chains and checksums for every reservation design and
//! format, across the 4 GiB boundary and restarts; eviction writes as much
//! as its policy says; the read-biased lock stays exclusive under stress.

#[path = "../support/mod.rs"]
mod support;

mod batches;
mod designs_and_formats;
mod dumb_ceiling;
mod eviction;
mod insert_stress;
mod many_slots;
mod read_biased_stress;
