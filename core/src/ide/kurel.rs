//! What the editor needs of a kurel package: the parameters a `${path}` names (its
//! declaration in the package's `parameters.yaml`), and the resource a patch's header targets.
//! Paths are read by kurel's own parser ([`crate::kurel::variables::parse_path`],
//! [`crate::kurel::kpatch::parse_header`]).

use std::ops::Range;

use super::cursor::Cursor;
use super::expression::{line_around, word_at};
use super::tree::{parse, Body, Node};
use super::{Completion, CompletionKind, Hover, Location, Symbol, SymbolKind, Texts};
use crate::fieldpath::Segment;
use crate::kurel::variables::{parse_path, type_name, Step};

/// The package a file belongs to: its directory (`""` at the top) and its `parameters.yaml`.
pub struct Package {
    /// The directory, as files are named (no trailing `/`).
    pub dir: String,
    /// The parameters file's name.
    pub parameters: String,
}

/// The package of `file`: the nearest directory above it with a `parameters.yaml` that is a
/// package's (a `*.kurel` directory, or a `kurel:` key), as kurel decides what a package is.
pub fn package(texts: &Texts, file: &str) -> Option<Package> {
    let mut dir = file;
    while let Some((up, _)) = dir.rsplit_once('/') {
        dir = up;
        if let Some(p) = at(texts, dir) {
            return Some(p);
        }
        // A local extension (`NAME.local.kurel`) extends the package beside it.
        if let Some(name) = dir.strip_suffix(".local.kurel") {
            if let Some(p) = at(texts, &format!("{name}.kurel")) {
                return Some(p);
            }
        }
    }
    at(texts, "")
}

fn at(texts: &Texts, dir: &str) -> Option<Package> {
    let parameters = if dir.is_empty() {
        "parameters.yaml".to_string()
    } else {
        format!("{dir}/parameters.yaml")
    };
    let text = texts.get(&parameters)?;
    let named = dir.ends_with(".kurel") && !dir.ends_with(".local.kurel");
    let keyed = text.starts_with("kurel:") || text.contains("\nkurel:");
    (named || keyed).then(|| Package {
        dir: dir.to_string(),
        parameters,
    })
}

impl Package {
    /// The root of the parameters document.
    fn root(&self, texts: &Texts) -> Option<Node> {
        parse(texts.get(&self.parameters)?)
            .into_iter()
            .next()
            .map(|d| d.root)
    }
}

/// The parameter node (key and value) a variable path names, `values.` accepted for a package
/// without a `values` parameter (kurel's prototype spelling).
fn declared<'n>(params: &'n Node, path: &str) -> Option<(Option<&'n Node>, &'n Node)> {
    let path = match path.strip_prefix("values.") {
        Some(rest) if params.get("values").is_none() => rest,
        _ => path,
    };
    let steps = parse_path(path).ok()?;
    let mut key = None;
    let mut node = params;
    for s in steps {
        match s {
            Step::Key(k) => {
                let (kn, v) = node.entry(&k)?;
                key = Some(kn);
                node = v;
            }
            Step::Index(i) => node = node.at(&[Segment::Index(i)])?,
        }
    }
    Some((key, node))
}

/// The variable path under the cursor of a `${…}`: its text and range, up to the end of the
/// word the cursor is on.
fn path_at(cur: &Cursor<'_>) -> Option<(String, Range<usize>)> {
    let hole = cur.hole()?;
    let src = &cur.text[hole.source.clone()];
    let w = word_at(src, cur.offset - hole.source.start);
    let lead = src.len() - src.trim_start().len();
    let end = if w.is_empty() {
        src.trim_end().len()
    } else {
        w.end
    };
    let end = end.max(lead);
    Some((
        src[lead..end].to_string(),
        hole.source.start + lead..hole.source.start + end,
    ))
}

