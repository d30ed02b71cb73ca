//! [`Watchdog`]: a time limit on a wait for another thread's progress in
//! the lock-free paths (a prev-link its predecessor never publishes, a slot
//! that is never released, a page that is never initialised), and the
//! report it panics with, [`StuckWait`].
//!
//! PostgreSQL: `s_lock_stuck` ("stuck spinlock"), which PANICs after about
//! a minute of spinning; seed 003's v7 table fails the same way when a link
//! never arrives, which is how its v2 bug was found. Such a wait has no end
//! once the thread waited for is gone or the link lost, so the only useful
//! outcome is a report naming what it waited for: the LSN, the slot, the
//! thread. The waits sit inside the insert path's critical section, whose
//! guard turns the panic into an abort after the message is printed (a
//! crash, as PostgreSQL's PANIC); a flusher's wait outside it unwinds to
//! the caller of `flush`.
//!
//! Cost: a wait calls [`Watchdog::round`] once per backoff round; the clock
//! is read only every [`CHECK_EVERY`] rounds, and not at all when the limit
//! is off. A parking wait parks at most [`Watchdog::park_timeout`] at a
//! time so that it gets to check. A wait is stuck once it has been watched
//! for the whole limit, counting each stretch between two clock reads as at
//! most a quarter of the limit: a process that was stopped (or a thread not
//! run) for longer does not find its waits stuck on the first read after,
//! while a wait on a loaded machine, whose reads come late, still adds up.

use std::fmt;
use std::time::{Duration, Instant};

use crate::lsn::Lsn;

/// Rounds of a wait between two reads of the clock.
pub const CHECK_EVERY: u32 = 64;

/// See the module docs. One per wait.
#[derive(Debug)]
pub struct Watchdog {
    limit: Option<Duration>,
    rounds: u32,
    /// The last clock read.
    last: Option<Instant>,
    /// Time watched so far (module docs).
    watched: Duration,
}

impl Watchdog {
    /// A wait that is stuck after `limit` (`None`: never).
    pub fn new(limit: Option<Duration>) -> Self {
        Watchdog {
            limit,
            rounds: 0,
            last: None,
            watched: Duration::ZERO,
        }
    }

    /// Counts one round of the wait; true once the wait has been watched
    /// for the whole limit.
    #[inline]
    pub fn round(&mut self) -> bool {
        if self.limit.is_none() {
            return false;
        }
        self.rounds = self.rounds.wrapping_add(1);
        self.rounds.is_multiple_of(CHECK_EVERY) && self.check_clock()
    }

    /// True once the wait has been watched for the whole limit; reads the
    /// clock (for waits whose rounds are long: parking).
    pub fn check_clock(&mut self) -> bool {
        let Some(limit) = self.limit else {
            return false;
        };
        let now = Instant::now();
        if let Some(last) = self.last {
            self.watched += now.duration_since(last).min(limit / 4);
        }
        self.last = Some(now);
        self.watched >= limit
    }

    /// How long a parking wait may park before its next check; `None`:
    /// as long as it likes.
    pub fn park_timeout(&self) -> Option<Duration> {
        self.limit.map(|l| l / 8)
    }

    /// Panics with the report of this wait, stuck on `on`.
    pub fn stuck(&self, on: StuckOn) -> ! {
        let waited = self.watched;
        let current = std::thread::current();
        let report = StuckWait {
            on,
            waited,
            thread: format!(
                "{:?} {:?}",
                current.name().unwrap_or("unnamed"),
                current.id()
            ),
        };
        panic!("{report}")
    }
}

/// A wait found stuck by its [`Watchdog`]; its caller knows what it waited
/// for and reports it ([`Watchdog::stuck`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stuck;

/// What a stuck wait was waiting for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StuckOn {
    /// Insertion slot `slot` to be released; its holder last advertised
    /// `inserting_at` (0: nothing).
    SlotRelease {
        /// The slot.
        slot: usize,
        /// Its holder's advertised progress.
        inserting_at: Lsn,
    },
    /// The insertions below `upto` to finish; slot `slot` is held and its
    /// holder last advertised `inserting_at` (0: nothing).
    Insertion {
        /// The slot.
        slot: usize,
        /// Its holder's advertised progress.
        inserting_at: Lsn,
        /// The point the flusher waits for.
        upto: Lsn,
    },
    /// The prev-link of the record at `record`, which the reserver of the
    /// record before it publishes in the cuckoo table.
    PrevLinkInTable {
        /// The waiting record's start.
        record: Lsn,
    },
    /// The prev-link of the record at `record`, which the inserter of the
    /// record before it writes into the buffer at `field`.
    PrevLinkInBuffer {
        /// The waiting record's start.
        record: Lsn,
        /// The `xl_prev` field.
        field: Lsn,
    },
    /// The pages below `upto` to be initialised; they are initialised up to
    /// `initialized_upto` and claimed up to `claimed_upto`.
    PageInit {
        /// The point waited for.
        upto: Lsn,
        /// Every page below is initialised.
        initialized_upto: Lsn,
        /// Every page below is claimed by an initialiser.
        claimed_upto: Lsn,
    },
}

