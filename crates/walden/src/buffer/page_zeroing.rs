//! [`PageZeroing`]: whether a buffer page is zeroed whole when it is
//! initialised, or only given its header (docs/buffers.md, "No page zeroed
//! twice").

use crate::named_enum::named_enum;

/// What initialising a buffer page writes into it besides its
/// header. Both write the same log byte for byte: every byte written out is
/// covered by a header or by a reservation, which its inserter fills whole.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PageZeroing {
    /// The header only; the rest of the slot keeps the bytes of the page it
    /// held before, and the inserters overwrite them (the default: no 8 KiB
    /// `memset` per page that the copy then overwrites).
    #[default]
    HeaderOnly,
    /// The whole page is zeroed before its header is written, as
    /// PostgreSQL's `AdvanceXLInsertBuffer` does: the behaviour before
    /// header-only initialisation, kept to measure the write path against
    /// it. The prev-link in the buffer always zeroes whole pages (it waits
    /// for a zero field to be written), whatever is configured.
    WholePage,
}

impl PageZeroing {
    /// Every choice, for command-line help and benchmarks.
    pub const ALL: [PageZeroing; 2] = [PageZeroing::HeaderOnly, PageZeroing::WholePage];

    /// The choice's command-line name.
    pub fn name(self) -> &'static str {
        match self {
            PageZeroing::HeaderOnly => "header-only",
            PageZeroing::WholePage => "whole-page",
        }
    }
}

named_enum!(PageZeroing, "page zeroing");
