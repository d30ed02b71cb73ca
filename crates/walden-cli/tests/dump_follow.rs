//! `walden dump --follow` against a running PostgreSQL 15 server: records
//! are printed as they are written, across a segment switch, and every
//! record pg_waldump prints afterwards for that range was printed by
//! `walden dump -f`, in order and byte for byte. SIGINT ends it.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use walden_testkit::{parse_lsn, pg_bin, PgServer};

/// How long a record may take to show up before the test fails.
const PATIENCE: Duration = Duration::from_secs(60);

#[test]
fn follow_prints_records_as_they_arrive() {
    let work = tempfile::tempdir().unwrap();
    let server = PgServer::start(work.path()).unwrap();
    let start = server.psql("SELECT pg_current_wal_insert_lsn()").unwrap();
    let mut child = common::walden()
        .arg("dump")
        .arg("-f")
        .arg("-p")
        .arg(server.wal_dir())
        .args(["-s", &start])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    let lines = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    // Each message must be printed before the next is written.
    let mut printed = Vec::new();
    let mut last_end = String::new();
    for i in 0..4 {
        if i == 2 {
            server.psql("SELECT pg_switch_wal()").unwrap();
        }
        let prefix = format!("follow{i}");
        last_end = server
            .psql(&format!(
                "SELECT pg_logical_emit_message(false, '{prefix}', 'x')"
            ))
            .unwrap();
        let want = format!("prefix \"{prefix}\"");
        loop {
            let line = rx
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("walden dump -f did not print {prefix}"));
            let done = line.contains(&want);
            printed.push(line);
            if done {
                break;
            }
        }
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = child.wait().unwrap();
    assert!(!exit.success(), "SIGINT ended it: {exit:?}");
    lines.join().unwrap();
    printed.extend(rx.try_iter());

    // pg_waldump over the same range prints exactly the lines printed up to
    // the last message.
    let out = Command::new(pg_bin("pg_waldump"))
        .arg("-p")
        .arg(server.wal_dir())
        .args(["-s", &start, "-e", &last_end])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let expected: Vec<String> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    let end = parse_lsn(&last_end).unwrap();
    let ours: Vec<String> = printed
        .into_iter()
        .filter(|l| {
            let lsn = l.split(", lsn: ").nth(1).and_then(|r| r.split(',').next());
            lsn.and_then(parse_lsn).is_some_and(|lsn| lsn < end)
        })
        .collect();
    assert!(expected.len() >= 4, "{expected:?}");
    assert_eq!(ours, expected);
}
