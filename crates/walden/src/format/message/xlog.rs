//! Main data of XLOG rmgr records: checkpoints, switch, overwrite-contrecord.

use std::fmt::Write as _;
use std::ops::Range;

use super::{format_timestamptz, MainDataError, Rec};
use crate::format::little_endian::{fixed_field, Cursor};
use crate::format::record::{RecordHeader, RECORD_HEADER_SIZE};
use crate::format::rmgr::{
    RM_XLOG_ID, XLOG_BACKUP_END, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN,
    XLOG_END_OF_RECOVERY, XLOG_FPI, XLOG_FPI_FOR_HINT, XLOG_FPW_CHANGE, XLOG_NEXTOID, XLOG_NOOP,
    XLOG_OVERWRITE_CONTRECORD, XLOG_PARAMETER_CHANGE, XLOG_RESTORE_POINT, XLOG_SWITCH,
};
use crate::lsn::Lsn;

/// Main-data size of a checkpoint record: `sizeof(CheckPoint)` in
/// PostgreSQL 15 on 64-bit platforms.
pub const CHECKPOINT_SIZE: usize = 88;

/// Main-data size of an `XLOG_OVERWRITE_CONTRECORD` record
/// (PostgreSQL: `sizeof(xl_overwrite_contrecord)`).
pub const OVERWRITE_CONTRECORD_SIZE: usize = 16;

// Byte ranges of the fields of `CheckPoint` (see its layout); the gaps
// between them are alignment padding.
const CHECKPOINT_REDO: Range<usize> = 0..8;
const CHECKPOINT_THIS_TIMELINE: Range<usize> = 8..12;
const CHECKPOINT_PREV_TIMELINE: Range<usize> = 12..16;
const CHECKPOINT_FULL_PAGE_WRITES: Range<usize> = 16..17;
const CHECKPOINT_NEXT_XID: Range<usize> = 24..32;
const CHECKPOINT_NEXT_OID: Range<usize> = 32..36;
const CHECKPOINT_NEXT_MULTI: Range<usize> = 36..40;
const CHECKPOINT_NEXT_MULTI_OFFSET: Range<usize> = 40..44;
const CHECKPOINT_OLDEST_XID: Range<usize> = 44..48;
const CHECKPOINT_OLDEST_XID_DB: Range<usize> = 48..52;
const CHECKPOINT_OLDEST_MULTI: Range<usize> = 52..56;
const CHECKPOINT_OLDEST_MULTI_DB: Range<usize> = 56..60;
const CHECKPOINT_TIME: Range<usize> = 64..72;
const CHECKPOINT_OLDEST_COMMIT_TS_XID: Range<usize> = 72..76;
const CHECKPOINT_NEWEST_COMMIT_TS_XID: Range<usize> = 76..80;
const CHECKPOINT_OLDEST_ACTIVE_XID: Range<usize> = 80..84;

// Byte ranges of the fields of `xl_overwrite_contrecord`.
const OVERWRITE_LSN: Range<usize> = 0..8;
const OVERWRITE_TIME: Range<usize> = 8..OVERWRITE_CONTRECORD_SIZE;

/// Byte range of `rp_time` in `xl_restore_point`; `rp_name` follows.
const RESTORE_POINT_TIME: Range<usize> = 0..8;

/// Size of `xl_parameter_change`: six i32, then two bools.
const PARAMETER_CHANGE_SIZE: usize = 26;
/// Byte range of `wal_log_hints` (bool) in `xl_parameter_change`.
const PARAMETER_CHANGE_WAL_LOG_HINTS: Range<usize> = 24..25;
/// Byte range of `track_commit_timestamp` (bool) in `xl_parameter_change`.
const PARAMETER_CHANGE_TRACK_COMMIT_TS: Range<usize> = 25..PARAMETER_CHANGE_SIZE;

