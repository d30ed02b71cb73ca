//! Property tests of the on-disk format: encode then decode is the identity
//! for headers, page headers, bodies and main-data structs; decoding
//! arbitrary bytes never panics and what it accepts re-encodes to itself.

use crate::support::regressions::next_to_source;
use proptest::prelude::*;
use walden::internals::format::body::{
    encode_main_data, main_data_header_len, BKPIMAGE_APPLY, BKPIMAGE_COMPRESS_LZ4,
    BKPIMAGE_COMPRESS_PGLZ, BKPIMAGE_COMPRESS_ZSTD, BKPIMAGE_HAS_HOLE, BLCKSZ, XLR_MAX_BLOCK_ID,
};
use walden::internals::format::crc::{body_crc, finish_record_crc, record_crc, seal};
use walden::internals::format::page::{LongPageHeader, PageHeader, XLP_LONG_HEADER};
use walden::message::{CheckPoint, LogicalMessage, OverwriteContrecord, CHECKPOINT_SIZE};
use walden::{BlockImage, BlockRef, Body, Lsn, RecordHeader, RelFileNode};

fn record_header() -> impl Strategy<Value = RecordHeader> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u64>(),
        any::<u8>(),
        any::<u8>(),
        any::<u32>(),
    )
        .prop_map(|(tot_len, xid, prev, info, rmid, crc)| RecordHeader {
            tot_len,
            xid,
            prev: Lsn(prev),
            info,
            rmid,
            crc,
        })
}

fn page_header() -> impl Strategy<Value = PageHeader> {
    let long = prop::option::of((any::<u64>(), any::<u32>(), any::<u32>()).prop_map(
        |(sysid, seg_size, xlog_blcksz)| LongPageHeader {
            sysid,
            seg_size,
            xlog_blcksz,
        },
    ));
    (
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        any::<u64>(),
        any::<u32>(),
        long,
    )
        .prop_map(|(magic, info, tli, pageaddr, rem_len, long)| {
            // The long part is decoded iff the flag says so.
            let info = if long.is_some() {
                info | XLP_LONG_HEADER
            } else {
                info & !XLP_LONG_HEADER
            };
            PageHeader {
                magic,
                info,
                tli,
                pageaddr: Lsn(pageaddr),
                rem_len,
                long,
            }
        })
}

fn bytes(len: impl Strategy<Value = usize>) -> impl Strategy<Value = Vec<u8>> {
    (len, any::<u8>()).prop_map(|(n, b)| (0..n).map(|i| b.wrapping_add(i as u8)).collect())
}

/// Images that satisfy PostgreSQL's hole and compression rules.
fn image() -> impl Strategy<Value = BlockImage> {
    let compression = prop_oneof![
        Just(BKPIMAGE_COMPRESS_PGLZ),
        Just(BKPIMAGE_COMPRESS_LZ4),
        Just(BKPIMAGE_COMPRESS_ZSTD)
    ];
    let apply = prop_oneof![Just(0), Just(BKPIMAGE_APPLY)];
    prop_oneof![
        // Uncompressed, no hole: exactly a page.
        (apply.clone(), bytes(Just(BLCKSZ as usize))).prop_map(|(apply, bytes)| BlockImage {
            hole_offset: 0,
            hole_length: 0,
            info: apply,
            bytes
        }),
        // Uncompressed with a hole: the page minus the hole.
        (apply.clone(), 1u16..8192, 1u16..8192).prop_flat_map(
            |(apply, hole_offset, hole_length)| {
                bytes(Just((BLCKSZ - hole_length) as usize)).prop_map(move |bytes| BlockImage {
                    hole_offset,
                    hole_length,
                    info: apply | BKPIMAGE_HAS_HOLE,
                    bytes,
                })
            }
        ),
        // Compressed, with or without a hole.
        (
            apply,
            compression,
            prop::option::of((1u16.., 1u16..)),
            bytes(0usize..300)
        )
            .prop_map(|(apply, compression, hole, bytes)| match hole {
                Some((hole_offset, hole_length)) => BlockImage {
                    hole_offset,
                    hole_length,
                    info: apply | compression | BKPIMAGE_HAS_HOLE,
                    bytes,
                },
                None => BlockImage {
                    hole_offset: 0,
                    hole_length: 0,
                    info: apply | compression,
                    bytes
                },
            }),
    ]
}

fn block(id: u8, first: bool) -> impl Strategy<Value = BlockRef> {
    let rel = (any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(spc, db, rel)| RelFileNode {
        spc,
        db,
        rel,
    });
    let rel = if first {
        rel.prop_map(Some).boxed()
    } else {
        prop::option::of(rel).boxed()
    };
    (
        0u8..16,
        any::<bool>(),
        rel,
        any::<u32>(),
        prop::option::weighted(0.3, image()),
        bytes(0usize..400),
    )
        .prop_map(move |(fork, will_init, rel, block, image, data)| BlockRef {
            id,
            fork,
            will_init,
            rel,
            block,
            image,
            data,
        })
}

fn main_data() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        bytes(0usize..300),
        bytes(250usize..262),
        bytes(60_000usize..70_000)
    ]
}

fn body() -> impl Strategy<Value = Body> {
    let ids = prop::sample::subsequence((0..=XLR_MAX_BLOCK_ID).collect::<Vec<_>>(), 0..4);
    let blocks = ids.prop_flat_map(|ids| {
        ids.iter()
            .enumerate()
            .map(|(i, &id)| block(id, i == 0))
            .collect::<Vec<_>>()
    });
    (
        blocks,
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u32>()),
        main_data(),
    )
        .prop_map(|(blocks, origin, toplevel_xid, main_data)| Body {
            blocks,
            origin,
            toplevel_xid,
            main_data,
        })
}

