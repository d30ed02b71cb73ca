//! loom model of the in-buffer prev-link handoff (seed 003), on the real
//! [`LinkCell`] over loom's atomics: a link is published as two 32-bit
//! halves, the high one Relaxed and then the low one with Release, and
//! taken by an Acquire read of the low half before a Relaxed read of the
//! high one. A reader that sees the low half but an older high half gets a
//! torn link, which the model asserts never happens. Mutants: the
//! publication or the take weakened to Relaxed (`sync::mutant`).

use super::LinkCell;
use crate::lsn::Lsn;
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc, AtomicU32};

/// The links of the second and third records: each differs from the
/// cell's initial zeros in both halves, so a torn read shows.
const FIRST: Lsn = Lsn(0x1_0000_0018);
const SECOND: Lsn = Lsn(0x2_0000_0040);

type Cells = [(AtomicU32, AtomicU32); 2];

fn cell(cells: &Cells, i: usize) -> LinkCell<'_, AtomicU32> {
    LinkCell::new(&cells[i].0, &cells[i].1)
}

/// Waits for cell `i`'s link and asserts it arrived whole.
fn take_whole(cells: &Cells, i: usize, expected: Lsn) {
    let got = cell(cells, i).wait(|| Ok::<(), ()>(())).unwrap();
    assert_eq!(got, expected, "a link arrived torn");
}

/// Three records in a row: the first inserter publishes the second's
/// link, whose inserter waits for it and then publishes the third's,
/// which the third waits for.
fn chain_model() {
    loom::model(|| {
        let cells: Arc<Cells> = Arc::new([
            (AtomicU32::new(0), AtomicU32::new(0)),
            (AtomicU32::new(0), AtomicU32::new(0)),
        ]);
        let (c2, c3) = (cells.clone(), cells.clone());
        let second = thread::spawn(move || {
            take_whole(&c2, 0, FIRST);
            cell(&c2, 1).publish(SECOND);
        });
        let third = thread::spawn(move || take_whole(&c3, 1, SECOND));
        cell(&cells, 0).publish(FIRST);
        second.join().unwrap();
        third.join().unwrap();
    });
}

/// Every link arrives whole (both halves), whatever the interleaving.
#[test]
fn links_hand_over_whole_along_a_chain() {
    chain_model();
}

#[test]
#[should_panic(expected = "a link arrived torn")]
fn a_relaxed_link_publication_is_caught() {
    mutant::with(Mutant::LinkPublishRelaxed, chain_model);
}

#[test]
#[should_panic(expected = "a link arrived torn")]
fn a_relaxed_link_take_is_caught() {
    mutant::with(Mutant::LinkTakeRelaxed, chain_model);
}
