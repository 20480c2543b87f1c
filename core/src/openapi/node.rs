//! Schema nodes as the type checker sees them: one resolved node at a time, children on demand.
//!
//! Kubernetes schemas are large and reference each other (`$ref`), so types are not built eagerly:
//! a [`SchemaNode`] is a resolved node plus the bundle its references point into, and selecting a
//! field resolves just that child.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use super::walk::{self, Child};
use super::Bundle;

/// Inlining stops this deep; what is below becomes "any" (`x-kubernetes-preserve-unknown-fields`).
/// Built-in Kubernetes schemas are far shallower; only self-referencing CRD schemas get here.
const MAX_INLINE_DEPTH: usize = 32;

/// One resolved schema node.
#[derive(Debug, Clone)]
pub struct SchemaNode {
    bundle: Arc<Bundle>,
    node: Arc<Value>,
    /// The root of a kind: `metadata` is ObjectMeta, `apiVersion`/`kind` are strings.
    root: bool,
}

/// What a field or item of a node is.
#[derive(Debug, Clone)]
pub enum NodeChild {
    /// A schema describes it.
    Node(SchemaNode),
    /// Anything goes (preserve-unknown-fields, free-form object, `additionalProperties: true`).
    Anything,
    /// The schema has no such field.
    Missing,
}

impl SchemaNode {
    pub(super) fn new(bundle: Arc<Bundle>, node: &Value, root: bool) -> Self {
        let node = walk::resolve_shared(&bundle, node);
        Self { bundle, node, root }
    }

    fn child(&self, c: Child<'_>) -> NodeChild {
        match c {
            Child::Schema(s) => NodeChild::Node(Self::new(self.bundle.clone(), &s, false)),
            Child::Anything => NodeChild::Anything,
            Child::Missing => NodeChild::Missing,
        }
    }

    /// The node itself, `$ref`s and `allOf` at the top resolved.
    pub fn value(&self) -> &Value {
        &self.node
    }

    /// A named field.
    pub fn field(&self, key: &str) -> NodeChild {
        self.child(walk::child_key(&self.bundle, &self.node, key, self.root))
    }

    /// The items of an array.
    pub fn items(&self) -> NodeChild {
        self.child(walk::child_index(&self.bundle, &self.node))
    }

    /// The value schema of a map (`additionalProperties`), when the node has no named fields.
    pub fn map_values(&self) -> Option<NodeChild> {
        if self.node.get("properties").is_some() {
            return None;
        }
        match self.node.get("additionalProperties") {
            Some(Value::Bool(true)) => Some(NodeChild::Anything),
            Some(s @ Value::Object(_)) => {
                Some(NodeChild::Node(Self::new(self.bundle.clone(), s, false)))
            }
            _ => None,
        }
    }

    /// The types a value may have here, in kro's order; `"any"` accepts everything.
    pub fn expected_types(&self) -> Vec<String> {
        if self.root {
            return vec!["object".into()];
        }
        walk::expected_types(&self.bundle, &self.node)
    }

    /// Whether unknown fields are kept below this node.
    pub fn preserves_unknown(&self) -> bool {
        walk::flag(&self.node, walk::PRESERVE)
    }

    /// Whether the node is Kubernetes' int-or-string.
    pub fn int_or_string(&self) -> bool {
        walk::flag(&self.node, walk::INT_OR_STRING)
    }

    /// Whether the node declares named fields.
    pub fn has_fields(&self) -> bool {
        self.root || self.node.get("properties").is_some()
    }

    /// Whether the node is an object without declared fields or constraints.
    pub fn free_form(&self) -> bool {
        !self.root && walk::free_form(&self.node)
    }

    /// The node as a self-contained structural schema (no `$ref`, no `allOf`), as a CRD needs it.
    /// JSON-Schema-only keywords that CRDs reject are dropped.
    pub fn inline(&self) -> Value {
        inline(&self.bundle, &self.node, self.root, 0)
    }
}

