//! Relation file paths as PostgreSQL names them, relative to the data
//! directory (PostgreSQL: `relpathperm`, `GetRelationPath`).

use crate::format::body::RelFileNode;

/// `GLOBALTABLESPACE_OID`: shared catalogs, under `global/`.
const GLOBAL_TABLESPACE: u32 = 1664;
/// `DEFAULTTABLESPACE_OID`: under `base/`.
const DEFAULT_TABLESPACE: u32 = 1663;
/// PostgreSQL 15's `TABLESPACE_VERSION_DIRECTORY`.
const TABLESPACE_VERSION_DIRECTORY: &str = "PG_15_202209061";

/// Fork names as pg_waldump prints them (PostgreSQL: `forkNames`).
pub(super) const FORK_NAMES: [&str; 4] = ["main", "fsm", "vm", "init"];

/// The name of fork `fork`, or `None` for a number PostgreSQL 15 does not have.
pub(super) fn fork_name(fork: i32) -> Option<&'static str> {
    usize::try_from(fork)
        .ok()
        .and_then(|f| FORK_NAMES.get(f).copied())
}

/// The path of fork `fork` of relation `r`: `base/DB/REL`, `global/REL` or
/// `pg_tblspc/SPC/PG_15_.../DB/REL`, with `_fsm`, `_vm` or `_init` for the
/// other forks (an unknown fork number is printed as `_N`).
pub(super) fn relpath(r: &RelFileNode, fork: i32) -> String {
    let base = match r.spc {
        GLOBAL_TABLESPACE => format!("global/{}", r.rel),
        DEFAULT_TABLESPACE => format!("base/{}/{}", r.db, r.rel),
        spc => format!(
            "pg_tblspc/{spc}/{TABLESPACE_VERSION_DIRECTORY}/{}/{}",
            r.db, r.rel
        ),
    };
    match (fork, fork_name(fork)) {
        (0, _) => base,
        (_, Some(name)) => format!("{base}_{name}"),
        (n, None) => format!("{base}_{n}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_of_each_tablespace_and_fork() {
        let rel = |spc, db, rel| RelFileNode { spc, db, rel };
        assert_eq!(relpath(&rel(1663, 5, 16384), 0), "base/5/16384");
        assert_eq!(relpath(&rel(1663, 5, 16384), 2), "base/5/16384_vm");
        assert_eq!(relpath(&rel(1664, 0, 1262), 1), "global/1262_fsm");
        assert_eq!(
            relpath(&rel(16500, 5, 7), 3),
            "pg_tblspc/16500/PG_15_202209061/5/7_init"
        );
    }
}
