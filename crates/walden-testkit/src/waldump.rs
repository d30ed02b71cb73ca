//! Parsers for `pg_waldump` 15's output: record lines and the `--stats` table.

use crate::lsn::parse_lsn;

/// A line of `pg_waldump` output that does not have the expected form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot parse pg_waldump output ({reason}): {line:?}")]
pub struct ParseError {
    /// The line, cut to 200 characters (record lines can be megabytes).
    pub line: String,
    /// What was wrong.
    pub reason: &'static str,
}

impl ParseError {
    fn new(line: &str, reason: &'static str) -> ParseError {
        ParseError {
            line: line.chars().take(200).collect(),
            reason,
        }
    }
}

/// One record line:
/// `rmgr: %-11s len (rec/tot): %6u/%6u, tx: %10u, lsn: %X/%08X, prev %X/%08X, desc: ...`
/// followed by `, blkref #N: rel S/D/R [fork F ]blk B[ FPW]` per block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaldumpRecord {
    /// Resource manager name, e.g. `"LogicalMessage"`.
    pub rmgr: String,
    /// `xl_tot_len` less the full-page image bytes.
    pub rec_len: u32,
    /// `xl_tot_len`.
    pub tot_len: u32,
    /// `xl_xid`.
    pub xid: u32,
    /// The record's LSN.
    pub lsn: u64,
    /// `xl_prev`.
    pub prev: u64,
    /// Everything after `desc: `, block references included, verbatim
    /// (pg_waldump leaves a trailing space after a record type with no
    /// details, as in `"SWITCH "`).
    pub desc: String,
    /// The block references, parsed from the end of `desc`, in order.
    pub blocks: Vec<WaldumpBlockRef>,
}

/// Whether a block reference carries a full-page image, as `pg_waldump`
/// marks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockImage {
    /// No image.
    None,
    /// ` FPW`: an image that redo applies.
    Apply,
    /// ` FPW for WAL verification`: an image only for consistency checks.
    Verify,
}

/// One `blkref #N: rel S/D/R [fork F ]blk B[ FPW]` of a record line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaldumpBlockRef {
    /// Block id (`N`).
    pub id: u8,
    /// Tablespace OID.
    pub spc: u32,
    /// Database OID.
    pub db: u32,
    /// Relation file node.
    pub rel: u32,
    /// Fork name when not the main fork (`fsm`, `vm`, `init`).
    pub fork: Option<String>,
    /// Block number.
    pub blk: u32,
    /// Its full-page image mark.
    pub image: BlockImage,
}

/// pg_waldump's note when the start LSN was not a record start:
/// `first record is after X, at Y, skipping over N bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkipNote {
    /// The requested start.
    pub requested: u64,
    /// The first record found.
    pub found: u64,
    /// Bytes skipped.
    pub bytes: u64,
}

/// `pg_waldump`'s standard output without `--stats`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaldumpOutput {
    /// The skip note, if printed.
    pub skipped: Option<SkipNote>,
    /// The record lines, in order.
    pub records: Vec<WaldumpRecord>,
}

fn field<'a>(
    line: &str,
    text: &'a str,
    sep: &str,
    reason: &'static str,
) -> Result<(&'a str, &'a str), ParseError> {
    text.split_once(sep)
        .ok_or_else(|| ParseError::new(line, reason))
}

fn number<T: std::str::FromStr>(
    line: &str,
    text: &str,
    reason: &'static str,
) -> Result<T, ParseError> {
    text.trim()
        .parse()
        .map_err(|_| ParseError::new(line, reason))
}

fn lsn(line: &str, text: &str, reason: &'static str) -> Result<u64, ParseError> {
    parse_lsn(text.trim()).ok_or_else(|| ParseError::new(line, reason))
}

impl WaldumpRecord {
    /// Parses one record line.
    pub fn parse(line: &str) -> Result<WaldumpRecord, ParseError> {
        let rest = line
            .strip_prefix("rmgr: ")
            .ok_or_else(|| ParseError::new(line, "no \"rmgr: \" at the start"))?;
        let (rmgr, rest) = field(line, rest, " len (rec/tot): ", "no \"len (rec/tot): \"")?;
        let (lens, rest) = field(line, rest, ", tx: ", "no \", tx: \"")?;
        let (rec, tot) = field(line, lens, "/", "no rec/tot")?;
        let (xid, rest) = field(line, rest, ", lsn: ", "no \", lsn: \"")?;
        let (at, rest) = field(line, rest, ", prev ", "no \", prev \"")?;
        let (prev, desc) = field(line, rest, ", desc: ", "no \", desc: \"")?;
        let mut parts = desc.split(", blkref #");
        parts.next();
        Ok(WaldumpRecord {
            rmgr: rmgr.trim_end().to_owned(),
            rec_len: number(line, rec, "bad rec length")?,
            tot_len: number(line, tot, "bad tot length")?,
            xid: number(line, xid, "bad tx")?,
            lsn: lsn(line, at, "bad lsn")?,
            prev: lsn(line, prev, "bad prev")?,
            desc: desc.to_owned(),
            blocks: parts
                .map(|b| WaldumpBlockRef::parse(line, b))
                .collect::<Result<_, _>>()?,
        })
    }
}

