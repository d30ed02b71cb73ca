//! The strategy knobs of `walden bench` (issue 4): the flags that set one
//! field of each log's [`Config`], shared by every suite that builds logs.
//!
//! Each suite starts from its own base configuration and flattens the
//! groups below for the knobs it takes as one value; a knob a suite sweeps
//! (`insert --format a,b`, `logical-1mb --page-init a,b`) stays that
//! suite's own list. A knob not given keeps the base's value, so the
//! defaults are the suite's (its help says which). Every configuration a
//! suite will run is checked before it runs any ([`check`]), so an
//! impossible combination is the library's one-line [`walden::ConfigError`].

use crate::design::Design;
use crate::units::parse_size_arg;
use clap::Args;
use walden::{
    Config, ConfigError, Eviction, PageInitKind, PageZeroing, ReservationKind, SegmentPrep,
    SlotChoice, WalFormat,
};

/// Sets the fields of a [`Config`] that were given on the command line.
pub trait Knob {
    /// Overrides `config`'s fields with the values given.
    fn apply(&self, config: &mut Config);
}

/// `--format` and `--reservation`, one value each.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct LayoutArgs {
    /// On-disk format: postgres15, self-lsn or compact-wal-id [default:
    /// the suite's, see below].
    #[arg(long)]
    pub format: Option<WalFormat>,
    /// Reservation design: spinlock, prev-link-table or prev-link-in-buffer
    /// for postgres15, unlinked for the others [default: the suite's if it
    /// suits the format, else the format's default].
    #[arg(long)]
    pub reservation: Option<ReservationKind>,
}

impl Knob for LayoutArgs {
    fn apply(&self, config: &mut Config) {
        if let Some(format) = self.format {
            config.format = format;
        }
        config.reservation = match self.reservation {
            Some(reservation) => reservation,
            None if config.reservation.pairs_with(config.format) => config.reservation,
            None => ReservationKind::default_for(config.format),
        };
    }
}

/// `--format` and `--reservation` as lists, for the suites that compare
/// the designs (`insert`, `mix`): every listed pair that works.
#[derive(Args, Clone, Debug, PartialEq)]
pub struct DesignArgs {
    /// Formats, comma-separated: each runs with every listed reservation
    /// design that serves it.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "postgres15,self-lsn,compact-wal-id"
    )]
    pub format: Vec<WalFormat>,
    /// Reservation designs, comma-separated (the ratios need spinlock);
    /// add dumb-ceiling for seed 003's bench-only ceiling in postgres15
    /// (`xl_prev` = start − 1, a log no reader accepts).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "spinlock,prev-link-table,prev-link-in-buffer,unlinked"
    )]
    pub reservation: Vec<ReservationKind>,
}

impl DesignArgs {
    /// The designs to compare ([`Design::select`]).
    pub fn designs(&self) -> Result<Vec<Design>, ConfigError> {
        Design::select(&self.format, &self.reservation)
    }
}

/// `--insert-slots` and `--slot-choice`, one value each.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct SlotArgs {
    /// Insertion slots, 1 to 1024 [default: the suite's, see below].
    #[arg(long)]
    pub insert_slots: Option<usize>,
    /// How a thread picks its insertion slot: sticky, or attempts:K
    /// [default: the suite's, see below].
    #[arg(long)]
    pub slot_choice: Option<SlotChoice>,
}

impl Knob for SlotArgs {
    fn apply(&self, config: &mut Config) {
        set(&mut config.insert_slots, self.insert_slots);
        set(&mut config.slot_choice, self.slot_choice);
    }
}

/// `--page-init`, one value.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct PageInitArg {
    /// How buffer pages are initialised: mapping-lock or cooperative
    /// [default: the suite's, see below].
    #[arg(long)]
    pub page_init: Option<PageInitKind>,
}

impl Knob for PageInitArg {
    fn apply(&self, config: &mut Config) {
        set(&mut config.page_init, self.page_init);
    }
}

/// `--eviction`, one value.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct EvictionArg {
    /// What an inserter writes when it needs an unwritten buffer page:
    /// one-page or batch [default: the suite's, see below].
    #[arg(long)]
    pub eviction: Option<Eviction>,
}

impl Knob for EvictionArg {
    fn apply(&self, config: &mut Config) {
        set(&mut config.eviction, self.eviction);
    }
}

