//! loom models of the cuckoo link table: three reservers chaining through
//! the real [`PrevLinkTableReserver`] (its head and a two-bucket table),
//! and races on one entry, among them the key-restore interleaving of
//! seed 003's v7 (a consumer, a swapper, a second consumer, an inserter).
//!
//! Each CAS and ordering the entry protocol rests on has a mutant
//! (`sync::mutant`); the tests here assert which model kills which, and
//! `docs/reservation.md` lists them.

use super::*;
use crate::insert::reserve::{PrevLink, PrevLinkTableReserver};
use crate::lsn::{Lsn, SegmentSize};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc};

/// Three reservers (one of them the model's main thread) reserve 8 bytes
/// each through the real reserver over the smallest table, swapping on
/// every failed round: each gets its predecessor's start, and only the
/// last link stays behind.
fn three_reservers() {
    loom::model(|| {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let first = 80;
        let table = LinkTable::with_swap_period(MIN_CAPACITY, 1);
        let r = Arc::new(PrevLinkTableReserver::with_table(
            seg,
            first,
            Lsn::INVALID,
            table,
        ));
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let r = r.clone();
                thread::spawn(move || r.reserve(8))
            })
            .collect();
        let mut all = vec![r.reserve(8)];
        all.extend(threads.into_iter().map(|t| t.join().unwrap()));
        all.sort_unstable_by_key(|x| x.start);
        assert_eq!(all[0].start, first);
        assert_eq!(all[0].prev, PrevLink::Known(Lsn::INVALID));
        for w in all.windows(2) {
            assert_eq!(w[1].start, w[0].end, "tiled");
            let want = PrevLink::Known(seg.pos_to_start_lsn(w[0].start));
            assert_eq!(w[1].prev, want, "wrong prev-link");
        }
        assert_eq!(r.links().live_links(), 1);
    });
}

#[test]
fn three_reservers_chain_through_a_tiny_table() {
    three_reservers();
}

/// What one entry holds and what the threads took out of it, against what
/// went in: every link exactly once, the entry unlocked and consistent.
fn check_entry(e: &Entry, taken: Vec<(u64, u64)>, put: Vec<(u64, u64)>) {
    // Relaxed: every thread has been joined.
    let (key, value) = (
        e.key.load(Ordering::Relaxed),
        e.value.load(Ordering::Relaxed),
    );
    let mut links = taken;
    if key != 0 && value != EMPTY {
        links.push((key & !LOCKED, value));
    }
    links.sort_unstable();
    let mut expected = put;
    expected.sort_unstable();
    assert_eq!(links, expected, "a link was lost or duplicated");
    assert_eq!(key & LOCKED, 0, "left locked");
    assert_eq!(key == 0, value == EMPTY, "key {key} value {value}");
}

/// A consumer, a swapper and an inserter race on one entry: no link is
/// lost or duplicated, and the entry ends unlocked and consistent.
fn three_parties_on_one_entry() {
    loom::model(|| {
        let e = Arc::new(Entry {
            key: AtomicU64::new(16),
            value: AtomicU64::new(8),
        });
        let (ec, es) = (e.clone(), e.clone());
        let consumer = thread::spawn(move || try_consume(&ec, 16));
        let swapper = thread::spawn(move || try_swap(&es, Link { key: 32, value: 24 }));
        let inserted = try_insert(&e, Link { key: 48, value: 40 });
        let consumed = consumer.join().unwrap();
        let swapped = swapper.join().unwrap();
        let mut taken: Vec<_> = consumed.map(|v| (16, v)).into_iter().collect();
        if let Some(Some(d)) = swapped {
            taken.push((d.key, d.value));
        }
        let mut put = vec![(16, 8)];
        if swapped.is_some() {
            put.push((32, 24));
        }
        if inserted {
            put.push((48, 40));
        }
        check_entry(&e, taken, put);
    });
}

#[test]
fn entry_races_never_lose_or_duplicate_a_link() {
    three_parties_on_one_entry();
}

/// The key-restore interleaving: consumer C1 sees its key 16, a swapper
/// replaces it with 32 (carrying 16 away), consumer C2 takes 32 and frees
/// the entry, C1 locks the now empty entry, an inserter takes it for 48,
/// and C1 restores what it locked. v7 restored with a plain store, which
/// wipes the inserter's key and loses link 48; the CAS fails instead.
/// C1 is the main thread, after spawning the others: the interleaving
/// preempts it twice (after its look, after its lock), within the bound
/// `scripts/test` sets.
fn key_restore() {
    loom::model(|| {
        let e = Arc::new(Entry {
            key: AtomicU64::new(16),
            value: AtomicU64::new(8),
        });
        let on = |f: fn(&Entry) -> Vec<(u64, u64)>| {
            let e = e.clone();
            thread::spawn(move || f(&e))
        };
        let others = [
            on(|e| match try_swap(e, Link { key: 32, value: 24 }) {
                Some(Some(d)) => vec![(d.key, d.value), (0, 32)],
                Some(None) => vec![(0, 32)],
                None => vec![],
            }),
            on(|e| try_consume(e, 32).map(|v| (32, v)).into_iter().collect()),
            on(|e| {
                if try_insert(e, Link { key: 48, value: 40 }) {
                    vec![(0, 48)]
                } else {
                    vec![]
                }
            }),
        ];
        let mut taken: Vec<_> = try_consume(&e, 16).map(|v| (16, v)).into_iter().collect();
        let mut put = vec![(16, 8)];
        for p in others {
            for (key, value) in p.join().unwrap() {
                // (0, k): the party put link k in (its value is k - 8).
                if key == 0 {
                    put.push((value, value - 8));
                } else {
                    taken.push((key, value));
                }
            }
        }
        check_entry(&e, taken, put);
    });
}

#[test]
fn a_key_restored_by_cas_never_wipes_an_inserted_key() {
    key_restore();
}

/// v7's plain store in place of the CAS: the forced interleaving loses the
/// inserter's link.
#[test]
#[should_panic(expected = "a link was lost or duplicated")]
fn v7s_plain_store_restore_is_caught() {
    mutant::with(Mutant::CuckooRestoreStore, key_restore);
}

#[test]
#[should_panic(expected = "a link was lost or duplicated")]
fn a_plain_store_taking_an_entry_is_caught() {
    mutant::with(Mutant::CuckooInsertStore, three_parties_on_one_entry);
}
