//! [`Backoff`]: the one way a thread waits for another without blocking on
//! anything: spin with a CPU relax, then yield the CPU, then (per policy)
//! sleep with growing delays or hand over to the caller, which parks.
//!
//! PostgreSQL: `perform_spin_delay` (`s_lock.c`); crossbeam's `Backoff` and
//! parking_lot's `SpinWait` play the same part. Every lock and spin loop of
//! the engine waits through it: the spinlock ([`super::SpinLock`]), the
//! wait queue and the read-biased lock before they park, and the
//! reservation designs' waits for a predecessor's link. Each states its
//! [`Policy`]; where their waits differ (how long to spin, whether spins
//! grow, how long to yield, whether to sleep or park after), that is a
//! field of the policy, not another primitive.
//!
//! Contract: [`Backoff::snooze`] waits one step and never blocks on a lock
//! or unwinds, so it is safe inside the insert path's critical section; the
//! caller re-checks its condition between steps. [`Backoff::is_completed`]
//! turns true once a policy without sleeping has spun and yielded its fill:
//! the caller should park then (further snoozes only yield). Under
//! `cfg(loom)` and `cfg(shuttle)` the relax and the yield are the model
//! checker's (from [`crate::sync`]), so each step is a scheduling point, and
//! under loom a sleep is a yield.

use super::{hint, thread};

/// How a [`Backoff`] waits, step by step: `spin_steps` steps of CPU relaxes,
/// then `yields` steps that yield the CPU, then sleeps or completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// Steps that relax the CPU before the first yield.
    pub spin_steps: u32,
    /// False: one relax per spin step. True: step `k` relaxes 1, 2, 3, 5, 9,
    /// ... (`2^(k-1) + 1`) times, as crossbeam's `Backoff` grows.
    pub doubling: bool,
    /// Steps that yield the CPU after spinning; `u32::MAX`: yield for ever.
    pub yields: u32,
    /// After the yields: `Some(cap)` sleeps 1 µs, doubling up to `cap` µs
    /// per step (PostgreSQL's spin delay); `None` completes the backoff
    /// ([`Backoff::is_completed`]) so that the caller parks.
    pub sleep_cap_us: Option<u64>,
}

impl Policy {
    /// Waiting for another thread's progress where parking is not possible
    /// (the reservation designs' waits for a predecessor's link, inside the
    /// critical section): doubling spins up to 33 relaxes a step, then
    /// yield for ever, with more threads than cores often to the very
    /// thread waited for.
    pub const SPIN_THEN_YIELD: Policy = Policy {
        spin_steps: if cfg!(loom) { 1 } else { 7 },
        doubling: true,
        yields: u32::MAX,
        sleep_cap_us: None,
    };

    /// Spinning before parking (the wait queue, the commit queue): 200
    /// relaxes, a few microseconds, well under the cost of a wake-up; no
    /// yields, then the caller parks.
    pub const SPIN_THEN_PARK: Policy = Policy {
        spin_steps: if cfg!(loom) { 1 } else { 200 },
        doubling: false,
        yields: 0,
        sleep_cap_us: None,
    };

    /// No spinning: the caller parks at once. For waits known to be long
    /// (a flusher behind a round that syncs, a hundred microseconds or
    /// more), where a spin only takes the CPU from the threads that make
    /// progress.
    pub const PARK: Policy = Policy {
        spin_steps: 0,
        doubling: false,
        yields: 0,
        sleep_cap_us: None,
    };

    /// The write lock's one spinning waiter
    /// ([`super::HandoffLock::spinning`]) and the flushers waiting for a
    /// round that syncs (`Config::flush_wait_spin`): no relaxes, then 4096
    /// yields (about a millisecond where nothing else runs: a yield took
    /// 0.25 µs on the 2-vCPU host of docs/io.md), longer than a 1 MiB
    /// buffered write holds the lock or a sync of a few hundred kilobytes
    /// takes, then the caller parks. Yields, so that threads with work run
    /// first.
    pub const YIELD_THEN_PARK: Policy = Policy {
        spin_steps: 0,
        doubling: false,
        yields: if cfg!(loom) { 1 } else { 4096 },
        sleep_cap_us: None,
    };
}

/// One wait in progress, stepped by [`Backoff::snooze`]; see the module docs.
#[derive(Debug)]
pub struct Backoff {
    policy: Policy,
    /// Steps taken so far.
    step: u32,
    /// The next sleep, µs.
    sleep_us: u64,
}

impl Backoff {
    /// A wait that has taken no step yet.
    pub fn new(policy: Policy) -> Self {
        Backoff {
            policy,
            step: 0,
            sleep_us: 1,
        }
    }

    /// One CPU relax, without advancing the wait: for a thread that must
    /// not give its CPU away (another waits for something it holds).
    pub fn spin(&self) {
        hint::spin_loop();
    }

    /// Waits one step: relaxes, yields or sleeps, per the policy.
    pub fn snooze(&mut self) {
        let Policy {
            spin_steps,
            doubling,
            yields,
            sleep_cap_us,
        } = self.policy;
        if self.step < spin_steps {
            let relaxes = if doubling && self.step > 0 {
                (1u32 << (self.step - 1).min(30)) + 1
            } else {
                1
            };
            for _ in 0..relaxes {
                hint::spin_loop();
            }
        } else if self.step - spin_steps < yields {
            thread::yield_now();
        } else if let Some(cap) = sleep_cap_us {
            sleep(self.sleep_us);
            self.sleep_us = (self.sleep_us * 2).min(cap);
        } else {
            thread::yield_now();
        }
        self.step = self.step.saturating_add(1);
    }

    /// True once a policy without sleeps has taken all its spin and yield
    /// steps: time for the caller to park.
    pub fn is_completed(&self) -> bool {
        self.policy.sleep_cap_us.is_none()
            && self.step >= self.policy.spin_steps.saturating_add(self.policy.yields)
    }
}

/// Sleeps `us` microseconds (under loom, yields: the model has no time).
#[cfg(not(loom))]
fn sleep(us: u64) {
    std::thread::sleep(std::time::Duration::from_micros(us));
}

#[cfg(loom)]
fn sleep(_us: u64) {
    thread::yield_now();
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn completes_after_its_spins_and_yields_only_without_sleeps() {
        let parking = Policy {
            spin_steps: 3,
            doubling: false,
            yields: 2,
            sleep_cap_us: None,
        };
        let mut b = Backoff::new(parking);
        for _ in 0..5 {
            assert!(!b.is_completed());
            b.snooze();
        }
        assert!(b.is_completed());
        let sleeping = Policy {
            sleep_cap_us: Some(4),
            ..parking
        };
        let mut b = Backoff::new(sleeping);
        for _ in 0..8 {
            b.snooze();
        }
        assert!(!b.is_completed());
        assert_eq!(b.sleep_us, 4, "sleeps double up to the cap");
        assert!(Backoff::new(Policy::PARK).is_completed(), "parks at once");
        let mut b = Backoff::new(Policy::SPIN_THEN_YIELD);
        for _ in 0..100 {
            b.snooze();
        }
        assert!(!b.is_completed(), "yields for ever");
    }
}