/// `--buffers` and `--page-zeroing`, one value each, with the segment
/// knobs: the memory and the files of each log.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct BuffersArg {
    /// Buffer ring of each log, e.g. 16MB [default: the suite's, see below].
    #[arg(long, value_parser = parse_size_arg)]
    pub buffers: Option<u64>,
    /// What initialising a buffer page writes besides its header:
    /// header-only, or whole-page (zeroes the page first, as PostgreSQL
    /// and Walden before header-only initialisation did: the "before" of a
    /// before/after ratio; prev-link-in-buffer always zeroes whole pages)
    /// [default: the library's, header-only].
    #[arg(long)]
    pub page_zeroing: Option<PageZeroing>,
    /// `--segment-prep`, `--segments-ahead`.
    #[command(flatten)]
    pub segments: SegmentArgs,
}

impl Knob for BuffersArg {
    fn apply(&self, config: &mut Config) {
        set(&mut config.buffers, self.buffers);
        set(&mut config.page_zeroing, self.page_zeroing);
        self.segments.apply(config);
    }
}

/// `--segment-prep`, `--segments-ahead`, `--direct-io`, `--overlap-syncs`,
/// `--concurrent-syncs`, `--stream-after`, `--writeback-every`,
/// `--write-through-from`, `--crc-helper`, `--write-lock-spin` and
/// `--flush-wait-spin`: how each log's new segment files are prepared, how
/// many are kept ready ahead, whether the writer writes them with direct
/// I/O, whether the next flush leader writes (and syncs) while a sync is
/// in flight, whether large records stream to the file while they are
/// copied, whether write-back starts as a write goes, how large records
/// are written, and whether a waiter for the write lock, or for a round's
/// sync, yields before it sleeps.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct SegmentArgs {
    /// How a new segment file is prepared: zero-fill, fallocate or
    /// page-headers [default: the library's, zero-fill].
    #[arg(long)]
    pub segment_prep: Option<SegmentPrep>,
    /// Segments the background preallocator keeps ready ahead of the one
    /// being written, 0 to 1024 (0: the writer creates each one itself)
    /// [default: the library's, 2].
    #[arg(long)]
    pub segments_ahead: Option<usize>,
    /// Write segment files with direct I/O (O_DIRECT; with --sync
    /// open_datasync, O_DIRECT | O_DSYNC), whole pages straight from the
    /// ring; an error where the file system refuses it [default: off].
    #[arg(long)]
    pub direct_io: bool,
    /// Overlapped syncs: a flush leader hands the lead on after its writes,
    /// before its sync, so the next one writes while that sync is in
    /// flight: true or false [default: the library's, true].
    #[arg(long)]
    pub overlap_syncs: Option<bool>,
    /// With overlapped syncs, the fewest bytes a round must write (with
    /// concurrent syncs: its sync must make durable) to hand the lead on
    /// before its sync, e.g. 64KB (0: every round) [default: the library's,
    /// 64 KiB].
    #[arg(long, value_parser = parse_size_arg)]
    pub overlap_syncs_from: Option<u64>,
    /// Concurrent syncs: up to two syncs in flight at once, each through a
    /// file description of its own: true or false [default: the library's,
    /// false].
    #[arg(long)]
    pub concurrent_syncs: Option<bool>,
    /// Streaming of large records: every this many bytes an inserter
    /// copying a record asks the background writer to write the finished
    /// pages, e.g. 128KB (0: off) [default: the library's, off].
    #[arg(long, value_parser = parse_size_arg)]
    pub stream_after: Option<u64>,
    /// Write-back started as a write goes: with fsync or fdatasync and
    /// without --direct-io, each write is cut every this many bytes and the
    /// write-back of each cut started before the next, e.g. 128KB (0: off;
    /// a multiple of 8 KiB) [default: the library's, 256 KiB].
    #[arg(long, value_parser = parse_size_arg)]
    pub writeback_every: Option<u64>,
    /// Write-through of large records: a record of at least this many
    /// bytes has its whole pages written straight from the caller's bytes
    /// to the file, e.g. 256KB (0: off; not with --direct-io, open_datasync
    /// or open_sync) [default: the library's, 256 KiB].
    #[arg(long, value_parser = parse_size_arg)]
    pub write_through_from: Option<u64>,
    /// The CRC beside the write: a helper thread computes the CRC of a
    /// record written through while its inserter writes the record's pages
    /// (true/false) [default: the library's, false].
    #[arg(long)]
    pub crc_helper: Option<bool>,
    /// A thread that finds the write lock held yields while it stays held,
    /// one at a time, before it sleeps: true or false [default: the
    /// library's, true].
    #[arg(long)]
    pub write_lock_spin: Option<bool>,
    /// A flusher waiting for a round that syncs yields while it waits,
    /// for about a millisecond, before it sleeps: true or false [default:
    /// the library's, true].
    #[arg(long)]
    pub flush_wait_spin: Option<bool>,
}

