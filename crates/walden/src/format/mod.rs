//! The on-disk format: page headers, record header, record body, CRC-32C,
//! and the main data of the records Walden writes or describes.
//!
//! One file per concern; every type encodes and decodes both ways:
//! - [`crc`]: CRC-32C in PostgreSQL's order (body, then header);
//! - [`page`]: page headers and their `XLP_*` flags;
//! - [`record`]: the 24-byte record header;
//! - [`body`]: block references, origin, top-level xid and main data;
//! - [`rmgr`]: resource manager ids and record-type names;
//! - [`message`]: logical messages, checkpoints, switch, commit, and
//!   pg_waldump-style descriptions.

pub mod body;
pub mod crc;
pub(crate) mod le;
pub mod message;
pub mod page;
pub mod record;
pub mod rmgr;

/// The on-disk record format of a Walden log.
///
/// `Postgres15` is byte-compatible with PostgreSQL 15 (records carry
/// `xl_prev`, the start LSN of the previous record). The other formats come
/// with the lock-free reservation designs that need no prev-link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WalFormat {
    /// PostgreSQL 15's format: `pg_waldump` reads it.
    #[default]
    Postgres15,
}