/// The main data of `CHECKPOINT_SHUTDOWN` and `CHECKPOINT_ONLINE` records
/// (PostgreSQL 15: `CheckPoint` in `pg_control.h`).
///
/// Layout (offsets in bytes, little endian): redo u64 @0, ThisTimeLineID
/// u32 @8, PrevTimeLineID u32 @12, fullPageWrites bool @16 (3 padding bytes,
/// then 4 more to align), nextXid u64 @24 (epoch in the high 32 bits),
/// nextOid @32, nextMulti @36, nextMultiOffset @40, oldestXid @44,
/// oldestXidDB @48, oldestMulti @52, oldestMultiDB @56 (u32 each; 4 padding
/// bytes), time i64 @64, oldestCommitTsXid @72, newestCommitTsXid @76,
/// oldestActiveXid @80 (u32 each), 4 padding bytes: 88 bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CheckPoint {
    /// Where replay starts (`redo`).
    pub redo: Lsn,
    /// Current timeline (`ThisTimeLineID`).
    pub this_timeline: u32,
    /// Previous timeline, if this checkpoint starts one (`PrevTimeLineID`).
    pub prev_timeline: u32,
    /// Whether full_page_writes is on (`fullPageWrites`).
    pub full_page_writes: bool,
    /// Next free transaction id with epoch (`nextXid`, a `FullTransactionId`).
    pub next_xid: u64,
    /// Next free OID (`nextOid`).
    pub next_oid: u32,
    /// Next free MultiXactId (`nextMulti`).
    pub next_multi: u32,
    /// Next free MultiXact offset (`nextMultiOffset`).
    pub next_multi_offset: u32,
    /// Cluster-wide minimum datfrozenxid (`oldestXid`).
    pub oldest_xid: u32,
    /// Database holding it (`oldestXidDB`).
    pub oldest_xid_db: u32,
    /// Cluster-wide minimum datminmxid (`oldestMulti`).
    pub oldest_multi: u32,
    /// Database holding it (`oldestMultiDB`).
    pub oldest_multi_db: u32,
    /// Time of the checkpoint, seconds since the Unix epoch (`time`, a `pg_time_t`).
    pub time: i64,
    /// Oldest xid with a valid commit timestamp (`oldestCommitTsXid`).
    pub oldest_commit_ts_xid: u32,
    /// Newest xid with a valid commit timestamp (`newestCommitTsXid`).
    pub newest_commit_ts_xid: u32,
    /// Oldest running xid, 0 at a shutdown checkpoint (`oldestActiveXid`).
    pub oldest_active_xid: u32,
}

impl CheckPoint {
    /// The 88 bytes of main data, padding zeroed.
    pub fn encode(&self) -> [u8; CHECKPOINT_SIZE] {
        let mut out = [0u8; CHECKPOINT_SIZE];
        out[CHECKPOINT_REDO].copy_from_slice(&self.redo.as_u64().to_le_bytes());
        out[CHECKPOINT_FULL_PAGE_WRITES].copy_from_slice(&[u8::from(self.full_page_writes)]);
        out[CHECKPOINT_NEXT_XID].copy_from_slice(&self.next_xid.to_le_bytes());
        out[CHECKPOINT_TIME].copy_from_slice(&self.time.to_le_bytes());
        for (at, v) in [
            (CHECKPOINT_THIS_TIMELINE, self.this_timeline),
            (CHECKPOINT_PREV_TIMELINE, self.prev_timeline),
            (CHECKPOINT_NEXT_OID, self.next_oid),
            (CHECKPOINT_NEXT_MULTI, self.next_multi),
            (CHECKPOINT_NEXT_MULTI_OFFSET, self.next_multi_offset),
            (CHECKPOINT_OLDEST_XID, self.oldest_xid),
            (CHECKPOINT_OLDEST_XID_DB, self.oldest_xid_db),
            (CHECKPOINT_OLDEST_MULTI, self.oldest_multi),
            (CHECKPOINT_OLDEST_MULTI_DB, self.oldest_multi_db),
            (CHECKPOINT_OLDEST_COMMIT_TS_XID, self.oldest_commit_ts_xid),
            (CHECKPOINT_NEWEST_COMMIT_TS_XID, self.newest_commit_ts_xid),
            (CHECKPOINT_OLDEST_ACTIVE_XID, self.oldest_active_xid),
        ] {
            out[at].copy_from_slice(&v.to_le_bytes());
        }
        out
    }

