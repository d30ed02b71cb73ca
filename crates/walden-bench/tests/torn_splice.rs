//! Tom Lane's torn-write case (seed 001): sectors of a recycled segment's
//! previous contents spliced in right after a record boundary. Formats
//! whose link field names the record's place (the previous record in
//! `Postgres15`, the record itself in `SelfLsn`) accept no stale record.

use walden::WalFormat;
use walden_bench::splice::{run, Scenario, SpliceResult, SpliceSettings};

fn splice(format: WalFormat, scenario: Scenario, segments: u64) -> SpliceResult {
    let dir = tempfile::tempdir().unwrap();
    let settings = SpliceSettings {
        segments,
        max_sectors: 32,
        seed: 0x5EED_0001,
    };
    run(format, scenario, settings, dir.path(), |_| {}).unwrap()
}

#[test]
fn formats_with_a_positional_link_accept_no_stale_record_from_a_recycled_segment() {
    for format in WalFormat::ALL {
        let r = splice(format, Scenario::Recycled, 6);
        eprintln!("{r:?}");
        assert!(r.splices >= 100_000, "{r:?}");
        // The dangerous case does occur: old records starting at the tear.
        assert!(r.stale_starts > r.splices / 50, "{r:?}");
        if format != WalFormat::CompactWalId {
            assert_eq!(r.accepted, 0, "{r:?}");
        }
    }
}

/// The experiment can see an acceptance: a stale record at the very LSN it
/// was written at carries a valid self-LSN (which is why recovery of a
/// `SelfLsn` log never writes new records where an earlier incarnation's
/// may lie), while `xl_prev` still names a different predecessor.
#[test]
fn a_stale_record_at_its_own_lsn_passes_the_self_lsn_check() {
    let r = splice(WalFormat::SelfLsn, Scenario::SameLsn, 1);
    assert!(r.accepted > 0, "{r:?}");
    assert!(r.accepted <= r.stale_starts, "{r:?}");
    let r = splice(WalFormat::Postgres15, Scenario::SameLsn, 1);
    assert!(r.accepted * 100 <= r.stale_starts, "{r:?}");
}
