//! Seed 001's reservation microbenchmark (E1): T threads each make N
//! reservations of random 8-aligned sizes (8 to 128 bytes) with nothing
//! else around them, through the library's own reservers. `PrevLinkInBuffer`
//! hands each prev-link over through a mailbox of 8-byte fields (two
//! 32-bit atomics each, read with the library's [`LinkCell`]) standing in
//! for the WAL buffer: publish the successor's, wait for one's own, clear
//! it. The fields in use slide along the mailbox as writes slide along the
//! buffer's pages; since nothing stops reservations from running a
//! whole mailbox ahead of a preempted thread (the engine's ring cannot wrap
//! past an unwritten page), a publisher first claims its field, waiting
//! until the field's previous user has taken its link, and a waiter takes
//! only a link from within a record's length below its start.
//!
//! Fixed work, not fixed time: the run ends when the last thread has made
//! its N reservations, as 001's clients each made a million calls. The
//! time runs from the first thread's start to the last thread's end.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Barrier;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use walden::internals::{link_table_capacity_for, LinkCell, PrevLink, Reservation, Reserver};
use walden::{Lsn, ReservationKind, SegmentSize};

/// Mailbox fields: 2^20 (8 MiB), reused every 8 MiB of reservations. The
/// fields in use slide along it as the WAL buffer's pages do.
const MAILBOX_FIELDS: usize = 1 << 20;
/// Largest reservation of the benchmark.
const MAX_SIZE: u64 = 128;
/// Low half of a field being written (never a record start's: 8-aligned).
const CLAIMED: u32 = 1;

/// One measured configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MicroCase {
    /// The design.
    #[serde(
        serialize_with = "crate::serde_display",
        deserialize_with = "crate::serde_parse"
    )]
    pub reservation: ReservationKind,
    /// Threads reserving at once.
    pub threads: usize,
}

/// What one case measured.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct MicroResult {
    /// The case.
    #[serde(flatten)]
    pub case: MicroCase,
    /// Reservations made, all threads.
    pub ops: u64,
    /// Seconds from the start signal to the last thread's last reservation.
    pub seconds: f64,
    /// Wall time per reservation, all threads together, ns.
    pub ns_per_op: f64,
    /// Reservations per second, millions.
    pub mops: f64,
    /// Prev-links that were not below their record's start (must be 0).
    pub bad_links: u64,
}

/// Every design at every thread count, grouped by thread count.
pub fn cases(reservations: &[ReservationKind], threads: &[usize]) -> Vec<MicroCase> {
    threads
        .iter()
        .flat_map(|&threads| {
            reservations.iter().map(move |&reservation| MicroCase {
                reservation,
                threads,
            })
        })
        .collect()
}

/// The mailbox of the in-buffer handoff.
struct Mailbox {
    fields: Box<[[AtomicU32; 2]]>,
}

impl Mailbox {
    fn new() -> Self {
        Mailbox {
            fields: (0..MAILBOX_FIELDS)
                .map(|_| [AtomicU32::new(0), AtomicU32::new(0)])
                .collect(),
        }
    }

    fn field(&self, position: u64) -> &[AtomicU32; 2] {
        &self.fields[(position / 8) as usize % MAILBOX_FIELDS]
    }

    /// Publishes `prev` as the link of the record at `position`, once the
    /// field's previous user has taken its own.
    fn publish(&self, position: u64, prev: Lsn) {
        let [low, high] = self.field(position);
        // Acquire on success: the previous user's take happened before;
        // Relaxed on failure: we wait and retry.
        while low
            .compare_exchange(0, CLAIMED, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::thread::yield_now();
        }
        // Relaxed: published by the Release store of the low half.
        high.store((prev.0 >> 32) as u32, Ordering::Relaxed);
        // Release: as in the library's LinkCell::publish.
        low.store(prev.0 as u32, Ordering::Release);
    }

    /// Waits for the link of the record at `start`, takes it and frees the
    /// field.
    fn take(&self, start_pos: u64, start: Lsn) -> Lsn {
        let [low, high] = self.field(start_pos);
        let cell = LinkCell::new(low, high);
        loop {
            match cell.take() {
                Some(prev)
                    if prev.0 as u32 != CLAIMED
                        && prev < start
                        && start.0 - prev.0 <= 2 * MAX_SIZE =>
                {
                    // Release: our read of the field happens before its next
                    // claim (an Acquire CAS).
                    low.store(0, Ordering::Release);
                    return prev;
                }
                _ => std::thread::yield_now(),
            }
        }
    }
}

