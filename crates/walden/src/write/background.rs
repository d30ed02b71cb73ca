//! The background writer: a thread that writes and flushes finished WAL on
//! its own (PostgreSQL: the walwriter, `XLogBackgroundFlush`).
//!
//! It runs a round every `writer_delay`, or sooner once inserters have added
//! `writer_flush_after` bytes since its last round; a round makes everything
//! inserted before it durable, in as few large writes as the writer can
//! make. Flush callers then often find their records durable already, and
//! inserters find ring slots written instead of evicting them themselves.
//!
//! Streaming ([`crate::Config::stream_after`]): an inserter copying a large
//! record asks it for a write-only round ([`Wakeup::stream`]) every
//! `stream_after` bytes; such a round writes the finished pages without a
//! sync, leaves the schedule of the full rounds alone and marks the request
//! served ([`Wakeup::served`]).
//!
//! Asynchronous commit ([`crate::Config::async_commit`]) rests on it. Rounds
//! start on a schedule: the next one no later than `writer_delay` after the
//! last one started (at once if that round took longer). So a record
//! inserted at time `t` is durable by the end of the first round starting
//! after `t`: by `t + writer_delay +` the length of one round (waiting for
//! in-flight insertions, one write, one sync), as long as rounds take less
//! than `writer_delay`. A crash loses at most the records of that window.
//! If a write or sync fails the log is poisoned: those records never become
//! durable, and every later call reports the failure.
//!
//! The waiting uses `std` directly, not [`crate::sync`]: loom has no timed
//! wait, and nothing here is lock-free code to model.

use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_utils::CachePadded;

use crate::lsn::Lsn;
use crate::sync::{AtomicU64, Ordering};

/// How inserters wake the background writer early, and how it is stopped.
#[derive(Debug)]
pub(crate) struct Wakeup {
    /// Once an insert ends at or past this LSN, the inserter wakes the
    /// writer; `u64::MAX` while a wake-up is pending or there is no writer.
    kick_at: CachePadded<AtomicU64>,
    /// `writer_flush_after`, or `None` without a background writer.
    flush_after: Option<u64>,
    state: Mutex<WakeState>,
    wake: Condvar,
}

#[derive(Debug, Default)]
struct WakeState {
    kicked: bool,
    stop: bool,
    /// The highest point an inserter asked to stream to and no stream round
    /// has taken yet.
    stream_to: Option<Lsn>,
    /// The highest point a stream round has been run for.
    served: Lsn,
    /// Test only: [`Wakeup::stream`] returns once its request is served.
    #[cfg(test)]
    stream_waits: bool,
}

/// What ends the background writer's wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wake {
    /// A full round: its time has come, or an early wake-up.
    Round,
    /// A write-only round up to this point, for a streaming inserter.
    Stream(Lsn),
    /// The log is closing.
    Stop,
}

impl Wakeup {
    /// Early wake-ups every `flush_after` bytes from `start`; none if
    /// `flush_after` is `None` (no background writer).
    pub(crate) fn new(flush_after: Option<u64>, start: Lsn) -> Self {
        let kick_at = flush_after.map_or(u64::MAX, |n| start.0.saturating_add(n));
        Wakeup {
            kick_at: CachePadded::new(AtomicU64::new(kick_at)),
            flush_after,
            state: Mutex::new(WakeState::default()),
            wake: Condvar::new(),
        }
    }

    /// Called after an insert that ended at `end`: wakes the writer if
    /// `writer_flush_after` bytes have piled up since its last round.
    #[inline]
    pub(crate) fn inserted(&self, end: Lsn) {
        // Relaxed: a hint; a stale value only delays or repeats a wake-up.
        let at = self.kick_at.load(Ordering::Relaxed);
        // Relaxed: only one inserter wins the wake-up; the mutex below
        // carries the message.
        if end.0 >= at
            && self
                .kick_at
                .compare_exchange(at, u64::MAX, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            self.request();
        }
    }