impl WaldumpRecord {
    /// The description without its block references.
    pub fn desc_without_blocks(&self) -> &str {
        self.desc
            .split_once(", blkref #")
            .map_or(self.desc.as_str(), |(d, _)| d)
    }
}

impl WaldumpBlockRef {
    /// Parses `N: rel S/D/R [fork F ]blk B[ FPW[ for WAL verification]]`
    /// (the text after `blkref #`); `line` only names the line in errors.
    fn parse(line: &str, text: &str) -> Result<WaldumpBlockRef, ParseError> {
        let (id, rest) = field(line, text, ": rel ", "no \"blkref #N: rel \"")?;
        let (node, rest) = field(line, rest, " ", "nothing after the relation")?;
        let mut node = node.split('/');
        let mut oid = || -> Result<u32, ParseError> {
            number(line, node.next().unwrap_or_default(), "bad relation S/D/R")
        };
        let (spc, db, rel) = (oid()?, oid()?, oid()?);
        let (fork, rest) = match rest.strip_prefix("fork ") {
            Some(r) => {
                let (f, r) = field(line, r, " ", "nothing after the fork")?;
                (Some(f.to_owned()), r)
            }
            None => (None, rest),
        };
        let rest = rest
            .strip_prefix("blk ")
            .ok_or_else(|| ParseError::new(line, "no \"blk \""))?;
        let (blk, note) = rest.split_once(' ').unwrap_or((rest, ""));
        let image = match note {
            "" => BlockImage::None,
            "FPW" => BlockImage::Apply,
            "FPW for WAL verification" => BlockImage::Verify,
            _ => return Err(ParseError::new(line, "unknown text after the block number")),
        };
        Ok(WaldumpBlockRef {
            id: number(line, id, "bad block id")?,
            spc,
            db,
            rel,
            fork,
            blk: number(line, blk, "bad block number")?,
            image,
        })
    }
}

impl SkipNote {
    /// Parses `first record is after X, at Y, skipping over N byte(s)`;
    /// `None` if the line is something else.
    pub fn parse(line: &str) -> Option<SkipNote> {
        let rest = line.strip_prefix("first record is after ")?;
        let (requested, rest) = rest.split_once(", at ")?;
        let (found, rest) = rest.split_once(", skipping over ")?;
        let bytes = rest
            .strip_suffix(" bytes")
            .or_else(|| rest.strip_suffix(" byte"))?;
        Some(SkipNote {
            requested: parse_lsn(requested)?,
            found: parse_lsn(found)?,
            bytes: bytes.parse().ok()?,
        })
    }
}

/// Parses `pg_waldump`'s standard output (record lines and the optional
/// skip note). Any other line is an error.
pub fn parse_waldump_output(stdout: &str) -> Result<WaldumpOutput, ParseError> {
    let mut out = WaldumpOutput::default();
    for line in stdout.lines() {
        if line.starts_with("rmgr: ") {
            out.records.push(WaldumpRecord::parse(line)?);
        } else if let Some(note) = SkipNote::parse(line) {
            out.skipped = Some(note);
        } else {
            return Err(ParseError::new(
                line,
                "neither a record line nor a skip note",
            ));
        }
    }
    Ok(out)
}

/// One row of the `--stats` table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsRow {
    /// `XLOG`, `Heap2`, ... (or `rmgr/TYPE` with `--stats=record`; `Total`).
    pub name: String,
    /// Records (`N`).
    pub count: u64,
    /// Record bytes without full-page images.
    pub record_bytes: u64,
    /// Full-page image bytes.
    pub fpi_bytes: u64,
    /// The two together.
    pub combined_bytes: u64,
}

/// `pg_waldump --stats` output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaldumpStats {
    /// First record read (`WAL statistics between X and ...`).
    pub start: u64,
    /// Where reading stopped.
    pub end: u64,
    /// The rows before `Total`, in order (rows with N = 0 included, as printed).
    pub rows: Vec<StatsRow>,
    /// The `Total` row.
    pub total: StatsRow,
}

