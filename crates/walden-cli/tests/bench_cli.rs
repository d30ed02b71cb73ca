//! `walden bench` from the command line: every suite that builds logs takes
//! the strategy knobs and reports them, an impossible format/reservation
//! pair is the library's one-line error, and every command's help has
//! examples.

mod common;

use std::path::Path;

use common::{succeeded, walden};

/// Runs `walden bench ARGS --json DIR/SUITE.json`, which must succeed, and
/// returns the JSON it wrote.
fn bench_json(dir: &Path, args: &[&str]) -> serde_json::Value {
    let json = dir.join(format!("{}.json", args[0]));
    let out = walden()
        .arg("bench")
        .args(args)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    succeeded(out, &format!("walden bench {}", args.join(" ")));
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

#[test]
fn every_suite_that_builds_logs_takes_the_knobs() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().to_str().unwrap();
    let fast = ["--slice-ms", "20", "--slices", "1", "--dir", logs];

    let commit = bench_json(
        tmp.path(),
        &[
            &["commit", "--threads", "1", "--sync", "none"],
            &fast[..],
            &[
                "--format",
                "self-lsn",
                "--reservation",
                "unlinked",
                "--insert-slots",
                "4",
                "--slot-choice",
                "attempts:2",
                "--page-init",
                "cooperative",
                "--eviction",
                "batch",
                "--buffers",
                "1MB",
            ],
        ]
        .concat(),
    );
    let config = &commit["config"];
    assert_eq!(config["format"], "self-lsn", "{commit}");
    assert_eq!(config["reservation"], "unlinked", "{commit}");
    assert_eq!(config["insert_slots"], 4, "{commit}");
    assert_eq!(config["slot_choice"], "attempts:2", "{commit}");
    assert_eq!(config["page_init"], "cooperative", "{commit}");
    assert_eq!(config["eviction"], "batch", "{commit}");
    assert_eq!(config["buffers"], 1 << 20, "{commit}");
    assert!(
        commit["results"][0]["ops"].as_u64().unwrap() > 0,
        "{commit}"
    );

    // --best is the base; a knob still overrides it.
    let best = bench_json(
        tmp.path(),
        &[
            &["commit", "--best", "--threads", "1", "--sync", "none"],
            &fast[..],
            &["--page-init", "mapping-lock"],
        ]
        .concat(),
    );
    assert_eq!(best["base"], "best", "{best}");
    assert_eq!(best["config"]["format"], "self-lsn", "{best}");
    assert_eq!(best["config"]["eviction"], "batch", "{best}");
    assert_eq!(best["config"]["page_init"], "mapping-lock", "{best}");

    let insert = bench_json(
        tmp.path(),
        &[
            &["insert", "--threads", "1", "--record-bytes", "66"],
            &fast[..],
            &["--format", "compact-wal-id", "--reservation", "unlinked"],
            &["--page-init", "cooperative", "--eviction", "batch"],
            &["--insert-slots", "16", "--buffers", "2MB"],
        ]
        .concat(),
    );
    // Files steady, files fresh, discard.
    assert_eq!(insert["results"].as_array().unwrap().len(), 3, "{insert}");
    assert_eq!(insert["results"][0]["format"], "compact-wal-id", "{insert}");
    assert_eq!(insert["config"]["page_init"], "cooperative", "{insert}");
    assert_eq!(insert["config"]["insert_slots"], 16, "{insert}");

    let mix = bench_json(
        tmp.path(),
        &[
            &["mix", "--threads", "1", "--sync", "none"],
            &fast[..],
            &["--format", "compact-wal-id", "--reservation", "unlinked"],
            &["--slot-choice", "attempts:3", "--eviction", "batch"],
        ]
        .concat(),
    );
    assert_eq!(
        mix["results"][0]["case"]["format"], "compact-wal-id",
        "{mix}"
    );
    assert_eq!(mix["config"]["slot_choice"], "attempts:3", "{mix}");

    let logical = bench_json(
        tmp.path(),
        &[
            "logical-1mb",
            "--threads",
            "1",
            "--insert-slots",
            "8",
            "--slot-choice",
            "sticky",
            "--page-init",
            "cooperative",
            "--duration-ms",
            "40",
            "--slices",
            "1",
            "--segment-size",
            "16MB",
            "--buffers",
            "4MB",
            "--format",
            "self-lsn",
            "--eviction",
            "batch",
        ],
    );
    assert_eq!(logical["config"]["format"], "self-lsn", "{logical}");
    assert_eq!(logical["config"]["reservation"], "unlinked", "{logical}");
    assert_eq!(logical["config"]["buffers"], 4 << 20, "{logical}");
    assert_eq!(
        logical["results"][0]["case"]["page_init"], "cooperative",
        "{logical}"
    );

    let switch = bench_json(
        tmp.path(),
        &[
            "switch",
            "--storage",
            "delay",
            "--delay-us",
            "1",
            "--segment-sizes",
            "1MB",
            "--buffers",
            "128KB",
            "--eviction",
            "batch",
            "--dir",
            logs,
            "--format",
            "self-lsn",
            "--insert-slots",
            "2",
            "--page-init",
            "cooperative",
        ],
    );
    assert_eq!(switch["config"]["format"], "self-lsn", "{switch}");
    assert_eq!(switch["config"]["insert_slots"], 2, "{switch}");
    assert_eq!(switch["config"]["page_init"], "cooperative", "{switch}");
    assert!(
        switch["results"][0]["writes"].as_u64().unwrap() > 0,
        "{switch}"
    );
}