    /// Wakes the writer for a round now (or right after the one in
    /// progress).
    pub(crate) fn request(&self) {
        self.lock().kicked = true;
        self.wake.notify_all();
    }

    /// Asks for a write-only round up to `at` (a point below which the
    /// caller's record is copied): the background writer writes the
    /// finished pages without a sync, before or after its next full round
    /// (see the module docs).
    pub(crate) fn stream(&self, at: Lsn) {
        let mut state = self.lock();
        match state.stream_to {
            // Not taken yet: the writer was woken for it, or is busy and
            // will find it; the request only grows.
            Some(pending) => state.stream_to = Some(pending.max(at)),
            None => {
                state.stream_to = Some(at);
                self.wake.notify_all();
            }
        }
        #[cfg(test)]
        while state.stream_waits && state.served < at && !state.stop {
            state = self.wait(state);
        }
    }

    /// The highest point a stream round has been run for.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn served(&self) -> Lsn {
        self.lock().served
    }

    /// Test only: from now on [`Wakeup::stream`] returns only once the
    /// background writer has run a stream round for its request (or the
    /// log closes), so a test sees the streamed pages written while the
    /// record is still being copied.
    #[cfg(all(test, not(any(loom, shuttle))))]
    pub(crate) fn wait_for_streams(&self) {
        self.lock().stream_waits = true;
    }

    /// A stream round for everything up to `at` has run.
    fn stream_served(&self, at: Lsn) {
        let mut state = self.lock();
        state.served = state.served.max(at);
        #[cfg(test)]
        self.wake.notify_all();
    }

    /// After a round that wrote up to `written`: the next early wake-up
    /// comes `writer_flush_after` bytes later.
    fn rearm(&self, written: Lsn) {
        if let Some(n) = self.flush_after {
            // Relaxed: a hint, as in `inserted`.
            self.kick_at
                .store(written.0.saturating_add(n), Ordering::Relaxed);
        }
    }

    /// Sleeps until `deadline`, an early wake-up or a stream request (taken
    /// first: a write-only round does not wait for insertions past it).
    fn wait_until(&self, deadline: Instant) -> Wake {
        let mut state = self.lock();
        loop {
            if state.stop {
                return Wake::Stop;
            }
            if let Some(at) = state.stream_to.take() {
                return Wake::Stream(at);
            }
            if std::mem::take(&mut state.kicked) {
                return Wake::Round;
            }
            let Some(left) = deadline.checked_duration_since(Instant::now()) else {
                return Wake::Round;
            };
            state = match self.wake.wait_timeout(state, left) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Test only: waits for a change of the state.
    #[cfg(test)]
    fn wait<'a>(
        &self,
        state: std::sync::MutexGuard<'a, WakeState>,
    ) -> std::sync::MutexGuard<'a, WakeState> {
        self.wake.wait(state).unwrap_or_else(|e| e.into_inner())
    }

    fn stop(&self) {
        self.lock().stop = true;
        self.wake.notify_all();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WakeState> {
        // A poisoned lock is recovered: the state is two flags.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The background writer thread; stopped and joined on drop.
#[derive(Debug)]
pub(crate) struct BackgroundWriter {
    wakeup: Arc<Wakeup>,
    thread: Option<JoinHandle<()>>,
}

impl BackgroundWriter {
    /// Starts the thread: every `delay`, or when `wakeup` says so, it runs
    /// `round` on `target` (while `target` lives) and re-arms the early
    /// wake-up from the LSN `round` returns (where it wrote up to); for a
    /// stream request up to `at` it runs `stream(target, at)` instead,
    /// which leaves the schedule of the full rounds as it is.
    pub(crate) fn start<T: Send + Sync + 'static>(
        target: Weak<T>,
        wakeup: Arc<Wakeup>,
        delay: Duration,
        round: fn(&T) -> Lsn,
        stream: fn(&T, Lsn),
    ) -> std::io::Result<Self> {
        let thread_wakeup = wakeup.clone();
        let thread = std::thread::Builder::new()
            .name("walden-writer".into())
            .spawn(move || {
                let mut next = Instant::now() + delay;
                loop {
                    let wake = thread_wakeup.wait_until(next);
                    let Some(target) = target.upgrade().filter(|_| wake != Wake::Stop) else {
                        return;
                    };
                    if let Wake::Stream(at) = wake {
                        stream(&target, at);
                        drop(target);
                        thread_wakeup.stream_served(at);
                        continue;
                    }
                    let started = Instant::now();
                    let written = round(&target);
                    drop(target);
                    thread_wakeup.rearm(written);
                    next = started + delay;
                }
            })?;
        Ok(BackgroundWriter {
            wakeup,
            thread: Some(thread),
        })
    }
}

impl Drop for BackgroundWriter {
    fn drop(&mut self) {
        self.wakeup.stop();
        if let Some(t) = self.thread.take() {
            // A panic in the thread has been reported on stderr already.
            let _ = t.join();
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn only_an_insert_past_the_threshold_wakes_and_only_once() {
        let w = Wakeup::new(Some(1000), Lsn(5000));
        w.inserted(Lsn(5999));
        assert!(!w.lock().kicked, "below the threshold");
        w.inserted(Lsn(6000));
        assert!(w.lock().kicked);
        w.lock().kicked = false;
        w.inserted(Lsn(7000));
        assert!(!w.lock().kicked, "one wake-up until the writer re-arms");
        w.rearm(Lsn(7000));
        w.inserted(Lsn(7999));
        assert!(!w.lock().kicked);
        w.inserted(Lsn(8000));
        assert!(w.lock().kicked);
    }

    #[test]
    fn without_a_writer_nothing_wakes() {
        let w = Wakeup::new(None, Lsn(0));
        w.inserted(Lsn(u64::MAX - 1));
        w.rearm(Lsn(10));
        w.inserted(Lsn(u64::MAX - 1));
        assert!(!w.lock().kicked);
    }

    #[test]
    fn a_wake_up_ends_the_wait_early_and_stop_ends_the_thread() {
        let w = Wakeup::new(Some(8192), Lsn(0));
        w.inserted(Lsn(8192));
        let far = Instant::now() + Duration::from_secs(3600);
        assert_eq!(
            w.wait_until(far),
            Wake::Round,
            "the pending wake-up returns at once"
        );
        w.stop();
        assert_eq!(w.wait_until(far), Wake::Stop);
    }

    #[test]
    fn stream_requests_merge_and_come_before_a_round() {
        let w = Wakeup::new(Some(8192), Lsn(0));
        w.request();
        w.stream(Lsn(0x4000));
        w.stream(Lsn(0x2000));
        let far = Instant::now() + Duration::from_secs(3600);
        assert_eq!(w.wait_until(far), Wake::Stream(Lsn(0x4000)), "the highest");
        assert_eq!(w.wait_until(far), Wake::Round, "the round is still due");
        assert_eq!(w.served(), Lsn(0));
        w.stream_served(Lsn(0x4000));
        w.stream_served(Lsn(0x2000));
        assert_eq!(w.served(), Lsn(0x4000), "never goes back");
    }

    #[test]
    fn rounds_run_until_the_target_is_gone() {
        static ROUNDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        fn round(_: &u8) -> Lsn {
            ROUNDS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Lsn(0)
        }
        fn stream(_: &u8, _: Lsn) {
            unreachable!("nothing asked to stream");
        }
        let target = Arc::new(7u8);
        let wakeup = Arc::new(Wakeup::new(Some(8192), Lsn(0)));
        let writer = BackgroundWriter::start(
            Arc::downgrade(&target),
            wakeup.clone(),
            Duration::from_millis(1),
            round,
            stream,
        )
        .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while ROUNDS.load(std::sync::atomic::Ordering::SeqCst) < 3 {
            assert!(Instant::now() < deadline, "no rounds on the timer");
            std::thread::yield_now();
        }
        drop(writer);
        assert_eq!(
            Arc::strong_count(&wakeup),
            1,
            "the thread has ended (and dropped its handle) when drop returns"
        );
    }
}
