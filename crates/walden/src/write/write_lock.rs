//! Who takes the write lock, and the background writer's hand-off
//! (seed 002: "the walwriter never succeeds taking the lwlock").
//!
//! Evictions (inserters that find a ring page unwritten) and flush leaders
//! take the write lock as ordinary lockers; the background writer takes it
//! as the priority locker of a [`crate::sync::HandoffLock`], so that with
//! [`crate::Config::write_lock_handoff`] it gets the lock at the next
//! release instead of being passed by every eviction that comes back for it
//! (see `sync::handoff_lock` for why a gate for one class rather than a
//! queue). Without the knob the lock behaves as the plain mutex it
//! replaced. Either way the writer counts the bytes each kind of caller
//! wrote and how many acquisitions passed the background writer while it
//! waited ([`super::WriterStats`]), so before and after are measured in one
//! run (`walden bench handoff`).

use super::{Writer, WriterState};
use crate::sync::HandoffGuard;

/// Who asks the writer to write: decides whether the write is made durable,
/// whose bytes it counts as, and how the write lock is taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Caller {
    /// An inserter freeing a ring page (PostgreSQL: `AdvanceXLInsertBuffer`):
    /// writes, does not sync.
    Eviction,
    /// A flush call (PostgreSQL: `XLogFlush`): writes and syncs.
    Flush,
    /// The background writer's round (PostgreSQL: `XLogBackgroundFlush`):
    /// writes and syncs, and is handed the write lock first.
    BackgroundWriter,
    /// An inserter writing a large record's whole pages straight from the
    /// caller's bytes ([`crate::Config::write_through_from`]): writes, does
    /// not sync.
    WriteThrough,
}

impl Writer {
    /// Takes the write lock for `caller`: as the priority locker for the
    /// background writer, recording how many acquisitions passed it.
    pub(super) fn lock_for(&self, caller: Caller) -> HandoffGuard<'_, WriterState> {
        if caller != Caller::BackgroundWriter {
            return self.state.lock();
        }
        let mut st = self.state.lock_priority();
        let overtaken = st.overtaken();
        st.stats.count_background_lock(overtaken);
        st
    }
}
