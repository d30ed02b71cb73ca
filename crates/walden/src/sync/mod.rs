//! Concurrency primitives, and the one place that chooses between
//! `std::sync`, `loom` and `shuttle` for the code the models check.
//!
//! PostgreSQL: `s_lock.c`, the LWLock wait lists, seed 004's
//! `ReadBiasedLWLock`.
//!
//! Code on the insert path imports atomics, mutexes and threads from here, so
//! that building with `RUSTFLAGS="--cfg loom"` swaps in loom's model-checked
//! versions and every interleaving of a small model can be explored, and
//! `RUSTFLAGS="--cfg shuttle"` swaps in shuttle's, whose randomised
//! schedulers explore larger models (4–8 threads) that loom cannot. Code the
//! models do not run names `std::sync` itself: the handle's shared state and
//! its background threads (`wal`, `write::background`, the segment supply),
//! the control-file and storage locks (`segment`, `read`), and the atomics
//! over the ring's own memory (`buffer::ring`, `buffer::link_cell`), which
//! are std's by construction; the read-biased lock's thread-numbering
//! static, and unit tests that run outside the models. The models'
//! `loom::model`/`shuttle::check` calls name their checker directly. Every wait of the engine that spins
//! goes through [`backoff::Backoff`] (tests may spin as they please); the
//! waits on another thread's progress in the lock-free paths also carry a
//! [`watchdog::Watchdog`], and the orderings the models check can be
//! weakened one at a time by [`mutant`] under loom.

/// Re-exports the primitives under one set of names from `$backend`
/// (`std`, `loom` or `shuttle`, which mirror each other's paths).
macro_rules! primitives_from {
    ($backend:ident) => {
        #[allow(unused_imports)]
        pub(crate) use $backend::{
            hint,
            sync::{
                atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
                Arc, Condvar, Mutex, MutexGuard,
            },
            thread,
        };
    };
}

#[cfg(loom)]
primitives_from!(loom);
#[cfg(all(shuttle, not(loom)))]
primitives_from!(shuttle);
#[cfg(not(any(loom, shuttle)))]
primitives_from!(std);

pub mod async_waiters;
pub mod backoff;
pub mod commit_queue;
pub mod futex;
pub mod handoff_lock;
pub(crate) mod mutant;
pub mod read_biased;
#[cfg(all(test, shuttle))]
pub(crate) mod shuttle_support;
pub mod spinlock;
pub mod wait_queue;
pub mod watchdog;

pub use async_waiters::AsyncWaiters;
pub use commit_queue::{CommitQueue, Turn};
pub use handoff_lock::{HandoffGuard, HandoffLock};
pub use read_biased::ReadBiasedLock;
pub use spinlock::SpinLock;
pub use wait_queue::WaitQueue;
pub use watchdog::{StuckOn, Watchdog};
