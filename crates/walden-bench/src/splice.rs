//! The torn-write splice experiment (seed 001, Tom Lane's objection;
//! algorithms.md §9 item 17): how many stale records does each format
//! accept when a torn write leaves sectors of a segment file's previous
//! contents right after a record boundary?
//!
//! A WAL page (8 KiB) is larger than what storage writes atomically (a
//! 512-byte sector). After a crash a page can hold new sectors followed by
//! old ones. If an old record starts exactly where the old sectors begin,
//! right after the last new record, its CRC is fine: only the record's link
//! field can tell it is stale. For each [`Scenario`], two logs are written,
//! an old one and a new one whose segment files reuse the old files; then,
//! at every record boundary of the new log that falls on a sector boundary,
//! 1 to [`SpliceSettings::max_sectors`] sectors of the old file's bytes are
//! spliced in at the same offset, and the reader is asked for the record
//! after the last new one. A record returned there whose bytes are not the
//! new record's is a stale record accepted.
//!
//! Each scenario is counted twice: raw (the format's own property: any old
//! bytes under any new record) and under the engine's own rules, which
//! decide what old bytes can lie under a new record at all: recycling never
//! renames a segment to a name with its 16-bit id
//! ([`may_recycle`]), and after an unclean shutdown new records start in a
//! fresh segment (`after_recovery`: a crash and a real recovery).

mod after_recovery;
pub mod suite;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

use serde::Serialize;
use walden::internals::may_recycle;
use walden::FsStorage;
use walden::{
    Config, Lsn, Record, ReservationKind, SegmentPos, SegmentSize, SyncMethod, Wal, WalFormat,
};
use walden::{ReadError, ReaderOptions, SegmentSource, SourceError, WalReader, WalRecord};

/// The unit storage writes atomically.
pub const SECTOR: u64 = 512;
/// Segment size of the logs (small segments: many files, many splices).
pub const SEGMENT_SIZE: u64 = 1 << 20;
/// Resource manager of the records written.
const RMID: u8 = 150;
/// Segment distance at which `CompactWalId`'s 16-bit segment ids repeat.
const WAL_ID_PERIOD: u64 = 1 << 16;
/// Segment number where the logs of the scenarios that choose one start.
const FIRST_SEGMENT: u64 = 2;

/// Where the old bytes come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum Scenario {
    /// One log: its first segments are recycled by a checkpoint into future
    /// segment numbers and written over (PostgreSQL's and Walden's
    /// recycling). Every new file is paired with every old segment's bytes:
    /// each pairing is a possible recycling history.
    Recycled,
    /// The old file's segment number and the new one are 65,536 apart, so
    /// their low 16 bits (`CompactWalId`'s id) are equal: recycling after
    /// 64 GiB (1 MiB segments) or 1 TiB (16 MiB) of WAL.
    WrappedIds,
    /// The old bytes were written at the same LSNs by an earlier
    /// incarnation of the log: what a crash leaves past the end recovery
    /// finds, if new records are written over it. Walden's recovery never
    /// does that for the formats without prev-links (it switches to a fresh
    /// segment); this row shows why it must.
    SameLsn,
}

impl Scenario {
    /// Every scenario, in the order tables list them.
    pub const ALL: [Scenario; 3] = [Scenario::Recycled, Scenario::WrappedIds, Scenario::SameLsn];

    /// A short name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Recycled => "recycled",
            Scenario::WrappedIds => "wrapped-ids",
            Scenario::SameLsn => "same-lsn",
        }
    }
}

/// How large an experiment is.
#[derive(Clone, Copy, Debug)]
pub struct SpliceSettings {
    /// Segments each log fills.
    pub segments: u64,
    /// Most sectors of old bytes in one splice (a torn write may span pages).
    pub max_sectors: u64,
    /// Seed of the record sizes.
    pub seed: u64,
}

/// What one format measured in one scenario.
#[derive(Clone, Debug, Serialize)]
pub struct SpliceResult {
    /// The format.
    #[serde(serialize_with = "crate::serde_display")]
    pub format: WalFormat,
    /// The scenario.
    pub scenario: Scenario,
    /// Splices tried (ones whose old bytes equal the new are not counted).
    pub splices: u64,
    /// Of those, the splices where an old record starts exactly at the
    /// boundary: Tom Lane's case, where only the link field can tell.
    pub stale_starts: u64,
    /// Stale records the reader accepted.
    pub accepted: u64,
    /// Splices tried under the engine's own restart and recycling rules.
    pub engine_splices: u64,
    /// Stale records the reader accepted under those rules.
    pub engine_accepted: u64,
}

