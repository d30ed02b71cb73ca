//! Loom model of the hand-off: a holder that releases and takes the lock
//! again at once (the evicting backend of seed 002), an ordinary locker and
//! a priority locker (the background writer). With `fair`, no ordinary
//! acquisition ever passes the waiting priority locker, in any interleaving,
//! and the lock excludes, whether ordinary lockers park at once or one
//! spins first. Mutant: `HandoffGateSkipped` (ordinary lockers ignore the
//! gate), caught by `a_skipped_gate_is_caught`.

use super::HandoffLock;
use crate::sync::backoff::Policy;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc, AtomicBool, Ordering};

/// Asserts that nobody else is inside, for the length of `f`.
fn exclusive(inside: &AtomicBool, f: impl FnOnce()) {
    // SeqCst: test bookkeeping; a second holder would see `true`.
    assert!(!inside.swap(true, Ordering::SeqCst), "two holders at once");
    f();
    // SeqCst: as above.
    inside.store(false, Ordering::SeqCst);
}

fn model(spin: Option<Policy>) {
    loom::model(move || {
        let lock = Arc::new(HandoffLock::new(0u32, true).spinning(spin));
        let inside = Arc::new(AtomicBool::new(false));
        let g = lock.lock();
        let (l1, i1) = (lock.clone(), inside.clone());
        let priority = thread::spawn(move || {
            let g = l1.lock_priority();
            exclusive(&i1, || ());
            g.overtaken()
        });
        let (l2, i2) = (lock.clone(), inside.clone());
        let ordinary = thread::spawn(move || {
            let mut g = l2.lock();
            exclusive(&i2, || *g += 1);
        });
        drop(g);
        {
            let mut g = lock.lock();
            exclusive(&inside, || *g += 1);
        }
        assert_eq!(
            priority.join().unwrap(),
            0,
            "an ordinary locker passed the priority waiter"
        );
        ordinary.join().unwrap();
        assert_eq!(*lock.lock(), 2);
    });
}

#[test]
fn no_ordinary_locker_passes_a_waiting_priority_locker() {
    model(None);
}

#[test]
fn no_spinning_locker_passes_a_waiting_priority_locker() {
    model(Some(Policy::YIELD_THEN_PARK));
}

#[test]
#[should_panic(expected = "an ordinary locker passed the priority waiter")]
fn a_skipped_gate_is_caught() {
    mutant::with(Mutant::HandoffGateSkipped, || {
        model(Some(Policy::YIELD_THEN_PARK))
    });
}
