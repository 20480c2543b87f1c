//! Validation of a value against a CRD's OpenAPI schema, as the API server validates a custom
//! resource after pruning and defaulting.
//!
//! A focused validator rather than a JSON Schema engine: it knows the Kubernetes extensions
//! (`x-kubernetes-preserve-unknown-fields`, `x-kubernetes-int-or-string`, list types, `nullable`)
//! and reports kro-style paths. Not evaluated: `x-kubernetes-validations` (CEL rules), `format`,
//! and `allOf`/`anyOf`/`oneOf`/`not`, none of which kro's SimpleSchema emits except CEL rules.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::path::{go_quote, Path, Seg};

/// One validation failure.
///
/// `path` is a kro-style field path from the validated value's root (`spec.replicas`,
/// `spec.ports[0].name`, `spec.labels["app.kubernetes.io/name"]`); `rule` is the failing keyword
/// (`required`, `type`, `enum`, `minimum`, `maximum`, `multipleOf`, `pattern`, `minLength`,
/// `maxLength`, `minItems`, `maxItems`, `uniqueItems`, `x-kubernetes-list-type`,
/// `minProperties`, `maxProperties`, `additionalProperties`, or `unknown field`); `message` is a
/// sentence naming the value and the rule (`spec.replicas: 50 is greater than the maximum of 20`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// Where the failing value is (or, for `required`, where it is missing).
    pub path: String,
    /// The schema keyword that failed.
    pub rule: String,
    /// Human-readable description, starting with the path.
    pub message: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Validate `value` against an OpenAPI `schema` the way the API server validates a custom
/// resource: types, `required`, `enum`, bounds, `pattern`, lengths, item counts, `items`,
/// `additionalProperties`, and set/map list uniqueness.
///
/// Fields the schema does not declare are pruned by the API server; here each one is a
/// violation with rule `unknown field` so the caller can choose its severity. In a whole
/// Kubernetes object (a root schema declaring `apiVersion` and `kind`, or an
/// `x-kubernetes-embedded-resource`), `apiVersion`, `kind` and `metadata` are always accepted and
/// `metadata`'s contents are not checked for unknown fields (the API server handles object
/// metadata itself). `null` properties that are not `nullable` count as absent, as the
/// API server prunes them. Results are sorted by path (indexes numerically), then rule.
///
/// ```
/// use serde_json::json;
/// let schema = json!({"type": "object", "properties": {
///     "spec": {"type": "object", "properties": {"replicas": {"type": "integer", "maximum": 20}}}}});
/// let v = kiln_core::schema::validate(&schema, &json!({"spec": {"replicas": 50}}));
/// assert_eq!(v[0].message, "spec.replicas: 50 is greater than the maximum of 20");
/// ```
pub fn validate(schema: &Value, value: &Value) -> Vec<Violation> {
    validate_at(schema, value, &[])
}

/// [`validate`] for a value that sits at `at` (keys from the root) in the object it belongs to:
/// paths in the violations start there, and it is not a root (so it is not taken for a whole
/// object). Validating `spec` at `["spec"]` against the spec schema is validating `{spec: …}`
/// against a root schema with that one property, without building the wrapper.
pub fn validate_at(schema: &Value, value: &Value, at: &[&str]) -> Vec<Violation> {
    let mut v = Validator::default();
    let start = Path::of(at);
    v.check(schema, value, &Trail::Start(&start), true);
    let mut found = v.found;
    found.sort_by(|a, b| (&a.0, &a.1.rule, &a.1.message).cmp(&(&b.0, &b.1.rule, &b.1.message)));
    found.into_iter().map(|(_, v)| v).collect()
}

/// Whether `s` matches the schema pattern; `Err` if the pattern is not a valid regex.
///
/// Compiled patterns are cached per thread across calls: every instance of a definition is
/// validated against the same few patterns, and compiling one costs far more than matching it.
fn pattern_matches(pattern: &str, s: &str) -> Result<bool, ()> {
    thread_local! {
        static CACHE: std::cell::RefCell<HashMap<String, Option<regex::Regex>>> =
            std::cell::RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        // Patterns come from definitions, so there are few; the bound only keeps a hostile input
        // with many distinct patterns from holding them all.
        if cache.len() >= 4096 && !cache.contains_key(pattern) {
            cache.clear();
        }
        let re = cache
            .entry(pattern.to_string())
            .or_insert_with(|| regex::Regex::new(pattern).ok());
        re.as_ref().map(|re| re.is_match(s)).ok_or(())
    })
}

