//! Field paths inside a document: `spec.template.containers[0].image`.
//!
//! Printed the way kro prints them: dots between keys, `[i]` for list indexes, and `["key"]` for keys
//! that contain a dot or are empty (`metadata.labels["app.kubernetes.io/name"]`), so a path can be
//! pasted back into a CEL expression.

use std::fmt;

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::limits::Limit;

/// KLN1005 when `segments`, the length of a path a user wrote (a `--set` key, a kpatch path,
/// `--secret PATH`; `what` names it, quoted short), is over `max`, the `yaml-depth` limit.
///
/// Each segment is a level of nesting of the document the path names, and a set key builds that
/// nesting: a path deeper than the deepest document kiln reads names nothing in one, and what
/// walks or builds along it (recursively, at the end: dropping, writing, merging the value) must
/// never meet a depth no limit checked. So one limit bounds documents and paths alike, checked
/// before anything is built.
pub fn too_deep(what: &str, segments: usize, max: usize) -> Option<Diagnostic> {
    (segments > max).then(|| {
        Diagnostic::error(
            codes::YAML_BUDGET,
            format!(
                "{what} has {segments} segments, more than the limit of {max} ({}): each is a level of nesting",
                Limit::YamlDepth
            ),
        )
        .with_hint(Limit::YamlDepth.hint("name a shallower path"))
    })
}

/// Where a walk over a document is: the keys and indexes from the walk's root, borrowed, made
/// into a [`FieldPath`] only when asked. Walks that visit every string of every rendered object
/// and report almost none would otherwise copy a key per node.
pub(crate) struct At<'s, 'v>(pub(crate) &'s [Step<'v>]);

/// One step of an [`At`].
pub(crate) enum Step<'v> {
    Key(&'v str),
    Index(usize),
}

impl At<'_, '_> {
    /// The path of the string (a key's path is the path of its value).
    pub(crate) fn path(&self) -> FieldPath {
        self.under(&FieldPath::root())
    }

    /// The path from `base`'s root, for a walk that starts at `base`.
    pub(crate) fn under(&self, base: &FieldPath) -> FieldPath {
        let mut p = base.0.clone();
        p.extend(self.0.iter().map(|s| match s {
            Step::Key(k) => Segment::Key((*k).to_string()),
            Step::Index(i) => Segment::Index(*i),
        }));
        FieldPath(p)
    }
}

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Segment {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// A path from a document's root to one of its nodes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FieldPath(pub Vec<Segment>);

impl FieldPath {
    /// The root path.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path extended by a key.
    pub fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Key(k.to_string()));
        p
    }

    /// This path extended by an index.
    pub fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Segment::Index(i));
        p
    }

    /// This path followed by another.
    pub fn join(&self, other: &FieldPath) -> Self {
        let mut p = self.clone();
        p.0.extend(other.0.iter().cloned());
        p
    }

    /// Whether the path has no segments.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Parse a kro-style path (`a.b[0]["c.d"]`). Returns `None` for malformed input. Linear in
    /// the text, never recursive; a path a user wrote is bounded ([`too_deep`]) before anything
    /// walks or builds along it.
    pub fn parse(s: &str) -> Option<Self> {
        let mut segs = Vec::new();
        let b = s.as_bytes();
        let mut i = 0;
        let mut start_of_key = true;
        while i < b.len() {
            match b[i] {
                b'.' => {
                    if start_of_key {
                        return None;
                    }
                    start_of_key = true;
                    i += 1;
                }
                b'[' => {
                    if i + 1 < b.len() && b[i + 1] == b'"' {
                        let rest = &s[i + 2..];
                        let end = rest.find("\"]")?;
                        segs.push(Segment::Key(rest[..end].to_string()));
                        i += 2 + end + 2;
                    } else {
                        let rest = &s[i + 1..];
                        let end = rest.find(']')?;
                        segs.push(Segment::Index(rest[..end].parse().ok()?));
                        i += 1 + end + 1;
                    }
                    start_of_key = false;
                }
                _ => {
                    let rest = &s[i..];
                    let end = rest.find(['.', '[']).unwrap_or(rest.len());
                    segs.push(Segment::Key(rest[..end].to_string()));
                    i += end;
                    start_of_key = false;
                }
            }
        }
        Some(Self(segs))
    }

    /// The node at this path, if present.
    pub fn get<'a>(&self, mut v: &'a Value) -> Option<&'a Value> {
        for s in &self.0 {
            v = match (s, v) {
                (Segment::Key(k), Value::Object(m)) => crate::lookup::get(m, k)?,
                (Segment::Index(i), Value::Array(a)) => a.get(*i)?,
                _ => return None,
            };
        }
        Some(v)
    }

    /// The node at this path, mutably, if present.
    pub fn get_mut<'a>(&self, mut v: &'a mut Value) -> Option<&'a mut Value> {
        for s in &self.0 {
            v = match (s, v) {
                (Segment::Key(k), Value::Object(m)) => crate::lookup::get_mut(m, k)?,
                (Segment::Index(i), Value::Array(a)) => a.get_mut(*i)?,
                _ => return None,
            };
        }
        Some(v)
    }
}

impl fmt::Display for FieldPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, s) in self.0.iter().enumerate() {
            match s {
                Segment::Key(k) if k.is_empty() || k.contains('.') || k.contains('[') => {
                    write!(f, "[{}]", serde_json::Value::String(k.clone()))?
                }
                Segment::Key(k) => {
                    if n > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prints_like_kro() {
        let p = FieldPath::root()
            .key("spec")
            .key("containers")
            .index(0)
            .key("image");
        assert_eq!(p.to_string(), "spec.containers[0].image");
        let p = FieldPath::root()
            .key("metadata")
            .key("labels")
            .key("app.kubernetes.io/name");
        assert_eq!(
            p.to_string(),
            r#"metadata.labels["app.kubernetes.io/name"]"#
        );
        assert_eq!(FieldPath::root().key("").to_string(), r#"[""]"#);
    }

    #[test]
    fn parse_round_trips() {
        for s in [
            "spec.containers[0].image",
            r#"metadata.labels["app.kubernetes.io/name"]"#,
            "a",
            "a[1][2].b",
        ] {
            assert_eq!(FieldPath::parse(s).unwrap().to_string(), s);
        }
        assert!(FieldPath::parse("a..b").is_none());
        assert!(FieldPath::parse("a[x]").is_none());
    }

    #[test]
    fn get_follows_path() {
        let v = json!({"a": [{"b": 1}]});
        let p = FieldPath::parse("a[0].b").unwrap();
        assert_eq!(p.get(&v), Some(&json!(1)));
        assert_eq!(FieldPath::parse("a[1]").unwrap().get(&v), None);
    }
}
