//! The on-disk format: page headers, record header, record body, CRC-32C.

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