impl Knob for SegmentArgs {
    fn apply(&self, config: &mut Config) {
        set(&mut config.segment_prep, self.segment_prep);
        set(&mut config.segments_ahead, self.segments_ahead);
        if self.direct_io {
            config.direct_io = true;
        }
        set(&mut config.overlap_syncs, self.overlap_syncs);
        set(&mut config.overlap_syncs_from, self.overlap_syncs_from);
        set(&mut config.concurrent_syncs, self.concurrent_syncs);
        set(&mut config.stream_after, self.stream_after);
        set(&mut config.writeback_every, self.writeback_every);
        set(&mut config.write_through_from, self.write_through_from);
        set(&mut config.crc_helper, self.crc_helper);
        set(&mut config.write_lock_spin, self.write_lock_spin);
        set(&mut config.flush_wait_spin, self.flush_wait_spin);
    }
}

/// Every knob but the format and reservation: what the suites that sweep
/// those two (`insert`, `mix`) take as one value each.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct InsertPathArgs {
    /// `--insert-slots`, `--slot-choice`.
    #[command(flatten)]
    pub slots: SlotArgs,
    /// `--page-init`.
    #[command(flatten)]
    pub page_init: PageInitArg,
    /// `--eviction`.
    #[command(flatten)]
    pub eviction: EvictionArg,
    /// `--buffers`.
    #[command(flatten)]
    pub buffers: BuffersArg,
}

impl Knob for InsertPathArgs {
    fn apply(&self, config: &mut Config) {
        self.slots.apply(config);
        self.page_init.apply(config);
        self.eviction.apply(config);
        self.buffers.apply(config);
    }
}

/// Every knob, one value each.
#[derive(Args, Clone, Debug, Default, PartialEq)]
pub struct StrategyArgs {
    /// `--format`, `--reservation`.
    #[command(flatten)]
    pub layout: LayoutArgs,
    /// The others.
    #[command(flatten)]
    pub insert_path: InsertPathArgs,
}

impl Knob for StrategyArgs {
    fn apply(&self, config: &mut Config) {
        self.layout.apply(config);
        self.insert_path.apply(config);
    }
}

fn set<T>(field: &mut T, value: Option<T>) {
    if let Some(value) = value {
        *field = value;
    }
}

/// `base` with the given knobs applied, in order.
pub fn configure(mut base: Config, knobs: &[&dyn Knob]) -> Config {
    for knob in knobs {
        knob.apply(&mut base);
    }
    base
}

/// Checks every configuration a suite will run, before it runs any: the
/// first bad one's [`walden::ConfigError`], whose message is one line.
pub fn check(configs: impl IntoIterator<Item = Config>) -> Result<(), ConfigError> {
    for config in configs {
        config.validate()?;
    }
    Ok(())
}

