//! Writes cut into chunks, each but the last followed by a hint to start
//! its write-back ([`crate::Config::writeback_every`]): the device takes a
//! large write's first chunk while the kernel copies the next one into the
//! page cache, so that the sync after it finds most of the bytes on their
//! way (docs/io.md, "Write-back started as a write goes").
//!
//! Every write of the writer goes through [`write_parts`]: the ring's runs
//! ([`super::whole_pages`]) and the pages written through or ahead
//! ([`super::through`]).

use std::num::NonZeroU64;

use super::WriteError;
use crate::segment::{StorageFile, IOV_CHUNK};

/// Why [`write_parts`] stopped.
#[derive(Debug)]
pub(super) enum PartsError {
    /// A write failed.
    Write(std::io::Error),
    /// The hint after a chunk failed: the chunk from `offset` is written.
    Writeback {
        /// Where the chunk starts in the file.
        offset: u64,
        /// The cause.
        source: std::io::Error,
    },
}

impl PartsError {
    /// The writer's error for it: a failed write of segment `segno` from
    /// `offset` (the whole write's start), or a failed hint after its chunk.
    pub(super) fn in_segment(self, segno: u64, offset: u64) -> WriteError {
        match self {
            PartsError::Write(source) => WriteError::Write {
                segno,
                offset,
                source,
            },
            PartsError::Writeback { offset, source } => WriteError::Writeback {
                segno,
                offset,
                source,
            },
        }
    }
}

