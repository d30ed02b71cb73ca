//! The engine's modules form layers along the data path, and imports go
//! only down them: no module imports one above it, and no two files of the
//! engine import each other, directly or through others.
//!
//! The layers, top to bottom (for `docs/architecture.md`):
//!
//! 1. `lib`, `internals`: the crate root (the public API's re-exports) and
//!    the hidden re-exports for benchmarks and model tests;
//! 2. `wal`: the handle of a log: create, open with recovery, checkpoint,
//!    statistics, close; its shared state is the insert path plus the
//!    control file;
//! 3. `insert`: the insert path (`InsertPath`: insert, switch, copy into
//!    the ring, page mapping, eviction, flush after waiting for
//!    insertions), the insertion slots and the reservation designs;
//! 4. `error`: the crate-wide `Error`, wrapping each layer's own errors;
//! 5. `config`: `Config`, `ConfigError` and the strategy enums that no
//!    lower layer defines (`ReservationKind`, `SlotChoice`);
//! 6. `write`, `read`, `record`: the writer (with the segment supply, the
//!    background writer and `SyncMethod`), the reader, and `Record`;
//! 7. `buffer`: the buffer ring, page initialisation, eviction policy and
//!    the in-buffer prev-link cell;
//! 8. `segment`: segment files, storage, the control file;
//! 9. `format`: the on-disk format (page and record headers, bodies, CRC);
//! 10. `lsn`, `sync`, `named_enum`, `log_metrics`: LSN arithmetic, the
//!     concurrency primitives (loom- and shuttle-swappable), the enum-name
//!     parsing, and a log's labelled `metrics` series.
//!
//! The test reads every file under `src`, takes the modules it names
//! through `crate::`, `super::` and `self::` paths (in `use` trees, however
//! nested and over however many lines, and inline in code; not in comments,
//! doc comments or strings), resolves each to the file that defines it, and
//! checks both rules. Unit-test and `cfg(loom)`/`cfg(shuttle)` model modules
//! count like any other code.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, top to bottom; a module may import from its own layer and
/// the ones below it. See the module docs for what each holds.
const LAYERS: &[&[&str]] = &[
    &["lib", "internals"],
    &["wal"],
    &["insert"],
    &["error"],
    &["config"],
    &["write", "read", "record"],
    &["buffer"],
    &["segment"],
    &["format"],
    &["lsn", "sync", "named_enum", "log_metrics"],
];

/// A source file: its path under `src` and its module path.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SourceFile {
    rel: String,
    module: Vec<String>,
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every `.rs` file under `dir`, recursively, sorted.
fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The module path of the file at `rel` (relative to `src`, with `/`).
fn module_of(rel: &str) -> Vec<String> {
    let stem = rel.strip_suffix(".rs").expect("a .rs file");
    let mut parts: Vec<String> = stem.split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// `text` with comments removed and string and character literals emptied,
/// newlines kept.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && at(i + 1) == '/' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && at(i + 1) == '*' {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && at(i + 1) == '*' {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && at(i + 1) == '/' {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if chars[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
        } else if c == 'r' && (at(i + 1) == '"' || (at(i + 1) == '#' && at(i + 2) != '[')) {
            // A raw string, r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while at(j) == '#' {
                hashes += 1;
                j += 1;
            }
            if at(j) != '"' || (i > 0 && is_ident(chars[i - 1])) {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|k| at(j + 1 + k) == '#') {
                    j += 1 + hashes;
                    break;
                }
                if chars[j] == '\n' {
                    out.push('\n');
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                if at(i) == '\n' {
                    out.push('\n');
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && at(i + 1) == '\\' {
            // An escaped character literal.
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else if c == '\'' && at(i + 2) == '\'' {
            i += 3;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The tokens of a use tree or path: identifiers (with `$crate`), `::`,
/// `{`, `}`, `,`, `*`.
fn tokens(s: &str) -> Vec<String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if is_ident(c) || c == '$' {
            let start = i;
            i += 1;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            if "{},*".contains(c) {
                out.push(c.to_string());
            }
            i += 1;
        }
    }
    out
}

/// Expands the use tree starting at `toks[*i]` under `prefix` into paths.
fn expand(toks: &[String], i: &mut usize, prefix: Vec<String>, out: &mut Vec<Vec<String>>) {
    let mut path = prefix;
    while *i < toks.len() {
        match toks[*i].as_str() {
            "::" => *i += 1,
            "{" => {
                *i += 1;
                loop {
                    if toks.get(*i).map(String::as_str) == Some("}") {
                        // `{}`, or the end after a trailing comma.
                        *i += 1;
                        break;
                    }
                    expand(toks, i, path.clone(), out);
                    match toks.get(*i).map(String::as_str) {
                        Some(",") => *i += 1,
                        Some("}") => {
                            *i += 1;
                            break;
                        }
                        _ => break,
                    }
                }
                return;
            }
            "," | "}" => break,
            "*" => {
                *i += 1;
                break;
            }
            "as" => {
                // `x as y`: the alias names nothing new.
                *i += 2;
                break;
            }
            "self" if !path.is_empty() => *i += 1,
            ident => {
                path.push(ident.to_owned());
                *i += 1;
            }
        }
    }
    out.push(path);
}

/// The paths `code` names that start with `crate`, `$crate`, `super` or
/// `self` (use trees expanded; other paths come out too and are dropped by
/// [`absolute`]): each with the offset where it is named, for the
/// inline-module nesting there.
fn named_paths(code: &str) -> Vec<(usize, Vec<String>)> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut in_use = vec![false; code.len()];
    // `use` statements, whole (to the `;`).
    let mut from = 0;
    while let Some(pos) = code[from..].find("use") {
        let start = from + pos;
        from = start + 3;
        let before_ok = start == 0 || !is_ident(bytes[start - 1] as char);
        let after_ok = bytes
            .get(start + 3)
            .is_some_and(|b| b.is_ascii_whitespace());
        if !(before_ok && after_ok) {
            continue;
        }
        let Some(len) = code[start..].find(';') else {
            continue;
        };
        let stmt = &code[start + 3..start + len];
        in_use[start..start + len]
            .iter_mut()
            .for_each(|b| *b = true);
        let toks = tokens(stmt);
        let mut i = 0;
        let mut paths = Vec::new();
        while i < toks.len() {
            expand(&toks, &mut i, Vec::new(), &mut paths);
            i += 1;
        }
        found.extend(paths.into_iter().map(|p| (start, p)));
    }
    // Inline paths elsewhere.
    for key in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(pos) = code[from..].find(key) {
            let start = from + pos;
            from = start + key.len();
            let start = if start > 0 && bytes[start - 1] == b'$' {
                start - 1
            } else {
                start
            };
            let prev_ok = start == 0 || !is_ident(bytes[start - 1] as char);
            let prev_path = start >= 2 && &code[start - 2..start] == "::";
            if in_use[start] || !prev_ok || prev_path {
                continue;
            }
            let end = code[start..]
                .find(|c: char| !(is_ident(c) || c == ':' || c == '$'))
                .map_or(code.len(), |n| start + n);
            let path: Vec<String> = tokens(&code[start..end])
                .into_iter()
                .filter(|t| t != "::")
                .collect();
            found.push((start, path));
        }
    }
    found
}

