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
