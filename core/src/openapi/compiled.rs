//! Schema nodes prepared once for checking rendered objects ([`super::KindSchema::check_rendered`]).
//!
//! Every unit of a fleet renders the same kinds, so the walk of [`super::walk`] asked the same
//! questions of the same schema nodes for every object: follow `$ref`, scan the node for its
//! flags and types, scan `properties` for each key. A [`Compiled`] node holds those answers, and
//! its children are compiled the first time a value reaches them and kept, so a node is prepared
//! once per process (bundled definitions) or per set of schemas (CRDs), however many objects
//! visit it. The answers are the walk's own functions applied to the same nodes: the findings
//! and their messages are the walk's.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use super::walk::{self, Child, TypeMask, PRESERVE};
use super::{Bundle, OBJECT_META};
use crate::fieldpath::FieldPath;
use crate::lookup::field as key_in;

/// A schema node with `$ref`s and `allOf` resolved, and what the check asks of it.
pub(crate) struct Compiled {
    /// The resolved node: for `enum` and for the messages of a finding.
    node: Arc<Value>,
    preserve: bool,
    types: TypeMask,
    additional_allowed: bool,
    /// One slot per key of `properties`, compiled when a value first has that key. Only the
    /// schema's own keys get a slot, so what objects hold cannot grow it.
    props: HashMap<Box<str>, OnceLock<Arc<Compiled>>, foldhash::fast::FixedState>,
    /// `additionalProperties` when it is a schema: every other key of a map leads there.
    additional: OnceLock<Arc<Compiled>>,
    /// What a list item leads to.
    items: OnceLock<Link>,
}

// A compiled graph can be cyclic (a definition that refers to itself): print no children.
impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled").finish_non_exhaustive()
    }
}

/// Where a key or index leads, kept.
enum Link {
    Schema(Arc<Compiled>),
    Anything,
    Missing,
}

/// Where a key or index leads, for one step of a check.
enum Next<'a> {
    Schema(&'a Compiled),
    /// A child only a rarely taken path finds (`oneOf`/`anyOf` branches), not kept.
    Fresh(Compiled),
    Anything,
    Missing,
}

impl Compiled {
    fn new(b: &Bundle, raw: &Value) -> Self {
        Self::of(b, walk::resolve_shared(b, raw))
    }

