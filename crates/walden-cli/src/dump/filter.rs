//! pg_waldump's record filters: `-r/--rmgr`, `-x/--xid`, `-R/--relation`,
//! `-B/--block`, `-F/--fork` and `-w/--fullpage`, with its checks and error
//! wording for their values.
//!
//! PostgreSQL: the option parsing of pg_waldump's `main` and
//! `XLogRecordMatchesRelationBlock`, `XLogRecordHasFPW`.

use anyhow::{bail, Result};
use walden::rmgr::{rmgr_name, BUILTIN_RMGR_NAMES, RM_MIN_CUSTOM_ID};
use walden::{RelFileNode, WalRecord};

/// Which records to show.
#[derive(Debug, Default)]
pub struct Filter {
    /// Only these rmgrs (`-r`, repeatable), if any was given.
    rmgrs: Option<Vec<u8>>,
    /// Only this xid (`-x`).
    xid: Option<u32>,
    /// Only records with a block of this relation (`-R`).
    relation: Option<RelFileNode>,
    /// ... this block (`-B`, with `-R`).
    block: Option<u32>,
    /// ... in this fork (`-F`).
    fork: Option<u8>,
    /// Only records with a full-page image (`-w`).
    fullpage: bool,
}

/// The values of the filter options as given.
pub struct FilterArgs<'a> {
    /// `-r` values.
    pub rmgrs: &'a [String],
    /// `-x`.
    pub xid: Option<&'a str>,
    /// `-R`.
    pub relation: Option<&'a str>,
    /// `-B`.
    pub block: Option<&'a str>,
    /// `-F`.
    pub fork: Option<&'a str>,
    /// `-w`.
    pub fullpage: bool,
}

/// The rmgr named `name` (case-insensitive): a built-in name or `customNNN`.
fn rmgr_id(name: &str) -> Option<u8> {
    if let Some(id) = BUILTIN_RMGR_NAMES
        .iter()
        .position(|n| n.eq_ignore_ascii_case(name))
    {
        return u8::try_from(id).ok();
    }
    let digits = name
        .get(..6)?
        .eq_ignore_ascii_case("custom")
        .then(|| &name[6..])?;
    let id: u8 = digits.parse().ok()?;
    (id >= RM_MIN_CUSTOM_ID && rmgr_name(id).eq_ignore_ascii_case(name)).then_some(id)
}

/// `--rmgr=list`'s output: one built-in rmgr name a line.
pub fn rmgr_list() -> String {
    BUILTIN_RMGR_NAMES
        .iter()
        .map(|n| format!("{n}\n"))
        .collect()
}

/// An unsigned decimal number, all of `s` (C's `sscanf("%u")` would take a
/// prefix; pg_waldump rejects what does not parse).
fn number(s: &str) -> Option<u32> {
    s.trim().parse().ok()
}

impl Filter {
    /// Checks and takes the filter options, with pg_waldump's messages.
    pub fn new(a: FilterArgs<'_>) -> Result<Filter> {
        let mut f = Filter {
            fullpage: a.fullpage,
            ..Filter::default()
        };
        if !a.rmgrs.is_empty() {
            let mut ids = Vec::new();
            for name in a.rmgrs {
                match rmgr_id(name) {
                    Some(id) => ids.push(id),
                    None => bail!("resource manager \"{name}\" does not exist"),
                }
            }
            f.rmgrs = Some(ids);
        }
        if let Some(x) = a.xid {
            match number(x) {
                Some(xid) => f.xid = Some(xid),
                None => bail!("invalid transaction ID specification: \"{x}\""),
            }
        }
        if let Some(b) = a.block {
            match number(b) {
                Some(blk) if blk != u32::MAX => f.block = Some(blk),
                _ => bail!("invalid block number: \"{b}\""),
            }
        }
        if let Some(r) = a.relation {
            let parts: Vec<Option<u32>> = r.split('/').map(number).collect();
            match parts.as_slice() {
                [Some(spc), Some(db), Some(rel)] if *spc != 0 && *rel != 0 => {
                    f.relation = Some(RelFileNode {
                        spc: *spc,
                        db: *db,
                        rel: *rel,
                    });
                }
                _ => bail!(
                    "invalid relation specification: \"{r}\"\n\
                     detail: Expecting \"tablespace OID/database OID/relation filenode\"."
                ),
            }
        }
        if let Some(name) = a.fork {
            match ["main", "fsm", "vm", "init"]
                .iter()
                .position(|n| *n == name)
            {
                Some(fork) => f.fork = u8::try_from(fork).ok(),
                None => bail!("invalid fork name: \"{name}\""),
            }
        }
        if f.block.is_some() && f.relation.is_none() {
            bail!("option -B/--block requires option -R/--relation to be specified");
        }
        Ok(f)
    }

    /// True if `record` passes every filter given.
    pub fn matches(&self, record: &WalRecord) -> bool {
        if let Some(ids) = &self.rmgrs {
            if !ids.contains(&record.header.rmid) {
                return false;
            }
        }
        if self.xid.is_some_and(|x| x != record.header.xid) {
            return false;
        }
        let by_block = self.relation.is_some() || self.block.is_some() || self.fork.is_some();
        if !by_block && !self.fullpage {
            return true;
        }
        let Ok(body) = record.parse_body() else {
            return false;
        };
        if by_block {
            let hit = body.block_rels().any(|(b, rel)| {
                self.relation.is_none_or(|r| rel == Some(r))
                    && self.block.is_none_or(|blk| blk == b.block)
                    && self.fork.is_none_or(|f| f == b.fork)
            });
            if !hit {
                return false;
            }
        }
        !self.fullpage || body.blocks.iter().any(|b| b.image.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args<'a>(rmgrs: &'a [String]) -> FilterArgs<'a> {
        FilterArgs {
            rmgrs,
            xid: None,
            relation: None,
            block: None,
            fork: None,
            fullpage: false,
        }
    }

    #[test]
    fn values_are_checked_with_pg_waldumps_words() {
        let bad = |a: FilterArgs<'_>| Filter::new(a).unwrap_err().to_string();
        assert_eq!(
            bad(args(&["foo".to_owned()])),
            "resource manager \"foo\" does not exist"
        );
        assert!(Filter::new(args(&["heap2".to_owned(), "custom200".to_owned()])).is_ok());
        assert_eq!(
            bad(FilterArgs {
                xid: Some("abc"),
                ..args(&[])
            }),
            "invalid transaction ID specification: \"abc\""
        );
        assert_eq!(
            bad(FilterArgs {
                block: Some("1"),
                ..args(&[])
            }),
            "option -B/--block requires option -R/--relation to be specified"
        );
        assert!(bad(FilterArgs {
            relation: Some("1/2"),
            ..args(&[])
        })
        .starts_with("invalid relation specification: \"1/2\""));
        assert_eq!(
            bad(FilterArgs {
                fork: Some("bad"),
                ..args(&[])
            }),
            "invalid fork name: \"bad\""
        );
    }
}
