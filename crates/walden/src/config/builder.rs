//! [`ConfigBuilder`]: a [`Config`] set field by field and validated once.
//!
//! The builder is the construction that stays source-compatible when a later
//! version adds a knob: a struct literal names every field (or relies on
//! `..Config::default()`), a builder names only the fields it changes.

use std::time::Duration;

use super::{AdoptDefaults, Config, ConfigError, RecoveryMode, ReservationKind, SlotChoice};
use crate::buffer::{Eviction, PageInitKind, PageZeroing, SwitchEviction};
use crate::format::WalFormat;
use crate::segment::SegmentPrep;
use crate::write::SyncMethod;

/// Builds a [`Config`]: starts from `Config::default()`, each method sets
/// the field of the same name, and [`ConfigBuilder::build`] validates the
/// whole (the same checks as [`Config::validate`]).
///
/// ```
/// use walden::{Config, ReservationKind, SyncMethod, WalFormat};
/// let config = Config::builder()
///     .format(WalFormat::SelfLsn)
///     .reservation(ReservationKind::default_for(WalFormat::SelfLsn))
///     .segment_size(1 << 20)
///     .sync_method(SyncMethod::None)
///     .build()?;
/// assert_eq!(config.segment_size, 1 << 20);
/// let bad = Config::builder().insert_slots(0).build();
/// assert_eq!(bad.unwrap_err().to_string(), "insert_slots = 0: must be between 1 and 1024");
/// # Ok::<(), walden::ConfigError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use = "a builder does nothing until `build` is called"]
pub struct ConfigBuilder {
    config: Config,
}

/// One setter per field, each documented by a link to the field it sets.
macro_rules! setters {
    ($($field:ident: $ty:ty),* $(,)?) => {
        impl ConfigBuilder {
            $(
                #[doc = concat!("Sets [`Config::", stringify!($field), "`].")]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.config.$field = value;
                    self
                }
            )*
        }
    };
}

setters! {
    adopt_defaults: AdoptDefaults,
    buffers: u64,
    insert_slots: usize,
    slot_choice: SlotChoice,
    prev_link_table_capacity: Option<usize>,
    page_init: PageInitKind,
    page_zeroing: PageZeroing,
    eviction: Eviction,
    eviction_chunk: u64,
    writer_delay: Option<Duration>,
    writer_flush_after: u64,
    async_commit: bool,
    sync_method: SyncMethod,
    recycle_segments: usize,
    segments_ahead: usize,
    segment_prep: SegmentPrep,
    direct_io: bool,
    overlap_syncs: bool,
    overlap_syncs_from: u64,
    concurrent_syncs: bool,
    stream_after: u64,
    writeback_every: u64,
    write_through_from: u64,
    crc_helper: bool,
    stuck_wait_timeout: Option<Duration>,
    recovery_mode: RecoveryMode,
    max_wal_size: Option<u64>,
    checkpoint_timeout: Option<Duration>,
    wal_keep_size: u64,
    wal_keep_for: Option<Duration>,
    wal_keep_max_size: Option<u64>,
    switch_eviction: SwitchEviction,
    write_lock_handoff: bool,
    write_lock_spin: bool,
    flush_wait_spin: bool,
    writer_init_ahead: u64,
    bench_unreadable_ceiling: bool,
    metrics_label: Option<String>,
}

/// The setters of the fields [`crate::Wal::open`] may take from the log:
/// each also clears the field's [`AdoptDefaults`] flag, so that the value
/// set is kept even when it is the default.
macro_rules! setters_kept_at_open {
    ($($field:ident: $ty:ty),* $(,)?) => {
        impl ConfigBuilder {
            $(
                #[doc = concat!("Sets [`Config::", stringify!($field), "`], and keeps it at open even \
                    if it is the default ([`AdoptDefaults`]).")]
                pub fn $field(mut self, value: $ty) -> Self {
                    self.config.$field = value;
                    self.config.adopt_defaults.$field = false;
                    self
                }
            )*
        }
    };
}

setters_kept_at_open! {
    format: WalFormat,
    segment_size: u64,
    reservation: ReservationKind,
}

impl ConfigBuilder {
    /// The configuration, if every field and combination is valid.
    pub fn build(self) -> Result<Config, ConfigError> {
        self.config.validate()?;
        Ok(self.config)
    }
}

