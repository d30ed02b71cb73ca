//! A log store for [openraft](https://docs.rs/openraft/0.9) 0.9 (storage v2)
//! kept in a Walden write-ahead log.
//!
//! [`WaldenLogStore`] implements openraft's `RaftLogStorage`: every change
//! to the raft log is one Walden record with a custom resource manager id
//! ([`RecordKind`]), the log is kept in memory and rebuilt on open by
//! replaying those records, and purged entries leave the disk through
//! Walden checkpoints ([`compact`] documents how, and the invariant that
//! keeps recovery complete). [`MemStateMachine`] is an in-memory state
//! machine to pair it with in tests and examples.
//!
//! ```no_run
//! use std::io::Cursor; // openraft's default snapshot data type
//! use walden::{Config, SyncMethod};
//! use walden_raft::WaldenLogStore;
//!
//! openraft::declare_raft_types!(pub MyConfig);
//!
//! let config = Config { segment_size: 16 << 20, sync_method: SyncMethod::Fdatasync, ..Config::default() };
//! let store = WaldenLogStore::<MyConfig>::open("/var/lib/myapp/raft-log", config)?;
//! // Hand `store` to `openraft::Raft::new` as its log storage.
//! # Ok::<(), walden_raft::RaftStoreError>(())
//! ```

mod cache;
pub mod codec;
pub mod compact;
mod contents;
pub mod error;
mod flusher;
mod index;
mod reader;
pub mod state_machine;
mod store;
#[cfg(test)]
mod test_support;

pub use codec::RecordKind;
pub use compact::Compaction;
pub use contents::Discontinuity;
pub use error::RaftStoreError;
pub use reader::WaldenLogReader;
pub use state_machine::{AppState, MemStateMachine};
pub use store::{StoreOptions, WaldenLogStore, DEFAULT_CACHE_BYTES};
