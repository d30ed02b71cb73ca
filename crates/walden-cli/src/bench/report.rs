//! What the `walden bench` workloads share: size arguments, the JSON
//! report file, and how a run ends ([`finish`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Context;
use indicatif::ProgressBar;

/// A size argument (`64MB`, `4800KB`, plain bytes) for clap.
pub fn parse_size_arg(text: &str) -> Result<u64, String> {
    crate::load::parse_size(text).map_err(|e| format!("{e:#}"))
}

/// The JSON report file, created before measuring so that a bad path fails
/// before minutes of work.
pub struct JsonReport {
    path: PathBuf,
    file: File,
}

/// Creates the JSON report file if one was asked for.
pub fn open_json(path: Option<&Path>) -> anyhow::Result<Option<JsonReport>> {
    path.map(|path| {
        let file = File::create(path).with_context(|| cannot_write(path))?;
        Ok(JsonReport {
            path: path.to_path_buf(),
            file,
        })
    })
    .transpose()
}

/// How every workload's run ends: clears the progress bar, prints the
/// tables (`print`), then writes `report` to the JSON file if one was asked
/// for.
pub fn finish(
    bar: ProgressBar,
    print: impl FnOnce(),
    json: Option<JsonReport>,
    report: serde_json::Value,
) -> anyhow::Result<()> {
    bar.finish_and_clear();
    print();
    write_json(json, report)
}

/// Writes `report` (pretty-printed) to the file, if one was asked for.
fn write_json(json: Option<JsonReport>, report: serde_json::Value) -> anyhow::Result<()> {
    let Some(mut json) = json else {
        return Ok(());
    };
    let text = serde_json::to_string_pretty(&report).context("encoding the results")?;
    writeln!(json.file, "{text}").with_context(|| cannot_write(&json.path))
}

fn cannot_write(path: &Path) -> String {
    format!("writing the results to {}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_units() {
        assert_eq!(parse_size_arg("4800KB").unwrap(), 4800 << 10);
        assert!(parse_size_arg("4800 pages")
            .unwrap_err()
            .contains("unknown unit"));
    }

    #[test]
    fn the_report_is_written_where_asked() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let json = open_json(Some(&path)).unwrap();
        assert!(json.is_some());
        write_json(json, serde_json::json!({"a": 1})).unwrap();
        let back: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(back["a"], 1);
        assert!(open_json(None).unwrap().is_none());
        write_json(None, serde_json::json!({"a": 1})).unwrap();
    }
}