#[derive(Default)]
struct Validator {
    found: Vec<(Path, Violation)>,
}

/// Longest rendering of a value inside a message.
const PREVIEW_CHARS: usize = 64;

fn preview(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() > PREVIEW_CHARS {
        let cut: String = text.chars().take(PREVIEW_CHARS).collect();
        format!("{cut}…")
    } else {
        text
    }
}

fn shown_path(p: &Path) -> String {
    if p.is_root() {
        "(root)".to_string()
    } else {
        p.to_string()
    }
}

fn nullable(schema: &Value) -> bool {
    schema.get("nullable").and_then(Value::as_bool) == Some(true)
}

/// An integer as Kubernetes has them: 64-bit signed. A larger whole number (JSON and YAML
/// have no bound) is not one: the API server cannot decode it, and CEL cannot hold it.
fn is_integer(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.is_i64())
}

/// A whole number that does not fit in 64 bits signed (`9223372036854775808`).
fn is_out_of_range_integer(v: &Value) -> bool {
    matches!(v, Value::Number(n) if n.is_u64() && !n.is_i64())
}

/// The message for a whole number that is too large to be an integer; `expected` names what the
/// schema asks for (`type integer`).
fn out_of_range(v: &Value, expected: &str) -> String {
    format!(
        "{} is out of range for {expected}: integers are 64-bit signed, at most {}",
        preview(v),
        i64::MAX
    )
}

fn type_matches(ty: &str, v: &Value) -> bool {
    match ty {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => is_integer(v),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        _ => true,
    }
}

/// A text form under which semantically equal JSON values are equal (key order ignored,
/// `1` and `1.0` equal), for `enum` and uniqueness checks.
fn canonical_key(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) if n.is_f64() && f.fract() == 0.0 && f.abs() < 9.0e15 => {
                format!("{}", f as i64)
            }
            _ => n.to_string(),
        },
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(canonical_key).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let parts: Vec<String> = entries
                .into_iter()
                .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), canonical_key(v)))
                .collect();
            format!("{{{}}}", parts.join(","))
        }
        other => other.to_string(),
    }
}

/// The path to the value being checked, as a chain of stack frames. It becomes a [`Path`] only
/// when something is reported: nearly every value is valid, and building a `Path` per value
/// cloned the parent's segments at every level.
#[derive(Clone, Copy)]
enum Trail<'a> {
    /// The start: the root, or the path the validated value sits at.
    Start(&'a Path),
    Key(&'a Trail<'a>, &'a str),
    Index(&'a Trail<'a>, usize),
}

impl<'a> Trail<'a> {
    fn key(&'a self, k: &'a str) -> Trail<'a> {
        Trail::Key(self, k)
    }

    fn index(&'a self, i: usize) -> Trail<'a> {
        Trail::Index(self, i)
    }

    fn is_root(&self) -> bool {
        matches!(self, Trail::Start(p) if p.is_root())
    }

    fn to_path(self) -> Path {
        let mut segs = Vec::new();
        let mut t = self;
        let start = loop {
            match t {
                Trail::Start(p) => break p,
                Trail::Key(parent, k) => {
                    segs.push(Seg::Key(k.to_string()));
                    t = *parent;
                }
                Trail::Index(parent, i) => {
                    segs.push(Seg::Index(i));
                    t = *parent;
                }
            }
        };
        let mut path = start.clone();
        path.0.extend(segs.into_iter().rev());
        path
    }
}

/// The keywords of one schema node, found in one pass over its entries: looking each keyword up
/// in the schema map, for every value validated, was most of the cost of validating an instance.
#[derive(Default)]
struct Keywords<'s> {
    ty: Option<&'s str>,
    nullable: bool,
    int_or_string: bool,
    enum_values: Option<&'s Vec<Value>>,
    minimum: Option<&'s Value>,
    maximum: Option<&'s Value>,
    exclusive_minimum: bool,
    exclusive_maximum: bool,
    multiple_of: Option<&'s Value>,
    min_length: Option<u64>,
    max_length: Option<u64>,
    pattern: Option<&'s str>,
    min_items: Option<u64>,
    max_items: Option<u64>,
    list_type: Option<&'s str>,
    list_map_keys: Option<&'s Vec<Value>>,
    unique_items: bool,
    items: Option<&'s Value>,
    min_properties: Option<u64>,
    max_properties: Option<u64>,
    properties: Option<&'s Map<String, Value>>,
    required: Option<&'s Vec<Value>>,
    preserve_unknown: bool,
    embedded_resource: bool,
    additional: Option<&'s Value>,
}

