//! Block references and their full-page images: the header fields, their
//! flags, and the image header checks.
//!
//! PostgreSQL: `XLogRecordBlockHeader`, `XLogRecordBlockImageHeader` and
//! `XLogRecordBlockCompressHeader` in `xlogrecord.h`.

use std::fmt;

use super::BodyError;

/// Fork-number bits of a block header's `fork_flags`
/// (PostgreSQL: `BKPBLOCK_FORK_MASK`).
pub const BKPBLOCK_FORK_MASK: u8 = 0x0F;
/// The block carries a page image (PostgreSQL: `BKPBLOCK_HAS_IMAGE`).
pub const BKPBLOCK_HAS_IMAGE: u8 = 0x10;
/// The block carries data (PostgreSQL: `BKPBLOCK_HAS_DATA`).
pub const BKPBLOCK_HAS_DATA: u8 = 0x20;
/// Replay reinitialises the page (PostgreSQL: `BKPBLOCK_WILL_INIT`).
pub const BKPBLOCK_WILL_INIT: u8 = 0x40;
/// The relation is the previous block's and is left out
/// (PostgreSQL: `BKPBLOCK_SAME_REL`).
pub const BKPBLOCK_SAME_REL: u8 = 0x80;

/// The image leaves out a hole of zeros (PostgreSQL: `BKPIMAGE_HAS_HOLE`).
pub const BKPIMAGE_HAS_HOLE: u8 = 0x01;
/// Replay restores the image (PostgreSQL: `BKPIMAGE_APPLY`).
pub const BKPIMAGE_APPLY: u8 = 0x02;
/// The image is pglz-compressed (PostgreSQL: `BKPIMAGE_COMPRESS_PGLZ`).
pub const BKPIMAGE_COMPRESS_PGLZ: u8 = 0x04;
/// The image is lz4-compressed (PostgreSQL: `BKPIMAGE_COMPRESS_LZ4`).
pub const BKPIMAGE_COMPRESS_LZ4: u8 = 0x08;
/// The image is zstd-compressed (PostgreSQL: `BKPIMAGE_COMPRESS_ZSTD`).
pub const BKPIMAGE_COMPRESS_ZSTD: u8 = 0x10;
pub(super) const BKPIMAGE_COMPRESSED: u8 =
    BKPIMAGE_COMPRESS_PGLZ | BKPIMAGE_COMPRESS_LZ4 | BKPIMAGE_COMPRESS_ZSTD;

/// Size of a data page, and of an uncompressed image without a hole
/// (PostgreSQL: `BLCKSZ`).
pub const BLCKSZ: u16 = 8192;

/// Encoded size of a block header: id, `fork_flags`, data length u16
/// (PostgreSQL: `SizeOfXLogRecordBlockHeader`).
pub(super) const BLOCK_HEADER_SIZE: usize = 4;
/// Encoded size of an image header: length u16, hole offset u16, info u8
/// (PostgreSQL: `SizeOfXLogRecordBlockImageHeader`).
const IMAGE_HEADER_SIZE: usize = 5;
/// Encoded size of the hole length after a compressed image's header
/// (PostgreSQL: `SizeOfXLogRecordBlockCompressHeader`).
const COMPRESS_HEADER_SIZE: usize = 2;
/// Encoded size of a RelFileNode: three u32 (PostgreSQL: `sizeof(RelFileNode)`).
const REL_FILE_NODE_SIZE: usize = 12;
/// Encoded size of a block number (PostgreSQL: `sizeof(BlockNumber)`).
const BLOCK_NUMBER_SIZE: usize = 4;

/// A relation's physical identity (PostgreSQL: `RelFileNode`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RelFileNode {
    /// Tablespace OID (`spcNode`).
    pub spc: u32,
    /// Database OID (`dbNode`).
    pub db: u32,
    /// Relation file node (`relNode`).
    pub rel: u32,
}

impl fmt::Display for RelFileNode {
    /// `spc/db/rel`, as pg_waldump prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.spc, self.db, self.rel)
    }
}

