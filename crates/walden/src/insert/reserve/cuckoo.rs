//! The lock-free cuckoo hash table that passes prev-links between
//! neighbouring reservers (seed 003, Yura Sokolov's `PrevLinksHash`, v7's
//! protocol with its 64-bit entries and slot strategy 3).
//!
//! Each reserver of `[start, end)` *publishes* the link keyed by `end` with
//! value `start` (the next record's prev-link) and *consumes* the link keyed
//! by `start` (published by its predecessor). Keys are unique (one record
//! starts at each position), so each link is inserted once and consumed
//! once and the table holds only links in flight: at most one per
//! concurrent reserver, plus the one waiting for the next record.
//!
//! Entries are 16 bytes, four to a 64-byte bucket. A key may live in any
//! of 8 entries: the 4 of its first bucket and the 4 of a second bucket that
//! is always a different one (strategy 3). Every index is a bucket number
//! below the bucket count times 4 plus an offset below 4, so it is always
//! below the capacity: v2's stuck-spinlock bug (neighbour positions not
//! reduced modulo the capacity, so links were written past the table)
//! cannot happen by construction, and a test checks every index.
//!
//! Entry encoding (64-bit variant): `key` holds the position plus 8, so a
//! real key is never 0 ("empty"); positions are multiples of 8, so its
//! lowest bit is free for a lock. `value` is `EMPTY` (`u64::MAX`) while the entry is
//! free. An entry is taken by CAS on `value` (EMPTY → value) and published
//! by a Release write of `key`; consumers and swappers lock it by setting
//! the key's low bit (Acquire), so they see the value of the key they
//! locked. One fix over the C code: a consumer that locked an entry whose
//! key changed under it restores the old key with a CAS rather than a
//! store, so it cannot overwrite the key of an inserter that took the
//! (empty) entry meanwhile and lose that link.
//!
//! Every write to an entry is a read-modify-write (`swap` where the C code
//! stores): each word's writes then form one chain of RMWs, each reading
//! the last, which is also what loom checks exactly (its model can let a
//! plain store slip inside a concurrent RMW, tokio-rs/loom#254). On x86 a
//! `swap` costs about what the C code's barrier-ordered store does.
//!
//! When all 8 entries of a key are taken, the inserter now and then
//! ([`SWAP_ONCE_IN`]) swaps its link into one of them and carries the
//! displaced link on to *its* entries instead, as cuckoo hashing does;
//! consumers removing links at the rate they are added break any cycle. A
//! thread never sleeps before its own link is published (its successor
//! waits for it), nor leaves while carrying a displaced link.

use std::time::Duration;

use crate::config::LINK_TABLE_MIN_CAPACITY;
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::backoff::{Backoff, Policy};
use crate::sync::mutant::{self, Mutant};
use crate::sync::watchdog::{StuckOn, Watchdog};
use crate::sync::{AtomicU64, Ordering};

#[cfg(all(test, loom))]
mod loom_model;

/// Entries per bucket (one 64-byte cache line).
pub const BUCKET_ENTRIES: usize = 4;
/// Entries a key may occupy: two buckets.
pub const LOOKUPS: usize = 2 * BUCKET_ENTRIES;
/// Smallest table: two buckets, so that a key's two buckets differ. The
/// configuration's rule (`config::LINK_TABLE_MIN_CAPACITY`) must agree.
pub const MIN_CAPACITY: usize = 2 * BUCKET_ENTRIES;
const _: () = assert!(MIN_CAPACITY == LINK_TABLE_MIN_CAPACITY);
/// A failed insertion swaps a link out once in this many rounds (seed 003's
/// `SWAP_ONCE_IN`).
pub const SWAP_ONCE_IN: u32 = 128;

/// `value` of a free entry.
const EMPTY: u64 = u64::MAX;
/// `value` of the link to the first record of a new log: no predecessor.
const NO_PREV: u64 = u64::MAX - 1;
/// The lock bit of `key`.
const LOCKED: u64 = 1;
/// Added to positions to make keys, so that no key is 0 (a free entry's).
const KEY_BIAS: u64 = 8;

