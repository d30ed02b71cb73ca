//! Per-resource-manager statistics, printed like `pg_waldump --stats`.
//!
//! PostgreSQL: `XLogRecStoreStats`, `XLogDumpDisplayStats`.

use std::collections::BTreeMap;
use std::io::{self, Write};

use walden::internals::maxalign;
use walden::message::record_type_label;
use walden::rmgr;
use walden::rmgr::{record_type_id, RM_MAX_BUILTIN_ID, RM_XLOG_ID, XLOG_SWITCH};
use walden::{Lsn, SegmentSize, WalRecord};

/// Counts of one resource manager.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    records: u64,
    /// Record bytes without page images.
    record_bytes: u64,
    /// Stored page-image bytes.
    fpi_bytes: u64,
}

impl Counts {
    fn combined_bytes(&self) -> u64 {
        self.record_bytes + self.fpi_bytes
    }
}

/// Statistics over the records read so far.
#[derive(Debug, Default)]
pub struct Stats {
    /// The first record read.
    first: Option<Lsn>,
    /// Where the next record would be read (pg_waldump's `EndRecPtr`).
    end: Lsn,
    by_rmgr: BTreeMap<u8, Counts>,
    /// Per record type (`--stats=record`): (rmgr, type id).
    by_type: BTreeMap<(u8, u8), Counts>,
    /// Print one row per record type instead of per rmgr.
    per_record: bool,
}

/// `part` as a percentage of `whole` (0 when `whole` is 0), computed as
/// PostgreSQL does so that the printed digits agree.
fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// Where pg_waldump's reader stands after `record`: its MAXALIGNed end, or
/// the next segment's start after a SWITCH (whose record takes the rest of
/// its segment).
fn read_end(record: &WalRecord, seg: SegmentSize) -> Lsn {
    let header = &record.header;
    if header.rmid == RM_XLOG_ID && header.record_type() == XLOG_SWITCH {
        seg.segment_start(seg.segno(record.lsn) + 1)
    } else {
        Lsn(maxalign(record.end.as_u64()))
    }
}

impl Stats {
    /// Statistics per rmgr, or per record type with `per_record`
    /// (`--stats=record`).
    pub fn new(per_record: bool) -> Stats {
        Stats {
            per_record,
            ..Stats::default()
        }
    }

    /// Sets where the statistics start: the first record read, even when
    /// filters leave it out (pg_waldump's `stats.startptr`).
    pub fn start_at(&mut self, lsn: Lsn) {
        self.first.get_or_insert(lsn);
    }

    /// The first record counted, if any.
    pub fn first_record(&self) -> Option<Lsn> {
        self.first
    }

    /// Counts `record`.
    pub fn add(&mut self, record: &WalRecord, seg: SegmentSize) {
        self.first.get_or_insert(record.lsn);
        self.end = read_end(record, seg);
        let rec_len = u64::from(record.rec_len());
        let fpi_len = u64::from(record.header.tot_len) - rec_len;
        let (rmid, info) = (record.header.rmid, record.header.info);
        let type_key = (rmid, record_type_id(rmid, info));
        for counts in [
            self.by_rmgr.entry(rmid).or_default(),
            self.by_type.entry(type_key).or_default(),
        ] {
            counts.records += 1;
            counts.record_bytes += rec_len;
            counts.fpi_bytes += fpi_len;
        }
    }

    /// Writes the table: every built-in resource manager, and each custom
    /// one that has records, then the totals.
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        let total = self
            .by_rmgr
            .values()
            .fold(Counts::default(), |t, c| Counts {
                records: t.records + c.records,
                record_bytes: t.record_bytes + c.record_bytes,
                fpi_bytes: t.fpi_bytes + c.fpi_bytes,
            });
        writeln!(
            out,
            "WAL statistics between {} and {}:",
            self.first.unwrap_or(Lsn::INVALID),
            self.end
        )?;
        for [name, n, size, fpi, combined] in [
            ["Type", "N", "Record size", "FPI size", "Combined size"],
            ["----", "-", "-----------", "--------", "-------------"],
        ] {
            let pct = if name == "Type" { "(%)" } else { "---" };
            writeln!(
                out,
                "{name:<40} {n:>7}{pct:>9} {size:>20}{pct:>9} {fpi:>20}{pct:>9} {combined:>20}{pct:>9}"
            )?;
        }
        for rmid in 0..=u8::MAX {
            let counts = self.by_rmgr.get(&rmid).copied().unwrap_or_default();
            let builtin = rmid <= RM_MAX_BUILTIN_ID;
            if !rmgr::is_valid_rmid(rmid) || (!builtin && counts.records == 0) {
                continue;
            }
            if !self.per_record {
                write_row(out, &rmgr::rmgr_name(rmid), &counts, &total)?;
                continue;
            }
            for ((_, ty), counts) in self.by_type.range((rmid, 0)..=(rmid, u8::MAX)) {
                let name = format!(
                    "{}/{}",
                    rmgr::rmgr_name(rmid),
                    record_type_label(rmid, ty << 4)
                );
                write_row(out, &name, counts, &total)?;
            }
        }
        let rule = "--------";
        writeln!(out, "{:<40}{rule:>8}{rule:>30}{rule:>30}{rule:>30}", "")?;
        writeln!(
            out,
            "{:<40} {:>7}{:<9} {:>20} {:<9}{:>20} {:<9}{:>20} [100%]",
            "Total",
            total.records,
            "",
            total.record_bytes,
            format!(
                "[{:.2}%]",
                percent(total.record_bytes, total.combined_bytes())
            ),
            total.fpi_bytes,
            format!("[{:.2}%]", percent(total.fpi_bytes, total.combined_bytes())),
            total.combined_bytes(),
        )
    }
}

/// One row of the table: name, then count, record, FPI and combined bytes,
/// each with its share of the total (PostgreSQL: `XLogDumpStatsRow`).
fn write_row(out: &mut impl Write, name: &str, c: &Counts, total: &Counts) -> io::Result<()> {
    writeln!(
        out,
        "{:<40} {:>7} ({:>6.2}) {:>20} ({:>6.2}) {:>20} ({:>6.2}) {:>20} ({:>6.2})",
        name,
        c.records,
        percent(c.records, total.records),
        c.record_bytes,
        percent(c.record_bytes, total.record_bytes),
        c.fpi_bytes,
        percent(c.fpi_bytes, total.fpi_bytes),
        c.combined_bytes(),
        percent(c.combined_bytes(), total.combined_bytes()),
    )
}