impl Config {
    /// A [`ConfigBuilder`] starting from `Config::default()`.
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field set through the builder to a value other than its
    /// default. The literal names every field (no `..`), so a new field
    /// fails to compile here until it has a value and, below, a setter.
    #[test]
    fn every_field_has_a_setter() {
        let want = Config {
            format: WalFormat::SelfLsn,
            segment_size: 1 << 20,
            adopt_defaults: AdoptDefaults {
                format: true,
                ..AdoptDefaults::NONE
            },
            buffers: 1 << 20,
            insert_slots: 16,
            slot_choice: SlotChoice::Attempts(2),
            reservation: ReservationKind::Unlinked,
            prev_link_table_capacity: Some(64),
            page_init: PageInitKind::Cooperative,
            page_zeroing: PageZeroing::WholePage,
            eviction: Eviction::Batch,
            eviction_chunk: 1 << 20,
            writer_delay: None,
            writer_flush_after: 1 << 16,
            async_commit: true,
            sync_method: SyncMethod::OpenDatasync,
            recycle_segments: 9,
            segments_ahead: 5,
            segment_prep: SegmentPrep::Fallocate,
            direct_io: true,
            overlap_syncs: false,
            overlap_syncs_from: 1 << 20,
            concurrent_syncs: true,
            stream_after: 256 << 10,
            writeback_every: 0,
            write_through_from: 512 << 10,
            crc_helper: true,
            stuck_wait_timeout: None,
            recovery_mode: RecoveryMode::SkipAnyCorruptedRecords,
            max_wal_size: Some(64 << 20),
            checkpoint_timeout: Some(Duration::from_secs(30)),
            wal_keep_size: 2 << 20,
            wal_keep_for: Some(Duration::from_secs(60)),
            wal_keep_max_size: Some(8 << 20),
            switch_eviction: SwitchEviction::Chunked,
            write_lock_handoff: false,
            write_lock_spin: false,
            flush_wait_spin: false,
            writer_init_ahead: 64,
            bench_unreadable_ceiling: true,
            metrics_label: Some("orders".to_owned()),
        };
        let Config {
            format,
            segment_size,
            adopt_defaults,
            buffers,
            insert_slots,
            slot_choice,
            reservation,
            prev_link_table_capacity,
            page_init,
            page_zeroing,
            eviction,
            eviction_chunk,
            writer_delay,
            writer_flush_after,
            async_commit,
            sync_method,
            recycle_segments,
            segments_ahead,
            segment_prep,
            direct_io,
            overlap_syncs,
            overlap_syncs_from,
            concurrent_syncs,
            stream_after,
            writeback_every,
            write_through_from,
            crc_helper,
            stuck_wait_timeout,
            recovery_mode,
            max_wal_size,
            checkpoint_timeout,
            wal_keep_size,
            wal_keep_for,
            wal_keep_max_size,
            switch_eviction,
            write_lock_handoff,
            write_lock_spin,
            flush_wait_spin,
            writer_init_ahead,
            bench_unreadable_ceiling,
            metrics_label,
        } = want.clone();
        let built = Config::builder()
            .format(format)
            .segment_size(segment_size)
            .buffers(buffers)
            .insert_slots(insert_slots)
            .slot_choice(slot_choice)
            .reservation(reservation)
            .prev_link_table_capacity(prev_link_table_capacity)
            .page_init(page_init)
            .page_zeroing(page_zeroing)
            .eviction(eviction)
            .eviction_chunk(eviction_chunk)
            .writer_delay(writer_delay)
            .writer_flush_after(writer_flush_after)
            .async_commit(async_commit)
            .sync_method(sync_method)
            .recycle_segments(recycle_segments)
            .segments_ahead(segments_ahead)
            .segment_prep(segment_prep)
            .direct_io(direct_io)
            .overlap_syncs(overlap_syncs)
            .overlap_syncs_from(overlap_syncs_from)
            .concurrent_syncs(concurrent_syncs)
            .stream_after(stream_after)
            .writeback_every(writeback_every)
            .write_through_from(write_through_from)
            .crc_helper(crc_helper)
            .stuck_wait_timeout(stuck_wait_timeout)
            .recovery_mode(recovery_mode)
            .max_wal_size(max_wal_size)
            .checkpoint_timeout(checkpoint_timeout)
            .wal_keep_size(wal_keep_size)
            .wal_keep_for(wal_keep_for)
            .wal_keep_max_size(wal_keep_max_size)
            .switch_eviction(switch_eviction)
            .write_lock_handoff(write_lock_handoff)
            .write_lock_spin(write_lock_spin)
            .flush_wait_spin(flush_wait_spin)
            .writer_init_ahead(writer_init_ahead)
            .bench_unreadable_ceiling(bench_unreadable_ceiling)
            .metrics_label(metrics_label)
            // Last: the setters of format, segment size and reservation
            // clear their flags.
            .adopt_defaults(adopt_defaults);
        assert_eq!(built.config, want);
        assert_ne!(want, Config::default());
    }

    #[test]
    fn a_value_set_through_the_builder_is_not_adopted_even_at_its_default() {
        let default = Config::default();
        let config = Config::builder()
            .segment_size(default.segment_size)
            .build()
            .unwrap();
        assert_eq!(
            config.adopt_defaults,
            AdoptDefaults {
                segment_size: false,
                ..AdoptDefaults::ALL
            }
        );
        let opened = config.adopting(WalFormat::SelfLsn, 1 << 20);
        assert_eq!(opened.segment_size, default.segment_size, "kept");
        assert_eq!(opened.format, WalFormat::SelfLsn, "adopted");
        assert_eq!(opened.reservation, ReservationKind::Unlinked);
        let kept = Config::builder()
            .reservation(ReservationKind::Spinlock)
            .build()
            .unwrap()
            .adopting(WalFormat::SelfLsn, 1 << 20);
        assert_eq!(kept.reservation, ReservationKind::Spinlock);
        assert!(kept.validate().is_err(), "Spinlock does not suit SelfLsn");
    }

    #[test]
    fn build_refuses_what_validate_refuses() {
        let err = Config::builder()
            .async_commit(true)
            .writer_delay(None)
            .build();
        assert_eq!(err, Err(ConfigError::AsyncCommitWithoutWriter));
    }
}
