//! One partition of a [`ReadBiasedLock`](super::ReadBiasedLock): a
//! reader-writer lock word, and the condition variable its blocked threads
//! park on.
//!
//! PostgreSQL: one of the `READ_BIASED_LOCK_STATE_COUNT` LWLocks of a
//! `ReadBiasedLWLock`.
//!
//! The word holds a reader count in its low bits, a writer bit and a parked
//! bit. A reader enters with one `fetch_add` and leaves with one
//! `fetch_sub`; if the writer bit was set when it arrived, it takes its
//! increment back and waits for the bit to clear. A writer sets the bit
//! first (which keeps new readers out) and then waits for the readers
//! already inside to leave, so a stream of readers cannot starve it.
//!
//! Parking: a waiter that has spun long enough takes the parking mutex, sets
//! the parked bit with a CAS on a word that still blocks it, and waits on the
//! condition variable. Every RMW that unblocks someone (the writer bit
//! cleared, or the last reader leaving while a writer waits) sees the parked
//! bit in the value it replaced and then wakes everyone under the mutex, so
//! no wake-up is lost: the modification order of the one word decides which
//! came first. The parked bit lives in the lock word (rather than in a
//! separate waiter count) so that a reader's release learns from its own RMW
//! whether to wake anyone: the fast paths read no other word and need no
//! `SeqCst` store-load ordering (which loom cannot check: it models `SeqCst`
//! accesses as acquire/release).

use crate::sync::backoff::{Backoff, Policy};
use crate::sync::{AtomicU64, Condvar, Mutex, Ordering};

/// Set while a writer owns this sub-lock or waits for its readers to leave.
const WRITER: u64 = 1 << 63;
/// Set while a thread may be parked on this sub-lock. Only ever set while
/// [`WRITER`] is (only a writer blocks anyone), and cleared with it.
const PARKED: u64 = 1 << 62;
/// The reader count: readers inside, plus arrivals about to back off.
/// 62 bits cannot overflow: each count is a live or leaked guard.
const READERS: u64 = PARKED - 1;
/// One reader in [`READERS`].
const ONE_READER: u64 = 1;

/// Before parking: 64 checks of the word with a CPU relax between them,
/// then 4 more, each after yielding the CPU (threads outnumber cores under
/// load, so the holder may need our CPU to finish).
const BEFORE_PARKING: Policy = Policy {
    spin_steps: if cfg!(loom) { 1 } else { 64 },
    doubling: false,
    yields: if cfg!(loom) { 0 } else { 4 },
    sleep_cap_us: None,
};

/// A reader-writer lock word without data; [`super::ReadBiasedLock`] pads
/// each to its own cache line and owns the data.
#[derive(Debug, Default)]
pub(super) struct SubLock {
    state: AtomicU64,
    parking: Mutex<()>,
    wakeup: Condvar,
}

impl SubLock {
    /// Enters as a reader if no writer owns or claims the sub-lock.
    ///
    /// Returns whether it entered; on `true` the caller must call
    /// [`SubLock::release_read`] exactly once.
    #[inline]
    pub(super) fn try_read(&self) -> bool {
        // Acquire: pairs with the writer's Release in release_write (RMWs
        // after it continue its release sequence), so the last writer's
        // changes to the data are visible inside our read section.
        let previous = self.state.fetch_add(ONE_READER, Ordering::Acquire);
        if previous & WRITER == 0 {
            return true;
        }
        // A writer is in or draining: take the increment back, waking the
        // writer if it was waiting on us.
        self.release_read();
        false
    }

    /// Enters as a reader, waiting while a writer owns or claims the sub-lock.
    #[inline]
    pub(super) fn read(&self) {
        while !self.try_read() {
            self.wait_while(|state| state & WRITER != 0);
        }
    }

