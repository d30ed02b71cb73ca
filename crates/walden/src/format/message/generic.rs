//! Generic WAL records, written by extensions such as `bloom`
//! (PostgreSQL: `genericdesc.c`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};

/// Every Generic record's type name (PostgreSQL: `generic_identify`).
pub(super) const IDENTIFY: &str = "Generic";

/// The page deltas in the main data, `offset O, length L` each, separated by
/// `; ` (PostgreSQL writes the deltas as block data, so the main data and the
/// description are usually empty).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    let mut f = rec.main("generic delta");
    while !f.rest().is_empty() {
        let (offset, length) = (f.u16()?, f.u16()?);
        f.skip(usize::from(length).min(f.rest().len()))?;
        let sep = if f.rest().is_empty() { "" } else { "; " };
        let _ = write!(out, "offset {offset}, length {length}{sep}");
    }
    Ok(())
}

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // Generic at 0/011C59B8
            (20, 0x00, "00201e007f060000050000002d400000010000000c000100382800100000000000020010200000000002100000f81f010002", "Generic "),
        ]);
    }
}
