//! A real file system whose `fdatasync`s wait at a gate the test opens,
//! to hold the writer in the middle of a sync: the storage is
//! `HookedFs(GatedStorage(gate))`.

use std::io;
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

use walden::{FsStorage, OpenOptions, Storage, StorageFile};

use super::hooked_fs::OpenHook;

/// Holds every `fdatasync` while closed.
#[derive(Debug, Default)]
pub struct SyncGate {
    closed: Mutex<bool>,
    changed: Condvar,
}

impl SyncGate {
    pub fn close(&self) {
        *self.closed.lock().unwrap() = true;
    }

    pub fn open(&self) {
        *self.closed.lock().unwrap() = false;
        self.changed.notify_all();
    }

    fn pass(&self) {
        let mut closed = self.closed.lock().unwrap();
        while *closed {
            closed = self.changed.wait(closed).unwrap();
        }
    }
}

/// Opens files whose `sync_data` is held at a [`SyncGate`].
#[derive(Debug)]
pub struct GatedStorage(pub Arc<SyncGate>);

#[derive(Debug)]
struct GatedFile(Box<dyn StorageFile>, Arc<SyncGate>);

impl OpenHook for GatedStorage {
    fn open(&self, path: &Path, opts: &OpenOptions) -> io::Result<Box<dyn StorageFile>> {
        Ok(Box::new(GatedFile(
            FsStorage.open(path, opts)?,
            self.0.clone(),
        )))
    }
}

impl StorageFile for GatedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        self.0.read_at(buf, offset)
    }
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<usize> {
        self.0.write_at(buf, offset)
    }
    fn sync_data(&self) -> io::Result<()> {
        self.1.pass();
        self.0.sync_data()
    }
    fn sync_all(&self) -> io::Result<()> {
        self.0.sync_all()
    }
    fn len(&self) -> io::Result<u64> {
        self.0.len()
    }
    fn set_len(&self, len: u64) -> io::Result<()> {
        self.0.set_len(len)
    }
}
