//! The layering of kiln-core, as a test (issue 28).
//!
//! Every source file of `core/src` is read, its `crate::…` paths (in `use` lines and inline) are
//! mapped to the top-level modules they name, and each module is placed in one layer of
//! [`LAYERS`], the one table of the layering (docs/ARCHITECTURE.md, "Layers", draws the same).
//! The test fails when
//!
//! - a module imports one from a higher layer (a shared stage reaching into a front-end, a
//!   front-end into the pipeline),
//! - a front-end imports a sibling front-end (kro, component types, kurel and Flux know nothing of
//!   each other; what they share lives below them),
//! - modules import each other in a loop, directly or through others,
//! - a module is missing from the table, or the table names one that does not exist.
//!
//! Test code (`#[cfg(test)]` items and the files they declare) is not part of the library's
//! structure and is left out: a unit test may drive its stage through the whole pipeline.
//!
//! The bench harness (`bench/src`) has no layers but the same rule against loops
//! ([`bench_modules_import_each_other_one_way`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The layers of kiln-core, bottom first. A module may import modules of its own layer and of the
/// layers below it, never above; in a layer marked `isolated`, not even its own siblings.
const LAYERS: &[Layer] = &[
    Layer {
        name: "base",
        what: "diagnostics, limits and small helpers: plain data every stage speaks",
        isolated: false,
        modules: &[
            "diag",
            "limits",
            "lookup",
            "suggest",
            "fieldpath",
            "vocabulary",
            "process",
            "base64",
            "names",
            "delimiter",
            "percent",
        ],
    },
    Layer {
        name: "documents",
        what:
            "reading and writing documents, what Kubernetes knows of them, where output came from",
        isolated: false,
        modules: &[
            "document",
            "source",
            "revision",
            "output",
            "provenance",
            "openapi",
            "scope",
            "observed",
        ],
    },
    Layer {
        name: "shared stages",
        what: "what more than one front-end or door uses: schemas, CEL, the graph IR and its \
               evaluator, checks, layouts, redaction, diffs, kustomize paths",
        isolated: false,
        modules: &[
            "schema",
            "expr",
            "ir",
            "template",
            "graph",
            "render",
            "inventory",
            "layout",
            "redact",
            "diff",
            "kustomize_paths",
        ],
    },
    Layer {
        name: "front-ends",
        what: "one input model each; they never import each other",
        isolated: true,
        modules: &["kro", "component", "kurel", "flux"],
    },
    Layer {
        name: "requests",
        what: "one run over every front-end, and what the doors call",
        isolated: false,
        modules: &[
            "strategy",
            "pipeline",
            "request",
            "status",
            "inplace",
            "kustomize_build",
            "kustomize_reach",
            "ide",
        ],
    },
];

struct Layer {
    name: &'static str,
    what: &'static str,
    isolated: bool,
    modules: &'static [&'static str],
}

/// One `crate::…` path in library code.
#[derive(Debug, Clone)]
struct Import {
    /// The file, relative to the crate (`src/component/mod.rs`).
    file: String,
    line: usize,
    /// The path as written, up to the item (`crate::pipeline::Origin`).
    path: String,
    /// The module that imports.
    from: String,
    /// The top-level module named.
    to: String,
}

#[test]
fn core_imports_follow_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let imports = crate_imports(&src, "core/src");
    let layer_of = layer_table();
    let mut problems = table_problems(&src, &layer_of);
    for i in &imports {
        let (Some(&(from, _)), Some(&(to, _))) = (layer_of.get(&i.from), layer_of.get(&i.to))
        else {
            continue; // reported by table_problems
        };
        let (lf, lt) = (&LAYERS[from], &LAYERS[to]);
        if to > from {
            problems.push(format!(
                "{}:{}: `{}`: {} ({}) imports {} ({}), a higher layer; a module imports only its \
                 own layer and those below (move what both need down, or pass it in from above)",
                i.file, i.line, i.path, i.from, lf.name, i.to, lt.name
            ));
        } else if to == from && lf.isolated {
            problems.push(format!(
                "{}:{}: `{}`: {} imports {}, a sibling in the {} layer, which never import each \
                 other (move what both need to a layer below)",
                i.file, i.line, i.path, i.from, i.to, lf.name
            ));
        }
    }
    problems.extend(cycles(&imports));
    assert!(
        problems.is_empty(),
        "kiln-core's layering is broken (the table: core/tests/architecture.rs LAYERS, \
         docs/ARCHITECTURE.md \"Layers\"):\n  {}",
        problems.join("\n  ")
    );
}

