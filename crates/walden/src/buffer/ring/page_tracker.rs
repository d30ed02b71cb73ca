//! What loom sees of the ring's page memory: under `cfg(loom)`, one
//! loom-tracked cell per slot stands for the slot's bytes (loom cannot see
//! plain memory). Initialising or loading a page is an exclusive access to
//! its cell; copying into a page, marking its header and reading it out are
//! shared accesses (inserters write disjoint bytes of one page at once). A
//! model in which a copy or a read is not ordered after the page's
//! initialisation by happens-before (the `page_end` publication) then
//! fails. In other builds the tracker is empty and its calls vanish.

/// See the module docs.
#[cfg(loom)]
#[derive(Debug)]
pub(super) struct PageTracker(Box<[loom::cell::UnsafeCell<()>]>);

#[cfg(loom)]
impl PageTracker {
    /// A cell for each of `pages` slots.
    pub(super) fn new(pages: usize) -> Self {
        PageTracker(
            (0..pages)
                .map(|_| loom::cell::UnsafeCell::new(()))
                .collect(),
        )
    }

    /// The slot's page is (re)initialised: no other access may race it.
    pub(super) fn exclusive(&self, slot: usize) {
        self.0[slot].with_mut(|_| ());
    }

    /// Bytes of the slot's initialised page are copied in or read out.
    pub(super) fn shared(&self, slot: usize) {
        self.0[slot].with(|_| ());
    }

    /// As [`PageTracker::shared`] for each of `slots`.
    pub(super) fn shared_slots(&self, slots: impl Iterator<Item = usize>) {
        slots.for_each(|slot| self.shared(slot));
    }
}

/// See the module docs.
#[cfg(not(loom))]
#[derive(Debug)]
pub(super) struct PageTracker;

#[cfg(not(loom))]
impl PageTracker {
    /// Nothing to track outside loom.
    #[inline(always)]
    pub(super) fn new(_pages: usize) -> Self {
        PageTracker
    }

    /// Nothing to track outside loom.
    #[inline(always)]
    pub(super) fn exclusive(&self, _slot: usize) {}

    /// Nothing to track outside loom.
    #[inline(always)]
    pub(super) fn shared(&self, _slot: usize) {}

    /// Nothing to track outside loom (the slots are never computed).
    #[inline(always)]
    pub(super) fn shared_slots(&self, _slots: impl Iterator<Item = usize>) {}
}
