//! [`AdoptDefaults`]: which of a [`Config`](super::Config)'s fields that
//! [`crate::Wal::open`] may take from the log on disk mean "the log's" when
//! they hold their default value, and which mean that value.

/// For each field [`crate::Wal::open`] may take from the log
/// ([`Config::adopting`](super::Config::adopting)): `true` if the field's
/// default value means "left unset: the log's", `false` if it means itself,
/// so that open refuses a log created with another value
/// ([`crate::ConfigError::Mismatch`]). A value other than the default always
/// means itself.
///
/// A plain value cannot tell "left at the default" from "set to the
/// default", so the construction says: `Config::default()` and struct
/// literals built on it leave every flag `true`, and each
/// [`ConfigBuilder`](super::ConfigBuilder) setter of such a field clears
/// its flag, so whatever the builder was told is kept as told.
/// [`Wal::create`](crate::Wal::create) ignores the flags.
///
/// ```
/// use walden::{AdoptDefaults, Config};
/// // Either: 16 MiB segments, and open refuses a log with others.
/// let built = Config::builder().segment_size(16 << 20).build()?;
/// let literal = Config {
///     adopt_defaults: AdoptDefaults { segment_size: false, ..AdoptDefaults::ALL },
///     ..Config::default()
/// };
/// assert_eq!(built, literal);
/// // Open takes the log's segment size and format:
/// assert_eq!(Config::default().adopt_defaults, AdoptDefaults::ALL);
/// # Ok::<(), walden::ConfigError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(default))]
pub struct AdoptDefaults {
    /// A default [`Config::format`](super::Config::format) is the log's.
    pub format: bool,
    /// A default [`Config::segment_size`](super::Config::segment_size) is
    /// the log's.
    pub segment_size: bool,
    /// A default [`Config::reservation`](super::Config::reservation) is the
    /// default for the log's format
    /// ([`ReservationKind::default_for`](super::ReservationKind::default_for))
    /// when the format is adopted.
    pub reservation: bool,
}

impl AdoptDefaults {
    /// Every default value is the log's (`Config::default()`'s).
    pub const ALL: AdoptDefaults = AdoptDefaults {
        format: true,
        segment_size: true,
        reservation: true,
    };
    /// Every value means itself: open adopts nothing.
    pub const NONE: AdoptDefaults = AdoptDefaults {
        format: false,
        segment_size: false,
        reservation: false,
    };
}

impl Default for AdoptDefaults {
    fn default() -> Self {
        AdoptDefaults::ALL
    }
}
