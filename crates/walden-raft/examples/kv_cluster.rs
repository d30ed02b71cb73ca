//! A three-node openraft cluster in one process, each node keeping its raft
//! log in its own Walden log ([`WaldenLogStore`]) and replicating a small
//! key-value store. One follower is stopped, the cluster goes on without
//! it, and the follower is restarted from its directory: its log comes back
//! from disk (the store keeps only an index and a small cache of recent
//! entries in memory, and reads the rest from the WAL), and it catches up
//! with what it missed.
//!
//! Run with `cargo run -p walden-raft --example kv_cluster`; it exits
//! non-zero if any check fails. `cargo test` runs it too (as the test at
//! the end of this file).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Cursor;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context, Result};
use openraft::error::{InstallSnapshotError, RPCError, RaftError, RemoteError, Unreachable};
use openraft::network::RPCOption;
use openraft::raft::{
    AppendEntriesRequest, AppendEntriesResponse, InstallSnapshotRequest, InstallSnapshotResponse,
    VoteRequest, VoteResponse,
};
use openraft::{BasicNode, EntryPayload, Raft, RaftLogReader, RaftNetwork, RaftNetworkFactory};
use serde::{Deserialize, Serialize};
use walden::{Config, SyncMethod};
use walden_raft::{AppState, MemStateMachine, StoreOptions, WaldenLogStore};

/// A write to the key-value store.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Set {
    key: String,
    value: String,
}

/// The value a write replaced.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct Replaced(Option<String>);

openraft::declare_raft_types!(
    /// The cluster's types: `Set` requests, answered with the replaced value.
    KvConfig: D = Set, R = Replaced
);

/// The replicated key-value store.
#[derive(Default, Serialize, Deserialize)]
struct Kv(BTreeMap<String, String>);

impl AppState<KvConfig> for Kv {
    fn apply(&mut self, request: &Set) -> Replaced {
        Replaced(self.0.insert(request.key.clone(), request.value.clone()))
    }
}

type NodeId = u64;
type KvMachine = MemStateMachine<KvConfig, Kv>;
type KvRaft = Raft<KvConfig>;

/// The in-process network: RPCs are calls on the target's `Raft` handle.
#[derive(Clone, Default)]
struct Router {
    nodes: Arc<Mutex<BTreeMap<NodeId, KvRaft>>>,
}

impl Router {
    fn connect(&self, id: NodeId, raft: KvRaft) {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, raft);
    }

    fn disconnect(&self, id: NodeId) {
        self.nodes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&id);
    }

    /// The target's handle, or `Unreachable` while it is stopped.
    fn get(&self, id: NodeId) -> Result<KvRaft, Unreachable> {
        let nodes = self.nodes.lock().unwrap_or_else(|e| e.into_inner());
        nodes
            .get(&id)
            .cloned()
            .ok_or_else(|| Unreachable::new(&std::io::Error::other(format!("node {id} is down"))))
    }
}

/// A connection from one node to `target`.
struct Connection {
    router: Router,
    target: NodeId,
}

impl RaftNetworkFactory<KvConfig> for Router {
    type Network = Connection;

    async fn new_client(&mut self, target: NodeId, _node: &BasicNode) -> Connection {
        Connection {
            router: self.clone(),
            target,
        }
    }
}

type RpcResult<T, E = openraft::error::Infallible> =
    Result<T, RPCError<NodeId, BasicNode, RaftError<NodeId, E>>>;

impl RaftNetwork<KvConfig> for Connection {
    async fn append_entries(
        &mut self,
        rpc: AppendEntriesRequest<KvConfig>,
        _option: RPCOption,
    ) -> RpcResult<AppendEntriesResponse<NodeId>> {
        let raft = self.router.get(self.target)?;
        raft.append_entries(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target, e).into())
    }

    async fn install_snapshot(
        &mut self,
        rpc: InstallSnapshotRequest<KvConfig>,
        _option: RPCOption,
    ) -> RpcResult<InstallSnapshotResponse<NodeId>, InstallSnapshotError> {
        let raft = self.router.get(self.target)?;
        raft.install_snapshot(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target, e).into())
    }

    async fn vote(
        &mut self,
        rpc: VoteRequest<NodeId>,
        _option: RPCOption,
    ) -> RpcResult<VoteResponse<NodeId>> {
        let raft = self.router.get(self.target)?;
        raft.vote(rpc)
            .await
            .map_err(|e| RemoteError::new(self.target, e).into())
    }
}

/// A running node: its raft handle and its state machine.
struct Node {
    raft: KvRaft,
    kv: KvMachine,
}

const WAIT: Option<Duration> = Some(Duration::from_secs(10));

fn wal_config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    }
}

/// A deliberately small cache of recent entries (4 kB, a few dozen
/// entries), so that a follower catching up, and the reopened log, are
/// read from the WAL.
fn store_options() -> StoreOptions {
    StoreOptions::default().with_cache_bytes(4 << 10)
}

/// Opens node `id`'s log store in `dir` (created if missing).
fn open_store(dir: &Path) -> Result<WaldenLogStore<KvConfig>> {
    Ok(WaldenLogStore::open_with(
        dir,
        wal_config(),
        store_options(),
    )?)
}

