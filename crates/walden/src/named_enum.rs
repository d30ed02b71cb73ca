//! The configuration enums ([`crate::WalFormat`], [`crate::ReservationKind`],
//! [`crate::PageInitKind`], [`crate::Eviction`], [`crate::SyncMethod`],
//! [`crate::SegmentPrep`]) by
//! name: each has `ALL` and `name()`, and [`named_enum!`] derives `Display`
//! and `FromStr` from them (and, with the `serde` feature, serde by that
//! name: [`serde_as_text!`]). At the bottom of the layers, beside `lsn` and
//! `sync`, so that every layer that defines such an enum can use it; the
//! test that every enum names itself is in `config`, above them all.

/// A name that no variant of a configuration enum has.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {got:?}: expected {expected}")]
pub struct ParseKindError {
    what: &'static str,
    got: String,
    expected: String,
}

/// The variant of `all` whose `name` is `s`, case-insensitively and with
/// `-` and `_` alike; otherwise an error naming `what` and listing every
/// name.
pub(crate) fn parse_name<T: Copy>(
    s: &str,
    all: &[T],
    name: fn(T) -> &'static str,
    what: &'static str,
) -> Result<T, ParseKindError> {
    let key = |n: &str| n.to_ascii_lowercase().replace('_', "-");
    let wanted = key(s);
    all.iter()
        .copied()
        .find(|&v| key(name(v)) == wanted)
        .ok_or_else(|| ParseKindError {
            what,
            got: s.to_owned(),
            expected: one_of(all.iter().map(|&v| name(v))),
        })
}

/// `a`, `a or b`, `a, b or c`, ...
fn one_of(names: impl ExactSizeIterator<Item = &'static str>) -> String {
    let last = names.len().saturating_sub(1);
    let mut out = String::new();
    for (i, name) in names.enumerate() {
        if i > 0 {
            out.push_str(if i == last { " or " } else { ", " });
        }
        out.push_str(name);
    }
    out
}

/// Implements `Display` (the variant's `name()`) and `FromStr` (the
/// variant of `ALL`, or of the array named third, so named, by
/// [`parse_name`]) for a configuration enum; `$what` names the enum in
/// [`ParseKindError`]s.
macro_rules! named_enum {
    ($ty:ty, $what:literal) => {
        $crate::named_enum::named_enum!($ty, $what, ALL);
    };
    // `$names`: the array of variants parsed by name, where it is not
    // `ALL` (a variant kept out of `ALL`, as a bench-only one).
    ($ty:ty, $what:literal, $names:ident) => {
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.name())
            }
        }

        impl std::str::FromStr for $ty {
            type Err = $crate::named_enum::ParseKindError;

            /// Accepts the variant's `name()`, case-insensitively, with `-`
            /// and `_` alike.
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                $crate::named_enum::parse_name(s, &<$ty>::$names, <$ty>::name, $what)
            }
        }

        $crate::named_enum::serde_as_text!($ty);
    };
}

/// With the `serde` feature, implements `Serialize` (the `Display` text)
/// and `Deserialize` (by `FromStr`, its error as the message) for a type
/// whose text is its identity: the configuration enums, [`crate::Lsn`] and
/// [`crate::SlotChoice`]. Without it, nothing.
macro_rules! serde_as_text {
    ($ty:ty) => {
        #[cfg(feature = "serde")]
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    };
}

pub(crate) use {named_enum, serde_as_text};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_list_every_name() {
        let err = parse_name("x", &[1, 2, 3], |v| ["a", "b", "c"][v - 1], "thing");
        assert_eq!(
            err.unwrap_err().to_string(),
            "unknown thing \"x\": expected a, b or c"
        );
        let err = parse_name("x", &[1], |_| "a", "thing").unwrap_err();
        assert_eq!(err.to_string(), "unknown thing \"x\": expected a");
    }

    #[test]
    fn dashes_and_underscores_are_alike() {
        let names = |v: usize| ["open_sync", "one-page"][v];
        assert_eq!(parse_name("OPEN-SYNC", &[0, 1], names, "t"), Ok(0));
        assert_eq!(parse_name("One_Page", &[0, 1], names, "t"), Ok(1));
    }
}