fn inline(b: &Bundle, node: &Value, root: bool, depth: usize) -> Value {
    if depth > MAX_INLINE_DEPTH {
        return json!({"x-kubernetes-preserve-unknown-fields": true});
    }
    let node = walk::resolve(b, node, 0);
    let Some(obj) = node.as_object() else {
        return json!({});
    };
    let mut out = Map::new();
    for (k, v) in obj {
        match k.as_str() {
            "properties" => {
                let mut props = Map::new();
                for (pk, pv) in v.as_object().into_iter().flatten() {
                    let child = if root && pk == "metadata" {
                        json!({"type": "object"})
                    } else {
                        inline(b, pv, false, depth + 1)
                    };
                    props.insert(pk.clone(), child);
                }
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" if v.is_object() => {
                out.insert(k.clone(), inline(b, v, false, depth + 1));
            }
            // Structural schemas have no `additionalProperties: true`; this is how they say it.
            "additionalProperties" if v == &Value::Bool(true) => {
                out.insert(
                    "x-kubernetes-preserve-unknown-fields".into(),
                    Value::Bool(true),
                );
            }
            "oneOf" | "anyOf" => {
                // Kubernetes' own int-or-string and quantity use oneOf of two scalar types; a
                // structural schema expresses those with x-kubernetes-int-or-string, and
                // anything else becomes "any".
                let types: Vec<&str> = v
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|br| br.get("type").and_then(Value::as_str))
                    .collect();
                if types.contains(&"string")
                    && (types.contains(&"integer") || types.contains(&"number"))
                {
                    out.insert("x-kubernetes-int-or-string".into(), Value::Bool(true));
                } else {
                    out.insert(
                        "x-kubernetes-preserve-unknown-fields".into(),
                        Value::Bool(true),
                    );
                }
            }
            "type" => {
                // JSON Schema lists nullable types as ["string", "null"]; a CRD wants one type.
                let t = match v {
                    Value::Array(ts) => ts
                        .iter()
                        .filter_map(Value::as_str)
                        .find(|t| *t != "null")
                        .map(|t| Value::String(t.to_string())),
                    Value::String(_) => Some(v.clone()),
                    _ => None,
                };
                if let Some(t) = t {
                    out.insert(k.clone(), t);
                }
                if let Value::Array(ts) = v {
                    if ts.iter().any(|t| t == "null") {
                        out.insert("nullable".into(), Value::Bool(true));
                    }
                }
            }
            "description"
            | "format"
            | "enum"
            | "required"
            | "default"
            | "minimum"
            | "maximum"
            | "exclusiveMinimum"
            | "exclusiveMaximum"
            | "minLength"
            | "maxLength"
            | "pattern"
            | "minItems"
            | "maxItems"
            | "uniqueItems"
            | "minProperties"
            | "maxProperties"
            | "nullable"
            | "x-kubernetes-preserve-unknown-fields"
            | "x-kubernetes-int-or-string"
            | "x-kubernetes-embedded-resource"
            | "x-kubernetes-list-type"
            | "x-kubernetes-list-map-keys"
            | "x-kubernetes-map-type"
            | "x-kubernetes-validations" => {
                out.insert(k.clone(), v.clone());
            }
            // `$schema`, `$ref` leftovers, `x-kubernetes-group-version-kind`,
            // `x-kubernetes-patch-*` and the like have no place in a structural schema.
            _ => {}
        }
    }
    // A structural schema needs a type on every node; an object with fields says so.
    if !out.contains_key("type")
        && !out.contains_key("x-kubernetes-int-or-string")
        && !out.contains_key("x-kubernetes-preserve-unknown-fields")
    {
        if out.contains_key("properties") || out.contains_key("additionalProperties") {
            out.insert("type".into(), json!("object"));
        } else if out.contains_key("items") {
            out.insert("type".into(), json!("array"));
        } else {
            out.insert(
                "x-kubernetes-preserve-unknown-fields".into(),
                Value::Bool(true),
            );
        }
    }
    Value::Object(out)
}