#[test]
fn bench_modules_import_each_other_one_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../bench/src");
    if !src.is_dir() {
        return;
    }
    let imports = crate_imports(&src, "bench/src");
    let problems = cycles(&imports);
    assert!(
        problems.is_empty(),
        "kiln-bench's modules import each other in a loop:\n  {}",
        problems.join("\n  ")
    );
}

/// Doors hold only their protocol: a predicate of kiln-core (what kind of document, file or
/// name something is) is called, never written again in a door, where a copy drifts from the
/// rule it copied. Every public free function of kiln-core named `is_…`, `defined_…` or
/// `declared_…` (or re-exported under such a name) is such a predicate; the test fails when a
/// door (`cli/src`, `lsp/src`, `plugin-*/src`) defines a function of the same name, naming the file and line.
#[test]
fn no_door_redefines_a_core_predicate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut core_files = Vec::new();
    walk(&root.join("core/src"), &mut core_files);
    let mut predicates = BTreeSet::new();
    for f in &core_files {
        let code = blank_comments_and_literals(&fs::read_to_string(f).expect("read a source file"));
        for line in code.lines() {
            // Free functions (methods are indented) and re-exports under a predicate's name.
            let name = line.strip_prefix("pub fn ").or_else(|| {
                line.strip_prefix("pub use ")
                    .and_then(|l| l.split(" as ").nth(1))
            });
            if let Some(name) = name.map(|n| identifier(n.trim_start())) {
                if ["is_", "defined_", "declared_"]
                    .iter()
                    .any(|p| name.starts_with(p))
                {
                    predicates.insert(name.to_string());
                }
            }
        }
    }
    for known in [
        "is_rgd",
        "is_rgd_value",
        "defined_kind",
        "is_source",
        "is_vcs_name",
        "is_package",
    ] {
        assert!(
            predicates.contains(known),
            "the predicate reader missed `{known}`: {predicates:?}"
        );
    }
    let mut doors = vec![root.join("cli/src"), root.join("lsp/src")];
    for e in fs::read_dir(&root).expect("read the workspace") {
        let p = e.expect("a directory entry").path();
        let name = p.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("plugin-") && p.join("src").is_dir() {
            doors.push(p.join("src"));
        }
    }
    doors.sort();
    let mut problems = Vec::new();
    for door in &doors {
        let mut files = Vec::new();
        walk(door, &mut files);
        files.sort();
        for f in files {
            let code =
                blank_comments_and_literals(&fs::read_to_string(&f).expect("read a source file"));
            for (n, line) in code.lines().enumerate() {
                let Some((_, after)) = line.split_once("fn ") else {
                    continue;
                };
                let before = &line[..line.len() - after.len() - 3];
                if !before.is_empty() && !before.ends_with([' ', '\t']) {
                    continue; // part of a longer word
                }
                let name = identifier(after);
                if predicates.contains(name) {
                    problems.push(format!(
                        "{}:{}: fn {name} is kiln-core's predicate: call it instead of defining it again",
                        f.strip_prefix(&root).unwrap_or(&f).display(),
                        n + 1
                    ));
                }
            }
        }
    }
    assert!(
        problems.is_empty(),
        "a door re-implements a core predicate:\n  {}",
        problems.join("\n  ")
    );
}

