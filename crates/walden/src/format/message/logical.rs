//! The logical message record (`RM_LOGICALMSG_ID`, `XLOG_LOGICAL_MESSAGE`).

use std::fmt::Write as _;

use super::{MainDataError, Rec};
use crate::format::little_endian::Cursor;
use crate::format::rmgr::XLOG_LOGICAL_MESSAGE;

/// Size of the fixed part of a logical message's main data
/// (PostgreSQL: `SizeOfLogicalMessage`).
pub const LOGICAL_MESSAGE_HEADER_SIZE: usize = 24;

/// A logical message: `pg_logical_emit_message(transactional, prefix, content)`
/// (PostgreSQL: `xl_logical_message`).
///
/// Main data layout, little endian: `dbId` u32, `transactional` u8, 3
/// padding bytes, `prefix_size` u64 (with the NUL), `message_size` u64, the
/// NUL-terminated prefix, the payload.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct LogicalMessage {
    /// OID of the database it was emitted in (`dbId`; 5 is `postgres` in PostgreSQL 15).
    pub db_id: u32,
    /// Whether it is part of a transaction.
    pub transactional: bool,
    /// The prefix, without its terminating NUL.
    pub prefix: Vec<u8>,
    /// The message content.
    pub payload: Vec<u8>,
}

impl LogicalMessage {
    /// Main-data length: 24 + prefix + NUL + payload.
    pub fn encoded_len(&self) -> usize {
        LOGICAL_MESSAGE_HEADER_SIZE + self.prefix.len() + 1 + self.payload.len()
    }

    /// Appends the main data as `pg_logical_emit_message` produces it, with
    /// the struct padding written as zeros.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.extend_from_slice(&self.db_id.to_le_bytes());
        out.extend_from_slice(&[u8::from(self.transactional), 0, 0, 0]);
        out.extend_from_slice(&(self.prefix.len() as u64 + 1).to_le_bytes());
        out.extend_from_slice(&(self.payload.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.prefix);
        out.push(0);
        out.extend_from_slice(&self.payload);
    }

    /// Decodes main data, ignoring the padding (PostgreSQL leaves garbage
    /// there) and checking that `prefix_size` and `message_size` add up to
    /// the main-data length and that the prefix ends in NUL. Any non-zero
    /// `transactional` byte means true.
    pub fn decode(main_data: &[u8]) -> Result<LogicalMessage, MainDataError> {
        let m = parse(main_data)?;
        Ok(LogicalMessage {
            db_id: m.db_id,
            transactional: m.transactional,
            prefix: m.prefix.to_vec(),
            payload: m.payload.to_vec(),
        })
    }
}

/// A logical message borrowing its prefix (without NUL) and payload.
struct MessageRef<'a> {
    db_id: u32,
    transactional: bool,
    prefix: &'a [u8],
    payload: &'a [u8],
}

fn parse(main_data: &[u8]) -> Result<MessageRef<'_>, MainDataError> {
    const WHAT: &str = "logical message";
    let too_short = MainDataError::TooShort {
        what: WHAT,
        len: main_data.len(),
        need: LOGICAL_MESSAGE_HEADER_SIZE as u64,
    };
    let mut c = Cursor::new(main_data);
    let db_id = c.u32().ok_or(too_short.clone())?;
    let transactional = c.u8().ok_or(too_short.clone())? != 0;
    c.skip(3).ok_or(too_short.clone())?;
    let prefix_size = c.u64().ok_or(too_short.clone())?;
    let message_size = c.u64().ok_or(too_short)?;
    let announced = (LOGICAL_MESSAGE_HEADER_SIZE as u64)
        .saturating_add(prefix_size)
        .saturating_add(message_size);
    if announced != main_data.len() as u64 {
        return Err(MainDataError::SizeMismatch {
            what: WHAT,
            len: main_data.len(),
            announced,
        });
    }
    // The sizes add up to the length, so both fit in usize and the takes succeed.
    let mismatch = MainDataError::SizeMismatch {
        what: WHAT,
        len: main_data.len(),
        announced,
    };
    let prefix = c.take(prefix_size as usize).ok_or(mismatch.clone())?;
    let payload = c.take(message_size as usize).ok_or(mismatch)?;
    match prefix.split_last() {
        Some((0, prefix)) => Ok(MessageRef {
            db_id,
            transactional,
            prefix,
            payload,
        }),
        _ => Err(MainDataError::PrefixNotTerminated),
    }
}