impl<'s> Keywords<'s> {
    fn of(schema: &'s Map<String, Value>) -> Self {
        let mut k = Keywords::default();
        let yes = |v: &Value| v.as_bool() == Some(true);
        for (key, v) in schema {
            match key.as_str() {
                "type" => k.ty = v.as_str(),
                "nullable" => k.nullable = yes(v),
                "x-kubernetes-int-or-string" => k.int_or_string = yes(v),
                "enum" => k.enum_values = v.as_array(),
                "minimum" => k.minimum = Some(v),
                "maximum" => k.maximum = Some(v),
                "exclusiveMinimum" => k.exclusive_minimum = yes(v),
                "exclusiveMaximum" => k.exclusive_maximum = yes(v),
                "multipleOf" => k.multiple_of = Some(v),
                "minLength" => k.min_length = v.as_u64(),
                "maxLength" => k.max_length = v.as_u64(),
                "pattern" => k.pattern = v.as_str(),
                "minItems" => k.min_items = v.as_u64(),
                "maxItems" => k.max_items = v.as_u64(),
                "x-kubernetes-list-type" => k.list_type = v.as_str(),
                "x-kubernetes-list-map-keys" => k.list_map_keys = v.as_array(),
                "uniqueItems" => k.unique_items = yes(v),
                "items" => k.items = Some(v),
                "minProperties" => k.min_properties = v.as_u64(),
                "maxProperties" => k.max_properties = v.as_u64(),
                "properties" => k.properties = v.as_object(),
                "required" => k.required = v.as_array(),
                "x-kubernetes-preserve-unknown-fields" => k.preserve_unknown = yes(v),
                "x-kubernetes-embedded-resource" => k.embedded_resource = yes(v),
                "additionalProperties" => k.additional = Some(v),
                _ => {}
            }
        }
        k
    }
}

impl Validator {
    fn report(&mut self, path: &Trail<'_>, rule: &str, message: String) {
        let path = path.to_path();
        self.found.push((
            path.clone(),
            Violation {
                path: path.to_string(),
                rule: rule.to_string(),
                message: format!("{}: {message}", shown_path(&path)),
            },
        ));
    }

    /// `report_unknown` is false inside root `metadata`, whose fields the API server owns.
    fn check(&mut self, schema: &Value, value: &Value, path: &Trail<'_>, report_unknown: bool) {
        let Some(schema) = schema.as_object() else {
            return;
        };
        let kw = Keywords::of(schema);
        if value.is_null() {
            if !kw.nullable {
                if let Some(ty) = kw.ty {
                    self.report(path, "type", format!("null is not of type {ty}"));
                }
            }
            return;
        }
        if kw.int_or_string {
            if !(is_integer(value) || value.is_string()) {
                let msg = if is_out_of_range_integer(value) {
                    out_of_range(value, "an integer or a string")
                } else {
                    format!("{} is not an integer or a string", preview(value))
                };
                self.report(path, "type", msg);
                return;
            }
        } else if let Some(ty) = kw.ty {
            if !type_matches(ty, value) {
                let msg = if ty == "integer" && is_out_of_range_integer(value) {
                    out_of_range(value, "type integer")
                } else {
                    format!("{} is not of type {ty}", preview(value))
                };
                self.report(path, "type", msg);
                return;
            }
        }
        if let Some(allowed) = kw.enum_values {
            // Equal values are equal canonically too; the canonical text is only needed to
            // accept `1.0` for `1` or a map with its keys in another order.
            let found = allowed.iter().any(|a| a == value) || {
                let key = canonical_key(value);
                allowed.iter().any(|a| canonical_key(a) == key)
            };
            if !found {
                let list: Vec<String> = allowed.iter().map(preview).collect();
                self.report(
                    path,
                    "enum",
                    format!(
                        "{} is not one of the allowed values {}",
                        preview(value),
                        list.join(", ")
                    ),
                );
            }
        }
        match value {
            Value::Number(n) => self.check_number(&kw, n, value, path),
            Value::String(s) => self.check_string(&kw, s, path),
            Value::Array(items) => self.check_array(&kw, items, path),
            Value::Object(map) => self.check_object(&kw, map, path, report_unknown),
            _ => {}
        }
    }