/// Writes `parts` back to back to `file` at `offset`, empty parts left
/// out, in vectored writes of at most `N` parts (at most [`IOV_CHUNK`],
/// what one call takes; a caller with fewer parts names as many, so that
/// the batch on the stack, 16 bytes a part, is no larger). With `every`,
/// the bytes are also cut every `every` bytes (a part split where a cut
/// falls in it), and each write but the last is followed by
/// [`StorageFile::start_writeback`] of what it wrote; the last write's
/// bytes are left for the sync that follows. Nothing is gathered on the
/// heap. Returns the bytes written.
///
/// Where the file takes direct I/O, `every` must be a multiple of its
/// alignment, as every part is (the caller's contract): a cut splits a
/// part only there.
pub(super) fn write_parts<'p, const N: usize>(
    file: &dyn StorageFile,
    parts: impl IntoIterator<Item = &'p [u8]>,
    offset: u64,
    every: Option<NonZeroU64>,
) -> Result<u64, PartsError> {
    const {
        assert!(
            N > 0 && N <= IOV_CHUNK,
            "one call takes 1 to IOV_CHUNK parts"
        )
    };
    let cut = every.map_or(u64::MAX, NonZeroU64::get);
    let mut batch: [&[u8]; N] = [&[]; N];
    // The chunk being gathered: `n` parts, `len` bytes, from `start`.
    let (mut n, mut len, mut start) = (0, 0, offset);
    let mut parts = parts.into_iter().filter(|part| !part.is_empty()).peekable();
    let mut rest: &[u8] = &[];
    loop {
        let part = if rest.is_empty() {
            match parts.next() {
                Some(part) => part,
                None => break,
            }
        } else {
            std::mem::take(&mut rest)
        };
        let room = usize::try_from(cut - len).unwrap_or(usize::MAX);
        let (now, later) = part.split_at(part.len().min(room));
        batch[n] = now;
        n += 1;
        len += now.len() as u64;
        rest = later;
        let full = n == N || len == cut;
        if full && (!rest.is_empty() || parts.peek().is_some()) {
            file.write_all_vectored_at(&batch[..n], start)
                .map_err(PartsError::Write)?;
            if every.is_some() {
                file.start_writeback(start, len)
                    .map_err(|source| PartsError::Writeback {
                        offset: start,
                        source,
                    })?;
            }
            (n, start, len) = (0, start + len, 0);
        }
    }
    if n > 0 {
        file.write_all_vectored_at(&batch[..n], start)
            .map_err(PartsError::Write)?;
    }
    Ok(start + len - offset)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::Mutex;

    /// A file that records each write's offset and bytes, the most parts
    /// one call took, and each hint.
    #[derive(Debug, Default)]
    struct Recording {
        writes: Mutex<Vec<(u64, Vec<u8>)>>,
        most_parts: Mutex<usize>,
        hints: Mutex<Vec<(u64, u64)>>,
        fail_hint: bool,
    }

    impl StorageFile for Recording {
        fn read_at(&self, _buf: &mut [u8], _offset: u64) -> io::Result<usize> {
            Ok(0)
        }
        fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
            self.writes.lock().unwrap().push((offset, buf.to_vec()));
            Ok(buf.len())
        }
        fn write_all_vectored_at(&self, bufs: &[&[u8]], offset: u64) -> io::Result<()> {
            assert!(bufs.iter().all(|b| !b.is_empty()), "an empty part");
            let mut most = self.most_parts.lock().unwrap();
            *most = (*most).max(bufs.len());
            drop(most);
            self.write_at(&bufs.concat(), offset).map(drop)
        }
        fn sync_data(&self) -> io::Result<()> {
            Ok(())
        }
        fn sync_all(&self) -> io::Result<()> {
            Ok(())
        }
        fn len(&self) -> io::Result<u64> {
            Ok(0)
        }
        fn set_len(&self, _len: u64) -> io::Result<()> {
            Ok(())
        }
        fn start_writeback(&self, offset: u64, len: u64) -> io::Result<()> {
            if self.fail_hint {
                return Err(io::Error::other("hint refused"));
            }
            self.hints.lock().unwrap().push((offset, len));
            Ok(())
        }
    }

    /// Parts of uneven sizes, some empty, `count` in all.
    fn parts(count: usize) -> Vec<Vec<u8>> {
        (0..count)
            .map(|i| vec![i as u8; [24, 8168, 0, 40_000][i % 4]])
            .collect()
    }

    /// Without a cut: writes of at most `N` parts (`IOV_CHUNK`, and the
    /// three of a ring write), no hint; with one: every write but the last
    /// is at most `every` bytes, each of those is hinted exactly, and the
    /// bytes land in order at their offsets, counted once.
    #[test]
    fn writes_are_cut_every_so_many_bytes_and_all_but_the_last_hinted() {
        for count in [1, 7, 2 * IOV_CHUNK] {
            cut_and_hinted::<IOV_CHUNK>(count);
            cut_and_hinted::<3>(count);
        }
    }

    /// [`writes_are_cut_every_so_many_bytes_and_all_but_the_last_hinted`]
    /// for `count` parts in batches of at most `N`.
    fn cut_and_hinted<const N: usize>(count: usize) {
        let parts = parts(count);
        let want: Vec<u8> = parts.concat();
        let non_empty = parts.iter().filter(|p| !p.is_empty()).count();
        for every in [None, NonZeroU64::new(8192), NonZeroU64::new(64 << 10)] {
            let case = format!("{count} parts, batches of {N}, {every:?}");
            let file = Recording::default();
            let offset = 3 * 8192;
            let slices = parts.iter().map(Vec::as_slice);
            let written = write_parts::<N>(&file, slices, offset, every).unwrap();
            assert_eq!(written, want.len() as u64, "{case}");
            assert!(
                *file.most_parts.lock().unwrap() <= N,
                "{case}: a batch too large"
            );
            let writes = file.writes.into_inner().unwrap();
            let hints = file.hints.into_inner().unwrap();
            let mut at = offset;
            for (i, (start, bytes)) in writes.iter().enumerate() {
                assert_eq!(*start, at, "{case}: write {i} in order");
                let from = (at - offset) as usize;
                assert!(bytes[..] == want[from..from + bytes.len()], "{case}");
                at += bytes.len() as u64;
                let last = i + 1 == writes.len();
                match every {
                    Some(e) if !last => {
                        assert!(bytes.len() as u64 <= e.get(), "{case}");
                        assert_eq!(hints[i], (*start, bytes.len() as u64), "{case}");
                    }
                    _ => {}
                }
            }
            assert_eq!(at - offset, want.len() as u64, "{case}");
            match every {
                None => {
                    assert!(hints.is_empty(), "{case}");
                    assert_eq!(writes.len(), non_empty.div_ceil(N), "{case}");
                }
                Some(e) => {
                    assert_eq!(hints.len(), writes.len() - 1, "{case}");
                    let cuts = want.len().div_ceil(e.get() as usize);
                    assert!(writes.len() >= cuts, "{case}: cut every {e}");
                }
            }
        }
    }

    /// A failed hint stops the write there and says where its chunk
    /// starts.
    #[test]
    fn a_failed_hint_stops_the_write_and_names_its_chunk() {
        let file = Recording {
            fail_hint: true,
            ..Recording::default()
        };
        let part = vec![7; 3 * 8192];
        let every = NonZeroU64::new(8192);
        let err = write_parts::<1>(&file, [&part[..]], 8192, every).unwrap_err();
        assert!(
            matches!(err, PartsError::Writeback { offset: 8192, .. }),
            "{err:?}"
        );
        assert_eq!(file.writes.into_inner().unwrap().len(), 1);
    }
}