/// The report of a stuck wait (the panic message is its `Display`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StuckWait {
    /// What it waited for.
    pub on: StuckOn,
    /// How long it was watched.
    pub waited: Duration,
    /// The waiting thread: its name and id.
    pub thread: String,
}

impl fmt::Display for StuckWait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "walden: stuck wait: thread {} waited {:?} for ",
            self.thread, self.waited
        )?;
        match &self.on {
            StuckOn::SlotRelease { slot, inserting_at } => write!(
                f,
                "insertion slot {slot} to be released (its holder advertised {inserting_at})"
            ),
            StuckOn::Insertion {
                slot,
                inserting_at,
                upto,
            } => write!(
                f,
                "the insertions below {upto} to finish: slot {slot} is held, its holder advertised {inserting_at}"
            ),
            StuckOn::PrevLinkInTable { record } => write!(
                f,
                "the prev-link of the record at {record} in the link table (its predecessor never published it)"
            ),
            StuckOn::PrevLinkInBuffer { record, field } => write!(
                f,
                "the prev-link of the record at {record} in the buffer at {field} (its predecessor never wrote it)"
            ),
            StuckOn::PageInit {
                upto,
                initialized_upto,
                claimed_upto,
            } => write!(
                f,
                "the pages below {upto} to be initialised (initialised up to {initialized_upto}, claimed up to {claimed_upto})"
            ),
        }?;
        write!(f, "; see stuck_wait_timeout in the configuration")
    }
}

/// Runs `f`, which must panic with a stuck-wait report, and returns the
/// report's text (for the tests that trigger a watchdog on purpose).
#[cfg(test)]
pub(crate) fn stuck_report(f: impl FnOnce()) -> String {
    let payload = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .expect_err("the wait should have been reported stuck");
    match payload.downcast::<String>() {
        Ok(message) => *message,
        Err(_) => panic!("a panic without a message"),
    }
}

#[cfg(all(test, not(loom), not(shuttle)))]
mod tests {
    use super::*;

    #[test]
    fn off_never_fires_and_a_limit_fires_only_after_it_has_passed() {
        let mut off = Watchdog::new(None);
        assert!((0..10 * CHECK_EVERY).all(|_| !off.round()));
        assert_eq!(off.park_timeout(), None);
        let mut on = Watchdog::new(Some(Duration::from_millis(40)));
        assert!(!on.check_clock(), "the first read starts the stretch");
        let began = Instant::now();
        while !on.round() {
            std::thread::yield_now();
        }
        assert!(began.elapsed() >= Duration::from_millis(30));
    }

    #[test]
    fn a_gap_between_checks_counts_a_quarter_of_the_limit() {
        let limit = Duration::from_millis(40);
        let mut w = Watchdog::new(Some(limit));
        assert!(!w.check_clock());
        // A stopped process: each read comes after the whole limit.
        for _ in 0..3 {
            std::thread::sleep(limit + limit / 2);
            assert!(!w.check_clock(), "a gap is not a stuck wait");
        }
        std::thread::sleep(limit + limit / 2);
        assert!(w.check_clock(), "four quarters make the limit");
    }

    #[test]
    fn the_report_names_the_lsn_the_slot_and_the_thread() {
        let w = Watchdog::new(Some(Duration::from_secs(1)));
        let on = StuckOn::Insertion {
            slot: 3,
            inserting_at: Lsn(0x1_0000_2000),
            upto: Lsn(0x1_0000_4000),
        };
        let message = std::thread::Builder::new()
            .name("flusher".into())
            .spawn(move || stuck_report(|| w.stuck(on)))
            .unwrap()
            .join()
            .unwrap();
        for part in ["slot 3", "1/2000", "1/4000", "\"flusher\""] {
            assert!(message.contains(part), "{part} missing from: {message}");
        }
    }
}
