//! Random damage to valid WAL — byte flips, zeroed ranges, truncated files,
//! pages copied over other pages — never makes the reader panic, and every
//! record it still yields is a record of the undamaged WAL, CRC intact.

use crate::support::fault;
use crate::support::reader::sample_dir::samples_dir;
use crate::support::regressions::next_to_source;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use crate::support::reader::reader_of;
use crate::support::reader::synth::{edge_case_wal, MemSource};
use proptest::prelude::*;
use proptest::sample::Index;
use walden::internals::format::body::encode_main_data;
use walden::internals::format::crc::record_crc;
use walden::internals::{maxalign, PAGE_SIZE};
use walden::message::OverwriteContrecord;
use walden::rmgr::{RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD};
use walden::{Lsn, RecordHeader, SegmentSize};

/// Undamaged WAL and the records it holds.
struct Base {
    wal: MemSource,
    start: Lsn,
    records: HashMap<Lsn, (RecordHeader, Vec<u8>)>,
}

impl Base {
    /// The used part of a segment: up to the page after its last non-zero byte.
    fn hot_len(&self, bytes: &[u8]) -> usize {
        let last = bytes.iter().rposition(|&b| b != 0).unwrap_or(0);
        ((last / PAGE_SIZE as usize + 2) * PAGE_SIZE as usize).min(bytes.len())
    }
}

fn synthetic_base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let (mut w, _) = edge_case_wal(seg);
        // An overwritten continuation, as recovery leaves it.
        let r = w.message(10);
        let big = w.message(30_000);
        w.overwrite_from(Lsn(big.page_start().0 + 2 * PAGE_SIZE), r);
        let mut body = Vec::new();
        encode_main_data(
            &OverwriteContrecord {
                overwritten_lsn: big,
                overwrite_time: 0,
            }
            .encode(),
            &mut body,
        );
        w.append(RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD, 0, &body);
        w.message(5);
        let records = w
            .written
            .iter()
            .map(|x| (x.lsn, (x.header, x.body.clone())))
            .collect();
        Base {
            wal: w.source(),
            start: seg.segment_start(1),
            records,
        }
    })
}

/// Sample segments 7 (messages, page edges, switch) and A (block
/// references, full-page images, checkpoints), each read alone.
fn sample_bases() -> Option<&'static [Base; 2]> {
    static BASES: OnceLock<Option<[Base; 2]>> = OnceLock::new();
    BASES
        .get_or_init(|| {
            let dir = samples_dir("damaged sample WAL never panics the reader")?;
            let seg = SegmentSize::new(1 << 20).unwrap();
            let base = |segno: u64| {
                let bytes = std::fs::read(dir.join(seg.file_name(1, segno))).unwrap();
                let segments = BTreeMap::from([(segno, bytes)]);
                let start = seg.segment_start(segno);
                let mut r = reader_of(
                    MemSource {
                        seg,
                        segments: segments.clone(),
                    },
                    start,
                    None,
                )
                .unwrap();
                let mut records = HashMap::new();
                while let Ok(Some(rec)) = r.next_record() {
                    records.insert(rec.lsn, (rec.header, rec.body));
                }
                assert!(records.len() > 20);
                Base {
                    wal: MemSource { seg, segments },
                    start,
                    records,
                }
            };
            Some([base(7), base(10)])
        })
        .as_ref()
}

#[derive(Clone, Debug)]
enum Damage {
    Flip {
        segment: Index,
        at: Index,
        mask: u8,
    },
    Zero {
        segment: Index,
        at: Index,
        len: usize,
    },
    Truncate {
        segment: Index,
        at: Index,
    },
    CopyPage {
        segment: Index,
        from: Index,
        to: Index,
    },
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        5 => (any::<Index>(), any::<Index>(), 1u8..=255).prop_map(|(segment, at, mask)| Damage::Flip { segment, at, mask }),
        2 => (any::<Index>(), any::<Index>(), 1usize..20_000).prop_map(|(segment, at, len)| Damage::Zero { segment, at, len }),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(segment, at)| Damage::Truncate { segment, at }),
        2 => (any::<Index>(), any::<Index>(), any::<Index>()).prop_map(|(segment, from, to)| Damage::CopyPage { segment, from, to }),
    ]
}

