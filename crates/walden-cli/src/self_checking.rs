//! The self-checking payloads of `walden write`, and `walden verify`'s
//! parsing of them and of the acknowledgement file; `walden write --size`'s
//! size range.
//!
//! Payload layout (little endian): magic `WLDNLOAD`, run u64, thread u32,
//! sequence u64, filler length u32, CRC-32C of the preceding fields and the
//! filler, then the filler (bytes derived from run, thread and sequence).

use std::fs::{File, OpenOptions};
use std::path::Path;

use anyhow::{bail, Context};
use walden_bench::units::parse_size;

/// Marks a payload written by `walden write`.
pub const MAGIC: &[u8; 8] = b"WLDNLOAD";
/// Bytes before the filler.
pub const HEADER_LEN: usize = 36;
/// Resource manager id of `walden write`'s plain records (the first custom id).
pub const LOAD_RMID: u8 = 128;
/// Prefix of its logical messages.
pub const LOAD_PREFIX: &str = "walden";

/// Which record of which run a payload is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RecordId {
    /// The run (one `walden write` invocation).
    pub run: u64,
    /// Thread within the run.
    pub thread: u32,
    /// Sequence number within the thread, from 0.
    pub seq: u64,
}

/// Builds the payload of `id` with `filler_len` filler bytes into `out`.
pub fn encode(id: RecordId, filler_len: usize, out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&id.run.to_le_bytes());
    out.extend_from_slice(&id.thread.to_le_bytes());
    out.extend_from_slice(&id.seq.to_le_bytes());
    out.extend_from_slice(&(filler_len as u32).to_le_bytes());
    let mut state =
        id.run ^ (u64::from(id.thread) << 40) ^ id.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let filler_start = HEADER_LEN;
    out.resize(filler_start + filler_len, 0);
    for b in &mut out[filler_start..] {
        // xorshift64: cheap bytes that differ between records.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        *b = state as u8;
    }
    let crc = crc32c::crc32c_append(crc32c::crc32c(&out[..HEADER_LEN - 4]), &out[filler_start..]);
    out[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
}

/// Parses and checks a payload; `Ok(None)` if it is not one of ours.
pub fn decode(payload: &[u8]) -> anyhow::Result<Option<RecordId>> {
    if payload.len() < HEADER_LEN || &payload[..8] != MAGIC {
        return Ok(None);
    }
    let u64_at = |o: usize| u64::from_le_bytes(payload[o..o + 8].try_into().unwrap_or_default());
    let u32_at = |o: usize| u32::from_le_bytes(payload[o..o + 4].try_into().unwrap_or_default());
    let id = RecordId {
        run: u64_at(8),
        thread: u32_at(16),
        seq: u64_at(20),
    };
    let filler_len = u32_at(28) as usize;
    if payload.len() != HEADER_LEN + filler_len {
        bail!(
            "payload of {id:?} is {} bytes, its header says {}",
            payload.len(),
            HEADER_LEN + filler_len
        );
    }
    let mut expected = Vec::with_capacity(payload.len());
    encode(id, filler_len, &mut expected);
    if expected != payload {
        bail!("payload of {id:?} differs from what was written (checksum or filler mismatch)");
    }
    Ok(Some(id))
}

/// One line of the acknowledgement file: this record was durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    /// The record.
    pub id: RecordId,
    /// Its end LSN as returned by insert.
    pub end: walden::Lsn,
}

impl Ack {
    /// The line written for it (with the newline).
    pub fn line(&self) -> String {
        format!(
            "{} {} {} {}\n",
            self.id.run, self.id.thread, self.id.seq, self.end
        )
    }
}