/// Hover on a `${path}` of a package file: the parameter's type and declaration.
pub fn hover(texts: &Texts, pkg: &Package, cur: &Cursor<'_>) -> Option<Hover> {
    let (path, range) = path_at(cur)?;
    let params = pkg.root(texts)?;
    let (key, node) = declared(&params, &path)?;
    let text = texts.get(&pkg.parameters)?;
    let written = key.map_or(node.range.start, |k| k.range.start)..node.range.end;
    let decl: String = text
        .get(written)
        .unwrap_or_default()
        .chars()
        .take(400)
        .collect();
    Some(Hover {
        range,
        markdown: format!(
            "`{path}`: {} (`{}`)\n```yaml\n{decl}\n```",
            type_name(&node.value()),
            pkg.parameters
        ),
    })
}

/// Completion of a `${path}`: the keys of the parameter before the last dot, or the top-level
/// parameters.
pub fn complete(texts: &Texts, pkg: &Package, cur: &Cursor<'_>) -> Vec<Completion> {
    let Some(hole) = cur.hole() else {
        return Vec::new();
    };
    let Some(params) = pkg.root(texts) else {
        return Vec::new();
    };
    let src = &cur.text[hole.source.clone()];
    let local = cur.offset - hole.source.start;
    let typed_start = src[..local]
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || *c == '_' || *c == '-'))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let prefix = &src[typed_start..local];
    let replace = hole.source.start + typed_start..hole.source.start + local;
    let (parent, kind) = match src[..typed_start].trim_start().strip_suffix('.') {
        Some(before) => match declared(&params, before) {
            Some((_, n)) => (n, CompletionKind::Field),
            None => return Vec::new(),
        },
        None => (&params, CompletionKind::Variable),
    };
    let Body::Map(entries) = &parent.body else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(k, v)| {
            let k = k.str()?;
            k.starts_with(prefix).then(|| Completion {
                label: k.to_string(),
                kind,
                detail: Some(type_name(&v.value()).to_string()),
                replace: replace.clone(),
                insert: k.to_string(),
            })
        })
        .collect()
}

/// Where the thing under the cursor is declared: a `${path}`'s parameter, or a patch header's
/// target resource.
pub fn definition(texts: &Texts, pkg: &Package, cur: &Cursor<'_>) -> Vec<Location> {
    if let Some((path, _)) = path_at(cur) {
        let Some(params) = pkg.root(texts) else {
            return Vec::new();
        };
        return declared(&params, &path)
            .map(|(k, v)| Location {
                file: pkg.parameters.clone(),
                range: k.map_or(v.range.clone(), |k| k.range.clone()),
            })
            .into_iter()
            .collect();
    }
    let line = &cur.text[line_around(cur.text, cur.offset)];
    let Some(inner) = header(line) else {
        return Vec::new();
    };
    let Ok((target, _)) = crate::kurel::kpatch::parse_header(inner) else {
        return Vec::new();
    };
    let resources = format!("{}resources/", prefix(&pkg.dir));
    let mut out = Vec::new();
    for (f, text) in texts.range(resources.clone()..) {
        if !f.starts_with(&resources) {
            break;
        }
        for d in parse(text) {
            let kind = d.root.get("kind").and_then(Node::str).unwrap_or_default();
            let name = d.root.get("metadata").and_then(|m| m.get("name"));
            if kind.eq_ignore_ascii_case(&target.kind)
                && name.and_then(Node::str) == Some(&target.name)
            {
                let ns = d
                    .root
                    .get("metadata")
                    .and_then(|m| m.get("namespace"))
                    .and_then(Node::str);
                if target.namespace.is_none() || target.namespace.as_deref() == ns {
                    out.extend(name.map(|n| Location {
                        file: f.clone(),
                        range: n.range.clone(),
                    }));
                }
            }
        }
    }
    out
}

