//! [`RecoveryMode`]: what [`crate::Wal::open`] does with WAL it cannot read,
//! by name, and [`RecoveryRefused`], why a mode refused to open a log.
//!
//! RocksDB: `WALRecoveryMode` (`kTolerateCorruptedTailRecords`,
//! `kAbsoluteConsistency`, `kPointInTimeRecovery`, `kSkipAnyCorruptedRecords`).
//! PostgreSQL has one behaviour, `PointInTimeRecovery`'s. The logic is in
//! `wal::recovery_mode`.

use crate::lsn::Lsn;
use crate::named_enum::named_enum;

/// What recovery does where the WAL stops being valid. In every mode a
/// batch is kept whole or dropped whole, and no record of a crashed
/// incarnation past the end is ever taken back (docs/reliability.md,
/// "Recovery modes", says exactly what each mode keeps).
///
/// Where the WAL "stops" is where a reader from the redo point stops: the
/// first record that is missing, torn, fails its CRC, prev-link or page
/// checks. "Valid WAL after it" is a record that reads back whole (every
/// check but the link to the record before it) starting on a later page of
/// the log's segments.
///
/// ```
/// use std::os::unix::fs::FileExt;
/// use walden::{Config, Error, Record, RecoveryMode, RecoveryRefused, SegmentSize, Wal};
/// let dir = tempfile::tempdir().unwrap();
/// let config = |recovery_mode| Config { segment_size: 1 << 20, recovery_mode, ..Config::default() };
/// let wal = Wal::create(dir.path(), config(RecoveryMode::default())).unwrap();
/// let kept = wal.insert_span(&Record::bytes(&b"kept"[..])).unwrap().start;
/// let torn = wal.insert_span(&Record::bytes(&b"torn by the crash"[..])).unwrap();
/// wal.flush(torn.end).unwrap();
/// drop(wal); // a crash: no clean close
/// // The crash tore the last record: a byte after its 24-byte header is wrong.
/// let seg = SegmentSize::new(1 << 20).unwrap();
/// let file = std::fs::OpenOptions::new().write(true)
///     .open(dir.path().join(seg.file_name(1, seg.segno(torn.start)))).unwrap();
/// file.write_all_at(b"?", seg.offset(torn.start) + 24).unwrap();
///
/// // Absolute consistency refuses even a torn tail, naming it:
/// match Wal::open(dir.path(), config(RecoveryMode::AbsoluteConsistency)) {
///     Err(Error::RecoveryRefused(RecoveryRefused::TornTail { at, .. })) => assert_eq!(at, torn.start),
///     other => panic!("{:?}", other.map(|(_, report)| report)),
/// }
/// // Tolerating a corrupted tail keeps what is before it (so does the default):
/// let (wal, report) =
///     Wal::open(dir.path(), config(RecoveryMode::TolerateCorruptedTailRecords)).unwrap();
/// assert_eq!(report.last_record, Some(kept));
/// assert!(report.skipped.is_empty());
/// # drop(wal);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum RecoveryMode {
    /// Tolerates an invalid tail (an incomplete or damaged last record);
    /// invalid WAL followed by valid WAL is refused
    /// ([`RecoveryRefused::ValidWalAfter`]). RocksDB:
    /// `kTolerateCorruptedTailRecords`.
    TolerateCorruptedTailRecords,
    /// Refuses any invalid WAL, a torn tail included
    /// ([`RecoveryRefused::TornTail`], [`RecoveryRefused::ValidWalAfter`],
    /// [`RecoveryRefused::IncompleteBatch`]); only a clean end (nothing
    /// written after the last record) opens. RocksDB: `kAbsoluteConsistency`.
    AbsoluteConsistency,
    /// Stops at the first invalid record and keeps everything before it:
    /// PostgreSQL's recovery, and Walden's before the modes existed, exactly
    /// (a segment of the wrong size or a missing segment followed by WAL is
    /// still refused with [`crate::SegmentError`]). RocksDB:
    /// `kPointInTimeRecovery`.
    #[default]
    PointInTimeRecovery,
    /// Skips invalid WAL and keeps the valid records after it: reading
    /// resumes in the next segment that holds a valid record, at the first
    /// record no batch begun in the skipped WAL can hold (a batch marker or
    /// a record Walden writes itself: checkpoint, segment switch,
    /// overwrite-contrecord). [`crate::RecoveryReport::skipped`] lists
    /// what was skipped; afterwards the redo point is the last place
    /// reading resumed, so no later open meets the damage again. RocksDB:
    /// `kSkipAnyCorruptedRecords`.
    SkipAnyCorruptedRecords,
}

impl RecoveryMode {
    /// Every mode.
    pub const ALL: [RecoveryMode; 4] = [
        RecoveryMode::TolerateCorruptedTailRecords,
        RecoveryMode::AbsoluteConsistency,
        RecoveryMode::PointInTimeRecovery,
        RecoveryMode::SkipAnyCorruptedRecords,
    ];

    /// The mode's name, as `walden write --recovery-mode` takes it.
    pub const fn name(self) -> &'static str {
        match self {
            RecoveryMode::TolerateCorruptedTailRecords => "tolerate-corrupted-tail-records",
            RecoveryMode::AbsoluteConsistency => "absolute-consistency",
            RecoveryMode::PointInTimeRecovery => "point-in-time-recovery",
            RecoveryMode::SkipAnyCorruptedRecords => "skip-any-corrupted-records",
        }
    }
}

named_enum!(RecoveryMode, "recovery mode");

/// Why [`crate::Wal::open`] refused a log in the [`RecoveryMode`] it was
/// given. Nothing on disk was changed; the log opens in a more lenient
/// mode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RecoveryRefused {
    /// The WAL stops being valid at `at` and a valid record follows at
    /// `valid`: damage, not a torn tail.
    #[error("{mode}: WAL is invalid at {at} ({reason}) but a valid record follows at {valid}")]
    ValidWalAfter {
        /// The mode that refused.
        mode: RecoveryMode,
        /// The first invalid record's LSN (where the next record was due).
        at: Lsn,
        /// Why it is invalid (the end-of-WAL reason).
        reason: String,
        /// A valid record after it.
        valid: Lsn,
    },
    /// The WAL ends in bytes that are not a clean end: a torn or damaged
    /// last record.
    #[error("absolute-consistency: the WAL ends in a torn or damaged record at {at} ({reason})")]
    TornTail {
        /// Where the next record was due.
        at: Lsn,
        /// Why it is invalid.
        reason: String,
    },
    /// The WAL ends inside a batch, which the other modes drop.
    #[error("absolute-consistency: the WAL ends inside the batch whose marker is at {marker}")]
    IncompleteBatch {
        /// The batch marker's LSN.
        marker: Lsn,
    },
}
