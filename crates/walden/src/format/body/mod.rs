//! The record body: block references, origin, top-level xid and main data.
//!
//! Layout (PostgreSQL: `XLogRecordAssemble` writes it, `DecodeXLogRecord`
//! reads it): first the fragment headers, each starting with a one-byte id —
//! block references (ids 0..=32, strictly increasing), the origin (0xFD), the
//! top-level xid (0xFC), and last the main-data header (0xFF + u8 length or
//! 0xFE + u32 length) — then the payloads in the same order: for each block
//! its image bytes and its data, then the main data.
//!
//! [`Body`] is generic over how it holds payload bytes: `Body<Vec<u8>>` (the
//! default) owns them, `Body<&[u8]>` ([`Body::parse`]) borrows them from the
//! record without copying.
//!
//! One file per concern: `block` (block references and their images),
//! `main_data` (the main-data header), `encode` (sizes, validation and
//! encoding) and `decode` (PostgreSQL's decoder and its checks).

mod block;
mod decode;
mod encode;
mod main_data;

pub use block::{
    BlockImage, BlockRef, RelFileNode, BKPBLOCK_FORK_MASK, BKPBLOCK_HAS_DATA, BKPBLOCK_HAS_IMAGE,
    BKPBLOCK_SAME_REL, BKPBLOCK_WILL_INIT, BKPIMAGE_APPLY, BKPIMAGE_COMPRESS_LZ4,
    BKPIMAGE_COMPRESS_PGLZ, BKPIMAGE_COMPRESS_ZSTD, BKPIMAGE_HAS_HOLE, BLCKSZ,
};
pub use main_data::{encode_main_data, main_data_header_len, MainDataHeader};

/// Highest block reference id (PostgreSQL: `XLR_MAX_BLOCK_ID`).
pub const XLR_MAX_BLOCK_ID: u8 = 32;
/// Fragment id of main data up to 255 bytes, u8 length
/// (PostgreSQL: `XLR_BLOCK_ID_DATA_SHORT`).
pub const XLR_BLOCK_ID_DATA_SHORT: u8 = 255;
/// Fragment id of main data with a u32 length
/// (PostgreSQL: `XLR_BLOCK_ID_DATA_LONG`).
pub const XLR_BLOCK_ID_DATA_LONG: u8 = 254;
/// Fragment id of the u16 replication origin
/// (PostgreSQL: `XLR_BLOCK_ID_ORIGIN`).
pub const XLR_BLOCK_ID_ORIGIN: u8 = 253;
/// Fragment id of the u32 top-level transaction id
/// (PostgreSQL: `XLR_BLOCK_ID_TOPLEVEL_XID`).
pub const XLR_BLOCK_ID_TOPLEVEL_XID: u8 = 252;

/// Encoded size of the origin fragment: its id and a u16.
const ORIGIN_FRAGMENT_SIZE: usize = 3;
/// Encoded size of the top-level xid fragment: its id and a u32.
const TOPLEVEL_XID_FRAGMENT_SIZE: usize = 5;

