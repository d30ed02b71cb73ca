//! Helpers shared by the integration test binaries, included by each as
//! `#[path = "../support/mod.rs"] mod support;`. A binary uses only some of
//! them, hence `dead_code` is allowed here.
#![allow(dead_code)]

pub mod fault;
pub mod gate;
pub mod hooked_fs;
pub mod reader;
pub mod regressions;
pub mod wal;