    /// Decodes exactly [`CHECKPOINT_SIZE`] bytes of main data, ignoring padding.
    pub fn decode(main_data: &[u8]) -> Result<CheckPoint, MainDataError> {
        const WHAT: &str = "checkpoint";
        let len = main_data.len();
        let b: &[u8; CHECKPOINT_SIZE] = match main_data.try_into() {
            Ok(b) => b,
            Err(_) if len < CHECKPOINT_SIZE => {
                return Err(MainDataError::TooShort {
                    what: WHAT,
                    len,
                    need: CHECKPOINT_SIZE as u64,
                })
            }
            Err(_) => {
                return Err(MainDataError::SizeMismatch {
                    what: WHAT,
                    len,
                    announced: CHECKPOINT_SIZE as u64,
                })
            }
        };
        let u32_at = |at| u32::from_le_bytes(fixed_field(b, at));
        let u64_at = |at| u64::from_le_bytes(fixed_field(b, at));
        Ok(CheckPoint {
            redo: Lsn(u64_at(CHECKPOINT_REDO)),
            this_timeline: u32_at(CHECKPOINT_THIS_TIMELINE),
            prev_timeline: u32_at(CHECKPOINT_PREV_TIMELINE),
            full_page_writes: u8::from_le_bytes(fixed_field(b, CHECKPOINT_FULL_PAGE_WRITES)) != 0,
            next_xid: u64_at(CHECKPOINT_NEXT_XID),
            next_oid: u32_at(CHECKPOINT_NEXT_OID),
            next_multi: u32_at(CHECKPOINT_NEXT_MULTI),
            next_multi_offset: u32_at(CHECKPOINT_NEXT_MULTI_OFFSET),
            oldest_xid: u32_at(CHECKPOINT_OLDEST_XID),
            oldest_xid_db: u32_at(CHECKPOINT_OLDEST_XID_DB),
            oldest_multi: u32_at(CHECKPOINT_OLDEST_MULTI),
            oldest_multi_db: u32_at(CHECKPOINT_OLDEST_MULTI_DB),
            time: i64::from_le_bytes(fixed_field(b, CHECKPOINT_TIME)),
            oldest_commit_ts_xid: u32_at(CHECKPOINT_OLDEST_COMMIT_TS_XID),
            newest_commit_ts_xid: u32_at(CHECKPOINT_NEWEST_COMMIT_TS_XID),
            oldest_active_xid: u32_at(CHECKPOINT_OLDEST_ACTIVE_XID),
        })
    }

    /// pg_waldump's details of a checkpoint record, `shutdown` choosing the
    /// last word (PostgreSQL: the checkpoint branch of `xlog_desc`).
    pub fn describe(&self, shutdown: bool) -> String {
        format!(
            "redo {}; tli {}; prev tli {}; fpw {}; xid {}:{}; oid {}; multi {}; offset {}; \
             oldest xid {} in DB {}; oldest multi {} in DB {}; \
             oldest/newest commit timestamp xid: {}/{}; oldest running xid {}; {}",
            self.redo,
            self.this_timeline,
            self.prev_timeline,
            self.full_page_writes,
            self.next_xid >> 32,
            self.next_xid as u32,
            self.next_oid,
            self.next_multi,
            self.next_multi_offset,
            self.oldest_xid,
            self.oldest_xid_db,
            self.oldest_multi,
            self.oldest_multi_db,
            self.oldest_commit_ts_xid,
            self.newest_commit_ts_xid,
            self.oldest_active_xid,
            if shutdown { "shutdown" } else { "online" }
        )
    }
}

/// The main data of `XLOG_OVERWRITE_CONTRECORD`: which record recovery cut
/// off and when (PostgreSQL: `xl_overwrite_contrecord`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct OverwriteContrecord {
    /// Start LSN of the record whose continuation was missing (`overwritten_lsn`).
    pub overwritten_lsn: Lsn,
    /// When it was overwritten, a `TimestampTz` (`overwrite_time`).
    pub overwrite_time: i64,
}

impl OverwriteContrecord {
    /// The 16 bytes of main data.
    pub fn encode(&self) -> [u8; OVERWRITE_CONTRECORD_SIZE] {
        let mut out = [0u8; OVERWRITE_CONTRECORD_SIZE];
        out[OVERWRITE_LSN].copy_from_slice(&self.overwritten_lsn.as_u64().to_le_bytes());
        out[OVERWRITE_TIME].copy_from_slice(&self.overwrite_time.to_le_bytes());
        out
    }

    /// Decodes exactly [`OVERWRITE_CONTRECORD_SIZE`] bytes of main data.
    pub fn decode(main_data: &[u8]) -> Result<OverwriteContrecord, MainDataError> {
        const WHAT: &str = "overwrite contrecord";
        let mut c = Cursor::new(main_data);
        let too_short = MainDataError::TooShort {
            what: WHAT,
            len: main_data.len(),
            need: OVERWRITE_CONTRECORD_SIZE as u64,
        };
        let overwritten_lsn = Lsn(c.u64().ok_or(too_short.clone())?);
        let overwrite_time = c.i64().ok_or(too_short)?;
        if c.remaining() != 0 {
            return Err(MainDataError::SizeMismatch {
                what: WHAT,
                len: main_data.len(),
                announced: OVERWRITE_CONTRECORD_SIZE as u64,
            });
        }
        Ok(OverwriteContrecord {
            overwritten_lsn,
            overwrite_time,
        })
    }
}