fn apply(base: &Base, segments: &mut BTreeMap<u64, Vec<u8>>, d: &Damage) {
    let (Damage::Flip { segment, .. }
    | Damage::Zero { segment, .. }
    | Damage::Truncate { segment, .. }
    | Damage::CopyPage { segment, .. }) = d;
    let segno = *segment.get(&segments.keys().copied().collect::<Vec<_>>());
    let hot = base.hot_len(&base.wal.segments[&segno]);
    let bytes = segments.get_mut(&segno).unwrap();
    let hot = hot.min(bytes.len());
    if hot == 0 {
        return;
    }
    match d {
        Damage::Flip { at, mask, .. } => bytes[at.index(hot)] ^= mask,
        Damage::Zero { at, len, .. } => {
            let from = at.index(hot);
            let to = (from + len).min(bytes.len());
            bytes[from..to].fill(0);
        }
        Damage::Truncate { at, .. } => bytes.truncate(at.index(hot)),
        Damage::CopyPage { from, to, .. } => {
            let pages = hot / PAGE_SIZE as usize;
            if pages == 0 {
                return;
            }
            let (from, to) = (
                from.index(pages) * PAGE_SIZE as usize,
                to.index(pages) * PAGE_SIZE as usize,
            );
            let page = bytes[from..from + PAGE_SIZE as usize].to_vec();
            bytes[to..to + PAGE_SIZE as usize].copy_from_slice(&page);
        }
    }
}

fn check_damaged(base: &Base, damages: &[Damage]) -> Result<(), TestCaseError> {
    let mut segments = base.wal.segments.clone();
    for d in damages {
        apply(base, &mut segments, d);
    }
    let mut r = reader_of(
        MemSource {
            seg: base.wal.seg,
            segments,
        },
        base.start,
        None,
    )
    .unwrap();
    let mut last = None;
    for _ in 0..=base.records.len() {
        match r.next_record() {
            Ok(Some(rec)) => {
                prop_assert!(last < Some(rec.lsn), "records in LSN order");
                prop_assert_eq!(record_crc(&rec.header.encode(), &rec.body), rec.header.crc);
                let original = base.records.get(&rec.lsn).map(|(h, b)| (*h, b.as_slice()));
                prop_assert_eq!(
                    original,
                    Some((rec.header, rec.body.as_slice())),
                    "record at {}",
                    rec.lsn
                );
                prop_assert!(rec.decode_body().is_ok());
                prop_assert!(!rec.describe().is_empty());
                last = Some(rec.lsn);
            }
            Ok(None) => prop_assert!(false, "no end limit was given"),
            Err(_) => {
                // Retrying reads the same bytes and fails the same way.
                prop_assert!(r.next_record().is_err());
                return Ok(());
            }
        }
    }
    prop_assert!(false, "more records than the undamaged WAL holds");
    Ok(())
}

/// Cases per damage property.
const DAMAGE_CASES: u32 = 64;

proptest! {
    #![proptest_config(next_to_source(ProptestConfig::with_cases(DAMAGE_CASES)))]

    #[test]
    fn damaged_synthetic_wal(damages in prop::collection::vec(damage(), 1..5)) {
        check_damaged(synthetic_base(), &damages)?;
    }
}

/// The sample WAL is looked up before the cases run, so that its absence
/// fails this test (or skips it, with `WALDEN_SKIP_SAMPLES=1`) rather than
/// failing a case that proptest would then record as a regression.
#[test]
fn damaged_sample_wal() {
    let Some(bases) = sample_bases() else {
        return;
    };
    proptest!(
        next_to_source(ProptestConfig::with_cases(DAMAGE_CASES)),
        |(which in 0usize..2, damages in prop::collection::vec(damage(), 1..5))| {
            check_damaged(&bases[which], &damages)?;
        }
    );
}

// ---------------------------------------------------------------------------
// Engine-written WAL of every format, mutated, with the CRCs of the records
// whose length survived recomputed, so that the reader is exercised past its
// CRC check (a raw-bytes fuzzer stalls behind it): no panic, and every
// record it returns has a correct CRC. `WALDEN_FUZZ_CASES` sets the cases
// per property (default 256; a long run: 100000).

/// WAL written by the engine in one format, and where its records are.
struct FormatBase {
    format: walden::WalFormat,
    seg: SegmentSize,
    segments: BTreeMap<u64, Vec<u8>>,
    /// (start, end) of every record the workload inserted.
    spans: Vec<(Lsn, Lsn)>,
    start: Lsn,
}

