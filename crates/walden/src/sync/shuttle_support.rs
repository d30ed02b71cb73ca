//! Helpers shared by the shuttle models (`RUSTFLAGS="--cfg shuttle"`): the
//! iterations per scheduler and a way to run a model's threads.

use shuttle::sync::Arc;
use shuttle::thread;

/// Iterations per scheduler: `WALDEN_SHUTTLE_ITERATIONS` if set, else
/// `default`.
pub fn iterations(default: usize) -> usize {
    std::env::var("WALDEN_SHUTTLE_ITERATIONS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `f(0)`, …, `f(n - 1)` on `n` shuttle threads and returns their
/// results in that order, once every thread has finished.
pub fn run_threads<T, F>(n: usize, f: F) -> Vec<T>
where
    T: Send + 'static,
    F: Fn(usize) -> T + Send + Sync + 'static,
{
    let f = Arc::new(f);
    let handles: Vec<_> = (0..n)
        .map(|t| {
            let f = f.clone();
            thread::spawn(move || f(t))
        })
        .collect();
    handles.into_iter().map(|h| h.join().unwrap()).collect()
}
