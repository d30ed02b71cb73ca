//! Segment files as the writer sees them: opened on demand, created
//! zero-filled when missing, and the next one prepared ahead of need by a
//! background thread (PostgreSQL: `XLogFileInit`, `PreallocXlogFiles`).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::error::Error;
use crate::segment::{SegmentError, SegmentFiles, StorageFile};
use crate::write::{SegmentOpener, SyncMethod};

/// Serialises "does segment N exist? create it" between the writer, the
/// preallocator and checkpoint recycling, so no name is created twice.
#[derive(Debug)]
pub(crate) struct Segments {
    files: SegmentFiles,
    creating: Mutex<()>,
    prealloc: Arc<PreallocState>,
}

#[derive(Debug, Default)]
struct PreallocRequest {
    /// Highest segment that should exist.
    want: u64,
    stop: bool,
}

#[derive(Debug, Default)]
struct PreallocState {
    request: Mutex<PreallocRequest>,
    wake: Condvar,
}

/// The preallocator thread; stopped and joined on drop.
#[derive(Debug)]
pub(crate) struct Preallocator {
    state: Arc<PreallocState>,
    thread: Option<JoinHandle<()>>,
}

impl Segments {
    pub(crate) fn new(files: SegmentFiles) -> Self {
        Segments {
            files,
            creating: Mutex::new(()),
            prealloc: Arc::default(),
        }
    }

    pub(crate) fn files(&self) -> &SegmentFiles {
        &self.files
    }

    /// Creates segment `segno` zero-filled unless it exists.
    pub(crate) fn ensure(&self, segno: u64) -> Result<(), SegmentError> {
        let _g = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        if !self.files.exists(segno)? {
            self.files.create_zeroed(segno)?;
        }
        Ok(())
    }

    /// Runs `f` with segment creation held off (checkpoint recycling).
    pub(crate) fn exclusively<T>(&self, f: impl FnOnce(&SegmentFiles) -> T) -> T {
        let _g = self.creating.lock().unwrap_or_else(|e| e.into_inner());
        f(&self.files)
    }

    /// Starts the preallocator thread for `this`.
    pub(crate) fn start_preallocator(
        this: &Arc<crate::wal::Shared>,
    ) -> Result<Preallocator, Error> {
        let state = this.segments.prealloc.clone();
        let shared = Arc::downgrade(this);
        let thread_state = state.clone();
        let thread = std::thread::Builder::new()
            .name("walden-prealloc".into())
            .spawn(move || loop {
                let want = {
                    let mut req = thread_state
                        .request
                        .lock()
                        .unwrap_or_else(|e| e.into_inner());
                    loop {
                        if req.stop {
                            return;
                        }
                        if req.want != 0 {
                            break std::mem::take(&mut req.want);
                        }
                        req = thread_state
                            .wake
                            .wait(req)
                            .unwrap_or_else(|e| e.into_inner());
                    }
                };
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                // A failure here (ENOSPC, say) is not fatal: the writer
                // creates the segment itself when it needs it and reports
                // the error then.
                let _ = shared.segments.ensure(want);
            })
            .map_err(|source| Error::Thread {
                name: "segment preallocator",
                source,
            })?;
        Ok(Preallocator {
            state,
            thread: Some(thread),
        })
    }
}

impl SegmentOpener for Segments {
    fn open_segment(
        &self,
        segno: u64,
        method: SyncMethod,
    ) -> Result<Box<dyn StorageFile>, SegmentError> {
        self.ensure(segno)?;
        self.files.open_for_write(segno, method.file_mode())
    }

    fn entered_segment(&self, segno: u64) {
        let mut req = self
            .prealloc
            .request
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        req.want = req.want.max(segno + 1);
        self.prealloc.wake.notify_one();
    }
}

impl Drop for Preallocator {
    fn drop(&mut self) {
        self.state
            .request
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stop = true;
        self.state.wake.notify_one();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
