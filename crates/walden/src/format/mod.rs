//! The on-disk format: page headers, record header, record body, CRC-32C,
//! and the main data of the records Walden writes or describes.
//!
//! One file per concern; every type encodes and decodes both ways:
//! - [`crc`]: CRC-32C in PostgreSQL's order (body, then header);
//! - [`page`]: page headers and their `XLP_*` flags;
//! - [`record`]: the 24-byte record header;
//! - [`body`]: block references, origin, top-level xid and main data;
//! - [`rmgr`]: resource manager ids and names;
//! - [`message`]: logical messages, checkpoints, switch, commit, and
//!   pg_waldump's record-type names and descriptions of every rmgr;
//! - `layout`: what differs between the [`WalFormat`]s (record header
//!   size and link field, page magic), with [`self_lsn`] and [`compact`]
//!   holding the two non-PostgreSQL formats' constants;
//! - [`header_words`]: a record header as the words it is stored and
//!   CRC'd in, in every format;
//! - [`record_crc`]: a small record's CRC computed as its body is copied;
//! - `little_endian`: bounds-checked field access for the decoders.
//!
//! Byte layout: every field of a fixed header is a `Range<usize>` constant
//! named after PostgreSQL's field (`page::XLP_PAGEADDR`, `record::XL_PREV`,
//! `compact::XL_WALID`, ...), and encoders and decoders index with those
//! names only; tests check that the ranges tile each header exactly.

pub mod body;
pub mod compact;
pub mod crc;
pub mod header_words;
mod layout;
pub(crate) mod little_endian;
pub mod message;
pub mod page;
pub mod record;
pub mod record_crc;
pub mod rmgr;
pub mod self_lsn;

pub use layout::RecordLink;

/// The on-disk record format of a Walden log.
///
/// `Postgres15` is byte-compatible with PostgreSQL 15 (records carry
/// `xl_prev`, the start LSN of the previous record). The other formats come
/// with the lock-free reservation that needs no prev-link
/// ([`crate::ReservationKind::Unlinked`]); what differs between formats is
/// defined in one place (the `impl` in `layout.rs`), used by the writer and
/// the reader alike.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum WalFormat {
    /// PostgreSQL 15's format: `pg_waldump` reads it.
    #[default]
    Postgres15,
    /// PostgreSQL 15's layout with the record's own start LSN where
    /// `xl_prev` was, and its own page magic (`format::self_lsn`).
    SelfLsn,
    /// Seed 001's 16-byte header with a 2-byte segment id instead of
    /// `xl_prev`, the id also in every page header (`format::compact`).
    CompactWalId,
}