/// A full-page image attached to a block reference
/// (PostgreSQL: `XLogRecordBlockImageHeader` and the image bytes).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockImage<B = Vec<u8>> {
    /// Offset of the hole in the page (`hole_offset`).
    pub hole_offset: u16,
    /// Length of the hole. On disk only for a compressed image with a hole;
    /// otherwise it is what PostgreSQL derives: `BLCKSZ - bimg_len` (as u16)
    /// for an uncompressed image, 0 for a compressed one without a hole.
    pub hole_length: u16,
    /// `BKPIMAGE_*` bits (`bimg_info`).
    pub info: u8,
    /// The stored image bytes (`bimg_len` of them), hole left out.
    pub bytes: B,
}

impl<B: AsRef<[u8]>> BlockImage<B> {
    /// True if compressed with any method (PostgreSQL: `BKPIMAGE_COMPRESSED`).
    pub fn is_compressed(&self) -> bool {
        self.info & BKPIMAGE_COMPRESSED != 0
    }

    /// True if replay restores it; otherwise it is only for consistency
    /// checking (PostgreSQL: `XLogRecBlockImageApply`).
    pub fn applies(&self) -> bool {
        self.info & BKPIMAGE_APPLY != 0
    }

    /// Encoded size of its header: with the hole length iff compressed
    /// with a hole.
    pub(super) fn header_len(&self) -> usize {
        if self.has_compress_header() {
            IMAGE_HEADER_SIZE + COMPRESS_HEADER_SIZE
        } else {
            IMAGE_HEADER_SIZE
        }
    }

    /// True if the header carries the hole length
    /// (PostgreSQL: `BKPIMAGE_COMPRESSED(bimg_info) && BKPIMAGE_HAS_HOLE`).
    pub(super) fn has_compress_header(&self) -> bool {
        self.is_compressed() && self.info & BKPIMAGE_HAS_HOLE != 0
    }
}

/// The image header checks of `DecodeXLogRecord`, in its order.
pub(super) fn check_image(
    info: u8,
    hole_offset: u16,
    hole_length: u16,
    image_len: u16,
) -> Result<(), BodyError> {
    let has_hole = info & BKPIMAGE_HAS_HOLE != 0;
    if has_hole && (hole_offset == 0 || hole_length == 0 || image_len == BLCKSZ) {
        return Err(BodyError::BadHole {
            hole_offset,
            hole_length,
            image_len,
        });
    }
    if !has_hole && (hole_offset != 0 || hole_length != 0) {
        return Err(BodyError::UnexpectedHole {
            hole_offset,
            hole_length,
        });
    }
    if info & BKPIMAGE_COMPRESSED != 0 && image_len == BLCKSZ {
        return Err(BodyError::CompressedFullImage(image_len));
    }
    // PostgreSQL's last check ("neither HAS_HOLE nor COMPRESSED set, but
    // block image length is ...") cannot fail once the two above pass:
    // without a hole and uncompressed, hole_length is BLCKSZ - bimg_len.
    Ok(())
}

/// A block reference (PostgreSQL: `XLogRecordBlockHeader` with its optional
/// image header, RelFileNode and block number, plus its payloads).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct BlockRef<B = Vec<u8>> {
    /// Block id, 0..=32, strictly increasing within a record.
    pub id: u8,
    /// Fork number (`fork_flags & 0x0F`): 0 main, 1 fsm, 2 vm, 3 init.
    pub fork: u8,
    /// `BKPBLOCK_WILL_INIT`.
    pub will_init: bool,
    /// The relation, or `None` for `BKPBLOCK_SAME_REL` (the previous
    /// block's; see [`Body::block_rels`](super::Body::block_rels)).
    pub rel: Option<RelFileNode>,
    /// Block number in the relation fork.
    pub block: u32,
    /// The page image, if any (`BKPBLOCK_HAS_IMAGE`).
    pub image: Option<BlockImage<B>>,
    /// Per-block data (`data_length` bytes; `BKPBLOCK_HAS_DATA` iff non-empty).
    pub data: B,
}

