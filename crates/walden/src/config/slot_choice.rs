//! [`SlotChoice`]: how an inserter picks its insertion slot, by name.
//!
//! PostgreSQL: `lockToTry` in `WALInsertLockAcquire` (`Sticky`); seed 000's
//! patch 0002 (`Attempts`). The slots themselves are `insert::slots`.

/// How a thread picks its insertion slot.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SlotChoice {
    /// Keep using the same slot; move to the next one after having had to
    /// wait (PostgreSQL master's `lockToTry`).
    #[default]
    Sticky,
    /// Try `k` slots without blocking, the thread's current one first,
    /// stepping by a per-thread stride coprime with the slot count (so the
    /// walk reaches every slot), then block on the next one; the slot that
    /// was won becomes the thread's current one (seed 000's patch 0002,
    /// "several attempts to lock WALInsertLocks", whose `attempts` is `k`:
    /// its 2 is `attempts:2`). `k` is 1..=1024.
    Attempts(u32),
}

/// A slot-choice text that `SlotChoice`'s [`FromStr`](std::str::FromStr) impl does not accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown slot choice {0:?}: expected sticky or attempts:K (K = 1..=1024 slots tried without blocking)")]
pub struct UnknownSlotChoice(pub String);

impl std::str::FromStr for SlotChoice {
    type Err = UnknownSlotChoice;

    /// `sticky`, or `attempts:K` (also `attempts=K`, `attempts(K)`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || UnknownSlotChoice(s.to_owned());
        let lower = s.to_ascii_lowercase();
        if lower == "sticky" {
            return Ok(SlotChoice::Sticky);
        }
        let k = lower
            .strip_prefix("attempts")
            .map(|rest| {
                rest.trim_start_matches([':', '=', '('])
                    .trim_end_matches(')')
            })
            .ok_or_else(bad)?;
        match k.parse::<u32>() {
            Ok(k) if (1..=MAX_ATTEMPTS).contains(&k) => Ok(SlotChoice::Attempts(k)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for SlotChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SlotChoice::Sticky => f.write_str("sticky"),
            SlotChoice::Attempts(k) => write!(f, "attempts:{k}"),
        }
    }
}

crate::named_enum::serde_as_text!(SlotChoice);

/// Most slots [`SlotChoice::Attempts`] tries without blocking.
pub const MAX_ATTEMPTS: u32 = 1024;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slot_choices_parse_and_print() {
        assert_eq!("sticky".parse::<SlotChoice>().unwrap(), SlotChoice::Sticky);
        for text in ["attempts:2", "attempts=2", "Attempts(2)"] {
            assert_eq!(text.parse::<SlotChoice>().unwrap(), SlotChoice::Attempts(2));
        }
        assert_eq!(SlotChoice::Attempts(3).to_string(), "attempts:3");
        for bad in ["attempts:0", "attempts:1025", "attempts", "random"] {
            assert!(bad.parse::<SlotChoice>().is_err(), "{bad}");
        }
    }
}
