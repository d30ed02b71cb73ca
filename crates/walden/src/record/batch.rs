//! [`Batch`]: records inserted with one reservation, all or none.

use std::borrow::Cow;

use super::{Record, RecordError};
use crate::format::record::RECORD_HEADER_SIZE;
use crate::lsn::maxalign;

/// Records inserted together with [`crate::Wal::insert_batch`] (or
/// [`crate::Wal::insert_batch_end`], which returns only the end): one
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
///
/// Each record is validated and sized as it is added (the batch is read
/// only through [`Batch::records`], so what was checked stays true): the
/// insert does not go over the records before reserving their bytes, and a
/// batch inserted more than once pays for it once. A batch holding a
/// record that cannot be inserted is refused whole by the insert, with the
/// first such record's error.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Batch<'a> {
    records: Vec<Record<'a>>,
    /// The records' bodies' bytes, each rounded up to 8: with the record
    /// headers (a multiple of 8 in every format), the bytes the records
    /// reserve.
    aligned_bodies: u64,
    /// The first added record's error that cannot be inserted.
    invalid: Option<RecordError>,
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
            ..Batch::default()
        }
    }

    /// Adds a record, validating and sizing it ([`Record::validate`]; an
    /// invalid record makes the whole batch fail to insert).
    pub fn push(&mut self, record: Record<'a>) -> &mut Self {
        if let Err(e) = record.validate() {
            self.invalid.get_or_insert(e);
        }
        let body = record.encoded_len() - RECORD_HEADER_SIZE;
        self.aligned_bodies += maxalign(body as u64);
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
        self.aligned_bodies = 0;
        self.invalid = None;
    }

    /// The bytes the records reserve in a log whose record header takes
    /// `header_size` bytes (a multiple of 8), from their sizes taken as
    /// they were added; the first invalid record's error if there is one.
    pub(crate) fn reserved_bytes(&self, header_size: usize) -> Result<u64, RecordError> {
        debug_assert!(header_size.is_multiple_of(8), "{header_size}");
        match &self.invalid {
            Some(e) => Err(e.clone()),
            None => Ok(self.records.len() as u64 * header_size as u64 + self.aligned_bodies),
        }
    }
}

impl<'a> Extend<Record<'a>> for Batch<'a> {
    fn extend<I: IntoIterator<Item = Record<'a>>>(&mut self, iter: I) {
        for record in iter {
            self.push(record);
        }
    }
}

impl<'a> FromIterator<Record<'a>> for Batch<'a> {
    fn from_iter<I: IntoIterator<Item = Record<'a>>>(iter: I) -> Self {
        let mut batch = Batch::default();
        batch.extend(iter);
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::WalFormat;

    /// The bytes a batch says its records reserve are the sum of each
    /// record's aligned length in every format (payloads of 0 to 300
    /// bytes: no main-data header, the short one and the long one), after
    /// pushes, `extend`, `collect` and `clear`.
    #[test]
    fn reserved_bytes_are_the_records_aligned_lengths() {
        let payloads: Vec<Vec<u8>> = (0..300).step_by(7).map(|n| vec![3u8; n]).collect();
        let records = || payloads.iter().map(|p| Record::bytes(&p[..]));
        let mut pushed = Batch::new();
        for r in records() {
            pushed.push(r);
        }
        let collected: Batch = records().collect();
        let mut extended = Batch::with_capacity(1);
        extended.append(&b"gone"[..]).clear();
        extended.extend(records());
        for format in WalFormat::ALL {
            let h = format.record_header_size();
            let want: u64 = records()
                .map(|r| maxalign((r.encoded_len() - RECORD_HEADER_SIZE + h) as u64))
                .sum();
            for batch in [&pushed, &collected, &extended] {
                assert_eq!(batch.reserved_bytes(h), Ok(want), "{format}");
            }
        }
    }

    /// A batch holding invalid records reports the first one's error,
    /// however it was built, until it is cleared.
    #[test]
    fn the_first_invalid_record_is_the_batchs_error() {
        let records = [
            Record::bytes(&b"fine"[..]),
            Record::new(128, 0x01, &b"low info bits"[..]),
            Record::new(30, 0, &b"reserved rmid"[..]),
        ];
        let first = Err(RecordError::InvalidInfo(0x01));
        let collected: Batch = records.iter().cloned().collect();
        assert_eq!(collected.reserved_bytes(24), first);
        let mut pushed = Batch::new();
        for r in records.iter().cloned() {
            pushed.push(r);
        }
        assert_eq!(pushed.reserved_bytes(24), first);
        pushed.clear();
        pushed.append(&b"fine"[..]);
        assert_eq!(pushed.reserved_bytes(24), Ok(24 + 8));
    }
}