/// One entry: a link from `key` to `value`.
#[derive(Debug)]
struct Entry {
    key: AtomicU64,
    value: AtomicU64,
}

/// Four entries on one cache line.
#[derive(Debug)]
#[repr(align(64))]
struct Bucket([Entry; BUCKET_ENTRIES]);

/// A link: the next record's start (biased) → this record's start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Link {
    key: u64,
    value: u64,
}

/// See the module docs.
#[derive(Debug)]
pub struct LinkTable {
    buckets: Box<[Bucket]>,
    swap_once_in: u32,
    /// The log's segment size (to name LSNs) and how long a wait for a
    /// predecessor's link may last ([`LinkTable::watched`]).
    watch: Option<(SegmentSize, Duration)>,
}

impl LinkTable {
    /// An empty table of `capacity` entries, rounded up to a power of two
    /// of at least [`MIN_CAPACITY`] (callers validate it first).
    pub fn new(capacity: usize) -> Self {
        Self::with_swap_period(capacity, SWAP_ONCE_IN)
    }

    /// As [`LinkTable::new`], swapping once in `swap_once_in` failed rounds.
    pub(crate) fn with_swap_period(capacity: usize, swap_once_in: u32) -> Self {
        let capacity = capacity.next_power_of_two().max(MIN_CAPACITY);
        let empty = || Entry {
            key: AtomicU64::new(0),
            value: AtomicU64::new(EMPTY),
        };
        LinkTable {
            buckets: (0..capacity / BUCKET_ENTRIES)
                .map(|_| Bucket([empty(), empty(), empty(), empty()]))
                .collect(),
            swap_once_in: swap_once_in.max(1),
            watch: None,
        }
    }

    /// The same table, whose waits for a predecessor's link panic with a
    /// report naming the waiting record's LSN (in a log of `seg` segments)
    /// after `limit` (see [`crate::sync::watchdog`]).
    pub fn watched(self, seg: SegmentSize, limit: Option<Duration>) -> Self {
        LinkTable {
            watch: limit.map(|l| (seg, l)),
            ..self
        }
    }

    /// Number of entries.
    pub fn capacity(&self) -> usize {
        self.buckets.len() * BUCKET_ENTRIES
    }

    fn entry(&self, index: usize) -> &Entry {
        &self.buckets[index / BUCKET_ENTRIES].0[index % BUCKET_ENTRIES]
    }

    /// The entries `key` may occupy: 4 in its first bucket, then 4 in a
    /// different second bucket, each group starting at a hashed offset.
    fn candidates(&self, key: u64) -> [usize; LOOKUPS] {
        let h = mix(key);
        let buckets = self.buckets.len();
        // `buckets` is a power of two ≥ 2: masking keeps both in range, and
        // adding 1..buckets-1 before masking makes the second differ.
        let first = (h as usize) & (buckets - 1);
        let second = (first + 1 + ((h >> 32) as usize) % (buckets - 1)) & (buckets - 1);
        let rotate = (h >> 24) as usize;
        let mut out = [0; LOOKUPS];
        for (j, slot) in out.iter_mut().enumerate() {
            let bucket = if j < BUCKET_ENTRIES { first } else { second };
            *slot = bucket * BUCKET_ENTRIES + (rotate + j) % BUCKET_ENTRIES;
        }
        out
    }

    /// Puts the link to the first record after start-up: the record at
    /// position `next` follows the one at `prev` (`None`: a new log).
    /// Called before the table is shared.
    pub fn seed(&self, next: u64, prev: Option<u64>) {
        let link = Link {
            key: key_of(next),
            value: prev.unwrap_or(NO_PREV),
        };
        let placed = self
            .candidates(link.key)
            .iter()
            .any(|&i| try_insert(self.entry(i), link));
        debug_assert!(placed, "an empty table has room");
    }

    /// Publishes the link of the reservation `[start, end)` and returns its
    /// prev-link: the start of the reservation that ended at `start`
    /// (`None` if there was none: the first record of a new log). Waits for
    /// the predecessor to publish it (PostgreSQL with seed 003:
    /// `LinkAndFindPrevPos`).
    pub fn link(&self, start: u64, end: u64) -> Option<u64> {
        self.link_run(start, end, start)
    }

