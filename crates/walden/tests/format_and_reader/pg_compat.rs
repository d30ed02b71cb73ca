//! Walden's reader and PostgreSQL 15's `pg_waldump` agree, record for
//! record, on fresh WAL from a real server (`scripts/pg-wal-gen`), and the
//! edge-case records sit where the generator put them.

use walden::{Body, Lsn, ReadError, ReaderOptions, WalReader, WalRecord};
use walden_testkit::{
    format_lsn, generated_wal, parse_waldump_output, record_end, run_pg_waldump, BlockImage,
    GeneratedWal, SkipNote, WaldumpBlockRef, WaldumpOutput, PAGE_SIZE,
};

/// What Walden's reader made of a range.
struct WaldenRun {
    records: Vec<WalRecord>,
    skipped: Option<(Lsn, Lsn, u64)>,
    /// `Ok` when it stopped cleanly at the end LSN.
    stop: Result<(), ReadError>,
}

fn walden_read(wal: &GeneratedWal, start: Option<u64>, end: Option<u64>) -> WaldenRun {
    let options = ReaderOptions {
        start: start.map(Lsn),
        end: end.map(Lsn),
        ..ReaderOptions::default()
    };
    let mut reader = WalReader::open(wal.dir(), options).unwrap();
    let mut records = Vec::new();
    let stop = loop {
        match reader.next_record() {
            Ok(Some(record)) => records.push(record),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    WaldenRun {
        records,
        skipped: reader.skipped(),
        stop,
    }
}

/// What `pg_waldump` made of the same range.
struct PgRun {
    output: WaldumpOutput,
    exit: Option<i32>,
    /// Its error message without the `pg_waldump: error: ` prefix.
    error: Option<String>,
}

/// `pg_waldump -p DIR [-s START] [-e END]`, with the first and last segment
/// named when there is no start (it needs a file or a start).
fn pg_read(wal: &GeneratedWal, start: Option<u64>, end: Option<u64>) -> PgRun {
    let f = wal.facts();
    let mut args = vec!["-p".to_owned(), wal.dir().display().to_string()];
    if let Some(s) = start {
        args.extend(["-s".to_owned(), format_lsn(s)]);
    }
    if let Some(e) = end {
        args.extend(["-e".to_owned(), format_lsn(e)]);
    }
    if start.is_none() {
        args.push(f.get("FIRST_SEGMENT").unwrap().to_owned());
        args.push(f.get("LAST_SEGMENT").unwrap().to_owned());
    }
    let out = run_pg_waldump(&args).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    PgRun {
        output: parse_waldump_output(&String::from_utf8_lossy(&out.stdout)).unwrap(),
        exit: out.status.code(),
        error: stderr
            .lines()
            .find_map(|l| l.strip_prefix("pg_waldump: error: "))
            .map(str::to_owned),
    }
}

const FORK_NAMES: [&str; 4] = ["main", "fsm", "vm", "init"];

/// Walden's block references in pg_waldump's terms.
fn block_refs(body: &Body<&[u8]>) -> Vec<WaldumpBlockRef> {
    body.block_rels()
        .map(|(b, rel)| {
            let rel = rel.unwrap();
            WaldumpBlockRef {
                id: b.id,
                spc: rel.spc,
                db: rel.db,
                rel: rel.rel,
                fork: (b.fork != 0).then(|| FORK_NAMES[usize::from(b.fork)].to_owned()),
                blk: b.block,
                image: match &b.image {
                    None => BlockImage::None,
                    Some(i) if i.applies() => BlockImage::Apply,
                    Some(_) => BlockImage::Verify,
                },
            }
        })
        .collect()
}

/// Asserts that both readers read the same records: LSN, prev, rec and tot
/// lengths, xid, rmgr name, block references, and the whole description
/// (block references included).
fn assert_same_records(walden: &WaldenRun, pg: &PgRun, what: &str) {
    let pg_records = &pg.output.records;
    for (i, (w, p)) in walden.records.iter().zip(pg_records).enumerate() {
        let at = format!("{what}: record #{i} at {}", format_lsn(p.lsn));
        let body = Body::parse(&w.body).unwrap();
        let tot = w.header.tot_len;
        assert_eq!(w.lsn.as_u64(), p.lsn, "{at}: lsn");
        assert_eq!(w.header.prev.as_u64(), p.prev, "{at}: prev");
        assert_eq!(tot, p.tot_len, "{at}: tot_len");
        assert_eq!(tot - body.image_bytes() as u32, p.rec_len, "{at}: rec_len");
        assert_eq!(w.rec_len(), p.rec_len, "{at}: rec_len()");
        assert_eq!(w.header.xid, p.xid, "{at}: xid");
        assert_eq!(w.rmgr_name(), p.rmgr, "{at}: rmgr");
        assert_eq!(block_refs(&body), p.blocks, "{at}: block references");
        assert_eq!(w.describe(), p.desc, "{at}: desc");
    }
    assert_eq!(
        walden.records.len(),
        pg_records.len(),
        "{what}: record count"
    );
}

#[test]
fn whole_range_agrees_record_for_record() {
    let wal = generated_wal();
    let end = wal.facts().lsn("END_OF_WAL").unwrap();
    let walden = walden_read(wal, None, Some(end));
    let pg = pg_read(wal, None, Some(end));
    assert_eq!(pg.exit, Some(0), "{:?}", pg.error);
    if let Err(e) = &walden.stop {
        panic!("Walden stopped early: {e}");
    }
    assert_same_records(&walden, &pg, "whole range");
    // The comparison covered every kind of record Walden describes.
    for kind in [
        "MESSAGE transactional",
        "MESSAGE non-transactional",
        "SWITCH",
        "CHECKPOINT_ONLINE",
        "CHECKPOINT_SHUTDOWN",
        "COMMIT",
    ] {
        assert!(
            pg.output.records.iter().any(|r| r.desc.starts_with(kind)),
            "no {kind} record compared"
        );
    }
}

#[test]
fn end_of_wal_is_reported_as_pg_waldump_reports_it() {
    let wal = generated_wal();
    let f = wal.facts();
    let walden = walden_read(wal, None, None);
    let pg = pg_read(wal, None, None);
    assert_same_records(&walden, &pg, "no end");
    assert_eq!(pg.exit, Some(1));
    let err = walden
        .stop
        .expect_err("reading past the end of WAL must fail");
    assert!(matches!(err, ReadError::EndOfWal { .. }), "{err:?}");
    assert_eq!(Some(err.to_string()), pg.error);
    assert_eq!(
        err.to_string(),
        format!(
            "error in WAL record at {}: invalid record length at {}: wanted 24, got 0",
            format_lsn(f.lsn("SHUTDOWN_CHECKPOINT_LSN").unwrap()),
            format_lsn(f.lsn("END_OF_WAL").unwrap())
        )
    );
}

/// Start points that are not record starts, or are awkward ones: inside a
/// record, a header split across pages, a page boundary, a page that begins
/// with a continuation, a segment that is all continuation.
fn start_points(wal: &GeneratedWal) -> Vec<(&'static str, u64)> {
    let f = wal.facts();
    let lsn = |k| f.lsn(k).unwrap();
    vec![
        ("inside a record", lsn("MSG_10_LSN") + 0x18),
        ("a header split 16/8", lsn("EDGE_8176_LSN")),
        ("inside a header split 8/16", lsn("EDGE_8184_LSN") + 4),
        ("a page boundary", lsn("PAGE_END_LSN")),
        (
            "a page starting with a continuation",
            lsn("MSG_9000_LSN") / PAGE_SIZE * PAGE_SIZE + PAGE_SIZE,
        ),
        (
            "a continuation-only segment",
            lsn("CONTINUATION_ONLY_START"),
        ),
        ("the big record", lsn("BIG_LSN")),
    ]
}

#[test]
fn start_points_agree() {
    let wal = generated_wal();
    let end = wal.facts().lsn("END_OF_WAL").unwrap();
    for (what, start) in start_points(wal) {
        let what = format!("from {what} ({})", format_lsn(start));
        let walden = walden_read(wal, Some(start), Some(end));
        let pg = pg_read(wal, Some(start), Some(end));
        assert_eq!(pg.exit, Some(0), "{what}: {:?}", pg.error);
        assert!(walden.stop.is_ok(), "{what}: {:?}", walden.stop);
        assert!(!pg.output.records.is_empty(), "{what}");
        assert_same_records(&walden, &pg, &what);
        // pg_waldump prints its note unless the start is a segment start.
        let skipped = walden.skipped.map(|(requested, found, bytes)| SkipNote {
            requested: requested.as_u64(),
            found: found.as_u64(),
            bytes,
        });
        match pg.output.skipped {
            Some(note) => assert_eq!(skipped, Some(note), "{what}"),
            None => assert!(
                skipped.is_none() || start % wal.facts().number("SEGMENT_SIZE").unwrap() == 0,
                "{what}: Walden skipped {skipped:?}, pg_waldump did not"
            ),
        }
    }
}

#[test]
fn a_range_without_a_record_fails_as_in_pg_waldump() {
    // The continuation-only segment alone: no record starts in it.
    let wal = generated_wal();
    let seg = wal.facts().number("SEGMENT_SIZE").unwrap();
    let start = wal.facts().lsn("CONTINUATION_ONLY_START").unwrap();
    let pg = pg_read(wal, Some(start), Some(start + seg));
    let walden = walden_read(wal, Some(start), Some(start + seg));
    assert_eq!(pg.exit, Some(1));
    assert!(walden.records.is_empty() && pg.output.records.is_empty());
    let err = walden
        .stop
        .expect_err("no record in a continuation-only segment");
    assert_eq!(Some(err.to_string()), pg.error);
}

#[test]
fn edge_case_records_sit_where_they_should() {
    let wal = generated_wal();
    let f = wal.facts();
    let seg = f.number("SEGMENT_SIZE").unwrap();
    let run = walden_read(wal, None, Some(f.lsn("END_OF_WAL").unwrap()));
    let at = |key: &str| {
        let lsn = f.lsn(key).unwrap();
        run.records
            .iter()
            .position(|r| r.lsn.as_u64() == lsn)
            .unwrap_or_else(|| panic!("Walden read no record at {key}"))
    };
    // Every record's end is where its bytes run out, page headers skipped.
    for r in &run.records {
        assert_eq!(
            r.end.as_u64(),
            record_end(r.lsn.as_u64(), u64::from(r.header.tot_len), seg),
            "end of the record at {}",
            r.lsn
        );
    }
    // Headers split 16/8 and 8/16 over a page boundary.
    for (key, offset) in [("EDGE_8176_LSN", 8176), ("EDGE_8184_LSN", 8184)] {
        let r = &run.records[at(key)];
        assert_eq!(r.lsn.page_offset(), offset, "{key}");
        assert_eq!(
            r.end.page_start().as_u64(),
            r.lsn.page_start().as_u64() + PAGE_SIZE
        );
        assert!(r.describe().contains(&format!("prefix \"edge{offset}\"")));
    }
    // A record that ends exactly at a page end; the next starts past the
    // next page's header.
    let i = at("PAGE_END_RECORD_LSN");
    assert_eq!(run.records[i].end.as_u64(), f.lsn("PAGE_END_LSN").unwrap());
    assert_eq!(
        run.records[i + 1].lsn.as_u64(),
        f.lsn("PAGE_END_LSN").unwrap() + 24
    );
    // After the SWITCH, the next record opens the next segment.
    let i = at("SWITCH_LSN");
    let next = &run.records[i + 1];
    assert_eq!(
        next.lsn.as_u64(),
        (run.records[i].lsn.as_u64() / seg + 1) * seg + 40
    );
    assert_eq!(next.lsn.as_u64(), f.lsn("BIG_LSN").unwrap());
    // The big record covers a whole segment, in which no record starts.
    let cont = f.lsn("CONTINUATION_ONLY_START").unwrap();
    assert!(next.lsn.as_u64() < cont && next.end.as_u64() > cont + seg);
    assert!(!run
        .records
        .iter()
        .any(|r| (cont..cont + seg).contains(&r.lsn.as_u64())));
    // The transactional messages carry the xids their COMMITs name.
    for m in f.messages().unwrap() {
        let r = &run.records[at(&format!("MSG_{}_LSN", m.payload))];
        assert_eq!(
            r.header.xid != 0,
            m.transactional,
            "message of {} bytes",
            m.payload
        );
    }
}
