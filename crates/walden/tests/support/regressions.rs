//! Where proptest keeps the failing cases it found: next to the test's
//! source file, as `<module>.proptest-regressions`.
//!
//! Proptest's default looks for the regressions under a `proptest-regressions`
//! folder beside the nearest directory holding a `main.rs`, which for a
//! module of a grouped test binary (`tests/<group>/main.rs`) is
//! `tests/proptest-regressions/`; these tests keep theirs beside the module.

use proptest::test_runner::{Config, FileFailurePersistence};

/// `config` with its failing cases read from and saved to
/// `<source file stem>.proptest-regressions` next to the test's source.
pub fn next_to_source(config: Config) -> Config {
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::WithSource(
            "proptest-regressions",
        ))),
        ..config
    }
}
