//! Randomised schedules (shuttle) of [`ReadBiasedLock`] at 6 threads:
//! writers change a two-field value in two steps with a yield between, and
//! no reader ever sees the halves differ; every write lands.
//!
//! Run: `RUSTFLAGS="--cfg shuttle" CARGO_TARGET_DIR=target/shuttle cargo test
//! -p walden --release --features sim --lib sync::read_biased::shuttle_model`.

use std::num::NonZeroUsize;

use shuttle::sync::Arc;
use shuttle::thread;

use crate::sync::shuttle_support;
use crate::sync::ReadBiasedLock;

/// Iterations per scheduler unless `WALDEN_SHUTTLE_ITERATIONS` says.
const ITERATIONS: usize = 2_000;

fn model(writers: usize, readers: usize, partitions: usize) {
    let partitions = NonZeroUsize::new(partitions).unwrap();
    let lock = Arc::new(ReadBiasedLock::with_partitions(partitions, (0u64, 0u64)));
    let mut handles = Vec::new();
    for _ in 0..writers {
        let lock = lock.clone();
        handles.push(thread::spawn(move || {
            for _ in 0..2 {
                let mut g = lock.write();
                g.0 += 1;
                thread::yield_now();
                g.1 += 1;
            }
        }));
    }
    for _ in 0..readers {
        let lock = lock.clone();
        handles.push(thread::spawn(move || {
            for _ in 0..2 {
                let g = lock.read();
                let first = g.0;
                thread::yield_now();
                assert_eq!(first, g.1, "a reader saw a half-done write");
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let total = 2 * writers as u64;
    assert_eq!(*lock.read(), (total, total));
}

#[test]
fn readers_never_see_a_half_done_write_random() {
    shuttle::check_random(|| model(2, 4, 3), shuttle_support::iterations(ITERATIONS));
}

#[test]
fn readers_never_see_a_half_done_write_pct() {
    shuttle::check_pct(
        || model(3, 5, 2),
        shuttle_support::iterations(ITERATIONS),
        3,
    );
}