proptest! {
    #![proptest_config(next_to_source(ProptestConfig::default()))]

    #[test]
    fn record_header_round_trips(h in record_header()) {
        prop_assert_eq!(RecordHeader::decode(&h.encode()), h);
    }

    #[test]
    fn page_header_round_trips(h in page_header()) {
        let mut out = vec![0xEE; 48];
        h.encode(&mut out);
        prop_assert!(out[h.size()..].iter().all(|&b| b == 0xEE), "encode writes exactly size() bytes");
        prop_assert_eq!(&out[20..24], &[0, 0, 0, 0], "padding is zero");
        prop_assert_eq!(PageHeader::decode(&out[..h.size()]), Some(h));
    }

    #[test]
    fn body_round_trips(b in body()) {
        prop_assert_eq!(b.validate(), Ok(()));
        let mut out = Vec::new();
        b.encode(&mut out);
        prop_assert_eq!(out.len(), b.encoded_len());
        let back = Body::decode(&out).unwrap();
        prop_assert_eq!(&back, &b);
        prop_assert_eq!(Body::parse(&out).unwrap().into_owned(), b);
    }

    /// The inserter's fast path writes what a body of main data alone encodes to.
    #[test]
    fn main_data_fast_path_matches_body(data in main_data()) {
        let mut fast = Vec::new();
        encode_main_data(&data, &mut fast);
        prop_assert_eq!(fast.len(), main_data_header_len(data.len()) + data.len());
        let body = Body { main_data: data, ..Default::default() };
        let mut out = Vec::new();
        body.encode(&mut out);
        prop_assert_eq!(&fast, &out);
        prop_assert_eq!(fast.first().copied(), match body.main_data.len() { 0 => None, 1..=255 => Some(0xFF), _ => Some(0xFE) });
    }

    /// Arbitrary bytes, and damaged valid bodies, never panic the decoder;
    /// what it accepts is valid and re-encodes to a body that decodes the same.
    #[test]
    fn parsing_arbitrary_bytes_is_safe(raw in prop_oneof![
        prop::collection::vec(any::<u8>(), 0..600),
        (body(), prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4), any::<prop::sample::Index>())
            .prop_map(|(b, flips, cut)| {
                let mut out = Vec::new();
                b.encode(&mut out);
                for (at, value) in flips {
                    if !out.is_empty() {
                        let i = at.index(out.len());
                        out[i] = value;
                    }
                }
                let keep = cut.index(out.len() + 1).max(out.len().saturating_sub(3));
                out.truncate(keep);
                out
            }),
    ]) {
        if let Ok(b) = Body::parse(&raw) {
            prop_assert_eq!(b.validate(), Ok(()));
            let mut out = Vec::new();
            b.encode(&mut out);
            prop_assert_eq!(Body::parse(&out).unwrap(), b);
        }
    }

    #[test]
    fn two_step_crc_equals_one_step(h in record_header(), body in bytes(0usize..2000)) {
        let header = h.encode();
        prop_assert_eq!(finish_record_crc(body_crc(&body), &header), record_crc(&header, &body));
        let mut sealed = h;
        seal(&mut sealed, &body);
        prop_assert_eq!(sealed.crc, record_crc(&header, &body));
    }

    #[test]
    fn logical_message_round_trips(
        db_id in any::<u32>(),
        transactional in any::<bool>(),
        prefix in bytes(0usize..40),
        payload in bytes(0usize..5000),
    ) {
        let m = LogicalMessage { db_id, transactional, prefix, payload };
        let mut out = Vec::new();
        m.encode(&mut out);
        prop_assert_eq!(out.len(), m.encoded_len());
        prop_assert_eq!(&out[5..8], &[0, 0, 0]);
        prop_assert_eq!(LogicalMessage::decode(&out), Ok(m.clone()));
        // Garbage in the struct padding is ignored, as the server leaves it there.
        out[5] = 0x56;
        prop_assert_eq!(LogicalMessage::decode(&out), Ok(m));
    }

    #[test]
    fn checkpoint_round_trips(raw in prop::collection::vec(any::<u32>(), 16), fpw in any::<bool>(), redo in any::<u64>(), xid in any::<u64>(), time in any::<i64>()) {
        let cp = CheckPoint {
            redo: Lsn(redo),
            this_timeline: raw[0],
            prev_timeline: raw[1],
            full_page_writes: fpw,
            next_xid: xid,
            next_oid: raw[2],
            next_multi: raw[3],
            next_multi_offset: raw[4],
            oldest_xid: raw[5],
            oldest_xid_db: raw[6],
            oldest_multi: raw[7],
            oldest_multi_db: raw[8],
            time,
            oldest_commit_ts_xid: raw[9],
            newest_commit_ts_xid: raw[10],
            oldest_active_xid: raw[11],
        };
        let bytes = cp.encode();
        prop_assert_eq!(bytes.len(), CHECKPOINT_SIZE);
        prop_assert_eq!(CheckPoint::decode(&bytes), Ok(cp));
    }

    #[test]
    fn overwrite_contrecord_round_trips(lsn in any::<u64>(), time in any::<i64>()) {
        let o = OverwriteContrecord { overwritten_lsn: Lsn(lsn), overwrite_time: time };
        prop_assert_eq!(OverwriteContrecord::decode(&o.encode()), Ok(o));
    }
}
