//! Completion inside `${…}` (fields, resource ids, CEL functions, context variables, kurel
//! values) and of SimpleSchema markers after `|`.

use std::ops::Range;

use super::cursor::Cursor;
use super::expression::{chain_start, line_around, word_at};
use super::hover::{fields, show};
use super::kro;
use super::tree::{Body, Node};
use super::{component, Completion, CompletionKind, Texts};
use crate::expr::check::Scope;
use crate::expr::types::Type;
use crate::fieldpath::Segment;

/// CEL's macros and standard functions an author calls by name; each is offered only when the
/// environment knows it ([`crate::expr::cel::is_known_function`]), macros always.
const MACROS: &[&str] = &["has", "all", "exists", "exists_one", "map", "filter"];
const STANDARD: &[&str] = &[
    "size",
    "int",
    "uint",
    "double",
    "string",
    "bool",
    "bytes",
    "duration",
    "timestamp",
    "type",
    "dyn",
    "matches",
    "contains",
    "startsWith",
    "endsWith",
];

/// The completions at `offset` of `file`.
pub fn complete(texts: &Texts, file: &str, offset: usize) -> Vec<Completion> {
    let Some(cur) = Cursor::new(texts, file, offset) else {
        return Vec::new();
    };
    if let Some(pkg) = super::kurel::package(texts, file) {
        return super::kurel::complete(texts, &pkg, &cur);
    }
    let Some(root) = cur.root() else {
        return Vec::new();
    };
    if let Some(hole) = cur.hole() {
        let src = &cur.text[hole.source.clone()];
        let local = cur.offset - hole.source.start;
        let word = word_at(src, local);
        let typed = word.start..local;
        let replace = hole.source.start + typed.start..hole.source.start + typed.end;
        let prefix = &src[typed];
        let receiver = (word.start > 0 && src.as_bytes()[word.start - 1] == b'.').then(|| {
            let at = hole.source.start;
            cur.decoded(at + chain_start(src, word.start - 1)..at + word.start - 1)
        });
        let receiver = receiver.as_deref().map(str::trim);
        let path = cur.place().map(|p| p.path).unwrap_or_default();
        let mut out = if kro::is_rgd(root) {
            let schemas = kro::schemas(texts, root);
            let mut scope = kro::scope(root, &path, &schemas);
            in_scope(&mut scope, receiver, &replace, root, &Cel::KRO)
        } else if let Some(mut scope) = component::scope(root, &path) {
            in_scope(&mut scope, receiver, &replace, root, &Cel::COMPONENT)
        } else {
            Vec::new()
        };
        out.retain(|c| c.label.starts_with(prefix));
        return out;
    }
    if kro::is_rgd(root) {
        return markers(&cur, root);
    }
    Vec::new()
}

/// How a front-end's expressions are typed, and the functions they may call besides the
/// shared environment's.
struct Cel {
    type_of: fn(&str, &mut Scope) -> Result<Type, String>,
    functions: &'static [&'static str],
    /// Whether the document's resource ids are variables (kro's, not component types').
    resources: bool,
}

impl Cel {
    const KRO: Cel = Cel {
        type_of: kro::type_of,
        functions: &[],
        resources: true,
    };
    const COMPONENT: Cel = Cel {
        type_of: component::type_of,
        functions: component::FUNCTIONS,
        resources: false,
    };
}