    fn check_number(
        &mut self,
        kw: &Keywords<'_>,
        n: &serde_json::Number,
        value: &Value,
        path: &Trail<'_>,
    ) {
        let Some(x) = n.as_f64() else { return };
        if let Some((min, b)) = kw.minimum.and_then(|b| Some((b.as_f64()?, b))) {
            let bound = || preview(b);
            if kw.exclusive_minimum && x <= min {
                self.report(
                    path,
                    "minimum",
                    format!(
                        "{} is less than or equal to the exclusive minimum of {}",
                        preview(value),
                        bound()
                    ),
                );
            } else if x < min {
                self.report(
                    path,
                    "minimum",
                    format!("{} is less than the minimum of {}", preview(value), bound()),
                );
            }
        }
        if let Some((max, b)) = kw.maximum.and_then(|b| Some((b.as_f64()?, b))) {
            let bound = || preview(b);
            if kw.exclusive_maximum && x >= max {
                self.report(
                    path,
                    "maximum",
                    format!(
                        "{} is greater than or equal to the exclusive maximum of {}",
                        preview(value),
                        bound()
                    ),
                );
            } else if x > max {
                self.report(
                    path,
                    "maximum",
                    format!(
                        "{} is greater than the maximum of {}",
                        preview(value),
                        bound()
                    ),
                );
            }
        }
        if let Some((m, shown)) = kw.multiple_of.and_then(|b| Some((b.as_f64()?, b))) {
            if m > 0.0 && (x / m).fract() != 0.0 {
                self.report(
                    path,
                    "multipleOf",
                    format!("{} is not a multiple of {}", preview(value), preview(shown)),
                );
            }
        }
    }

    fn check_string(&mut self, kw: &Keywords<'_>, s: &str, path: &Trail<'_>) {
        // Kubernetes counts lengths in Unicode code points.
        let len = s.chars().count() as u64;
        if let Some(min) = kw.min_length {
            if len < min {
                self.report(
                    path,
                    "minLength",
                    format!(
                        "{} is shorter than the minimum length of {min}",
                        go_quote(s)
                    ),
                );
            }
        }
        if let Some(max) = kw.max_length {
            if len > max {
                self.report(
                    path,
                    "maxLength",
                    format!(
                        "{} is longer than the maximum length of {max}",
                        preview(&Value::String(s.to_string()))
                    ),
                );
            }
        }
        if let Some(pattern) = kw.pattern {
            match pattern_matches(pattern, s) {
                Ok(true) => {}
                Ok(false) => {
                    let msg = format!(
                        "{} does not match the pattern {pattern}",
                        preview(&Value::String(s.to_string()))
                    );
                    self.report(path, "pattern", msg);
                }
                Err(()) => {
                    let msg = format!("the schema's pattern {pattern} is not a valid regex");
                    self.report(path, "pattern", msg);
                }
            }
        }
    }