/// Takes the last number of `text`, with its `( pct)` or `[pct]` after it if
/// any; returns what is left before it.
fn pop_number(line: &str, text: &str) -> Result<(String, u64), ParseError> {
    let bad = || ParseError::new(line, "expected a number (and percentage) at the end");
    let mut rest = text.trim_end();
    for (close, open) in [(')', '('), (']', '[')] {
        if rest.ends_with(close) {
            rest = rest[..rest.rfind(open).ok_or_else(bad)?].trim_end();
        }
    }
    let start = rest.rfind(' ').map_or(0, |i| i + 1);
    let n = rest[start..].parse().map_err(|_| bad())?;
    Ok((rest[..start].to_owned(), n))
}

impl StatsRow {
    /// Parses one row: `NAME N (pct) REC (pct) FPI (pct) COMBINED (pct)`, or
    /// the `Total` row with `[pct]`s.
    pub fn parse(line: &str) -> Result<StatsRow, ParseError> {
        let (rest, combined_bytes) = pop_number(line, line)?;
        let (rest, fpi_bytes) = pop_number(line, &rest)?;
        let (rest, record_bytes) = pop_number(line, &rest)?;
        let (name, count) = pop_number(line, &rest)?;
        let name = name.trim();
        if name.is_empty() {
            return Err(ParseError::new(line, "no row name"));
        }
        Ok(StatsRow {
            name: name.to_owned(),
            count,
            record_bytes,
            fpi_bytes,
            combined_bytes,
        })
    }
}