/// Starts node `id` on the Walden log in `dir` (created if missing).
async fn start(id: NodeId, dir: &Path, router: &Router) -> Result<Node> {
    start_on(id, open_store(dir)?, router).await
}

async fn start_on(id: NodeId, store: WaldenLogStore<KvConfig>, router: &Router) -> Result<Node> {
    let config = openraft::Config {
        cluster_name: "walden-kv".into(),
        heartbeat_interval: 100,
        election_timeout_min: 400,
        election_timeout_max: 800,
        ..Default::default()
    };
    let kv = KvMachine::new();
    let raft = Raft::new(
        id,
        Arc::new(config.validate()?),
        router.clone(),
        store,
        kv.clone(),
    )
    .await?;
    router.connect(id, raft.clone());
    Ok(Node { raft, kv })
}

/// Writes `key = value` through the leader.
async fn set(leader: &KvRaft, key: &str, value: &str) -> Result<()> {
    leader
        .client_write(Set {
            key: key.into(),
            value: value.into(),
        })
        .await?;
    Ok(())
}

/// Waits until `node` has applied everything up to `index`.
async fn wait_applied(node: &Node, index: u64, what: &str) -> Result<()> {
    node.raft
        .wait(WAIT)
        .applied_index_at_least(Some(index), what)
        .await?;
    Ok(())
}

/// The keys and values of a node's state machine.
fn contents(node: &Node) -> BTreeMap<String, String> {
    node.kv.read(|kv| kv.0.clone())
}

#[tokio::main]
async fn main() -> Result<()> {
    run().await
}

/// Starts the cluster, writes, stops and restarts a follower, and checks
/// every node's data at each step.
async fn run() -> Result<()> {
    let root = tempfile::tempdir()?;
    let dir = |id: NodeId| root.path().join(format!("node-{id}"));
    let router = Router::default();
    let mut nodes = BTreeMap::new();
    for id in 1..=3 {
        nodes.insert(id, start(id, &dir(id), &router).await?);
    }
    let members: BTreeMap<NodeId, BasicNode> =
        (1..=3).map(|id| (id, BasicNode::default())).collect();
    nodes[&1].raft.initialize(members).await?;
    let metrics = nodes[&1]
        .raft
        .wait(WAIT)
        .metrics(|m| m.current_leader.is_some(), "a leader is elected")
        .await?;
    let leader_id = metrics.current_leader.context("no leader")?;
    println!("node {leader_id} leads");

    for i in 1..=10 {
        set(
            &nodes[&leader_id].raft,
            &format!("key-{i}"),
            &format!("value-{i}"),
        )
        .await?;
    }
    let last = nodes[&leader_id]
        .raft
        .metrics()
        .borrow()
        .last_log_index
        .context("the leader has no log")?;
    let mut want: BTreeMap<String, String> = (1..=10)
        .map(|i| (format!("key-{i}"), format!("value-{i}")))
        .collect();
    for (id, node) in &nodes {
        wait_applied(node, last, "the first writes are applied everywhere").await?;
        if contents(node) != want {
            bail!("node {id} holds {:?}, want {want:?}", contents(node));
        }
    }
    println!("all three nodes hold {} keys", want.len());

    let stopped = (1..=3).find(|&id| id != leader_id).context("no follower")?;
    let node = nodes.remove(&stopped).context("follower missing")?;
    node.raft.shutdown().await?;
    router.disconnect(stopped);
    drop(node);
    println!("node {stopped} stopped");

    for i in 11..=15 {
        set(
            &nodes[&leader_id].raft,
            &format!("key-{i}"),
            &format!("value-{i}"),
        )
        .await?;
        want.insert(format!("key-{i}"), format!("value-{i}"));
    }
    println!("five more writes committed by the two remaining nodes");

    let mut store = open_store(&dir(stopped))?;
    let recovered: BTreeSet<String> = store
        .try_get_log_entries(..)
        .await?
        .into_iter()
        .filter_map(|e| match e.payload {
            EntryPayload::Normal(set) => Some(set.key),
            _ => None,
        })
        .collect();
    let first_ten: BTreeSet<String> = (1..=10).map(|i| format!("key-{i}")).collect();
    if recovered != first_ten {
        bail!("node {stopped}'s log reopened with writes to {recovered:?}, want {first_ten:?}");
    }
    println!(
        "node {stopped}'s Walden log reopened with its 10 writes, read back from the WAL \
         ({} bytes of index and cache in memory)",
        store.memory_footprint()
    );

    let node = start_on(stopped, store, &router).await?;
    let last = nodes[&leader_id]
        .raft
        .metrics()
        .borrow()
        .last_log_index
        .context("the leader has no log")?;
    wait_applied(&node, last, "the restarted node catches up").await?;
    if contents(&node) != want {
        bail!(
            "restarted node {stopped} holds {:?}, want {want:?}",
            contents(&node)
        );
    }
    println!("node {stopped} restarted and holds all {} keys", want.len());
    nodes.insert(stopped, node);

    for node in nodes.values() {
        node.raft.shutdown().await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_restarted_node_keeps_its_log_and_catches_up() {
        super::run().await.unwrap();
    }
}