    fn check_array(&mut self, kw: &Keywords<'_>, items: &[Value], path: &Trail<'_>) {
        let n = items.len() as u64;
        if let Some(min) = kw.min_items {
            if n < min {
                self.report(
                    path,
                    "minItems",
                    format!("{n} items are fewer than the minimum of {min}"),
                );
            }
        }
        if let Some(max) = kw.max_items {
            if n > max {
                self.report(
                    path,
                    "maxItems",
                    format!("{n} items are more than the maximum of {max}"),
                );
            }
        }
        let list_type = kw.list_type;
        if list_type == Some("set") || kw.unique_items {
            let rule = if list_type == Some("set") {
                "x-kubernetes-list-type"
            } else {
                "uniqueItems"
            };
            let mut seen: HashMap<String, usize> = HashMap::new();
            for (i, item) in items.iter().enumerate() {
                match seen.entry(canonical_key(item)) {
                    Entry::Occupied(first) => {
                        let msg = format!(
                            "duplicate value {} (same as item {}); the list must hold unique values",
                            preview(item),
                            first.get()
                        );
                        self.report(&path.index(i), rule, msg);
                    }
                    Entry::Vacant(slot) => {
                        slot.insert(i);
                    }
                }
            }
        }
        if list_type == Some("map") {
            let keys: Vec<&str> = kw
                .list_map_keys
                .map(|ks| ks.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if !keys.is_empty() {
                let mut seen: HashMap<String, usize> = HashMap::new();
                for (i, item) in items.iter().enumerate() {
                    let Value::Object(obj) = item else { continue };
                    let mut key = Map::new();
                    for k in &keys {
                        key.insert(
                            (*k).to_string(),
                            obj.get(*k).cloned().unwrap_or(Value::Null),
                        );
                    }
                    let key = Value::Object(key);
                    match seen.entry(canonical_key(&key)) {
                        Entry::Occupied(first) => {
                            let msg = format!(
                                "duplicate entry for key {} (same as item {}); list entries must have unique keys",
                                preview(&key),
                                first.get()
                            );
                            self.report(&path.index(i), "x-kubernetes-list-type", msg);
                        }
                        Entry::Vacant(slot) => {
                            slot.insert(i);
                        }
                    }
                }
            }
        }
        if let Some(item_schema) = kw.items {
            for (i, item) in items.iter().enumerate() {
                self.check(item_schema, item, &path.index(i), true);
            }
        }
    }

    fn check_object(
        &mut self,
        kw: &Keywords<'_>,
        map: &Map<String, Value>,
        path: &Trail<'_>,
        report_unknown: bool,
    ) {
        if kw.min_properties.is_some() || kw.max_properties.is_some() {
            let present = map.iter().filter(|(_, v)| !v.is_null()).count() as u64;
            if let Some(min) = kw.min_properties {
                if present < min {
                    self.report(
                        path,
                        "minProperties",
                        format!("{present} properties are fewer than the minimum of {min}"),
                    );
                }
            }
            if let Some(max) = kw.max_properties {
                if present > max {
                    self.report(
                        path,
                        "maxProperties",
                        format!("{present} properties are more than the maximum of {max}"),
                    );
                }
            }
        }

        let empty = Map::new();
        let props = kw.properties.unwrap_or(&empty);
        if let Some(required) = kw.required {
            for name in required.iter().filter_map(Value::as_str) {
                let missing = match map.get(name) {
                    None => true,
                    Some(v) => v.is_null() && !props.get(name).is_some_and(nullable),
                };
                if missing {
                    self.report(
                        &path.key(name),
                        "required",
                        format!("required field {} is missing", go_quote(name)),
                    );
                }
            }
        }

        let preserve = kw.preserve_unknown;
        // The API server handles apiVersion/kind/metadata of whole objects itself. A root counts
        // as a whole object only if it declares apiVersion and kind, so validating a bare spec
        // still reports an undeclared `spec.kind`.
        let object_root = kw.embedded_resource
            || (path.is_root() && props.contains_key("apiVersion") && props.contains_key("kind"));
        let additional = kw.additional;
        for (k, v) in map {
            let child = path.key(k);
            let meta = object_root && matches!(k.as_str(), "apiVersion" | "kind" | "metadata");
            let child_unknown = report_unknown && !(object_root && k == "metadata");
            if let Some(prop) = props.get(k) {
                if v.is_null() && !nullable(prop) {
                    continue; // pruned by the API server
                }
                self.check(prop, v, &child, child_unknown);
                continue;
            }
            match additional {
                Some(s @ Value::Object(_)) => {
                    // A null map value is pruned like a null property, unless it is nullable.
                    if !v.is_null() || nullable(s) {
                        self.check(s, v, &child, child_unknown);
                    }
                }
                Some(Value::Bool(false)) if !meta => self.report(
                    &child,
                    "additionalProperties",
                    format!(
                        "field {} is not allowed (additionalProperties is false)",
                        go_quote(k)
                    ),
                ),
                Some(_) => {}
                None => {
                    if report_unknown && !preserve && !meta {
                        self.report(
                            &child,
                            "unknown field",
                            format!(
                                "unknown field {} is not in the schema (the API server would prune it)",
                                go_quote(k)
                            ),
                        );
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::schema::{apply_defaults, simple_to_openapi};
    use serde_json::json;

    /// The instance schema shape kro generates: spec under a root object.
    fn instance_schema(simple: Value, types: Option<Value>) -> Value {
        let spec = simple_to_openapi(&simple, types.as_ref()).unwrap();
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"type": "object"}, "spec": spec}})
    }

    fn run(simple: Value, spec: Value) -> Vec<(String, String, String)> {
        let schema = instance_schema(simple, None);
        validate(&schema, &json!({"spec": spec}))
            .into_iter()
            .map(|v| (v.path, v.rule, v.message))
            .collect()
    }

    fn one(path: &str, rule: &str, message: &str) -> Vec<(String, String, String)> {
        vec![(path.to_string(), rule.to_string(), message.to_string())]
    }

    #[test]
    fn valid_values_pass() {
        let v = run(
            json!({"name": "string | required=true", "replicas": "integer | minimum=1 maximum=3",
                   "ratio": "float", "on": "boolean", "tags": "[]string", "env": "map[string]string",
                   "free": "object"}),
            json!({"name": "a", "replicas": 2, "ratio": 1, "on": true, "tags": ["x"],
                   "env": {"A": "1"}, "free": {"anything": [1, {"x": null}]}}),
        );
        assert!(v.is_empty(), "{v:?}");
    }

    #[test]
    fn required() {
        assert_eq!(
            run(json!({"name": "string | required=true"}), json!({})),
            one(
                "spec.name",
                "required",
                "spec.name: required field \"name\" is missing"
            )
        );
        // A null non-nullable value is pruned, so it is missing too.
        assert_eq!(
            run(
                json!({"name": "string | required=true"}),
                json!({"name": null})
            )
            .len(),
            1
        );
    }

    #[test]
    fn integers_beyond_int64_are_out_of_range() {
        assert!(run(json!({"n": "integer"}), json!({"n": i64::MAX})).is_empty());
        assert!(run(json!({"n": "integer"}), json!({"n": i64::MIN})).is_empty());
        assert_eq!(
            run(
                json!({"n": "integer"}),
                json!({"n": 9_223_372_036_854_775_808u64})
            ),
            one(
                "spec.n",
                "type",
                "spec.n: 9223372036854775808 is out of range for type integer: integers are \
                 64-bit signed, at most 9223372036854775807"
            )
        );
    }

    #[test]
    fn types() {
        assert_eq!(
            run(json!({"replicas": "integer"}), json!({"replicas": "3"})),
            one(
                "spec.replicas",
                "type",
                "spec.replicas: \"3\" is not of type integer"
            )
        );
        assert_eq!(
            run(json!({"replicas": "integer"}), json!({"replicas": 3.0})),
            one(
                "spec.replicas",
                "type",
                "spec.replicas: 3.0 is not of type integer"
            )
        );
        assert_eq!(
            run(json!({"on": "boolean"}), json!({"on": "true"}))[0].1,
            "type"
        );
        assert_eq!(
            run(json!({"ratio": "float"}), json!({"ratio": "x"}))[0].2,
            "spec.ratio: \"x\" is not of type number"
        );
        assert_eq!(
            run(json!({"tags": "[]string"}), json!({"tags": ["a", 1]})),
            one(
                "spec.tags[1]",
                "type",
                "spec.tags[1]: 1 is not of type string"
            )
        );
        assert_eq!(
            run(json!({"tags": "[]string"}), json!({"tags": ["a", null]})),
            one(
                "spec.tags[1]",
                "type",
                "spec.tags[1]: null is not of type string"
            )
        );
        assert_eq!(
            run(
                json!({"ingress": {"host": "string"}}),
                json!({"ingress": "x"})
            ),
            one(
                "spec.ingress",
                "type",
                "spec.ingress: \"x\" is not of type object"
            )
        );
    }

    #[test]
    fn int_or_string() {
        let schema =
            json!({"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": true}}});
        assert!(validate(&schema, &json!({"port": 80})).is_empty());
        assert!(validate(&schema, &json!({"port": "http"})).is_empty());
        let v = validate(&schema, &json!({"port": true}));
        assert_eq!(v[0].message, "port: true is not an integer or a string");
    }

