//! Waiting for another reserver without sleeping: spin with a CPU relax a
//! growing number of times, then yield the CPU to whoever we wait for
//! (with more threads than cores, often the preempted thread itself).
//!
//! The link protocols wait inside the insertion critical section, so the
//! wait neither sleeps on a timer nor blocks on anything that can fail or
//! unwind; it only gives the CPU away.

use super::{hint, thread};

/// Most CPU relaxes in one round before yielding instead.
const MAX_SPINS: u32 = if cfg!(loom) { 1 } else { 64 };

/// See the module docs.
#[derive(Debug, Default)]
pub struct Backoff {
    spins: u32,
}

impl Backoff {
    /// A backoff that starts with one relax.
    pub fn new() -> Self {
        Backoff::default()
    }

    /// One round of waiting: twice the relaxes of the last round, or a
    /// yield once those would exceed the cap.
    pub fn snooze(&mut self) {
        if self.spins < MAX_SPINS {
            for _ in 0..=self.spins {
                hint::spin_loop();
            }
            self.spins = (self.spins * 2).max(1);
        } else {
            thread::yield_now();
        }
    }
}
