//! Baseline page initialisation: one global lock.
//!
//! PostgreSQL master: `AdvanceXLInsertBuffer` under `WALBufMappingLock`.
//! `initialized_upto` (the end of the last initialised page) advances one
//! page at a time under the lock. When a slot's previous page is still
//! unwritten, the lock is dropped while it is written out, so inserters it
//! waits for can themselves initialise pages.

use crate::lsn::{Lsn, PAGE_SIZE};
use crate::sync::Mutex;

use super::BufferRing;

/// See the module docs.
#[derive(Debug)]
pub struct MappingLockInit {
    /// End of the last initialised page (PostgreSQL: `InitializedUpTo`).
    pub(super) initialized_upto: Mutex<Lsn>,
}

impl MappingLockInit {
    /// Pages below `initialized_upto` are initialised already.
    pub fn new(initialized_upto: Lsn) -> Self {
        MappingLockInit {
            initialized_upto: Mutex::new(initialized_upto),
        }
    }

    /// See [`super::PageInit::ensure`].
    pub fn ensure<E>(
        &self,
        ring: &BufferRing,
        page_start: Lsn,
        written: impl Fn() -> Lsn,
        mut evict: impl FnMut(Lsn) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut upto = self
            .initialized_upto
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        while *upto <= page_start {
            let next = *upto;
            let occupant = ring.occupant_end(next);
            if occupant > written() {
                drop(upto);
                evict(occupant)?;
                upto = self
                    .initialized_upto
                    .lock()
                    .unwrap_or_else(|e| e.into_inner());
                continue;
            }
            // SAFETY: the mapping lock makes us the only initialiser, the
            // slot's previous page is written (checked just above), and no
            // inserter copies into page `next` before `holds` sees it
            // published.
            unsafe { ring.init_page(next, 0) };
            *upto = Lsn(next.0 + PAGE_SIZE);
        }
        Ok(())
    }
}