/// The inline modules (`mod name { ... }`) of `code`: where each opens and
/// closes, and its name.
fn inline_modules(code: &str) -> Vec<(usize, usize, String)> {
    let toks: Vec<(usize, &str)> = {
        let mut v = Vec::new();
        let mut i = 0;
        let b = code.as_bytes();
        while i < b.len() {
            let c = b[i] as char;
            if is_ident(c) {
                let s = i;
                while i < b.len() && is_ident(b[i] as char) {
                    i += 1;
                }
                v.push((s, &code[s..i]));
            } else {
                if c == '{' || c == '}' || c == ';' {
                    v.push((i, &code[i..i + 1]));
                }
                i += 1;
            }
        }
        v
    };
    let mut spans = Vec::new();
    let mut open: Vec<(usize, Option<String>)> = Vec::new();
    for (k, &(off, t)) in toks.iter().enumerate() {
        match t {
            "{" => {
                let name = (k >= 2 && toks[k - 2].1 == "mod").then(|| toks[k - 1].1.to_owned());
                open.push((off, name));
            }
            "}" => {
                if let Some((start, Some(name))) = open.pop() {
                    spans.push((start, off, name));
                }
            }
            _ => {}
        }
    }
    spans
}

/// Resolves `path`, named at `offset` in the file of module `module`, to
/// an absolute module path.
fn absolute(
    module: &[String],
    inline: &[(usize, usize, String)],
    offset: usize,
    path: &[String],
) -> Option<Vec<String>> {
    let mut here: Vec<String> = module.to_vec();
    let mut nested: Vec<&(usize, usize, String)> = inline
        .iter()
        .filter(|(s, e, _)| *s < offset && offset < *e)
        .collect();
    nested.sort();
    here.extend(nested.iter().map(|(_, _, n)| n.clone()));
    let mut rest = path.iter().peekable();
    let mut base = match rest.peek().map(|s| s.as_str()) {
        Some("crate" | "$crate") => {
            rest.next();
            Vec::new()
        }
        Some("super" | "self") => here,
        _ => return None,
    };
    while let Some(seg) = rest.peek() {
        match seg.as_str() {
            "super" => {
                base.pop()?;
            }
            "self" => {}
            _ => break,
        }
        rest.next();
    }
    base.extend(rest.cloned());
    Some(base)
}

/// The file that defines the longest prefix of module path `path`.
fn file_of(files: &BTreeMap<Vec<String>, SourceFile>, path: &[String]) -> SourceFile {
    (0..=path.len())
        .rev()
        .find_map(|n| files.get(&path[..n]).cloned())
        .expect("the crate root always matches")
}

fn layer_of(file: &SourceFile) -> Option<usize> {
    let top = file.module.first().map_or("lib", String::as_str);
    LAYERS.iter().position(|layer| layer.contains(&top))
}