/// The complete `XLOG_SWITCH` record pointing back to `prev`, CRC included:
/// a 24-byte header and no body (`xl_tot_len` 24, `xl_xid` 0). A reader
/// treats the rest of its segment as consumed.
pub fn switch_record_header(prev: Lsn) -> RecordHeader {
    let mut h = RecordHeader {
        tot_len: RECORD_HEADER_SIZE as u32,
        xid: 0,
        prev,
        info: XLOG_SWITCH,
        rmid: RM_XLOG_ID,
        crc: 0,
    };
    crate::format::crc::seal(&mut h, &[]);
    h
}

fn fixed<const N: usize>(what: &'static str, main_data: &[u8]) -> Result<[u8; N], MainDataError> {
    main_data
        .get(..N)
        .and_then(|b| b.try_into().ok())
        .ok_or(MainDataError::TooShort {
            what,
            len: main_data.len(),
            need: N as u64,
        })
}

fn c_string(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes.split(|&b| b == 0).next().unwrap_or(bytes))
}

/// Details of an XLOG record (PostgreSQL: `xlog_desc`).
/// The XLOG record type's name (PostgreSQL: `xlog_identify`).
pub(super) fn identify(info: u8) -> Option<&'static str> {
    Some(match info {
        XLOG_CHECKPOINT_SHUTDOWN => "CHECKPOINT_SHUTDOWN",
        XLOG_CHECKPOINT_ONLINE => "CHECKPOINT_ONLINE",
        XLOG_NOOP => "NOOP",
        XLOG_NEXTOID => "NEXTOID",
        XLOG_SWITCH => "SWITCH",
        XLOG_BACKUP_END => "BACKUP_END",
        XLOG_PARAMETER_CHANGE => "PARAMETER_CHANGE",
        XLOG_RESTORE_POINT => "RESTORE_POINT",
        XLOG_FPW_CHANGE => "FPW_CHANGE",
        XLOG_END_OF_RECOVERY => "END_OF_RECOVERY",
        XLOG_FPI_FOR_HINT => "FPI_FOR_HINT",
        XLOG_FPI => "FPI",
        XLOG_OVERWRITE_CONTRECORD => "OVERWRITE_CONTRECORD",
        _ => return None,
    })
}

/// Details of an XLOG record (PostgreSQL: `xlog_desc`); SWITCH, NOOP and
/// the FPI records have none.
pub(super) fn describe(rec: &Rec<'_, '_>, out: &mut String) -> Result<(), MainDataError> {
    let (ty, main_data) = (rec.info, rec.body.main_data);
    match ty {
        XLOG_CHECKPOINT_SHUTDOWN | XLOG_CHECKPOINT_ONLINE => {
            let cp = CheckPoint::decode(main_data)?;
            out.push_str(&cp.describe(ty == XLOG_CHECKPOINT_SHUTDOWN));
        }
        XLOG_NEXTOID => {
            let _ = write!(out, "{}", u32::from_le_bytes(fixed("next OID", main_data)?));
        }
        XLOG_RESTORE_POINT => {
            // xl_restore_point: rp_time i64, then rp_name.
            fixed::<{ RESTORE_POINT_TIME.end }>("restore point", main_data)?;
            out.push_str(&c_string(&main_data[RESTORE_POINT_TIME.end..]));
        }
        XLOG_FPW_CHANGE => {
            let [fpw] = fixed("full_page_writes change", main_data)?;
            out.push_str(if fpw != 0 { "true" } else { "false" });
        }
        XLOG_BACKUP_END => {
            let _ = write!(
                out,
                "{}",
                Lsn(u64::from_le_bytes(fixed("backup end", main_data)?))
            );
        }
        XLOG_PARAMETER_CHANGE => describe_parameter_change(main_data, out)?,
        XLOG_END_OF_RECOVERY => {
            // xl_end_of_recovery: end_time i64, ThisTimeLineID u32, PrevTimeLineID u32.
            let b: [u8; 16] = fixed("end of recovery", main_data)?;
            let mut c = Cursor::new(&b);
            let (time, tli, prev) = (c.i64(), c.u32(), c.u32());
            let _ = write!(
                out,
                "tli {}; prev tli {}; time {}",
                tli.unwrap_or_default(),
                prev.unwrap_or_default(),
                format_timestamptz(time.unwrap_or_default())
            );
        }
        XLOG_OVERWRITE_CONTRECORD => {
            let o = OverwriteContrecord::decode(main_data)?;
            let _ = write!(
                out,
                "lsn {}; time {}",
                o.overwritten_lsn,
                format_timestamptz(o.overwrite_time)
            );
        }
        _ => {}
    }
    Ok(())
}

