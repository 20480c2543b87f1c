//! Go to definition and find references: resource ids, an instance's kind (its RGD), a
//! component's type and traits, a kurel patch's target.

use std::ops::Range;

use super::cursor::Cursor;
use super::expression::{chain_start, word_at};
use super::tree::{contains, parse, Node};
use super::{component, kro};
use super::{Location, Texts};

/// What the cursor names.
enum Target {
    /// A resource of the RGD of this file: its id.
    Resource(String),
    /// The kind an RGD defines, as (apiVersion group, kind).
    Kind(String, String),
    /// A component type or a trait, by name.
    Component(component::Family, String),
}

/// Where the thing at `offset` of `file` is defined.
pub fn definition(texts: &Texts, file: &str, offset: usize) -> Vec<Location> {
    let Some(cur) = Cursor::new(texts, file, offset) else {
        return Vec::new();
    };
    if let Some(pkg) = super::kurel::package(texts, file) {
        return super::kurel::definition(texts, &pkg, &cur);
    }
    match target(&cur) {
        Some(Target::Resource(id)) => cur
            .root()
            .and_then(|root| {
                kro::resources(root)
                    .into_iter()
                    .find(|r| r.id == id)
                    .map(|r| Location {
                        file: file.to_string(),
                        range: r.id_node.range.clone(),
                    })
            })
            .into_iter()
            .collect(),
        Some(Target::Kind(group, kind)) => rgd_kinds(texts, &group, &kind),
        Some(Target::Component(family, name)) => component::definitions(texts, family, &name),
        None => Vec::new(),
    }
}

/// Where the thing at `offset` of `file` is used (its definition included).
pub fn references(texts: &Texts, file: &str, offset: usize) -> Vec<Location> {
    let Some(cur) = Cursor::new(texts, file, offset) else {
        return Vec::new();
    };
    if let Some(pkg) = super::kurel::package(texts, file) {
        return super::kurel::references(texts, &pkg, &cur);
    }
    match target(&cur) {
        Some(Target::Resource(id)) => {
            let Some(root) = cur.root() else {
                return Vec::new();
            };
            let at = |range| Location {
                file: file.to_string(),
                range,
            };
            let mut out: Vec<Location> = kro::resources(root)
                .into_iter()
                .filter(|r| r.id == id)
                .map(|r| at(r.id_node.range.clone()))
                .collect();
            let mut holes = Vec::new();
            kro::holes(root, cur.text, &mut holes);
            for (src, range) in holes {
                if !kro::roots(&src).contains(&id) {
                    continue;
                }
                for w in reads(&cur.text[range.clone()], &id) {
                    out.push(at(range.start + w.start..range.start + w.end));
                }
            }
            out
        }
        Some(Target::Kind(group, kind)) => {
            let mut out = rgd_kinds(texts, &group, &kind);
            for (f, text) in texts {
                if !text.contains(kind.as_str()) {
                    continue;
                }
                for d in parse(text) {
                    if instance_of(&d.root).is_some_and(|(g, k)| g == group && k == kind) {
                        if let Some(k) = d.root.get("kind") {
                            out.push(Location {
                                file: f.clone(),
                                range: k.range.clone(),
                            });
                        }
                    }
                }
            }
            out
        }
        Some(Target::Component(family, name)) => {
            let mut out = component::definitions(texts, family, &name);
            out.extend(component::uses(texts, family, &name));
            out
        }
        None => Vec::new(),
    }
}

/// The uses of variable `id` in the text of a `${…}`: the word, not after a dot.
fn reads(written: &str, id: &str) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = written[from..].find(id) {
        let start = from + at;
        let w = word_at(written, start);
        if w == (start..start + id.len()) && chain_start(written, w.start) == w.start {
            out.push(w.clone());
        }
        from = start + id.len();
    }
    out
}

fn target(cur: &Cursor<'_>) -> Option<Target> {
    let root = cur.root()?;
    if kro::is_rgd(root) {
        let all = kro::resources(root);
        if let Some(hole) = cur.hole() {
            let src = &cur.text[hole.source.clone()];
            let w = word_at(src, cur.offset - hole.source.start);
            // A variable, not a field of one.
            if w.is_empty() || chain_start(src, w.start) != w.start {
                return None;
            }
            let name = &src[w];
            return all
                .iter()
                .any(|r| r.id == name)
                .then(|| Target::Resource(name.to_string()));
        }
        if let Some(r) = all.iter().find(|r| contains(&r.id_node.range, cur.offset)) {
            return Some(Target::Resource(r.id.clone()));
        }
        let kind = root.get("spec")?.get("schema")?.get("kind")?;
        if contains(&kind.range, cur.offset) {
            let group = root
                .get("spec")
                .and_then(|s| s.get("schema"))
                .and_then(|s| s.get("group"))
                .and_then(Node::str)
                .unwrap_or("kro.run");
            return Some(Target::Kind(group.to_string(), kind.str()?.to_string()));
        }
        return None;
    }
    if let Some((group, kind)) = instance_of(root) {
        if root
            .get("kind")
            .is_some_and(|k| contains(&k.range, cur.offset))
        {
            return Some(Target::Kind(group, kind));
        }
    }
    component::subject(root, cur.offset).map(|(f, n)| Target::Component(f, n))
}

/// The group and kind of a document that is not an RGD (an instance, perhaps).
fn instance_of(root: &Node) -> Option<(String, String)> {
    if kro::is_rgd(root) {
        return None;
    }
    let av = root.get("apiVersion")?.str()?;
    let kind = root.get("kind")?.str()?;
    let group = av.rsplit_once('/').map_or("", |(g, _)| g);
    Some((group.to_string(), kind.to_string()))
}

/// The `spec.schema.kind` of every RGD of the workspace that defines `group`/`kind`.
fn rgd_kinds(texts: &Texts, group: &str, kind: &str) -> Vec<Location> {
    let mut out = Vec::new();
    for (f, text) in texts {
        if !text.contains("ResourceGraphDefinition") || !text.contains(kind) {
            continue;
        }
        for d in parse(text) {
            if !kro::is_rgd(&d.root) {
                continue;
            }
            let Some(schema) = d.root.get("spec").and_then(|s| s.get("schema")) else {
                continue;
            };
            let g = schema.get("group").and_then(Node::str).unwrap_or("kro.run");
            if let Some(k) = schema.get("kind").filter(|k| k.str() == Some(kind)) {
                if g == group {
                    out.push(Location {
                        file: f.clone(),
                        range: k.range.clone(),
                    });
                }
            }
        }
    }
    out
}