    #[test]
    fn enum_rule() {
        assert_eq!(
            run(
                json!({"mode": "string | enum=\"a,b\""}),
                json!({"mode": "c"})
            ),
            one(
                "spec.mode",
                "enum",
                "spec.mode: \"c\" is not one of the allowed values \"a\", \"b\""
            )
        );
        assert!(run(json!({"n": "integer | enum=1,2"}), json!({"n": 2})).is_empty());
    }

    #[test]
    fn bounds() {
        assert_eq!(
            run(
                json!({"replicas": "integer | maximum=20"}),
                json!({"replicas": 50})
            ),
            one(
                "spec.replicas",
                "maximum",
                "spec.replicas: 50 is greater than the maximum of 20"
            )
        );
        assert_eq!(
            run(
                json!({"replicas": "integer | minimum=1"}),
                json!({"replicas": 0})
            ),
            one(
                "spec.replicas",
                "minimum",
                "spec.replicas: 0 is less than the minimum of 1"
            )
        );
        assert_eq!(
            run(json!({"r": "float | minimum=0.5"}), json!({"r": 0.25}))[0].2,
            "spec.r: 0.25 is less than the minimum of 0.5"
        );
        let schema =
            json!({"type": "integer", "minimum": 1, "exclusiveMinimum": true, "multipleOf": 2});
        let v = validate(&schema, &json!(1));
        assert_eq!(
            v.iter().map(|v| v.rule.as_str()).collect::<Vec<_>>(),
            vec!["minimum", "multipleOf"]
        );
    }

