//! Read WAL written by a PostgreSQL 15 server, record by record, as
//! `pg_waldump` does.
//!
//! ```sh
//! cargo run -p walden --example read_postgres_wal -- /var/lib/postgresql/15/main/pg_wal
//! ```

use std::error::Error;

use walden::{ReadError, ReaderOptions, WalReader};

fn main() -> Result<(), Box<dyn Error>> {
    let dir = std::env::args()
        .nth(1)
        .ok_or("usage: read_postgres_wal PG_WAL_DIR")?;
    let mut reader = WalReader::open(&dir, ReaderOptions::default())?;
    loop {
        match reader.next_record() {
            Ok(Some(r)) => println!(
                "{:#} {:<14} len {:>7} prev {:#}: {}",
                r.lsn,
                r.rmgr_name(),
                r.header.tot_len,
                r.header.prev,
                r.describe()
            ),
            Ok(None) => break,
            // The end of WAL: PostgreSQL 15's pg_waldump reports it the same way.
            Err(e @ ReadError::EndOfWal { .. }) => {
                println!("end of WAL: {e}");
                break;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}
