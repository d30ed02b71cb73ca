//! The four recovery modes (`Config::recovery_mode`) over the corruption
//! recipes: a torn last record, a bad CRC in a batch in the middle, a zeroed
//! middle page, a truncated and a missing middle segment, and a log without
//! damage. For every format, what each mode keeps (or the error it refuses
//! with) is computed from the records read back before the damage and from
//! where the damage is; then the log takes a new record, is closed, and
//! reopened in the default mode reads back exactly what was kept and the new
//! record, and pg_waldump agrees on a `postgres15` log.

use std::fs::OpenOptions;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use crate::support::wal::{pg_waldump_agrees, read_all, read_from};
use walden::internals::PAGE_SIZE;
use walden::message::BatchMarker;
use walden::rmgr::{
    RM_XLOG_ID, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN, XLOG_NOOP,
    XLOG_OVERWRITE_CONTRECORD, XLOG_SWITCH,
};
use walden::{
    Batch, Config, Error, Lsn, Record, RecoveryMode, RecoveryRefused, RecoveryReport,
    ReservationKind, SegmentError, SegmentSize, SyncMethod, Wal, WalFormat, WalRecord,
};

const SEG: u64 = 1 << 20;
/// The segment the middle recipes damage (the log holds segments 1 to 5).
const DAMAGED: u64 = 3;
const PLAIN: u8 = 129;
const IN_BATCH: u8 = 130;
const AFTER: &[u8] = b"written after recovery";

fn seg() -> SegmentSize {
    SegmentSize::new(SEG).unwrap()
}

fn config(format: WalFormat, mode: RecoveryMode) -> Config {
    Config {
        format,
        reservation: ReservationKind::default_for(format),
        segment_size: SEG,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        recovery_mode: mode,
        ..Config::default()
    }
}

/// Writes about four and a half segments of a plain record then a batch of
/// three, over and over, ending with a plain record; every record is
/// flushed, then the process "crashes" (the `Wal` is dropped without
/// `close`). Returns the records as read back, from the first.
fn write_log(dir: &Path, format: WalFormat) -> Vec<WalRecord> {
    let wal = Wal::create(dir, config(format, RecoveryMode::default())).unwrap();
    let size = |n: u32| 600 + (n as usize * 397) % 1400;
    let mut n = 0u32;
    let mut end = Lsn(0);
    while end < Lsn(5 * SEG + SEG / 2) {
        wal.insert(&Record::new(PLAIN, 0, vec![n as u8; size(n)]))
            .unwrap();
        n += 1;
        let batch: Batch = (0..3u32)
            .map(|k| Record::new(IN_BATCH, 0, vec![(n + k) as u8; size(n + k)]))
            .collect();
        end = wal.insert_batch(&batch).unwrap().end;
        n += 3;
    }
    let last = wal
        .insert_span(&Record::new(PLAIN, 0, vec![1; 100]))
        .unwrap();
    wal.flush(last.end).unwrap();
    drop(wal);
    let (records, _) = read_all(dir);
    assert_eq!(
        records.last().map(|r| r.lsn),
        Some(last.start),
        "read back whole"
    );
    records
}

fn segment_path(dir: &Path, segno: u64) -> PathBuf {
    dir.join(seg().file_name(1, segno))
}

fn write_at(dir: &Path, lsn: Lsn, bytes: &[u8]) {
    let file = OpenOptions::new()
        .write(true)
        .open(segment_path(dir, seg().segno(lsn)))
        .unwrap();
    file.write_all_at(bytes, seg().offset(lsn)).unwrap();
}

