//! `walden dump` is pg_waldump: on WAL that a real PostgreSQL 15 server
//! wrote with records of every built-in resource manager
//! (`scripts/pg-wal-every-rmgr`), the whole output of each of pg_waldump's
//! options is byte for byte the same, and so are the exit code and the error
//! messages.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use walden::rmgr::BUILTIN_RMGR_NAMES;
use walden_testkit::{every_rmgr_wal, pg_bin};

/// The generated WAL, once per test binary.
fn wal() -> &'static Path {
    static WAL: OnceLock<tempfile::TempDir> = OnceLock::new();
    WAL.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        if let Err(e) = every_rmgr_wal(dir.path()) {
            panic!("generating WAL of every rmgr failed: {e}");
        }
        dir
    })
    .path()
}

/// The first and last segment file names.
fn segments() -> (String, String) {
    let mut names: Vec<String> = fs::read_dir(wal())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.len() == 24 && n.bytes().all(|b| b.is_ascii_hexdigit()))
        .collect();
    names.sort();
    assert!(names.len() > 2, "{names:?}");
    (names[0].clone(), names[names.len() - 1].clone())
}

/// What a run printed: stdout, exit code, and the stderr messages without
/// the program's name (pg_waldump's `hint:` lines, which point at its own
/// `--help`, left out).
#[derive(Debug, PartialEq, Eq)]
struct Run {
    stdout: String,
    code: Option<i32>,
    messages: Vec<String>,
}

fn run(mut cmd: Command, prefix: &str) -> Run {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap();
    Run {
        stdout: String::from_utf8(stdout).unwrap(),
        code: status.code(),
        messages: String::from_utf8_lossy(&stderr)
            .lines()
            .map(|l| l.strip_prefix(prefix).unwrap_or(l).to_owned())
            .filter(|l| !l.starts_with("hint: "))
            .collect(),
    }
}

/// Runs pg_waldump and `walden dump` with `args` in `cwd` (and `PGDATA`,
/// if given) and asserts the same output, exit code and messages.
fn assert_same_in(args: &[&str], cwd: &Path, pgdata: Option<&Path>) -> Run {
    let command = |mut cmd: Command| {
        cmd.current_dir(cwd).env_remove("PGDATA");
        if let Some(p) = pgdata {
            cmd.env("PGDATA", p);
        }
        cmd
    };
    let theirs = run(
        command({
            let mut c = Command::new(pg_bin("pg_waldump"));
            c.args(args);
            c
        }),
        "pg_waldump: ",
    );
    let ours = run(
        command({
            let mut c = common::walden();
            c.arg("dump").args(args);
            c
        }),
        "walden: ",
    );
    if ours.stdout != theirs.stdout {
        let (o, t): (Vec<_>, Vec<_>) = (
            ours.stdout.lines().collect(),
            theirs.stdout.lines().collect(),
        );
        let at = o
            .iter()
            .zip(&t)
            .position(|(a, b)| a != b)
            .unwrap_or(o.len().min(t.len()));
        panic!(
            "{args:?}: output differs at line {} ({} lines against {}):\nwalden:     {:.400}\npg_waldump: {:.400}",
            at + 1,
            o.len(),
            t.len(),
            o.get(at).unwrap_or(&""),
            t.get(at).unwrap_or(&"")
        );
    }
    assert_eq!(
        (ours.code, &ours.messages),
        (theirs.code, &theirs.messages),
        "{args:?}: exit code and messages"
    );
    ours
}

fn assert_same(args: &[&str]) -> Run {
    assert_same_in(args, wal(), None)
}

#[test]
fn every_rmgr_is_described_as_pg_waldump_describes_it() {
    let (first, last) = segments();
    let whole = assert_same(&["-p", ".", &first, &last]);
    // Reading on past the last record is the end of WAL: exit 1, as pg_waldump.
    assert_eq!(whole.code, Some(1));
    for name in BUILTIN_RMGR_NAMES {
        let tag = format!("rmgr: {name:<11} ");
        assert!(
            whole.stdout.lines().any(|l| l.starts_with(&tag)),
            "the workload wrote no {name} record"
        );
    }
    // Full-page images uncompressed, pglz and lz4 were all compared.
    let details = assert_same(&["-p", ".", "-b", &first, &last]);
    for needle in ["method: pglz", "method: lz4"] {
        assert!(details.stdout.contains(needle), "no image with {needle}");
    }
    assert!(details
        .stdout
        .lines()
        .any(|l| l.contains("(FPW); hole:") && !l.contains("compression saved")));
}