    /// A node already resolved.
    fn of(b: &Bundle, node: Arc<Value>) -> Self {
        let mut types = TypeMask::default();
        walk::expected_into(b, &node, &mut types);
        let props = key_in(&node, "properties")
            .and_then(Value::as_object)
            .map(|p| {
                p.keys()
                    .map(|k| (Box::from(k.as_str()), OnceLock::new()))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            preserve: walk::flag(&node, PRESERVE),
            types,
            additional_allowed: walk::additional_allowed(&node),
            props,
            additional: OnceLock::new(),
            items: OnceLock::new(),
            node,
        }
    }

    /// The child at `key`, as [`walk::child_key`] finds it.
    fn key<'a>(&'a self, b: &'a Bundle, key: &str, at_root: bool) -> Next<'a> {
        if at_root {
            match key {
                "metadata" => {
                    return match b.compiled_def(OBJECT_META) {
                        Some(c) => Next::Schema(c),
                        None => Next::Fresh(Compiled::new(b, &Value::Object(Default::default()))),
                    }
                }
                "apiVersion" | "kind" => {
                    static STRING: OnceLock<Compiled> = OnceLock::new();
                    return Next::Schema(
                        STRING.get_or_init(|| {
                            Compiled::new(b, &serde_json::json!({"type": "string"}))
                        }),
                    );
                }
                _ => {}
            }
        }
        if let Some(slot) = self.props.get(key) {
            return Next::Schema(slot.get_or_init(|| {
                let raw = key_in(&self.node, "properties").and_then(|p| key_in(p, key));
                link(b, raw.unwrap_or(&Value::Null))
            }));
        }
        if self.preserve {
            return Next::Anything;
        }
        match key_in(&self.node, "additionalProperties") {
            Some(Value::Bool(true)) => return Next::Anything,
            Some(s @ Value::Object(_)) => {
                return Next::Schema(self.additional.get_or_init(|| link(b, s)))
            }
            _ => {}
        }
        match walk::child_key(b, &self.node, key, false) {
            Child::Schema(s) => Next::Fresh(Compiled::new(b, &s)),
            Child::Anything => Next::Anything,
            Child::Missing => Next::Missing,
        }
    }

    /// What an item of a list at this node leads to, as [`walk::child_index`] finds it.
    fn index(&self, b: &Bundle) -> Option<&Compiled> {
        let l = self
            .items
            .get_or_init(|| match walk::child_index(b, &self.node) {
                Child::Schema(s) => Link::Schema(link(b, &s)),
                Child::Anything => Link::Anything,
                Child::Missing => Link::Missing,
            });
        match l {
            Link::Schema(c) => Some(c),
            Link::Anything | Link::Missing => None,
        }
    }
}

/// The compiled node for a raw schema node; a bundled definition reached through `$ref` is
/// compiled once and shared by every place that refers to it (what [`walk::resolve`] would
/// find from `raw` is what it finds from the definition).
fn link(b: &Bundle, raw: &Value) -> Arc<Compiled> {
    let def = key_in(raw, "$ref")
        .and_then(Value::as_str)
        .and_then(walk::def_key)
        .and_then(|k| b.compiled_def(k));
    match def {
        Some(c) => c.clone(),
        None => Arc::new(Compiled::new(b, raw)),
    }
}

impl Bundle {
    /// The compiled node of a bundled definition, by `$defs` key.
    pub(super) fn compiled_def(&self, key: &str) -> Option<&Arc<Compiled>> {
        let i = self.def_index(key)?;
        Some(self.compiled[i].get_or_init(|| {
            let d = self.def_shared(key).expect("indexed definition");
            let plain = key_in(d, "$ref").is_none() && key_in(d, "allOf").is_none();
            Arc::new(if plain {
                Compiled::of(self, d.clone())
            } else {
                Compiled::new(self, d)
            })
        }))
    }
}

/// A kind's compiled root: the resolved root node of its schema.
pub(super) fn root(b: &Bundle, schema: &Value) -> Compiled {
    Compiled::new(b, schema)
}

/// [`walk::check`] with `enums` (a rendered object), on compiled nodes.
pub(super) fn check(b: &Bundle, c: &Compiled, value: &Value, out: &mut Vec<(FieldPath, String)>) {
    let root = FieldPath::root();
    check_at(b, c, value, &walk::Trail::Base(&root), out);
}

fn check_at(
    b: &Bundle,
    c: &Compiled,
    value: &Value,
    trail: &walk::Trail<'_>,
    out: &mut Vec<(FieldPath, String)>,
) {
    if value.is_null() || c.preserve {
        return;
    }
    match value {
        Value::Object(m) => {
            if !c.types.allows("object") && !c.additional_allowed {
                return walk::wrong_type(b, &c.node, value, trail, out);
            }
            let at_root = trail.is_root();
            for (k, v) in m {
                let t = walk::Trail::Key(trail, k);
                match c.key(b, k, at_root) {
                    Next::Schema(s) => check_at(b, s, v, &t, out),
                    Next::Fresh(s) => check_at(b, &s, v, &t, out),
                    Next::Anything => {}
                    Next::Missing => {
                        out.push((t.path(), format!("schema not found for field {k}")))
                    }
                }
            }
        }
        Value::Array(items) => {
            if !c.types.allows("array") {
                return walk::wrong_type(b, &c.node, value, trail, out);
            }
            if let Some(s) = c.index(b) {
                for (i, v) in items.iter().enumerate() {
                    check_at(b, s, v, &walk::Trail::Index(trail, i), out);
                }
            }
        }
        _ => walk::check_scalar(b, &c.node, &c.types, value, trail, true, out),
    }
}
