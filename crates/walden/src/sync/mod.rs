//! Concurrency primitives, and the one place that names `std::sync` or `loom`.
//!
//! Code on the insert path imports atomics, mutexes and threads from here, so
//! that building with `RUSTFLAGS="--cfg loom"` swaps in loom's model-checked
//! versions and every interleaving of a small model can be explored.

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::{
    hint,
    sync::{
        atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
    thread,
};

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::{
    hint,
    sync::{
        atomic::{fence, AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering},
        Arc, Condvar, Mutex, MutexGuard,
    },
    thread,
};

pub mod read_biased;
pub mod spinlock;
pub mod wait_queue;

pub use read_biased::ReadBiasedLock;
pub use spinlock::SpinLock;
pub use wait_queue::WaitQueue;
