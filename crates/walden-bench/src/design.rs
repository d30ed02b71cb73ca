//! The reservation designs a suite compares ([`Design`]: a reservation
//! design with the format it runs under) and what the code says about each:
//! the writes per record to shared cache lines ([`shared_writes`]) and `c_g`
//! of algorithms.md §10 ([`global_line_transfers`]).

use serde::{Deserialize, Serialize};
use walden::{ConfigError, ReservationKind, WalFormat};

/// A reservation design with the format it runs under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Design {
    /// The on-disk format.
    #[serde(
        serialize_with = "crate::serde_display",
        deserialize_with = "crate::serde_parse"
    )]
    pub format: WalFormat,
    /// The reservation design.
    #[serde(
        serialize_with = "crate::serde_display",
        deserialize_with = "crate::serde_parse"
    )]
    pub reservation: ReservationKind,
}

impl Design {
    /// Every pair DESIGN.md §3 allows, `Spinlock` (PostgreSQL master, the
    /// baseline of every ratio) first.
    pub const ALL: [Design; 5] = [
        Design::new(WalFormat::Postgres15, ReservationKind::Spinlock),
        Design::new(WalFormat::Postgres15, ReservationKind::PrevLinkTable),
        Design::new(WalFormat::Postgres15, ReservationKind::PrevLinkInBuffer),
        Design::new(WalFormat::SelfLsn, ReservationKind::Unlinked),
        Design::new(WalFormat::CompactWalId, ReservationKind::Unlinked),
    ];

    /// Seed 003's bench-only ceiling, `xl_prev` = start − 1 in the
    /// PostgreSQL format: selected only when `--reservation` names
    /// `dumb-ceiling`, after [`Design::ALL`]; its log is not readable.
    pub const DUMB_CEILING: Design =
        Design::new(WalFormat::Postgres15, ReservationKind::DumbCeiling);

    const fn new(format: WalFormat, reservation: ReservationKind) -> Design {
        Design {
            format,
            reservation,
        }
    }

    /// The designs of [`Design::ALL`] and [`Design::DUMB_CEILING`] whose
    /// format is among `formats` and
    /// whose reservation is among `reservations`, in that order. When the
    /// lists are not empty but no listed pair works, the error is the
    /// library's for the first pair (`reservation = … does not suit
    /// format = …`).
    pub fn select(
        formats: &[WalFormat],
        reservations: &[ReservationKind],
    ) -> Result<Vec<Design>, ConfigError> {
        let designs: Vec<Design> = Design::ALL
            .into_iter()
            .chain([Design::DUMB_CEILING])
            .filter(|d| formats.contains(&d.format) && reservations.contains(&d.reservation))
            .collect();
        match (designs.is_empty(), formats.first(), reservations.first()) {
            (true, Some(&format), Some(&reservation)) => Err(ConfigError::Pairing {
                format,
                reservation,
            }),
            _ => Ok(designs),
        }
    }

    /// `reservation` (for the Postgres15 designs) or `unlinked/format`.
    pub fn label(&self) -> String {
        if self.format == WalFormat::Postgres15 {
            self.reservation.to_string()
        } else {
            format!("{}/{}", self.reservation, self.format)
        }
    }
}

/// Writes per record to shared cache lines, counted from the protocols.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SharedWrites {
    /// Atomic writes (stores and read-modify-writes) per record to lines
    /// every reserver writes: the reservation's one hot line.
    pub global_writes: u32,
    /// How often that line moves between cores per record under
    /// contention: `c_g` of algorithms.md §10 ([`global_line_transfers`]).
    pub global_line_transfers: f64,
    /// Atomic writes per record to lines shared only with the neighbouring
    /// reservers (the table's entries, the in-buffer field).
    pub neighbour_writes: u32,
}

