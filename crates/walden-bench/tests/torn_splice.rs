//! Tom Lane's torn-write case (seed 001): sectors of a segment file's
//! previous contents spliced in right after a record boundary, at least
//! 100,000 splices per format and scenario.
//!
//! Raw, formats whose link field names the record's place (the previous
//! record in `Postgres15`, the record itself in `SelfLsn`) accept no stale
//! record from a recycled segment, and the experiment does see acceptances
//! where a format cannot tell (same LSN; `CompactWalId`'s wrapped ids).
//! Under the engine's own restart and recycling rules no format accepts
//! any stale record in any scenario.

use walden::WalFormat;
use walden_bench::splice::{run, Scenario, SpliceResult, SpliceSettings};

/// Splices each count must reach.
const MIN_SPLICES: u64 = 100_000;

/// Runs `scenario` for every format: 6 segments recycled into each other,
/// 36 segments one to one in the other scenarios (the bench's defaults).
fn splice_all(scenario: Scenario) -> Vec<SpliceResult> {
    let segments = match scenario {
        Scenario::Recycled => 6,
        Scenario::WrappedIds | Scenario::SameLsn => 36,
    };
    WalFormat::ALL
        .into_iter()
        .map(|format| {
            let dir = tempfile::tempdir().unwrap();
            let settings = SpliceSettings {
                segments,
                max_sectors: 32,
                seed: 0x5EED_0001,
            };
            let r = run(format, scenario, settings, dir.path(), |_| {}).unwrap();
            eprintln!("{r:?}");
            assert!(r.splices >= MIN_SPLICES, "{r:?}");
            assert!(r.engine_splices >= MIN_SPLICES, "{r:?}");
            // The dangerous case does occur: old records starting at the tear.
            assert!(r.stale_starts > r.splices / 50, "{r:?}");
            assert_eq!(r.engine_accepted, 0, "under the engine's rules: {r:?}");
            r
        })
        .collect()
}

#[test]
fn formats_with_a_positional_link_accept_no_stale_record_from_a_recycled_segment() {
    for r in splice_all(Scenario::Recycled) {
        if r.format != WalFormat::CompactWalId {
            assert_eq!(r.accepted, 0, "{r:?}");
        }
    }
}

/// Raw, `CompactWalId` accepts a record of a segment 65,536 segments away
/// (the same 16-bit id); the engine never recycles one into the other.
#[test]
fn wrapped_ids_fool_only_the_compact_format_and_the_engine_never_recycles_them() {
    for r in splice_all(Scenario::WrappedIds) {
        if r.format == WalFormat::CompactWalId {
            assert!(r.accepted > 0, "{r:?}");
        } else {
            assert_eq!(r.accepted, 0, "{r:?}");
        }
    }
}

/// The experiment can see an acceptance: a stale record at the very LSN it
/// was written at carries a valid self-LSN, and in `Postgres15` its
/// `xl_prev` matches whenever its predecessor started where the new one
/// does. After a real crash and recovery the engine writes no record where
/// the crashed incarnation's may lie, so none is accepted.
#[test]
fn a_stale_record_at_its_own_lsn_is_accepted_raw_and_never_after_recovery() {
    for r in splice_all(Scenario::SameLsn) {
        assert!(r.accepted > 0, "{r:?}");
        assert!(r.accepted <= r.stale_starts, "{r:?}");
    }
}
