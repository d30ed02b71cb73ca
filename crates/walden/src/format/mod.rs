//! The on-disk format: page headers, record header, record body, CRC-32C.
