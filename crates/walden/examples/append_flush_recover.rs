//! Append records, flush them, crash (drop without close), and recover.
//!
//! ```sh
//! cargo run -p walden --example append_flush_recover -- /tmp/walden-example
//! ```

use std::error::Error;

use walden::{Config, Record, SyncMethod, Wal};

/// A custom resource manager id for this application's records.
const RM_APP: u8 = 128;

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args()
        .nth(1)
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| {
            std::env::temp_dir().join(format!("walden-example-{}", std::process::id()))
        });
    let config = Config {
        segment_size: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    };

    let wal = Wal::create(&dir, config.clone())?;
    let mut last = None;
    for i in 0..1000u32 {
        let end = wal.insert(&Record::new(
            RM_APP,
            0x10,
            format!("put key{i} = value{i}").into_bytes(),
        ))?;
        last = Some(end);
    }
    // Everything below `end` is durable once flush returns.
    if let Some(end) = last {
        wal.flush(end)?;
    }
    // A crash: no close(). Drop still flushes, but recovery treats the log
    // as not closed cleanly and scans to the end of valid WAL.
    drop(wal);

    let (wal, report) = Wal::open(&dir, config)?;
    println!(
        "recovered {} records from {} to {} (clean shutdown: {}); {}",
        report.records, report.redo, report.end, report.clean_shutdown, report.stop
    );
    let mut reader = wal.reader(report.redo)?;
    let mut puts = 0;
    while let Ok(Some(record)) = reader.next_record() {
        if record.header.rmid == RM_APP {
            puts += 1;
        }
    }
    println!("{puts} application records read back");
    assert_eq!(puts, 1000);
    wal.close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