    /// [`LinkTable::link`] for a reservation holding a run of records
    /// (a batch) whose last one starts at `last`: the link published for
    /// the next reservation is `last`, not `start`.
    pub fn link_run(&self, start: u64, end: u64, last: u64) -> Option<u64> {
        let want = key_of(start);
        let want_at = self.candidates(want);
        let mut carried = Link {
            key: key_of(end),
            value: last,
        };
        let mut carried_at = self.candidates(carried.key);
        let mut found = None;
        let mut inserted = false;
        let mut dice = Dice::new(start);
        let mut backoff = Backoff::new(Policy::SPIN_THEN_YIELD);
        let mut watchdog = Watchdog::new(self.watch.map(|(_, limit)| limit));
        loop {
            if watchdog.round() {
                let record = self
                    .watch
                    .map_or(Lsn(start), |(seg, _)| seg.pos_to_start_lsn(start));
                watchdog.stuck(StuckOn::PrevLinkInTable { record });
            }
            if found.is_none() {
                found = want_at
                    .iter()
                    .find_map(|&i| try_consume(self.entry(i), want));
            }
            if inserted {
                if let Some(prev) = found {
                    return (prev != NO_PREV).then_some(prev);
                }
                // Our link is out and we carry nothing: waiting costs no
                // one but us, so give the CPU to the predecessor we wait for.
                backoff.snooze();
                continue;
            }
            inserted = carried_at
                .iter()
                .any(|&i| try_insert(self.entry(i), carried));
            if !inserted && dice.one_in(self.swap_once_in) {
                let victim = carried_at[dice.below(LOOKUPS)];
                match try_swap(self.entry(victim), carried) {
                    None => {}
                    Some(None) => inserted = true,
                    Some(Some(displaced)) if displaced.key == want => {
                        // We displaced the very link we wait for.
                        inserted = true;
                        found = Some(displaced.value);
                    }
                    Some(Some(displaced)) => {
                        carried = displaced;
                        carried_at = self.candidates(carried.key);
                    }
                }
            }
            if inserted && found.is_some() {
                continue;
            }
            // Someone waits for the link we carry: no yielding, only a relax.
            backoff.spin();
        }
    }

    /// Links in the table now (a quiescent table holds exactly one: the
    /// link waiting for the next record).
    #[cfg(test)]
    pub(crate) fn live_links(&self) -> usize {
        (0..self.capacity())
            // Relaxed: inspected only when no thread uses the table.
            .filter(|&i| self.entry(i).value.load(Ordering::Relaxed) != EMPTY)
            .count()
    }
}

fn key_of(position: u64) -> u64 {
    position + KEY_BIAS
}

/// Takes the free entry `e` for `link`. False if it is not free.
fn try_insert(e: &Entry, link: Link) -> bool {
    // Relaxed: a cheap look before the CAS, which decides.
    if e.value.load(Ordering::Relaxed) != EMPTY {
        return false;
    }
    if mutant::active(Mutant::CuckooInsertStore) {
        // Relaxed: as the CAS below. The mutant's plain store, written as
        // an unconditional swap (see the module docs on loom).
        e.value.swap(link.value, Ordering::Relaxed);
    } else if e
        .value
        // Relaxed: winning the CAS makes the entry ours; there is nothing to
        // acquire from its last user (whose read of the old value precedes
        // its EMPTY store in that word's modification order).
        .compare_exchange(EMPTY, link.value, Ordering::Relaxed, Ordering::Relaxed)
        .is_err()
    {
        return false;
    }
    publish_key(e, link.key);
    true
}

