//! The seeds of a power-cut run, how a failure says to replay it, and the
//! figures of each life that the floors name when they fail.
//!
//! A run's lives take the seeds `base`, `base + φ`, `base + 2φ`, … (φ the
//! 64-bit golden ratio), `base` from `WALDEN_POWER_CUT_BASE` or the clock;
//! `WALDEN_POWER_CUT_SEED=<seed>` runs the one life of that seed instead,
//! with the test's own setup (its committers, its checkpoint settings), and
//! checks the same invariants and floors on it. With one writer thread a
//! life is exactly reproducible; with several, the OS's schedule also plays
//! a part, so run a replay a few times.

use crate::support::fault::seed_from_env;

/// The seed distance between two lives of a run.
const LIFE_STRIDE: u64 = 0x9E37_79B9_7F4A_7C15;

/// The seeds of one test's run, and the commands that replay it.
#[derive(Debug)]
pub(super) struct Run {
    /// The test's path under `recovery_and_faults`.
    test: &'static str,
    /// `WALDEN_POWER_CUT_SEED`: replay this life alone.
    replay: Option<u64>,
    /// The first life's seed.
    base: u64,
}

/// What one life did, for the floors' messages.
#[derive(Clone, Debug)]
pub(super) struct LifeFigures {
    pub seed: u64,
    /// The life's configuration, in a few words.
    pub setup: String,
    pub cuts: u64,
    pub inserted: u64,
    pub acks: u64,
}

impl Run {
    /// The run of `test` (its path, `power_cut::…`) as the environment
    /// says. Panics on a `WALDEN_POWER_CUT_SEED` that is not a number: a
    /// replay must not silently run other seeds.
    pub fn from_env(test: &'static str) -> Run {
        let replay = std::env::var("WALDEN_POWER_CUT_SEED").ok().map(|s| {
            s.parse()
                .unwrap_or_else(|_| panic!("WALDEN_POWER_CUT_SEED={s:?} is not a number"))
        });
        let run = Run {
            test,
            replay,
            base: seed_from_env("WALDEN_POWER_CUT_BASE"),
        };
        println!("{test}: {}", run.what());
        run
    }

    /// The seeds of the lives that make `cuts` cuts of `cuts_per_life`
    /// (one life when replaying).
    pub fn seeds(&self, cuts: u64, cuts_per_life: u64) -> Vec<u64> {
        match self.replay {
            Some(seed) => vec![seed],
            None => (0..cuts.div_ceil(cuts_per_life))
                .map(|i| self.base.wrapping_add(i.wrapping_mul(LIFE_STRIDE)))
                .collect(),
        }
    }

    /// The cuts the run makes when it was asked for `cuts`.
    pub fn cuts(&self, cuts: u64, cuts_per_life: u64) -> u64 {
        self.seeds(cuts, cuts_per_life).len() as u64 * cuts_per_life
    }

    /// Which seeds the run uses, as the variable that sets them.
    fn what(&self) -> String {
        match self.replay {
            Some(seed) => format!("replaying WALDEN_POWER_CUT_SEED={seed}"),
            None => format!("WALDEN_POWER_CUT_BASE={}", self.base),
        }
    }

    /// The command that runs this test again with `var`.
    fn command(&self, var: &str) -> String {
        format!(
            "{var} cargo test -p walden --release --test recovery_and_faults {} -- --exact \
             --nocapture",
            self.test
        )
    }

    /// How to replay the life of `seed` alone.
    pub fn replay_life(&self, seed: u64) -> String {
        format!(
            "replay: {}",
            self.command(&format!("WALDEN_POWER_CUT_SEED={seed}"))
        )
    }

    /// How to rerun the whole run (the same seeds), and, when the floors
    /// failed, the lives in `lives` with the fewest acknowledgements per
    /// cut and how to replay the weakest.
    pub fn replay_run(&self, lives: &[LifeFigures]) -> String {
        let mut weakest: Vec<&LifeFigures> = lives.iter().collect();
        // Acknowledgements per cut, compared as a/b < c/d ⇔ a·d < c·b.
        weakest.sort_by(|a, b| (a.acks * b.cuts).cmp(&(b.acks * a.cuts)));
        let named: Vec<String> = weakest
            .iter()
            .take(3)
            .map(|l| {
                format!(
                    "life seed {} ({}): {} acknowledged over {} cuts, {} inserted",
                    l.seed, l.setup, l.acks, l.cuts, l.inserted
                )
            })
            .collect();
        let mut out = format!(
            "\n  rerun: {}",
            self.command(&match self.replay {
                Some(seed) => format!("WALDEN_POWER_CUT_SEED={seed}"),
                None => format!("WALDEN_POWER_CUT_BASE={}", self.base),
            })
        );
        if !named.is_empty() {
            out += &format!("\n  fewest acknowledgements per cut: {}", named.join("; "));
        }
        if let Some(l) = weakest.first() {
            out += &format!("\n  {}", self.replay_life(l.seed));
        }
        out
    }
}