/// Completions of a CEL expression in `scope`: the fields of `receiver`'s type after a dot,
/// else the variables in scope and the functions.
fn in_scope(
    scope: &mut Scope,
    receiver: Option<&str>,
    replace: &Range<usize>,
    rgd: &Node,
    cel: &Cel,
) -> Vec<Completion> {
    let item = |label: &str, kind, detail: Option<String>| Completion {
        label: label.to_string(),
        kind,
        detail,
        replace: replace.clone(),
        insert: label.to_string(),
    };
    match receiver {
        Some(r) if !r.is_empty() => {
            let Ok(t) = (cel.type_of)(r, scope) else {
                return Vec::new();
            };
            let t = match t {
                Type::Optional(inner) => *inner,
                t => t,
            };
            let Type::Object(n) = t else {
                return Vec::new();
            };
            let declared = r.strip_prefix("schema.spec").map(|rest| {
                rest.split('.')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            });
            fields(&n)
                .into_iter()
                .map(|(k, t)| {
                    // An instance field shows its declaration, as written; others their type.
                    let detail = declared
                        .as_ref()
                        .and_then(|p| declared_as(rgd, p, &k))
                        .unwrap_or_else(|| show_short(&t));
                    item(&k, CompletionKind::Field, Some(detail))
                })
                .collect()
        }
        Some(_) => Vec::new(),
        None => {
            let resources = if cel.resources {
                kro::resources(rgd)
            } else {
                Vec::new()
            };
            let mut out: Vec<Completion> = Vec::new();
            for (name, t) in scope.vars() {
                if out.iter().any(|c| c.label == name) {
                    continue;
                }
                // A resource shows its kind (a collection: a list of it).
                let resource = resources.iter().find(|r| r.id == name);
                let (kind, detail) = match resource {
                    Some(r) => {
                        let k = match (&r.api_version, &r.kind) {
                            (Some(a), Some(k)) => format!("{a} {k}"),
                            _ => show_short(t),
                        };
                        let k = if r.collection {
                            format!("list of {k}")
                        } else {
                            k
                        };
                        (CompletionKind::Resource, k)
                    }
                    None => (CompletionKind::Variable, show_short(t)),
                };
                out.push(item(name, kind, Some(detail)));
            }
            out.extend(functions(replace, cel.functions));
            out
        }
    }
}

/// CEL macros, the standard functions the environment has, kiln's library (kro's), and a
/// front-end's own.
fn functions(replace: &Range<usize>, own: &[&str]) -> Vec<Completion> {
    let known = STANDARD
        .iter()
        .filter(|f| crate::expr::cel::is_known_function(f));
    MACROS
        .iter()
        .chain(known)
        .chain(crate::expr::library::FUNCTIONS)
        .chain(own)
        .map(|f| Completion {
            label: f.to_string(),
            kind: CompletionKind::Function,
            detail: None,
            replace: replace.clone(),
            insert: f.to_string(),
        })
        .collect()
}

/// A type in one short line.
fn show_short(t: &Type) -> String {
    match t {
        Type::Object(_) => "object".to_string(),
        t => show(t),
    }
}

/// The SimpleSchema declaration of field `k` of `schema.spec.<path>`, as written.
fn declared_as(rgd: &Node, path: &[String], k: &str) -> Option<String> {
    let mut n = rgd.get("spec")?.get("schema")?.get("spec")?;
    for p in path {
        n = n.get(p)?;
    }
    match &n.get(k)?.body {
        Body::Scalar(s, _) => Some(s.clone()),
        _ => Some("object".to_string()),
    }
}

/// SimpleSchema markers after the `|` of a declaration in `spec.schema.spec` (or `types`),
/// read on the line: a declaration is one line, and trailing blanks are not part of its scalar.
fn markers(cur: &Cursor<'_>, root: &Node) -> Vec<Completion> {
    let line = line_around(cur.text, cur.offset);
    let written = &cur.text[line.start..cur.offset.max(line.start)];
    // The declaration's key, at the start of the line.
    let indent = written.len() - written.trim_start().len();
    let place = super::tree::place(root, line.start + indent);
    let in_schema = matches!(place.path.0.as_slice(),
        [Segment::Key(s), Segment::Key(sc), Segment::Key(w), _, ..]
            if s == "spec" && sc == "schema" && (w == "spec" || w == "types"));
    if !in_schema || place.key.is_none() {
        return Vec::new();
    }
    let Some(bar) = written.find('|') else {
        return Vec::new();
    };
    if !written[..bar].contains(": ") {
        return Vec::new();
    }
    let after = &written[bar + 1..];
    // Inside a marker's value (`default="a b`), nothing to offer.
    if after.matches('"').count() % 2 == 1 {
        return Vec::new();
    }
    let word = after
        .rsplit(|c: char| c.is_whitespace())
        .next()
        .unwrap_or_default();
    if word.contains('=') {
        return Vec::new();
    }
    let replace = cur.offset - word.len()..cur.offset;
    crate::schema::MARKER_KEYS
        .iter()
        .filter(|m| m.starts_with(word))
        .map(|m| Completion {
            label: format!("{m}="),
            kind: CompletionKind::Marker,
            detail: None,
            replace: replace.clone(),
            insert: format!("{m}="),
        })
        .collect()
}
