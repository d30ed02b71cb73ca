//! Decoding a record body, with PostgreSQL's consistency checks in its order.
//!
//! PostgreSQL: `DecodeXLogRecord`.

use super::block::{check_image, BKPIMAGE_COMPRESSED, BKPIMAGE_HAS_HOLE, BLCKSZ};
use super::{
    BlockImage, BlockRef, Body, BodyError, RelFileNode, BKPBLOCK_FORK_MASK, BKPBLOCK_HAS_DATA,
    BKPBLOCK_HAS_IMAGE, BKPBLOCK_SAME_REL, BKPBLOCK_WILL_INIT, XLR_BLOCK_ID_DATA_LONG,
    XLR_BLOCK_ID_DATA_SHORT, XLR_BLOCK_ID_ORIGIN, XLR_BLOCK_ID_TOPLEVEL_XID, XLR_MAX_BLOCK_ID,
};
use crate::format::little_endian::Cursor;

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
    use crate::format::body::{BKPIMAGE_COMPRESS_PGLZ, BKPIMAGE_HAS_HOLE};

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
}
