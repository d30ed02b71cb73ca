//! [`Batch`]: records inserted with one reservation, all or none.

use std::borrow::Cow;

use super::Record;

/// Records inserted together with [`crate::Wal::insert_batch`]: one
/// reservation for all of them and one pass copying them into the log, in
/// order and with nothing between them; recovery keeps all of them or none.
///
/// Payloads may be borrowed (`Batch<'a>` holds [`Record<'a>`]s), so a batch
/// of slices copies each payload once, straight into the log.
///
/// ```
/// use walden::{Batch, Record};
/// let payloads = [[1u8; 66], [2u8; 66]];
/// let mut batch = Batch::new();
/// for p in &payloads {
///     batch.append(&p[..]); // plain bytes, borrowed
/// }
/// batch.push(Record::new(129, 0x10, b"owned".to_vec()));
/// assert_eq!(batch.len(), 3);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch<'a> {
    records: Vec<Record<'a>>,
}

impl<'a> Batch<'a> {
    /// An empty batch.
    pub fn new() -> Self {
        Batch::default()
    }

    /// An empty batch with room for `n` records.
    pub fn with_capacity(n: usize) -> Self {
        Batch {
            records: Vec::with_capacity(n),
        }
    }

    /// Adds a record.
    pub fn push(&mut self, record: Record<'a>) -> &mut Self {
        self.records.push(record);
        self
    }

    /// Adds a plain-bytes record ([`Record::bytes`]).
    pub fn append(&mut self, data: impl Into<Cow<'a, [u8]>>) -> &mut Self {
        self.push(Record::bytes(data))
    }

    /// The records, in insertion order.
    pub fn records(&self) -> &[Record<'a>] {
        &self.records
    }

    /// Number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True if the batch holds no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Removes every record, keeping the allocation.
    pub fn clear(&mut self) {
        self.records.clear();
    }
}

impl<'a> Extend<Record<'a>> for Batch<'a> {
    fn extend<I: IntoIterator<Item = Record<'a>>>(&mut self, iter: I) {
        self.records.extend(iter);
    }
}

impl<'a> FromIterator<Record<'a>> for Batch<'a> {
    fn from_iter<I: IntoIterator<Item = Record<'a>>>(iter: I) -> Self {
        Batch {
            records: iter.into_iter().collect(),
        }
    }
}