/// Runs one case: `per_thread` reservations on each of its threads.
pub fn run_case(case: MicroCase, per_thread: u64) -> MicroResult {
    let seg = SegmentSize::default();
    let first = seg.usable_bytes();
    let reserver = Reserver::new(
        case.reservation,
        seg,
        first,
        Lsn::INVALID,
        link_table_capacity_for(case.threads),
        None,
    );
    let mailbox = (case.reservation == ReservationKind::PrevLinkInBuffer).then(Mailbox::new);
    let start = Barrier::new(case.threads);
    let (seconds, bad_links) = std::thread::scope(|s| {
        let workers: Vec<_> = (0..case.threads)
            .map(|index| {
                let (reserver, mailbox, start) = (&reserver, &mailbox, &start);
                s.spawn(move || {
                    let mut dice = (index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
                    start.wait();
                    let began = Instant::now();
                    let mut bad = 0;
                    for _ in 0..per_thread {
                        dice ^= dice << 13;
                        dice ^= dice >> 7;
                        dice ^= dice << 17;
                        let size = 8 * (1 + dice % (MAX_SIZE / 8));
                        let r = reserver.reserve(size);
                        let prev = handed_over(&r, seg, mailbox.as_ref());
                        bad += u64::from(prev >= seg.pos_to_start_lsn(r.start));
                    }
                    (began, Instant::now(), bad)
                })
            })
            .collect();
        let mut bad = 0;
        let mut span: Option<(Instant, Instant)> = None;
        for w in workers {
            let (began, done, b) = w.join().unwrap_or_else(|e| std::panic::resume_unwind(e));
            span = Some(match span {
                None => (began, done),
                Some((first, last)) => (first.min(began), last.max(done)),
            });
            bad += b;
        }
        let seconds = span.map_or(0.0, |(first, last)| (last - first).as_secs_f64());
        (seconds, bad)
    });
    let ops = per_thread * case.threads as u64;
    MicroResult {
        case,
        ops,
        seconds,
        ns_per_op: seconds * 1e9 / ops as f64,
        mops: ops as f64 / seconds / 1e6,
        bad_links,
    }
}

/// The prev-link of `r`: known, or handed over through the mailbox (after
/// publishing the successor's); `Lsn::INVALID` for a design without links.
fn handed_over(r: &Reservation, seg: SegmentSize, mailbox: Option<&Mailbox>) -> Lsn {
    match (r.prev, mailbox) {
        (PrevLink::Known(prev), Some(m)) => {
            m.publish(r.end, seg.pos_to_start_lsn(r.start));
            prev
        }
        (PrevLink::InBuffer, Some(m)) => {
            let start = seg.pos_to_start_lsn(r.start);
            m.publish(r.end, start);
            m.take(r.start, start)
        }
        (PrevLink::Known(prev), None) => prev,
        (PrevLink::InBuffer | PrevLink::NotKept, None) | (PrevLink::NotKept, Some(_)) => {
            Lsn::INVALID
        }
    }
}

/// The serialized step's time, one thread, no contention, ns: the whole
/// spinlock section for `Spinlock`; the `fetch_add` for the others, whose
/// link handoffs run in parallel (neighbours exchange them while others
/// reserve).
pub fn serialized_ns(reservation: ReservationKind, ops: u64) -> f64 {
    let step = match reservation {
        ReservationKind::Spinlock => ReservationKind::Spinlock,
        _ => ReservationKind::Unlinked,
    };
    run_case(
        MicroCase {
            reservation: step,
            threads: 1,
        },
        ops,
    )
    .ns_per_op
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_design_hands_every_record_a_link_below_it() {
        for reservation in ReservationKind::ALL {
            for threads in [1, 3] {
                let r = run_case(
                    MicroCase {
                        reservation,
                        threads,
                    },
                    20_000,
                );
                assert_eq!(r.ops, threads as u64 * 20_000, "{r:?}");
                assert_eq!(r.bad_links, 0, "{r:?}");
                assert!(r.ns_per_op > 0.0 && r.mops > 0.0, "{r:?}");
            }
        }
    }

    #[test]
    fn cases_group_by_thread_count() {
        let c = cases(
            &[ReservationKind::Spinlock, ReservationKind::Unlinked],
            &[1, 4],
        );
        let got: Vec<_> = c.iter().map(|c| (c.threads, c.reservation)).collect();
        assert_eq!(
            got,
            [
                (1, ReservationKind::Spinlock),
                (1, ReservationKind::Unlinked),
                (4, ReservationKind::Spinlock),
                (4, ReservationKind::Unlinked)
            ]
        );
    }
}
