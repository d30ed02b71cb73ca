//! Where the PostgreSQL 15 sample WAL (`shared/pgwal-samples`) is, and the
//! rule for when it is absent: the check fails, naming the missing path,
//! unless [`SKIP_VAR`] is `1`.

use std::path::PathBuf;

/// Set to `1` to skip, with a note on stderr, the checks that need the
/// sample WAL when it is absent; otherwise they fail.
pub const SKIP_VAR: &str = "WALDEN_SKIP_SAMPLES";

/// The sample directory: `$WALDEN_PG_SAMPLES`, or `<workspace>/../shared/pgwal-samples`.
///
/// When it is absent this panics with a message naming it, so the check
/// `check` fails; with `WALDEN_SKIP_SAMPLES=1` it returns `None` instead,
/// after a note on stderr, and the caller skips its check.
pub fn samples_dir(check: &str) -> Option<PathBuf> {
    let dir = match std::env::var_os("WALDEN_PG_SAMPLES") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/pgwal-samples"),
    };
    if dir.join("000000010000000000000007").is_file() {
        return Some(dir);
    }
    if std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1") {
        eprintln!(
            "SKIPPED: the check \"{check}\" did not run: {} not found and {SKIP_VAR}=1",
            dir.display()
        );
        return None;
    }
    panic!(
        "the check \"{check}\" needs the PostgreSQL 15 sample WAL, and {} (segment \
         000000010000000000000007) is not there: fetch it, point WALDEN_PG_SAMPLES at it, \
         or set {SKIP_VAR}=1 to skip the checks that need it",
        dir.display()
    );
}
