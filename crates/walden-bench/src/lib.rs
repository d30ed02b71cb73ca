//! Workloads behind `walden bench`: the seeds' experiments, the peers and the
//! machine's physical limits.

pub mod rwlock;
