//! Walking a kind's schema along a field path or alongside a literal value.
//!
//! The rules follow kro's `pkg/graph/parser/parser.go`, which decides what a template may contain:
//! a key is looked up in `properties`, then in `additionalProperties`; `x-kubernetes-preserve-unknown-fields`
//! switches checking off below it; the expected types of a node come from
//! `x-kubernetes-int-or-string`, then `oneOf`/`anyOf`, then `type`. The bundled schemas are JSON
//! Schema 2020-12, so on top of kro's rules `"null"` in a type list (nullable) is ignored,
//! `$ref` and `allOf` are followed, and a node with no type and no properties (`{}`, e.g.
//! `apiextensions.v1.JSON`, or a bare `type: object` such as RawExtension) accepts anything.

use std::borrow::Cow;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use super::{Bundle, FieldRef, OBJECT_META};
use crate::fieldpath::{FieldPath, Segment};
// Schema nodes are small maps: scanning them beats hashing the keyword.
use crate::lookup::field as key_in;

/// Bound on `$ref`/`allOf` chains, so a cyclic CRD or corrupted data cannot loop forever.
const MAX_DEPTH: usize = 64;

pub(super) const PRESERVE: &str = "x-kubernetes-preserve-unknown-fields";
pub(super) const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// What a key or index leads to from a node.
pub(super) enum Child<'a> {
    Schema(Cow<'a, Value>),
    Anything,
    Missing,
}

pub(super) fn flag(node: &Value, name: &str) -> bool {
    key_in(node, name).and_then(Value::as_bool) == Some(true)
}

/// The `$defs` key a `$ref` names: what follows its last `#/$defs/`. Every visited node of every
/// checked object asks; the references are almost all `#/$defs/KEY`, which are answered without
/// setting up a substring search.
pub(super) fn def_key(r: &str) -> Option<&str> {
    const DEFS: &str = "#/$defs/";
    match r.strip_prefix(DEFS) {
        Some(k) if !k.contains('#') => Some(k),
        _ => r.rsplit_once(DEFS).map(|(_, k)| k),
    }
}

/// `node` with `$ref`s followed and `allOf` members merged in, so callers see one flat node.
pub(super) fn resolve<'a>(b: &'a Bundle, node: &'a Value, depth: usize) -> Cow<'a, Value> {
    let mut cur = node;
    for _ in 0..MAX_DEPTH {
        let Some(r) = key_in(cur, "$ref").and_then(Value::as_str) else {
            break;
        };
        match def_key(r).and_then(|k| b.def(k)) {
            Some(d) => cur = d,
            // An unresolvable reference gives no information; treat it as "anything" rather than
            // reporting fields the user cannot fix.
            None => return Cow::Owned(Value::Object(Map::new())),
        }
    }
    match key_in(cur, "allOf").and_then(Value::as_array) {
        Some(all) if depth < MAX_DEPTH => {
            let mut merged = cur.as_object().cloned().unwrap_or_default();
            merged.remove("allOf");
            for m in all {
                if let Value::Object(part) = resolve(b, m, depth + 1).into_owned() {
                    merge(&mut merged, part);
                }
            }
            Cow::Owned(Value::Object(merged))
        }
        _ => Cow::Borrowed(cur),
    }
}

/// [`resolve`], as a node to keep: a bundled definition reached through `$ref` (and not merged
/// with `allOf`) is shared rather than copied.
pub(super) fn resolve_shared(b: &Bundle, node: &Value) -> std::sync::Arc<Value> {
    let mut cur = node;
    let mut def = None;
    for _ in 0..MAX_DEPTH {
        let Some(r) = key_in(cur, "$ref").and_then(Value::as_str) else {
            break;
        };
        match def_key(r).and_then(|k| b.def_shared(k)) {
            Some(d) => {
                cur = d;
                def = Some(d);
            }
            None => return std::sync::Arc::new(Value::Object(Map::new())),
        }
    }
    match def {
        Some(d) if key_in(cur, "allOf").and_then(Value::as_array).is_none() => d.clone(),
        _ => std::sync::Arc::new(resolve(b, node, 0).into_owned()),
    }
}