/// Flips the last byte of `rec`, which fails its CRC.
fn flip_last_byte(dir: &Path, rec: &WalRecord) {
    let lsn = Lsn(rec.end.0 - 1);
    let file = OpenOptions::new()
        .read(true)
        .open(segment_path(dir, seg().segno(lsn)))
        .unwrap();
    let mut byte = [0u8];
    file.read_exact_at(&mut byte, seg().offset(lsn)).unwrap();
    write_at(dir, lsn, &[byte[0] ^ 0xFF]);
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Recipe {
    /// Nothing damaged: the log ends where the crash left it.
    None,
    /// The last record's last byte flipped.
    TornTail,
    /// The last byte of the second record of a batch in segment 3 flipped.
    MiddleCrc,
    /// The eleventh page of segment 3 zeroed.
    ZeroedPage,
    /// Segment 3 cut to half its size.
    TruncatedSegment,
    /// Segment 3 removed.
    MissingSegment,
}

const RECIPES: [Recipe; 6] = [
    Recipe::None,
    Recipe::TornTail,
    Recipe::MiddleCrc,
    Recipe::ZeroedPage,
    Recipe::TruncatedSegment,
    Recipe::MissingSegment,
];

/// Where a recipe damaged the log.
struct Damage {
    /// The index of the first record that no longer reads (`None`: none).
    first_bad: Option<usize>,
    /// Bytes that are all gone, if any: a zeroed page, a missing segment.
    gone: Option<std::ops::Range<Lsn>>,
}

impl Recipe {
    fn apply(self, dir: &Path, records: &[WalRecord]) -> Damage {
        let seg = seg();
        let first_ending_after = |at: Lsn| records.iter().position(|r| r.end > at);
        let start = seg.segment_start(DAMAGED);
        match self {
            Recipe::None => Damage {
                first_bad: None,
                gone: None,
            },
            Recipe::TornTail => {
                let last = records.len() - 1;
                flip_last_byte(dir, &records[last]);
                Damage {
                    first_bad: Some(last),
                    gone: None,
                }
            }
            Recipe::MiddleCrc => {
                let marker = (0..records.len())
                    .find(|&i| seg.segno(records[i].lsn) == DAMAGED && is_marker(&records[i]))
                    .unwrap();
                let bad = marker + 2;
                flip_last_byte(dir, &records[bad]);
                Damage {
                    first_bad: Some(bad),
                    gone: None,
                }
            }
            Recipe::ZeroedPage => {
                let page = Lsn(start.0 + 10 * PAGE_SIZE);
                write_at(dir, page, &vec![0u8; PAGE_SIZE as usize]);
                Damage {
                    first_bad: first_ending_after(page),
                    gone: Some(page..Lsn(page.0 + PAGE_SIZE)),
                }
            }
            Recipe::TruncatedSegment => {
                let file = OpenOptions::new()
                    .write(true)
                    .open(segment_path(dir, DAMAGED))
                    .unwrap();
                file.set_len(SEG / 2).unwrap();
                Damage {
                    first_bad: first_ending_after(Lsn(start.0 + SEG / 2)),
                    gone: None,
                }
            }
            Recipe::MissingSegment => {
                std::fs::remove_file(segment_path(dir, DAMAGED)).unwrap();
                Damage {
                    first_bad: first_ending_after(start),
                    gone: Some(start..seg.segment_start(DAMAGED + 1)),
                }
            }
        }
    }

    /// Damage that recovery refuses with a `SegmentError` in `mode`: a
    /// segment of the wrong size in every mode but skipping; a segment
    /// missing before WAL where the mode does not refuse it first.
    fn is_structural(self, mode: RecoveryMode) -> bool {
        match self {
            Recipe::TruncatedSegment => mode != RecoveryMode::SkipAnyCorruptedRecords,
            Recipe::MissingSegment => mode == RecoveryMode::PointInTimeRecovery,
            _ => false,
        }
    }
}

fn is_marker(rec: &WalRecord) -> bool {
    (rec.header.rmid, rec.header.info) == (RM_XLOG_ID, XLOG_NOOP)
        && rec
            .parse_body()
            .ok()
            .and_then(|b| BatchMarker::decode(b.main_data))
            .is_some()
}

/// The index of the marker of the batch record `i` belongs to, if any.
fn batch_of(records: &[WalRecord], i: usize) -> Option<usize> {
    (i.saturating_sub(3)..=i).find(|&m| {
        is_marker(&records[m])
            && records[m]
                .parse_body()
                .ok()
                .and_then(|b| BatchMarker::decode(b.main_data))
                .is_some_and(|b| m + b.records as usize >= i)
    })
}

/// A record no batch begun before it can hold.
fn is_anchor(rec: &WalRecord) -> bool {
    is_marker(rec)
        || rec.header.rmid == RM_XLOG_ID
            && [
                XLOG_CHECKPOINT_SHUTDOWN,
                XLOG_CHECKPOINT_ONLINE,
                XLOG_SWITCH,
                XLOG_OVERWRITE_CONTRECORD,
            ]
            .contains(&(rec.header.info & 0xF0))
}

/// What a mode that stops at the damage keeps: the records before it, less
/// a batch the damage cut.
fn prefix_kept(records: &[WalRecord], bad: usize) -> usize {
    batch_of(records, bad).unwrap_or(bad)
}

/// What the modes that refuse find after the damage: the first record
/// starting on a later page than the bad record, outside the bytes gone.
fn first_valid_after(
    records: &[WalRecord],
    bad: usize,
    gone: &Option<std::ops::Range<Lsn>>,
) -> Lsn {
    let page = records[bad].lsn.page_start();
    records[bad + 1..]
        .iter()
        .map(|r| r.lsn)
        .find(|l| l.page_start() > page && !gone.as_ref().is_some_and(|g| g.contains(l)))
        .unwrap()
}

/// Opens the damaged log in `mode`; on success, appends a record, closes,
/// reopens in the default mode and checks that the records from `keep_from`
/// on are `kept` then the new record (and Walden's own), with pg_waldump
/// agreeing on a postgres15 log.
fn open_write_reread(
    dir: &Path,
    format: WalFormat,
    mode: RecoveryMode,
) -> Result<RecoveryReport, Error> {
    let (wal, report) = Wal::open(dir, config(format, mode))?;
    let after = wal.insert_span(&Record::new(PLAIN, 0, AFTER)).unwrap();
    wal.close().unwrap();
    let (wal, again) = Wal::open(dir, config(format, RecoveryMode::default())).unwrap();
    assert!(again.skipped.is_empty() && again.dropped_batch.is_none());
    drop(wal);
    let (read, _) = read_from(dir, Some(again.redo));
    let user_after: Vec<_> = read
        .iter()
        .filter(|r| r.lsn >= after.start && r.header.rmid == PLAIN)
        .collect();
    assert_eq!(user_after.len(), 1, "{mode}: the new record, once");
    assert_eq!(user_after[0].lsn, after.start);
    assert_eq!(user_after[0].decode_body().unwrap().main_data, AFTER);
    if format == WalFormat::Postgres15 {
        pg_waldump_agrees(dir, seg(), again.redo);
    }
    Ok(report)
}

/// Checks what `mode` did with the log `records` after `recipe`, in `format`.
fn check(format: WalFormat, mode: RecoveryMode, recipe: Recipe) {
    let dir = tempfile::tempdir().unwrap();
    let records = write_log(dir.path(), format);
    let damage = recipe.apply(dir.path(), &records);
    let what = format!("{format} {mode} {recipe:?}");
    let result = open_write_reread(dir.path(), format, mode);
    let skipping = mode == RecoveryMode::SkipAnyCorruptedRecords;
    if recipe.is_structural(mode) {
        let err = result.expect_err(&what);
        match recipe {
            Recipe::TruncatedSegment => {
                assert!(
                    matches!(err, Error::Segment(SegmentError::WrongSize { .. })),
                    "{what}: {err}"
                )
            }
            _ => assert!(
                matches!(err, Error::Segment(SegmentError::Hole { .. })),
                "{what}: {err}"
            ),
        }
        return;
    }
    let Some(bad) = damage.first_bad else {
        let report = result.expect(&what);
        assert_eq!(report.records, records.len() as u64, "{what}");
        assert_eq!(report.last_record, records.last().map(|r| r.lsn), "{what}");
        return;
    };
    let tail = recipe == Recipe::TornTail;
    let refusing = matches!(
        mode,
        RecoveryMode::TolerateCorruptedTailRecords | RecoveryMode::AbsoluteConsistency
    );
    if refusing && !tail {
        let err = result.expect_err(&what);
        let Error::RecoveryRefused(RecoveryRefused::ValidWalAfter {
            mode: m, at, valid, ..
        }) = err
        else {
            panic!("{what}: {err}");
        };
        assert_eq!(
            (m, at, valid),
            (
                mode,
                records[bad].lsn,
                first_valid_after(&records, bad, &damage.gone)
            ),
            "{what}"
        );
        return;
    }
    if mode == RecoveryMode::AbsoluteConsistency {
        let err = result.expect_err(&what);
        let Error::RecoveryRefused(RecoveryRefused::TornTail { at, .. }) = err else {
            panic!("{what}: {err}");
        };
        assert_eq!(at, records[bad].lsn, "{what}");
        return;
    }
    let report = result.expect(&what);
    let cut = prefix_kept(&records, bad);
    // Whether reading stopped at the damage rather than skipping it.
    let stopped = !skipping || tail;
    assert_eq!(
        report.dropped_batch,
        (stopped && cut < bad).then(|| records[cut].lsn),
        "{what}"
    );
    let (before, _) = read_from(dir.path(), Some(records[0].lsn));
    assert_eq!(
        before[..cut],
        records[..cut],
        "{what}: kept before the damage"
    );
    if stopped {
        // Stopped at the damage: the records before it, less a cut batch.
        assert!(report.skipped.is_empty(), "{what}");
        assert_eq!(report.records, cut as u64, "{what}");
        assert_eq!(report.last_record, Some(records[cut - 1].lsn), "{what}");
        return;
    }
    // Skipped: resumed at the first record in a later segment that no
    // batch begun before it can hold.
    let first_later = (0..records.len())
        .find(|&i| seg().segno(records[i].lsn) > DAMAGED)
        .unwrap();
    let anchor = (first_later..records.len())
        .find(|&i| is_anchor(&records[i]))
        .unwrap();
    assert_eq!(report.skipped.len(), 1, "{what}");
    let skip = &report.skipped[0];
    assert_eq!(
        (skip.from, skip.resumed, skip.records_dropped),
        (
            records[cut].lsn,
            Some(records[anchor].lsn),
            (bad - cut + anchor - first_later) as u64
        ),
        "{what}"
    );
    assert_eq!(
        report.records,
        (cut + records.len() - anchor) as u64,
        "{what}"
    );
    assert_eq!(report.last_record, records.last().map(|r| r.lsn), "{what}");
    let (resumed, _) = read_from(dir.path(), Some(records[anchor].lsn));
    assert_eq!(
        resumed[..records.len() - anchor],
        records[anchor..],
        "{what}: kept after the damage"
    );
}

fn every_format_and_recipe(mode: RecoveryMode) {
    for format in WalFormat::ALL {
        for recipe in RECIPES {
            check(format, mode, recipe);
        }
    }
}

#[test]
fn point_in_time_recovery_stops_at_the_first_invalid_record() {
    every_format_and_recipe(RecoveryMode::PointInTimeRecovery);
}

#[test]
fn tolerate_corrupted_tail_records_refuses_damage_before_valid_wal() {
    every_format_and_recipe(RecoveryMode::TolerateCorruptedTailRecords);
}

#[test]
fn absolute_consistency_refuses_any_invalid_wal() {
    every_format_and_recipe(RecoveryMode::AbsoluteConsistency);
}

#[test]
fn skip_any_corrupted_records_keeps_what_follows_the_damage() {
    every_format_and_recipe(RecoveryMode::SkipAnyCorruptedRecords);
}

#[test]
fn the_default_is_point_in_time_recovery() {
    assert_eq!(
        Config::default().recovery_mode,
        RecoveryMode::PointInTimeRecovery
    );
    for mode in RecoveryMode::ALL {
        assert_eq!(mode.to_string().parse::<RecoveryMode>(), Ok(mode));
    }
}

/// After a crash, point-in-time recovery ends the log at a damaged record
/// of segment 3 with a switch record, and the log goes on in segment 4.
/// When that switch record is torn in turn, skipping resumes in segment 4,
/// never among the records the crashed incarnation wrote after it in
/// segment 3 (which the switch's flush has overwritten with zero pages).
#[test]
fn skipping_a_torn_switch_record_resumes_in_the_next_segment() {
    for format in WalFormat::ALL {
        let dir = tempfile::tempdir().unwrap();
        let records = write_log(dir.path(), format);
        let bad = (0..records.len())
            .find(|&i| seg().segno(records[i].lsn) == DAMAGED && records[i].header.rmid == PLAIN)
            .unwrap();
        flip_last_byte(dir.path(), &records[bad]);
        let (wal, first) = Wal::open(dir.path(), config(format, RecoveryMode::default())).unwrap();
        let switch_at = first.end;
        assert_eq!(switch_at, records[bad].lsn, "{format}");
        let new: Batch = (0..3u8)
            .map(|k| Record::new(IN_BATCH, 0, vec![k; 1500]))
            .collect();
        let mut end = Lsn(0);
        while end < Lsn(seg().segment_start(DAMAGED + 2).0 + SEG / 4) {
            end = wal.insert_batch(&new).unwrap().end;
        }
        wal.flush(end).unwrap();
        drop(wal);

        let (read, _) = read_from(dir.path(), Some(records[0].lsn));
        let switch = read.iter().find(|r| r.lsn == switch_at).unwrap();
        assert_eq!(
            (switch.header.rmid, switch.header.info),
            (RM_XLOG_ID, XLOG_SWITCH)
        );
        // The crashed incarnation's records after it (the first starting
        // on a later page than the switch) are gone.
        let stale = records[bad..]
            .iter()
            .find(|r| r.lsn.page_start() > switch_at.page_start())
            .unwrap();
        assert_eq!(seg().segno(stale.lsn), DAMAGED);
        let (old, _) = read_from(dir.path(), Some(stale.lsn));
        assert!(
            old.iter().all(|r| seg().segno(r.lsn) > DAMAGED),
            "{format}: a stale record reads"
        );

        flip_last_byte(dir.path(), switch);
        let (wal, report) = Wal::open(
            dir.path(),
            config(format, RecoveryMode::SkipAnyCorruptedRecords),
        )
        .unwrap();
        drop(wal);
        let skip = &report.skipped[..];
        assert_eq!(skip.len(), 1, "{format}");
        assert_eq!(skip[0].from, switch_at, "{format}");
        let resumed = skip[0].resumed.unwrap();
        assert!(
            seg().segno(resumed) > DAMAGED,
            "{format}: resumed at {resumed}"
        );
        let (kept, _) = read_from(dir.path(), Some(resumed));
        assert!(
            kept.iter().all(|r| seg().segno(r.lsn) > DAMAGED),
            "{format}: a record of segment {DAMAGED} kept after the skip"
        );
    }
}

/// Skipping resumes at a batch marker whose batch the end of WAL then cuts:
/// the batch is dropped whole, the log goes on at its marker, and a reopen
/// in the default mode starts there.
#[test]
fn a_batch_skipping_resumed_at_and_the_end_of_wal_cut_is_dropped() {
    for format in WalFormat::ALL {
        let dir = tempfile::tempdir().unwrap();
        let records = write_log(dir.path(), format);
        let seg = seg();
        let first_later = (0..records.len())
            .find(|&i| seg.segno(records[i].lsn) > DAMAGED)
            .unwrap();
        let anchor = (first_later..records.len())
            .find(|&i| is_marker(&records[i]))
            .unwrap();
        // The end of WAL falls inside the anchor's batch, after its first
        // record; damage in segment 3 before it.
        let cut_at = records[anchor + 2].lsn;
        write_at(
            dir.path(),
            cut_at,
            &vec![0u8; (seg.segment_start(seg.segno(cut_at) + 1).0 - cut_at.0) as usize],
        );
        for segno in seg.segno(cut_at) + 1..=seg.segno(records.last().unwrap().lsn) {
            std::fs::remove_file(segment_path(dir.path(), segno)).unwrap();
        }
        let damage = Recipe::MiddleCrc.apply(dir.path(), &records);
        let bad = damage.first_bad.unwrap();
        let report =
            open_write_reread(dir.path(), format, RecoveryMode::SkipAnyCorruptedRecords).unwrap();
        let cut = prefix_kept(&records, bad);
        assert_eq!(report.skipped.len(), 1, "{format}");
        assert_eq!(
            (report.skipped[0].from, report.skipped[0].resumed),
            (records[cut].lsn, Some(records[anchor].lsn)),
            "{format}"
        );
        assert_eq!(report.dropped_batch, Some(records[anchor].lsn), "{format}");
        assert_eq!(report.records, cut as u64, "{format}");
        assert_eq!(report.end, records[anchor].lsn, "{format}");
    }
}

/// A log closed cleanly whose WAL is damaged afterwards (a bad CRC in
/// segment 3, with segments 4 and 5 written): point-in-time recovery ends
/// the log at the damage, and new records go on in a segment no earlier
/// incarnation wrote, as after an unclean shutdown; the segments past the
/// damage, which hold the history before it, are gone, so no later
/// recovery or skip can read one of their records as part of the new
/// history.
#[test]
fn damage_in_a_cleanly_closed_log_starts_a_fresh_segment() {
    for format in WalFormat::ALL {
        let dir = tempfile::tempdir().unwrap();
        let records = write_log(dir.path(), format);
        let (wal, _) = Wal::open(dir.path(), config(format, RecoveryMode::default())).unwrap();
        wal.close().unwrap();
        let bad = records
            .iter()
            .position(|r| r.header.rmid == PLAIN && seg().segno(r.lsn) == DAMAGED)
            .unwrap();
        flip_last_byte(dir.path(), &records[bad]);
        let (wal, report) = Wal::open(dir.path(), config(format, RecoveryMode::default())).unwrap();
        assert!(report.clean_shutdown, "{format}");
        assert_eq!(report.last_record, Some(records[bad - 1].lsn), "{format}");
        let after = wal.insert_span(&Record::new(PLAIN, 0, AFTER)).unwrap();
        assert!(
            seg().segno(after.start) > DAMAGED,
            "{format}: the new record at {} is in the damaged segment",
            after.start
        );
        wal.close().unwrap();
        for segno in DAMAGED + 1..seg().segno(after.start) {
            assert!(
                !segment_path(dir.path(), segno).exists(),
                "{format}: segment {segno} of the history past the damage is still there"
            );
        }
        let (read, _) = read_from(dir.path(), Some(records[0].lsn));
        let user: Vec<Lsn> = read
            .iter()
            .filter(|r| r.header.rmid == PLAIN || r.header.rmid == IN_BATCH)
            .map(|r| r.lsn)
            .collect();
        let want: Vec<Lsn> = records[..bad]
            .iter()
            .filter(|r| r.header.rmid == PLAIN || r.header.rmid == IN_BATCH)
            .map(|r| r.lsn)
            .chain([after.start])
            .collect();
        assert_eq!(
            user, want,
            "{format}: the history before the damage, then the new record"
        );
    }
}
