//! LSNs as plain `u64`s, in PostgreSQL's text form `X/Y`.

/// Parses `X/Y` (each half 1 to 8 hex digits; pg_waldump's zero-padded form
/// too) into a `u64`. `None` for anything else.
pub fn parse_lsn(text: &str) -> Option<u64> {
    let (hi, lo) = text.split_once('/')?;
    let half = |h: &str| {
        if h.is_empty() || h.len() > 8 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
            None
        } else {
            u64::from_str_radix(h, 16).ok()
        }
    };
    Some((half(hi)? << 32) | half(lo)?)
}

/// Formats an LSN as PostgreSQL does outside record lines: `X/Y`, upper-case
/// hex without leading zeros (what `-s`/`-e` take and error messages show).
pub fn format_lsn(lsn: u64) -> String {
    format!("{:X}/{:X}", lsn >> 32, lsn & 0xFFFF_FFFF)
}

/// Size of a WAL page (PostgreSQL: `XLOG_BLCKSZ`).
pub const PAGE_SIZE: u64 = 8192;

/// The LSN just past the last byte of a record of `len` bytes starting at
/// `lsn`, in WAL of `segment_size`-byte segments: the record's bytes run on
/// after each page header they meet (40 bytes at a segment start, 24
/// elsewhere). A record ending exactly at a page end ends at that page's
/// boundary. An oracle written apart from Walden's own position arithmetic.
pub fn record_end(lsn: u64, len: u64, segment_size: u64) -> u64 {
    let (mut at, mut rest) = (lsn, len);
    loop {
        let page_end = (at / PAGE_SIZE + 1) * PAGE_SIZE;
        if rest <= page_end - at {
            return at + rest;
        }
        rest -= page_end - at;
        at = page_end
            + if page_end.is_multiple_of(segment_size) {
                40
            } else {
                24
            };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects() {
        assert_eq!(parse_lsn("0/A8C7B8"), Some(0xA8C7B8));
        assert_eq!(parse_lsn("0/00A8C7B8"), Some(0xA8C7B8));
        assert_eq!(parse_lsn("1/2A000000"), Some(0x1_2A00_0000));
        assert_eq!(format_lsn(0x1_2A00_0000), "1/2A000000");
        assert_eq!(format_lsn(0xA8C7B8), "0/A8C7B8");
        for bad in ["", "0", "/1", "1/", "0/123456789", "g/1", "0/ 1", "0/1/2"] {
            assert_eq!(parse_lsn(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn record_ends_skip_page_headers() {
        let seg = 1 << 20;
        // Within a page; ending exactly at a page end.
        assert_eq!(record_end(0x700028, 55, seg), 0x70005F);
        assert_eq!(record_end(0x70C0B0, 8016, seg), 0x70E000);
        // Header split 16/8: 16 bytes, a 24-byte page header, 143 bytes.
        assert_eq!(record_end(0x709FF0, 159, seg), 0x70A000 + 24 + 143);
        // Across a segment boundary: the next page header is the long one.
        assert_eq!(record_end(0x7FFFF0, 32, seg), 0x800000 + 40 + 16);
        // 2,500,057 bytes from 0/800028 end in segment A.
        assert_eq!(record_end(0x800028, 2_500_057, seg), 0xA642D1);
    }
}