/// Parses `pg_waldump --stats[=record]` output.
pub fn parse_waldump_stats(stdout: &str) -> Result<WaldumpStats, ParseError> {
    let mut lines = stdout.lines();
    let first = lines.next().unwrap_or_default();
    let range = first
        .strip_prefix("WAL statistics between ")
        .and_then(|r| r.strip_suffix(':'))
        .and_then(|r| r.split_once(" and "))
        .ok_or_else(|| ParseError::new(first, "no \"WAL statistics between X and Y:\""))?;
    let (start, end) = (
        lsn(first, range.0, "bad start LSN")?,
        lsn(first, range.1, "bad end LSN")?,
    );
    let mut rows = Vec::new();
    let mut total = None;
    for line in lines {
        let trimmed = line.trim();
        if trimmed.is_empty()
            || trimmed.starts_with("Type ")
            || trimmed.bytes().all(|b| b == b'-' || b == b' ')
        {
            continue;
        }
        let row = StatsRow::parse(line)?;
        if row.name == "Total" {
            total = Some(row);
        } else if total.is_some() {
            return Err(ParseError::new(line, "a row after Total"));
        } else {
            rows.push(row);
        }
    }
    let total = total.ok_or_else(|| ParseError::new(stdout, "no Total row"))?;
    Ok(WaldumpStats {
        start,
        end,
        rows,
        total,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &str = "rmgr: LogicalMessage len (rec/tot):     55/    55, tx:        724, \
        lsn: 0/00700028, prev 0/00611B18, desc: MESSAGE transactional, prefix \"test\"; payload (0 bytes): ";

    #[test]
    fn record_line_fields() {
        let r = WaldumpRecord::parse(MESSAGE).unwrap();
        assert_eq!(r.rmgr, "LogicalMessage");
        assert_eq!((r.rec_len, r.tot_len, r.xid), (55, 55, 724));
        assert_eq!((r.lsn, r.prev), (0x700028, 0x611B18));
        assert_eq!(
            r.desc,
            "MESSAGE transactional, prefix \"test\"; payload (0 bytes): "
        );
        assert!(r.blocks.is_empty());

        let switch = "rmgr: XLOG        len (rec/tot):     24/    24, tx:          0, \
                      lsn: 0/0070E0B8, prev 0/0070E018, desc: SWITCH ";
        let r = WaldumpRecord::parse(switch).unwrap();
        assert_eq!((r.rmgr.as_str(), r.desc.as_str()), ("XLOG", "SWITCH "));
        assert_eq!(r.desc_without_blocks(), "SWITCH ");
        assert_eq!(r.lsn, 0x70E0B8);
    }

    #[test]
    fn block_references() {
        let line = "rmgr: Heap2       len (rec/tot):     64/  8256, tx:          0, \
            lsn: 1/00603F08, prev 0/00603E40, desc: VISIBLE cutoff xid 675 flags 0x03, \
            blkref #0: rel 1663/1/13396 fork vm blk 0 FPW, blkref #1: rel 1663/1/13396 blk 7, \
            blkref #3: rel 1664/0/1262 blk 4294967294 FPW for WAL verification";
        let r = WaldumpRecord::parse(line).unwrap();
        assert_eq!(r.lsn, 0x1_0060_3F08);
        assert_eq!(r.desc_without_blocks(), "VISIBLE cutoff xid 675 flags 0x03");
        assert!(r.desc.ends_with(
            "blk 7, blkref #3: rel 1664/0/1262 blk 4294967294 FPW for WAL verification"
        ));
        assert_eq!(
            r.blocks,
            vec![
                WaldumpBlockRef {
                    id: 0,
                    spc: 1663,
                    db: 1,
                    rel: 13396,
                    fork: Some("vm".into()),
                    blk: 0,
                    image: BlockImage::Apply
                },
                WaldumpBlockRef {
                    id: 1,
                    spc: 1663,
                    db: 1,
                    rel: 13396,
                    fork: None,
                    blk: 7,
                    image: BlockImage::None
                },
                WaldumpBlockRef {
                    id: 3,
                    spc: 1664,
                    db: 0,
                    rel: 1262,
                    fork: None,
                    blk: 4294967294,
                    image: BlockImage::Verify
                },
            ]
        );
    }

    #[test]
    fn malformed_record_lines_are_errors() {
        for (line, reason) in [
            ("rmgr XLOG", "no \"rmgr: \" at the start"),
            (
                "rmgr: XLOG len (rec/tot): 24/24, tx: 0, lsn: 0/1, prev 0/0",
                "no \", desc: \"",
            ),
            (
                "rmgr: XLOG len (rec/tot): 24/x, tx: 0, lsn: 0/1, prev 0/0, desc: A",
                "bad tot length",
            ),
            (
                "rmgr: XLOG len (rec/tot): 24/24, tx: 0, lsn: 0/1, prev 00, desc: A",
                "bad prev",
            ),
            (
                "rmgr: XLOG len (rec/tot): 24/24, tx: 0, lsn: 0/1, prev 0/0, desc: A, blkref #0: rel 1/2 blk 3",
                "bad relation S/D/R",
            ),
            (
                "rmgr: XLOG len (rec/tot): 24/24, tx: 0, lsn: 0/1, prev 0/0, desc: A, blkref #0: rel 1/2/3 blk 3 FPX",
                "unknown text after the block number",
            ),
        ] {
            assert_eq!(WaldumpRecord::parse(line).unwrap_err().reason, reason, "{line}");
        }
    }

    #[test]
    fn output_with_skip_note() {
        let stdout = format!(
            "first record is after 0/700100, at 0/700130, skipping over 48 bytes\n{MESSAGE}\n"
        );
        let out = parse_waldump_output(&stdout).unwrap();
        assert_eq!(
            out.skipped,
            Some(SkipNote {
                requested: 0x700100,
                found: 0x700130,
                bytes: 48
            })
        );
        assert_eq!(out.records.len(), 1);
        assert_eq!(
            SkipNote::parse("first record is after 0/1, at 0/8, skipping over 1 byte")
                .map(|n| n.bytes),
            Some(1)
        );
        assert!(parse_waldump_output("pg_waldump: error: x\n").is_err());
    }

    #[test]
    fn stats_table() {
        let stdout = "\
WAL statistics between 0/600100 and 0/A837A8:
Type                                           N      (%)          Record size      (%)             FPI size      (%)        Combined size      (%)
----                                           -      ---          -----------      ---             --------      ---        -------------      ---
XLOG                                          10 (  3.11)                  746 (  0.03)                  176 (  0.09)                  922 (  0.03)
CLOG                                           0 (  0.00)                    0 (  0.00)                    0 (  0.00)                    0 (  0.00)
Heap/INSERT+INIT                               1 (  0.30)                   61 (  0.00)                    0 (  0.00)                   61 (  0.00)
LogicalMessage                                18 (  5.59)              2678511 ( 99.08)                    0 (  0.00)              2678511 ( 92.64)
                                        --------                      --------                      --------                      --------
Total                                        322                       2703385 [93.50%]               187904 [6.50%]               2891289 [100%]
";
        let s = parse_waldump_stats(stdout).unwrap();
        assert_eq!((s.start, s.end), (0x600100, 0xA837A8));
        let names: Vec<_> = s.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(
            names,
            ["XLOG", "CLOG", "Heap/INSERT+INIT", "LogicalMessage"]
        );
        assert_eq!(
            s.rows[0],
            StatsRow {
                name: "XLOG".into(),
                count: 10,
                record_bytes: 746,
                fpi_bytes: 176,
                combined_bytes: 922
            }
        );
        assert_eq!(
            s.total,
            StatsRow {
                name: "Total".into(),
                count: 322,
                record_bytes: 2703385,
                fpi_bytes: 187904,
                combined_bytes: 2891289
            }
        );
    }

    #[test]
    fn malformed_stats_are_errors() {
        assert!(parse_waldump_stats("").is_err());
        assert!(parse_waldump_stats("WAL statistics between 0/1 and 0/2:\n").is_err());
        assert!(parse_waldump_stats(
            "WAL statistics between 0/1 and 0/2:\nXLOG 1 (  1.00) 2 ( 1.00) x ( 1.00) 4 ( 1.00)\n"
        )
        .is_err());
    }
}