/// The identifier at the start of `s`.
fn identifier(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// docs/ARCHITECTURE.md draws the same layers: its table ("| 1 base | `diag`, … |") names the
/// modules of each layer of [`LAYERS`], in the same order.
#[test]
fn the_architecture_document_draws_the_same_layers() {
    let doc =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/ARCHITECTURE.md"))
            .expect("docs/ARCHITECTURE.md");
    for (n, layer) in LAYERS.iter().enumerate() {
        let head = format!("| {} {} | ", n + 1, layer.name);
        let row = doc
            .lines()
            .find(|l| l.starts_with(&head))
            .unwrap_or_else(|| panic!("docs/ARCHITECTURE.md has no row starting {head:?}"));
        let cell = row[head.len()..].split(" |").next().unwrap_or("");
        let named: Vec<&str> = cell
            .split(", ")
            .map(|m| m.trim().trim_matches('`'))
            .collect();
        assert_eq!(
            named, layer.modules,
            "docs/ARCHITECTURE.md, layer {} ({}), does not match LAYERS in core/tests/architecture.rs",
            n + 1,
            layer.name
        );
    }
}

/// The reader below finds what it should: imports in `use` lines, grouped and inline paths,
/// `super::` paths that leave a module, and nothing in comments, strings or test code.
#[test]
fn the_import_reader_reads_what_rust_reads() {
    let text = r##"
//! Docs name [`crate::not_this`].
use crate::diag::{codes, Diagnostic};
use crate::{fieldpath::FieldPath, lookup};
use std::fmt;
/* a block comment: crate::nor_this */
const S: &str = "crate::nor_this_either { ";
const R: &str = r#"crate::nor_raw " { "#;
const C: char = '{';
fn f<'a>(x: &'a str) -> &'a str {
    let _ = crate::render::annotate;
    let _ = super::super::scope::group_of(x);
    x
}
macro_rules! m { () => { $crate::not_macro } }
#[cfg(test)]
mod tests {
    use crate::pipeline::render;
    const T: &str = "}";
}
#[cfg(test)]
mod more;
pub mod inner {
    use super::super::source::Root;
}
"##;
    let (found, test_mods) = imports_of(text, &["kurel".into(), "package".into()]);
    let named: Vec<(&str, &str)> = found
        .iter()
        .map(|(_, path, to)| (path.as_str(), to.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            ("crate::diag", "diag"),
            ("crate::fieldpath", "fieldpath"),
            ("crate::lookup", "lookup"),
            ("crate::render", "render"),
            ("super::super::scope", "scope"),
            ("super::super", "kurel"),
        ],
        "{found:?}"
    );
    assert_eq!(test_mods, ["more"]);
}

/// Module name → (layer index, position) from [`LAYERS`].
fn layer_table() -> BTreeMap<String, (usize, usize)> {
    let mut out = BTreeMap::new();
    for (l, layer) in LAYERS.iter().enumerate() {
        assert!(!layer.what.is_empty());
        for (i, m) in layer.modules.iter().enumerate() {
            let before = out.insert(m.to_string(), (l, i));
            assert!(before.is_none(), "{m} is in the layer table twice");
        }
    }
    out
}

/// Every top-level module of the crate is in the table, and the table names no other.
fn table_problems(src: &Path, layer_of: &BTreeMap<String, (usize, usize)>) -> Vec<String> {
    let lib = fs::read_to_string(src.join("lib.rs")).expect("src/lib.rs");
    let declared: BTreeSet<String> = lib
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            let rest = l
                .strip_prefix("pub mod ")
                .or_else(|| l.strip_prefix("mod "))?;
            Some(rest.trim_end_matches(';').trim().to_string())
        })
        .collect();
    let mut out = Vec::new();
    for m in &declared {
        if !layer_of.contains_key(m) {
            out.push(format!(
                "src/lib.rs: module `{m}` is in no layer: add it to LAYERS (core/tests/architecture.rs) \
                 and to the map in docs/ARCHITECTURE.md"
            ));
        }
    }
    for m in layer_of.keys() {
        if !declared.contains(m) {
            out.push(format!(
                "LAYERS names `{m}`, which src/lib.rs does not declare"
            ));
        }
    }
    out
}