#[test]
fn an_impossible_pair_is_one_clear_line_in_every_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().to_str().unwrap();
    let pair = ["--format", "self-lsn", "--reservation", "spinlock"];
    for suite in [
        &["insert", "--threads", "1"][..],
        &["mix", "--threads", "1", "--dir", logs],
        &["commit", "--threads", "1", "--dir", logs],
        &["logical-1mb", "--threads", "1"],
        &["switch", "--storage", "delay", "--dir", logs],
        &["handoff", "--threads", "1"],
    ] {
        let out = walden()
            .arg("bench")
            .args(suite)
            .args(pair)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{suite:?}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            "walden: error: reservation = spinlock does not suit format = self-lsn: \
             its records carry no prev-link, so use unlinked",
            "{suite:?}"
        );
    }
    // --best is self-lsn: a prev-link design alone does not suit it either.
    let out = walden()
        .args([
            "bench",
            "commit",
            "--best",
            "--reservation",
            "prev-link-table",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with(
            "walden: error: reservation = prev-link-table does not suit format = self-lsn"
        ),
        "{stderr}"
    );
}

/// The subcommands listed under "Commands:" in `help`, but `help` itself.
fn subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect()
}

/// `walden ARGS --help`, which must succeed.
fn help(args: &[&str]) -> String {
    let out = walden().args(args).arg("--help").output().unwrap();
    succeeded(out, &format!("walden {} --help", args.join(" ")))
}

#[test]
fn every_command_and_bench_suite_has_examples_in_its_help() {
    let top = help(&[]);
    let commands = subcommands(&top);
    assert!(commands.len() >= 5, "{commands:?}");
    let suites = subcommands(&help(&["bench"]));
    for suite in [
        "insert",
        "logical-1mb",
        "switch",
        "handoff",
        "commit",
        "mix",
        "reserve",
        "splice",
        "recovery",
        "all",
    ] {
        assert!(suites.iter().any(|s| s == suite), "{suite} in {suites:?}");
    }
    let mut checked = vec![top];
    for command in &commands {
        checked.push(help(&[command]));
    }
    for suite in &suites {
        checked.push(help(&["bench", suite]));
    }
    let missing: Vec<_> = checked
        .iter()
        .filter(|h| !h.contains("Examples:"))
        .map(|h| h.lines().next().unwrap_or_default().to_owned())
        .collect();
    assert!(missing.is_empty(), "no Examples: in {missing:?}");
    assert_eq!(checked.len(), 1 + commands.len() + suites.len());
}

#[test]
fn splice_says_why_it_is_not_in_bench_all() {
    let text = help(&["bench", "splice"]);
    assert!(text.contains("Not part of `walden bench all`"), "{text}");
    assert!(text.contains("correctness table"), "{text}");
    assert!(text.contains("not a timing"), "{text}");
}

