//! Helpers shared by the fault-injection tests: the configurations to run
//! under, a seeded generator, payloads that identify their record, and
//! reading a log's user records back through its storage.

use std::sync::Arc;
use std::time::Duration;

use walden::internals::{ControlFile, StorageSource};
use walden::{
    Config, Eviction, Lsn, PageInitKind, ReservationKind, SegmentPrep, SlotChoice, SyncMethod,
    WalFormat,
};
use walden::{ReadError, ReaderOptions, SimStorage, Storage, WalReader, WalRecord};

/// Resource manager of the records the workloads insert.
pub const USER_RMID: u8 = 128;
/// Where the simulated logs live.
pub const DIR: &str = "/wal";

/// Every on-disk format. Add new formats here.
pub const FORMATS: &[WalFormat] = &[
    WalFormat::Postgres15,
    WalFormat::SelfLsn,
    WalFormat::CompactWalId,
];
/// Every reservation strategy. Add new strategies here; pairs the
/// configuration refuses are skipped.
pub const RESERVATIONS: &[ReservationKind] = &[
    ReservationKind::Spinlock,
    ReservationKind::PrevLinkTable,
    ReservationKind::PrevLinkInBuffer,
    ReservationKind::Unlinked,
];
/// Every page initialisation strategy.
pub const PAGE_INITS: &[PageInitKind] = &[PageInitKind::MappingLock, PageInitKind::Cooperative];
/// Every eviction policy.
pub const EVICTIONS: &[Eviction] = &[Eviction::OnePage, Eviction::Batch];
/// Every way of preparing a new segment.
pub const SEGMENT_PREPS: &[SegmentPrep] = &SegmentPrep::ALL;
/// Segments kept ready ahead: the default, none (the writer creates each
/// one), one, and more than a checkpoint recycles.
pub const SEGMENTS_AHEAD: &[usize] = &[2, 0, 1, 4];
/// Without and with direct I/O (`O_DIRECT`, whole pages from the ring).
pub const DIRECT_IO: &[bool] = &[false, true];
/// With and without overlapped syncs (the default first).
pub const OVERLAP_SYNCS: &[bool] = &[true, false];
/// Without and with concurrent syncs (the default first).
pub const CONCURRENT_SYNCS: &[bool] = &[false, true];
/// Streaming of large records: every page crossed (these logs' records
/// span at most three pages), and off.
pub const STREAM_AFTER: &[u64] = &[8192, 0];
/// Write-through of large records: every record that covers a page whole
/// (these logs' records of three pages do), and off.
pub const WRITE_THROUGH_FROM: &[u64] = &[8192, 0];
/// Write-back started as a write goes ([`Config::writeback_every`]): a cut
/// and a hint at every page (these logs' writes are a few pages), and off.
pub const WRITEBACK_EVERY: &[u64] = &[8192, 0];
/// The CRC beside the write ([`Config::crc_helper`]), off and on.
pub const CRC_HELPER: &[bool] = &[false, true];
/// Slot choices.
pub const SLOT_CHOICES: &[SlotChoice] = &[SlotChoice::Sticky, SlotChoice::Attempts(2)];
/// Without and with the background writer (another thread doing I/O).
pub const WRITER_DELAYS: &[Option<Duration>] = &[None, Some(Duration::from_millis(1))];
/// The sync methods that promise durability.
pub const DURABLE_SYNC_METHODS: &[SyncMethod] = &[
    SyncMethod::Fsync,
    SyncMethod::Fdatasync,
    SyncMethod::OpenDatasync,
    SyncMethod::OpenSync,
];

