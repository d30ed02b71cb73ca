//! The generated-WAL fixture: fresh WAL from a real PostgreSQL 15 server,
//! written by `scripts/pg-wal-gen`, and the facts (LSNs) it recorded.

use std::collections::hash_map::DefaultHasher;
use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use rustix::fs::{flock, FlockOperation};

use crate::lsn::parse_lsn;
use crate::pg::{pg_bin_dir, PG_BIN_ENV};
use crate::HarnessError;

/// The generator script, `scripts/pg-wal-gen` in this workspace.
pub const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/pg-wal-gen");

/// The facts file the generator writes last, after every segment.
pub const FACTS_FILE: &str = "facts.env";

/// Segment size of the fixture's WAL, in MiB: small, so that one run covers
/// several segments, a segment that is all continuation, and segment starts.
pub const FIXTURE_SEGSIZE_MB: u32 = 1;

/// A directory of PostgreSQL WAL segments written by `scripts/pg-wal-gen`,
/// with its `facts.env`.
#[derive(Debug, Clone)]
pub struct GeneratedWal {
    dir: PathBuf,
    facts: Facts,
}

impl GeneratedWal {
    /// Runs `scripts/pg-wal-gen OUT --segsize-mb SEGSIZE_MB` (a throwaway
    /// PostgreSQL 15 server, a few seconds) and loads what it wrote.
    /// Fails with the script's stderr if it fails.
    pub fn generate(out: &Path, segsize_mb: u32) -> Result<GeneratedWal, HarnessError> {
        run_generator(
            PathBuf::from(SCRIPT),
            out,
            &["--segsize-mb".to_owned(), segsize_mb.to_string()],
        )?;
        GeneratedWal::load(out)
    }

    /// Loads WAL that `scripts/pg-wal-gen` wrote into `dir` earlier.
    pub fn load(dir: &Path) -> Result<GeneratedWal, HarnessError> {
        Ok(GeneratedWal {
            dir: dir.to_path_buf(),
            facts: Facts::read(&dir.join(FACTS_FILE))?,
        })
    }

    /// The directory holding the segment files. Shared by every test: copy
    /// it before changing anything.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The facts the generator recorded.
    pub fn facts(&self) -> &Facts {
        &self.facts
    }

    /// Names of the segment files in [`dir`](Self::dir), in order.
    pub fn segment_names(&self) -> Result<Vec<String>, HarnessError> {
        let io = |source| HarnessError::Io {
            op: "could not list",
            path: self.dir.clone(),
            source,
        };
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.dir).map_err(io)? {
            let name = entry.map_err(io)?.file_name();
            if let Some(name) = name.to_str() {
                if name.len() == 24 && name.bytes().all(|b| b.is_ascii_hexdigit()) {
                    names.push(name.to_owned());
                }
            }
        }
        names.sort();
        Ok(names)
    }
}

/// Runs generator `script OUT ARGS...` with PostgreSQL's programs from
/// [`pg_bin_dir`]; fails with the script's stderr if it fails.
pub(crate) fn run_generator(
    script: PathBuf,
    out: &Path,
    args: &[String],
) -> Result<(), HarnessError> {
    let output = Command::new(&script)
        .arg(out)
        .args(args)
        .env(PG_BIN_ENV, pg_bin_dir())
        .output()
        .map_err(|source| HarnessError::Spawn {
            program: script.clone(),
            source,
        })?;
    if !output.status.success() {
        return Err(HarnessError::Generator {
            script,
            out: out.to_path_buf(),
            status: output.status,
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        });
    }
    Ok(())
}

