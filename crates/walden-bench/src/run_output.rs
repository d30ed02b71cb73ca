//! What a suite run outputs: a progress bar on stderr while it runs, then
//! its tables on stdout and its JSON report file ([`finish`]).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use indicatif::{ProgressBar, ProgressStyle};

use crate::error::BenchError;

/// A progress bar on stderr for `len` runs.
pub fn progress(len: usize) -> Result<ProgressBar, BenchError> {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} {pos}/{len} runs, {msg} [{elapsed}, ~{eta} left]")
            .map_err(BenchError::Progress)?,
    );
    Ok(bar)
}

/// The JSON report file, created before measuring so that a bad path fails
/// before minutes of work.
pub struct JsonReport {
    path: PathBuf,
    file: File,
}

/// Creates the JSON report file if one was asked for.
pub fn open_json(path: Option<&Path>) -> Result<Option<JsonReport>, BenchError> {
    path.map(|path| {
        let file = File::create(path).map_err(BenchError::io(cannot_write(path)))?;
        Ok(JsonReport {
            path: path.to_path_buf(),
            file,
        })
    })
    .transpose()
}

/// How every suite's run ends: clears the progress bar, prints the tables
/// (`print`), then writes `report` to the JSON file if one was asked for.
pub fn finish(
    bar: ProgressBar,
    print: impl FnOnce(),
    json: Option<JsonReport>,
    report: serde_json::Value,
) -> Result<(), BenchError> {
    bar.finish_and_clear();
    print();
    write_json(json, report)
}

/// Writes `report` (pretty-printed) to the file, if one was asked for.
fn write_json(json: Option<JsonReport>, report: serde_json::Value) -> Result<(), BenchError> {
    let Some(mut json) = json else {
        return Ok(());
    };
    let text =
        serde_json::to_string_pretty(&report).map_err(BenchError::json("encoding the results"))?;
    writeln!(json.file, "{text}").map_err(BenchError::io(cannot_write(&json.path)))
}

fn cannot_write(path: &Path) -> String {
    format!("writing the results to {}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;

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
