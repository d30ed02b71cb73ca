//! The umbrella run's summary (`walden bench all`, `walden bench summary`):
//! Walden against each peer, against the machine's limits and against
//! PostgreSQL 15, as ratios of figures measured in the same run; the
//! many-core projection of algorithms.md §10 (marked projected); and the
//! charts.

pub mod charts;
pub mod ratios;
pub mod results;