/// Merge an `allOf` member into `into`: properties and required are unioned, other keywords
/// are taken only when `into` has none (the first member's wins).
fn merge(into: &mut Map<String, Value>, part: Map<String, Value>) {
    for (k, v) in part {
        match (k.as_str(), into.get_mut(&k), v) {
            ("properties", Some(Value::Object(have)), Value::Object(add)) => {
                for (pk, pv) in add {
                    have.entry(pk).or_insert(pv);
                }
            }
            ("required", Some(Value::Array(have)), Value::Array(add)) => {
                for r in add {
                    if !have.contains(&r) {
                        have.push(r);
                    }
                }
            }
            (_, Some(_), _) => {}
            (_, None, v) => {
                into.insert(k, v);
            }
        }
    }
}

/// The `type` of a node, without `"null"` (nullability is not a type for kro).
fn own_types(node: &Value) -> impl Iterator<Item = &str> {
    let (one, list) = match key_in(node, "type") {
        Some(Value::String(t)) if t != "null" => (Some(t.as_str()), None),
        Some(Value::Array(ts)) => (None, Some(ts)),
        _ => (None, None),
    };
    one.into_iter().chain(
        list.into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|t| *t != "null" && !t.is_empty()),
    )
}

fn has_type(node: &Value, t: &str) -> bool {
    own_types(node).any(|have| have == t)
}

fn branches(node: &Value) -> impl Iterator<Item = &Value> {
    ["oneOf", "anyOf"]
        .into_iter()
        .filter_map(|k| key_in(node, k).and_then(Value::as_array))
        .flatten()
}

/// Whether `additionalProperties` admits extra keys (`true` or a schema), as kro's `Allows`.
pub(super) fn additional_allowed(node: &Value) -> bool {
    matches!(
        key_in(node, "additionalProperties"),
        Some(Value::Bool(true)) | Some(Value::Object(_))
    )
}

/// Where [`expected_into`] puts the type names it finds.
pub(super) trait TypeNames {
    /// Add `t` unless it is there already.
    fn add(&mut self, t: &str);
    /// Add `t` even when it is there already (a node's own `type` list is printed as written).
    fn push(&mut self, t: &str);
    fn is_empty(&self) -> bool;
}

/// The names in order, each once: what messages print.
impl TypeNames for Vec<String> {
    fn add(&mut self, t: &str) {
        if !self.iter().any(|have| have == t) {
            Vec::push(self, t.to_string());
        }
    }
    fn push(&mut self, t: &str) {
        Vec::push(self, t.to_string());
    }
    fn is_empty(&self) -> bool {
        Vec::is_empty(self)
    }
}

/// The type names a value's kind is compared with, as bits, without allocating: the check of
/// every field of every object asks, and only a mismatch needs the names themselves.
#[derive(Default, Clone, Copy)]
pub(super) struct TypeMask {
    bits: u16,
    names: usize,
}

/// Every name [`check_at`] asks about; other names (a schema may say anything) match no value.
const MASK_NAMES: [&str; 9] = [
    "any", "object", "array", "string", "boolean", "bool", "number", "integer", "int",
];

impl TypeMask {
    fn bit(t: &str) -> u16 {
        MASK_NAMES
            .iter()
            .position(|n| *n == t)
            .map_or(0, |i| 1 << i)
    }

    /// Whether a value of type `t` is allowed: `t` is among the names, or `"any"` is.
    pub(super) fn allows(&self, t: &str) -> bool {
        self.bits & (Self::bit(t) | 1) != 0
    }
}

impl TypeNames for TypeMask {
    fn add(&mut self, t: &str) {
        self.bits |= Self::bit(t);
        self.names += 1;
    }
    fn push(&mut self, t: &str) {
        self.add(t);
    }
    fn is_empty(&self) -> bool {
        self.names == 0
    }
}

