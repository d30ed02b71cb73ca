//! Results for the unit tests of the summary and the projection.

use crate::fresh_wal::WalFigures;
use crate::peers::{PeerCase, PeerResult, System, Workload};

/// A peer result of `rate` operations per second.
pub fn peer(system: System, workload: Workload, threads: usize, rate: f64) -> PeerResult {
    PeerResult {
        case: PeerCase {
            system,
            workload,
            threads,
        },
        ops: rate as u64,
        seconds: 1.0,
        ops_per_sec: rate,
        payload_mb_per_sec: rate * 100.0 / 1e6,
        p50_ns: None,
        p99_ns: None,
    }
}

/// Figures of one second at these rates.
pub fn figures(ops_per_sec: f64, wal_bytes_per_sec: f64) -> WalFigures {
    WalFigures {
        ops: ops_per_sec as u64,
        seconds: 1.0,
        ops_per_sec,
        records_per_sec: ops_per_sec,
        wal_bytes_per_sec,
        syncs: 0,
        syncs_per_op: 0.0,
        p50_ns: None,
        p99_ns: None,
        slice_min_ops_per_sec: ops_per_sec,
        slice_max_ops_per_sec: ops_per_sec,
        slices_cut_short: 0,
        steady_segments_created: 0,
    }
}
