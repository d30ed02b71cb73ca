//! A parser of the `pg_waldump` record lines recorded next to the sample
//! WAL, and the same line made from a Walden record.

use walden::{Lsn, WalRecord};

/// One record line of pg_waldump's output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpLine {
    pub rmgr: String,
    pub rec_len: u32,
    pub tot_len: u32,
    pub xid: u32,
    pub lsn: Lsn,
    pub prev: Lsn,
    /// The text after `desc: ` as kept in the file.
    pub desc: String,
    /// The whole line as kept (its first 400 characters if it was cut).
    pub line: String,
    /// The line's length before it was cut, if it was.
    pub cut_from: Option<usize>,
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let rest = &s[s.find(start)? + start.len()..];
    Some(&rest[..rest.find(end)?])
}

/// Parses a `rmgr: ...` line; lines longer than 400 characters were stored as
/// their first 400 characters plus ` ...[line cut, N chars]`.
pub fn parse_dump_line(raw: &str) -> Option<DumpLine> {
    if !raw.starts_with("rmgr: ") {
        return None;
    }
    let (line, cut_from) = match raw.rfind(" ...[line cut, ") {
        Some(i) if raw.ends_with(" chars]") => {
            let n = raw[i + " ...[line cut, ".len()..raw.len() - " chars]".len()]
                .parse()
                .ok()?;
            (&raw[..i], Some(n))
        }
        _ => (raw, None),
    };
    let lens = between(line, "len (rec/tot): ", ", tx:")?;
    let (rec, tot) = lens.split_once('/')?;
    Some(DumpLine {
        rmgr: between(line, "rmgr: ", " len (rec/tot)")?.trim().to_owned(),
        rec_len: rec.trim().parse().ok()?,
        tot_len: tot.trim().parse().ok()?,
        xid: between(line, ", tx: ", ", lsn: ")?.trim().parse().ok()?,
        lsn: between(line, ", lsn: ", ", prev ")?.parse().ok()?,
        prev: between(line, ", prev ", ", desc: ")?.parse().ok()?,
        desc: line[line.find(", desc: ")? + ", desc: ".len()..].to_owned(),
        line: line.to_owned(),
        cut_from,
    })
}

/// The line pg_waldump prints for a record.
pub fn dump_line(r: &WalRecord) -> String {
    format!(
        "rmgr: {:<11} len (rec/tot): {:>6}/{:>6}, tx: {:>10}, lsn: {:#}, prev {:#}, desc: {}",
        r.rmgr_name(),
        r.rec_len(),
        r.tot_len(),
        r.header.xid,
        r.lsn,
        r.header.prev,
        r.describe()
    )
}

/// All record lines of `pg_waldump.txt`.
pub fn expected_records(dir: &std::path::Path) -> Vec<DumpLine> {
    let text = std::fs::read_to_string(dir.join("pg_waldump.txt")).unwrap();
    let lines: Vec<DumpLine> = text.lines().filter_map(parse_dump_line).collect();
    assert_eq!(
        lines.len(),
        text.lines().filter(|l| l.starts_with("rmgr: ")).count(),
        "every record line parses"
    );
    lines
}
