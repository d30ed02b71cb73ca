//! The file-write probes ([`Probe::FileWrite`], [`Probe::CopyCrcOverwrite`],
//! [`Probe::CrcOverwrite`], [`Probe::SessionsOverwrite`]): what each writer
//! writes from, where it writes, and how.
//!
//! **The source.** Every writer writes from a [`SourceRing`] as large as
//! Walden's default buffer ring (`Config::default().buffers`, 16 MiB),
//! block after block; before each write the block's 8 kB pages are stamped
//! with a new sequence number, as a WAL page's header changes, so no write
//! repeats its source's bytes and the source is no more cache-resident than
//! the ring a WAL writes from; [`Probe::SessionsOverwrite`]'s ring holds
//! one MiB per session instead, as many threads' own messages do.
//! [`Probe::CopyCrcOverwrite`] instead fills the block with a copy of a
//! 1 MiB record and checksums it first: what a WAL that copies each record
//! into its buffers does per 1 MiB message before its write.
//! [`Probe::CrcOverwrite`] checksums the record and writes it from where it
//! lies: what Walden's write-through does.
//!
//! **The target of a non-durable overwrite** is a cached file as large as a
//! WAL's working set ([`CACHED_FILE`]: 256 MiB, 16 default segments),
//! written and synced first, so that its pages are in the page cache and
//! its blocks allocated, as a recycled segment's are; the writers then
//! overwrite it front to back, again and again. The kernel finds each page
//! in the cache (`ext4_da_write_begin`: no allocation, no read), copies into
//! it (`copy_folio_from_iter_atomic`) and marks it dirty. 256 MiB of dirty
//! pages is below the background writeback threshold of this project's
//! machine (`vm.dirty_background_ratio` 10 % of 24 GiB), so the flusher
//! takes them only once they are `vm.dirty_expire_centisecs` (30 s) old:
//! the probe measures the copy into cached pages and its bookkeeping, not
//! the device. The probe this replaces rewrote one 1 MiB buffer into a
//! 16 MiB file: source and destination both fit in this machine's 32 MiB L3
//! cache, and it measured 19.9 GB/s, twice memcpy into a 64 MiB buffer.
//!
//! **Durable probes** (each write synced, buffered or `O_DIRECT`) cycle
//! through the same working set, [`CACHED_FILE`] shared by the writers, as
//! a WAL writes its messages across all of its recycled segments. They
//! used to overwrite a 16 MiB file per writer, on the belief that the size
//! does not change what a sync costs; but on this project's 2-vCPU host a
//! 16 MiB region took 1 MiB writes + `fdatasync` 1.11–1.22 times as fast
//! as a 256 MiB one, with `O_DIRECT` too (so not only the page cache), and
//! 64 MiB no faster than 256 (`scripts/durable-region-probe`; docs/io.md,
//! "The limit a WAL's page-cache writes are read against"). A fresh-file
//! probe extends a new file per writer, emptied every [`FRESH_FILE`] bytes.

use std::fs::{File, OpenOptions};
use std::hint::black_box;
use std::io;
use std::ops::Range;
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::time::Duration;

use walden::internals::format::crc::body_crc;
use walden::{Config, DIRECT_IO_ALIGNMENT};

use super::{result, LimitError, LimitResult, Probe, WriteSync, WriteTarget, BLOCK};
use crate::measure::{run_threads, write_back, Timing};

/// Bytes a [`WriteTarget::Fresh`] file grows to before it is emptied.
pub const FRESH_FILE: u64 = 64 << 20;
/// The working set of an overwrite, durable or not, all writers together:
/// 256 MiB, as many default segments (16 MiB) as a WAL cycles through
/// between checkpoints at `max_wal_size` 256 MiB, and eight times the L3
/// cache of the machine this was first measured on.
pub const CACHED_FILE: u64 = 256 << 20;
/// Bytes of a file-write probe's [`SourceRing`] (but
/// [`Probe::SessionsOverwrite`]'s): Walden's default buffer ring.
pub(crate) fn source_ring_len() -> usize {
    usize::try_from(Config::default().buffers).unwrap_or(usize::MAX)
}

