//! The many-core projection of algorithms.md §10 (marked projected
//! wherever it is printed): the machine classes it carries this machine's
//! measurements to, and the two ceilings it projects per reservation design,
//! from the serialized step of the reservation suites
//! ([`project_reservation`]) and from the one-thread rate of the `mix` suite
//! for `walden bench all`'s summary ([`project_mix`]). Both take `c_g` from
//! [`global_line_transfers`].

use serde::Serialize;
use walden::{ReservationKind, SyncMethod};

use crate::design::global_line_transfers;
use crate::mix::MixResult;

/// A machine class of the many-core projection.
#[derive(Clone, Debug, Serialize)]
pub struct MachineClass {
    /// Its description.
    pub name: String,
    /// Cores inserting at once.
    pub cores: usize,
    /// Assumed time to move one contended cache line between its cores, ns
    /// (`None`: this machine's, measured in the run).
    pub line_transfer_ns: Option<f64>,
}

/// The CPUs this process may use (`std::thread::available_parallelism`;
/// 1 where it cannot tell): the measuring machine's row of the projection.
pub fn this_machine_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The projection's machine classes: first the machine that measured, with
/// its `cores` CPUs and its line transfer time measured in the run; then the
/// many-core classes, whose transfer times are assumptions of the usual order
/// of published core-to-core latencies (tens of ns within a socket, ~2-3x
/// that across sockets), not measurements: a device run replaces them.
pub fn machine_classes(cores: usize) -> [MachineClass; 4] {
    let assumed = |name: &str, cores, ns| MachineClass {
        name: name.to_owned(),
        cores,
        line_transfer_ns: Some(ns),
    };
    [
        MachineClass {
            name: format!("this machine ({cores} CPUs, measured)"),
            cores,
            line_transfer_ns: None,
        },
        assumed("16 cores, one socket", 16, 70.0),
        assumed("64 cores, one socket", 64, 100.0),
        assumed("480 vCPUs, two sockets (seed 003's E6)", 480, 200.0),
    ]
}

/// The projected ceiling of one design on one machine class.
#[derive(Clone, Debug, Serialize)]
pub struct MixProjection {
    /// The design.
    #[serde(serialize_with = "crate::serde_display")]
    pub design: ReservationKind,
    /// The machine class.
    pub machine: String,
    /// Its cores.
    pub cores: usize,
    /// Measured: records/s of one thread (mix suite, no sync).
    pub one_thread_records_per_sec: f64,
    /// `c_g`: transfers of the globally shared line per record
    /// ([`global_line_transfers`]).
    pub global_line_transfers: f64,
    /// `t_x` used, ns.
    pub line_transfer_ns: f64,
    /// Projected: `min(cores × one-thread rate, 1 / (c_g · t_x))`.
    pub projected_records_per_sec: f64,
    /// True when the serialized part (`c_g · t_x`), not the cores, bounds it.
    pub serial_bound: bool,
}

/// The many-core projection of algorithms.md §10 for each design in the
/// mix results (one-thread, unsynced rates), with the measuring machine's
/// `cores` and cache-line transfer time `line_transfer_ns`.
pub fn project_mix(mix: &[MixResult], line_transfer_ns: f64, cores: usize) -> Vec<MixProjection> {
    let mut out = Vec::new();
    for design in ReservationKind::ALL {
        let Some(one) = mix.iter().find(|m| {
            m.case.design.reservation == design
                && m.case.threads == 1
                && m.case.sync_method == SyncMethod::None
        }) else {
            continue;
        };
        let r1 = one.figures.records_per_sec;
        let c_g = global_line_transfers(design);
        for class in machine_classes(cores) {
            let t_x = class.line_transfer_ns.unwrap_or(line_transfer_ns);
            let parallel = class.cores as f64 * r1;
            let serial = 1e9 / (c_g * t_x);
            out.push(MixProjection {
                design,
                machine: class.name,
                cores: class.cores,
                one_thread_records_per_sec: r1,
                global_line_transfers: c_g,
                line_transfer_ns: t_x,
                projected_records_per_sec: parallel.min(serial),
                serial_bound: serial < parallel,
            });
        }
    }
    out
}

/// One design's projected ceiling on one machine class (§10:
/// `X_max ≈ 1 / max(t_serial, c_g · t_x(N))`).
#[derive(Clone, Debug, Serialize)]
pub struct ReservationProjection {
    /// The design.
    #[serde(serialize_with = "crate::serde_display")]
    pub reservation: ReservationKind,
    /// The machine class.
    pub machine: String,
    /// Its cores.
    pub cores: usize,
    /// Measured on this machine: the serialized step's time, one thread.
    pub serialized_ns: f64,
    /// `c_g`, counted.
    pub global_line_transfers: f64,
    /// `t_x(N)` used, ns: measured for this machine, assumed for the others
    /// (see [`machine_classes`]).
    pub line_transfer_ns: f64,
    /// Projected: reservations per second, millions.
    pub projected_mops: f64,
    /// True when the line transfers, not the serialized work, bound it.
    pub line_bound: bool,
}