/// Removes the link keyed `key` from `e` and returns its value; `None` if
/// `e` does not hold it or another thread has it locked.
fn try_consume(e: &Entry, key: u64) -> Option<u64> {
    // Relaxed: a cheap look before locking; the lock re-checks.
    if e.key.load(Ordering::Relaxed) != key {
        return None;
    }
    let old = lock_key(e);
    if old & LOCKED != 0 {
        return None;
    }
    if old != key {
        // Swapped or consumed meanwhile: unlock, unless an inserter has
        // already written its key over our lock bit.
        if mutant::active(Mutant::CuckooRestoreStore) {
            // Release: as the CAS below. The mutant is v7's plain store,
            // written as an unconditional swap (see the module docs on
            // loom and plain stores).
            e.key.swap(old, Ordering::Release);
        } else {
            // Release: hands the entry back as it was; Relaxed on failure.
            let _ = e
                .key
                .compare_exchange(old | LOCKED, old, Ordering::Release, Ordering::Relaxed);
        }
        return None;
    }
    // Relaxed: the value read is ordered after the Acquire above; the
    // EMPTY written frees the entry for an inserter's CAS, which needs
    // nothing from us.
    let value = e.value.swap(EMPTY, Ordering::Relaxed);
    // Relaxed: clears our locked key; failure means an inserter has
    // already reused the entry and written its own key.
    let _ = e
        .key
        .compare_exchange(key | LOCKED, 0, Ordering::Relaxed, Ordering::Relaxed);
    Some(value)
}

/// Puts `link` into `e` whatever it holds: `Some(Some(displaced))` if it
/// held a link (which the caller now carries), `Some(None)` if it was
/// free, `None` if it is locked or an inserter took it first.
fn try_swap(e: &Entry, link: Link) -> Option<Option<Link>> {
    let old = lock_key(e);
    if old & LOCKED != 0 {
        return None;
    }
    if old == 0 {
        // A free entry, or one an inserter has just taken by its value.
        // Relaxed: as in try_insert. On failure the inserter won and will
        // store its key over our lock bit.
        if e.value
            .compare_exchange(EMPTY, link.value, Ordering::Relaxed, Ordering::Relaxed)
            .is_err()
        {
            return None;
        }
        publish_key(e, link.key);
        return Some(None);
    }
    // Relaxed: the old value read is ordered after the Acquire above; the
    // new one is published by the Release write of the key below.
    let displaced = e.value.swap(link.value, Ordering::Relaxed);
    // Unlocks, publishing the new value with the new key.
    publish_key(e, link.key);
    Some(Some(Link {
        key: old,
        value: displaced,
    }))
}

/// Writes `key` into `e`, publishing the value written before it.
fn publish_key(e: &Entry, key: u64) {
    // Release: publishes the value stored before to the consumer or swapper
    // that locks this key with Acquire. In try_insert it may overwrite a
    // lock bit a swapper set on the empty entry; that swapper then gives up
    // (see try_swap).
    e.key.swap(
        key,
        mutant::order(Mutant::CuckooPublishRelaxed, Ordering::Release),
    );
}

/// Sets the lock bit of `e`'s key; returns the key before.
fn lock_key(e: &Entry) -> u64 {
    // Acquire: pairs with the Release write of the key by its inserter or
    // swapper (publish_key), so the value read after it is the one
    // published with it.
    e.key.fetch_or(
        LOCKED,
        mutant::order(Mutant::CuckooLockRelaxed, Ordering::Acquire),
    )
}

/// A 64-bit finaliser (MurmurHash3's `fmix64`): neighbouring positions
/// land in unrelated buckets.
fn mix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    k ^= k >> 33;
    k = k.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    k ^ (k >> 33)
}

/// A small per-call generator (xorshift64*) for the swap decisions:
/// deterministic from the position, so loom explores the same choices.
struct Dice(u64);

