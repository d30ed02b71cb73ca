//! Workloads behind `walden bench`: the seeds' experiments, the peers and the
//! machine's physical limits.
//!
//! Each suite is in one place: its workload in `X.rs` (or `X/`) and, in
//! `X/suite.rs`, its clap arguments (defaults as `--help` shows them), its
//! run and its report (the table on stdout, the JSON file). The `walden`
//! command only lists them as subcommands; [`all`] plans them as the flags
//! of their subcommands (which it prints), calls them with the typed
//! arguments those flags give, then [`summary`].
//! The modules depend on each other in one direction (no loops), from the
//! leaves: `latency`, `measure`, `machine`, `discard`, `log_setup`,
//! `fresh_wal`, `delay`, `plot`, `design`; the workloads (`rwlock`, `limits`, `logical`, `switch`,
//! `splice`, `commit`, `mix`, `peers`, `raft`, `reserve`, and `handoff`, which
//! uses `logical`'s message); `projection` (uses `mix`); `error`, `args`,
//! `units`, `run_output`, `slices`, `knobs`; the
//! suites (`X::suite`); `summary`; `all`.

pub mod all;
pub mod args;
pub mod commit;
pub mod delay;
pub mod design;
pub mod discard;
pub mod error;
#[cfg(test)]
mod fixtures;
pub mod fresh_wal;
pub mod handoff;
pub mod knobs;
pub mod latency;
pub mod limits;
pub mod log_setup;
pub mod logical;
pub mod machine;
pub mod measure;
pub mod mix;
pub mod peers;
pub mod plot;
pub mod projection;
pub mod raft;
pub mod recovery;
pub mod reserve;
pub mod run_output;
pub mod rwlock;
pub mod slices;
pub mod splice;
pub mod summary;
pub mod switch;
pub mod units;

/// Serializes a value by its `Display` text (the command-line name).
pub fn serde_display<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Deserializes a value from its command-line name (`FromStr`).
pub fn serde_parse<'de, T, D>(deserializer: D) -> Result<T, D::Error>
where
    T: std::str::FromStr,
    T::Err: std::fmt::Display,
    D: serde::Deserializer<'de>,
{
    let text = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(deserializer)?;
    text.parse().map_err(serde::de::Error::custom)
}
