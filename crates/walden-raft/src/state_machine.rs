//! [`MemStateMachine`]: an in-memory openraft state machine with in-memory
//! snapshots, to pair with [`crate::WaldenLogStore`] in tests and examples.
//!
//! It persists nothing: after a restart it is empty, and openraft rebuilds
//! it by re-applying the committed entries the log store kept (or by
//! installing a snapshot from the leader).

use std::io::Cursor;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use openraft::storage::RaftStateMachine;
use openraft::{
    AnyError, Entry, EntryPayload, LogId, RaftSnapshotBuilder, RaftTypeConfig, Snapshot,
    SnapshotMeta, StorageError, StorageIOError, StoredMembership,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// The application state a [`MemStateMachine`] holds: how it applies a
/// request. Snapshots are its JSON serialisation.
pub trait AppState<C: RaftTypeConfig>:
    Default + Serialize + DeserializeOwned + Send + Sync + 'static
{
    /// Applies one committed request and returns the client's response.
    fn apply(&mut self, request: &C::D) -> C::R;
}

/// An in-memory state machine for openraft over application state `A`.
/// Clones share the same state (a clone is the snapshot builder).
pub struct MemStateMachine<C: RaftTypeConfig, A> {
    inner: Arc<Mutex<Machine<C, A>>>,
}

struct Machine<C: RaftTypeConfig, A> {
    applied: Applied<C, A>,
    /// The current snapshot.
    snapshot: Option<StoredSnapshot<C>>,
    /// Snapshots built so far, to make snapshot ids unique.
    built: u64,
}

/// A snapshot kept in memory.
struct StoredSnapshot<C: RaftTypeConfig> {
    meta: SnapshotMeta<C::NodeId, C::Node>,
    data: Vec<u8>,
}

/// What a snapshot holds.
struct Applied<C: RaftTypeConfig, A> {
    last: Option<LogId<C::NodeId>>,
    membership: StoredMembership<C::NodeId, C::Node>,
    app: A,
}

impl<C: RaftTypeConfig, A: Default> Default for MemStateMachine<C, A> {
    fn default() -> Self {
        let applied = Applied {
            last: None,
            membership: StoredMembership::default(),
            app: A::default(),
        };
        MemStateMachine {
            inner: Arc::new(Mutex::new(Machine {
                applied,
                snapshot: None,
                built: 0,
            })),
        }
    }
}

impl<C: RaftTypeConfig, A> Clone for MemStateMachine<C, A> {
    fn clone(&self) -> Self {
        MemStateMachine {
            inner: self.inner.clone(),
        }
    }
}

impl<C: RaftTypeConfig, A> MemStateMachine<C, A> {
    /// An empty state machine.
    pub fn new() -> Self
    where
        A: Default,
    {
        Self::default()
    }

    /// Runs `f` on the application state.
    pub fn read<T>(&self, f: impl FnOnce(&A) -> T) -> T {
        f(&self.lock().applied.app)
    }

    fn lock(&self) -> MutexGuard<'_, Machine<C, A>> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<C: RaftTypeConfig, A: AppState<C>> Applied<C, A> {
    fn encode(&self) -> Result<Vec<u8>, serde_json::Error> {
        serde_json::to_vec(&(&self.last, &self.membership, &self.app))
    }

    fn decode(data: &[u8]) -> Result<Self, serde_json::Error> {
        let (last, membership, app) = serde_json::from_slice(data)?;
        Ok(Applied {
            last,
            membership,
            app,
        })
    }
}

impl<C, A> RaftSnapshotBuilder<C> for MemStateMachine<C, A>
where
    C: RaftTypeConfig<Entry = Entry<C>, SnapshotData = Cursor<Vec<u8>>>,
    C::R: Default,
    A: AppState<C>,
{
    async fn build_snapshot(&mut self) -> Result<Snapshot<C>, StorageError<C::NodeId>> {
        let mut machine = self.lock();
        let data = machine
            .applied
            .encode()
            .map_err(|e| StorageIOError::read_state_machine(AnyError::new(&e)))?;
        machine.built += 1;
        let last = machine.applied.last.clone();
        let at = last
            .as_ref()
            .map_or_else(|| String::from("none"), |l| l.to_string());
        let meta = SnapshotMeta {
            last_log_id: last,
            last_membership: machine.applied.membership.clone(),
            snapshot_id: format!("{at}-{}", machine.built),
        };
        machine.snapshot = Some(StoredSnapshot {
            meta: meta.clone(),
            data: data.clone(),
        });
        Ok(Snapshot {
            meta,
            snapshot: Box::new(Cursor::new(data)),
        })
    }
}

impl<C, A> RaftStateMachine<C> for MemStateMachine<C, A>
where
    C: RaftTypeConfig<Entry = Entry<C>, SnapshotData = Cursor<Vec<u8>>>,
    C::R: Default,
    A: AppState<C>,
{
    type SnapshotBuilder = Self;

    async fn applied_state(
        &mut self,
    ) -> Result<
        (
            Option<LogId<C::NodeId>>,
            StoredMembership<C::NodeId, C::Node>,
        ),
        StorageError<C::NodeId>,
    > {
        let machine = self.lock();
        Ok((
            machine.applied.last.clone(),
            machine.applied.membership.clone(),
        ))
    }

    async fn apply<I>(&mut self, entries: I) -> Result<Vec<C::R>, StorageError<C::NodeId>>
    where
        I: IntoIterator<Item = C::Entry> + openraft::OptionalSend,
        I::IntoIter: openraft::OptionalSend,
    {
        let mut machine = self.lock();
        let applied = &mut machine.applied;
        let mut responses = Vec::new();
        for entry in entries {
            applied.last = Some(entry.log_id.clone());
            responses.push(match entry.payload {
                EntryPayload::Blank => C::R::default(),
                EntryPayload::Normal(request) => applied.app.apply(&request),
                EntryPayload::Membership(membership) => {
                    applied.membership = StoredMembership::new(Some(entry.log_id), membership);
                    C::R::default()
                }
            });
        }
        Ok(responses)
    }

    async fn get_snapshot_builder(&mut self) -> Self::SnapshotBuilder {
        self.clone()
    }

    async fn begin_receiving_snapshot(
        &mut self,
    ) -> Result<Box<Cursor<Vec<u8>>>, StorageError<C::NodeId>> {
        Ok(Box::new(Cursor::new(Vec::new())))
    }

    async fn install_snapshot(
        &mut self,
        meta: &SnapshotMeta<C::NodeId, C::Node>,
        snapshot: Box<Cursor<Vec<u8>>>,
    ) -> Result<(), StorageError<C::NodeId>> {
        let data = snapshot.into_inner();
        let applied = Applied::decode(&data).map_err(|e| {
            StorageIOError::read_snapshot(Some(meta.signature()), AnyError::new(&e))
        })?;
        let mut machine = self.lock();
        machine.applied = applied;
        machine.snapshot = Some(StoredSnapshot {
            meta: meta.clone(),
            data,
        });
        Ok(())
    }

    async fn get_current_snapshot(
        &mut self,
    ) -> Result<Option<Snapshot<C>>, StorageError<C::NodeId>> {
        Ok(self.lock().snapshot.as_ref().map(|s| Snapshot {
            meta: s.meta.clone(),
            snapshot: Box::new(Cursor::new(s.data.clone())),
        }))
    }
}
