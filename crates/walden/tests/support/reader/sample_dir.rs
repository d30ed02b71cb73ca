//! Where the PostgreSQL 15 sample WAL (`shared/pgwal-samples`) is.

use std::path::PathBuf;

/// The sample directory: `$WALDEN_PG_SAMPLES`, or `<workspace>/../shared/pgwal-samples`.
/// `None` (with a note on stderr) when it is absent, so callers skip their check.
pub fn samples_dir(check: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("WALDEN_PG_SAMPLES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pgwal-samples"),
    };
    if dir.join("000000010000000000000007").is_file() {
        Some(dir)
    } else {
        eprintln!(
            "NOTE: {} not found: the check \"{check}\" did not run",
            dir.display()
        );
        None
    }
}
