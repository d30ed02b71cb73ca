//! openraft's own storage test suite, run against the Walden log store
//! (each store in a fresh temporary directory) and the in-memory state
//! machine.

mod common;

use common::{wal_config, Applied, Store, TestConfig};
use openraft::testing::{StoreBuilder, Suite};
use openraft::{ErrorSubject, ErrorVerb, StorageError};
use tempfile::TempDir;
use walden_raft::MemStateMachine;

type StateMachine = MemStateMachine<TestConfig, Applied>;

struct WaldenBuilder;

impl StoreBuilder<TestConfig, Store, StateMachine, TempDir> for WaldenBuilder {
    async fn build(&self) -> Result<(TempDir, Store, StateMachine), StorageError<u64>> {
        let dir = tempfile::tempdir()
            .map_err(|e| StorageError::from_io_error(ErrorSubject::Store, ErrorVerb::Write, e))?;
        let store = Store::open(dir.path(), wal_config())
            .map_err(|e| e.into_storage_error(ErrorSubject::Store, ErrorVerb::Read))?;
        Ok((dir, store, StateMachine::new()))
    }
}

#[test]
fn passes_openraft_storage_suite() {
    Suite::test_all(WaldenBuilder).unwrap();
}
