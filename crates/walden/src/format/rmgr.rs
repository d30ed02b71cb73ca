//! Resource manager ids and record-type names (PostgreSQL 15's
//! `rmgrlist.h` and the rmgrs' `*_identify` functions).

use std::borrow::Cow;

use super::record::{RecordHeader, XLR_RMGR_INFO_MASK};

/// The XLOG rmgr: checkpoints, switch, no-op, full-page images
/// (PostgreSQL: `RM_XLOG_ID`).
pub const RM_XLOG_ID: u8 = 0;
/// The transaction rmgr: commit, abort, prepare (PostgreSQL: `RM_XACT_ID`).
pub const RM_XACT_ID: u8 = 1;
/// Storage: relation file creation and truncation (PostgreSQL: `RM_SMGR_ID`).
pub const RM_SMGR_ID: u8 = 2;
/// The commit log (PostgreSQL: `RM_CLOG_ID`).
pub const RM_CLOG_ID: u8 = 3;
/// Databases (PostgreSQL: `RM_DBASE_ID`).
pub const RM_DBASE_ID: u8 = 4;
/// Tablespaces (PostgreSQL: `RM_TBLSPC_ID`).
pub const RM_TBLSPC_ID: u8 = 5;
/// Multixacts (PostgreSQL: `RM_MULTIXACT_ID`).
pub const RM_MULTIXACT_ID: u8 = 6;
/// The relation map (PostgreSQL: `RM_RELMAP_ID`).
pub const RM_RELMAP_ID: u8 = 7;
/// Hot standby information (PostgreSQL: `RM_STANDBY_ID`).
pub const RM_STANDBY_ID: u8 = 8;
/// The heap's second rmgr (PostgreSQL: `RM_HEAP2_ID`).
pub const RM_HEAP2_ID: u8 = 9;
/// The heap (PostgreSQL: `RM_HEAP_ID`).
pub const RM_HEAP_ID: u8 = 10;
/// B-tree indexes (PostgreSQL: `RM_BTREE_ID`).
pub const RM_BTREE_ID: u8 = 11;
/// Hash indexes (PostgreSQL: `RM_HASH_ID`).
pub const RM_HASH_ID: u8 = 12;
/// GIN indexes (PostgreSQL: `RM_GIN_ID`).
pub const RM_GIN_ID: u8 = 13;
/// GiST indexes (PostgreSQL: `RM_GIST_ID`).
pub const RM_GIST_ID: u8 = 14;
/// Sequences (PostgreSQL: `RM_SEQ_ID`).
pub const RM_SEQ_ID: u8 = 15;
/// SP-GiST indexes (PostgreSQL: `RM_SPGIST_ID`).
pub const RM_SPGIST_ID: u8 = 16;
/// BRIN indexes (PostgreSQL: `RM_BRIN_ID`).
pub const RM_BRIN_ID: u8 = 17;
/// Commit timestamps (PostgreSQL: `RM_COMMIT_TS_ID`).
pub const RM_COMMIT_TS_ID: u8 = 18;
/// Replication origins (PostgreSQL: `RM_REPLORIGIN_ID`).
pub const RM_REPLORIGIN_ID: u8 = 19;
/// Generic WAL (PostgreSQL: `RM_GENERIC_ID`).
pub const RM_GENERIC_ID: u8 = 20;
/// The logical message rmgr (PostgreSQL: `RM_LOGICALMSG_ID`).
pub const RM_LOGICALMSG_ID: u8 = 21;
/// Highest built-in rmgr id (PostgreSQL: `RM_MAX_BUILTIN_ID`).
pub const RM_MAX_BUILTIN_ID: u8 = 21;
/// Lowest custom rmgr id (PostgreSQL: `RM_MIN_CUSTOM_ID`).
pub const RM_MIN_CUSTOM_ID: u8 = 128;

/// Names of the built-in rmgrs, indexed by id, as pg_waldump prints them.
pub const BUILTIN_RMGR_NAMES: [&str; 22] = [
    "XLOG",
    "Transaction",
    "Storage",
    "CLOG",
    "Database",
    "Tablespace",
    "MultiXact",
    "RelMap",
    "Standby",
    "Heap2",
    "Heap",
    "Btree",
    "Hash",
    "Gin",
    "Gist",
    "Sequence",
    "SPGist",
    "BRIN",
    "CommitTs",
    "ReplicationOrigin",
    "Generic",
    "LogicalMessage",
];

/// XLOG record type: shutdown checkpoint (PostgreSQL: `XLOG_CHECKPOINT_SHUTDOWN`).
pub const XLOG_CHECKPOINT_SHUTDOWN: u8 = 0x00;
/// XLOG record type: online checkpoint (PostgreSQL: `XLOG_CHECKPOINT_ONLINE`).
pub const XLOG_CHECKPOINT_ONLINE: u8 = 0x10;
/// XLOG record type: filler with arbitrary main data (PostgreSQL: `XLOG_NOOP`).
pub const XLOG_NOOP: u8 = 0x20;
/// XLOG record type: next OID (PostgreSQL: `XLOG_NEXTOID`).
pub const XLOG_NEXTOID: u8 = 0x30;
/// XLOG record type: segment switch (PostgreSQL: `XLOG_SWITCH`).
pub const XLOG_SWITCH: u8 = 0x40;

