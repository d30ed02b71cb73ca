//! [`WaldenLogReader`]: the log reader openraft's replication tasks use.

use std::fmt::Debug;
use std::ops::RangeBounds;

use openraft::{OptionalSend, RaftLogReader, RaftTypeConfig, StorageError};

use crate::contents::{read, SharedContents};

/// Reads entries from the in-memory log of a [`crate::WaldenLogStore`]:
/// it sees every entry once `append` has returned. Cheap to clone.
pub struct WaldenLogReader<C: RaftTypeConfig> {
    contents: SharedContents<C>,
}

impl<C: RaftTypeConfig> WaldenLogReader<C> {
    pub(crate) fn new(contents: SharedContents<C>) -> Self {
        WaldenLogReader { contents }
    }
}

impl<C: RaftTypeConfig> Clone for WaldenLogReader<C> {
    fn clone(&self) -> Self {
        WaldenLogReader {
            contents: self.contents.clone(),
        }
    }
}

impl<C> RaftLogReader<C> for WaldenLogReader<C>
where
    C: RaftTypeConfig,
    C::Entry: Clone,
{
    async fn try_get_log_entries<RB: RangeBounds<u64> + Clone + Debug + OptionalSend>(
        &mut self,
        range: RB,
    ) -> Result<Vec<C::Entry>, StorageError<C::NodeId>> {
        Ok(read(&self.contents).entries(range))
    }
}
