//! A log store for [openraft](https://docs.rs/openraft/0.9) 0.9 (storage v2)
//! kept in a Walden write-ahead log.
//!
//! [`WaldenLogStore`] implements openraft's `RaftLogStorage`: every change
//! to the raft log is one Walden record with a custom resource manager id
//! ([`RecordKind`]) and a compact binary payload ([postcard], through the
//! entries' serde implementation). The log itself stays in the WAL: the
//! store keeps an index in memory (each live entry's LSN, 8 bytes an entry,
//! and one leader id per run of entries) and a bounded cache of the newest
//! entries ([`StoreOptions::cache_bytes`]), and reads older entries from the
//! WAL on demand. Opening rebuilds the index by reading the records since
//! the last checkpoint once, decoding only each entry's log id. An `append`
//! is one Walden batch ([`walden::Wal::insert_batch`]); a purge lets the
//! segments below the first live entry go through
//! [`walden::Wal::checkpoint_to`], without rewriting a live entry
//! ([`compact`] documents how, and the invariant that keeps recovery
//! complete). [`MemStateMachine`] is an in-memory state machine to pair it
//! with in tests and examples.
//!
//! # Memory
//!
//! [`WaldenLogStore::memory_footprint`] counts the index and the cache. After
//! appending 1,000,000 entries of 100-byte requests with a 1 MiB cache it is
//! 9.57 MB (the requests alone are 100 MB), and a counting allocator sees the
//! heap grow by the same 9.57 MB: the LSN ring (1,048,576 slots of 8 bytes)
//! plus the cache. Measured on the 2-vCPU development machine with
//! `cargo run --release -p walden-raft --example footprint`; its test checks
//! the bound (16 bytes an entry plus twice the cache) on every run.
//!
//! ```no_run
//! use std::io::Cursor; // openraft's default snapshot data type
//! use walden::{Config, SyncMethod};
//! use walden_raft::{StoreOptions, WaldenLogStore};
//!
//! openraft::declare_raft_types!(pub MyConfig);
//!
//! let config = Config { segment_size: 16 << 20, sync_method: SyncMethod::Fdatasync, ..Config::default() };
//! let options = StoreOptions::default().with_cache_bytes(8 << 20);
//! let store = WaldenLogStore::<MyConfig>::open_with("/var/lib/myapp/raft-log", config, options)?;
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
