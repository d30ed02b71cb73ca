//! The main data of the records Walden writes or reports on, and
//! pg_waldump's description of records.
//!
//! - [`LogicalMessage`]: `pg_logical_emit_message`'s record;
//! - [`CheckPoint`], [`OverwriteContrecord`], [`switch_record_header`]: XLOG records;
//! - [`CommitRecord`]: a Transaction COMMIT;
//! - [`BatchMarker`]: the `XLOG_NOOP` record in front of a batch;
//! - [`describe`]: the text pg_waldump prints after `desc: `.

mod batch;
mod logical;
mod timestamp;
mod xact;
mod xlog;

use std::fmt::Write as _;

pub use batch::{BatchMarker, BATCH_MARKER_MAGIC, BATCH_MARKER_SIZE};
pub use logical::{LogicalMessage, LOGICAL_MESSAGE_HEADER_SIZE};
pub use timestamp::{format_timestamptz, POSTGRES_EPOCH_UNIX_SECS, USECS_PER_SEC};
pub use xact::CommitRecord;
pub use xlog::{
    switch_record_header, CheckPoint, OverwriteContrecord, CHECKPOINT_SIZE,
    OVERWRITE_CONTRECORD_SIZE,
};

use super::body::Body;
use super::rmgr::{record_type_label, RM_LOGICALMSG_ID, RM_MIN_CUSTOM_ID, RM_XACT_ID, RM_XLOG_ID};

/// Fork names as pg_waldump prints them (PostgreSQL: `forkNames`).
const FORK_NAMES: [&str; 4] = ["main", "fsm", "vm", "init"];

/// Why main data is not the struct its record type says.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MainDataError {
    /// Fewer bytes than the fixed part of the struct.
    #[error("{what}: main data of {len} bytes is shorter than the {need} bytes it needs")]
    TooShort {
        /// The struct being decoded.
        what: &'static str,
        /// Bytes of main data.
        len: usize,
        /// Bytes needed.
        need: u64,
    },
    /// The sizes inside the struct do not add up to the main data length.
    #[error("{what}: main data is {len} bytes but its own sizes add up to {announced}")]
    SizeMismatch {
        /// The struct being decoded.
        what: &'static str,
        /// Bytes of main data.
        len: usize,
        /// What the struct's size fields announce.
        announced: u64,
    },
    /// A logical message prefix without its terminating NUL.
    #[error("logical message: the prefix is not NUL-terminated")]
    PrefixNotTerminated,
}

/// pg_waldump 15's description of a record, exactly the text it prints after
/// `desc: ` and before any block references: the record type (or
/// `UNKNOWN (x)`), a space, then the details.
///
/// Details are given for LogicalMessage MESSAGE; XLOG CHECKPOINT_SHUTDOWN,
/// CHECKPOINT_ONLINE, NEXTOID, RESTORE_POINT, BACKUP_END, PARAMETER_CHANGE,
/// FPW_CHANGE, END_OF_RECOVERY, OVERWRITE_CONTRECORD (SWITCH, NOOP and FPI
/// have none); Transaction COMMIT; and custom rmgrs (`rmid: N`). Other
/// records get their type name or `UNKNOWN (x)` only. Main data that does not
/// decode is described as `<error>` instead of pg_waldump's garbage.
/// Timestamps print in UTC.
///
/// PostgreSQL: `XLogDumpDisplayRecord` with the rmgrs' `rm_identify` and `rm_desc`.
pub fn describe(rmid: u8, info: u8, main_data: &[u8]) -> String {
    describe_with_origin(rmid, info, main_data, 0)
}

/// [`describe`] for a record whose body carries replication origin `origin`
/// (0 when absent), which a COMMIT with origin details prints.
pub fn describe_with_origin(rmid: u8, info: u8, main_data: &[u8], origin: u16) -> String {
    let mut out = String::from(record_type_label(rmid, info));
    out.push(' ');
    let details = match rmid {
        RM_XLOG_ID => xlog::describe(info, main_data, &mut out),
        RM_XACT_ID => xact::describe(info, main_data, origin, &mut out),
        RM_LOGICALMSG_ID => logical::describe(info, main_data, &mut out),
        r if r >= RM_MIN_CUSTOM_ID => {
            let _ = write!(out, "rmid: {rmid}");
            Ok(())
        }
        _ => Ok(()),
    };
    if let Err(e) = details {
        let _ = write!(out, "<{e}>");
    }
    out
}

/// pg_waldump's short list of block references, appended after the
/// description: `, blkref #N: rel S/D/R[ fork F] blk B[ FPW]` per block
/// (` FPW for WAL verification` for an image that replay does not apply).
///
/// PostgreSQL: the block loop of `XLogDumpDisplayRecord`.
pub fn describe_block_refs<B: AsRef<[u8]>>(body: &Body<B>) -> String {
    let mut out = String::new();
    for (b, rel) in body.block_rels() {
        let rel = rel.unwrap_or_default();
        let _ = write!(out, ", blkref #{}: rel {rel}", b.id);
        match FORK_NAMES.get(usize::from(b.fork)) {
            Some(&"main") => {}
            Some(name) => {
                let _ = write!(out, " fork {name}");
            }
            None => {
                let _ = write!(out, " fork {}", b.fork);
            }
        }
        let _ = write!(out, " blk {}", b.block);
        match &b.image {
            Some(img) if img.applies() => out.push_str(" FPW"),
            Some(_) => out.push_str(" FPW for WAL verification"),
            None => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_descriptions() {
        assert_eq!(describe(0, 0x40, &[]), "SWITCH ");
        assert_eq!(describe(0, 0x20, &[1, 2, 3, 4, 5, 6, 7, 8]), "NOOP ");
        assert_eq!(describe(0, 0xB0, &[]), "FPI ");
        assert_eq!(describe(0, 0x30, &24576u32.to_le_bytes()), "NEXTOID 24576");
        assert_eq!(describe(128, 0, &[]), "UNKNOWN (0) rmid: 128");
        assert_eq!(describe(10, 0x00, &[1]), "UNKNOWN (0) ");
        assert_eq!(
            describe(0, 0x00, &[1, 2]),
            "CHECKPOINT_SHUTDOWN <checkpoint: main data of 2 bytes is shorter than the 88 bytes it needs>"
        );
    }
}
