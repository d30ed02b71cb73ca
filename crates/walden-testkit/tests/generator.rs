//! The harness checks itself against PostgreSQL's own reader: the generated
//! WAL is what `scripts/pg-wal-gen` says it is, and every line `pg_waldump`
//! prints about it parses.

use walden_testkit::{
    format_lsn, generated_wal, parse_waldump_output, parse_waldump_stats, record_end,
    run_pg_waldump, BlockImage, WaldumpRecord,
};

const PAGE: u64 = 8192;

/// `pg_waldump -p DIR -e END_OF_WAL FIRST LAST`: every record, exit 0.
fn all_records() -> Vec<WaldumpRecord> {
    let wal = generated_wal();
    let f = wal.facts();
    let out = run_pg_waldump([
        "-p".as_ref(),
        wal.dir().as_os_str(),
        "-e".as_ref(),
        format_lsn(f.lsn("END_OF_WAL").unwrap()).as_ref(),
        f.get("FIRST_SEGMENT").unwrap().as_ref(),
        f.get("LAST_SEGMENT").unwrap().as_ref(),
    ])
    .unwrap();
    assert!(
        out.status.success(),
        "pg_waldump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_waldump_output(&String::from_utf8_lossy(&out.stdout))
        .unwrap()
        .records
}

fn record_at(records: &[WaldumpRecord], lsn: u64) -> &WaldumpRecord {
    records
        .iter()
        .find(|r| r.lsn == lsn)
        .unwrap_or_else(|| panic!("pg_waldump shows no record at {}", format_lsn(lsn)))
}

#[test]
fn segments_are_complete_and_contiguous() {
    let wal = generated_wal();
    let f = wal.facts();
    let names = wal.segment_names().unwrap();
    assert_eq!(
        names.first().map(String::as_str),
        Some(f.get("FIRST_SEGMENT").unwrap())
    );
    assert_eq!(
        names.last().map(String::as_str),
        Some(f.get("LAST_SEGMENT").unwrap())
    );
    let segno = |n: &str| u64::from_str_radix(&n[16..], 16).unwrap();
    for pair in names.windows(2) {
        assert_eq!(segno(&pair[1]), segno(&pair[0]) + 1, "{pair:?}");
    }
    for name in &names {
        let len = std::fs::metadata(wal.dir().join(name)).unwrap().len();
        assert_eq!(len, f.number("SEGMENT_SIZE").unwrap(), "{name}");
    }
}

#[test]
fn every_record_parses_and_links_to_the_previous() {
    let records = all_records();
    let f = generated_wal().facts();
    assert!(records.len() > 100, "only {} records", records.len());
    for pair in records.windows(2) {
        assert_eq!(pair[1].prev, pair[0].lsn, "prev-link of {:X}", pair[1].lsn);
    }
    let last = records.last().unwrap();
    assert_eq!(last.lsn, f.lsn("SHUTDOWN_CHECKPOINT_LSN").unwrap());
    assert!(
        last.desc.starts_with("CHECKPOINT_SHUTDOWN redo "),
        "{}",
        last.desc
    );
    let online = record_at(&records, f.lsn("CHECKPOINT_LSN").unwrap());
    assert!(
        online.desc.starts_with("CHECKPOINT_ONLINE"),
        "{}",
        online.desc
    );
    assert!(
        records
            .iter()
            .filter(|r| r.lsn > online.lsn)
            .flat_map(|r| &r.blocks)
            .any(|b| b.image == BlockImage::Apply),
        "no full-page image after the CHECKPOINT"
    );
    assert!(
        records.iter().any(|r| r.rec_len < r.tot_len),
        "rec/tot never differ"
    );
}

#[test]
fn facts_name_the_records_they_claim() {
    let records = all_records();
    let f = generated_wal().facts();
    let messages = f.messages().unwrap();
    assert_eq!(messages.len(), 10);
    for m in &messages {
        let r = record_at(&records, m.lsn);
        let kind = if m.transactional {
            "transactional"
        } else {
            "non-transactional"
        };
        let head = format!(
            "MESSAGE {kind}, prefix \"test\"; payload ({} bytes):",
            m.payload
        );
        assert!(r.desc.starts_with(&head), "{head} vs {}", r.desc);
        assert_eq!(r.xid != 0, m.transactional, "{:X}", m.lsn);
    }
    for (key, offset, prefix) in [
        ("EDGE_8176_LSN", 8176, "edge8176"),
        ("EDGE_8184_LSN", 8184, "edge8184"),
        ("EDGE_8192_LSN", 24, "edge8192"),
    ] {
        let lsn = f.lsn(key).unwrap();
        assert_eq!(lsn % PAGE, offset, "{key}");
        let r = record_at(&records, lsn);
        assert!(
            r.desc.contains(&format!("prefix \"{prefix}\"")),
            "{}",
            r.desc
        );
    }
    let page_end = f.lsn("PAGE_END_LSN").unwrap();
    assert_eq!(page_end % PAGE, 0);
    let after = record_at(&records, f.lsn("EDGE_8192_LSN").unwrap());
    assert_eq!(after.lsn, page_end + 24);
    assert_eq!(after.prev, f.lsn("PAGE_END_RECORD_LSN").unwrap());

    for key in ["INITIAL_SWITCH_LSN", "SWITCH_LSN"] {
        let switch = f.lsn(key).unwrap();
        assert_eq!(record_at(&records, switch).desc, "SWITCH ", "{key}");
    }
    let seg = f.number("SEGMENT_SIZE").unwrap();
    let big = record_at(&records, f.lsn("BIG_LSN").unwrap());
    assert_eq!(big.prev, f.lsn("SWITCH_LSN").unwrap());
    assert_eq!(big.lsn % seg, 40, "the big message opens a segment");
    assert!(big.desc.contains(&format!(
        "payload ({} bytes)",
        f.number("BIG_PAYLOAD").unwrap()
    )));
    let cont = f.lsn("CONTINUATION_ONLY_START").unwrap();
    assert_eq!(cont % seg, 0);
    assert!(
        big.lsn < cont && record_end(big.lsn, big.tot_len.into(), seg) > cont + seg,
        "the big message does not cover the segment at {}",
        format_lsn(cont)
    );
    assert!(!records.iter().any(|r| (cont..cont + seg).contains(&r.lsn)));
    let name = f.get("CONTINUATION_ONLY_SEGMENT").unwrap();
    assert_eq!(u64::from_str_radix(&name[16..], 16).unwrap(), cont / seg);
}

#[test]
fn end_of_wal_and_continuation_only_segment_as_pg_waldump_reports_them() {
    let wal = generated_wal();
    let f = wal.facts();
    let dir = wal.dir().as_os_str();
    // Without an end, PostgreSQL 15 reports the zeros after the last record.
    let out = run_pg_waldump([
        "-q".as_ref(),
        "-p".as_ref(),
        dir,
        f.get("FIRST_SEGMENT").unwrap().as_ref(),
        f.get("LAST_SEGMENT").unwrap().as_ref(),
    ])
    .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        format!(
            "pg_waldump: error: error in WAL record at {}: invalid record length at {}: wanted 24, got 0",
            format_lsn(f.lsn("SHUTDOWN_CHECKPOINT_LSN").unwrap()),
            format_lsn(f.lsn("END_OF_WAL").unwrap()),
        )
    );
    // The continuation-only segment has no record of its own.
    let cont = f.get("CONTINUATION_ONLY_SEGMENT").unwrap();
    let out = run_pg_waldump(["-p".as_ref(), dir, cont.as_ref()]).unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("could not find a valid record after"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn stats_total_counts_every_record() {
    let wal = generated_wal();
    let f = wal.facts();
    let out = run_pg_waldump([
        "--stats".as_ref(),
        "-p".as_ref(),
        wal.dir().as_os_str(),
        "-e".as_ref(),
        format_lsn(f.lsn("END_OF_WAL").unwrap()).as_ref(),
        f.get("FIRST_SEGMENT").unwrap().as_ref(),
        f.get("LAST_SEGMENT").unwrap().as_ref(),
    ])
    .unwrap();
    assert!(
        out.status.success(),
        "pg_waldump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = parse_waldump_stats(&String::from_utf8_lossy(&out.stdout)).unwrap();
    let records = all_records();
    assert_eq!(stats.total.count, records.len() as u64);
    assert_eq!(stats.end, f.lsn("END_OF_WAL").unwrap());
    assert_eq!(stats.start, records[0].lsn);
    let sum: u64 = stats.rows.iter().map(|r| r.count).sum();
    assert_eq!(sum, stats.total.count);
    let tot: u64 = records.iter().map(|r| u64::from(r.tot_len)).sum();
    assert_eq!(stats.total.combined_bytes, tot);
}