/// The unit a [`SourceRing`] stamps: a WAL page.
const STAMPED_PAGE: usize = 8 << 10;

/// What a file-write probe's writers do, derived from its [`Probe`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plan {
    pub(crate) target: WriteTarget,
    pub(crate) bytes: usize,
    pub(crate) sync: WriteSync,
    pub(crate) writers: usize,
    /// What each write's bytes are, and what is done to them first.
    pub(crate) source: Source,
    /// Bytes of each writer's [`SourceRing`].
    pub(crate) source_len: usize,
}

/// What a file-write probe's writer writes, and what it does first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Source {
    /// The next block of its [`SourceRing`], stamped.
    Stamped,
    /// A 1 MiB record copied into the next block and checksummed
    /// ([`Probe::CopyCrcOverwrite`]).
    CopyCrc,
    /// A 1 MiB record, checksummed and written from where it lies
    /// ([`Probe::CrcOverwrite`]).
    Crc,
}

impl Plan {
    /// The plan of a file-write probe; `None` for the others.
    pub(crate) fn of(probe: Probe) -> Option<Plan> {
        match probe {
            Probe::FileWrite {
                target,
                bytes,
                sync,
                writers,
            } => Some(Plan {
                target,
                bytes,
                sync,
                writers,
                source: Source::Stamped,
                source_len: source_ring_len(),
            }),
            Probe::CopyCrcOverwrite { threads } => {
                Some(Plan::cached_overwrite(threads, Source::CopyCrc))
            }
            Probe::CrcOverwrite { threads } => Some(Plan::cached_overwrite(threads, Source::Crc)),
            Probe::SessionsOverwrite { sessions } => Some(Plan {
                source_len: sessions.max(1) * BLOCK,
                ..Plan::cached_overwrite(1, Source::Stamped)
            }),
            _ => None,
        }
    }

    /// `threads` writers of 1 MiB blocks from `source` (checksummed
    /// records, or stamped blocks) over a cached file, without sync.
    fn cached_overwrite(threads: usize, source: Source) -> Plan {
        Plan {
            target: WriteTarget::Overwrite,
            bytes: BLOCK,
            sync: WriteSync::None,
            writers: threads,
            source,
            source_len: source_ring_len(),
        }
    }

    /// Bytes each writer cycles through (see the module's documentation).
    pub(crate) fn region(&self) -> u64 {
        match self.target {
            WriteTarget::Fresh => FRESH_FILE,
            _ => {
                let share = CACHED_FILE / self.writers.max(1) as u64;
                share / self.bytes as u64 * self.bytes as u64
            }
        }
    }

    /// Bytes of file the probe cycles through, all writers together.
    pub(crate) fn working_set(&self) -> u64 {
        self.region() * self.writers as u64
    }
}

/// A buffer writes are taken from, block after block, in a cycle (see the
/// module's documentation); its blocks are aligned for `O_DIRECT`.
pub(crate) struct SourceRing {
    bytes: Vec<u8>,
    /// Index of the first aligned byte.
    start: usize,
    /// Bytes used: a whole number of blocks.
    len: usize,
    block: usize,
    at: usize,
    stamp: u64,
}

impl SourceRing {
    /// A ring of about `len` bytes (at least one block) of `block`-byte
    /// blocks, every page written once so that none is faulted in during
    /// the measurement.
    pub(crate) fn new(len: usize, block: usize) -> SourceRing {
        let len = len.max(block) / block * block;
        let bytes = vec![0xA5u8; len + DIRECT_IO_ALIGNMENT];
        let start = bytes.as_ptr().align_offset(DIRECT_IO_ALIGNMENT);
        SourceRing {
            bytes,
            start,
            len,
            block,
            at: 0,
            stamp: 0,
        }
    }