/// The projection of `reservation` whose serialized step takes
/// `serialized_ns` here, with this machine's `cores` and measured line
/// transfer time.
pub fn project_reservation(
    reservation: ReservationKind,
    serialized_ns: f64,
    measured_line_transfer_ns: f64,
    cores: usize,
) -> Vec<ReservationProjection> {
    let c_g = global_line_transfers(reservation);
    machine_classes(cores)
        .into_iter()
        .map(|class| {
            let t_x = class.line_transfer_ns.unwrap_or(measured_line_transfer_ns);
            let per_record = serialized_ns.max(c_g * t_x);
            ReservationProjection {
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
    use crate::design::{shared_writes, Design};
    use crate::fixtures::figures;
    use crate::mix::MixCase;

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
            assert!(project_reservation(r, 1.0, 1.0, 2)
                .iter()
                .all(|p| p.global_line_transfers == c_g));
        }
    }

    #[test]
    fn the_projection_takes_the_larger_of_the_two_bounds() {
        let rows = project_reservation(ReservationKind::Spinlock, 30.0, 40.0, 2);
        assert_eq!(rows.len(), machine_classes(2).len());
        // This machine: 2 transfers of 40 ns beat 30 ns of work.
        assert!((rows[0].projected_mops - 1e3 / 80.0).abs() < 1e-9);
        assert!(rows[0].line_bound);
        let rows = project_reservation(ReservationKind::Unlinked, 50.0, 40.0, 2);
        assert!((rows[0].projected_mops - 1e3 / 50.0).abs() < 1e-9);
        assert!(!rows[0].line_bound);
    }

    fn one_thread_mix(design: Design, records_per_sec: f64) -> MixResult {
        MixResult {
            case: MixCase {
                design,
                sync_method: SyncMethod::None,
                threads: 1,
            },
            setup: Default::default(),
            figures: figures(records_per_sec, 0.0),
        }
    }

    #[test]
    fn the_projection_is_bounded_by_cores_or_by_the_shared_line() {
        let rows = project_mix(&[one_thread_mix(Design::ALL[0], 1e6)], 50.0, 2);
        assert_eq!(rows.len(), machine_classes(2).len());
        // 2 cores x 1 M/s = 2 M/s < 1 / (2 x 50 ns) = 10 M/s.
        assert_eq!(rows[0].projected_records_per_sec, 2e6);
        assert!(!rows[0].serial_bound);
        // 480 cores: 1 / (2 x 200 ns) = 2.5 M/s.
        let last = rows.last().unwrap();
        assert!((last.projected_records_per_sec - 2.5e6).abs() < 1.0);
        assert!(last.serial_bound);
    }

    #[test]
    fn both_projections_use_the_same_c_g() {
        let mix: Vec<MixResult> = Design::ALL
            .iter()
            .map(|&d| one_thread_mix(d, 1e6))
            .collect();
        let rows = project_mix(&mix, 50.0, 2);
        for r in ReservationKind::ALL {
            let summary = rows.iter().find(|p| p.design == r).unwrap();
            let reserve = &project_reservation(r, 10.0, 50.0, 2)[0];
            assert_eq!(
                summary.global_line_transfers, reserve.global_line_transfers,
                "{r}"
            );
        }
        // The prev-link designs' neighbour lines are not the global one:
        // on 480 vCPUs they reach 1 / (1 x 200 ns) = 5 M/s, the spinlock
        // half of that.
        let ceiling = |r| {
            rows.iter()
                .rfind(|p| p.design == r)
                .unwrap()
                .projected_records_per_sec
        };
        assert!((ceiling(ReservationKind::PrevLinkTable) - 5e6).abs() < 1.0);
        assert!((ceiling(ReservationKind::PrevLinkInBuffer) - 5e6).abs() < 1.0);
        assert!((ceiling(ReservationKind::Spinlock) - 2.5e6).abs() < 1.0);
    }

    #[test]
    fn the_measuring_machine_row_names_and_uses_its_cpu_count() {
        for cores in [2, 16] {
            let label = format!("this machine ({cores} CPUs, measured)");
            let reserve = &project_reservation(ReservationKind::Spinlock, 30.0, 40.0, cores)[0];
            assert_eq!(reserve.machine, label);
            assert_eq!(reserve.cores, cores);
            let mix = &project_mix(&[one_thread_mix(Design::ALL[0], 1e6)], 50.0, cores)[0];
            assert_eq!(mix.machine, label);
            // Bounded by cores x 1 M/s below the shared line's 10 M/s.
            let by_cores = cores as f64 * 1e6;
            assert_eq!(mix.projected_records_per_sec, by_cores.min(10e6));
        }
        assert!(this_machine_cores() >= 1);
    }
}
