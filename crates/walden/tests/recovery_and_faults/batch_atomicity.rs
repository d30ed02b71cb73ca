//! Batches under power cuts ([`SimStorage`]): a batch is recovered whole
//! or not at all, in every format and with every reservation design, and
//! a dropped batch never comes back after later inserts and cuts.
//!
//! Each life inserts batches (2 to 40 records, some spanning pages, from
//! one or two threads, flushing now and then) until the power is cut in the
//! middle of a storage operation; after recovery, every batch read back is
//! complete, in order and contiguous, every acknowledged batch is there,
//! and a batch found missing once is missing for good.
//! `WALDEN_BATCH_CUTS` sets the number of lives (default 150).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::support::fault::{
    count_from_env, payload, read_log, storage, strategy_configs, Rng, DIR, USER_RMID,
};
use walden::{Batch, Lsn, Record, SimStorage, Wal, WalRecord};

/// Bits of a tag that number the record inside its batch.
const INDEX_BITS: u32 = 8;

/// A batch inserted: its records' payload lengths, and whether a flush
/// covered it.
#[derive(Clone, Debug)]
struct Inserted {
    lens: Vec<usize>,
    end: Lsn,
}

/// The batch id and index of a user record, from its payload's tag.
fn tag_of(r: &WalRecord) -> Option<(u64, u64)> {
    if r.header.rmid != USER_RMID {
        return None;
    }
    let body = r.decode_body().ok()?;
    let tag = u64::from_le_bytes(body.main_data.get(..8)?.try_into().ok()?);
    Some((tag >> INDEX_BITS, tag & ((1 << INDEX_BITS) - 1)))
}

/// Checks the recovered log against what was inserted: every batch found
/// is whole, in order and contiguous, byte for byte; every batch below
/// `durable` is found (but those dropped before, whose LSNs were reused);
/// no batch in `gone` is found. Returns the batches found.
fn check(
    records: &[WalRecord],
    inserted: &BTreeMap<u64, Inserted>,
    durable: Lsn,
    gone: &BTreeSet<u64>,
) -> Result<BTreeSet<u64>, String> {
    let mut found = BTreeSet::new();
    let mut i = 0;
    while i < records.len() {
        let Some((id, index)) = tag_of(&records[i]) else {
            i += 1;
            continue;
        };
        let batch = inserted
            .get(&id)
            .ok_or_else(|| format!("record of unknown batch {id} at {}", records[i].lsn))?;
        if index != 0 {
            return Err(format!("batch {id} starts at its record {index}"));
        }
        if gone.contains(&id) {
            return Err(format!("batch {id}, dropped before, came back"));
        }
        for (k, &len) in batch.lens.iter().enumerate() {
            let r = records
                .get(i + k)
                .ok_or_else(|| format!("batch {id} cut after {k} records"))?;
            let want = payload(id << INDEX_BITS | k as u64, len);
            let body = r.decode_body().map_err(|e| e.to_string())?;
            if r.header.rmid != USER_RMID || body.main_data != want {
                return Err(format!(
                    "batch {id}: record {k} at {} is not its own",
                    r.lsn
                ));
            }
        }
        found.insert(id);
        i += batch.lens.len();
    }
    for (id, batch) in inserted {
        // A batch an earlier recovery dropped was below that boot's
        // durable point, not this one's: its LSNs were reused since.
        if batch.end <= durable && !found.contains(id) && !gone.contains(id) {
            return Err(format!("acknowledged batch {id} (end {}) lost", batch.end));
        }
    }
    Ok(found)
}

/// Runs one boot: batches from `threads` threads until the armed cut.
fn boot(wal: &Wal, rng: &mut Rng, next_id: &mut u64, threads: u64) -> (Vec<(u64, Inserted)>, Lsn) {
    let done = Mutex::new(Vec::new());
    let durable = Mutex::new(Lsn::INVALID);
    let first_id = *next_id;
    *next_id += threads * 1000;
    std::thread::scope(|s| {
        for t in 0..threads {
            let mut rng = Rng::new(rng.next());
            let (done, durable) = (&done, &durable);
            s.spawn(move || {
                for b in 0..1000 {
                    let id = first_id + t * 1000 + b;
                    let n = 2 + rng.below(39) as usize;
                    let lens: Vec<usize> = (0..n).map(|_| 8 + rng.payload_len()).collect();
                    let payloads: Vec<Vec<u8>> = lens
                        .iter()
                        .enumerate()
                        .map(|(k, &len)| payload(id << INDEX_BITS | k as u64, len))
                        .collect();
                    let batch: Batch = payloads
                        .iter()
                        .map(|p| Record::new(USER_RMID, 0, &p[..]))
                        .collect();
                    let Ok(spans) = wal.insert_batch(&batch) else {
                        return;
                    };
                    done.lock().unwrap().push((
                        id,
                        Inserted {
                            lens,
                            end: spans.end,
                        },
                    ));
                    if rng.one_in(3) {
                        match wal.flush(spans.end) {
                            Ok(upto) => {
                                let mut d = durable.lock().unwrap();
                                *d = (*d).max(upto);
                            }
                            Err(_) => return,
                        }
                    }
                }
            });
        }
    });
    (done.into_inner().unwrap(), durable.into_inner().unwrap())
}

#[test]
fn batches_survive_power_cuts_whole_or_not_at_all() {
    let lives = count_from_env("WALDEN_BATCH_CUTS", 150);
    let configs = strategy_configs();
    let mut dropped_total = 0;
    let mut kept_total = 0;
    for life in 0..lives {
        let mut rng = Rng::new(0xBA7C_0000 + life);
        let mut config = configs[(life as usize * 7) % configs.len()].clone();
        config.writer_delay = None;
        let sim = SimStorage::new(life);
        let mut wal = Wal::create_with_storage(DIR, config.clone(), storage(&sim)).unwrap();
        let mut inserted = BTreeMap::new();
        let mut gone = BTreeSet::new();
        let mut durable = Lsn::INVALID;
        let mut next_id = 1;
        for cut in 0..3 {
            sim.arm_power_cut(5 + rng.below(60));
            let threads = 1 + rng.below(2);
            let (batches, acked) = boot(&wal, &mut rng, &mut next_id, threads);
            inserted.extend(batches);
            durable = durable.max(acked);
            sim.power_cut();
            drop(wal);
            sim.restart();
            let (recovered, report) = Wal::open_with_storage(DIR, config.clone(), storage(&sim))
                .unwrap_or_else(|e| panic!("life {life} cut {cut}: open: {e}"));
            dropped_total += u64::from(report.dropped_batch.is_some());
            let (records, _) = read_log(storage(&sim), DIR, report.redo).unwrap();
            let found = check(&records, &inserted, durable, &gone).unwrap_or_else(|e| {
                panic!("life {life} cut {cut} ({config:?}): {e}; recovery: {report:?}")
            });
            kept_total += found.len();
            gone.extend(inserted.keys().filter(|id| !found.contains(id)));
            // What recovery found is durable: it is acknowledged from now on.
            durable = durable.max(report.end);
            wal = recovered;
        }
    }
    assert!(
        kept_total > 0,
        "no batch survived any cut: the test tests nothing"
    );
    assert!(
        dropped_total > 0,
        "no cut tore a batch in {lives} lives: the test tests nothing"
    );
}
