//! The `serde` feature: a `Config` survives a round trip and reads a
//! partial document, its enums and LSNs are their text, and a log's `Stats`
//! and recovery report serialize with their counts.

use walden::{
    Config, Eviction, Lsn, Record, SlotChoice, SyncMethod, Wal, WalFormat, MAX_INSERT_SLOTS,
};

#[test]
fn config_round_trips_and_enums_are_their_names() {
    let config = Config {
        format: WalFormat::SelfLsn,
        reservation: walden::ReservationKind::Unlinked,
        slot_choice: SlotChoice::Attempts(3),
        eviction: Eviction::Batch,
        switch_eviction: walden::SwitchEviction::Chunked,
        write_lock_handoff: false,
        sync_method: SyncMethod::OpenDatasync,
        insert_slots: MAX_INSERT_SLOTS,
        ..Config::default()
    };
    let json = serde_json::to_value(&config).unwrap();
    assert_eq!(json["format"], WalFormat::SelfLsn.to_string());
    assert_eq!(json["switch_eviction"], "chunked");
    assert_eq!(json["slot_choice"], "attempts:3");
    assert_eq!(json["sync_method"], SyncMethod::OpenDatasync.to_string());
    let back: Config = serde_json::from_value(json).unwrap();
    assert_eq!(back, config);
}

#[test]
fn a_partial_config_takes_the_defaults_and_a_bad_name_is_refused() {
    let config: Config =
        serde_json::from_str(r#"{"insert_slots": 64, "sync_method": "open_datasync"}"#).unwrap();
    assert_eq!(
        config,
        Config {
            insert_slots: 64,
            sync_method: SyncMethod::OpenDatasync,
            ..Config::default()
        }
    );
    let err = serde_json::from_str::<Config>(r#"{"format": "postgres9"}"#).unwrap_err();
    assert!(err.to_string().contains("postgres9"), "{err}");
}

#[test]
fn an_lsn_is_its_text() {
    let lsn = Lsn(0x1_016B_3748);
    let json = serde_json::to_string(&lsn).unwrap();
    assert_eq!(json, format!("\"{lsn}\""));
    assert_eq!(serde_json::from_str::<Lsn>(&json).unwrap(), lsn);
    assert!(serde_json::from_str::<Lsn>("\"16B3748\"").is_err());
}

#[test]
fn stats_and_the_recovery_report_carry_their_counts() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::None,
        ..Config::default()
    };
    let wal = Wal::create(dir.path(), config.clone()).unwrap();
    for i in 0..10u8 {
        wal.insert(&Record::new(128, 0, vec![i; 100])).unwrap();
    }
    let stats = wal.stats();
    // Ours and the log's own first records (its checkpoint).
    assert!(stats.records >= 10, "{stats:?}");
    let json = serde_json::to_value(&stats).unwrap();
    assert_eq!(json["records"], stats.records);
    assert_eq!(json["bytes"], stats.bytes);
    assert_eq!(json["writer"]["writes"], stats.writer.writes);
    wal.close().unwrap();
    let (_wal, report) = Wal::open(dir.path(), config).unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["end"], report.end.to_string());
    assert_eq!(json["records"], report.records);
}