/// Why the experiment could not run.
#[derive(Debug, thiserror::Error)]
pub enum SpliceError {
    /// Writing or reading a log failed.
    #[error(transparent)]
    Wal(#[from] walden::Error),
    /// Reading a log back failed other than at its end.
    #[error(transparent)]
    Read(#[from] ReadError),
    /// The record before a splice did not read back: the experiment is broken.
    #[error("the record at {at}, before a splice, did not read back: {detail}")]
    Broken {
        /// Its LSN.
        at: Lsn,
        /// What the reader returned instead.
        detail: String,
    },
    /// No record of the first segment can stand for the one a crash tore.
    #[error("no record starting on a sector boundary to tear in segment {0}")]
    NoTearPoint(u64),
    /// A temporary directory or a segment file could not be handled.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> SpliceError {
    let what = what.into();
    move |source| SpliceError::Io { what, source }
}

/// Segment files by number.
type Files = HashMap<u64, Arc<Vec<u8>>>;

/// A log's segment files and the records read from it.
struct Written {
    files: Files,
    records: Vec<WalRecord>,
}

/// The two logs of a scenario, and for each new segment the old segments
/// whose bytes may lie under it.
struct Experiment {
    old: Written,
    new: Written,
    pairs: BTreeMap<u64, Vec<u64>>,
}

/// Runs the experiment for `format` in `scenario`, raw and under the
/// engine's rules, with logs in temporary directories under `parent`;
/// `progress(n)` is called as splices are done.
pub fn run(
    format: WalFormat,
    scenario: Scenario,
    settings: SpliceSettings,
    parent: &Path,
    mut progress: impl FnMut(u64),
) -> Result<SpliceResult, SpliceError> {
    let raw = build(format, scenario, settings, parent)?;
    let (splices, stale_starts, accepted) = count(&raw, settings, false, &mut progress)?;
    let engine = match scenario {
        Scenario::SameLsn => after_recovery::build(format, settings, parent)?,
        Scenario::Recycled | Scenario::WrappedIds => raw,
    };
    let (engine_splices, _, engine_accepted) = count(&engine, settings, true, &mut progress)?;
    Ok(SpliceResult {
        format,
        scenario,
        splices,
        stale_starts,
        accepted,
        engine_splices,
        engine_accepted,
    })
}

/// Splices the old files of `exp` into its new ones at every sector-aligned
/// record boundary; returns the splices, the stale record starts among
/// them, and the stale records accepted. Under the engine's `recycling`
/// rule, a renamed file ([`may_recycle`]) holds its old bytes only if the
/// engine would have renamed it; otherwise the file was created afresh and
/// holds zeros.
fn count(
    exp: &Experiment,
    settings: SpliceSettings,
    recycling: bool,
    progress: &mut impl FnMut(u64),
) -> Result<(u64, u64, u64), SpliceError> {
    let seg = segment_size();
    let Experiment { old, new, pairs } = exp;
    let zeros = Arc::new(vec![0u8; SEGMENT_SIZE as usize]);
    let old_starts: HashSet<(u64, u64)> = old
        .records
        .iter()
        .map(|r| (seg.segno(r.lsn), seg.offset(r.lsn)))
        .collect();
    let (mut splices, mut stale_starts, mut accepted) = (0, 0, 0);
    for w in new.records.windows(2) {
        let (before, record) = (&w[0], &w[1]);
        let segno = seg.segno(record.lsn);
        let offset = seg.offset(record.lsn);
        if !offset.is_multiple_of(SECTOR) {
            continue;
        }
        for &old_segno in pairs.get(&segno).into_iter().flatten() {
            let old_file = if recycling && old_segno != segno && !may_recycle(old_segno, segno) {
                Some(&zeros)
            } else {
                old.files.get(&old_segno)
            };
            let (Some(old_file), Some(new_file)) = (old_file, new.files.get(&segno)) else {
                continue;
            };
            let room = (SEGMENT_SIZE - offset) / SECTOR;
            for sectors in 1..=settings.max_sectors.min(room) {
                let range = offset as usize..(offset + sectors * SECTOR) as usize;
                if old_file[range.clone()] == new_file[range.clone()] {
                    continue;
                }
                let source = SplicedSource {
                    seg,
                    files: new.files.clone(),
                    overlay: (segno, range.start, old_file[range].to_vec()),
                };
                splices += 1;
                if old_starts.contains(&(old_segno, offset)) {
                    stale_starts += 1;
                }
                if accepts_stale(source, before.lsn, record)? {
                    accepted += 1;
                }
            }
        }
        progress(splices);
    }
    Ok((splices, stale_starts, accepted))
}

/// True if reading from `before` over `source` returns, after it, a record
/// at `record`'s LSN that is not `record`.
fn accepts_stale(
    source: SplicedSource,
    before: Lsn,
    record: &WalRecord,
) -> Result<bool, SpliceError> {
    let options = ReaderOptions {
        start: Some(before),
        ..ReaderOptions::default()
    };
    let mut reader = WalReader::with_source(Box::new(source), options)?;
    // The splice starts after `before`, which must read as it did.
    match reader.next_record() {
        Ok(Some(r)) if r.lsn == before => {}
        Ok(other) => {
            return Err(SpliceError::Broken {
                at: before,
                detail: format!("read {:?}", other.map(|r| r.lsn)),
            })
        }
        Err(e) => {
            return Err(SpliceError::Broken {
                at: before,
                detail: e.to_string(),
            })
        }
    }
    Ok(match reader.next_record() {
        Ok(Some(r)) => r.lsn == record.lsn && (r.header != record.header || r.body != record.body),
        Ok(None) | Err(ReadError::EndOfWal { .. }) => false,
        Err(e) => return Err(e.into()),
    })
}

/// The configuration of every log of the experiment.
fn config(format: WalFormat, settings: SpliceSettings) -> Config {
    Config {
        format,
        reservation: ReservationKind::default_for(format),
        segment_size: SEGMENT_SIZE,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        recycle_segments: settings.segments as usize + 2,
        // No background preallocation: which files exist, and so what is
        // recycled where, follows the records alone (the same counts on
        // every run), and only the engine's own actions create segments.
        segments_ahead: 0,
        ..Config::default()
    }
}

/// A temporary directory under `parent`, named for `name`.
fn tempdir(parent: &Path, name: &str) -> Result<tempfile::TempDir, SpliceError> {
    tempfile::Builder::new()
        .prefix(&format!("walden-splice-{name}-"))
        .tempdir_in(parent)
        .map_err(io(format!(
            "creating a directory under {}",
            parent.display()
        )))
}

/// Writes the old and new logs of `scenario` and pairs each new segment
/// with the old segments whose bytes may lie under it.
fn build(
    format: WalFormat,
    scenario: Scenario,
    settings: SpliceSettings,
    parent: &Path,
) -> Result<Experiment, SpliceError> {
    let config = config(format, settings);
    let tempdir = |name: &str| tempdir(parent, name);
    match scenario {
        Scenario::Recycled => {
            let dir = tempdir("recycled")?;
            let wal = Wal::create(dir.path(), config)?;
            let mut sizes = Sizes::new(settings.seed);
            fill(&wal, &mut sizes, settings.segments)?;
            let old_records = read_all(dir.path())?;
            wal.checkpoint()?;
            // The recycled files, under their future names, still hold the
            // old bytes; the page address of their first page says whose.
            let seg = segment_size();
            let current = seg.segno(wal.insert_position());
            let recycled: Vec<(u64, Vec<u8>)> = read_files(dir.path(), seg)?
                .into_iter()
                .filter(|&(segno, _)| segno > current)
                .map(|(segno, bytes)| (segno, bytes.to_vec()))
                .collect();
            let mut old_files = Files::new();
            for (_, bytes) in &recycled {
                let page_addr = u64::from_le_bytes(bytes[8..16].try_into().unwrap_or_default());
                old_files.insert(page_addr / SEGMENT_SIZE, Arc::new(bytes.clone()));
            }
            let last = recycled
                .iter()
                .map(|&(segno, _)| segno)
                .max()
                .unwrap_or(current);
            while seg.segno(wal.insert_position()) <= last {
                insert_one(&wal, &mut sizes)?;
            }
            wal.close()?;
            let new = Written {
                files: read_files(dir.path(), seg)?,
                records: read_all(dir.path())?,
            };
            let old_segnos: Vec<u64> = old_files.keys().copied().collect();
            let pairs = recycled
                .iter()
                .map(|&(segno, _)| (segno, old_segnos.clone()))
                .collect();
            let old = Written {
                files: old_files,
                records: old_records,
            };
            Ok(Experiment { old, new, pairs })
        }
        Scenario::WrappedIds | Scenario::SameLsn => {
            let offset = if scenario == Scenario::WrappedIds {
                WAL_ID_PERIOD
            } else {
                0
            };
            let old = write_log(&tempdir("old")?, config.clone(), FIRST_SEGMENT, settings, 1)?;
            let new = write_log(
                &tempdir("new")?,
                config,
                FIRST_SEGMENT + offset,
                settings,
                2,
            )?;
            let pairs = new
                .files
                .keys()
                .map(|&segno| (segno, vec![segno - offset]))
                .collect();
            Ok(Experiment { old, new, pairs })
        }
    }
}

/// A log starting in segment `first`, filling `settings.segments` segments.
fn write_log(
    dir: &tempfile::TempDir,
    config: Config,
    first: u64,
    settings: SpliceSettings,
    salt: u64,
) -> Result<Written, SpliceError> {
    let wal = Wal::create_at_segment(dir.path(), config, Arc::new(FsStorage), first)?;
    let mut sizes = Sizes::new(settings.seed ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    fill(&wal, &mut sizes, settings.segments)?;
    wal.close()?;
    let seg = segment_size();
    Ok(Written {
        files: read_files(dir.path(), seg)?,
        records: read_all(dir.path())?,
    })
}

/// [`SEGMENT_SIZE`] as a segment size (checked at compile time).
const SEG: SegmentSize = match SegmentSize::new(SEGMENT_SIZE) {
    Ok(seg) => seg,
    Err(_) => panic!("SEGMENT_SIZE is not a valid segment size"),
};

fn segment_size() -> SegmentSize {
    SEG
}

/// Inserts records until `segments` more segments are full.
fn fill(wal: &Wal, sizes: &mut Sizes, segments: u64) -> Result<(), SpliceError> {
    let stop = wal.insert_position().as_u64() / SEGMENT_SIZE + segments;
    while wal.insert_position().as_u64() / SEGMENT_SIZE < stop {
        insert_one(wal, sizes)?;
    }
    Ok(())
}

fn insert_one(wal: &Wal, sizes: &mut Sizes) -> Result<(), SpliceError> {
    let len = sizes.next();
    let fill_byte = (len % 251) as u8;
    wal.insert(&Record::new(RMID, 0, vec![fill_byte; len]))?;
    Ok(())
}

/// Every record of the log in `dir`, from its first segment to its end.
fn read_all(dir: &Path) -> Result<Vec<WalRecord>, SpliceError> {
    let mut reader = WalReader::open(dir, ReaderOptions::default())?;
    let mut out = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => out.push(r),
            Ok(None) | Err(ReadError::EndOfWal { .. }) => return Ok(out),
            Err(e) => return Err(e.into()),
        }
    }
}

/// The segment files of the log in `dir`.
fn read_files(dir: &Path, seg: SegmentSize) -> Result<Files, SpliceError> {
    let mut files = Files::new();
    let entries = std::fs::read_dir(dir).map_err(io(format!("listing {}", dir.display())))?;
    for entry in entries {
        let entry = entry.map_err(io(format!("listing {}", dir.display())))?;
        let name = entry.file_name();
        let Some((_, segno)) = name.to_str().and_then(|n| seg.parse_file_name(n)) else {
            continue;
        };
        let bytes = std::fs::read(entry.path())
            .map_err(io(format!("reading {}", entry.path().display())))?;
        files.insert(segno, Arc::new(bytes));
    }
    Ok(files)
}

/// Record payload sizes: mostly small (OLTP, ~66-byte records on average
/// in seed 001's waldump figures), now and then up to 2 KiB.
struct Sizes(u64);

impl Sizes {
    fn new(seed: u64) -> Self {
        Sizes(seed | 1)
    }