impl Dice {
    fn new(seed: u64) -> Self {
        Dice(mix(seed) | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn one_in(&mut self, n: u32) -> bool {
        self.next().is_multiple_of(u64::from(n))
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::atomic::AtomicU64 as StdAtomicU64;
    use std::sync::{mpsc, Arc};
    use std::time::Duration;

    #[test]
    fn every_candidate_is_in_range_and_spans_two_buckets() {
        for capacity in [8usize, 16, 32, 1024, 2048] {
            let t = LinkTable::new(capacity);
            for pos in (0..200_000u64)
                .map(|i| i * 8)
                .chain([u64::MAX - 7 - KEY_BIAS])
            {
                let c = t.candidates(key_of(pos));
                assert!(c.iter().all(|&i| i < capacity), "{capacity}: {c:?}");
                let distinct: HashSet<_> = c.iter().collect();
                assert_eq!(distinct.len(), LOOKUPS, "{capacity}: {c:?}");
                let buckets: HashSet<_> = c.iter().map(|i| i / BUCKET_ENTRIES).collect();
                assert_eq!(buckets.len(), 2, "{capacity}: {c:?}");
            }
        }
    }

    #[test]
    fn entry_operations_follow_the_protocol() {
        let e = Entry {
            key: AtomicU64::new(0),
            value: AtomicU64::new(EMPTY),
        };
        let a = Link { key: 16, value: 8 };
        let b = Link { key: 24, value: 16 };
        assert_eq!(try_consume(&e, a.key), None, "empty");
        assert!(try_insert(&e, a));
        assert!(!try_insert(&e, b), "taken");
        assert_eq!(try_consume(&e, b.key), None, "another key");
        assert_eq!(try_swap(&e, b), Some(Some(a)), "displaces a");
        assert_eq!(try_consume(&e, a.key), None, "a is carried, not here");
        assert_eq!(try_consume(&e, b.key), Some(16));
        assert_eq!(try_swap(&e, a), Some(None), "free entry");
        assert_eq!(try_consume(&e, a.key), Some(8));
        // A locked entry refuses everyone.
        assert!(try_insert(&e, a));
        e.key.fetch_or(LOCKED, Ordering::Relaxed);
        assert_eq!(try_consume(&e, a.key), None);
        assert_eq!(try_swap(&e, b), None);
    }

    #[test]
    fn a_new_log_links_its_first_record_to_nothing() {
        let t = LinkTable::new(16);
        t.seed(800, None);
        assert_eq!(t.link(800, 840), None);
        assert_eq!(t.link(840, 880), Some(800));
        assert_eq!(t.live_links(), 1, "only the link for 880 waits");
    }

    /// A reserver whose predecessor never publishes its link: after the
    /// limit it panics naming the LSN of the record that waited.
    #[test]
    fn a_link_that_never_arrives_is_reported() {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let t = LinkTable::new(16).watched(seg, Some(Duration::from_millis(50)));
        t.seed(800, None);
        let report = crate::sync::watchdog::stuck_report(|| {
            t.link(840, 880);
        });
        let record = format!("record at {}", seg.pos_to_start_lsn(840));
        assert!(report.contains(&record), "{record} missing from: {report}");
        assert!(report.contains("link table"), "{report}");
    }

    /// Many threads on the smallest table, swapping on every failed round,
    /// with a watchdog that reports a lost link instead of hanging.
    #[test]
    fn many_reservers_on_a_tiny_table_chain_every_link() {
        const THREADS: u64 = 8;
        const PER_THREAD: u64 = 20_000;
        let table = Arc::new(LinkTable::with_swap_period(16, 1));
        let head = Arc::new(StdAtomicU64::new(8));
        table.seed(8, Some(0));
        let (done, finished) = mpsc::channel();
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let (table, head, done) = (table.clone(), head.clone(), done.clone());
                std::thread::spawn(move || {
                    let mut links = Vec::with_capacity(PER_THREAD as usize);
                    for i in 0..PER_THREAD {
                        let size = 8 * (1 + (t + i) % 5);
                        let start = head.fetch_add(size, std::sync::atomic::Ordering::Relaxed);
                        links.push((start, start + size, table.link(start, start + size)));
                    }
                    done.send(()).unwrap();
                    links
                })
            })
            .collect();
        for _ in 0..THREADS {
            if finished.recv_timeout(Duration::from_secs(60)).is_err() {
                panic!(
                    "a reserver is stuck waiting for a lost link; {} links in the table",
                    table.live_links()
                );
            }
        }
        let mut all: Vec<_> = workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect();
        all.sort_unstable();
        assert_eq!(all[0].2, Some(0));
        for w in all.windows(2) {
            assert_eq!(w[1].0, w[0].1, "tiled");
            assert_eq!(w[1].2, Some(w[0].0), "prev-link of {}", w[1].0);
        }
        assert_eq!(table.live_links(), 1);
    }
}