    /// Leaves as a reader (or takes back a failed [`SubLock::try_read`]'s
    /// increment).
    #[inline]
    pub(super) fn release_read(&self) {
        // Release: our reads of the data happen before the changes of the
        // writer whose Acquire load sees the count reach zero.
        let previous = self.state.fetch_sub(ONE_READER, Ordering::Release);
        if previous & PARKED != 0 && previous & READERS == ONE_READER {
            self.wake_parked();
        }
    }

    /// Sets the writer bit, waiting while another writer holds it. New
    /// readers are kept out from here on; readers already inside may remain
    /// until [`SubLock::wait_for_readers`].
    #[inline]
    pub(super) fn claim_for_writer(&self) {
        // Acquire: pairs with the previous writer's Release in
        // release_write, so its changes to the data are visible to us. (The
        // Acquire load of wait_for_readers, which always follows, would do it
        // too; this keeps the claim correct on its own, at no cost on x86.)
        while self.state.fetch_or(WRITER, Ordering::Acquire) & WRITER != 0 {
            self.wait_while(|state| state & WRITER != 0);
        }
    }

    /// Waits until every reader has left a sub-lock whose writer bit the
    /// caller holds.
    #[inline]
    pub(super) fn wait_for_readers(&self) {
        // Acquire: when this sees no reader, it pairs with the last reader's
        // Release decrement, so the readers' accesses happen before ours.
        if self.state.load(Ordering::Acquire) & READERS != 0 {
            self.wait_while(|state| state & READERS != 0);
        }
    }

    /// Sets the writer bit only if there is neither a reader nor a writer.
    /// Returns whether it did; on `true` the caller owns the sub-lock
    /// exclusively and must call [`SubLock::release_write`].
    #[inline]
    pub(super) fn try_write(&self) -> bool {
        self.state
            // Acquire on success: pairs with the Release of the previous
            // writer and readers, whose accesses must happen before ours.
            // Relaxed on failure: nothing was acquired.
            .compare_exchange(0, WRITER, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Clears the writer bit and wakes the threads parked on it.
    #[inline]
    pub(super) fn release_write(&self) {
        // Release: publishes our changes to the data to the next reader or
        // writer, whose Acquire RMW reads this value or a later one.
        let previous = self.state.fetch_and(!(WRITER | PARKED), Ordering::Release);
        if previous & PARKED != 0 {
            self.wake_parked();
        }
    }

    /// Returns once `blocked` is false for the word: spins, then yields, then
    /// parks until woken by an RMW that saw the parked bit.
    #[cold]
    fn wait_while(&self, blocked: impl Fn(u64) -> bool) {
        let mut backoff = Backoff::new(BEFORE_PARKING);
        while !backoff.is_completed() {
            // Acquire: a waiter for readers to leave is done when this load
            // sees the count at zero, so it pairs with the last reader's
            // Release; other waiters retry an Acquire RMW afterwards.
            if !blocked(self.state.load(Ordering::Acquire)) {
                return;
            }
            backoff.snooze();
        }
        // The mutex guards no data, so a poisoned one is as good as any.
        let mut parked = self.parking.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            // Acquire: as above.
            let state = self.state.load(Ordering::Acquire);
            if !blocked(state) {
                return;
            }
            // Relaxed: the parked bit publishes no data. What matters is its
            // place in this word's modification order: an unblocking RMW
            // after it sees it and wakes us (after taking the mutex we hold
            // until we wait); one before it makes the CAS fail.
            if state & PARKED == 0
                && self
                    .state
                    .compare_exchange_weak(
                        state,
                        state | PARKED,
                        Ordering::Relaxed,
                        Ordering::Relaxed,
                    )
                    .is_err()
            {
                continue;
            }
            parked = self.wakeup.wait(parked).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Wakes every thread parked on this sub-lock; each re-checks its
    /// condition. Taking the mutex first means a waiter that set (or saw) the
    /// parked bit is already waiting, so the notification reaches it.
    #[cold]
    fn wake_parked(&self) {
        let _parked = self.parking.lock().unwrap_or_else(|e| e.into_inner());
        self.wakeup.notify_all();
    }
}