/// The fixture: WAL from a real PostgreSQL 15 server, generated once per
/// test process.
///
/// The result is cached on disk under the temporary directory, keyed by a
/// hash of `scripts/pg-wal-gen`'s content, so later test binaries reuse it;
/// an exclusive file lock makes concurrent test binaries wait for the one
/// that generates instead of racing it.
///
/// # Panics
///
/// If the WAL cannot be generated (PostgreSQL 15 missing or failing to
/// start), with the generator's stderr: there is no silent skip.
pub fn generated_wal() -> &'static GeneratedWal {
    static WAL: OnceLock<GeneratedWal> = OnceLock::new();
    WAL.get_or_init(|| match cached(FIXTURE_SEGSIZE_MB) {
        Ok(wal) => wal,
        Err(e) => panic!("the generated-WAL fixture failed: {e}"),
    })
}

/// Generates into the on-disk cache unless a complete copy is there.
fn cached(segsize_mb: u32) -> Result<GeneratedWal, HarnessError> {
    let io = |op, path: &Path| {
        let path = path.to_path_buf();
        move |source| HarnessError::Io { op, path, source }
    };
    let script = Path::new(SCRIPT);
    let content = fs::read(script).map_err(io("could not read", script))?;
    // DefaultHasher is stable for a given toolchain: a new toolchain only
    // costs one regeneration.
    let mut hasher = DefaultHasher::new();
    content.hash(&mut hasher);
    segsize_mb.hash(&mut hasher);
    let root = std::env::temp_dir().join(format!("walden-pg-wal-{:016x}", hasher.finish()));
    fs::create_dir_all(&root).map_err(io("could not create", &root))?;

    let lock_path = root.join("lock");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(io("could not open", &lock_path))?;
    // Held until `lock` is dropped at the end of this function.
    flock(&lock, FlockOperation::LockExclusive)
        .map_err(|e| io("could not lock", &lock_path)(e.into()))?;

    let ready = root.join("wal");
    if ready.join(FACTS_FILE).is_file() {
        return GeneratedWal::load(&ready);
    }
    let partial = root.join("wal.partial");
    for stale in [&ready, &partial] {
        if stale.exists() {
            fs::remove_dir_all(stale).map_err(io("could not remove", stale))?;
        }
    }
    GeneratedWal::generate(&partial, segsize_mb)?;
    fs::rename(&partial, &ready).map_err(io("could not rename", &partial))?;
    GeneratedWal::load(&ready)
}

/// One logical message of the generator's list (`MSG_<size>_LSN` and
/// `MSG_<size>_TRANSACTIONAL`; prefix `"test"`, payload `size` × `'x'`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MessageFact {
    /// Payload bytes.
    pub payload: u64,
    /// The record's LSN.
    pub lsn: u64,
    /// Whether it was emitted transactionally (then it has an xid).
    pub transactional: bool,
}

/// The `KEY=VALUE` facts of a `facts.env` (see `scripts/pg-wal-gen` for the
/// keys).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    map: BTreeMap<String, String>,
}

impl Facts {
    /// Reads and parses a facts file.
    pub fn read(path: &Path) -> Result<Facts, HarnessError> {
        let text = fs::read_to_string(path).map_err(|source| HarnessError::Io {
            op: "could not read",
            path: path.to_path_buf(),
            source,
        })?;
        Facts::parse(path, &text)
    }

    /// Parses `KEY=VALUE` lines; blank lines and `#` comments are skipped.
    /// `path` only names the file in errors.
    pub fn parse(path: &Path, text: &str) -> Result<Facts, HarnessError> {
        let mut map = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (key, value) = line
                .split_once('=')
                .filter(|(k, _)| {
                    !k.is_empty()
                        && k.bytes()
                            .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
                })
                .ok_or_else(|| HarnessError::BadFactsLine {
                    path: path.to_path_buf(),
                    line: i + 1,
                    text: line.to_owned(),
                })?;
            map.insert(key.to_owned(), value.to_owned());
        }
        Ok(Facts { map })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Result<&str, HarnessError> {
        self.map
            .get(key)
            .map(String::as_str)
            .ok_or_else(|| HarnessError::MissingFact {
                key: key.to_owned(),
            })
    }

