//! Mutation checks of the models: each [`Mutant`] names one memory ordering
//! (or one compare-and-swap) that a correctness argument rests on, and a
//! model must fail when it is weakened.
//!
//! At the site, the ordering is written `mutant::order(Mutant::X, o)`
//! (a fence's `mutant::fence_order(Mutant::X, o)`, weakened to AcqRel; or
//! the CAS is guarded by `mutant::active(Mutant::X)`). In a normal build
//! all are `const` and return `o` / `false`, so the code is exactly the
//! unmutated code. Under `cfg(loom)` a model test selects a mutant for its
//! own OS thread with [`with`] (loom runs every model thread on the test's
//! OS thread, as coroutines), so one build of the models holds
//! every mutant and each `*_is_caught` test asserts that its model fails with
//! its mutant in place. The list of mutants and the model that kills each
//! is in `docs/reservation.md` and `docs/buffers.md`.

use super::Ordering;

/// A weakened ordering or a CAS made a plain store, at one named site.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mutant {
    /// `ReservedHead::fetch_add`: Release → Relaxed.
    HeadReserveRelaxed,
    /// `ReservedHead::reserved_end`: Acquire → Relaxed.
    HeadReadRelaxed,
    /// `SlotArray::try_lock`'s CAS: Acquire → Relaxed.
    SlotAcquireRelaxed,
    /// `SlotArray::unlock`'s add to the slot's `word`: SeqCst → Relaxed.
    SlotReleaseRelaxed,
    /// `SlotArray::advertise`'s store of `inserting_at`: SeqCst → Relaxed.
    AdvertiseRelaxed,
    /// `BufferRing::init_page`'s publication of `page_end`: Release → Relaxed.
    RingPublishRelaxed,
    /// `BufferRing::holds`'s read of `page_end`: Acquire → Relaxed.
    RingHoldsRelaxed,
    /// The cuckoo table's publication of a key (`try_insert`, `try_swap`):
    /// Release → Relaxed.
    CuckooPublishRelaxed,
    /// The cuckoo table's lock of a key (`try_consume`, `try_swap`):
    /// Acquire → Relaxed.
    CuckooLockRelaxed,
    /// `try_insert`'s CAS taking a free entry replaced by a check and a
    /// plain store.
    CuckooInsertStore,
    /// `try_consume`'s restore of a key that changed under its lock: the
    /// CAS replaced by a plain store (seed 003 v7's code).
    CuckooRestoreStore,
    /// `HandoffLock::lock` with the hand-off on: ordinary lockers ignore
    /// the gate that keeps them from passing a waiting priority locker.
    HandoffGateSkipped,
    /// `ReservedHead::reserve_switch`'s CAS on success: Release → Relaxed.
    HeadSwitchRelaxed,
    /// `LinkCell::publish`'s store of the low half: Release → Relaxed.
    LinkPublishRelaxed,
    /// `LinkCell::take`'s load of the low half: Acquire → Relaxed.
    LinkTakeRelaxed,
    /// `CooperativeInit::advance_from`'s fence between the page's
    /// publication and the counter's CAS: SeqCst → AcqRel.
    InitPublishFenceWeakened,
    /// `CooperativeInit::advance_from`'s fence between a successful CAS of
    /// the counter and the read of the next page's slot word: SeqCst →
    /// AcqRel.
    InitAdvanceFenceWeakened,
    /// `CooperativeInit::advance_from`'s CAS of `initialized_upto` on
    /// success: SeqCst → Relaxed.
    InitAdvanceRelaxed,
    /// `CooperativeInit::wait_initialized`'s load of `initialized_upto`:
    /// SeqCst → Relaxed.
    InitWaitRelaxed,
    /// `SyncLine::run`: a sync that returns publishes its own cover at
    /// once, not waiting for the syncs started before it.
    SyncPublishedOutOfOrder,
    /// `WaitQueue::notify_one` wakes without taking the queue's lock: a
    /// waiter between its announcement and its wait misses the wake-up.
    NotifyOneUnlocked,
    /// A `WaitQueue::seq_cst` notifier's check for waiters without the
    /// `SeqCst` fence that stands for its `SeqCst` load under loom: the
    /// load may miss a waiter's announcement while the waiter's re-check
    /// misses the change (store buffering).
    NotifyCheckUnfenced,
}

/// `o`, or Relaxed where mutant `m` is active.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) const fn order(_m: Mutant, o: Ordering) -> Ordering {
    o
}

/// `o`, the ordering of a fence, or AcqRel where mutant `m` is active (a
/// fence cannot be Relaxed).
#[cfg(not(loom))]
#[inline(always)]
pub(crate) const fn fence_order(_m: Mutant, o: Ordering) -> Ordering {
    o
}

/// True where mutant `m` is active: never, outside the models.
#[cfg(not(loom))]
#[inline(always)]
pub(crate) const fn active(_m: Mutant) -> bool {
    false
}

#[cfg(loom)]
std::thread_local! {
    /// The mutant the model running on this OS thread checks, if any.
    static ACTIVE: std::cell::Cell<Option<Mutant>> = const { std::cell::Cell::new(None) };
}

/// `o`, or Relaxed where mutant `m` is active.
#[cfg(loom)]
pub(crate) fn order(m: Mutant, o: Ordering) -> Ordering {
    if active(m) {
        Ordering::Relaxed
    } else {
        o
    }
}

/// `o`, the ordering of a fence, or AcqRel where mutant `m` is active.
#[cfg(loom)]
pub(crate) fn fence_order(m: Mutant, o: Ordering) -> Ordering {
    if active(m) {
        Ordering::AcqRel
    } else {
        o
    }
}

/// True where mutant `m` is active (see [`with`]).
#[cfg(loom)]
pub(crate) fn active(m: Mutant) -> bool {
    ACTIVE.with(|a| a.get() == Some(m))
}

/// Runs `f` (a model) with mutant `m` active on this OS thread; the
/// mutant is cleared afterwards, also when `f` panics (as it should).
#[cfg(all(test, loom))]
pub(crate) fn with<R>(m: Mutant, f: impl FnOnce() -> R) -> R {
    struct Clear;
    impl Drop for Clear {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(None));
        }
    }
    ACTIVE.with(|a| a.set(Some(m)));
    let _clear = Clear;
    f()
}