    #[test]
    fn pattern_and_lengths() {
        assert_eq!(
            run(
                json!({"name": "string | pattern=\"^[a-z]+$\""}),
                json!({"name": "ABC"})
            ),
            one(
                "spec.name",
                "pattern",
                "spec.name: \"ABC\" does not match the pattern ^[a-z]+$"
            )
        );
        assert_eq!(
            run(
                json!({"name": "string | minLength=3"}),
                json!({"name": "ab"})
            ),
            one(
                "spec.name",
                "minLength",
                "spec.name: \"ab\" is shorter than the minimum length of 3"
            )
        );
        assert_eq!(
            run(
                json!({"name": "string | maxLength=2"}),
                json!({"name": "abc"})
            ),
            one(
                "spec.name",
                "maxLength",
                "spec.name: \"abc\" is longer than the maximum length of 2"
            )
        );
        // Lengths count characters, not bytes.
        assert!(run(
            json!({"name": "string | maxLength=2"}),
            json!({"name": "éé"})
        )
        .is_empty());
    }

    #[test]
    fn item_counts() {
        assert_eq!(
            run(json!({"xs": "[]string | minItems=1"}), json!({"xs": []})),
            one(
                "spec.xs",
                "minItems",
                "spec.xs: 0 items are fewer than the minimum of 1"
            )
        );
        assert_eq!(
            run(
                json!({"xs": "[]string | maxItems=1"}),
                json!({"xs": ["a", "b"]})
            ),
            one(
                "spec.xs",
                "maxItems",
                "spec.xs: 2 items are more than the maximum of 1"
            )
        );
    }

    #[test]
    fn set_lists_reject_duplicates() {
        assert_eq!(
            run(json!({"tags": "[]string | uniqueItems=true"}), json!({"tags": ["a", "b", "a"]})),
            one(
                "spec.tags[2]",
                "x-kubernetes-list-type",
                "spec.tags[2]: duplicate value \"a\" (same as item 0); the list must hold unique values"
            )
        );
        let schema = json!({"type": "array", "uniqueItems": true});
        let v = validate(&schema, &json!([{"a": 1, "b": 2}, {"b": 2, "a": 1.0}]));
        assert_eq!(
            (v[0].path.as_str(), v[0].rule.as_str()),
            ("[1]", "uniqueItems")
        );
    }

