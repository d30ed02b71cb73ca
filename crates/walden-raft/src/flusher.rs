//! [`Flusher`]: the thread that makes appended entries durable and only
//! then calls openraft's completion callbacks.
//!
//! `append` inserts records and hands (end LSN, callback) here, so it
//! returns without waiting for the sync. The thread takes every request
//! queued, flushes once to the highest LSN (one sync for the group) and
//! completes the callbacks in the order they came. Walden's log is one
//! sequence, so a durable LSN covers every record before it: a later vote or
//! truncation that is flushed on its own can never be durable while an
//! earlier append is not.

use std::io;
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;

use openraft::storage::LogFlushed;
use openraft::RaftTypeConfig;
use walden::{Lsn, Wal};

use crate::error::RaftStoreError;

/// One append waiting for durability.
struct Pending<C: RaftTypeConfig> {
    upto: Lsn,
    callback: LogFlushed<C>,
}

/// The flush thread and its queue. Dropping it drains the queue (every
/// callback is completed) and joins the thread.
pub(crate) struct Flusher<C: RaftTypeConfig> {
    queue: Option<Sender<Pending<C>>>,
    thread: Option<JoinHandle<()>>,
}

impl<C: RaftTypeConfig> Flusher<C> {
    /// Starts the thread flushing `wal` (in `dir`, for messages).
    pub(crate) fn start(wal: Arc<Wal>, dir: PathBuf) -> Result<Self, RaftStoreError> {
        let (queue, requests) = mpsc::channel();
        let name = format!("walden-raft-flush {}", dir.display());
        let thread = std::thread::Builder::new()
            .name(name)
            .spawn({
                let dir = dir.clone();
                move || flush_loop(&wal, &dir, requests)
            })
            .map_err(|source| RaftStoreError::FlushThread { dir, source })?;
        Ok(Flusher {
            queue: Some(queue),
            thread: Some(thread),
        })
    }

    /// Calls `callback` once everything below `upto` is durable, or with the
    /// error that prevented it.
    pub(crate) fn complete_when_durable(&self, upto: Lsn, callback: LogFlushed<C>) {
        let pending = Pending { upto, callback };
        let Some(queue) = &self.queue else {
            return stopped(pending);
        };
        if let Err(mpsc::SendError(pending)) = queue.send(pending) {
            stopped(pending);
        }
    }
}

/// Fails a request the thread can no longer take.
fn stopped<C: RaftTypeConfig>(pending: Pending<C>) {
    let err = io::Error::other(format!(
        "the flush thread has stopped; {} was not flushed",
        pending.upto
    ));
    pending.callback.log_io_completed(Err(err));
}

fn flush_loop<C: RaftTypeConfig>(wal: &Wal, dir: &std::path::Path, requests: Receiver<Pending<C>>) {
    while let Ok(first) = requests.recv() {
        let mut group = vec![first];
        group.extend(requests.try_iter());
        let upto = group.iter().map(|p| p.upto).max().unwrap_or(Lsn::INVALID);
        let result = wal.flush(upto);
        for pending in group {
            let outcome = match &result {
                Ok(_) => Ok(()),
                Err(e) => Err(io::Error::other(format!(
                    "flushing Walden log \"{}\" to {}: {e}",
                    dir.display(),
                    pending.upto
                ))),
            };
            pending.callback.log_io_completed(outcome);
        }
    }
}

impl<C: RaftTypeConfig> Drop for Flusher<C> {
    fn drop(&mut self) {
        // Closing the queue ends the loop once it has drained.
        self.queue = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