/// `c_g` of algorithms.md §10 for `reservation`: how many times per record
/// a cache line that *every* reserver writes moves between cores under
/// contention. It is the one source of the `c_g` both projections use
/// ([`crate::projection::project_reservation`] for the reservation suites,
/// [`crate::projection::project_mix`] for `walden bench all`'s summary). Counted from `walden::insert::reserve`:
/// - `Spinlock` (`spinlock.rs`): 2. The lock word and both positions share
///   one padded line; the acquiring CAS pulls it in, a contending waiter
///   pulls it away while the holder is inside, and the releasing store
///   pulls it back (§10, E1 (a): "≥ 2 line transfers per op").
/// - `PrevLinkTable` (`head.rs`, `prev_link_table.rs`, `cuckoo.rs`): 1.
///   The head's `fetch_add`, alone on its padded line, is the only global
///   write. The cuckoo entries a record publishes and consumes lie in the
///   buckets hashed from its own start and end keys; each bucket is shared
///   with the predecessor or the successor only, and other records use
///   other buckets, so those transfers run between pairs of neighbours in
///   parallel: they lengthen an insert, they do not serialise all cores.
/// - `PrevLinkInBuffer` (`head.rs`, `prev_link_in_buffer.rs`): 1. The
///   `fetch_add`; the handoff field at `end + 8` is a buffer line shared by
///   one reserver and its successor, a different line for every record.
/// - `Unlinked`, `DumbCeiling`: 1, the `fetch_add` alone.
pub fn global_line_transfers(reservation: ReservationKind) -> f64 {
    match reservation {
        ReservationKind::Spinlock => 2.0,
        ReservationKind::PrevLinkTable
        | ReservationKind::PrevLinkInBuffer
        | ReservationKind::Unlinked
        | ReservationKind::DumbCeiling => 1.0,
    }
}

/// [`SharedWrites`] of a design (the transfers from
/// [`global_line_transfers`]):
/// - `Spinlock`: the lock's CAS, the two positions and the releasing store,
///   all on the one line: 4 writes;
/// - `PrevLinkTable`: the head's `fetch_add` (1 write); then publish (CAS
///   of the value, swap of the key) and consume (lock `fetch_or`, value
///   swap, key CAS) on entries the predecessor and the successor share:
///   5 neighbour writes;
/// - `PrevLinkInBuffer`: the `fetch_add`; then the successor's field, two
///   32-bit stores on the line the successor waits on;
/// - `Unlinked`, `DumbCeiling`: the `fetch_add` alone.
pub fn shared_writes(reservation: ReservationKind) -> SharedWrites {
    let (global_writes, neighbour_writes) = match reservation {
        ReservationKind::Spinlock => (4, 0),
        ReservationKind::PrevLinkTable => (1, 5),
        ReservationKind::PrevLinkInBuffer => (1, 2),
        ReservationKind::Unlinked | ReservationKind::DumbCeiling => (1, 0),
    };
    SharedWrites {
        global_writes,
        global_line_transfers: global_line_transfers(reservation),
        neighbour_writes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_pairs_with_its_format() {
        for d in Design::ALL {
            assert!(d.reservation.pairs_with(d.format), "{d:?}");
        }
        assert_eq!(Design::ALL[0].reservation, ReservationKind::Spinlock);
        assert_eq!(Design::ALL[4].label(), "unlinked/compact-wal-id");
    }

    #[test]
    fn selecting_keeps_the_pairs_that_work_and_names_an_impossible_one() {
        let all = Design::select(&WalFormat::ALL, &ReservationKind::ALL).unwrap();
        assert_eq!(all, Design::ALL);
        let some = Design::select(&WalFormat::ALL, &[ReservationKind::Unlinked]).unwrap();
        assert_eq!(some, Design::ALL[3..]);
        let err = Design::select(&[WalFormat::SelfLsn], &[ReservationKind::Spinlock])
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("reservation = spinlock does not suit format = self-lsn"),
            "{err}"
        );
        assert!(Design::select(&[], &[]).unwrap().is_empty());
    }
}
