//! Encoding a [`Body`]: its size, the checks that what is encoded decodes
//! back, and the bytes.
//!
//! PostgreSQL: `XLogRecordAssemble`.

use super::block::{check_image, BKPIMAGE_HAS_HOLE, BLCKSZ};
use super::main_data::{encode_main_data_header, main_data_header_len};
use super::{
    Body, BodyError, BKPBLOCK_FORK_MASK, ORIGIN_FRAGMENT_SIZE, TOPLEVEL_XID_FRAGMENT_SIZE,
    XLR_BLOCK_ID_ORIGIN, XLR_BLOCK_ID_TOPLEVEL_XID, XLR_MAX_BLOCK_ID,
};

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
            + self.origin.map_or(0, |_| ORIGIN_FRAGMENT_SIZE)
            + self.toplevel_xid.map_or(0, |_| TOPLEVEL_XID_FRAGMENT_SIZE)
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
                if img.has_compress_header() {
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::body::{BlockImage, BlockRef, RelFileNode};

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