    #[test]
    fn map_lists_reject_duplicate_keys() {
        let schema = instance_schema(
            json!({"containers": "[]Container | listType=map listMapKey=name"}),
            Some(json!({"Container": {"name": "string | required=true", "image": "string"}})),
        );
        let v = validate(
            &schema,
            &json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b"}, {"name": "a", "image": "y"}]}}),
        );
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].path, "spec.containers[2]");
        assert_eq!(v[0].rule, "x-kubernetes-list-type");
        assert!(v[0].message.contains(r#"{"name":"a"}"#), "{}", v[0].message);
    }

    #[test]
    fn unknown_fields_are_reported_with_paths() {
        let v = run(
            json!({"name": "string", "labels": "map[string]string", "free": "object"}),
            json!({"name": "a", "nmae": "b", "labels": {"app.kubernetes.io/name": "x"}, "free": {"y": 1}}),
        );
        assert_eq!(
            v,
            one(
                "spec.nmae",
                "unknown field",
                "spec.nmae: unknown field \"nmae\" is not in the schema (the API server would prune it)"
            )
        );
        let schema = instance_schema(json!({}), None);
        let v = validate(
            &schema,
            &json!({"apiVersion": "v1", "metadata": {"name": "n", "labels": {}}, "extra": 1}),
        );
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].path, "extra");
    }

    #[test]
    fn a_bare_spec_gets_no_object_metadata_exemption() {
        let spec = simple_to_openapi(&json!({"metadata": {"a": "string"}}), None).unwrap();
        let v = validate(&spec, &json!({"kind": "x", "metadata": {"b": 1}}));
        let paths: Vec<&str> = v.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, vec!["kind", "metadata.b"]);
    }

    #[test]
    fn embedded_resources_accept_object_fields() {
        let schema = json!({"type": "object", "properties": {"template": {
            "type": "object", "x-kubernetes-embedded-resource": true,
            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}});
        let v = validate(
            &schema,
            &json!({"template": {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p"}, "spec": {"x": 1}, "other": 1}}),
        );
        let paths: Vec<&str> = v.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, vec!["template.other"]);
    }

    #[test]
    fn additional_properties_false() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false});
        let v = validate(&schema, &json!({"a": "x", "b": 1}));
        assert_eq!(
            (v[0].path.as_str(), v[0].rule.as_str()),
            ("b", "additionalProperties")
        );
    }

    #[test]
    fn paths_for_map_keys_with_dots_and_nested_arrays() {
        let v = run(
            json!({"labels": "map[string]integer"}),
            json!({"labels": {"app.kubernetes.io/name": "x"}}),
        );
        assert_eq!(v[0].0, r#"spec.labels["app.kubernetes.io/name"]"#);
        let schema = instance_schema(
            json!({"ports": "[]Port"}),
            Some(json!({"Port": {"name": "string | required=true", "port": "integer"}})),
        );
        let v = validate(
            &schema,
            &json!({"spec": {"ports": [{"name": "a"}, {"port": 1}]}}),
        );
        assert_eq!(
            (v[0].path.as_str(), v[0].rule.as_str()),
            ("spec.ports[1].name", "required")
        );
    }

    #[test]
    fn results_are_sorted_by_path_with_numeric_indexes() {
        let items: Vec<Value> = (0..12)
            .map(|i| if i % 5 == 0 { json!(1) } else { json!("s") })
            .collect();
        let v = validate(
            &json!({"type": "object", "properties": {"b": {"type": "string"},
                    "a": {"type": "array", "items": {"type": "string"}}}}),
            &json!({"b": 1, "a": items, "c": 1}),
        );
        let paths: Vec<&str> = v.iter().map(|v| v.path.as_str()).collect();
        assert_eq!(paths, vec!["a[0]", "a[5]", "a[10]", "b", "c"]);
    }

    #[test]
    fn root_type_mismatch_names_the_root() {
        let v = validate(&json!({"type": "object"}), &json!([1]));
        assert_eq!(v[0].message, "(root): [1] is not of type object");
        assert_eq!(v[0].path, "");
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = "x".repeat(200);
        let v = validate(&json!({"type": "string", "maxLength": 3}), &json!(long));
        assert!(v[0].message.len() < 150);
        assert!(v[0].message.contains('…'));
    }

    #[test]
    fn defaults_then_validation_like_the_api_server() {
        let simple =
            json!({"replicas": "integer | default=1 minimum=1", "name": "string | required=true"});
        let schema = simple_to_openapi(&simple, None).unwrap();
        let mut spec = json!({"name": "x"});
        apply_defaults(&schema, &mut spec);
        assert_eq!(spec, json!({"name": "x", "replicas": 1}));
        assert!(validate(&schema, &spec).is_empty());
    }

    /// Validating a spec where it sits is validating the object around it.
    #[test]
    fn validate_at_is_validate_of_the_wrapper() {
        let spec_schema = simple_to_openapi(
            &json!({"name": "string | required=true", "replicas": "integer | minimum=1 maximum=5",
                    "ports": "[]integer", "labels": "map[string]string",
                    "kind": "string | enum=a,b"}),
            None,
        )
        .unwrap();
        let wrapper = json!({"type": "object", "properties": {"spec": spec_schema.clone()}});
        for spec in [
            json!({"name": "x"}),
            json!({}),
            json!({"replicas": 9, "ports": ["p", 2], "labels": {"a.b": 1}, "kind": "c", "extra": [1]}),
            json!({"name": null, "replicas": 0.5, "apiVersion": "v1"}),
        ] {
            assert_eq!(
                validate_at(&spec_schema, &spec, &["spec"]),
                validate(&wrapper, &json!({ "spec": spec })),
                "{spec}"
            );
        }
        assert!(!validate_at(&spec_schema, &json!({}), &["spec"]).is_empty());
    }
}
