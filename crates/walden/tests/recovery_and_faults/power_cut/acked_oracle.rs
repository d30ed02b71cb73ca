//! The power-cut test's own record of what the log acknowledged, checked
//! after every recovery without trusting what recovery reports.
//!
//! Every record whose own `flush` returned `Ok` is kept with its start and
//! end LSN, until a checkpoint the test saw may have purged it. Recovery's
//! redo point is not taken on trust: it must be the redo point accepted
//! before, or that of a checkpoint called since (at or after the insert
//! position before the call, at or before the checkpoint record it
//! returned, if it returned), and not before the redo point of a checkpoint
//! that returned `Ok`. Every acknowledged record at or after it must then be
//! read back at its LSN, with its end and its bytes.

use std::collections::BTreeMap;

use super::Inserted;
use crate::support::fault::is_user_record;
use walden::internals::maxalign;
use walden::{Lsn, WalRecord};

/// A checkpoint called during a boot.
#[derive(Clone, Copy, Debug)]
pub(super) struct Checkpoint {
    /// The insert position just before the call: its redo point is at or
    /// after it.
    pub before: Lsn,
    /// The checkpoint record's LSN if the call returned `Ok` (its redo
    /// point is at or before it, and durable); `None` if it failed or the
    /// power was cut under it (it may or may not have reached the disk).
    pub done: Option<Lsn>,
}

/// What the test knows was acknowledged.
#[derive(Debug)]
pub(super) struct AckedOracle {
    /// Records whose own flush returned `Ok`, by start LSN.
    acked: BTreeMap<Lsn, Inserted>,
    /// The redo point accepted at the last recovery (at creation: the
    /// control file's).
    redo: Lsn,
    /// Checkpoints called since the last recovery.
    checkpoints: Vec<Checkpoint>,
}

impl AckedOracle {
    /// An oracle for a log created with its redo point at `redo`.
    pub fn new(redo: Lsn) -> Self {
        AckedOracle {
            acked: BTreeMap::new(),
            redo,
            checkpoints: Vec::new(),
        }
    }

    /// Adds what a boot acknowledged and the checkpoints it called.
    pub fn record_boot(
        &mut self,
        acked: impl IntoIterator<Item = (Lsn, Inserted)>,
        checkpoints: impl IntoIterator<Item = Checkpoint>,
    ) {
        self.acked.extend(acked);
        self.checkpoints.extend(checkpoints);
    }

    /// Checks a recovery that started at `redo` and read the user records
    /// `user` (from `redo` on); returns how many acknowledged records were
    /// checked.
    pub fn check(&mut self, redo: Lsn, user: &[&WalRecord]) -> Result<usize, String> {
        self.check_redo(redo)?;
        // Records before an accepted redo point may have been purged.
        self.acked = self.acked.split_off(&redo);
        self.checkpoints.clear();
        self.redo = redo;
        let read: BTreeMap<Lsn, &WalRecord> = user.iter().map(|r| (r.lsn, *r)).collect();
        for (lsn, e) in &self.acked {
            let Some(r) = read.get(lsn) else {
                return Err(format!(
                    "acknowledged record at {lsn} (end {}, tag {:#x}) was not read back",
                    e.end, e.tag
                ));
            };
            if Lsn(maxalign(r.end.0)) != e.end || !is_user_record(r, e.tag, e.len) {
                return Err(format!(
                    "acknowledged record at {lsn} (end {}, tag {:#x}, {} bytes) read back \
                     changed: end {}",
                    e.end, e.tag, e.len, r.end
                ));
            }
        }
        Ok(self.acked.len())
    }

    /// Recovery's redo point is the last accepted one or a checkpoint's
    /// called since, and no checkpoint that returned `Ok` was lost.
    fn check_redo(&self, redo: Lsn) -> Result<(), String> {
        let returned = self
            .checkpoints
            .iter()
            .filter(|c| c.done.is_some())
            .map(|c| c.before)
            .max();
        if let Some(floor) = returned {
            if redo < floor {
                return Err(format!(
                    "recovery started at {redo}, before the redo point (at or after {floor}) \
                     of a checkpoint that returned Ok"
                ));
            }
        }
        let from_a_checkpoint = self
            .checkpoints
            .iter()
            .any(|c| c.before <= redo && c.done.is_none_or(|lsn| redo <= lsn));
        if redo != self.redo && !from_a_checkpoint {
            return Err(format!(
                "recovery started at {redo}: neither the last redo point {} nor that of a \
                 checkpoint called since ({:?})",
                self.redo, self.checkpoints
            ));
        }
        Ok(())
    }
}

/// The redo point is accepted only where a checkpoint the test called can
/// explain it, and never before one that returned `Ok`.
#[test]
fn the_oracle_accepts_only_a_redo_point_its_checkpoints_explain() {
    let at = |n: u64| Lsn(0x100_0000 + n);
    let mut oracle = AckedOracle::new(at(0));
    assert_eq!(
        oracle.check(at(0), &[]),
        Ok(0),
        "no checkpoint: the old one"
    );
    assert!(
        oracle.check(at(8), &[]).is_err(),
        "moved with no checkpoint"
    );
    let returned = Checkpoint {
        before: at(100),
        done: Some(at(120)),
    };
    oracle.record_boot([], [returned]);
    assert!(
        oracle.check(at(0), &[]).is_err(),
        "a returned checkpoint lost"
    );
    assert!(oracle.check(at(128), &[]).is_err(), "past the returned one");
    assert_eq!(oracle.check(at(112), &[]), Ok(0));
    let cut_under = Checkpoint {
        before: at(200),
        done: None,
    };
    oracle.record_boot([], [cut_under]);
    assert_eq!(
        oracle.check(at(112), &[]),
        Ok(0),
        "the cut one did not land"
    );
    oracle.record_boot([], [cut_under]);
    assert_eq!(oracle.check(at(5000), &[]), Ok(0), "the cut one landed");
    oracle.record_boot([], [cut_under]);
    assert!(oracle.check(at(150), &[]).is_err(), "before the cut one");
}