    /// The next block, each of its pages starting with a new sequence
    /// number (little-endian, from 1).
    pub(crate) fn stamped(&mut self) -> &[u8] {
        let block = self.next();
        for page in self.bytes[block.clone()].chunks_mut(STAMPED_PAGE) {
            self.stamp += 1;
            let n = page.len().min(8);
            page[..n].copy_from_slice(&self.stamp.to_le_bytes()[..n]);
        }
        &self.bytes[block]
    }

    /// The next block, filled from `record` and checksummed, as an insert
    /// copies a record into the buffer ring.
    pub(crate) fn copied(&mut self, record: &[u8]) -> &[u8] {
        let next = self.next();
        let block = &mut self.bytes[next];
        let n = block.len().min(record.len());
        block[..n].copy_from_slice(&record[..n]);
        black_box(body_crc(black_box(&block[..n])));
        block
    }

    /// The indices of the next block.
    fn next(&mut self) -> Range<usize> {
        let from = self.start + self.at;
        self.at = (self.at + self.block) % self.len;
        from..from + self.block
    }
}

/// One writer of a file-write probe: its file, its region of it and its
/// source.
pub(crate) struct Writer {
    file: File,
    plan: Plan,
    source: SourceRing,
    /// The caller's record a [`Source::CopyCrc`] writer copies, and a
    /// [`Source::Crc`] one writes.
    record: Vec<u8>,
    start: u64,
    region: u64,
    at: u64,
}

impl Writer {
    /// Writer `index` of `plan` on `file`, writing from a ring of
    /// `plan.source_len` bytes.
    pub(crate) fn new(file: File, plan: Plan, index: usize) -> Writer {
        let region = plan.region();
        let shared = plan.target != WriteTarget::Fresh;
        Writer {
            file,
            plan,
            source: SourceRing::new(plan.source_len, plan.bytes),
            record: if plan.source == Source::Stamped {
                Vec::new()
            } else {
                vec![b'0'; plan.bytes]
            },
            start: index as u64 * region * u64::from(shared),
            region,
            at: 0,
        }
    }

    /// Writes the next block at the next place, synced as the plan says.
    pub(crate) fn write_next(&mut self) -> io::Result<()> {
        let block = match self.plan.source {
            Source::Stamped => self.source.stamped(),
            Source::CopyCrc => self.source.copied(&self.record),
            Source::Crc => {
                black_box(body_crc(black_box(&self.record)));
                &self.record
            }
        };
        self.file.write_all_at(block, self.start + self.at)?;
        if self.plan.sync == WriteSync::Fdatasync {
            self.file.sync_data()?;
        }
        self.at += self.plan.bytes as u64;
        if self.at >= self.region {
            self.at = 0;
            if self.plan.target == WriteTarget::Fresh {
                self.file.set_len(0)?;
            }
        }
        Ok(())
    }
}