/// `transactional, prefix "test"; payload (N bytes): 78 78 ...`: every
/// payload byte in upper-case hex, the prefix up to its first NUL as C
/// prints it (PostgreSQL: `logicalmsg_desc`).
/// PostgreSQL: `logicalmsg_identify`.
pub(super) fn identify(info: u8) -> Option<&'static str> {
    (info == XLOG_LOGICAL_MESSAGE).then_some("MESSAGE")
}

/// `[non-]transactional, prefix "P"; payload (N bytes): XX XX ...`
/// (PostgreSQL: `logicalmsg_desc`).
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    if rec.info != XLOG_LOGICAL_MESSAGE {
        return Ok(());
    }
    let main_data = rec.body.main_data;
    let MessageRef {
        transactional,
        prefix,
        payload,
        ..
    } = parse(main_data)?;
    let c_prefix = prefix.split(|&b| b == 0).next().unwrap_or(prefix);
    let _ = write!(
        out,
        "{}, prefix \"{}\"; payload ({} bytes): ",
        if transactional {
            "transactional"
        } else {
            "non-transactional"
        },
        String::from_utf8_lossy(c_prefix),
        payload.len()
    );
    out.reserve(payload.len() * 3);
    for (i, b) in payload.iter().enumerate() {
        let sep = if i == 0 { "" } else { " " };
        let _ = write!(out, "{sep}{b:02X}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Main data of the sample record at 0/700028: padding `56 00 00`.
    const SAMPLE: [u8; 29] = [
        0x05, 0x00, 0x00, 0x00, 0x01, 0x56, 0x00, 0x00, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0x74, 0x65, 0x73, 0x74, 0x00,
    ];

    #[test]
    fn decodes_real_message_and_encodes_with_zero_padding() {
        let m = LogicalMessage::decode(&SAMPLE).unwrap();
        assert_eq!(
            m,
            LogicalMessage {
                db_id: 5,
                transactional: true,
                prefix: b"test".to_vec(),
                payload: vec![]
            }
        );
        let mut out = Vec::new();
        m.encode(&mut out);
        let mut zeroed = SAMPLE;
        zeroed[5] = 0;
        assert_eq!(out, zeroed);
        assert_eq!(m.encoded_len(), 29);
    }

    #[test]
    fn describe_like_pg_waldump() {
        let m = LogicalMessage {
            db_id: 5,
            transactional: false,
            prefix: b"after-big".to_vec(),
            payload: b"tail".to_vec(),
        };
        let mut data = Vec::new();
        m.encode(&mut data);
        assert_eq!(
            crate::format::message::describe(21, 0, &data),
            "MESSAGE non-transactional, prefix \"after-big\"; payload (4 bytes): 74 61 69 6C"
        );
        assert_eq!(
            crate::format::message::describe(21, 0, &SAMPLE),
            "MESSAGE transactional, prefix \"test\"; payload (0 bytes): "
        );
    }

    #[test]
    fn sizes_must_add_up() {
        let mut data = SAMPLE.to_vec();
        data.push(0x78);
        assert!(matches!(
            LogicalMessage::decode(&data),
            Err(MainDataError::SizeMismatch { .. })
        ));
        let mut huge = SAMPLE;
        huge[8..16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            LogicalMessage::decode(&huge),
            Err(MainDataError::SizeMismatch { .. })
        ));
        let mut unterminated = SAMPLE;
        unterminated[28] = b'!';
        assert_eq!(
            LogicalMessage::decode(&unterminated),
            Err(MainDataError::PrefixNotTerminated)
        );
        assert!(matches!(
            LogicalMessage::decode(&SAMPLE[..20]),
            Err(MainDataError::TooShort { .. })
        ));
    }
}

/// Records a PostgreSQL 15 server wrote (`scripts/pg-wal-every-rmgr`): rmgr,
/// info, the body after the record header, and pg_waldump 15.20's description
/// of each (its `--bkp-details` text, without block references).
#[cfg(test)]
mod written_by_postgres {
    use super::super::test_support::assert_described;

    #[test]
    fn described_as_pg_waldump_describes_them() {
        assert_described(&[
            // LogicalMessage at 0/01E78E00
            (
                21,
                0x00,
                "ff1f050000000156000002000000000000000500000000000000700068656c6c6f",
                "MESSAGE transactional, prefix \"p\"; payload (5 bytes): 68 65 6C 6C 6F",
            ),
        ]);
    }
}
