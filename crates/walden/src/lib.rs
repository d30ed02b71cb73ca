//! Walden: a write-ahead log engine whose insert path scales with cores.
//!
//! Walden is PostgreSQL's WAL machinery (reserve → copy into shared buffer
//! pages → flush with group commit → segment files → recovery) rebuilt as an
//! embeddable library. Its `Postgres15` format is byte-compatible with
//! PostgreSQL 15, so PostgreSQL's own `pg_waldump` verifies what Walden
//! writes and Walden reads what a PostgreSQL server writes.
//!
//! The modules follow the data path:
//! - [`lsn`]: log sequence numbers and usable-byte-position arithmetic;
//! - [`format`]: the on-disk format (page headers, record header, body, CRC);
//! - [`read`]: reading and validating WAL from segment files;
//! - [`sync`]: concurrency primitives used on the insert path.

pub mod format;
pub mod lsn;
pub mod read;
pub mod sync;

pub use lsn::{Lsn, SegmentSize, TimeLineId};