    /// The value of `key` as an LSN (`X/Y`).
    pub fn lsn(&self, key: &str) -> Result<u64, HarnessError> {
        self.typed(key, "an LSN (X/Y)", parse_lsn)
    }

    /// The value of `key` as a decimal number.
    pub fn number(&self, key: &str) -> Result<u64, HarnessError> {
        self.typed(key, "a decimal number", |v| v.parse().ok())
    }

    /// The value of `key` as `true`/`false`.
    pub fn flag(&self, key: &str) -> Result<bool, HarnessError> {
        self.typed(key, "true or false", |v| v.parse().ok())
    }

    fn typed<T>(
        &self,
        key: &str,
        expected: &'static str,
        parse: impl FnOnce(&str) -> Option<T>,
    ) -> Result<T, HarnessError> {
        let value = self.get(key)?;
        parse(value).ok_or_else(|| HarnessError::BadFact {
            key: key.to_owned(),
            value: value.to_owned(),
            expected,
        })
    }

    /// Every fact, by key.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.map.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The generator's list of logical messages, in LSN order.
    pub fn messages(&self) -> Result<Vec<MessageFact>, HarnessError> {
        let mut messages = Vec::new();
        for (key, _) in self.iter() {
            let Some(size) = key
                .strip_prefix("MSG_")
                .and_then(|k| k.strip_suffix("_LSN"))
            else {
                continue;
            };
            messages.push(MessageFact {
                payload: self.typed(key, "MSG_<decimal size>_LSN", |_| size.parse().ok())?,
                lsn: self.lsn(key)?,
                transactional: self.flag(&format!("MSG_{size}_TRANSACTIONAL"))?,
            });
        }
        messages.sort_by_key(|m| m.lsn);
        Ok(messages)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(text: &str) -> Result<Facts, HarnessError> {
        Facts::parse(Path::new("facts.env"), text)
    }

    #[test]
    fn facts_parse_typed_values() {
        let f = facts(
            "# made by pg-wal-gen\nSEGMENT_SIZE=1048576\n\nEND_OF_WAL=0/A8C7B8\n\
             MSG_10_LSN=0/7000E8\nMSG_10_TRANSACTIONAL=false\n\
             MSG_0_LSN=0/700028\nMSG_0_TRANSACTIONAL=true\n",
        )
        .unwrap();
        assert_eq!(f.number("SEGMENT_SIZE").unwrap(), 1 << 20);
        assert_eq!(f.lsn("END_OF_WAL").unwrap(), 0xA8C7B8);
        assert_eq!(f.get("MSG_10_TRANSACTIONAL").unwrap(), "false");
        assert_eq!(
            f.messages().unwrap(),
            vec![
                MessageFact {
                    payload: 0,
                    lsn: 0x700028,
                    transactional: true
                },
                MessageFact {
                    payload: 10,
                    lsn: 0x7000E8,
                    transactional: false
                },
            ]
        );
    }

    #[test]
    fn facts_errors_name_the_problem() {
        let err = facts("A=1\nnot a fact\n").unwrap_err().to_string();
        assert!(
            err.contains("line 2") && err.contains("not a fact"),
            "{err}"
        );
        let err = facts("lower=1\n").unwrap_err().to_string();
        assert!(err.contains("line 1"), "{err}");
        let f = facts("END_OF_WAL=A8C7B8\nN=x\nMSG_7_LSN=0/1\n").unwrap();
        let err = f.lsn("END_OF_WAL").unwrap_err().to_string();
        assert!(err.contains("END_OF_WAL") && err.contains("LSN"), "{err}");
        assert!(f.number("N").is_err());
        let err = f.lsn("MISSING").unwrap_err().to_string();
        assert!(err.contains("MISSING"), "{err}");
        // A message without its TRANSACTIONAL fact is an error, not a guess.
        let err = f.messages().unwrap_err().to_string();
        assert!(err.contains("MSG_7_TRANSACTIONAL"), "{err}");
    }
}