/// Every use of the parameter under the cursor (in a `${path}`, or its key in the parameters
/// file) in the package's files, deeper paths included, and its declaration.
pub fn references(texts: &Texts, pkg: &Package, cur: &Cursor<'_>) -> Vec<Location> {
    let Some(params) = pkg.root(texts) else {
        return Vec::new();
    };
    let in_params = texts.get(&pkg.parameters).map(String::as_str) == Some(cur.text);
    let path = match path_at(cur) {
        Some((p, _)) => p,
        None if in_params => match cur.place() {
            Some(p) if p.key.is_some() => p.path.to_string(),
            _ => return Vec::new(),
        },
        None => return Vec::new(),
    };
    let normal = |p: &str| -> String {
        match p.strip_prefix("values.") {
            Some(rest) if params.get("values").is_none() => rest.to_string(),
            _ => p.to_string(),
        }
    };
    let path = normal(&path);
    let Some((key, value)) = declared(&params, &path) else {
        return Vec::new();
    };
    let mut out = vec![Location {
        file: pkg.parameters.clone(),
        range: key.map_or(value.range.clone(), |k| k.range.clone()),
    }];
    let within = prefix(&pkg.dir);
    for (f, text) in texts.range(within.clone()..) {
        if !f.starts_with(&within) {
            break;
        }
        let mut from = 0;
        while let Some(at) = text[from..].find("${") {
            let open = from + at;
            from = open + 2;
            // `$${` writes a literal `${` (kurel's escape).
            if open > 0 && text.as_bytes()[open - 1] == b'$' {
                continue;
            }
            let Some(len) = text[from..].find(['}', '\n']) else {
                break;
            };
            if text.as_bytes()[from + len] == b'\n' {
                continue;
            }
            let body = &text[from..from + len];
            let lead = body.len() - body.trim_start().len();
            let used = normal(body.trim());
            let deeper = used
                .strip_prefix(&path)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']));
            if deeper {
                let start = from + lead;
                out.push(Location {
                    file: f.clone(),
                    range: start..start + path_len(body.trim(), &used, &path),
                });
            }
        }
    }
    out
}

/// The length of the written reference that names `path` (`values.` included when written).
fn path_len(written: &str, normal: &str, path: &str) -> usize {
    written.len() - normal.len() + path.len()
}

fn prefix(dir: &str) -> String {
    if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    }
}

/// The inside of a kpatch header line `[…]`.
fn header(line: &str) -> Option<&str> {
    line.trim().strip_prefix('[')?.strip_suffix(']')
}

/// The outline of a kpatch file: its sections, each named by its header.
pub fn patch_symbols(text: &str) -> Vec<Symbol> {
    let mut out: Vec<Symbol> = Vec::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some(inner) = header(body) {
            let lead = body.len() - body.trim_start().len();
            let detail = crate::kurel::kpatch::parse_header(inner)
                .ok()
                .map(|(t, _)| t.to_string());
            out.push(Symbol {
                name: inner.trim().to_string(),
                detail,
                kind: SymbolKind::Patch,
                range: start..start + body.len(),
                selection: start + lead..start + body.trim_end().len(),
                children: Vec::new(),
            });
        } else if let Some(last) = out.last_mut() {
            if !body.trim().is_empty() && !body.trim_start().starts_with('#') {
                last.range.end = start + body.len();
            }
        }
        start = end;
    }
    out
}

/// The outline of a package's parameters: each top-level parameter, its type beside it.
pub fn parameter_symbols(text: &str) -> Vec<Symbol> {
    let Some(root) = parse(text).into_iter().next().map(|d| d.root) else {
        return Vec::new();
    };
    let Body::Map(entries) = &root.body else {
        return Vec::new();
    };
    entries
        .iter()
        .filter_map(|(k, v)| {
            Some(Symbol {
                name: k.str()?.to_string(),
                detail: Some(type_name(&v.value()).to_string()),
                kind: SymbolKind::Parameter,
                range: k.range.start..v.range.end.max(k.range.end),
                selection: k.range.clone(),
                children: Vec::new(),
            })
        })
        .collect()
}

/// The outline of a package's resource file: each object by kind and name.
pub fn resource_symbols(text: &str) -> Vec<Symbol> {
    parse(text)
        .into_iter()
        .map(|d| {
            let kind = d
                .root
                .get("kind")
                .and_then(Node::str)
                .unwrap_or_default()
                .to_string();
            let name = d.root.get("metadata").and_then(|m| m.get("name"));
            Symbol {
                name: name.and_then(Node::str).unwrap_or(&kind).to_string(),
                detail: Some(kind.clone()),
                kind: SymbolKind::Resource,
                range: d.root.range.clone(),
                selection: name.map_or(d.root.range.clone(), |n| n.range.clone()),
                children: Vec::new(),
            }
        })
        .collect()
}
