//! `walden dump` prints what `pg_waldump` prints, on fresh WAL from a real
//! PostgreSQL 15 server: the same record lines, the same statistics, the
//! same exit codes and error messages; `--json` carries the same records.

mod common;

use std::fs;
use std::process::Output;

use walden_testkit::{
    format_lsn, generated_wal, parse_lsn, parse_waldump_output, parse_waldump_stats, record_end,
    run_pg_waldump, GeneratedWal, WaldumpOutput, PAGE_SIZE,
};

/// A range to read: `None` for "from the first segment" / "to the end of WAL".
#[derive(Clone, Copy)]
struct Range {
    start: Option<u64>,
    end: Option<u64>,
}

fn walden_dump(wal: &GeneratedWal, range: Range, extra: &[&str]) -> Output {
    let mut cmd = common::walden();
    cmd.arg("dump").arg(wal.dir()).args(extra);
    if let Some(s) = range.start {
        cmd.args(["--start", &format_lsn(s)]);
    }
    if let Some(e) = range.end {
        cmd.args(["--end", &format_lsn(e)]);
    }
    cmd.output().unwrap()
}

/// `pg_waldump` over the same range (naming the first and last segment when
/// there is no start, as it needs a file or a start).
fn pg_waldump(wal: &GeneratedWal, range: Range, extra: &[&str]) -> Output {
    let f = wal.facts();
    let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    args.extend(["-p".to_owned(), wal.dir().display().to_string()]);
    if let Some(s) = range.start {
        args.extend(["-s".to_owned(), format_lsn(s)]);
    }
    if let Some(e) = range.end {
        args.extend(["-e".to_owned(), format_lsn(e)]);
    }
    if range.start.is_none() {
        args.push(f.get("FIRST_SEGMENT").unwrap().to_owned());
        args.push(f.get("LAST_SEGMENT").unwrap().to_owned());
    }
    run_pg_waldump(&args).unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// The error message, without the program's `NAME: error: ` prefix.
fn error_message(o: &Output, prefix: &str) -> Option<String> {
    String::from_utf8_lossy(&o.stderr)
        .lines()
        .find_map(|l| l.strip_prefix(prefix))
        .map(str::to_owned)
}

/// Asserts that both programs printed the same record lines, byte for byte,
/// the same skip note,
/// the same exit code and the same error message.
fn assert_same_dump(wal: &GeneratedWal, range: Range, what: &str) -> WaldumpOutput {
    let ours = walden_dump(wal, range, &[]);
    let theirs = pg_waldump(wal, range, &[]);
    let (ours_text, theirs_text) = (stdout(&ours), stdout(&theirs));
    let parsed = parse_waldump_output(&ours_text)
        .unwrap_or_else(|e| panic!("{what}: walden dump printed a line pg_waldump would not: {e}"));
    let expected = parse_waldump_output(&theirs_text).unwrap();
    assert_eq!(parsed.skipped, expected.skipped, "{what}: skip note");
    let pg_lines: Vec<&str> = theirs_text
        .lines()
        .filter(|l| l.starts_with("rmgr: "))
        .collect();
    for (i, (line, p)) in ours_text
        .lines()
        .filter(|l| l.starts_with("rmgr: "))
        .zip(&expected.records)
        .enumerate()
    {
        let at = format!("{what}: record #{i} at {}", format_lsn(p.lsn));
        let pg_line = pg_lines[i];
        assert!(line == pg_line, "{at}:\n{line:.300}\n{pg_line:.300}");
    }
    assert_eq!(
        parsed.records.len(),
        expected.records.len(),
        "{what}: record count"
    );
    assert_eq!(
        ours.status.code(),
        theirs.status.code(),
        "{what}: exit code"
    );
    assert_eq!(
        error_message(&ours, "walden: error: "),
        error_message(&theirs, "pg_waldump: error: "),
        "{what}: error message"
    );
    expected
}

fn whole(wal: &GeneratedWal) -> Range {
    Range {
        start: None,
        end: Some(wal.facts().lsn("END_OF_WAL").unwrap()),
    }
}

#[test]
fn lines_match_pg_waldump_over_the_whole_range() {
    let wal = generated_wal();
    let out = assert_same_dump(wal, whole(wal), "whole range");
    assert!(out.records.len() > 100);
    assert!(out.records.iter().any(|r| !r.blocks.is_empty()));
}

#[test]
fn end_of_wal_is_an_error_as_in_pg_waldump() {
    let wal = generated_wal();
    let range = Range {
        start: None,
        end: None,
    };
    let ours = walden_dump(wal, range, &[]);
    assert_eq!(ours.status.code(), Some(1));
    let f = wal.facts();
    assert_eq!(
        String::from_utf8_lossy(&ours.stderr).trim_end(),
        format!(
            "walden: error: error in WAL record at {}: invalid record length at {}: wanted 24, got 0",
            format_lsn(f.lsn("SHUTDOWN_CHECKPOINT_LSN").unwrap()),
            format_lsn(f.lsn("END_OF_WAL").unwrap())
        )
    );
    assert_same_dump(wal, range, "to the end of WAL");
}

#[test]
fn start_and_end_points_match_pg_waldump() {
    let wal = generated_wal();
    let f = wal.facts();
    let lsn = |k| f.lsn(k).unwrap();
    let end = Some(lsn("END_OF_WAL"));
    for (what, start, end) in [
        ("inside a record", lsn("MSG_10_LSN") + 0x18, end),
        ("a header split 16/8", lsn("EDGE_8176_LSN"), end),
        ("inside a header split 8/16", lsn("EDGE_8184_LSN") + 4, end),
        ("a page boundary", lsn("PAGE_END_LSN"), end),
        (
            "a page starting with a continuation",
            lsn("MSG_9000_LSN") / PAGE_SIZE * PAGE_SIZE + PAGE_SIZE,
            end,
        ),
        (
            "a continuation-only segment",
            lsn("CONTINUATION_ONLY_START"),
            end,
        ),
        (
            "messages up to the switch",
            lsn("MSG_0_LSN"),
            Some(lsn("SWITCH_LSN")),
        ),
        (
            "an end inside a record",
            lsn("MSG_0_LSN"),
            Some(lsn("MSG_20000_LSN") + 100),
        ),
        (
            "a continuation-only segment alone",
            lsn("CONTINUATION_ONLY_START"),
            Some(lsn("CONTINUATION_ONLY_START") + f.number("SEGMENT_SIZE").unwrap()),
        ),
    ] {
        let range = Range {
            start: Some(start),
            end,
        };
        assert_same_dump(wal, range, &format!("from {what}"));
    }
}

#[test]
fn json_lines_carry_the_same_records() {
    let wal = generated_wal();
    let seg = wal.facts().number("SEGMENT_SIZE").unwrap();
    let ours = walden_dump(wal, whole(wal), &["--json"]);
    assert_eq!(ours.status.code(), Some(0));
    let theirs = parse_waldump_output(&stdout(&pg_waldump(wal, whole(wal), &[]))).unwrap();
    let lines: Vec<serde_json::Value> = stdout(&ours)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), theirs.records.len());
    let segments: Vec<Vec<u8>> = wal
        .segment_names()
        .unwrap()
        .iter()
        .map(|n| fs::read(wal.dir().join(n)).unwrap())
        .collect();
    let first_seg = theirs.records[0].lsn / seg;
    for (j, p) in lines.iter().zip(&theirs.records) {
        let at = format!("record at {}", format_lsn(p.lsn));
        let lsn_field = |k: &str| parse_lsn(j[k].as_str().unwrap()).unwrap();
        assert_eq!(lsn_field("lsn"), p.lsn, "{at}");
        assert_eq!(lsn_field("prev"), p.prev, "{at}");
        assert_eq!(
            lsn_field("end"),
            record_end(p.lsn, p.tot_len.into(), seg),
            "{at}"
        );
        assert_eq!(j["xid"], p.xid, "{at}");
        assert_eq!(j["tot_len"], p.tot_len, "{at}");
        assert_eq!(j["rmgr"], p.rmgr.as_str(), "{at}");
        assert_eq!(j["desc"], p.desc.as_str(), "{at}");
        let rmgr_id = j["rmgr_id"].as_u64().unwrap();
        let info = j["info"].as_u64().unwrap();
        let kind = p.desc.split(' ').next().unwrap();
        match (p.rmgr.as_str(), kind) {
            ("XLOG", "SWITCH") => assert_eq!((rmgr_id, info & 0xF0), (0, 0x40), "{at}"),
            ("XLOG", "CHECKPOINT_SHUTDOWN") => {
                assert_eq!((rmgr_id, info & 0xF0), (0, 0x00), "{at}")
            }
            ("XLOG", "CHECKPOINT_ONLINE") => assert_eq!((rmgr_id, info & 0xF0), (0, 0x10), "{at}"),
            ("LogicalMessage", _) => assert_eq!((rmgr_id, info), (21, 0), "{at}"),
            ("Transaction", _) => assert_eq!(rmgr_id, 1, "{at}"),
            _ => {}
        }
        // The CRC is the one stored in the file, when the header is on one page.
        if p.lsn % PAGE_SIZE + 24 <= PAGE_SIZE {
            let file = &segments[(p.lsn / seg - first_seg) as usize];
            let off = (p.lsn % seg) as usize + 20;
            let stored = u32::from_le_bytes(file[off..off + 4].try_into().unwrap());
            assert_eq!(j["crc"], stored, "{at}");
        }
    }
}