impl<B: AsRef<[u8]>> BlockRef<B> {
    /// The on-disk `fork_flags` byte.
    pub fn fork_flags(&self) -> u8 {
        let mut f = self.fork & BKPBLOCK_FORK_MASK;
        if self.image.is_some() {
            f |= BKPBLOCK_HAS_IMAGE;
        }
        if !self.data.as_ref().is_empty() {
            f |= BKPBLOCK_HAS_DATA;
        }
        if self.will_init {
            f |= BKPBLOCK_WILL_INIT;
        }
        if self.rel.is_none() {
            f |= BKPBLOCK_SAME_REL;
        }
        f
    }

    /// Encoded size of its headers: block header, image header, RelFileNode
    /// unless `SAME_REL`, block number.
    pub(super) fn header_len(&self) -> usize {
        BLOCK_HEADER_SIZE
            + self.image.as_ref().map_or(0, BlockImage::header_len)
            + if self.rel.is_some() {
                REL_FILE_NODE_SIZE
            } else {
                0
            }
            + BLOCK_NUMBER_SIZE
    }

    /// Bytes of its image and data.
    pub(super) fn payload_len(&self) -> usize {
        self.image.as_ref().map_or(0, |i| i.bytes.as_ref().len()) + self.data.as_ref().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::body::test_support::encoded;
    use crate::format::body::Body;

    /// The Btree record at 0/A8ADA0 of the samples (pgwal-format.md §7.2):
    /// block 0 WILL_INIT with a RelFileNode, block 2 SAME_REL|WILL_INIT|HAS_DATA.
    #[test]
    fn block_references_with_gap_and_same_rel() {
        let mut bytes = vec![0, 0x40, 0, 0];
        for v in [1663u32, 5, 16389, 3] {
            bytes.extend_from_slice(&v.to_le_bytes());
        }
        bytes.extend_from_slice(&[2, 0xE0, 28, 0]);
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.extend_from_slice(&[0xFF, 8]);
        bytes.extend(0u8..28);
        bytes.extend(100u8..108);
        let b = Body::parse(&bytes).unwrap();
        assert_eq!(b.blocks.len(), 2);
        assert_eq!(
            (b.blocks[0].id, b.blocks[0].will_init, b.blocks[0].block),
            (0, true, 3)
        );
        assert_eq!(b.blocks[1].rel, None);
        assert_eq!(b.blocks[1].data.len(), 28);
        assert_eq!(b.blocks[1].fork_flags(), 0xE0);
        let rels: Vec<_> = b
            .block_rels()
            .map(|(_, r)| r.unwrap().to_string())
            .collect();
        assert_eq!(rels, ["1663/5/16389", "1663/5/16389"]);
        assert_eq!(b.main_data, &[100, 101, 102, 103, 104, 105, 106, 107]);
        assert_eq!(encoded(&b), bytes);
    }

    #[test]
    fn images_with_and_without_holes() {
        let rel = Some(RelFileNode {
            spc: 1663,
            db: 5,
            rel: 1247,
        });
        let full = BlockImage {
            hole_offset: 0,
            hole_length: 0,
            info: BKPIMAGE_APPLY,
            bytes: vec![1u8; 8192],
        };
        let holed = BlockImage {
            hole_offset: 100,
            hole_length: 8000,
            info: BKPIMAGE_HAS_HOLE | BKPIMAGE_APPLY,
            bytes: vec![2u8; 192],
        };
        let lz4 = BlockImage {
            hole_offset: 64,
            hole_length: 4000,
            info: BKPIMAGE_HAS_HOLE | BKPIMAGE_COMPRESS_LZ4,
            bytes: vec![3u8; 77],
        };
        for img in [full, holed, lz4] {
            let body = Body {
                blocks: vec![BlockRef {
                    id: 0,
                    fork: 2,
                    will_init: false,
                    rel,
                    block: 14,
                    image: Some(img.clone()),
                    data: vec![],
                }],
                ..Default::default()
            };
            body.validate().unwrap();
            let bytes = encoded(&body);
            let header = if img.is_compressed() {
                4 + 7 + 12 + 4
            } else {
                4 + 5 + 12 + 4
            };
            assert_eq!(bytes.len(), header + img.bytes.len());
            let back = Body::decode(&bytes).unwrap();
            assert_eq!(back, body);
            assert_eq!(back.image_bytes(), img.bytes.len());
        }
    }
}
