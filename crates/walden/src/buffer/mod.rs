//! The WAL buffer ring, how its pages get initialised, and how much is
//! written out when an inserter needs a slot whose page is still unwritten.

mod mapping_lock;
mod ring;

pub use mapping_lock::MappingLockInit;
pub use ring::{BufferRing, PageIdentity};

use crate::lsn::Lsn;

/// Which page-initialisation design to use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PageInitKind {
    /// One global lock; pages are initialised one at a time under it
    /// (PostgreSQL master: `WALBufMappingLock`).
    #[default]
    MappingLock,
}

/// How much to write when an inserter needs a slot whose page is unwritten.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Eviction {
    /// Write only what must be freed: up to the end of that one page
    /// (PostgreSQL master's `AdvanceXLInsertBuffer`).
    #[default]
    OnePage,
}

/// The page-initialisation strategy in use.
#[derive(Debug)]
pub enum PageInit {
    /// See [`PageInitKind::MappingLock`].
    MappingLock(MappingLockInit),
}

impl PageInit {
    /// A strategy whose pages below `initialized_upto` (page-aligned) are
    /// initialised already.
    pub fn new(kind: PageInitKind, initialized_upto: Lsn) -> Self {
        match kind {
            PageInitKind::MappingLock => {
                PageInit::MappingLock(MappingLockInit::new(initialized_upto))
            }
        }
    }

    /// Makes sure the page starting at `page_start` is initialised in the
    /// ring, initialising every page before it that is not. `written()`
    /// tells how far the writer has written; when a slot's previous page is
    /// not written yet, `evict(end of that page)` must write it out.
    ///
    /// The caller has advertised its progress on its insertion slot first,
    /// so that `evict` does not wait for the caller itself.
    pub fn ensure<E>(
        &self,
        ring: &BufferRing,
        page_start: Lsn,
        written: impl Fn() -> Lsn,
        evict: impl FnMut(Lsn) -> Result<(), E>,
    ) -> Result<(), E> {
        match self {
            PageInit::MappingLock(m) => m.ensure(ring, page_start, written, evict),
        }
    }
}
