//! What the command-line tests share: running the `walden` binary and
//! checking that a run succeeded.

// Each test binary uses only some of these.
#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// The `walden` binary under test.
pub fn walden() -> Command {
    Command::new(env!("CARGO_BIN_EXE_walden"))
}

/// Runs the `walden` binary with `args` and returns what it did.
pub fn run(args: &[&str]) -> Output {
    walden().args(args).output().unwrap()
}

/// Asserts that `out` succeeded (the failure names `what` and shows both
/// streams) and returns its stdout.
pub fn succeeded(out: Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `walden verify DIR --acked ACKED`, which must succeed (`what` says
/// after what, in the failure); returns its stdout.
pub fn verify_acked(dir: &Path, acked: &Path, what: &str) -> String {
    let out = walden()
        .arg("verify")
        .arg(dir)
        .arg("--acked")
        .arg(acked)
        .output()
        .unwrap();
    succeeded(out, &format!("{what}: walden verify"))
}