/// `xl_parameter_change`: six i32 (MaxConnections, max_worker_processes,
/// max_wal_senders, max_prepared_xacts, max_locks_per_xact, wal_level) then
/// two bools (wal_log_hints, track_commit_timestamp).
fn describe_parameter_change(main_data: &[u8], out: &mut String) -> Result<(), MainDataError> {
    let b: [u8; PARAMETER_CHANGE_SIZE] = fixed("parameter change", main_data)?;
    let mut c = Cursor::new(&b);
    let [conns, workers, senders, prepared, locks, level]: [i32; 6] =
        std::array::from_fn(|_| c.i32().unwrap_or_default());
    let flag = |v: u8| if v != 0 { "on" } else { "off" };
    let level = match level {
        0 => "minimal",
        1 => "replica",
        2 => "logical",
        _ => "?",
    };
    let _ = write!(
        out,
        "max_connections={conns} max_worker_processes={workers} max_wal_senders={senders} \
         max_prepared_xacts={prepared} max_locks_per_xact={locks} wal_level={level} \
         wal_log_hints={} track_commit_timestamp={}",
        flag(b[PARAMETER_CHANGE_WAL_LOG_HINTS.start]),
        flag(b[PARAMETER_CHANGE_TRACK_COMMIT_TS.start])
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::little_endian::assert_fields_tile;

    /// Main data of the CHECKPOINT_SHUTDOWN at 0/A8C740 of the samples.
    const SHUTDOWN: [u8; 88] = [
        0x40, 0xc7, 0xa8, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
        0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xf7, 0x02, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x07, 0x40, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xcc,
        0x02, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x5f, 0x55, 0x02, 0x6b, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    #[test]
    fn real_shutdown_checkpoint() {
        let cp = CheckPoint::decode(&SHUTDOWN).unwrap();
        assert_eq!(cp.redo, Lsn(0xA8C740));
        assert_eq!(
            (cp.next_xid, cp.next_oid, cp.oldest_xid, cp.time),
            (759, 16391, 716, 0x6B02_555F)
        );
        assert_eq!(cp.encode(), SHUTDOWN);
        assert_eq!(
            crate::format::message::describe(RM_XLOG_ID, XLOG_CHECKPOINT_SHUTDOWN, &SHUTDOWN),
            "CHECKPOINT_SHUTDOWN redo 0/A8C740; tli 1; prev tli 1; fpw true; xid 0:759; oid 16391; \
             multi 1; offset 0; oldest xid 716 in DB 1; oldest multi 1 in DB 1; \
             oldest/newest commit timestamp xid: 0/0; oldest running xid 0; shutdown"
        );
        assert!(CheckPoint::decode(&SHUTDOWN[..87]).is_err());
    }

    #[test]
    fn overwrite_contrecord_round_trip() {
        let o = OverwriteContrecord {
            overwritten_lsn: Lsn(0x1_0000_0028),
            overwrite_time: 848_630_238_312_967,
        };
        assert_eq!(OverwriteContrecord::decode(&o.encode()), Ok(o));
        assert_eq!(
            crate::format::message::describe(RM_XLOG_ID, XLOG_OVERWRITE_CONTRECORD, &o.encode()),
            "OVERWRITE_CONTRECORD lsn 1/28; time 2026-11-22 02:37:18.312967 UTC"
        );
        assert!(OverwriteContrecord::decode(&[0; 17]).is_err());
    }

    #[test]
    fn switch_record_is_the_real_one() {
        let h = switch_record_header(Lsn(0x70E018));
        assert_eq!(
            h.encode(),
            [
                0x18, 0, 0, 0, 0, 0, 0, 0, 0x18, 0xe0, 0x70, 0, 0, 0, 0, 0, 0x40, 0, 0, 0, 0x0b,
                0x6b, 0x3f, 0xc4
            ]
        );
    }

    #[test]
    fn checkpoint_fields_tile_its_88_bytes() {
        let fields = [
            ("redo", CHECKPOINT_REDO),
            ("ThisTimeLineID", CHECKPOINT_THIS_TIMELINE),
            ("PrevTimeLineID", CHECKPOINT_PREV_TIMELINE),
            ("fullPageWrites", CHECKPOINT_FULL_PAGE_WRITES),
            (
                "padding",
                CHECKPOINT_FULL_PAGE_WRITES.end..CHECKPOINT_NEXT_XID.start,
            ),
            ("nextXid", CHECKPOINT_NEXT_XID),
            ("nextOid", CHECKPOINT_NEXT_OID),
            ("nextMulti", CHECKPOINT_NEXT_MULTI),
            ("nextMultiOffset", CHECKPOINT_NEXT_MULTI_OFFSET),
            ("oldestXid", CHECKPOINT_OLDEST_XID),
            ("oldestXidDB", CHECKPOINT_OLDEST_XID_DB),
            ("oldestMulti", CHECKPOINT_OLDEST_MULTI),
            ("oldestMultiDB", CHECKPOINT_OLDEST_MULTI_DB),
            (
                "padding",
                CHECKPOINT_OLDEST_MULTI_DB.end..CHECKPOINT_TIME.start,
            ),
            ("time", CHECKPOINT_TIME),
            ("oldestCommitTsXid", CHECKPOINT_OLDEST_COMMIT_TS_XID),
            ("newestCommitTsXid", CHECKPOINT_NEWEST_COMMIT_TS_XID),
            ("oldestActiveXid", CHECKPOINT_OLDEST_ACTIVE_XID),
            ("padding", CHECKPOINT_OLDEST_ACTIVE_XID.end..CHECKPOINT_SIZE),
        ];
        assert_fields_tile(&fields, CHECKPOINT_SIZE);
        assert_fields_tile(
            &[
                ("overwritten_lsn", OVERWRITE_LSN),
                ("overwrite_time", OVERWRITE_TIME),
            ],
            OVERWRITE_CONTRECORD_SIZE,
        );
        assert_eq!(PARAMETER_CHANGE_WAL_LOG_HINTS.start, 6 * 4);
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
            // XLOG at 0/01F000D8
            (0, 0x50, "ff082800f00100000000", "BACKUP_END 0/1F00028"),
            // XLOG at 0/01A052F8
            (0, 0x10, "ff58c052a00100000000010000000100000001000000000000002d80000000000000006000000108000066060000cc02000001000000010000000000000000000000a925076b00000000f87f00002b8000002c80000000000000", "CHECKPOINT_ONLINE redo 0/1A052C0; tli 1; prev tli 1; fpw true; xid 0:32813; oid 24576; multi 2049; offset 1638; oldest xid 716 in DB 1; oldest multi 1 in DB 0; oldest/newest commit timestamp xid: 32760/32811; oldest running xid 32812; online"),
            // XLOG at 0/01000028
            (0, 0x00, "ff58280000010000000001000000010000000100000000000000f87f000000000000043500000008000064060000cc02000001000000010000000000000000000000a725076b0000000000000000000000000000000000000000", "CHECKPOINT_SHUTDOWN redo 0/1000028; tli 1; prev tli 1; fpw true; xid 0:32760; oid 13572; multi 2048; offset 1636; oldest xid 716 in DB 1; oldest multi 1 in DB 0; oldest/newest commit timestamp xid: 0/0; oldest running xid 0; shutdown"),
            // XLOG at 0/02018CF8
            (0, 0x80, "ff0100", "FPW_CHANGE false"),
            // XLOG at 0/010002C8
            (0, 0x30, "ff0400600000", "NEXTOID 24576"),
            // XLOG at 0/010000A0
            (0, 0x60, "ff1c64000000080000000a00000004000000400000000200000000010000", "PARAMETER_CHANGE max_connections=100 max_worker_processes=8 max_wal_senders=10 max_prepared_xacts=4 max_locks_per_xact=64 wal_level=logical wal_log_hints=off track_commit_timestamp=on"),
            // XLOG at 0/01E78EA8
            (0, 0x70, "ff481f7f3b931c040300727031003156000050f05293fc7f000078f71764315600009843d06931560000f8a0dd6931560000209edd693156000010a0dd693156000070f05293fc7f0000", "RESTORE_POINT rp1"),
            // XLOG at 0/01E7FB28
            (0, 0x40, "", "SWITCH "),
        ]);
    }
}