fn format_bases() -> &'static [FormatBase] {
    static BASES: OnceLock<Vec<FormatBase>> = OnceLock::new();
    BASES.get_or_init(|| {
        fault::FORMATS
            .iter()
            .map(|&format| {
                let config = fault::strategy_configs()
                    .into_iter()
                    .find(|c| c.format == format)
                    .expect("a valid configuration for every format");
                let sim = walden::SimStorage::new(9);
                let storage: std::sync::Arc<dyn walden::Storage> = std::sync::Arc::new(sim.clone());
                let wal = walden::Wal::create_with_storage(fault::DIR, config, storage).unwrap();
                let mut spans = Vec::new();
                for i in 0..60u64 {
                    let len = [0, 7, 100, 3000, 9000, 20000][i as usize % 6];
                    let rec = walden::Record::new(128, 0, fault::payload(i, len));
                    let span = wal.insert_span(&rec).unwrap();
                    spans.push((span.start, span.end));
                }
                wal.flush(spans.last().unwrap().1).unwrap();
                drop(wal);
                let seg = SegmentSize::new(1 << 20).unwrap();
                let segments = (1..=seg.segno(spans.last().unwrap().1))
                    .map(|segno| {
                        let path = std::path::Path::new(fault::DIR).join(seg.file_name(1, segno));
                        (segno, sim.contents(&path).unwrap())
                    })
                    .collect();
                FormatBase {
                    format,
                    seg,
                    segments,
                    start: spans[0].0,
                    spans,
                }
            })
            .collect()
    })
}

/// The file offsets holding the bytes of the log from `start` to `end`,
/// page headers skipped, as (segment, offset).
fn record_offsets(seg: SegmentSize, start: Lsn, end: Lsn) -> Vec<(u64, usize)> {
    let mut out = Vec::new();
    let mut at = start;
    while at < end {
        if at.page_offset() == 0 {
            at = Lsn(at.0 + seg.page_header_size(at));
            continue;
        }
        out.push((seg.segno(at), seg.offset(at) as usize));
        at = Lsn(at.0 + 1);
    }
    out
}

/// Recomputes the CRC of every record whose `xl_tot_len` is still what it
/// was, over its (possibly damaged) bytes.
fn fix_crcs(base: &FormatBase, segments: &mut BTreeMap<u64, Vec<u8>>) {
    let header_size = base.format.record_header_size();
    let crc_at = base.format.crc_offset();
    for &(start, end) in &base.spans {
        let offsets = record_offsets(base.seg, start, end);
        let byte = |segments: &BTreeMap<u64, Vec<u8>>, (s, o): (u64, usize)| {
            segments.get(&s).and_then(|b| b.get(o)).copied()
        };
        let Some(bytes) = offsets
            .iter()
            .map(|&p| byte(segments, p))
            .collect::<Option<Vec<u8>>>()
        else {
            continue;
        };
        let tot_len = u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
        if !(header_size..=bytes.len()).contains(&tot_len)
            || maxalign(tot_len as u64) != maxalign(bytes.len() as u64)
        {
            continue;
        }
        let crc = base
            .format
            .record_crc(&bytes[..header_size], &bytes[header_size..tot_len]);
        for (i, b) in crc.to_le_bytes().into_iter().enumerate() {
            let (s, o) = offsets[crc_at + i];
            if let Some(slot) = segments.get_mut(&s).and_then(|seg| seg.get_mut(o)) {
                *slot = b;
            }
        }
    }
}

