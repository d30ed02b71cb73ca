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

use std::fmt;

use super::little_endian::Cursor;

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
const BKPIMAGE_COMPRESSED: u8 =
    BKPIMAGE_COMPRESS_PGLZ | BKPIMAGE_COMPRESS_LZ4 | BKPIMAGE_COMPRESS_ZSTD;

/// Size of a data page, and of an uncompressed image without a hole
/// (PostgreSQL: `BLCKSZ`).
pub const BLCKSZ: u16 = 8192;

/// Why record body bytes are not a valid body. Display is pg_waldump 15's
/// wording without the trailing ` at X/Y` (the reader adds the LSN).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
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

    fn header_len(&self) -> usize {
        if self.is_compressed() && self.info & BKPIMAGE_HAS_HOLE != 0 {
            7
        } else {
            5
        }
    }
}

/// The image header checks of `DecodeXLogRecord`, in its order.
fn check_image(
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
    /// block's; see [`Body::block_rels`]).
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

    fn header_len(&self) -> usize {
        4 + self.image.as_ref().map_or(0, BlockImage::header_len)
            + if self.rel.is_some() { 12 } else { 0 }
            + 4
    }

    fn payload_len(&self) -> usize {
        self.image.as_ref().map_or(0, |i| i.bytes.as_ref().len()) + self.data.as_ref().len()
    }
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

/// Encoded size of the main-data header for `len` bytes of main data: 0 when
/// empty, 2 for the short form (len <= 255), 5 for the long form.
pub fn main_data_header_len(len: usize) -> usize {
    match len {
        0 => 0,
        1..=255 => 2,
        _ => 5,
    }
}

/// Appends the main-data header and `data`, as PostgreSQL does: the short
/// form (`0xFF`, u8 length) iff `data.len() <= 255`, nothing at all when
/// `data` is empty. This is a whole body for a record without blocks, origin
/// or top-level xid. `data` longer than `u32::MAX` is a caller bug; its
/// length is then recorded truncated and no reader accepts the record.
pub fn encode_main_data(data: &[u8], out: &mut Vec<u8>) {
    encode_main_data_header(data.len(), out);
    out.extend_from_slice(data);
}

fn encode_main_data_header(len: usize, out: &mut Vec<u8>) {
    match len {
        0 => {}
        1..=255 => out.extend_from_slice(&[XLR_BLOCK_ID_DATA_SHORT, len as u8]),
        _ => {
            out.push(XLR_BLOCK_ID_DATA_LONG);
            out.extend_from_slice(&(len as u32).to_le_bytes());
        }
    }
}

/// An image header as read, before its bytes are located.
struct PendingImage {
    hole_offset: u16,
    hole_length: u16,
    info: u8,
    len: u16,
}

/// A block header as read, before its payloads are located.
struct PendingBlock {
    id: u8,
    fork_flags: u8,
    data_len: u16,
    image: Option<PendingImage>,
    rel: Option<RelFileNode>,
    block: u32,
}

fn field_fits(what: &'static str, len: usize, max: u64) -> Result<(), BodyError> {
    let value = len as u64;
    if value > max {
        return Err(BodyError::FieldOverflow { what, value, max });
    }
    Ok(())
}

impl<B: AsRef<[u8]>> Body<B> {
    /// Encoded size in bytes (the record's `xl_tot_len` minus 24).
    pub fn encoded_len(&self) -> usize {
        let blocks: usize = self
            .blocks
            .iter()
            .map(|b| b.header_len() + b.payload_len())
            .sum();
        let main = self.main_data.as_ref().len();
        blocks
            + self.origin.map_or(0, |_| 3)
            + self.toplevel_xid.map_or(0, |_| 5)
            + main_data_header_len(main)
            + main
    }

    /// Checks that [`encode`](Self::encode) would produce bytes that
    /// [`Body::parse`] accepts and decodes back to `self`: the checks
    /// PostgreSQL's decoder applies, plus that every length fits its field.
    pub fn validate(&self) -> Result<(), BodyError> {
        let mut last_id = None;
        for (i, b) in self.blocks.iter().enumerate() {
            if b.id > XLR_MAX_BLOCK_ID {
                return Err(BodyError::InvalidBlockId(b.id));
            }
            if last_id.is_some_and(|last| b.id <= last) {
                return Err(BodyError::OutOfOrderBlockId(b.id));
            }
            last_id = Some(b.id);
            field_fits(
                "fork number",
                usize::from(b.fork),
                u64::from(BKPBLOCK_FORK_MASK),
            )?;
            field_fits(
                "block data length",
                b.data.as_ref().len(),
                u64::from(u16::MAX),
            )?;
            if let Some(img) = &b.image {
                let len = img.bytes.as_ref().len();
                field_fits("block image length", len, u64::from(u16::MAX))?;
                let len = len as u16;
                if !img.is_compressed() && img.hole_length != BLCKSZ.wrapping_sub(len) {
                    // Not stored on disk for an uncompressed image: it must
                    // be the value the decoder derives.
                    return Err(BodyError::UnexpectedHole {
                        hole_offset: img.hole_offset,
                        hole_length: img.hole_length,
                    });
                }
                if img.is_compressed() && img.info & BKPIMAGE_HAS_HOLE == 0 && img.hole_length != 0
                {
                    return Err(BodyError::UnexpectedHole {
                        hole_offset: img.hole_offset,
                        hole_length: img.hole_length,
                    });
                }
                check_image(img.info, img.hole_offset, img.hole_length, len)?;
            }
            if i == 0 && b.rel.is_none() {
                return Err(BodyError::SameRelWithoutPrevious);
            }
        }
        field_fits(
            "main data length",
            self.main_data.as_ref().len(),
            u64::from(u32::MAX),
        )
    }

    /// Appends the encoded body to `out`: block headers, origin, top-level
    /// xid, main-data header (short form iff <= 255 bytes), then the
    /// payloads. The body must pass [`validate`](Self::validate); if it does
    /// not, the bytes written are not a valid body (lengths are truncated to
    /// their fields) and the reader will reject the record.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        for b in &self.blocks {
            out.extend_from_slice(&[b.id, b.fork_flags()]);
            out.extend_from_slice(&(b.data.as_ref().len() as u16).to_le_bytes());
            if let Some(img) = &b.image {
                out.extend_from_slice(&(img.bytes.as_ref().len() as u16).to_le_bytes());
                out.extend_from_slice(&img.hole_offset.to_le_bytes());
                out.push(img.info);
                if img.header_len() == 7 {
                    out.extend_from_slice(&img.hole_length.to_le_bytes());
                }
            }
            if let Some(rel) = &b.rel {
                for v in [rel.spc, rel.db, rel.rel] {
                    out.extend_from_slice(&v.to_le_bytes());
                }
            }
            out.extend_from_slice(&b.block.to_le_bytes());
        }
        if let Some(origin) = self.origin {
            out.push(XLR_BLOCK_ID_ORIGIN);
            out.extend_from_slice(&origin.to_le_bytes());
        }
        if let Some(xid) = self.toplevel_xid {
            out.push(XLR_BLOCK_ID_TOPLEVEL_XID);
            out.extend_from_slice(&xid.to_le_bytes());
        }
        let main = self.main_data.as_ref();
        encode_main_data_header(main.len(), out);
        for b in &self.blocks {
            if let Some(img) = &b.image {
                out.extend_from_slice(img.bytes.as_ref());
            }
            out.extend_from_slice(b.data.as_ref());
        }
        out.extend_from_slice(main);
    }

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