/// The knobs of `config` for a suite's JSON report, but for those in
/// `swept`, which the suite's cases set (and its results report).
pub fn config_json(config: &Config, swept: &[&str]) -> serde_json::Value {
    let mut json = serde_json::json!({
        "format": config.format.to_string(),
        "reservation": config.reservation.to_string(),
        "insert_slots": config.insert_slots,
        "slot_choice": config.slot_choice.to_string(),
        "page_init": config.page_init.to_string(),
        "page_zeroing": config.page_zeroing_in_effect().to_string(),
        "eviction": config.eviction.to_string(),
        "writer_init_ahead": config.writer_init_ahead,
        "buffers": config.buffers,
        "segment_size": config.segment_size,
        "segment_prep": config.segment_prep.to_string(),
        "segments_ahead": config.segments_ahead,
        "direct_io": config.direct_io,
        "overlap_syncs": config.overlap_syncs,
        "overlap_syncs_from": config.overlap_syncs_from,
        "concurrent_syncs": config.concurrent_syncs,
        "stream_after": config.stream_after,
        "writeback_every": config.writeback_every,
        "write_through_from": config.write_through_from,
        "crc_helper": config.crc_helper,
        "write_lock_spin": config.write_lock_spin,
        "flush_wait_spin": config.flush_wait_spin,
    });
    if let Some(fields) = json.as_object_mut() {
        fields.retain(|name, _| !swept.contains(&name.as_str()));
    }
    json
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        knobs: StrategyArgs,
    }

    fn configured(args: &[&str]) -> Config {
        let cli = Cli::try_parse_from([&["walden"], args].concat()).unwrap();
        configure(Config::default(), &[&cli.knobs])
    }

    #[test]
    fn knobs_not_given_keep_the_base() {
        assert_eq!(configured(&[]), Config::default());
    }

    #[test]
    fn every_knob_sets_its_field() {
        type Check = fn(&Config) -> bool;
        let cases: [(&[&str], Check); 20] = [
            // The base's spinlock does not suit compact-wal-id: its default does.
            (&["--format", "compact-wal-id"], |c| {
                (c.format, c.reservation) == (WalFormat::CompactWalId, ReservationKind::Unlinked)
            }),
            (&["--reservation", "prev-link-table"], |c| {
                (c.format, c.reservation) == (WalFormat::Postgres15, ReservationKind::PrevLinkTable)
            }),
            (&["--insert-slots", "64"], |c| c.insert_slots == 64),
            (&["--slot-choice", "attempts:2"], |c| {
                c.slot_choice == SlotChoice::Attempts(2)
            }),
            (&["--page-init", "cooperative"], |c| {
                c.page_init == PageInitKind::Cooperative
            }),
            (&["--eviction", "batch"], |c| c.eviction == Eviction::Batch),
            (&["--buffers", "1MB"], |c| c.buffers == 1 << 20),
            (&["--page-zeroing", "whole-page"], |c| {
                c.page_zeroing == PageZeroing::WholePage
            }),
            (&["--segment-prep", "fallocate"], |c| {
                c.segment_prep == SegmentPrep::Fallocate
            }),
            (&["--segments-ahead", "8"], |c| c.segments_ahead == 8),
            (&["--direct-io"], |c| c.direct_io),
            (&["--overlap-syncs", "false"], |c| !c.overlap_syncs),
            (&["--overlap-syncs-from", "1MB"], |c| {
                c.overlap_syncs_from == 1 << 20
            }),
            (&["--concurrent-syncs", "true"], |c| c.concurrent_syncs),
            (&["--stream-after", "128KB"], |c| {
                c.stream_after == 128 << 10
            }),
            (&["--writeback-every", "128KB"], |c| {
                c.writeback_every == 128 << 10
            }),
            (&["--write-through-from", "0"], |c| {
                c.write_through_from == 0
            }),
            (&["--crc-helper", "true"], |c| c.crc_helper),
            (&["--write-lock-spin", "false"], |c| !c.write_lock_spin),
            (&["--flush-wait-spin", "false"], |c| !c.flush_wait_spin),
        ];
        for (args, set) in cases {
            let c = configured(args);
            assert!(set(&c), "{args:?}: {c:?}");
            assert_ne!(c, Config::default(), "{args:?}");
            assert!(check([c]).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn an_impossible_pair_is_the_librarys_one_line_error() {
        let c = configured(&["--format", "self-lsn", "--reservation", "spinlock"]);
        let err = check([Config::default(), c]).unwrap_err().to_string();
        assert!(
            err.starts_with("reservation = spinlock does not suit format = self-lsn"),
            "{err}"
        );
        assert!(!err.contains('\n'), "{err}");
    }

    #[test]
    fn the_json_leaves_out_what_the_cases_sweep() {
        let json = config_json(&Config::default(), &["format", "reservation"]);
        assert_eq!(json["insert_slots"], 8);
        assert_eq!(json["page_init"], "mapping-lock");
        assert_eq!(json["page_zeroing"], "header-only");
        assert_eq!(json["segment_prep"], "zero-fill");
        assert_eq!(json["direct_io"], false);
        assert!(json.get("format").is_none() && json.get("reservation").is_none());
    }
}
