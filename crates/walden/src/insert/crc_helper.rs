//! The CRC helper ([`crate::Config::crc_helper`]): a thread of the log's
//! own that computes a large record's body CRC while the record's inserter
//! writes the record's pages (docs/io.md, "The CRC beside the write").
//!
//! Contract. [`CrcHelper::start`] hands the helper one job, the CRC-32C of
//! a record body's parts, if no other inserter's job is in hand (it
//! returns `None` then, and the caller computes the CRC itself); the
//! [`Ticket`] it returns gives the result ([`Ticket::finish`]) and, until
//! the helper has finished with the job, keeps the caller from going on:
//! dropping a ticket unfinished waits for the helper too, so the bytes the
//! job borrows outlive the helper's reading of them on every path. A job
//! the helper has not taken by then is taken back and computed by the
//! ticket's own thread: a helper that is slow to be scheduled (a busy or
//! shared machine) costs a commit nothing but the CRC it would have
//! computed anyway, never a wait for the helper to start. After a
//! job the helper spins a little (a few hundred microseconds, so that the
//! next large record of a stream finds it awake), then parks: an idle log
//! does not spin. Dropping the helper stops its thread and joins it.

#[cfg(all(test, loom))]
mod loom_model;

use crate::format::crc;
use crate::sync::backoff::{Backoff, Policy};
use crate::sync::{thread, Arc, AtomicBool, Condvar, Mutex, MutexGuard, Ordering};

/// How the idle helper waits for its next job: spins, then yields the CPU
/// for a few hundred microseconds in all (the gap between two large
/// records of a stream; a wake-up from parking costs tens of
/// microseconds), then parks.
const IDLE: Policy = Policy {
    spin_steps: if cfg!(loom) { 1 } else { 1000 },
    doubling: false,
    yields: if cfg!(loom) { 0 } else { 1000 },
    sleep_cap_us: None,
};

/// How an inserter waits for its CRC: the same, shorter (the CRC of a
/// record usually ends before its write does).
const RESULT: Policy = Policy {
    spin_steps: if cfg!(loom) { 1 } else { 1000 },
    doubling: false,
    yields: if cfg!(loom) { 0 } else { 100 },
    sleep_cap_us: None,
};

/// A body's parts, as raw slices: the job's bytes, borrowed from the
/// inserter, which waits for the job's end before they can go
/// ([`Ticket`]).
#[derive(Clone, Copy)]
struct Job {
    parts: [(*const u8, usize); 2],
}

impl Job {
    /// The CRC of the job's bytes.
    ///
    /// # Safety
    /// The bytes are still lent: the inserter that handed them over waits
    /// for the job's end (the module contract).
    unsafe fn crc(&self) -> u32 {
        // SAFETY: the caller's.
        let parts = self
            .parts
            .map(|(ptr, len)| unsafe { std::slice::from_raw_parts(ptr, len) });
        crc::parts_crc(&parts)
    }
}

// SAFETY: the pointers are only read, by one thread at a time, while the
// inserter that lent them waits for the job to end (the module contract).
unsafe impl Send for Job {}

/// What the lock protects.
#[derive(Default)]
struct Slot {
    /// The job handed over, until the helper takes it.
    job: Option<Job>,
    /// The last job's CRC, until its ticket takes it.
    result: Option<u32>,
    /// The helper is to stop.
    stop: bool,
}

struct Shared {
    /// An inserter holds the helper (from `start` to the ticket's end).
    busy: AtomicBool,
    /// A job is in the slot: the idle helper's spin reads this instead of
    /// taking the lock.
    posted: AtomicBool,
    /// A result is in the slot: the waiting inserter's spin reads this.
    ready: AtomicBool,
    slot: Mutex<Slot>,
    /// Signalled when a job is posted or the helper is to stop.
    job_posted: Condvar,
    /// Signalled when a result is in the slot.
    result_ready: Condvar,
}

/// Locks the slot, recovering it if a holder panicked (a job's CRC does
/// not panic; the slot's fields stay consistent).
fn lock(m: &Mutex<Slot>) -> MutexGuard<'_, Slot> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// See the module docs.
pub(crate) struct CrcHelper {
    shared: Arc<Shared>,
    thread: Option<thread::JoinHandle<()>>,
}

