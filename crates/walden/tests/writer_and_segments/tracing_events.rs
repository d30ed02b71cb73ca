//! The `tracing` events a log emits over its life: creation, checkpoints,
//! segment switches, recycling, poisoning and recovery, each with its fields.

use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use walden::{Config, Record, SimStorage, SyncMethod, Wal};

/// Everything the subscriber printed.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

#[test]
fn a_log_s_life_is_told_in_events() {
    let captured = Captured::default();
    let sink = captured.clone();
    // Global: the writer's and the preallocator's threads report too. The
    // only test of this binary that installs a subscriber.
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::DEBUG)
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .init();

    let sim = Arc::new(SimStorage::new(7));
    let dir = Path::new("/traced");
    let config = Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        recycle_segments: 0,
        segments_ahead: 0,
        ..Config::default()
    };
    let wal = Wal::create_with_storage(dir, config.clone(), sim.clone()).unwrap();
    // Three segments of WAL, then a checkpoint that makes two obsolete.
    let mut end = wal.insert_position();
    while end.0 < 3 << 20 {
        end = wal.insert(&Record::new(128, 0, vec![1; 8000])).unwrap();
    }
    wal.flush(end).unwrap();
    let checkpoint = wal.checkpoint().unwrap();
    sim.fail_sync(1, true);
    let end = wal.insert(&Record::new(128, 0, b"lost".to_vec())).unwrap();
    assert!(wal.flush(end).is_err());
    drop(wal);
    sim.clear_faults();
    let (_wal, report) = Wal::open_with_storage(dir, config, sim.clone()).unwrap();

    let text = captured.text();
    let line = |what: &str| {
        text.lines()
            .find(|l| what.split(' ').all(|w| l.contains(w)) && l.contains("/traced"))
            .unwrap_or_else(|| panic!("no {what:?} event in:\n{text}"))
            .to_owned()
    };
    let cp = line("INFO checkpoint shutdown=false");
    assert!(cp.contains(&format!("checkpoint={checkpoint}")), "{cp}");
    assert!(line("DEBUG recycling segments").contains("removed=[1, 2]"));
    for segno in 2..=3 {
        assert!(
            text.contains(&format!("writer entered segment segno={segno}")),
            "{text}"
        );
    }
    assert!(line("INFO created log").contains("format=postgres15"));
    assert!(text.contains("ERROR"), "{text}");
    assert!(text.contains("log poisoned"), "{text}");
    let recovered = line("INFO recovered log clean_shutdown=false");
    assert!(
        recovered.contains(&format!("end={}", report.end)),
        "{recovered}"
    );
}
