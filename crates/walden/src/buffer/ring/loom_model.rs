//! loom model of the ring's page publication, on the real [`BufferRing`]:
//! an initialiser publishes a page (`init_page`: zero, header, `page_end`
//! with Release) while an inserter waits until the ring `holds` it
//! (Acquire) and copies in. The page memory is loom-tracked through the
//! ring's `PageTracker`, so a copy that is not ordered after the zeroing
//! fails the model; the bytes read back check that the zeroing did not
//! land after the copy. Mutants: the publication or the read weakened to
//! Relaxed (`sync::mutant`).

use super::{BufferRing, PageIdentity};
use crate::buffer::page_zeroing::PageZeroing;
use crate::format::page::XLP_PAGEADDR;
use crate::format::WalFormat;
use crate::lsn::{Lsn, SegmentSize, PAGE_SIZE};
use crate::sync::mutant::{self, Mutant};
use crate::sync::{thread, Arc};

/// Where the inserter's bytes go on the page: just past the short header.
const COPY_AT: u64 = 24;

fn page_publication() {
    loom::model(|| {
        let seg = SegmentSize::new(1 << 20).unwrap();
        let id = PageIdentity {
            timeline: 1,
            system_id: 7,
            format: WalFormat::Postgres15,
        };
        // Zeroing whole pages, so that a copy the zeroing overran shows.
        let ring = Arc::new(BufferRing::new(2, seg, id).zeroing(PageZeroing::WholePage));
        let page = Lsn(PAGE_SIZE);
        let r2 = ring.clone();
        let inserter = thread::spawn(move || {
            while !r2.holds(page) {
                thread::yield_now();
            }
            // SAFETY: the page is published; these bytes are ours.
            unsafe { r2.copy_in(Lsn(page.0 + COPY_AT), &[0xAB; 8]) };
        });
        // SAFETY: no one else initialises or copies before it is published.
        unsafe { ring.init_page(page, 0) };
        inserter.join().unwrap();
        // SAFETY: every thread is done.
        let bytes = unsafe { ring.range(page, Lsn(page.0 + PAGE_SIZE)) };
        let at = COPY_AT as usize;
        assert_eq!(&bytes[at..at + 8], &[0xAB; 8], "the copy was zeroed");
        assert_eq!(
            &bytes[XLP_PAGEADDR],
            &page.0.to_le_bytes(),
            "the page header"
        );
    });
}

/// An inserter that sees the page published copies after its zeroing.
#[test]
fn a_copy_follows_the_initialisation_it_saw() {
    page_publication();
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_page_publication_is_caught() {
    mutant::with(Mutant::RingPublishRelaxed, page_publication);
}

#[test]
#[should_panic(expected = "Causality violation")]
fn a_relaxed_holds_check_is_caught() {
    mutant::with(Mutant::RingHoldsRelaxed, page_publication);
}
