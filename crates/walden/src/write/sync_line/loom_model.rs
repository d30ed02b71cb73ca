//! loom models of the sync line: two callers, covering 1 and 2, each
//! through a sync that succeeds or fails as the model says. With two slots,
//! in every interleaving `flushed` ends at no more than the cover of the
//! longest run of syncs, in start order, that all succeeded (so never past
//! a failed sync), at least at every cover its caller was told is durable,
//! and, when no sync failed, at 2. With one slot, no two syncs are ever in
//! flight at once. Mutant: `SyncPublishedOutOfOrder` (a sync publishes its
//! own cover as soon as it returns), caught by
//! `publication_out_of_order_is_caught`.
//!
//! Run: `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p
//! walden --release --lib write::sync_line`.

use super::{Ran, Stopped, SyncLine, MAX_SLOTS};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc, AtomicBool, AtomicU64, Ordering};

/// The model's shared state, and what each slot's sync did.
#[derive(Default)]
struct Model {
    flushed: AtomicU64,
    poisoned: AtomicBool,
    /// Syncs started so far.
    syncs: AtomicU64,
    /// Per sync, in start order: it ran, its cover, and whether it failed.
    ran: [AtomicBool; MAX_SLOTS],
    cover: [AtomicU64; MAX_SLOTS],
    failed: [AtomicBool; MAX_SLOTS],
    /// A sync is in flight (the one-slot model's check).
    inside: AtomicBool,
}

/// One caller: makes `upto` durable through a sync that fails if `fails`;
/// checks what it is told against `flushed`.
fn caller(line: &SyncLine, m: &Model, upto: u64, fails: bool) -> Result<Ran, ()> {
    let r = line.run(upto, &m.flushed, &m.poisoned, |slot| {
        // SeqCst: model bookkeeping, read after every thread has joined
        // (or, for `inside`, by the other sync: two in flight would both
        // see it set).
        assert!(
            line.slots() > 1 || !m.inside.swap(true, Ordering::SeqCst),
            "two syncs in flight on one slot"
        );
        // Sync n takes slot n % slots, and there are two syncs at most: with
        // two slots the slot is the start order; with one, the syncs do not
        // overlap, so the order they get here in is.
        let n = m.syncs.fetch_add(1, Ordering::SeqCst) as usize;
        let n = if line.slots() > 1 { slot } else { n };
        m.ran[n].store(true, Ordering::SeqCst);
        m.cover[n].store(upto, Ordering::SeqCst);
        m.failed[n].store(fails, Ordering::SeqCst);
        thread::yield_now();
        m.inside.store(false, Ordering::SeqCst);
        if fails {
            Err(())
        } else {
            Ok(())
        }
    });
    match r {
        Ok(ran) => {
            // SeqCst: model bookkeeping.
            let flushed = m.flushed.load(Ordering::SeqCst);
            assert!(flushed >= upto, "told {upto} is durable at {flushed}");
            Ok(ran)
        }
        Err(Stopped::Poisoned) | Err(Stopped::Failed(())) => {
            // SeqCst: model bookkeeping.
            assert!(m.poisoned.load(Ordering::SeqCst), "an error without poison");
            Err(())
        }
    }
}

/// Two callers on a line of `slots`, the first's sync failing if
/// `first_fails`, the second's if `second_fails`.
fn model(slots: usize, first_fails: bool, second_fails: bool) {
    loom::model(move || {
        let line = Arc::new(SyncLine::new(slots));
        let m = Arc::new(Model::default());
        let (l, mm) = (line.clone(), m.clone());
        let other = thread::spawn(move || caller(&l, &mm, 2, second_fails));
        let first = caller(&line, &m, 1, first_fails);
        let second = other.join().unwrap();
        // SeqCst: model bookkeeping, after the join.
        let flushed = m.flushed.load(Ordering::SeqCst);
        // The longest run of successes in start order.
        let mut may_publish = 0;
        for n in 0..MAX_SLOTS {
            if !m.ran[n].load(Ordering::SeqCst) || m.failed[n].load(Ordering::SeqCst) {
                break;
            }
            may_publish = may_publish.max(m.cover[n].load(Ordering::SeqCst));
        }
        assert!(
            flushed <= may_publish,
            "flushed {flushed} passed a sync that failed or had not returned (may publish {may_publish})"
        );
        if !first_fails && !second_fails {
            assert_eq!(flushed, 2);
            assert!(first.is_ok() && second.is_ok());
        }
    });
}

#[test]
fn two_slots_publish_in_start_order_and_never_past_a_failure() {
    for (a, b) in [(false, false), (true, false), (false, true), (true, true)] {
        model(2, a, b);
    }
}

#[test]
fn one_slot_runs_one_sync_at_a_time() {
    for (a, b) in [(false, false), (true, false), (false, true)] {
        model(1, a, b);
    }
}

#[test]
#[should_panic(expected = "passed a sync that failed or had not returned")]
fn publication_out_of_order_is_caught() {
    mutant::with(Mutant::SyncPublishedOutOfOrder, || model(2, true, false));
}