fn fuzz_cases() -> u32 {
    std::env::var("WALDEN_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256)
}

fn check_crc_fixed(
    base: &FormatBase,
    damages: &[(Index, Index, u8, usize)],
) -> Result<(), TestCaseError> {
    let mut segments = base.segments.clone();
    let hot = record_offsets(base.seg, base.start, base.spans.last().unwrap().1);
    for (pick, other, value, len) in damages {
        // Damage inside the records' bytes, at one byte or a run of them.
        let (s, o) = hot[pick.index(hot.len())];
        let seg = segments.get_mut(&s).unwrap();
        let end = (o + len).min(seg.len());
        seg[o..end].fill(*value);
        // Sometimes a whole page lands on another (a misdirected write).
        if *len > 40 {
            let pages = seg.len() / PAGE_SIZE as usize;
            let (from, to) = (other.index(pages), pick.index(pages));
            let page = seg[from * 8192..(from + 1) * 8192].to_vec();
            seg[to * 8192..(to + 1) * 8192].copy_from_slice(&page);
        }
    }
    fix_crcs(base, &mut segments);
    read_checking_crcs(base, segments, base.start)
}

/// Reads `segments` from `start` to wherever the reader stops: no panic,
/// records in LSN order, each with a correct CRC, and a stop in bounded time.
fn read_checking_crcs(
    base: &FormatBase,
    segments: BTreeMap<u64, Vec<u8>>,
    start: Lsn,
) -> Result<(), TestCaseError> {
    let stored = segments.clone();
    let source = MemSource {
        seg: base.seg,
        segments,
    };
    // A start the reader refuses (inside a page header, say) is a typed
    // error, not a panic.
    let Ok(mut r) = reader_of(source, start, None) else {
        return Ok(());
    };
    let mut last = None;
    let header_size = base.format.record_header_size();
    for _ in 0..10_000 {
        match r.next_record() {
            Ok(Some(rec)) => {
                prop_assert!(last < Some(rec.lsn), "records in LSN order");
                // The header as stored (page headers skipped, a long one
                // at most 40 bytes): the CRC covers those bytes, padding
                // included, as PostgreSQL's does, so a damage `fix_crcs`
                // sealed into the padding is a valid record; re-encoding
                // the header (padding zero) would not give its CRC.
                let to = Lsn(rec.lsn.0 + header_size as u64 + 40);
                let header: Option<Vec<u8>> = record_offsets(base.seg, rec.lsn, to)
                    .into_iter()
                    .take(header_size)
                    .map(|(s, o)| stored.get(&s).and_then(|b| b.get(o)).copied())
                    .collect();
                let header = header.unwrap_or_default();
                prop_assert_eq!(
                    base.format.decode_header(&header).map(|(h, _)| h),
                    Some(rec.header),
                    "record at {} returned with another header than stored",
                    rec.lsn
                );
                prop_assert_eq!(
                    base.format.record_crc(&header, &rec.body),
                    rec.header.crc,
                    "record at {} returned with a wrong CRC",
                    rec.lsn
                );
                last = Some(rec.lsn);
            }
            Ok(None) => prop_assert!(false, "no end limit was given"),
            Err(_) => return Ok(()),
        }
    }
    prop_assert!(false, "the reader never stopped");
    Ok(())
}

/// Arbitrary bytes in place of a log of `base`'s format: every byte of the
/// segments from seed `seed`, but (with `keep_page_headers`) the valid page
/// headers of `base`, so the reader gets past page validation and parses
/// random record headers and lengths, from a record start or from `start`
/// anywhere in the first segment.
fn check_arbitrary(
    base: &FormatBase,
    seed: u64,
    keep_page_headers: bool,
    start: Index,
) -> Result<(), TestCaseError> {
    let mut rng = fault::Rng::new(seed);
    let page = PAGE_SIZE as usize;
    let mut segments = base.segments.clone();
    for bytes in segments.values_mut() {
        for (i, chunk) in bytes.chunks_mut(8).enumerate() {
            let header = if i * 8 < page { 40 } else { 24 };
            if keep_page_headers && (i * 8) % page < header {
                continue;
            }
            let word = rng.next().to_le_bytes();
            chunk.copy_from_slice(&word[..chunk.len()]);
        }
    }
    let first = base
        .seg
        .segment_start(*segments.keys().next().unwrap_or(&1));
    let start = if start.index(4) == 0 {
        base.start
    } else {
        Lsn(maxalign(
            first.0 + 40 + start.index(base.seg.bytes() as usize - 48) as u64,
        ))
    };
    read_checking_crcs(base, segments, start)
}

proptest! {
    #![proptest_config(next_to_source(ProptestConfig::with_cases(fuzz_cases())))]

    #[test]
    fn arbitrary_bytes_of_every_format(
        which in 0usize..3,
        seed in any::<u64>(),
        keep_page_headers in any::<bool>(),
        start in any::<Index>(),
    ) {
        let bases = format_bases();
        check_arbitrary(&bases[which % bases.len()], seed, keep_page_headers, start)?;
    }

    #[test]
    fn crc_fixed_mutations_of_every_format(
        which in 0usize..3,
        damages in prop::collection::vec((any::<Index>(), any::<Index>(), any::<u8>(), 1usize..64), 1..4),
    ) {
        let bases = format_bases();
        check_crc_fixed(&bases[which % bases.len()], &damages)?;
    }
}