/// The types a literal may have at a node, in kro's order of precedence; `"any"` accepts all.
pub(super) fn expected_types(b: &Bundle, node: &Value) -> Vec<String> {
    let mut types = Vec::new();
    expected_into(b, node, &mut types);
    types
}

pub(super) fn expected_into(b: &Bundle, node: &Value, types: &mut impl TypeNames) {
    if flag(node, PRESERVE) {
        return types.add("any");
    }
    if flag(node, INT_OR_STRING) {
        types.add("string");
        return types.add("integer");
    }
    for key in ["oneOf", "anyOf"] {
        for s in key_in(node, key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let s = resolve(b, s, 0);
            // kro: a branch with structural constraints only (required, not) means an object.
            if key_in(&s, "required").is_some() || key_in(&s, "not").is_some() {
                types.add("object");
            }
            for t in own_types(&s) {
                types.add(t);
            }
        }
        if !types.is_empty() {
            return;
        }
    }
    for t in own_types(node) {
        types.push(t);
    }
    if !types.is_empty() {
        return;
    }
    if key_in(node, "properties").is_some() {
        return types.add("object");
    }
    // Untyped and unconstrained (`{}`), or only additionalProperties: kro's "any".
    types.add("any")
}

/// Whether a node is an object schema without declared fields: anything goes below it.
pub(super) fn free_form(node: &Value) -> bool {
    key_in(node, "properties").is_none()
        && key_in(node, "additionalProperties").is_none()
        && branches(node).next().is_none()
        && (own_types(node).next().is_none() || has_type(node, "object"))
}

pub(super) fn child_key<'a>(b: &'a Bundle, node: &'a Value, key: &str, at_root: bool) -> Child<'a> {
    if at_root {
        // Every kind's metadata is ObjectMeta (CRD schemas usually leave it as a bare object, and
        // the API server ignores what they say), and apiVersion/kind are always strings. Both
        // nodes are built once per process: every object checked asks for them.
        static META: OnceLock<Value> = OnceLock::new();
        static STRING: OnceLock<Value> = OnceLock::new();
        match key {
            "metadata" => {
                return Child::Schema(Cow::Borrowed(META.get_or_init(
                    || serde_json::json!({ "$ref": format!("#/$defs/{OBJECT_META}") }),
                )))
            }
            "apiVersion" | "kind" => {
                return Child::Schema(Cow::Borrowed(
                    STRING.get_or_init(|| serde_json::json!({"type": "string"})),
                ))
            }
            _ => {}
        }
    }
    if let Some(s) = key_in(node, "properties").and_then(|p| key_in(p, key)) {
        return Child::Schema(Cow::Borrowed(s));
    }
    if flag(node, PRESERVE) {
        return Child::Anything;
    }
    match key_in(node, "additionalProperties") {
        Some(Value::Bool(true)) => return Child::Anything,
        Some(s @ Value::Object(_)) => return Child::Schema(Cow::Borrowed(s)),
        _ => {}
    }
    for br in branches(node) {
        let br = resolve(b, br, 0);
        match child_key(b, &br, key, false) {
            Child::Schema(s) => return Child::Schema(Cow::Owned(s.into_owned())),
            Child::Anything if !free_form(&br) => return Child::Anything,
            _ => {}
        }
    }
    if free_form(node) {
        Child::Anything
    } else {
        Child::Missing
    }
}

pub(super) fn child_index<'a>(b: &'a Bundle, node: &'a Value) -> Child<'a> {
    if let Some(s @ Value::Object(_)) = key_in(node, "items") {
        return Child::Schema(Cow::Borrowed(s));
    }
    if flag(node, PRESERVE) {
        return Child::Anything;
    }
    for br in branches(node) {
        let br = resolve(b, br, 0);
        if let Child::Schema(s) = child_index(b, &br) {
            return Child::Schema(Cow::Owned(s.into_owned()));
        }
    }
    if has_type(node, "array") || (own_types(node).next().is_none() && free_form(node)) {
        Child::Anything
    } else {
        Child::Missing
    }
}

