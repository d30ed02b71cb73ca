//! The WAL buffer ring, how its pages get initialised, and how much is
//! written out when an inserter needs a slot whose page is still unwritten.

mod cooperative;
mod eviction;
mod init_ahead;
mod link_cell;
mod mapping_lock;
mod page_zeroing;
mod ring;

pub use cooperative::CooperativeInit;
pub use eviction::{Eviction, SwitchEviction};
#[cfg(all(test, shuttle))]
pub(crate) use link_cell::Atomic32;
pub use link_cell::LinkCell;
pub use mapping_lock::MappingLockInit;
pub use page_zeroing::PageZeroing;
pub use ring::{BufferRing, PageIdentity};

use std::time::Duration;

use crate::lsn::Lsn;
use crate::named_enum::named_enum;

/// Which page-initialisation design to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PageInitKind {
    /// One global lock; pages are initialised one at a time under it
    /// (PostgreSQL master: `WALBufMappingLock`).
    #[default]
    MappingLock,
    /// No lock: inserters claim the pages to initialise by CAS, publish
    /// them, and advance the initialised prefix together (seed 000, as
    /// PostgreSQL committed it in `bc22dc0e0d`); see `buffer::cooperative`.
    Cooperative,
}

impl PageInitKind {
    /// Every design, for command-line help and benchmarks.
    pub const ALL: [PageInitKind; 2] = [PageInitKind::MappingLock, PageInitKind::Cooperative];

    /// The design's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            PageInitKind::MappingLock => "mapping-lock",
            PageInitKind::Cooperative => "cooperative",
        }
    }
}

named_enum!(PageInitKind, "page initialisation");

/// The page-initialisation strategy in use.
// One per log: the cache-padded counters of the cooperative design make it
// large, and boxing would only add a pointer chase on a page miss.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum PageInit {
    /// See [`PageInitKind::MappingLock`].
    MappingLock(MappingLockInit),
    /// See [`PageInitKind::Cooperative`].
    Cooperative(CooperativeInit),
}

impl PageInit {
    /// A strategy whose pages below `initialized_upto` (page-aligned) are
    /// initialised already; `stuck_wait` limits the cooperative design's
    /// waits for pages other threads claimed (see [`CooperativeInit::new`]).
    pub fn new(kind: PageInitKind, initialized_upto: Lsn, stuck_wait: Option<Duration>) -> Self {
        match kind {
            PageInitKind::MappingLock => {
                PageInit::MappingLock(MappingLockInit::new(initialized_upto))
            }
            PageInitKind::Cooperative => {
                PageInit::Cooperative(CooperativeInit::new(initialized_upto, stuck_wait))
            }
        }
    }

    /// Makes sure the page starting at `page_start` is initialised in the
    /// ring, initialising every page before it that is not. `written()`
    /// tells how far the writer has written; when a slot's previous page is
    /// not written yet, `evict(end of that page)` must write it out.
    ///
    /// The caller has advertised its progress on its insertion slot first,
    /// so that `evict` does not wait for the caller itself. `evict` fails
    /// only once the log is poisoned, after which nothing is written out
    /// again; its error is returned.
    ///
    /// Called inside the insert path's critical section: nothing here
    /// unwinds (a panic there aborts the process), and every wait ends only
    /// when its condition holds.
    pub fn ensure<E>(
        &self,
        ring: &BufferRing,
        page_start: Lsn,
        written: impl Fn() -> Lsn,
        evict: impl FnMut(Lsn) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            PageInit::MappingLock(m) => m.ensure(ring, page_start, written, evict),
            PageInit::Cooperative(c) => c.ensure(ring, page_start, written, evict),
        }
    }
}