/// Whether `header` is an `XLOG_SWITCH` record's, which takes the rest of
/// its segment: a reader goes on at the next segment's start.
pub fn is_switch(header: &RecordHeader) -> bool {
    header.rmid == RM_XLOG_ID && header.record_type() == XLOG_SWITCH
}
/// XLOG record type: end of base backup (PostgreSQL: `XLOG_BACKUP_END`).
pub const XLOG_BACKUP_END: u8 = 0x50;
/// XLOG record type: parameter change (PostgreSQL: `XLOG_PARAMETER_CHANGE`).
pub const XLOG_PARAMETER_CHANGE: u8 = 0x60;
/// XLOG record type: named restore point (PostgreSQL: `XLOG_RESTORE_POINT`).
pub const XLOG_RESTORE_POINT: u8 = 0x70;
/// XLOG record type: full_page_writes changed (PostgreSQL: `XLOG_FPW_CHANGE`).
pub const XLOG_FPW_CHANGE: u8 = 0x80;
/// XLOG record type: end of recovery (PostgreSQL: `XLOG_END_OF_RECOVERY`).
pub const XLOG_END_OF_RECOVERY: u8 = 0x90;
/// XLOG record type: full-page image for hint bits (PostgreSQL: `XLOG_FPI_FOR_HINT`).
pub const XLOG_FPI_FOR_HINT: u8 = 0xA0;
/// XLOG record type: full-page image (PostgreSQL: `XLOG_FPI`).
pub const XLOG_FPI: u8 = 0xB0;
/// XLOG record type: first record written over a missing continuation
/// (PostgreSQL: `XLOG_OVERWRITE_CONTRECORD`).
pub const XLOG_OVERWRITE_CONTRECORD: u8 = 0xD0;

/// Transaction record type: commit (PostgreSQL: `XLOG_XACT_COMMIT`).
pub const XLOG_XACT_COMMIT: u8 = 0x00;
/// Transaction record type: prepare (PostgreSQL: `XLOG_XACT_PREPARE`).
pub const XLOG_XACT_PREPARE: u8 = 0x10;
/// Transaction record type: abort (PostgreSQL: `XLOG_XACT_ABORT`).
pub const XLOG_XACT_ABORT: u8 = 0x20;
/// Transaction record type: commit prepared (PostgreSQL: `XLOG_XACT_COMMIT_PREPARED`).
pub const XLOG_XACT_COMMIT_PREPARED: u8 = 0x30;
/// Transaction record type: abort prepared (PostgreSQL: `XLOG_XACT_ABORT_PREPARED`).
pub const XLOG_XACT_ABORT_PREPARED: u8 = 0x40;
/// Transaction record type: subxact assignment (PostgreSQL: `XLOG_XACT_ASSIGNMENT`).
pub const XLOG_XACT_ASSIGNMENT: u8 = 0x50;
/// Transaction record type: invalidations (PostgreSQL: `XLOG_XACT_INVALIDATIONS`).
pub const XLOG_XACT_INVALIDATIONS: u8 = 0x60;
/// The opcode bits of a Transaction record's info (PostgreSQL: `XLOG_XACT_OPMASK`).
pub const XLOG_XACT_OPMASK: u8 = 0x70;
/// A Transaction record's main data has an `xinfo` word
/// (PostgreSQL: `XLOG_XACT_HAS_INFO`).
pub const XLOG_XACT_HAS_INFO: u8 = 0x80;

/// LogicalMessage record type: the only one (PostgreSQL: `XLOG_LOGICAL_MESSAGE`).
pub const XLOG_LOGICAL_MESSAGE: u8 = 0x00;

/// True for ids PostgreSQL 15 accepts in `xl_rmid`: 0..=21 and 128..=255
/// (PostgreSQL: `RmgrIdIsValid`).
pub fn is_valid_rmid(rmid: u8) -> bool {
    rmid <= RM_MAX_BUILTIN_ID || rmid >= RM_MIN_CUSTOM_ID
}

/// The rmgr's name as pg_waldump prints it: the built-in names, `customNNN`
/// for 128..=255, and `invalidNNN` for the ids no record may carry.
pub fn rmgr_name(rmid: u8) -> Cow<'static, str> {
    match BUILTIN_RMGR_NAMES.get(usize::from(rmid)) {
        Some(name) => Cow::Borrowed(name),
        None if rmid >= RM_MIN_CUSTOM_ID => Cow::Owned(format!("custom{rmid:03}")),
        None => Cow::Owned(format!("invalid{rmid:03}")),
    }
}

/// The record-type number pg_waldump's `--stats=record` groups by: the high
/// 4 bits of `info`, of which Transaction records use only 3 (the fourth is
/// [`XLOG_XACT_HAS_INFO`]).
pub fn record_type_id(rmid: u8, info: u8) -> u8 {
    let id = (info & XLR_RMGR_INFO_MASK) >> 4;
    if rmid == RM_XACT_ID {
        id & (XLOG_XACT_OPMASK >> 4)
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_ids_and_names() {
        assert!(is_valid_rmid(0) && is_valid_rmid(21) && is_valid_rmid(128) && is_valid_rmid(255));
        assert!(!is_valid_rmid(22) && !is_valid_rmid(50) && !is_valid_rmid(127));
        assert_eq!(rmgr_name(RM_LOGICALMSG_ID), "LogicalMessage");
        assert_eq!(rmgr_name(11), "Btree");
        assert_eq!(rmgr_name(128), "custom128");
        assert_eq!(rmgr_name(50), "invalid050");
    }

    #[test]
    fn record_type_ids() {
        assert_eq!(record_type_id(RM_XACT_ID, 0xA0), 2);
        assert_eq!(record_type_id(RM_HEAP_ID, 0x80), 8);
    }
}
