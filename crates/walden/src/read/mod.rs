//! Reading WAL: segment files → page validation → record reassembly → records.