impl std::fmt::Debug for CrcHelper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrcHelper").finish_non_exhaustive()
    }
}

impl CrcHelper {
    /// Starts the helper's thread.
    pub(crate) fn new() -> std::io::Result<Self> {
        let mut helper = Self::without_thread();
        let theirs = helper.shared.clone();
        helper.thread = Some(spawn(move || run(&theirs))?);
        Ok(helper)
    }

    /// A helper whose thread is not started (yet): every job stays posted
    /// until its ticket takes it back.
    fn without_thread() -> Self {
        CrcHelper {
            shared: Arc::new(Shared {
                busy: AtomicBool::new(false),
                posted: AtomicBool::new(false),
                ready: AtomicBool::new(false),
                slot: Mutex::new(Slot::default()),
                job_posted: Condvar::new(),
                result_ready: Condvar::new(),
            }),
            thread: None,
        }
    }

    /// Hands the helper the CRC of `parts` (see [`crc::parts_crc`]) if no
    /// other job is in hand; `None` if one is.
    pub(crate) fn start<'a>(&'a self, parts: [&'a [u8]; 2]) -> Option<Ticket<'a>> {
        // Acquire: pairs with the Release store that ends the previous
        // holder's ticket, so its use of the slot is over before ours.
        if self
            .shared
            .busy
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        let job = Job {
            parts: parts.map(|p| (p.as_ptr(), p.len())),
        };
        let mut slot = lock(&self.shared.slot);
        slot.job = Some(job);
        // Release: a helper that sees it set and then takes the lock finds
        // the job (set under the lock before this store).
        self.shared.posted.store(true, Ordering::Release);
        drop(slot);
        self.shared.job_posted.notify_one();
        Some(Ticket {
            shared: &self.shared,
            result: None,
            _parts: std::marker::PhantomData,
        })
    }
}

impl Drop for CrcHelper {
    fn drop(&mut self) {
        lock(&self.shared.slot).stop = true;
        self.shared.job_posted.notify_one();
        if let Some(thread) = self.thread.take() {
            // The helper's loop does not panic; a join error would only
            // repeat a panic already reported on its thread.
            let _ = thread.join();
        }
    }
}

/// A job in the helper's hands: see the module docs.
pub(crate) struct Ticket<'a> {
    shared: &'a Shared,
    result: Option<u32>,
    /// The job's bytes stay borrowed until the ticket ends.
    _parts: std::marker::PhantomData<&'a [u8]>,
}

impl Ticket<'_> {
    /// Waits for the job's CRC and returns it.
    pub(crate) fn finish(mut self) -> u32 {
        self.wait()
    }

    fn wait(&mut self) -> u32 {
        if let Some(crc) = self.result {
            return crc;
        }
        // Relaxed: a hint; the lock below decides.
        if self.shared.posted.load(Ordering::Relaxed) {
            let mut slot = lock(&self.shared.slot);
            if let Some(job) = slot.job.take() {
                // Relaxed: under the lock, as the helper's store when it
                // takes a job.
                self.shared.posted.store(false, Ordering::Relaxed);
                drop(slot);
                // SAFETY: the ticket's own job, whose bytes it borrows;
                // the helper never saw it.
                let crc = unsafe { job.crc() };
                self.result = Some(crc);
                return crc;
            }
        }
        let mut backoff = Backoff::new(RESULT);
        // Acquire: pairs with the helper's Release store after the result.
        while !self.shared.ready.load(Ordering::Acquire) && !backoff.is_completed() {
            backoff.snooze();
        }
        let mut slot = lock(&self.shared.slot);
        let crc = loop {
            if let Some(crc) = slot.result.take() {
                break crc;
            }
            slot = self
                .shared
                .result_ready
                .wait(slot)
                .unwrap_or_else(|e| e.into_inner());
        };
        // Relaxed: under the lock, which orders it before the helper's
        // next store (made under the lock too).
        self.shared.ready.store(false, Ordering::Relaxed);
        drop(slot);
        self.result = Some(crc);
        crc
    }
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        // Unfinished (an error on the caller's path): the helper may still
        // be reading the job's bytes.
        self.wait();
        // Release: pairs with the next `start`'s Acquire.
        self.shared.busy.store(false, Ordering::Release);
    }
}