/// Measures file-write `probe` for about `duration`, with its files under
/// `dir` (removed afterwards).
pub(crate) fn measure(
    probe: Probe,
    dir: &Path,
    duration: Duration,
) -> Result<LimitResult, LimitError> {
    let path = dir.join(format!("walden-limits-{}.tmp", std::process::id()));
    let fail = |source| LimitError {
        probe: probe.label(),
        path: path.clone(),
        source,
    };
    let Some(plan) = Plan::of(probe) else {
        return Err(fail(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a file-write probe",
        )));
    };
    let mut options = OpenOptions::new();
    options.write(true);
    if plan.sync == WriteSync::OpenDatasync {
        options.custom_flags(libc::O_DSYNC);
    }
    if plan.target == WriteTarget::Direct {
        options.custom_flags(libc::O_DIRECT);
    }
    let timing = if plan.sync.durable() {
        Timing::Latency
    } else {
        Timing::CountOnly
    };
    if plan.target == WriteTarget::Fresh {
        options.create(true).truncate(true);
    } else {
        preallocate(&path, plan.working_set()).map_err(fail)?;
    }
    // The probe starts from a clean page cache, as every measured window
    // of the run does.
    write_back(dir).map_err(|e| fail(e.source))?;
    let measured = run_threads(plan.writers, duration, timing, |index| {
        // A fresh target is one file per writer; the others share one.
        let file = match plan.target {
            WriteTarget::Fresh => options.open(path.with_extension(format!("{index}.tmp")))?,
            _ => options.open(&path)?,
        };
        let mut writer = Writer::new(file, plan, index);
        Ok(move || writer.write_next())
    });
    let mut removed = Ok(());
    for index in 0..plan.writers {
        let fresh = path.with_extension(format!("{index}.tmp"));
        if fresh.exists() {
            removed = removed.and(std::fs::remove_file(fresh));
        }
    }
    if path.exists() {
        removed = removed.and(std::fs::remove_file(&path));
    }
    let result = match measured {
        Ok(m) => LimitResult {
            working_set_bytes: Some(plan.working_set()),
            ..result(probe, &m, Some(plan.bytes))
        },
        Err(e) if plan.target == WriteTarget::Direct && e.raw_os_error() == Some(libc::EINVAL) => {
            LimitResult {
                probe,
                ops_per_sec: 0.0,
                gb_per_sec: None,
                ns_per_op: f64::INFINITY,
                p50_ns: None,
                p99_ns: None,
                unsupported: Some(format!(
                    "the file system under {} refuses O_DIRECT: {e}",
                    dir.display()
                )),
                working_set_bytes: Some(plan.working_set()),
            }
        }
        Err(e) => return Err(fail(e)),
    };
    removed.map_err(fail)?;
    Ok(result)
}

