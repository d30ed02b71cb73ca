//! The reservation designs side by side (issue 4; experiments E1 and E2 of
//! algorithms.md §10):
//! - [`micro`]: seed 001's microbenchmark, T threads × N reservations each,
//!   calling the reservation step alone (with its prev-link handoff);
//! - [`insert`]: the whole insert path, non-durable, with 66-byte (the OLTP
//!   average of seed 001's waldump figures) and 4 kB records;
//! - per design, the serialized time per record (measured), the writes to
//!   globally shared cache lines per record (counted from the code), and
//!   the many-core projection of §10 (marked projected).
//!
//! Two cores cannot show the many-core effects the seeds report: the runs
//! calibrate per-operation costs and show oversubscription; the projection
//! carries them to larger machines.

pub mod insert;
pub mod micro;
pub mod suite;