#[test]
fn segment_states_storages_and_write_limits_are_flags_reported_in_the_json() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().to_str().unwrap();
    let fast = ["--slice-ms", "20", "--slices", "1", "--dir", logs];
    for suite in ["commit", "mix", "insert"] {
        let text = help(&["bench", suite]);
        assert!(text.contains("--segment-state"), "{suite}: {text}");
    }
    assert!(help(&["bench", "insert"]).contains("--storage"));
    assert!(help(&["bench", "limits"]).contains("O_DIRECT"));

    let insert = bench_json(
        tmp.path(),
        &[
            &["insert", "--threads", "1", "--record-bytes", "66"][..],
            &fast[..],
            &["--format", "postgres15", "--reservation", "spinlock"],
            &["--storage", "discard,files", "--segment-state", "steady"],
        ]
        .concat(),
    );
    let setups: Vec<(String, String)> = insert["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["storage"].as_str().unwrap().to_owned(),
                r["segment_state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    // Discard has no segment state: it runs once, fresh.
    assert_eq!(
        setups,
        [
            ("discard".into(), "fresh".into()),
            ("files".into(), "steady".into())
        ],
        "{insert}"
    );

    let commit = bench_json(
        tmp.path(),
        &[
            &["commit", "--threads", "1", "--sync", "none"][..],
            &fast[..],
            &["--segment-state", "steady"],
        ]
        .concat(),
    );
    let row = &commit["results"][0];
    assert_eq!(row["segment_state"], "steady", "{commit}");
    assert!(row["ops"].as_u64().unwrap() > 0, "{commit}");
    assert!(
        row["slice_max_ops_per_sec"].as_f64().unwrap() > 0.0,
        "{commit}"
    );

    let limits = bench_json(
        tmp.path(),
        &["limits", "--duration-ms", "20", "--dir", logs],
    );
    assert!(
        limits["machine"]["cores"].as_u64().unwrap() >= 1,
        "{limits}"
    );
    let labels: Vec<&str> = limits["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["probe"]["target"].as_str().unwrap_or(""))
        .collect();
    for target in ["fresh", "overwrite", "direct"] {
        assert!(labels.contains(&target), "{target}: {limits}");
    }
    // O_DIRECT is measured or says why not: never silently missing.
    for r in limits["results"].as_array().unwrap() {
        if r["probe"]["target"] == "direct" {
            assert!(
                r["ops_per_sec"].as_f64().unwrap() > 0.0 || r["unsupported"].is_string(),
                "{r}"
            );
        }
    }
}

#[test]
fn a_bad_segment_state_or_storage_names_the_choices_on_one_line() {
    for (suite, flag, value, message) in [
        (
            "commit",
            "--segment-state",
            "warm",
            "unknown segment state `warm`: expected fresh or steady",
        ),
        (
            "mix",
            "--segment-state",
            "hot",
            "unknown segment state `hot`: expected fresh or steady",
        ),
        (
            "insert",
            "--storage",
            "tape",
            "unknown storage `tape`: expected files or discard",
        ),
    ] {
        let out = walden()
            .args(["bench", suite, flag, value])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{suite}: {stderr}");
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: invalid value"),
            "{suite}: {stderr}"
        );
        assert!(first.ends_with(message), "{suite}: {stderr}");
    }
}

#[test]
fn bench_without_a_suite_runs_the_main_job() {
    let tmp = tempfile::tempdir().unwrap();
    let results = tmp.path().join("results");
    // Every suite skipped: the main job still ends with its summary.
    let skip = "limits,rwlock,reserve,insert,switch,logical-1mb,commit,pg-workloads,mix,peers";
    let out = walden()
        .args(["bench", "--quick", "--skip", skip, "--results"])
        .arg(&results)
        .output()
        .unwrap();
    let stdout = succeeded(out, "walden bench --quick --skip ...");
    assert!(stdout.contains("against each peer"), "{stdout}");
    assert!(results.join("summary.md").is_file());
    // A suite and the main job's options do not mix.
    let out = walden()
        .args(["bench", "--quick", "rwlock"])
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn raft_reads_back_what_it_appended_and_says_when_raft_engine_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let logs = tmp.path().to_str().unwrap();
    let json = tmp.path().join("raft.json");
    let out = walden()
        .args(["bench", "raft", "--entries", "300", "--batches", "1,7"])
        .args(["--sync", "false", "--dir", logs, "--json"])
        .arg(&json)
        .output()
        .unwrap();
    let stdout = succeeded(out, "walden bench raft");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let systems: Vec<_> = report["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["case"]["system"].as_str().unwrap_or_default().to_owned())
        .collect();
    let per_batch = if cfg!(feature = "peers") {
        vec!["walden-raft", "raft-engine"]
    } else {
        assert!(
            stdout.contains("raft-engine is not in this build"),
            "{stdout}"
        );
        vec!["walden-raft"]
    };
    assert_eq!(systems, [per_batch.clone(), per_batch].concat(), "{report}");
    for r in report["results"].as_array().unwrap() {
        assert_eq!(r["entries"], 300, "{r}");
        assert!(r["read_per_sec"].as_f64().unwrap() > 0.0, "{r}");
    }
}