/// Why record body bytes are not a valid body. Display is pg_waldump 15's
/// wording without the trailing ` at X/Y` (the reader adds the LSN).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BodyError {
    /// The headers' lengths do not add up to the body size, or a header is cut off.
    #[error("record with invalid length")]
    InvalidLength,
    /// A fragment id that is neither a block id (0..=32) nor 252..=255.
    #[error("invalid block_id {0}")]
    InvalidBlockId(u8),
    /// A block id not above the previous one.
    #[error("out-of-order block_id {0}")]
    OutOfOrderBlockId(u8),
    /// `BKPBLOCK_HAS_DATA` with a zero data length.
    #[error("BKPBLOCK_HAS_DATA set, but no data included")]
    HasDataWithoutData,
    /// A non-zero data length without `BKPBLOCK_HAS_DATA`.
    #[error("BKPBLOCK_HAS_DATA not set, but data length is {0}")]
    DataWithoutHasData(u16),
    /// `BKPIMAGE_HAS_HOLE` with a zero hole offset or length, or a full-size image.
    #[error("BKPIMAGE_HAS_HOLE set, but hole offset {hole_offset} length {hole_length} block image length {image_len}")]
    BadHole {
        /// `hole_offset`.
        hole_offset: u16,
        /// `hole_length` (stored, or derived for an uncompressed image).
        hole_length: u16,
        /// `bimg_len`.
        image_len: u16,
    },
    /// A hole described without `BKPIMAGE_HAS_HOLE` (for an uncompressed
    /// image: an image that is not exactly `BLCKSZ` (8192) bytes).
    #[error("BKPIMAGE_HAS_HOLE not set, but hole offset {hole_offset} length {hole_length}")]
    UnexpectedHole {
        /// `hole_offset`.
        hole_offset: u16,
        /// `hole_length` (stored, or derived for an uncompressed image).
        hole_length: u16,
    },
    /// A compressed image of the full page size.
    #[error("BKPIMAGE_COMPRESSED set, but block image length {0}")]
    CompressedFullImage(u16),
    /// `BKPBLOCK_SAME_REL` on a block with no block before it.
    #[error("BKPBLOCK_SAME_REL set but no previous rel")]
    SameRelWithoutPrevious,
    /// Encoding only: a value does not fit its on-disk field.
    #[error("{what} is {value}, more than its on-disk field holds ({max})")]
    FieldOverflow {
        /// Which field.
        what: &'static str,
        /// The value given.
        value: u64,
        /// The field's maximum.
        max: u64,
    },
}

/// A decoded record body.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Body<B = Vec<u8>> {
    /// Block references, in id order.
    pub blocks: Vec<BlockRef<B>>,
    /// Replication origin (fragment 0xFD), if present.
    pub origin: Option<u16>,
    /// Top-level transaction id (fragment 0xFC), if present.
    pub toplevel_xid: Option<u32>,
    /// The rmgr's main data; no main-data header is written when empty.
    pub main_data: B,
}

impl<B: AsRef<[u8]>> Body<B> {
    /// Each block with its effective relation: a `SAME_REL` block gets the
    /// relation of the block before it. `None` for a `SAME_REL` first block
    /// (which [`validate`](Self::validate) and the decoder reject).
    pub fn block_rels(&self) -> impl Iterator<Item = (&BlockRef<B>, Option<RelFileNode>)> + '_ {
        let mut last = None;
        self.blocks.iter().map(move |b| {
            if b.rel.is_some() {
                last = b.rel;
            }
            (b, last)
        })
    }

    /// Total stored bytes of all page images: pg_waldump's "tot" minus "rec".
    pub fn image_bytes(&self) -> usize {
        self.blocks
            .iter()
            .filter_map(|b| b.image.as_ref())
            .map(|i| i.bytes.as_ref().len())
            .sum()
    }

    /// A copy that owns its payload bytes.
    pub fn into_owned(&self) -> Body {
        let own = |b: &B| b.as_ref().to_vec();
        Body {
            blocks: self
                .blocks
                .iter()
                .map(|b| BlockRef {
                    id: b.id,
                    fork: b.fork,
                    will_init: b.will_init,
                    rel: b.rel,
                    block: b.block,
                    image: b.image.as_ref().map(|i| BlockImage {
                        hole_offset: i.hole_offset,
                        hole_length: i.hole_length,
                        info: i.info,
                        bytes: own(&i.bytes),
                    }),
                    data: own(&b.data),
                })
                .collect(),
            origin: self.origin,
            toplevel_xid: self.toplevel_xid,
            main_data: own(&self.main_data),
        }
    }
}

impl Body {
    /// Decodes a body (the record bytes after its 24-byte header) into owned
    /// parts, with PostgreSQL's checks. See [`Body::parse`].
    pub fn decode(bytes: &[u8]) -> Result<Body, BodyError> {
        Body::parse(bytes).map(|b| b.into_owned())
    }
}

/// What the tests of every part share.
#[cfg(test)]
mod test_support {
    use super::Body;

    pub(super) fn encoded<B: AsRef<[u8]>>(b: &Body<B>) -> Vec<u8> {
        let mut out = Vec::new();
        b.encode(&mut out);
        assert_eq!(out.len(), b.encoded_len());
        out
    }
}