/// Every valid combination of format and strategies (the first is the
/// default's), with 1 MiB segments, a small ring and fdatasync; the
/// segment preparation, the segments kept ready ahead, direct I/O,
/// overlapped and concurrent syncs, streaming, write-through, the CRC
/// helper and cut writes go round the combinations (every format meets
/// every preparation, with and without direct I/O, with and without
/// overlapped syncs, concurrent syncs, streaming, write-through, the helper
/// and cut writes).
pub fn strategy_configs() -> Vec<Config> {
    let mut out = Vec::new();
    for &format in FORMATS {
        for &reservation in RESERVATIONS {
            for &page_init in PAGE_INITS {
                for &eviction in EVICTIONS {
                    for &slot_choice in SLOT_CHOICES {
                        for &writer_delay in WRITER_DELAYS {
                            let c = Config {
                                format,
                                reservation,
                                page_init,
                                eviction,
                                eviction_chunk: 4 * 8192,
                                slot_choice,
                                writer_delay,
                                segment_size: 1 << 20,
                                buffers: 8 * 8192,
                                insert_slots: 4,
                                sync_method: SyncMethod::Fdatasync,
                                recycle_segments: 2,
                                ..Config::default()
                            };
                            if c.validate().is_ok() {
                                let k = out.len();
                                out.push(Config {
                                    direct_io: DIRECT_IO[k
                                        / (SEGMENT_PREPS.len() * SEGMENTS_AHEAD.len())
                                        % DIRECT_IO.len()],
                                    // k / 2: the innermost loop (the
                                    // background writer) turns with k, so
                                    // both meet both settings.
                                    overlap_syncs: OVERLAP_SYNCS[k / 2 % OVERLAP_SYNCS.len()],
                                    // Every round hands on early, however
                                    // small: these logs' rounds are.
                                    overlap_syncs_from: 0,
                                    // k / 4: turns after the background
                                    // writer and overlapped syncs, so that
                                    // streaming meets both settings of each.
                                    stream_after: STREAM_AFTER[k / 4 % STREAM_AFTER.len()],
                                    // k / 8: turns after streaming, so
                                    // that write-through meets both.
                                    write_through_from: WRITE_THROUGH_FROM
                                        [k / 8 % WRITE_THROUGH_FROM.len()],
                                    // k / 16: turns after write-through, so
                                    // that concurrent syncs meet both
                                    // settings of each of the above.
                                    concurrent_syncs: CONCURRENT_SYNCS
                                        [k / 16 % CONCURRENT_SYNCS.len()],
                                    // k / 32: turns after concurrent syncs,
                                    // so that the helper meets both
                                    // settings of write-through (off, it
                                    // does nothing).
                                    crc_helper: CRC_HELPER[k / 32 % CRC_HELPER.len()],
                                    // k / 64: turns after the helper, so
                                    // that cut writes meet both settings of
                                    // each of the above.
                                    writeback_every: WRITEBACK_EVERY
                                        [k / 64 % WRITEBACK_EVERY.len()],
                                    segment_prep: SEGMENT_PREPS[k % SEGMENT_PREPS.len()],
                                    segments_ahead: SEGMENTS_AHEAD
                                        [k / SEGMENT_PREPS.len() % SEGMENTS_AHEAD.len()],
                                    ..c
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// The default strategies with 1 MiB segments, a ring of `pages` pages
/// and fdatasync.
pub fn small_config(pages: u64) -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: pages * 8192,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    }
}

/// `sim` as the storage of a log.
pub fn storage(sim: &SimStorage) -> Arc<dyn Storage> {
    Arc::new(sim.clone())
}

/// A seeded generator: the test kit's SplitMix64 (the one the FUSE crash
/// file system draws from), with the draws these tests make.
#[derive(Clone, Debug)]
pub struct Rng(walden_testkit::crashfs::Rng);

impl Rng {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(walden_testkit::crashfs::Rng::new(seed))
    }

    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n` (0 if `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// True with probability `1/n`.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// A record payload length: mostly small, some spanning pages, a few
    /// spanning three pages.
    pub fn payload_len(&mut self) -> usize {
        match self.below(100) {
            0..=69 => self.below(200) as usize,
            70..=94 => 200 + self.below(4000) as usize,
            _ => 4000 + self.below(20_000) as usize,
        }
    }
}

/// The payload of the record tagged `tag`, `len` bytes: the tag's bytes
/// first, then bytes derived from it, so any two records differ.
pub fn payload(tag: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    out.extend_from_slice(&tag.to_le_bytes()[..len.min(8)]);
    let mut rng = Rng::new(tag ^ 0x5DEE_CE66_D1CE_4E5B);
    while out.len() < len {
        let word = rng.next().to_le_bytes();
        let n = (len - out.len()).min(8);
        out.extend_from_slice(&word[..n]);
    }
    out
}

/// Whether `record` is the user record tagged `tag` of `len` bytes, byte
/// for byte.
pub fn is_user_record(record: &WalRecord, tag: u64, len: usize) -> bool {
    record.header.rmid == USER_RMID
        && record
            .decode_body()
            .is_ok_and(|b| b.main_data == payload(tag, len) && b.blocks.is_empty())
}

/// A record whose flush returned `Ok`: its start, tag and payload length.
pub type Acked = (Lsn, u64, usize);

/// Asserts that every record of `acked` is among `records`, at its LSN and
/// byte for byte.
pub fn assert_acknowledged(records: &[WalRecord], acked: &[Acked]) {
    let by_lsn: std::collections::HashMap<Lsn, &WalRecord> =
        records.iter().map(|r| (r.lsn, r)).collect();
    for &(lsn, tag, len) in acked {
        let record = by_lsn
            .get(&lsn)
            .unwrap_or_else(|| panic!("acknowledged record {tag} at {lsn} lost"));
        assert!(
            is_user_record(record, tag, len),
            "the record at {lsn} is not acknowledged record {tag} of {len} bytes"
        );
    }
}

/// Every record from `from` to the end of WAL of the log in `dir` on
/// `storage`, and the error that ended the scan.
pub fn read_log(
    storage: Arc<dyn Storage>,
    dir: &str,
    from: Lsn,
) -> Result<(Vec<WalRecord>, ReadError), String> {
    let control = ControlFile::read(&*storage, dir.as_ref()).map_err(|e| e.to_string())?;
    let source = StorageSource::new(storage, dir, control.segment_size);
    let opts = ReaderOptions {
        start: Some(from),
        end: None,
        timeline: control.timeline,
    };
    let mut reader = WalReader::with_source(Box::new(source), opts).map_err(|e| e.to_string())?;
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r),
            Ok(None) => return Err("a reader without an end limit stopped cleanly".into()),
            Err(e @ ReadError::EndOfWal { .. }) => return Ok((records, e)),
            Err(e) => return Err(format!("reading the log failed: {e}")),
        }
    }
}

/// The seed for a run: `var` if set, else the clock.
pub fn seed_from_env(var: &str) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        })
}

/// A count from environment variable `var`, or `default`.
pub fn count_from_env(var: &str, default: u64) -> u64 {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
