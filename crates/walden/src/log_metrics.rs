//! [`LogMetrics`]: what one log reports through the `metrics` facade
//! (feature `metrics`), every series labelled with the log it is about, so
//! that the logs of one process report into series of their own.
//!
//! PostgreSQL: `pg_stat_wal`, one row per server. The label's value is
//! [`crate::Config::metrics_label`], or the WAL directory's path as the log
//! was created or opened with it: one writer per directory makes it unique
//! among the live logs of a host, with no setting to get wrong; a caller
//! that wants a shorter or stable name (a path may hold a temporary
//! directory, or change between deployments) sets the field. Without the
//! feature every method is empty.

use std::time::Duration;

/// The key of the label naming the log on every series Walden emits.
pub const METRICS_LOG_LABEL: &str = "log";

/// The series of one log. Each event looks the recorder up, as the
/// `metrics` macros do, so a recorder installed after the log opened
/// still receives it.
#[derive(Clone, Debug, Default)]
pub(crate) struct LogMetrics {
    /// The value of the [`METRICS_LOG_LABEL`] label (shared, cloned per
    /// event without copying).
    #[cfg(feature = "metrics")]
    log: metrics::SharedString,
}

impl LogMetrics {
    /// The series of the log named `log`.
    pub(crate) fn new(log: &str) -> Self {
        #[cfg(not(feature = "metrics"))]
        let _ = log;
        LogMetrics {
            #[cfg(feature = "metrics")]
            log: metrics::SharedString::from_shared(std::sync::Arc::from(log)),
        }
    }

    /// The label's value.
    #[cfg(feature = "metrics")]
    pub(crate) fn log(&self) -> metrics::SharedString {
        self.log.clone()
    }

    /// A `write` of `bytes`.
    pub(crate) fn write(&self, bytes: u64) {
        #[cfg(feature = "metrics")]
        {
            metrics::counter!("walden_writes_total", METRICS_LOG_LABEL => self.log()).increment(1);
            metrics::counter!("walden_written_bytes_total", METRICS_LOG_LABEL => self.log())
                .increment(bytes);
            metrics::histogram!("walden_write_bytes", METRICS_LOG_LABEL => self.log())
                .record(bytes as f64);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = bytes;
    }

    /// A sync (or a synchronous write) that took `took`.
    pub(crate) fn sync(&self, took: Duration) {
        #[cfg(feature = "metrics")]
        {
            metrics::counter!("walden_syncs_total", METRICS_LOG_LABEL => self.log()).increment(1);
            metrics::histogram!("walden_sync_seconds", METRICS_LOG_LABEL => self.log())
                .record(took);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = took;
    }

    /// A group flush that served `size` flush calls.
    pub(crate) fn flush_group(&self, size: u64) {
        #[cfg(feature = "metrics")]
        {
            metrics::counter!("walden_flush_groups_total", METRICS_LOG_LABEL => self.log())
                .increment(1);
            metrics::histogram!("walden_flush_group_size", METRICS_LOG_LABEL => self.log())
                .record(size as f64);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = size;
    }
}
