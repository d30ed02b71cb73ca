//! Loom model of the CRC helper's hand-off: every job handed over comes
//! back with its CRC, a second inserter is refused while a job is in hand
//! (never handed a result that is not its own), and the helper stops when
//! dropped, whether it is waiting for a job or has just finished one.

use super::*;

/// Two inserters race for the helper, each with bytes of its own; the one
/// that gets it must get its own CRC back, the other must be refused or
/// come after. Then the helper is dropped. Four threads with a lock and
/// two condition variables: bounded to two preemptions, as the commit
/// queue's larger models are.
#[test]
fn every_job_gets_its_own_crc_and_the_helper_stops() {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(|| {
        let helper = Arc::new(CrcHelper::new().unwrap());
        let inserter = |byte: u8| {
            let helper = helper.clone();
            thread::spawn(move || {
                let data = [byte; 16];
                let parts = [&data[..4], &data[4..]];
                let took = match helper.start(parts) {
                    Some(ticket) => {
                        assert_eq!(ticket.finish(), crc::parts_crc(&parts));
                        true
                    }
                    None => false,
                };
                took
            })
        };
        let a = inserter(1);
        let b = inserter(2);
        let took = [a.join().unwrap(), b.join().unwrap()];
        assert!(took.iter().any(|&t| t), "an idle helper takes a job");
        // The last reference: stops and joins the helper's thread.
        drop(Arc::try_unwrap(helper).unwrap_or_else(|_| panic!("inserters joined")));
    });
}

/// A ticket dropped unfinished waits for the helper, so the next job's
/// result is its own.
#[test]
fn a_ticket_dropped_unfinished_leaves_no_result_behind() {
    loom::model(|| {
        let helper = CrcHelper::new().unwrap();
        let first = [7u8; 8];
        drop(helper.start([&first[..2], &first[2..]]).unwrap());
        let second = [9u8; 8];
        let parts = [&second[..3], &second[3..]];
        assert_eq!(
            helper.start(parts).unwrap().finish(),
            crc::parts_crc(&parts)
        );
    });
}
