//! Many threads committing at once: each inserts a record and flushes it,
//! and one sync serves every thread waiting at the time.
//!
//! ```sh
//! cargo run --release -p walden --example group_commit
//! ```

use std::error::Error;
use std::sync::Arc;
use std::time::Instant;

use walden::{Config, Record, SyncMethod, Wal};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::temp_dir().join(format!("walden-group-commit-{}", std::process::id()));
    let config = Config {
        sync_method: SyncMethod::Fdatasync,
        ..Config::default()
    };
    let wal = Arc::new(Wal::create(&dir, config)?);
    let (threads, commits_per_thread) = (32u32, 100u32);
    let started = Instant::now();
    std::thread::scope(|s| {
        for t in 0..threads {
            let wal = wal.clone();
            s.spawn(move || {
                for i in 0..commits_per_thread {
                    let record = Record::new(128, 0, [t.to_le_bytes(), i.to_le_bytes()].concat());
                    // Returns once the record is durable.
                    wal.insert_and_flush(&record).expect("commit");
                }
            });
        }
    });
    let elapsed = started.elapsed();
    let stats = wal.stats();
    let commits = threads * commits_per_thread;
    println!(
        "{commits} commits from {threads} threads in {elapsed:.2?}: {:.0} commits/s with {} syncs ({:.1} commits per sync)",
        f64::from(commits) / elapsed.as_secs_f64(),
        stats.writer.syncs,
        f64::from(commits) / stats.writer.syncs.max(1) as f64
    );
    Arc::try_unwrap(wal)
        .map_err(|_| "the log is still shared")?
        .close()?;
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}