/// Every file and the files it imports.
fn graph() -> BTreeMap<SourceFile, BTreeSet<SourceFile>> {
    let src = src_dir();
    let mut paths = Vec::new();
    rust_files(&src, &mut paths);
    let files: BTreeMap<Vec<String>, SourceFile> = paths
        .iter()
        .map(|p| {
            let rel = p
                .strip_prefix(&src)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            let module = module_of(&rel);
            (module.clone(), SourceFile { rel, module })
        })
        .collect();
    let mut graph = BTreeMap::new();
    for (path, file) in files.values().map(|f| (src.join(&f.rel), f)) {
        let text = fs::read_to_string(&path).expect("a readable source file");
        let code = code_only(&text);
        let inline = inline_modules(&code);
        let imports: BTreeSet<SourceFile> = named_paths(&code)
            .into_iter()
            .filter_map(|(offset, p)| absolute(&file.module, &inline, offset, &p))
            .map(|p| file_of(&files, &p))
            .filter(|target| target != file)
            .collect();
        graph.insert(file.clone(), imports);
    }
    graph
}

/// A cycle in `graph`, as the files along it, if there is one.
fn find_cycle(graph: &BTreeMap<SourceFile, BTreeSet<SourceFile>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        New,
        OnPath,
        Done,
    }
    fn visit<'a>(
        node: &'a SourceFile,
        graph: &'a BTreeMap<SourceFile, BTreeSet<SourceFile>>,
        marks: &mut BTreeMap<&'a SourceFile, Mark>,
        path: &mut Vec<&'a SourceFile>,
    ) -> Option<Vec<String>> {
        marks.insert(node, Mark::OnPath);
        path.push(node);
        for next in graph.get(node).into_iter().flatten() {
            match marks.get(next).copied().unwrap_or(Mark::New) {
                Mark::OnPath => {
                    let from = path.iter().position(|f| *f == next).expect("on the path");
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|f| f.rel.clone()).collect();
                    cycle.push(next.rel.clone());
                    return Some(cycle);
                }
                Mark::New => {
                    if let Some(cycle) = visit(next, graph, marks, path) {
                        return Some(cycle);
                    }
                }
                Mark::Done => {}
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    for node in graph.keys() {
        if marks.get(node).copied().unwrap_or(Mark::New) == Mark::New {
            if let Some(cycle) = visit(node, graph, &mut marks, &mut Vec::new()) {
                return Some(cycle);
            }
        }
    }
    None
}

#[test]
fn the_parser_finds_imports_in_every_form() {
    let code = code_only(
        "use crate::{\n    a::b,\n    c::{d, e as f},\n};\n\
         // use crate::commented;\n/// [`crate::doc`]\n\
         fn g() { let s = \"crate::string\"; crate::inline::path(); }\n\
         mod tests {\n    use super::*;\n    use super::super::up::X;\n}\n",
    );
    let module = vec!["m".to_owned(), "n".to_owned()];
    let inline = inline_modules(&code);
    let mut found: Vec<Vec<String>> = named_paths(&code)
        .into_iter()
        .filter_map(|(offset, p)| absolute(&module, &inline, offset, &p))
        .collect();
    found.sort();
    let expect: Vec<Vec<String>> = ["a::b", "c::d", "c::e", "inline::path", "m::n", "m::up::X"]
        .iter()
        .map(|p| p.split("::").map(str::to_owned).collect())
        .collect();
    assert_eq!(found, expect);

    // And on the engine itself: an empty parse cannot pass.
    let graph = graph();
    let imports = |from: &str, to: &str| {
        graph
            .iter()
            .find(|(f, _)| f.rel == from)
            .is_some_and(|(_, targets)| targets.iter().any(|t| t.rel == to))
    };
    assert!(imports("wal/mod.rs", "insert/mod.rs"), "wal imports insert");
    assert!(imports("wal/open.rs", "wal/mod.rs"), "super:: is resolved");
    assert!(
        imports("insert/mod.rs", "write/mod.rs"),
        "insert imports write"
    );
    assert!(
        imports("buffer/ring.rs", "format/page.rs"),
        "multi-line use"
    );
    assert!(graph.len() > 50, "every file is read: {}", graph.len());
}

#[test]
fn imports_go_down_the_layers() {
    let mut upward = Vec::new();
    for (file, targets) in &graph() {
        let from =
            layer_of(file).unwrap_or_else(|| panic!("{} is in no layer of LAYERS", file.rel));
        for target in targets {
            let to = layer_of(target)
                .unwrap_or_else(|| panic!("{} is in no layer of LAYERS", target.rel));
            if to < from {
                upward.push(format!(
                    "{} (layer {}) imports {} (layer {}, above it)",
                    file.rel,
                    from + 1,
                    target.rel,
                    to + 1
                ));
            }
        }
    }
    assert!(upward.is_empty(), "upward imports:\n{}", upward.join("\n"));
}

#[test]
fn no_files_import_each_other() {
    let graph = graph();
    if let Some(cycle) = find_cycle(&graph) {
        panic!("files import each other: {}", cycle.join(" -> "));
    }
}
