//! One 8-byte prev-link field in buffer memory, read and written as two
//! 32-bit atomic halves so that a reader never sees it half-written.
//!
//! PostgreSQL: no counterpart in master; seed 003's original patch 0001
//! (`SetPrevRecPtr`, `GetPrevRecPtr`). The protocol that uses it (who
//! writes which field, and when) is in `insert::reserve::prev_link_in_buffer`;
//! the ring hands out cells over its pages ([`super::BufferRing::link_cell`]).

use crate::lsn::Lsn;
use crate::sync::backoff::{Backoff, Policy};
use crate::sync::mutant::{self, Mutant};
use std::sync::atomic::Ordering;

#[cfg(all(test, loom))]
mod loom_model;

/// A 32-bit atomic: std's over buffer memory, loom's in the models.
pub trait Atomic32 {
    /// An atomic load.
    fn load(&self, order: Ordering) -> u32;
    /// An atomic store.
    fn store(&self, value: u32, order: Ordering);
}

/// Implements [`Atomic32`] for an atomic type with inherent `load` and
/// `store` of that shape.
macro_rules! impl_atomic32 {
    ($atomic:ty) => {
        impl Atomic32 for $atomic {
            fn load(&self, order: Ordering) -> u32 {
                <$atomic>::load(self, order)
            }

            fn store(&self, value: u32, order: Ordering) {
                <$atomic>::store(self, value, order)
            }
        }
    };
}

impl_atomic32!(std::sync::atomic::AtomicU32);
#[cfg(loom)]
impl_atomic32!(loom::sync::atomic::AtomicU32);

/// One 8-byte prev-link field as two 32-bit atomic halves (little endian:
/// the low half first).
#[derive(Debug)]
pub struct LinkCell<'a, A> {
    low: &'a A,
    high: &'a A,
}

impl<'a, A: Atomic32> LinkCell<'a, A> {
    /// The field whose halves are `low` and `high`.
    pub fn new(low: &'a A, high: &'a A) -> Self {
        LinkCell { low, high }
    }

    /// Writes `prev` (a record start: its low half is never 0).
    pub fn publish(&self, prev: Lsn) {
        debug_assert!(prev.0 as u32 != 0, "{prev} cannot be a record start");
        // Relaxed: published by the Release store of the low half.
        self.high.store((prev.0 >> 32) as u32, Ordering::Relaxed);
        // Release: makes the high half visible to a reader that sees this.
        self.low.store(
            prev.0 as u32,
            mutant::order(Mutant::LinkPublishRelaxed, Ordering::Release),
        );
    }

    /// The prev-link if it has been written.
    pub fn take(&self) -> Option<Lsn> {
        // Acquire: pairs with the Release in publish; the high half read
        // after it is then the one written before it.
        let low = self
            .low
            .load(mutant::order(Mutant::LinkTakeRelaxed, Ordering::Acquire));
        if low == 0 {
            return None;
        }
        // Relaxed: ordered by the Acquire above.
        let high = self.high.load(Ordering::Relaxed);
        Some(Lsn(u64::from(high) << 32 | u64::from(low)))
    }

    /// Waits until the field is written and returns it, calling `check`
    /// between tries: its error (the log poisoned, so the predecessor will
    /// never write) ends the wait.
    pub fn wait<E>(&self, mut check: impl FnMut() -> Result<(), E>) -> Result<Lsn, E> {
        let mut backoff = Backoff::new(Policy::SPIN_THEN_YIELD);
        loop {
            if let Some(prev) = self.take() {
                return Ok(prev);
            }
            check()?;
            backoff.snooze();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU32;

    #[test]
    fn a_cell_reads_back_what_was_published_and_zero_as_absent() {
        let (low, high) = (AtomicU32::new(0), AtomicU32::new(0));
        let cell = LinkCell::new(&low, &high);
        assert_eq!(cell.take(), None);
        assert_eq!(cell.wait(|| Err("poisoned")), Err("poisoned"));
        cell.publish(Lsn(0x3_0000_2018));
        assert_eq!(cell.wait(|| Err("unused")), Ok(Lsn(0x3_0000_2018)));
    }
}