#[test]
fn stats_match_pg_waldump() {
    let wal = generated_wal();
    for range in [
        whole(wal),
        Range {
            start: None,
            end: None,
        },
    ] {
        let ours = walden_dump(wal, range, &["--stats"]);
        let theirs = pg_waldump(wal, range, &["--stats"]);
        let (ours_text, theirs_text) = (stdout(&ours), stdout(&theirs));
        let (o, t) = (
            parse_waldump_stats(&ours_text).unwrap(),
            parse_waldump_stats(&theirs_text).unwrap(),
        );
        assert_eq!(o, t);
        assert!(t.rows.iter().filter(|r| r.count > 0).count() >= 5);
        assert!(t.total.fpi_bytes > 0);
        // Down to the spacing and the rounding of every percentage.
        assert_eq!(ours_text, theirs_text);
        assert_eq!(ours.status.code(), theirs.status.code());
        assert_eq!(
            error_message(&ours, "walden: error: "),
            error_message(&theirs, "pg_waldump: error: ")
        );
    }
}

#[test]
fn bad_arguments_are_refused_with_a_message() {
    let out = common::walden()
        .args(["dump", ".", "--start", "not-an-lsn"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not-an-lsn"));
    let missing = tempfile::tempdir().unwrap();
    let out = common::walden()
        .arg("dump")
        .arg(missing.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("walden: error: ") && err.contains("nowhere"),
        "{err}"
    );
}
