//! Helpers of the reader tests: the PostgreSQL 15 sample WAL and its
//! `pg_waldump` lines, a synthetic WAL writer, and the corruption recipes.

pub mod corrupt;
pub mod dump_lines;
pub mod sample_dir;
pub mod synth;

use walden::{Lsn, ReadError, ReaderOptions, SegmentSource, WalReader, WalRecord};

/// A reader of `source` from `start`, up to `end` if given; an error if it
/// refuses that start.
pub fn reader_of(
    source: impl SegmentSource + 'static,
    start: Lsn,
    end: Option<Lsn>,
) -> Result<WalReader, ReadError> {
    let opts = ReaderOptions {
        start: Some(start),
        end,
        ..Default::default()
    };
    WalReader::with_source(Box::new(source), opts)
}

/// Reads until `reader` stops: the records, and the error that stopped it
/// (`None` when it reached its end limit).
pub fn read_to_stop(reader: &mut WalReader) -> (Vec<WalRecord>, Option<ReadError>) {
    let mut records = Vec::new();
    loop {
        match reader.next_record() {
            Ok(Some(r)) => records.push(r),
            Ok(None) => return (records, None),
            Err(e) => return (records, Some(e)),
        }
    }
}