/// What `path[i..]` designates below `schema`, given to `f` without copying the node.
fn field_at<R>(
    b: &Bundle,
    schema: &Value,
    path: &[Segment],
    i: usize,
    f: impl FnOnce(FieldRef<'_>) -> R,
) -> R {
    let node = resolve(b, schema, 0);
    let Some(seg) = path.get(i) else {
        return f(FieldRef::Schema(&node));
    };
    let child = match seg {
        Segment::Key(k) => child_key(b, &node, k, i == 0),
        Segment::Index(_) => child_index(b, &node),
    };
    match child {
        Child::Schema(s) => field_at(b, &s, path, i + 1, f),
        Child::Anything => f(FieldRef::Anything),
        Child::Missing => f(FieldRef::Unknown { at: i }),
    }
}

/// See [`super::KindSchema::field_with`].
pub(super) fn field<R>(
    b: &Bundle,
    root: &Value,
    path: &FieldPath,
    f: impl FnOnce(FieldRef<'_>) -> R,
) -> R {
    field_at(b, root, &path.0, 0, f)
}

/// kro's name for the type of a literal (`got %s`): Go's `%T` for floats, hence `float64`.
fn got(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn mismatch(types: &[String], path: &FieldPath, v: &Value) -> String {
    format!(
        "expected {} type for path {path}, got {}",
        types.join(" or "),
        got(v)
    )
}

/// Where a walk is: the caller's path and the steps taken below it, on the stack. A
/// [`FieldPath`] is written out only for a finding; building one per visited field (a copy of
/// every segment above it) was most of the cost of checking an object that is fine.
#[derive(Clone, Copy)]
pub(super) enum Trail<'a> {
    Base(&'a FieldPath),
    Key(&'a Trail<'a>, &'a str),
    Index(&'a Trail<'a>, usize),
}

impl Trail<'_> {
    pub(super) fn is_root(&self) -> bool {
        matches!(self, Trail::Base(p) if p.is_empty())
    }

    pub(super) fn path(&self) -> FieldPath {
        let mut steps = Vec::new();
        let mut t = self;
        let base = loop {
            match t {
                Trail::Base(p) => break *p,
                Trail::Key(up, k) => {
                    steps.push(Segment::Key((*k).to_string()));
                    t = up;
                }
                Trail::Index(up, i) => {
                    steps.push(Segment::Index(*i));
                    t = up;
                }
            }
        };
        let mut p = base.clone();
        p.0.extend(steps.into_iter().rev());
        p
    }
}

/// See [`super::KindSchema::check_literal`]; with `enums`, also
/// [`super::KindSchema::check_rendered`]'s enum check, in the same walk.
pub(super) fn check(
    b: &Bundle,
    schema: &Value,
    value: &Value,
    path: &FieldPath,
    enums: bool,
    out: &mut Vec<(FieldPath, String)>,
) {
    check_at(b, schema, value, &Trail::Base(path), enums, out);
}

fn check_at(
    b: &Bundle,
    schema: &Value,
    value: &Value,
    trail: &Trail<'_>,
    enums: bool,
    out: &mut Vec<(FieldPath, String)>,
) {
    if value.is_null() {
        return;
    }
    // Expressions (standalone or interpolated) are typed by the CEL checks, not here. A rendered
    // object has none left: its strings holding `${` are checked against `enum` but not typed.
    if let (false, Value::String(s)) = (enums, value) {
        if crate::delimiter::has_open(s) {
            return;
        }
    }
    let node = resolve(b, schema, 0);
    if flag(&node, PRESERVE) {
        return;
    }
    let mut types = TypeMask::default();
    expected_into(b, &node, &mut types);
    match value {
        Value::Object(m) => {
            if !types.allows("object") && !additional_allowed(&node) {
                return wrong_type(b, &node, value, trail, out);
            }
            let at_root = trail.is_root();
            for (k, v) in m {
                let t = Trail::Key(trail, k);
                match child_key(b, &node, k, at_root) {
                    Child::Schema(s) => check_at(b, &s, v, &t, enums, out),
                    Child::Anything => {}
                    Child::Missing => {
                        out.push((t.path(), format!("schema not found for field {k}")))
                    }
                }
            }
        }
        Value::Array(items) => {
            if !types.allows("array") {
                return wrong_type(b, &node, value, trail, out);
            }
            if let Child::Schema(s) = child_index(b, &node) {
                for (i, v) in items.iter().enumerate() {
                    check_at(b, &s, v, &Trail::Index(trail, i), enums, out);
                }
            }
        }
        _ => check_scalar(b, &node, &types, value, trail, enums, out),
    }
}

/// The finding of a value whose kind `node` does not allow.
pub(super) fn wrong_type(
    b: &Bundle,
    node: &Value,
    value: &Value,
    trail: &Trail<'_>,
    out: &mut Vec<(FieldPath, String)>,
) {
    let path = trail.path();
    let msg = mismatch(&expected_types(b, node), &path, value);
    out.push((path, msg));
}

/// The check of a string, boolean or number at resolved `node`, whose types are `types`; with
/// `enums`, a string is also checked against the node's `enum`.
pub(super) fn check_scalar(
    b: &Bundle,
    node: &Value,
    types: &TypeMask,
    value: &Value,
    trail: &Trail<'_>,
    enums: bool,
    out: &mut Vec<(FieldPath, String)>,
) {
    let allows = |t: &str| types.allows(t);
    match value {
        Value::String(s) => {
            if enums {
                check_enum(node, s, trail, out);
            }
            // A rendered object's `${` string was checked against its enum only.
            let expression_left = enums && crate::delimiter::has_open(s);
            if !(allows("string") || expression_left) {
                wrong_type(b, node, value, trail, out);
            }
        }
        Value::Bool(_) => {
            if !allows("boolean") && !allows("bool") {
                wrong_type(b, node, value, trail, out);
            }
        }
        Value::Number(n) => {
            // Kubernetes integers are int64 (int32 fields are bounded by their format too, which
            // the API server checks): a larger whole number cannot be decoded at all.
            let int = n.is_i64();
            let ok = allows("number") || (int && (allows("integer") || allows("int")));
            if !ok && n.is_u64() && (allows("integer") || allows("int")) {
                let path = trail.path();
                let msg = format!(
                    "{n} is out of range for an integer at {path}: integers are 64-bit \
                     signed, at most {}",
                    i64::MAX
                );
                out.push((path, msg));
            } else if !ok {
                wrong_type(b, node, value, trail, out);
            }
        }
        Value::Null | Value::Object(_) | Value::Array(_) => {}
    }
}

/// A string at a node that lists its allowed values (`imagePullPolicy`, `Service.spec.type`)
/// must be one of them: the API server rejects anything else.
fn check_enum(node: &Value, s: &str, trail: &Trail<'_>, out: &mut Vec<(FieldPath, String)>) {
    let Some(Value::Array(allowed)) = key_in(node, "enum") else {
        return;
    };
    if allowed.iter().any(|a| a.as_str() == Some(s)) {
        return;
    }
    let list: Vec<String> = allowed
        .iter()
        .filter_map(Value::as_str)
        .map(|a| format!("{a:?}"))
        .collect();
    out.push((
        trail.path(),
        format!("{s:?} is not one of the allowed values {}", list.join(", ")),
    ));
}

#[cfg(test)]
mod tests {
    /// `def_key` names the key after the last `#/$defs/`, as `rsplit_once` does, for the common
    /// `#/$defs/KEY` and for references with more than one marker or none.
    #[test]
    fn def_key_agrees_with_rsplit_once() {
        for r in [
            "#/$defs/io.k8s.api.core.v1.PodSpec",
            "#/$defs/a#/$defs/b",
            "#/$defs/a#b",
            "doc.json#/$defs/c",
            "#/$defs/",
            "#/definitions/x",
            "",
        ] {
            assert_eq!(
                super::def_key(r),
                r.rsplit_once("#/$defs/").map(|(_, k)| k),
                "{r:?}"
            );
        }
    }
}
