//! [`Machine`]: what a run was measured on (cores and CPU model), recorded
//! in the limits suite's JSON and printed under every chart, so that a
//! chart says which machine produced it.

use serde::{Deserialize, Serialize};

/// The machine a run measured.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Machine {
    /// `std::thread::available_parallelism`: the cores this process may use.
    pub cores: Option<usize>,
    /// The first `model name` of `/proc/cpuinfo`, if readable.
    pub cpu_model: Option<String>,
}

impl Machine {
    /// This machine.
    pub fn this() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        Machine {
            cores: std::thread::available_parallelism().ok().map(|n| n.get()),
            cpu_model: cpu_model(&cpuinfo),
        }
    }

    /// `2 cores, Intel(R) Xeon(R) ...` (or what of it is known).
    pub fn describe(&self) -> String {
        let cores = match self.cores {
            Some(n) => format!("{n} cores"),
            None => "cores unknown".to_owned(),
        };
        match &self.cpu_model {
            Some(model) => format!("{cores}, {model}"),
            None => cores,
        }
    }
}

/// The first `model name` line's value in a `/proc/cpuinfo` text.
fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        (key.trim() == "model name").then(|| value.trim().to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_is_the_first_model_name() {
        let text = "processor\t: 0\nmodel name\t: Test CPU @ 2.0GHz\nprocessor\t: 1\nmodel name\t: Other\n";
        assert_eq!(cpu_model(text).as_deref(), Some("Test CPU @ 2.0GHz"));
        assert_eq!(cpu_model("processor : 0\n"), None);
    }

    #[test]
    fn a_description_names_cores_and_model() {
        let m = Machine {
            cores: Some(2),
            cpu_model: Some("Test CPU".into()),
        };
        assert_eq!(m.describe(), "2 cores, Test CPU");
        assert_eq!(Machine::default().describe(), "cores unknown");
        assert!(Machine::this().cores.is_some_and(|n| n >= 1));
    }
}
