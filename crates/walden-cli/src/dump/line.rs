//! One record as `pg_waldump`'s line, or as a JSON object.

use walden::WalRecord;

/// The record as `pg_waldump` 15 prints it:
/// `rmgr: %-11s len (rec/tot): %6u/%6u, tx: %10u, lsn: %X/%08X, prev %X/%08X, desc: ...`,
/// where `rec` is `tot` less the stored page-image bytes and the description
/// ends with the block references.
///
/// PostgreSQL: `XLogDumpDisplayRecord`.
pub fn text(record: &WalRecord) -> String {
    format!("{}{}", prefix(record), record.describe())
}

/// The record as `pg_waldump --bkp-details` prints it: the line without the
/// short block references, then one line per block, every line ending in a
/// newline.
pub fn text_with_block_details(record: &WalRecord) -> String {
    format!(
        "{}{}\n{}",
        prefix(record),
        record.describe_record(),
        record.block_details()
    )
}

/// Everything before the description, `desc: ` included.
fn prefix(record: &WalRecord) -> String {
    let header = &record.header;
    format!(
        "rmgr: {:<11} len (rec/tot): {:>6}/{:>6}, tx: {:>10}, lsn: {:#}, prev {:#}, desc: ",
        record.rmgr_name(),
        record.rec_len(),
        header.tot_len,
        header.xid,
        record.lsn,
        header.prev,
    )
}

/// The record's header as one JSON object: `lsn`, `end` (just past its last
/// byte) and `prev` as `X/Y` strings; `xid`, `rmgr_id`, `rmgr`, `info`,
/// `tot_len`, `crc`, and `desc` (pg_waldump's description with the block
/// references).
pub fn json(record: &WalRecord) -> String {
    let header = &record.header;
    serde_json::json!({
        "lsn": record.lsn.to_string(),
        "end": record.end.to_string(),
        "prev": header.prev.to_string(),
        "xid": header.xid,
        "rmgr_id": header.rmid,
        "rmgr": record.rmgr_name(),
        "info": header.info,
        "tot_len": header.tot_len,
        "crc": header.crc,
        "desc": record.describe(),
    })
    .to_string()
}
