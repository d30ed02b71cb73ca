//! What the suites' argument structs share: their defaults are those clap
//! shows in `--help` ([`defaults`]), so that `walden bench all` builds each
//! suite's arguments from the same values the command line starts from.

use std::num::NonZeroUsize;

use clap::{Args, Command, FromArgMatches};

/// Parses `args` (the flags alone, without a program or subcommand name)
/// as the arguments `A` of one suite.
pub fn parse_args<A: Args + FromArgMatches>(args: &[&str]) -> Result<A, clap::Error> {
    let command = A::augment_args(Command::new("suite"));
    let matches =
        command.try_get_matches_from(std::iter::once("suite").chain(args.iter().copied()))?;
    A::from_arg_matches(&matches)
}

/// `A` with every argument at its default, as `--help` shows it.
pub fn defaults<A: Args + FromArgMatches>() -> A {
    // Every suite argument has a default or is optional or a flag: the
    // unit tests of `all` build every suite's defaults.
    parse_args(&[]).expect("a suite argument without a default")
}

/// Positive counts (threads, record sizes) for a suite's arguments; a zero
/// is left out.
pub fn counts(values: &[usize]) -> Vec<NonZeroUsize> {
    values
        .iter()
        .filter_map(|&n| NonZeroUsize::new(n))
        .collect()
}