/// Writes the whole file with zeros and syncs it: its blocks allocated and
/// written, its pages in the page cache.
pub(crate) fn preallocate(path: &Path, len: u64) -> io::Result<()> {
    let file = File::create(path)?;
    let zeros = vec![0u8; BLOCK];
    for at in (0..len).step_by(BLOCK) {
        let n = (len - at).min(BLOCK as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
    }
    file.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// Bytes from the start of `file` that are in the page cache: read with
    /// `RWF_NOWAIT`, which fails with `EAGAIN` (or stops short) at the
    /// first page it would have to read from the device.
    fn cached_prefix(file: &File, len: u64) -> u64 {
        let mut buf = vec![0u8; BLOCK];
        let mut at = 0u64;
        while at < len {
            let iov = libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            };
            // SAFETY: one iovec over `buf`, which outlives the call.
            let n =
                unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, at as i64, libc::RWF_NOWAIT) };
            if n <= 0 {
                break;
            }
            at += n as u64;
        }
        at
    }

    fn stamp_at(bytes: &[u8], at: usize) -> u64 {
        u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap())
    }

    #[test]
    fn an_overwrite_cycles_through_its_cached_region_with_new_bytes_every_pass() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cached");
        let bytes = 64 << 10;
        let plan = Plan {
            target: WriteTarget::Overwrite,
            bytes,
            sync: WriteSync::None,
            writers: 1,
            source: Source::Stamped,
            // A small source for the test: 4 blocks.
            source_len: 4 * bytes,
        };
        // A small region for the test: 16 blocks.
        let region = 16 * bytes as u64;
        preallocate(&path, region).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let mut w = Writer::new(file.try_clone().unwrap(), plan, 0);
        w.region = region;
        let writes = 40;
        for _ in 0..writes {
            w.write_next().unwrap();
        }
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(
            on_disk.len() as u64,
            region,
            "nothing written past the region"
        );
        let pages = bytes / STAMPED_PAGE;
        for block in 0..16 {
            // The last write that reached this block: front to back, wrapping.
            let last = (0..writes).rev().find(|w| w % 16 == block).unwrap();
            for page in 0..pages {
                let at = block * bytes + page * STAMPED_PAGE;
                let want = (last * pages + page + 1) as u64;
                assert_eq!(stamp_at(&on_disk, at), want, "block {block} page {page}");
                // The rest of the page is the source's filler, not zeros.
                assert_eq!(on_disk[at + 8], 0xA5, "block {block} page {page}");
            }
        }
        assert_eq!(
            cached_prefix(&file, region),
            region,
            "the whole region is in the page cache"
        );
    }

    #[test]
    fn a_checksumming_writer_writes_the_record_into_its_own_region() {
        for probe in [
            Probe::CopyCrcOverwrite { threads: 2 },
            Probe::CrcOverwrite { threads: 2 },
        ] {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("copied");
            let plan = Plan::of(probe).unwrap();
            assert_eq!(plan.working_set(), CACHED_FILE);
            let (bytes, region) = (plan.bytes as u64, 3 * plan.bytes as u64);
            preallocate(&path, 2 * region).unwrap();
            let file = OpenOptions::new().write(true).open(&path).unwrap();
            let plan = Plan {
                source_len: 2 * plan.bytes,
                ..plan
            };
            let mut second = Writer::new(file, plan, 1);
            (second.start, second.region) = (region, region);
            for _ in 0..2 {
                second.write_next().unwrap();
            }
            let on_disk = std::fs::read(&path).unwrap();
            let (first, written, rest) = (
                &on_disk[..region as usize],
                &on_disk[region as usize..(region + 2 * bytes) as usize],
                &on_disk[(region + 2 * bytes) as usize..],
            );
            assert!(
                first.iter().all(|&b| b == 0),
                "{probe:?}: the first writer's region"
            );
            assert!(
                written.iter().all(|&b| b == b'0'),
                "{probe:?}: the record, twice"
            );
            assert!(rest.iter().all(|&b| b == 0), "{probe:?}: not written yet");
        }
    }

    #[test]
    fn a_sessions_overwrite_writes_from_one_block_per_session_in_turn() {
        let plan = Plan::of(Probe::SessionsOverwrite { sessions: 3 }).unwrap();
        assert_eq!(
            (plan.target, plan.sync, plan.writers, plan.source),
            (WriteTarget::Overwrite, WriteSync::None, 1, Source::Stamped)
        );
        assert_eq!((plan.bytes, plan.working_set()), (BLOCK, CACHED_FILE));
        assert_eq!(plan.source_len, 3 * BLOCK);
        let standard = Plan::of(Probe::FileWrite {
            target: WriteTarget::Overwrite,
            bytes: BLOCK,
            sync: WriteSync::None,
            writers: 1,
        })
        .unwrap();
        assert_eq!(standard.source_len, source_ring_len());
        // The ring hands out the three sessions' blocks in turn: three
        // distinct MiB, then the first again.
        let mut ring = SourceRing::new(plan.source_len, plan.bytes);
        let starts: Vec<*const u8> = (0..4).map(|_| ring.stamped().as_ptr()).collect();
        for (i, &a) in starts[..3].iter().enumerate() {
            for &b in &starts[i + 1..3] {
                assert!(a.wrapping_add(BLOCK) <= b || b.wrapping_add(BLOCK) <= a);
            }
        }
        assert_eq!(starts[3], starts[0]);
    }

    #[test]
    fn overwrites_durable_or_not_split_the_cached_working_set() {
        let plan = |target, sync, writers| Plan {
            target,
            bytes: BLOCK,
            sync,
            writers,
            source: Source::Stamped,
            source_len: source_ring_len(),
        };
        let none = plan(WriteTarget::Overwrite, WriteSync::None, 1);
        assert_eq!(none.working_set(), CACHED_FILE);
        let two = plan(WriteTarget::Overwrite, WriteSync::None, 2);
        assert_eq!(
            (two.region(), two.working_set()),
            (CACHED_FILE / 2, CACHED_FILE)
        );
        for target in [WriteTarget::Overwrite, WriteTarget::Direct] {
            for sync in [WriteSync::Fdatasync, WriteSync::OpenDatasync] {
                let durable = plan(target, sync, 2);
                assert_eq!(
                    (durable.region(), durable.working_set()),
                    (CACHED_FILE / 2, CACHED_FILE),
                    "{target:?} {sync:?}"
                );
            }
        }
        let fresh = plan(WriteTarget::Fresh, WriteSync::None, 1);
        assert_eq!(fresh.region(), FRESH_FILE);
    }
}