impl<'a> Body<&'a [u8]> {
    /// Decodes a body without copying its payloads, applying PostgreSQL's
    /// consistency checks in PostgreSQL's order: fragment ids valid and block
    /// ids increasing, `HAS_DATA` iff data, image hole rules, no `SAME_REL`
    /// without a previous block, and the lengths adding up exactly to the
    /// body size. The first fragment of main data ends the headers. A
    /// repeated origin or top-level xid fragment overrides the earlier one.
    ///
    /// PostgreSQL: `DecodeXLogRecord`.
    pub fn parse(bytes: &'a [u8]) -> Result<Self, BodyError> {
        let mut c = Cursor::new(bytes);
        let mut blocks: Vec<PendingBlock> = Vec::new();
        let mut origin = None;
        let mut toplevel_xid = None;
        let mut main_len: u64 = 0;
        // Bytes of payload the headers announce; u64 so hostile lengths cannot overflow.
        let mut data_total: u64 = 0;
        let mut last_rel: Option<RelFileNode> = None;
        while c.remaining() as u64 > data_total {
            let id = c.u8().ok_or(BodyError::InvalidLength)?;
            match id {
                XLR_BLOCK_ID_DATA_SHORT => {
                    main_len = u64::from(c.u8().ok_or(BodyError::InvalidLength)?);
                    data_total += main_len;
                    break;
                }
                XLR_BLOCK_ID_DATA_LONG => {
                    main_len = u64::from(c.u32().ok_or(BodyError::InvalidLength)?);
                    data_total += main_len;
                    break;
                }
                XLR_BLOCK_ID_ORIGIN => origin = Some(c.u16().ok_or(BodyError::InvalidLength)?),
                XLR_BLOCK_ID_TOPLEVEL_XID => {
                    toplevel_xid = Some(c.u32().ok_or(BodyError::InvalidLength)?)
                }
                id if id <= XLR_MAX_BLOCK_ID => {
                    if blocks.last().is_some_and(|b| id <= b.id) {
                        return Err(BodyError::OutOfOrderBlockId(id));
                    }
                    let block = read_block_header(&mut c, id, &mut last_rel)?;
                    data_total += u64::from(block.data_len)
                        + block.image.as_ref().map_or(0, |i| u64::from(i.len));
                    blocks.push(block);
                }
                id => return Err(BodyError::InvalidBlockId(id)),
            }
        }
        if c.remaining() as u64 != data_total {
            return Err(BodyError::InvalidLength);
        }
        // The lengths add up, so every take below succeeds.
        let mut take = |n: u64| {
            usize::try_from(n)
                .ok()
                .and_then(|n| c.take(n))
                .ok_or(BodyError::InvalidLength)
        };
        let mut out = Vec::with_capacity(blocks.len());
        for b in blocks {
            let image = match b.image {
                Some(i) => Some(BlockImage {
                    hole_offset: i.hole_offset,
                    hole_length: i.hole_length,
                    info: i.info,
                    bytes: take(u64::from(i.len))?,
                }),
                None => None,
            };
            out.push(BlockRef {
                id: b.id,
                fork: b.fork_flags & BKPBLOCK_FORK_MASK,
                will_init: b.fork_flags & BKPBLOCK_WILL_INIT != 0,
                rel: b.rel,
                block: b.block,
                image,
                data: take(u64::from(b.data_len))?,
            });
        }
        let main_data = take(main_len)?;
        Ok(Body {
            blocks: out,
            origin,
            toplevel_xid,
            main_data,
        })
    }
}