/// Every loop among the modules (each strongly connected group of two or more), with one import
/// per arrow of one loop through it.
fn cycles(imports: &[Import]) -> Vec<String> {
    let mut edges: BTreeMap<&str, BTreeMap<&str, &Import>> = BTreeMap::new();
    for i in imports {
        edges
            .entry(i.from.as_str())
            .or_default()
            .entry(i.to.as_str())
            .or_insert(i);
    }
    let nodes: BTreeSet<&str> = imports
        .iter()
        .flat_map(|i| [i.from.as_str(), i.to.as_str()])
        .collect();
    let reach = |from: &str| -> BTreeSet<&str> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from];
        while let Some(n) = todo.pop() {
            for &m in edges.get(n).map(|e| e.keys()).into_iter().flatten() {
                if seen.insert(m) {
                    todo.push(m);
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&str, BTreeSet<&str>> = nodes.iter().map(|&n| (n, reach(n))).collect();
    let mut reported: BTreeSet<&str> = BTreeSet::new();
    let mut out = Vec::new();
    for &n in &nodes {
        if reported.contains(n) || !reaches[n].contains(n) {
            continue;
        }
        let group: BTreeSet<&str> = nodes
            .iter()
            .copied()
            .filter(|&m| reaches[n].contains(m) && reaches[m].contains(n))
            .collect();
        reported.extend(group.iter().copied());
        // One loop through `n`: the shortest way back (breadth first, in name order).
        let mut back: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = std::collections::VecDeque::from([n]);
        'search: while let Some(a) = queue.pop_front() {
            for &b in edges.get(a).map(|e| e.keys()).into_iter().flatten() {
                if !group.contains(b) {
                    continue;
                }
                if b == n {
                    back.insert(n, a);
                    break 'search;
                }
                if !back.contains_key(b) {
                    back.insert(b, a);
                    queue.push_back(b);
                }
            }
        }
        let mut path = vec![n];
        let mut at = back[n];
        while at != n {
            path.push(at);
            at = back[at];
        }
        path.push(n);
        path.reverse();
        let steps: Vec<String> = path
            .windows(2)
            .map(|w| {
                let i = edges[w[0]][w[1]];
                format!("{} -> {} ({}:{}: `{}`)", w[0], w[1], i.file, i.line, i.path)
            })
            .collect();
        out.push(format!(
            "import loop among {{{}}}: {}; every arrow between modules must point one way",
            group.into_iter().collect::<Vec<_>>().join(", "),
            steps.join(", ")
        ));
    }
    out
}

/// The imports of every library file under `src` (named `shown/…` in messages).
fn crate_imports(src: &Path, shown: &str) -> Vec<Import> {
    let mut files = Vec::new();
    walk(src, &mut files);
    files.sort();
    // Files a `#[cfg(test)] mod x;` declares, and files another includes (`include!("x.rs")`,
    // which belong to the includer's module).
    let mut test_files: BTreeSet<PathBuf> = BTreeSet::new();
    let mut included: BTreeMap<PathBuf, Vec<String>> = BTreeMap::new();
    let mut texts = BTreeMap::new();
    for f in &files {
        let text = fs::read_to_string(f).expect("read a source file");
        let dir = module_dir(src, f);
        let (_, test_mods) = imports_of(&text, &module_path(src, f));
        for m in test_mods {
            test_files.insert(dir.join(format!("{m}.rs")));
            test_files.insert(dir.join(&m).join("mod.rs"));
        }
        for name in text.split("include!(\"").skip(1) {
            if let Some((name, _)) = name.split_once('"') {
                included.insert(f.parent().unwrap().join(name), module_path(src, f));
            }
        }
        texts.insert(f.clone(), text);
    }
    let mut out = Vec::new();
    for (f, text) in &texts {
        let rel = f.strip_prefix(src).unwrap();
        if rel == Path::new("lib.rs") || rel == Path::new("main.rs") {
            continue; // the crate root declares the modules
        }
        if test_files
            .iter()
            .any(|t| f.starts_with(t.with_extension("")))
            || test_files.contains(f)
        {
            continue;
        }
        let path = included
            .get(f)
            .cloned()
            .unwrap_or_else(|| module_path(src, f));
        let (found, _) = imports_of(text, &path);
        for (line, written, to) in found {
            if to != path[0] {
                out.push(Import {
                    file: format!("{shown}/{}", rel.display()),
                    line,
                    path: written,
                    from: path[0].clone(),
                    to,
                });
            }
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in fs::read_dir(dir).expect("read a source directory") {
        let p = e.expect("a directory entry").path();
        if p.is_dir() {
            walk(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The module path of a file: `src/kurel/package.rs` → `[kurel, package]`, `src/kurel/mod.rs` →
/// `[kurel]`.
fn module_path(src: &Path, f: &Path) -> Vec<String> {
    let rel = f.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().to_string())
        .collect();
    if parts.len() > 1 && parts.last().map(String::as_str) == Some("mod") {
        parts.pop();
    }
    parts
}

/// The directory a file's child modules live in.
fn module_dir(src: &Path, f: &Path) -> PathBuf {
    let name = f.file_name().unwrap();
    if name == "mod.rs" || f.parent() == Some(src) && (name == "lib.rs" || name == "main.rs") {
        f.parent().unwrap().to_path_buf()
    } else {
        f.with_extension("")
    }
}

/// The paths to other modules in one file's library code, as `(line, path as written,
/// top-level module)`, and the child modules it declares for tests only. `module` is the file's
/// own module path (what `super::` climbs from).
fn imports_of(text: &str, module: &[String]) -> (Vec<(usize, String, String)>, Vec<String>) {
    let code = blank_comments_and_literals(text);
    let bytes = code.as_bytes();
    let line_at = |i: usize| code[..i].matches('\n').count() + 1;
    // Test items: `#[cfg(test)]` and the item after it, to its `;` or matching `}`.
    let mut skip: Vec<(usize, usize)> = Vec::new();
    let mut test_mods = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("#[cfg(test)]") {
        let start = from + at;
        let mut i = start + "#[cfg(test)]".len();
        let mut depth = 0usize;
        while i < bytes.len() {
            match bytes[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                b';' if depth == 0 => break,
                _ => {}
            }
            i += 1;
        }
        let item = code[start + "#[cfg(test)]".len()..i].trim();
        if let Some(name) = item
            .strip_prefix("mod ")
            .or_else(|| item.strip_prefix("pub mod "))
        {
            if !item.contains('{') {
                test_mods.push(name.trim().to_string());
            }
        }
        skip.push((start, i));
        from = i.min(bytes.len());
    }
    // Inline modules change what `super::` means: (module name, brace depth it opened at).
    let mut found = Vec::new();
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        if let Some(&(_, end)) = skip.iter().find(|(s, _)| *s == i) {
            i = end + 1;
            continue;
        }
        match bytes[i] {
            b'{' => {
                depth += 1;
                i += 1;
                continue;
            }
            b'}' => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
                i += 1;
                continue;
            }
            _ => {}
        }
        let word_start = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        if word_start && code[i..].starts_with("mod ") {
            let rest = &code[i + 4..];
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if rest[name.len()..].trim_start().starts_with('{') {
                inline.push((name, depth));
            }
        }
        if word_start && code[i..].starts_with("crate::") && (i == 0 || bytes[i - 1] != b'$') {
            let after = i + "crate::".len();
            for name in group_heads(&code[after..]) {
                found.push((line_at(i), format!("crate::{name}"), name));
            }
            i = after;
            continue;
        }
        if word_start && code[i..].starts_with("super::") {
            let mut j = i;
            let mut ups = 0;
            while code[j..].starts_with("super::") {
                ups += 1;
                j += "super::".len();
            }
            let here: Vec<&String> = module.iter().chain(inline.iter().map(|(n, _)| n)).collect();
            if ups >= here.len() {
                // Climbed to the crate root: the next name is a top-level module.
                for name in group_heads(&code[j..]) {
                    found.push((line_at(i), format!("{}{name}", &code[i..j]), name));
                }
            } else {
                found.push((
                    line_at(i),
                    code[i..j].trim_end_matches("::").to_string(),
                    here[0].clone(),
                ));
            }
            i = j;
            continue;
        }
        i += 1;
    }
    found.retain(|(_, _, to)| !to.is_empty() && to != "self");
    (found, test_mods)
}

/// The first names of a path after `crate::`: `diag::X` → `[diag]`, `{a::X, b}` → `[a, b]`.
fn group_heads(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    if let Some(inner) = rest.strip_prefix('{') {
        let mut depth = 0;
        let mut parts = vec![String::new()];
        for c in inner.chars() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(String::new());
                    continue;
                }
                _ => {}
            }
            parts.last_mut().unwrap().push(c);
        }
        parts
            .iter()
            .map(|p| ident(p))
            .filter(|n| !n.is_empty())
            .collect()
    } else {
        vec![ident(rest)]
    }
}

/// The text with comments, string literals and character literals replaced by spaces (line
/// breaks kept, so positions and line numbers stay), so that only code is searched.
fn blank_comments_and_literals(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = b.to_vec();
    let blank = |out: &mut Vec<u8>, from: usize, to: usize| {
        for c in &mut out[from..to.min(b.len())] {
            if *c != b'\n' {
                *c = b' ';
            }
        }
    };
    let mut i = 0;
    while i < b.len() {
        let prev_ident = i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_');
        if b[i..].starts_with(b"//") {
            let end = b[i..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(b.len(), |p| i + p);
            blank(&mut out, i, end);
            i = end;
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            let mut j = i;
            while j < b.len() {
                if b[j..].starts_with(b"/*") {
                    depth += 1;
                    j += 2;
                } else if b[j..].starts_with(b"*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    j += 1;
                }
            }
            blank(&mut out, i, j);
            i = j;
        } else if !prev_ident && (b[i] == b'r' || b[i..].starts_with(b"br")) && {
            let k = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
            b.get(k + hashes) == Some(&b'"')
        } {
            let k = if b[i] == b'r' { i + 1 } else { i + 2 };
            let hashes = b[k..].iter().take_while(|&&c| c == b'#').count();
            let mut close = vec![b'"'];
            close.extend(std::iter::repeat_n(b'#', hashes));
            let body = k + hashes + 1;
            let end = b[body..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .map_or(b.len(), |p| body + p + close.len());
            blank(&mut out, i, end);
            i = end;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            blank(&mut out, i, j + 1);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A character literal ('x', '\n', '\u{1F600}', '{'); otherwise a lifetime.
            if b.get(i + 1) == Some(&b'\\') {
                let end = b[i + 2..]
                    .iter()
                    .position(|&c| c == b'\'')
                    .map_or(b.len(), |p| i + 2 + p);
                blank(&mut out, i, end + 1);
                i = end + 1;
            } else {
                let ch = text[i + 1..].chars().next().map_or(1, char::len_utf8);
                if b.get(i + 1 + ch) == Some(&b'\'') {
                    blank(&mut out, i, i + 2 + ch);
                    i += 2 + ch;
                } else {
                    i += 1;
                }
            }
        } else {
            i += 1;
        }
    }
    // Names of modules are ASCII: any other character becomes a space too, so that the text can
    // be sliced at any byte.
    for c in &mut out {
        if !c.is_ascii() {
            *c = b' ';
        }
    }
    String::from_utf8(out).expect("ASCII")
}
