//! 128 insertion slots (seed 003's `NUM_XLOGINSERT_LOCKS` 128): with every
//! reservation design of the PostgreSQL format, many threads spread over
//! the slots, a switch (which takes all 128), flushes (which scan them)
//! and a small ring (evictions wait on them) produce a log that the reader
//! chains record by record and `pg_waldump` reads in full.

use std::sync::Arc;

use crate::designs_and_formats::{check_log, config};
use crate::support::wal::{payload, pg_waldump_agrees};
use walden::{Record, ReservationKind, SegmentSize, SlotChoice, Wal, WalFormat};

const RMID: u8 = 141;
const SLOTS: usize = 128;
const THREADS: u32 = 24;
const PER_THREAD: u32 = 60;

fn a_128_slot_log_reads_back(reservation: ReservationKind, slot_choice: SlotChoice) {
    let dir = tempfile::tempdir().unwrap();
    let config = walden::Config {
        insert_slots: SLOTS,
        slot_choice,
        ..config(WalFormat::Postgres15, reservation)
    };
    let seg = SegmentSize::new(config.segment_size).unwrap();
    let wal = Arc::new(Wal::create(dir.path(), config.clone()).unwrap());
    let start = wal.insert_position();
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let wal = wal.clone();
            s.spawn(move || {
                for i in 0..PER_THREAD {
                    let len = 8 + ((t * 7919 + i * 104_729) % 5000) as usize;
                    let end = wal
                        .insert(&Record::new(RMID, 0, payload(t, i, len)))
                        .unwrap();
                    if i % 16 == 0 {
                        wal.flush(end).unwrap();
                    }
                    if t == 0 && i == PER_THREAD / 2 {
                        wal.switch_segment().unwrap();
                    }
                }
            });
        }
    });
    let wal = Arc::into_inner(wal).unwrap();
    assert!(wal.stats().buffer_full_evictions > 0, "the ring wrapped");
    wal.close().unwrap();
    let (records, _) = pg_waldump_agrees(dir.path(), seg, start);
    let ours = records.iter().filter(|r| r.header.rmid == RMID).count();
    assert_eq!(ours, (THREADS * PER_THREAD) as usize, "records read back");
    assert_eq!(check_log(dir.path(), start, &config), records.len());
}

#[test]
fn spinlock_with_128_slots() {
    a_128_slot_log_reads_back(ReservationKind::Spinlock, SlotChoice::Sticky);
}

#[test]
fn prev_link_table_with_128_slots() {
    a_128_slot_log_reads_back(ReservationKind::PrevLinkTable, SlotChoice::Attempts(4));
}

#[test]
fn prev_link_in_buffer_with_128_slots() {
    a_128_slot_log_reads_back(ReservationKind::PrevLinkInBuffer, SlotChoice::Sticky);
}