/// Reads one block header after its id byte (PostgreSQL: the block branch of
/// `DecodeXLogRecord`).
fn read_block_header(
    c: &mut Cursor<'_>,
    id: u8,
    last_rel: &mut Option<RelFileNode>,
) -> Result<PendingBlock, BodyError> {
    let fork_flags = c.u8().ok_or(BodyError::InvalidLength)?;
    let data_len = c.u16().ok_or(BodyError::InvalidLength)?;
    let has_data = fork_flags & BKPBLOCK_HAS_DATA != 0;
    if has_data && data_len == 0 {
        return Err(BodyError::HasDataWithoutData);
    }
    if !has_data && data_len != 0 {
        return Err(BodyError::DataWithoutHasData(data_len));
    }
    let image = if fork_flags & BKPBLOCK_HAS_IMAGE != 0 {
        let len = c.u16().ok_or(BodyError::InvalidLength)?;
        let hole_offset = c.u16().ok_or(BodyError::InvalidLength)?;
        let info = c.u8().ok_or(BodyError::InvalidLength)?;
        let hole_length = if info & BKPIMAGE_COMPRESSED == 0 {
            // As PostgreSQL computes it, including the wrap for bimg_len > BLCKSZ.
            BLCKSZ.wrapping_sub(len)
        } else if info & BKPIMAGE_HAS_HOLE != 0 {
            c.u16().ok_or(BodyError::InvalidLength)?
        } else {
            0
        };
        check_image(info, hole_offset, hole_length, len)?;
        Some(PendingImage {
            hole_offset,
            hole_length,
            info,
            len,
        })
    } else {
        None
    };
    let rel = if fork_flags & BKPBLOCK_SAME_REL == 0 {
        let rel = RelFileNode {
            spc: c.u32().ok_or(BodyError::InvalidLength)?,
            db: c.u32().ok_or(BodyError::InvalidLength)?,
            rel: c.u32().ok_or(BodyError::InvalidLength)?,
        };
        *last_rel = Some(rel);
        Some(rel)
    } else if last_rel.is_none() {
        return Err(BodyError::SameRelWithoutPrevious);
    } else {
        None
    };
    let block = c.u32().ok_or(BodyError::InvalidLength)?;
    Ok(PendingBlock {
        id,
        fork_flags,
        data_len,
        image,
        rel,
        block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encoded<B: AsRef<[u8]>>(b: &Body<B>) -> Vec<u8> {
        let mut out = Vec::new();
        b.encode(&mut out);
        assert_eq!(out.len(), b.encoded_len());
        out
    }

    #[test]
    fn main_data_forms_follow_postgres() {
        for (len, header) in [
            (0usize, vec![]),
            (1, vec![0xFF, 1]),
            (255, vec![0xFF, 255]),
            (256, vec![0xFE, 0, 1, 0, 0]),
        ] {
            let data = vec![0x78; len];
            let mut out = Vec::new();
            encode_main_data(&data, &mut out);
            assert_eq!(&out[..header.len()], &header[..], "len {len}");
            assert_eq!(out.len(), main_data_header_len(len) + len);
            let body = Body {
                main_data: data.clone(),
                ..Default::default()
            };
            assert_eq!(encoded(&body), out);
            assert_eq!(Body::decode(&out).unwrap(), body);
        }
        // The long form is accepted for short data too.
        let b = Body::decode(&[0xFE, 2, 0, 0, 0, 7, 8]).unwrap();
        assert_eq!(b.main_data, vec![7, 8]);
    }

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

    fn block_header(flags: u8, data_len: u16, image: Option<(u16, u16, u8)>) -> Vec<u8> {
        let mut b = vec![0, flags];
        b.extend_from_slice(&data_len.to_le_bytes());
        if let Some((len, off, info)) = image {
            b.extend_from_slice(&len.to_le_bytes());
            b.extend_from_slice(&off.to_le_bytes());
            b.push(info);
        }
        b.extend_from_slice(&[0; 16]);
        b
    }

    #[test]
    fn consistency_checks_in_postgres_wording() {
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (vec![0x40], "invalid block_id 64"),
            (vec![0x21], "invalid block_id 33"),
            (vec![0xFF, 0x90, 1, 2], "record with invalid length"),
            (vec![0xFE, 1, 0], "record with invalid length"),
            (
                block_header(BKPBLOCK_HAS_DATA, 0, None),
                "BKPBLOCK_HAS_DATA set, but no data included",
            ),
            (
                block_header(0, 5, None),
                "BKPBLOCK_HAS_DATA not set, but data length is 5",
            ),
            (
                block_header(BKPBLOCK_SAME_REL, 0, None),
                "BKPBLOCK_SAME_REL set but no previous rel",
            ),
            (
                block_header(BKPBLOCK_HAS_IMAGE, 0, Some((8192, 0, BKPIMAGE_HAS_HOLE))),
                "BKPIMAGE_HAS_HOLE set, but hole offset 0 length 0 block image length 8192",
            ),
            (
                block_header(BKPBLOCK_HAS_IMAGE, 0, Some((100, 0, 0))),
                "BKPIMAGE_HAS_HOLE not set, but hole offset 0 length 8092",
            ),
            (
                block_header(
                    BKPBLOCK_HAS_IMAGE,
                    0,
                    Some((8192, 0, BKPIMAGE_COMPRESS_PGLZ)),
                ),
                "BKPIMAGE_COMPRESSED set, but block image length 8192",
            ),
        ];
        for (bytes, msg) in cases {
            assert_eq!(
                Body::parse(&bytes).unwrap_err().to_string(),
                msg,
                "{bytes:02x?}"
            );
        }
        let mut two = block_header(0, 0, None);
        two.extend_from_slice(&block_header(0, 0, None));
        assert_eq!(
            Body::parse(&two).unwrap_err(),
            BodyError::OutOfOrderBlockId(0)
        );
        // An empty body is valid: no main data, no blocks (XLOG_SWITCH).
        assert_eq!(Body::decode(&[]).unwrap(), Body::default());
        // Fewer bytes than the main data announces.
        assert_eq!(
            Body::parse(&[0xFF, 3, 1, 2]).unwrap_err(),
            BodyError::InvalidLength
        );
        // A huge long length never overflows.
        assert_eq!(
            Body::parse(&[0xFE, 0xFF, 0xFF, 0xFF, 0xFF]).unwrap_err(),
            BodyError::InvalidLength
        );
    }

    #[test]
    fn validate_refuses_what_encode_cannot_write() {
        let rel = Some(RelFileNode::default());
        let block = |id| BlockRef {
            id,
            rel,
            ..Default::default()
        };
        let body = Body {
            blocks: vec![block(3), block(3)],
            ..Default::default()
        };
        assert_eq!(body.validate(), Err(BodyError::OutOfOrderBlockId(3)));
        let body = Body {
            blocks: vec![block(40)],
            ..Default::default()
        };
        assert_eq!(body.validate(), Err(BodyError::InvalidBlockId(40)));
        let body = Body {
            blocks: vec![BlockRef {
                data: vec![0; 70_000],
                ..block(0)
            }],
            ..Default::default()
        };
        assert!(matches!(
            body.validate(),
            Err(BodyError::FieldOverflow { .. })
        ));
        let body = Body {
            blocks: vec![BlockRef {
                rel: None,
                ..block(0)
            }],
            ..Default::default()
        };
        assert_eq!(body.validate(), Err(BodyError::SameRelWithoutPrevious));
        let img = BlockImage {
            hole_offset: 0,
            hole_length: 0,
            info: 0,
            bytes: vec![0u8; 10],
        };
        let body = Body {
            blocks: vec![BlockRef {
                image: Some(img),
                ..block(0)
            }],
            ..Default::default()
        };
        assert!(matches!(
            body.validate(),
            Err(BodyError::UnexpectedHole { .. })
        ));
    }
}
