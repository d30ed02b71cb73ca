//! Where `walden dump` reads: the directory (`-p`, a directory in STARTSEG,
//! or the search of `.`, `./pg_wal` and `$PGDATA/pg_wal`) and the range the
//! `STARTSEG [ENDSEG]` arguments and `-s`/`-e` give, with pg_waldump's checks
//! and wording.
//!
//! PostgreSQL: `identify_target_directory`, `split_path` and the segment
//! argument handling of pg_waldump's `main`.

use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Result};
use walden::{DirSource, Lsn, SegmentSize, SegmentSource, TimeLineId};

use super::{usage, DumpArgs};

/// What to read.
#[derive(Debug)]
pub struct Range {
    /// The directory of segment files (or the one holding `pg_wal`).
    pub dir: PathBuf,
    /// Start LSN; `None`: the lowest-numbered segment.
    pub start: Option<Lsn>,
    /// End LSN; `None`: the end of WAL.
    pub end: Option<Lsn>,
    /// Timeline.
    pub timeline: TimeLineId,
}

/// True if `dir` (or its `pg_wal`) holds segment file `name`, or any
/// segment file when `name` is `None`.
fn has_wal(dir: &Path, name: Option<&str>) -> bool {
    [dir.to_path_buf(), dir.join("pg_wal")]
        .iter()
        .any(|d| match name {
            Some(n) => d.join(n).is_file(),
            None => DirSource::open(d).is_ok(),
        })
}

/// pg_waldump's search when no directory is given: `.`, `./pg_wal`, then
/// `$PGDATA/pg_wal`.
fn search_directory(name: Option<&str>) -> Result<PathBuf> {
    let mut candidates = vec![PathBuf::from("."), PathBuf::from("pg_wal")];
    if let Some(data) = std::env::var_os("PGDATA") {
        candidates.push(PathBuf::from(data).join("pg_wal"));
    }
    candidates
        .into_iter()
        .find(|d| has_wal(d, name))
        .ok_or_else(|| match name {
            Some(n) => anyhow!("could not locate WAL file \"{n}\""),
            None => anyhow!("could not find any WAL file"),
        })
}

/// A segment argument split into its directory (if it names one) and file name.
fn split(arg: &Path) -> (Option<PathBuf>, String) {
    let name = arg
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let dir = arg
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map(Path::to_path_buf);
    (dir, name)
}

/// The segment size of the WAL in `dir`, for the segment arguments.
fn segment_size(dir: &Path) -> Result<SegmentSize> {
    Ok(DirSource::open(dir)
        .map_err(|e| anyhow!("{e}"))?
        .segment_size())
}

/// The (timeline, segment number) of segment file `name`.
fn parse_segment(seg: SegmentSize, name: &str) -> Result<(TimeLineId, u64)> {
    seg.parse_file_name(name)
        .ok_or_else(|| anyhow!("could not parse WAL file name \"{name}\""))
}

impl Range {
    /// Resolves the directory and range from the arguments.
    pub fn resolve(args: &DumpArgs) -> Result<Range> {
        let mut range = Range {
            dir: args.path.clone().unwrap_or_default(),
            start: args.start,
            end: args.end,
            timeline: args.timeline.unwrap_or(1),
        };
        let mut segs = args.segments.iter();
        let first = segs.next();
        // Walden's older form: a directory where pg_waldump takes STARTSEG.
        let first = match first {
            Some(d) if args.path.is_none() && d.is_dir() => {
                range.dir = d.clone();
                if let Some(extra) = segs.next() {
                    return usage(Err(anyhow!(
                        "too many command-line arguments (first is \"{}\")",
                        extra.display()
                    )));
                }
                return Ok(range);
            }
            f => f,
        };
        let Some(first) = first else {
            if args.path.is_none() {
                range.dir = search_directory(None)?;
            }
            return Ok(range);
        };
        let (first_dir, first_name) = split(first);
        if args.path.is_none() {
            range.dir = match first_dir {
                Some(d) => d,
                None => search_directory(Some(&first_name))?,
            };
        }
        if !has_wal(&range.dir, Some(&first_name)) {
            bail!("could not locate WAL file \"{first_name}\"");
        }
        let seg = segment_size(&range.dir)?;
        let (tli, segno) = parse_segment(seg, &first_name)?;
        range.timeline = tli;
        let seg_start = seg.segment_start(segno);
        match range.start {
            None => range.start = Some(seg_start),
            Some(s) if seg.segno(s) != segno => {
                return usage(Err(anyhow!(
                    "start WAL location {s} is not inside file \"{first_name}\""
                )))
            }
            Some(_) => {}
        }
        let end_segno = match segs.next() {
            Some(last) => {
                let (_, last_name) = split(last);
                let (_, end_segno) = parse_segment(seg, &last_name)?;
                if end_segno < segno {
                    return usage(Err(anyhow!(
                        "ENDSEG {last_name} is before STARTSEG {first_name}"
                    )));
                }
                if let Some(e) = range.end {
                    if e != seg.segment_start(end_segno + 1) && seg.segno(e) != end_segno {
                        return usage(Err(anyhow!(
                            "end WAL location {e} is not inside file \"{last_name}\""
                        )));
                    }
                }
                end_segno
            }
            None => segno,
        };
        range.end.get_or_insert(seg.segment_start(end_segno + 1));
        Ok(range)
    }
}