    fn next(&mut self) -> usize {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        let x = self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 16;
        if x.is_multiple_of(16) {
            8 + (x >> 8) as usize % 2048
        } else {
            8 + (x >> 8) as usize % 72
        }
    }
}

/// A log's segment files in memory, with one byte range replaced: the
/// sectors a torn write left from the file's previous contents.
struct SplicedSource {
    seg: SegmentSize,
    files: Files,
    /// (segment, offset, bytes).
    overlay: (u64, usize, Vec<u8>),
}

impl SegmentSource for SplicedSource {
    fn segment_size(&self) -> SegmentSize {
        self.seg
    }

    fn read_at(&mut self, at: SegmentPos, buf: &mut [u8]) -> Result<usize, SourceError> {
        let SegmentPos { tli, segno, offset } = at;
        let file = self.files.get(&segno).ok_or_else(|| SourceError::Missing {
            name: self.seg.file_name(tli, segno),
        })?;
        let start = (offset as usize).min(file.len());
        let n = buf.len().min(file.len() - start);
        buf[..n].copy_from_slice(&file[start..start + n]);
        let (o_segno, o_start, ref bytes) = self.overlay;
        if o_segno == segno {
            let from = start.max(o_start);
            let to = (start + n).min(o_start + bytes.len());
            if from < to {
                buf[from - start..to - start].copy_from_slice(&bytes[from - o_start..to - o_start]);
            }
        }
        Ok(n)
    }
}
