//! `Wal::flush_async` on a current-thread tokio runtime: many tasks wait
//! for durability while the one thread keeps running other tasks, and each
//! flush resolves only once a sync covered its record.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use walden::{Config, Error, Lsn, Record, SyncMethod, Wal};

use crate::support::gate::{GatedStorage, SyncGate};
use crate::support::hooked_fs::HookedFs;

const TASKS: usize = 64;

fn config() -> Config {
    Config {
        segment_size: 1 << 20,
        buffers: 1 << 20,
        sync_method: SyncMethod::Fdatasync,
        // Long: the rounds that matter are the ones the flushes ask for.
        writer_delay: Some(Duration::from_secs(10)),
        ..Config::default()
    }
}

#[test]
fn many_tasks_flush_on_one_thread_without_blocking_it() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Arc::new(SyncGate::default());
    let (finished, done) = std::sync::mpsc::channel::<()>();
    let storage = Arc::new(HookedFs(GatedStorage(gate.clone())));
    let wal = Arc::new(Wal::create_with_storage(dir.path(), config(), storage).unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // Every sync is held at the gate until the runtime's thread opens it
    // below: a flush that blocked that thread in a sync would never let it
    // get there. Then a watchdog opens the gate after a minute, and the
    // test fails on its flag instead of hanging.
    gate.close();
    let rescued = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (gate, rescued) = (gate.clone(), rescued.clone());
        std::thread::spawn(move || {
            let waited = done.recv_timeout(Duration::from_secs(60));
            if waited == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                rescued.store(true, Ordering::SeqCst);
                gate.open();
            }
        })
    };
    let durable = rt.block_on(async {
        let (tx, mut started) = tokio::sync::mpsc::channel(TASKS);
        let mut flushes = Vec::new();
        for i in 0..TASKS {
            let (wal, tx) = (wal.clone(), tx.clone());
            flushes.push(tokio::spawn(async move {
                let end = wal
                    .insert(&Record::new(128, 0, vec![i as u8; 100]))
                    .unwrap();
                let flush = wal.flush_async(end);
                tx.send(()).await.unwrap();
                (end, flush.await)
            }));
        }
        for _ in 0..TASKS {
            started.recv().await.unwrap();
        }
        // Every task is now waiting in its flush (or about to), and none
        // can have finished: no sync has got past the gate.
        tokio::task::yield_now().await;
        assert!(flushes.iter().all(|f| !f.is_finished()));
        let last = wal.insert_position();
        assert!(wal.flushed() < last, "nothing new is durable yet");
        gate.open();
        let mut results = Vec::new();
        for f in flushes {
            results.push(f.await.unwrap());
        }
        results
    });
    drop(finished);
    watchdog.join().unwrap();
    assert!(
        !rescued.load(Ordering::SeqCst),
        "the runtime's thread was blocked"
    );
    for (end, result) in durable {
        let now = result.unwrap();
        assert!(
            now >= end,
            "resolved at {now} before its record's end {end}"
        );
    }
    assert!(wal.flushed() >= wal.insert_position());
}

#[test]
fn flush_async_refuses_what_it_cannot_wait_for() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let wal = Wal::create(dir.path(), config()).unwrap();
    let beyond = Lsn(wal.insert_position().0 + (1 << 20));
    match rt.block_on(wal.flush_async(beyond)) {
        Err(Error::FlushBeyondEnd { requested, .. }) => assert_eq!(requested, beyond),
        other => panic!("{other:?}"),
    }
    // Already durable: resolves at once.
    let durable = wal.flushed();
    assert_eq!(rt.block_on(wal.flush_async(durable)).unwrap(), durable);
    wal.close().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let no_writer = Config {
        writer_delay: None,
        ..config()
    };
    let wal = Wal::create(dir.path(), no_writer).unwrap();
    let end = wal.insert(&Record::new(128, 0, b"x".to_vec())).unwrap();
    assert!(matches!(
        rt.block_on(wal.flush_async(end)),
        Err(Error::NoBackgroundWriter)
    ));
}
