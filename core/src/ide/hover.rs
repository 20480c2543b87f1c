//! Hover: the CEL type of a `${…}` expression or part of it, a `schema.spec.*` field's
//! SimpleSchema declaration, a resource id's kind and dependencies, a component type's
//! parameter schema, a kurel value's declaration.

use std::ops::Range;

use super::cursor::Cursor;
use super::expression::{chain_start, word_at, Hole};
use super::kro::{self, Resource};
use super::tree::{Body, Node};
use super::{component, Hover, Texts};
use crate::expr::check::Scope;
use crate::expr::types::Type;
use crate::fieldpath::Segment;
use crate::openapi::SchemaNode;

/// How many fields an object type lists.
const MAX_FIELDS: usize = 40;

/// What to show at `offset` of `file`, if anything.
pub fn hover(texts: &Texts, file: &str, offset: usize) -> Option<Hover> {
    let cur = Cursor::new(texts, file, offset)?;
    if let Some(pkg) = super::kurel::package(texts, file) {
        return super::kurel::hover(texts, &pkg, &cur);
    }
    let root = cur.root()?;
    if kro::is_rgd(root) {
        return rgd(texts, &cur, root);
    }
    let place = cur.place()?;
    let mut scope = component::scope(root, &place.path)?;
    let hole = cur.hole()?;
    let (written, range) = part(&cur, &hole);
    let mut md = typed(&written, component::type_of(&written, &mut scope));
    if let Some((_, decl)) = component::declaration(root, &written) {
        md.push_str(&format!("\n\n`{written}`\n```yaml\n{decl}\n```"));
    }
    Some(Hover {
        range,
        markdown: md,
    })
}

/// The part of the expression under the cursor: the chain of selections up to the end of the
/// word there (`deployment.spec` on `spec`), or the whole expression off any word; trimmed.
fn part(cur: &Cursor<'_>, hole: &Hole) -> (String, Range<usize>) {
    let src = &cur.text[hole.source.clone()];
    let word = word_at(src, cur.offset - hole.source.start);
    let part = if word.is_empty() {
        0..src.len()
    } else {
        // On a function's name, the call: `regions.join(",")`, whose type is the result's.
        chain_start(src, word.start)..call_end(src, word.end).unwrap_or(word.end)
    };
    let range = trimmed(
        cur.text,
        hole.source.start + part.start..hole.source.start + part.end,
    );
    (cur.decoded(range.clone()), range)
}

/// The end of the parenthesized arguments right after `at`, if a call is written there.
fn call_end(src: &str, at: usize) -> Option<usize> {
    let rest = &src[at..];
    let open = at + (rest.len() - rest.trim_start().len());
    if src.as_bytes().get(open) != Some(&b'(') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in src[open..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(open + i + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// A type, or why there is none, as the hover's first block.
fn typed(written: &str, t: Result<Type, String>) -> String {
    match t {
        Ok(t) => format!("```\n{}\n```", show(&t)),
        Err(e) => format!("`{written}`: {e}"),
    }
}

fn rgd(texts: &Texts, cur: &Cursor<'_>, root: &Node) -> Option<Hover> {
    let place = cur.place()?;
    let all = kro::resources(root);
    if let Some(hole) = cur.hole() {
        let (written, range) = part(cur, &hole);
        let schemas = kro::schemas(texts, root);
        let mut scope: Scope = kro::scope(root, &place.path, &schemas);
        let mut md = typed(&written, kro::type_of(&written, &mut scope));
        if let Some(r) = all.iter().find(|r| r.id == written) {
            md.push_str("\n\n");
            md.push_str(&resource(r, &all, cur.text));
        }
        if let Some(fields) = written.strip_prefix("schema.spec.") {
            let path: Vec<&str> = fields.split('.').collect();
            if let Some(decl) = declaration(root, &path, cur.text) {
                md.push_str("\n\n");
                md.push_str(&decl);
            }
        }
        return Some(Hover {
            range,
            markdown: md,
        });
    }
    // The `id:` of a resource.
    if let Some(r) = all
        .iter()
        .find(|r| super::tree::contains(&r.id_node.range, cur.offset))
    {
        return Some(Hover {
            range: r.id_node.range.clone(),
            markdown: resource(r, &all, cur.text),
        });
    }
    // A field of the instance schema, on its name or its declaration.
    if let [Segment::Key(s), Segment::Key(sc), Segment::Key(sp), rest @ ..] =
        place.path.0.as_slice()
    {
        if s == "spec" && sc == "schema" && sp == "spec" && !rest.is_empty() {
            let path: Vec<&str> = rest
                .iter()
                .filter_map(|s| match s {
                    Segment::Key(k) => Some(k.as_str()),
                    Segment::Index(_) => None,
                })
                .collect();
            let range = place
                .key
                .map_or(place.node.range.clone(), |k| k.range.clone());
            return declaration(root, &path, cur.text).map(|markdown| Hover { range, markdown });
        }
    }
    None
}

/// A range without the blanks around it.
fn trimmed(text: &str, r: Range<usize>) -> Range<usize> {
    let s = &text[r.clone()];
    let start = r.start + (s.len() - s.trim_start().len());
    let end = r.end - (s.len() - s.trim_end().len());
    start..end.max(start)
}

/// A resource's kind and what it depends on.
fn resource(r: &Resource<'_>, all: &[Resource<'_>], text: &str) -> String {
    let kind = match (&r.api_version, &r.kind) {
        (Some(a), Some(k)) => format!("`{a}` `{k}`"),
        _ => "kind not written yet".to_string(),
    };
    let deps = kro::dependencies(r, all, text);
    let deps = if deps.is_empty() {
        "no other resource".to_string()
    } else {
        deps.iter()
            .map(|d| format!("`{d}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let what = if r.collection { " (collection)" } else { "" };
    format!("**{}**{what}: {kind}\n\ndepends on: {deps}", r.id)
}

/// The SimpleSchema declaration of `schema.spec.<path>`, as written.
fn declaration(root: &Node, path: &[&str], text: &str) -> Option<String> {
    let at: Vec<Segment> = ["spec", "schema", "spec"]
        .iter()
        .chain(path)
        .map(|k| Segment::Key(k.to_string()))
        .collect();
    let node = root.at(&at)?;
    let name = path.last()?;
    let written = match &node.body {
        Body::Scalar(s, _) => s.clone(),
        // An object of fields: its text, bounded.
        _ => text
            .get(node.range.clone())
            .unwrap_or_default()
            .chars()
            .take(400)
            .collect(),
    };
    Some(format!(
        "`schema.spec.{}`\n```yaml\n{name}: {written}\n```",
        path.join(".")
    ))
}

/// A type for a person: an object lists its fields.
pub(super) fn show(t: &Type) -> String {
    match t {
        Type::Object(n) => {
            let fs = fields(n);
            let more = if fs.len() > MAX_FIELDS { ", …" } else { "" };
            let list: Vec<String> = fs
                .iter()
                .take(MAX_FIELDS)
                .map(|(k, t)| format!("{k}: {t}"))
                .collect();
            format!("object {{{}{more}}}", list.join(", "))
        }
        t => t.to_string(),
    }
}

/// The named fields of an object schema and their types, in the schema's order.
pub(super) fn fields(n: &SchemaNode) -> Vec<(String, Type)> {
    let Some(props) = n.value().get("properties").and_then(|p| p.as_object()) else {
        return Vec::new();
    };
    props
        .keys()
        .map(|k| (k.clone(), Type::of_child(&n.field(k)).unwrap_or(Type::Dyn)))
        .collect()
}
