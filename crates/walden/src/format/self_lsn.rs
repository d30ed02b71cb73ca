//! The `SelfLsn` format: PostgreSQL 15's layout, except that the 8-byte
//! field after `xl_xid` holds the record's *own* start LSN instead of the
//! previous record's, and pages carry their own magic.
//!
//! A self-LSN needs no serialisation between inserters (each knows its own
//! start after reserving), yet rejects a stale record from a recycled
//! segment as surely as `xl_prev` does: the stale record's self-LSN names
//! where it was written before, not where it is read now. What `xl_prev`
//! adds beyond it, a stale record at the *same* LSN from a previous
//! incarnation of the log, cannot occur because recovery of a log in this
//! format ends with a switch to a fresh segment (see `wal/open.rs`).
//!
//! The page magic differs from every PostgreSQL release's, so PostgreSQL's
//! tools reject these segments ("invalid magic number") instead of misreading
//! the self-LSN as a prev-link.

/// `xlp_magic` of `SelfLsn` pages: not a PostgreSQL magic (those are
/// `0xD0xx`–`0xD1xx`).
pub const SELF_LSN_PAGE_MAGIC: u16 = 0x5E1F;

/// Byte range of the record's own start LSN (u64) in a `SelfLsn` record
/// header: `xl_prev`'s place; the other fields are PostgreSQL's.
pub const XL_SELF_LSN: std::ops::Range<usize> = super::record::XL_PREV;
