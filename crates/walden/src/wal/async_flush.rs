//! [`Wal::flush_async`]: a future that completes once an LSN is durable,
//! woken by the background writer, so no executor thread ever blocks in a
//! write or a sync.
//!
//! The future files its waker in the log's [`AsyncWaiters`] and kicks the
//! background writer; each round of the writer makes everything inserted
//! durable, then wakes the waiters it covered and, while any remain
//! (inserted after its round began), runs another round at once. A failed
//! write or sync poisons the log, and the writer wakes every waiter to
//! collect the error.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::{Shared, Wal};
use crate::error::Error;
use crate::lsn::Lsn;
use crate::sync::async_waiters::{AsyncWaiters, WaiterKey};
use crate::write::WriteError;

impl Shared {
    /// After a background round: wakes the async flushes it made durable;
    /// returns whether some still wait (for another round).
    pub(super) fn wake_async_flushes(&self) -> bool {
        if self.insert.writer.check().is_err() {
            self.durable.wake_all();
            return false;
        }
        self.durable.wake_reached(self.insert.writer.flushed().0)
    }
}

/// The future of [`Wal::flush_async`]: resolves to the LSN then durable
/// (at least the one asked for), or the error that poisoned the log.
#[derive(Debug)]
#[must_use = "a future does nothing unless polled"]
pub struct FlushFuture<'a> {
    wal: &'a Wal,
    upto: Lsn,
    /// Why it fails at once (no background writer, a bad LSN), if it does.
    refused: Option<Error>,
    key: Option<WaiterKey>,
}

impl Wal {
    /// Waits asynchronously until everything below `upto` is durable; the
    /// async form of [`Wal::flush`], for executors such as tokio. The
    /// future does no I/O itself: the background writer writes and syncs
    /// and wakes it, so it never blocks the thread polling it. It resolves
    /// to the LSN now durable.
    ///
    /// It needs the background writer ([`crate::Config::writer_delay`] set,
    /// as by default): without one it resolves to
    /// [`Error::NoBackgroundWriter`]. Like `flush`, it fails with
    /// [`Error::FlushBeyondEnd`] for an LSN past anything inserted, and
    /// with the log's poisoning error once a write or sync has failed.
    ///
    /// ```
    /// # use walden::{Config, Record, SyncMethod, Wal};
    /// # let dir = tempfile::tempdir().unwrap();
    /// let wal = Wal::create(dir.path(), Config { segment_size: 1 << 20, ..Config::default() })?;
    /// let end = wal.insert(&Record::new(128, 0, b"hello".to_vec()))?;
    /// let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let durable = rt.block_on(wal.flush_async(end))?;
    /// assert!(durable >= end && wal.flushed() >= end);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn flush_async(&self, upto: Lsn) -> FlushFuture<'_> {
        let refused = if self._writer.is_none() {
            Some(Error::NoBackgroundWriter)
        } else {
            self.shared.insert.flushable_end(upto).err()
        };
        FlushFuture {
            wal: self,
            upto,
            refused,
            key: None,
        }
    }
}

impl FlushFuture<'_> {
    /// The result if it is known now.
    fn settled(&mut self) -> Option<Result<Lsn, Error>> {
        if let Some(e) = self.refused.take() {
            return Some(Err(e));
        }
        let writer = &self.wal.shared.insert.writer;
        if let Err(e) = writer.check() {
            return Some(Err(e.into()));
        }
        let flushed = writer.flushed();
        (flushed >= self.upto).then_some(Ok(flushed))
    }

    fn waiters(&self) -> &AsyncWaiters {
        &self.wal.shared.durable
    }
}

impl Future for FlushFuture<'_> {
    type Output = Result<Lsn, Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let Some(done) = this.settled() {
            return Poll::Ready(done);
        }
        let first = this.key.is_none();
        let mut key = this.key;
        let filed = this.waiters().register(&mut key, this.upto.0, cx.waker());
        this.key = key;
        if !filed {
            // Closed: the writer found the log poisoned.
            return Poll::Ready(Err(WriteError::Poisoned.into()));
        }
        // The re-check after filing that `AsyncWaiters` asks for: the
        // writer may have advanced between the first check and the filing.
        if let Some(done) = this.settled() {
            return Poll::Ready(done);
        }
        if first {
            this.wal.shared.background.request();
        }
        Poll::Pending
    }
}

impl Drop for FlushFuture<'_> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.waiters().deregister(key);
        }
    }
}