/// The helper's loop: waits for a job (spinning, then parked), computes
/// it, hands the result back; until told to stop.
fn run(shared: &Shared) {
    loop {
        let mut backoff = Backoff::new(IDLE);
        // Acquire: pairs with `start`'s Release store.
        while !shared.posted.load(Ordering::Acquire) && !backoff.is_completed() {
            backoff.snooze();
        }
        let mut slot = lock(&shared.slot);
        let job = loop {
            if let Some(job) = slot.job.take() {
                break job;
            }
            if slot.stop {
                return;
            }
            slot = shared
                .job_posted
                .wait(slot)
                .unwrap_or_else(|e| e.into_inner());
        };
        // Relaxed: under the lock, which orders it before the next
        // `start`'s store (that one also takes the lock first).
        shared.posted.store(false, Ordering::Relaxed);
        drop(slot);
        // SAFETY: the job's inserter waits for its result before the
        // bytes can go (the module contract).
        let crc = unsafe { job.crc() };
        lock(&shared.slot).result = Some(crc);
        // Release: an inserter that sees it set and then takes the lock
        // finds the result (set under the lock before this store).
        shared.ready.store(true, Ordering::Release);
        shared.result_ready.notify_one();
    }
}

/// Spawns the helper's thread (named, where threads have names).
#[cfg(not(any(loom, shuttle)))]
fn spawn(f: impl FnOnce() + Send + 'static) -> std::io::Result<thread::JoinHandle<()>> {
    thread::Builder::new().name("walden-crc".into()).spawn(f)
}

#[cfg(any(loom, shuttle))]
fn spawn(f: impl FnOnce() + Send + 'static) -> std::io::Result<thread::JoinHandle<()>> {
    Ok(thread::spawn(f))
}

#[cfg(all(test, not(any(loom, shuttle))))]
mod tests {
    use super::*;

    /// The helper's CRC is the inline one; a second job while one is in
    /// hand is refused; after a ticket ends the helper takes jobs again,
    /// also after it has parked; dropping the helper stops its thread.
    #[test]
    fn the_helpers_crc_is_the_inline_crc_one_job_at_a_time() {
        let helper = CrcHelper::new().unwrap();
        let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i * 7 + 3) as u8).collect();
        let parts = [&b"prefix"[..], &data[..]];
        let ticket = helper.start(parts).expect("idle helper takes the job");
        assert!(helper.start(parts).is_none(), "one job at a time");
        assert_eq!(ticket.finish(), crc::parts_crc(&parts));
        for round in 0..3 {
            let parts = [&data[..round], &data[round..]];
            let ticket = helper.start(parts).expect("free again");
            assert_eq!(ticket.finish(), crc::parts_crc(&parts), "round {round}");
            // Long enough for the helper to park before the next job.
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        // A ticket dropped unfinished waits for the job and frees the helper.
        drop(helper.start(parts).expect("free"));
        assert!(helper
            .start(parts)
            .is_some_and(|t| t.finish() == crc::parts_crc(&parts)));
        drop(helper);
    }

    /// A job the helper has not taken when its ticket finishes is taken
    /// back and computed by the ticket's thread: with no helper thread at
    /// all, every ticket still gets its CRC (it would wait forever for the
    /// helper otherwise), one job at a time as before, dropped or finished.
    #[test]
    fn a_job_the_helper_has_not_taken_is_computed_by_its_inserter() {
        let (done, finished) = std::sync::mpsc::channel();
        let worker = std::thread::spawn(move || {
            let helper = CrcHelper::without_thread();
            let data: Vec<u8> = (0..(64u32 << 10)).map(|i| (i * 5 + 1) as u8).collect();
            for round in 0..3 {
                let parts = [&data[..round], &data[round..]];
                let ticket = helper.start(parts).expect("free");
                assert!(helper.start(parts).is_none(), "one job at a time");
                assert_eq!(ticket.finish(), crc::parts_crc(&parts), "round {round}");
            }
            drop(helper.start([&data[..1], &data[1..]]).expect("free"));
            assert!(
                helper.start([&data[..], &[]]).is_some(),
                "free after a drop"
            );
            let _ = done.send(());
        });
        let in_time = finished.recv_timeout(std::time::Duration::from_secs(60));
        assert!(
            in_time.is_ok(),
            "a ticket waited for a helper that never ran"
        );
        worker.join().unwrap();
    }
}