#[test]
fn each_option_matches_pg_waldump() {
    let (first, last) = segments();
    let range = [first.as_str(), last.as_str()];
    let with = |opts: &[&str]| {
        let mut args = vec!["-p", "."];
        args.extend_from_slice(opts);
        args.extend_from_slice(&range);
        assert_same(&args)
    };
    assert_eq!(with(&["-n", "100"]).stdout.lines().count(), 100);
    let heap = with(&["-r", "Heap", "-r", "btree"]);
    assert!(heap
        .stdout
        .lines()
        .all(|l| l.starts_with("rmgr: Heap ") || l.starts_with("rmgr: Btree ")));
    assert!(!heap.stdout.is_empty());
    let xid = whole_xid(&with(&[]).stdout);
    assert!(!with(&["-x", &xid]).stdout.is_empty());
    let rel = some_relation(&with(&["-r", "Hash"]).stdout);
    assert!(!with(&["-R", &rel]).stdout.is_empty());
    assert!(!with(&["-R", &rel, "-B", "1"]).stdout.is_empty());
    assert!(!with(&["-F", "vm"]).stdout.is_empty());
    assert!(!with(&["-F", "fsm", "-w"]).stdout.is_empty());
    assert!(!with(&["-w"]).stdout.is_empty());
    assert!(with(&["-z"]).stdout.starts_with("WAL statistics between "));
    assert!(with(&["--stats=record"]).stdout.contains("Heap2/PRUNE "));
    assert!(with(&["-q"]).stdout.is_empty());
    // Statistics of filtered records start at the first record read.
    assert!(with(&["-z", "-r", "Heap"]).stdout.contains("\nHeap "));
    assert!(with(&["--stats=record", "-x", &xid])
        .stdout
        .contains("Transaction/"));
    assert!(with(&["-b", "-n", "50", "-w"]).stdout.contains("(FPW"));
    assert_same(&["-p", ".", "-s", "0/1000100", "-e", "0/1000400", &first]);
    // The skip note is printed even with --quiet; -n of zero or less is no limit.
    let quiet = assert_same(&[
        "-p",
        ".",
        "-q",
        "-s",
        "0/1000100",
        "-e",
        "0/1000400",
        &first,
    ]);
    assert!(quiet.stdout.starts_with("first record is after 0/1000100"));
    assert!(with(&["-n", "-3"]).stdout.lines().count() > 100);
    assert_same(&["--rmgr=list"]);
}

/// The xid of the first record that has one.
fn whole_xid(out: &str) -> String {
    out.lines()
        .filter_map(|l| l.split("tx: ").nth(1)?.split(',').next())
        .map(str::trim)
        .find(|x| *x != "0")
        .unwrap()
        .to_owned()
}

/// The relation of the first block reference.
fn some_relation(out: &str) -> String {
    out.lines()
        .find_map(|l| l.split("blkref #0: rel ").nth(1)?.split(' ').next())
        .unwrap()
        .to_owned()
}

#[test]
fn option_errors_match_pg_waldump() {
    let (first, last) = segments();
    for opts in [
        &["-r", "foo"][..],
        &["-x", "abc"],
        &["-B", "3"],
        &["-R", "1/2"],
        &["-F", "x"],
        &["-n", "x"],
        &["--stats=foo"],
    ] {
        let mut args = vec!["-p", "."];
        args.extend_from_slice(opts);
        args.push(&first);
        let out = assert_same(&args);
        assert_eq!(out.code, Some(1), "{args:?}");
        assert!(!out.messages.is_empty(), "{args:?}");
    }
    assert_eq!(assert_same(&["-p", ".", &last, &first]).code, Some(1));
}

#[test]
fn segments_are_found_where_pg_waldump_finds_them() {
    let (first, _) = segments();
    // In the current directory, by relative path, and in $PGDATA/pg_wal.
    assert_same(&[&first]);
    let parent = wal().parent().unwrap();
    let name = wal().file_name().unwrap().to_string_lossy().into_owned();
    assert_same_in(&[&format!("{name}/{first}")], parent, None);
    let data = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(wal(), data.path().join("pg_wal")).unwrap();
    let elsewhere: PathBuf = data.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    let found = assert_same_in(&[&first], &elsewhere, Some(data.path()));
    assert_eq!(found.code, Some(0));
    let missing = assert_same_in(&[&first], &elsewhere, None);
    assert_eq!(missing.code, Some(1));
}