/// Opens an acknowledgement file for appending, creating it (and syncing its
/// directory, so that its entry survives a power cut as its lines do).
///
/// A last line without a newline is cut off first: a writer killed inside
/// `write` can leave part of a line (a write that crosses a page boundary
/// stops between pages on `SIGKILL`), and that line was never acknowledged,
/// because its `fdatasync` had not returned. Appending after it would glue
/// the next line to it and make the file unreadable.
pub fn open_ack_file(path: &Path) -> anyhow::Result<File> {
    let file = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))?;
    let text = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete < text.len() {
        file.set_len(complete as u64)
            .and_then(|()| file.sync_data())
            .with_context(|| format!("cutting the torn last line of {}", path.display()))?;
    }
    let parent = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|dir| dir.sync_all())
        .with_context(|| format!("syncing the directory {}", parent.display()))?;
    Ok(file)
}

/// Parses an acknowledgement file. A last line without a newline was being
/// written when the writer died and is ignored; any other bad line is an error.
pub fn parse_acks(text: &str) -> anyhow::Result<Vec<Ack>> {
    let complete = match text.rfind('\n') {
        Some(i) => &text[..=i],
        None => "",
    };
    complete
        .lines()
        .enumerate()
        .map(|(n, line)| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let parse = || -> anyhow::Result<Ack> {
                let [run, thread, seq, end] = f.as_slice() else {
                    bail!("expected 4 fields")
                };
                Ok(Ack {
                    id: RecordId {
                        run: run.parse()?,
                        thread: thread.parse()?,
                        seq: seq.parse()?,
                    },
                    end: end.parse()?,
                })
            };
            parse().with_context(|| format!("line {} of the acknowledgement file: {line:?}", n + 1))
        })
        .collect()
}

/// Parses `MIN-MAX` (or a single size) into an inclusive range.
pub fn parse_size_range(s: &str) -> anyhow::Result<(u64, u64)> {
    let (lo, hi) = match s.split_once('-') {
        Some((a, b)) => (parse_size(a)?, parse_size(b)?),
        None => {
            let v = parse_size(s)?;
            (v, v)
        }
    };
    if lo > hi {
        bail!("invalid size range {s:?}: minimum above maximum");
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payload_round_trip_and_damage_detected() {
        let id = RecordId {
            run: 7,
            thread: 3,
            seq: 99,
        };
        let mut p = Vec::new();
        encode(id, 100, &mut p);
        assert_eq!(p.len(), HEADER_LEN + 100);
        assert_eq!(decode(&p).unwrap(), Some(id));
        for i in [0usize, 9, 20, 30, 33, 50, p.len() - 1] {
            let mut bad = p.clone();
            bad[i] ^= 0x40;
            assert_ne!(
                decode(&bad).ok().flatten(),
                Some(id),
                "flip at {i} undetected"
            );
        }
        assert!(decode(&p[..p.len() - 1]).is_err());
        assert_eq!(decode(b"short").unwrap(), None);
    }

    #[test]
    fn size_ranges() {
        assert_eq!(parse_size_range("0-64KB").unwrap(), (0, 65536));
        assert!(parse_size_range("2-1").is_err());
    }

    /// An acknowledgement of record 3 of thread 2 of run 1, ending at 0/100.
    fn an_ack() -> Ack {
        Ack {
            id: RecordId {
                run: 1,
                thread: 2,
                seq: 3,
            },
            end: walden::Lsn(0x100),
        }
    }

    #[test]
    fn acks_ignore_a_torn_last_line_only() {
        let a = an_ack();
        let text = format!("{}{}1 2 4 0/2", a.line(), a.line());
        assert_eq!(parse_acks(&text).unwrap(), vec![a, a]);
        assert!(parse_acks("1 2 x 0/1\n").is_err());
    }

    #[test]
    fn reopening_cuts_a_torn_last_line_before_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("acked");
        let a = an_ack();
        std::fs::write(&path, format!("{}1795770354548024244 3", a.line())).unwrap();
        let mut file = open_ack_file(&path).unwrap();
        std::io::Write::write_all(&mut file, a.line().as_bytes()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(parse_acks(&text).unwrap(), vec![a, a]);
    }
}
