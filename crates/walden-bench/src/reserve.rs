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

use serde::{Deserialize, Serialize};
use walden::{ConfigError, ReservationKind, WalFormat};

use crate::suite::MACHINE_CLASSES;

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

    const fn new(format: WalFormat, reservation: ReservationKind) -> Design {
        Design {
            format,
            reservation,
        }
    }

    /// The designs of [`Design::ALL`] whose format is among `formats` and
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
/// ([`project`] for the reservation suites, [`crate::suite::project`] for
/// `walden bench all`'s summary). Counted from `walden::insert::reserve`:
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
/// - `Unlinked`: 1, the `fetch_add` alone.
pub fn global_line_transfers(reservation: ReservationKind) -> f64 {
    match reservation {
        ReservationKind::Spinlock => 2.0,
        ReservationKind::PrevLinkTable
        | ReservationKind::PrevLinkInBuffer
        | ReservationKind::Unlinked => 1.0,
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
/// - `Unlinked`: the `fetch_add` alone.
pub fn shared_writes(reservation: ReservationKind) -> SharedWrites {
    let (global_writes, neighbour_writes) = match reservation {
        ReservationKind::Spinlock => (4, 0),
        ReservationKind::PrevLinkTable => (1, 5),
        ReservationKind::PrevLinkInBuffer => (1, 2),
        ReservationKind::Unlinked => (1, 0),
    };
    SharedWrites {
        global_writes,
        global_line_transfers: global_line_transfers(reservation),
        neighbour_writes,
    }
}

/// One design's projected ceiling on one machine class (§10:
/// `X_max ≈ 1 / max(t_serial, c_g · t_x(N))`).
#[derive(Clone, Debug, Serialize)]
pub struct Projection {
    /// The design.
    #[serde(serialize_with = "crate::serde_display")]
    pub reservation: ReservationKind,
    /// The machine class.
    pub machine: &'static str,
    /// Its cores.
    pub cores: usize,
    /// Measured on this machine: the serialized step's time, one thread.
    pub serialized_ns: f64,
    /// `c_g`, counted.
    pub global_line_transfers: f64,
    /// `t_x(N)` used, ns: measured for this machine, assumed for the others
    /// (see [`MACHINE_CLASSES`]).
    pub line_transfer_ns: f64,
    /// Projected: reservations per second, millions.
    pub projected_mops: f64,
    /// True when the line transfers, not the serialized work, bound it.
    pub line_bound: bool,
}

/// The projection of `reservation` whose serialized step takes
/// `serialized_ns` here, with this machine's measured line transfer time.
pub fn project(
    reservation: ReservationKind,
    serialized_ns: f64,
    measured_line_transfer_ns: f64,
) -> Vec<Projection> {
    let c_g = global_line_transfers(reservation);
    MACHINE_CLASSES
        .iter()
        .map(|class| {
            let t_x = class.line_transfer_ns.unwrap_or(measured_line_transfer_ns);
            let per_record = serialized_ns.max(c_g * t_x);
            Projection {
                reservation,
                machine: class.name,
                cores: class.cores,
                serialized_ns,
                global_line_transfers: c_g,
                line_transfer_ns: t_x,
                projected_mops: 1e3 / per_record,
                line_bound: c_g * t_x > serialized_ns,
            }
        })
        .collect()
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

    #[test]
    fn only_the_spinlock_moves_its_hot_line_twice() {
        use ReservationKind::*;
        for (r, c_g) in [
            (Spinlock, 2.0),
            (PrevLinkTable, 1.0),
            (PrevLinkInBuffer, 1.0),
            (Unlinked, 1.0),
        ] {
            assert_eq!(global_line_transfers(r), c_g, "{r}");
            assert_eq!(shared_writes(r).global_line_transfers, c_g, "{r}");
            assert!(project(r, 1.0, 1.0)
                .iter()
                .all(|p| p.global_line_transfers == c_g));
        }
    }

    #[test]
    fn the_projection_takes_the_larger_of_the_two_bounds() {
        let rows = project(ReservationKind::Spinlock, 30.0, 40.0);
        assert_eq!(rows.len(), MACHINE_CLASSES.len());
        // This machine: 2 transfers of 40 ns beat 30 ns of work.
        assert!((rows[0].projected_mops - 1e3 / 80.0).abs() < 1e-9);
        assert!(rows[0].line_bound);
        let rows = project(ReservationKind::Unlinked, 50.0, 40.0);
        assert!((rows[0].projected_mops - 1e3 / 50.0).abs() < 1e-9);
        assert!(!rows[0].line_bound);
    }
}
