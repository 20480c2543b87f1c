//! SimpleSchema → OpenAPI v3 (Kubernetes structural schema), following kro's `transform.go`.
//!
//! Differences from kro are about reporting only: kro stops at the first error, this builder
//! reports every field's first error (and every broken type) in a stable order, with the
//! location in [`SchemaError::path`] instead of kro's `field x: ` / `building schema for T: `
//! wrappers. A field that refers to a custom type which itself failed is not reported again.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value};

use super::custom_types::order_types;
use super::markers::{apply_marker, parse_markers};
use super::path::{yaml_type_name, Path};
use super::typeexpr::{parse_type_string, split_field, TypeExpr};

/// An error building a schema.
///
/// `path` is where in the SimpleSchema it happened, as a kro field path relative to
/// `spec.schema` (`spec.ports`, `spec.ingress.host`, `types.Listener.port`); `message` is kro's
/// text (`unknown type: number`, `invalid marker key "foo": unknown marker: foo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    /// Location of the offending field, relative to `spec.schema`.
    pub path: String,
    /// kro's description of the problem.
    pub message: String,
}

impl std::fmt::Display for SchemaError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

impl std::error::Error for SchemaError {}

/// Convert a SimpleSchema `spec` (and the optional custom `types`) into the OpenAPI object
/// schema of the instance `spec`.
///
/// Custom types are inlined (no `$ref`), `required` lists are sorted, and an object gets
/// `default: {}` when it has no required fields and at least one child with a default, so that
/// nested defaults apply when the object is omitted (this includes the top-level `spec`).
/// Properties are written in key order and each schema's keywords in the order Kubernetes
/// serializes them, so equal inputs give byte-identical output.
///
/// A missing or `null` `spec` is an empty object. On failure every error found is returned,
/// custom types first, each group in field-name order.
///
/// ```
/// use serde_json::json;
/// let schema = kiln_core::schema::simple_to_openapi(
///     &json!({"name": "string | required=true", "replicas": "integer | default=1"}),
///     None,
/// )
/// .unwrap();
/// assert_eq!(schema["required"], json!(["name"]));
/// assert_eq!(schema["properties"]["replicas"]["default"], json!(1));
/// ```
pub fn simple_to_openapi(spec: &Value, types: Option<&Value>) -> Result<Value, Vec<SchemaError>> {
    let mut b = Builder::default();
    match types {
        None | Some(Value::Null) => {}
        Some(Value::Object(types)) => b.load_types(types),
        Some(other) => b.error(
            &Path::of(&["types"]),
            format!("unexpected type: {}", yaml_type_name(other)),
        ),
    }
    let spec_path = Path::of(&["spec"]);
    let empty = Map::new();
    let schema = match spec {
        Value::Null => b.build_object(&empty, &spec_path, 0),
        Value::Object(fields) => b.build_object(fields, &spec_path, 0),
        other => {
            b.error(
                &spec_path,
                format!("unexpected type: {}", yaml_type_name(other)),
            );
            None
        }
    };
    match schema {
        Some(schema) if b.errors.is_empty() => Ok(canonical(schema)),
        _ => Err(b.errors),
    }
}

/// Inline nesting guard for YAML maps: deeper input is rejected instead of exhausting the stack.
const MAX_OBJECT_DEPTH: usize = 128;

/// A built custom type: its schema, and whether an alias carried `required=true`.
#[derive(Debug, Clone)]
struct CustomType {
    schema: Map<String, Value>,
    required: bool,
}

/// Why a type could not be turned into a schema.
enum Unresolved {
    /// Report this message at the field.
    Error(String),
    /// The referenced custom type failed and has been reported already.
    Reported,
}

#[derive(Default)]
struct Builder {
    /// Every name in `types`; `None` until built, and for good when the type failed.
    custom: BTreeMap<String, Option<CustomType>>,
    errors: Vec<SchemaError>,
}

impl Builder {
    fn error(&mut self, path: &Path, message: String) {
        self.errors.push(SchemaError {
            path: path.to_string(),
            message,
        });
    }

    /// Parse every type, order them by dependency, and build them in that order.
    fn load_types(&mut self, types: &Map<String, Value>) {
        let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let mut broken: BTreeSet<String> = BTreeSet::new();
        let mut names: Vec<&String> = types.keys().collect();
        names.sort();
        for name in &names {
            let path = Path::of(&["types"]).key(name);
            let mut found = BTreeSet::new();
            if self.collect_deps(&types[name.as_str()], &path, &mut found, 0) {
                deps.insert((*name).clone(), found);
            } else {
                broken.insert((*name).clone());
                deps.insert((*name).clone(), BTreeSet::new());
            }
            self.custom.insert((*name).clone(), None);
        }

        let order = order_types(&deps);
        for e in order.errors {
            self.error(&Path::of(&["types"]).key(&e.type_name), e.message);
            broken.insert(e.type_name);
        }

        for name in order.order {
            if broken.contains(&name) {
                continue;
            }
            let path = Path::of(&["types"]).key(&name);
            let built = match &types[name.as_str()] {
                Value::String(field) => {
                    // An alias is built like a field of a throwaway parent; `required=true` on it
                    // makes every field of this type required in its own parent.
                    let mut required = Vec::new();
                    self.build_from_string(&name, field, &mut required, &path)
                        .map(|schema| CustomType {
                            schema,
                            required: !required.is_empty(),
                        })
                }
                Value::Object(fields) => {
                    self.build_object(fields, &path, 0)
                        .map(|schema| CustomType {
                            schema,
                            required: false,
                        })
                }
                _ => None, // reported while collecting dependencies
            };
            self.custom.insert(name, built);
        }
    }

    /// kro's parse pass over a type: the type strings of every field (markers are only read when
    /// building). Returns false when something did not parse; every such field is reported.
    fn collect_deps(
        &mut self,
        spec: &Value,
        path: &Path,
        out: &mut BTreeSet<String>,
        depth: usize,
    ) -> bool {
        match spec {
            Value::String(s) => match parse_type_string(s) {
                Ok(t) => {
                    t.deps(out);
                    true
                }
                Err(e) => {
                    self.error(path, e);
                    false
                }
            },
            Value::Object(fields) => {
                if depth >= MAX_OBJECT_DEPTH {
                    self.error(path, too_deep());
                    return false;
                }
                let mut ok = true;
                for name in sorted_keys(fields) {
                    ok &= self.collect_deps(&fields[name], &path.key(name), out, depth + 1);
                }
                ok
            }
            other => {
                self.error(path, format!("unexpected type: {}", yaml_type_name(other)));
                false
            }
        }
    }

    /// An object schema from a YAML map of fields (kro's `buildSchema`).
    fn build_object(
        &mut self,
        fields: &Map<String, Value>,
        path: &Path,
        depth: usize,
    ) -> Option<Map<String, Value>> {
        if depth >= MAX_OBJECT_DEPTH {
            self.error(path, too_deep());
            return None;
        }
        let mut properties = Map::new();
        let mut required: Vec<String> = Vec::new();
        let mut ok = true;
        let mut child_has_default = false;
        for name in sorted_keys(fields) {
            let field_path = path.key(name);
            let built = match &fields[name] {
                Value::String(s) => self.build_from_string(name, s, &mut required, &field_path),
                Value::Object(nested) => self.build_object(nested, &field_path, depth + 1),
                other => {
                    self.error(
                        &field_path,
                        format!("unexpected type: {}", yaml_type_name(other)),
                    );
                    None
                }
            };
            match built {
                Some(schema) => {
                    child_has_default |= schema.contains_key("default");
                    properties.insert(name.clone(), Value::Object(schema));
                }
                None => ok = false,
            }
        }
        if !ok {
            return None;
        }
        required.sort();
        required.dedup();

        let mut schema = Map::new();
        schema.insert("type".into(), Value::String("object".into()));
        if !properties.is_empty() {
            schema.insert("properties".into(), Value::Object(properties));
        }
        // `default: {}` with required fields would itself be invalid, so kro only adds it to
        // objects without them.
        if required.is_empty() && child_has_default {
            schema.insert("default".into(), Value::Object(Map::new()));
        }
        if !required.is_empty() {
            schema.insert(
                "required".into(),
                Value::Array(required.into_iter().map(Value::String).collect()),
            );
        }
        Some(schema)
    }

    /// A field given as `TYPE | MARKERS` (kro's `buildFieldFromString`).
    fn build_from_string(
        &mut self,
        name: &str,
        field: &str,
        parent_required: &mut Vec<String>,
        path: &Path,
    ) -> Option<Map<String, Value>> {
        let ty = match parse_type_string(field) {
            Ok(t) => t,
            Err(e) => {
                self.error(path, e);
                return None;
            }
        };
        let markers = match split_field(field).1.map(parse_markers).transpose() {
            Ok(m) => m.unwrap_or_default(),
            Err(e) => {
                self.error(path, e);
                return None;
            }
        };
        let mut schema = match self.type_schema(&ty) {
            Ok(s) => s,
            Err(Unresolved::Error(e)) => {
                self.error(path, e);
                return None;
            }
            Err(Unresolved::Reported) => return None,
        };
        if let TypeExpr::Custom(type_name) = &ty {
            if matches!(self.custom.get(type_name), Some(Some(t)) if t.required) {
                parent_required.push(name.to_string());
            }
        }
        for marker in &markers {
            if let Err(e) = apply_marker(&mut schema, marker, name, parent_required) {
                self.error(path, e);
                return None;
            }
        }
        Some(schema)
    }

    /// The schema of a parsed type, with custom types inlined.
    fn type_schema(&self, ty: &TypeExpr) -> Result<Map<String, Value>, Unresolved> {
        let mut schema = Map::new();
        match ty {
            TypeExpr::Atomic(t) => {
                schema.insert("type".into(), Value::String((*t).into()));
            }
            TypeExpr::Object => {
                schema.insert("type".into(), Value::String("object".into()));
                schema.insert(
                    "x-kubernetes-preserve-unknown-fields".into(),
                    Value::Bool(true),
                );
            }
            TypeExpr::Slice(elem) => {
                schema.insert("type".into(), Value::String("array".into()));
                schema.insert("items".into(), Value::Object(self.type_schema(elem)?));
            }
            TypeExpr::Map(value) => {
                schema.insert("type".into(), Value::String("object".into()));
                schema.insert(
                    "additionalProperties".into(),
                    Value::Object(self.type_schema(value)?),
                );
            }
            TypeExpr::Custom(name) => {
                return match self.custom.get(name) {
                    Some(Some(t)) => Ok(t.schema.clone()),
                    Some(None) => Err(Unresolved::Reported),
                    None => Err(Unresolved::Error(format!("unknown type: {name}"))),
                }
            }
        }
        Ok(schema)
    }
}

fn too_deep() -> String {
    format!("object nesting too deep (max {MAX_OBJECT_DEPTH})")
}

fn sorted_keys(map: &Map<String, Value>) -> Vec<&String> {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    keys
}

/// Keyword order of Kubernetes' `JSONSchemaProps` when serialized; unknown keys go last.
const KEYWORD_ORDER: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    "patternProperties",
    "dependencies",
    "additionalItems",
    "definitions",
    "externalDocs",
    "example",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Reorder keywords (recursively through properties, items and additionalProperties).
fn canonical(mut schema: Map<String, Value>) -> Value {
    let mut out = Map::new();
    for key in KEYWORD_ORDER {
        if let Some(v) = schema.remove(*key) {
            let v = match (*key, v) {
                ("items" | "additionalProperties", Value::Object(s)) => canonical(s),
                ("properties", Value::Object(props)) => Value::Object(
                    props
                        .into_iter()
                        .map(|(k, p)| match p {
                            Value::Object(s) => (k, canonical(s)),
                            other => (k, other),
                        })
                        .collect(),
                ),
                (_, v) => v,
            };
            out.insert((*key).to_string(), v);
        }
    }
    out.extend(schema);
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ok(spec: Value) -> Value {
        simple_to_openapi(&spec, None).unwrap()
    }

    fn ok_with(spec: Value, types: Value) -> Value {
        simple_to_openapi(&spec, Some(&types)).unwrap()
    }

    fn errs(spec: Value, types: Option<Value>) -> Vec<(String, String)> {
        simple_to_openapi(&spec, types.as_ref())
            .unwrap_err()
            .into_iter()
            .map(|e| (e.path, e.message))
            .collect()
    }

    fn one(path: &str, message: &str) -> Vec<(String, String)> {
        vec![(path.to_string(), message.to_string())]
    }

    #[test]
    fn atomic_types() {
        let s = ok(json!({"s": "string", "i": "integer", "b": "boolean", "f": "float"}));
        assert_eq!(
            s,
            json!({"type": "object", "properties": {
                "b": {"type": "boolean"}, "f": {"type": "number"},
                "i": {"type": "integer"}, "s": {"type": "string"}}})
        );
    }

    #[test]
    fn object_preserves_unknown_fields() {
        assert_eq!(
            ok(json!({"values": "object | required=true"})),
            json!({"type": "object", "required": ["values"], "properties": {
                "values": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
        );
    }

    #[test]
    fn arrays_and_maps_nest() {
        let s = ok(json!({
            "tags": "[]string",
            "matrix": "[][]integer",
            "env": "map[string]string",
            "nested": "map[string]map[string]float",
            "listOfMaps": "[]map[string]string",
            "free": "map[string]object",
        }));
        let p = &s["properties"];
        assert_eq!(
            p["tags"],
            json!({"type": "array", "items": {"type": "string"}})
        );
        assert_eq!(
            p["matrix"],
            json!({"type": "array", "items": {"type": "array", "items": {"type": "integer"}}})
        );
        assert_eq!(
            p["env"],
            json!({"type": "object", "additionalProperties": {"type": "string"}})
        );
        assert_eq!(
            p["nested"],
            json!({"type": "object", "additionalProperties":
                {"type": "object", "additionalProperties": {"type": "number"}}})
        );
        assert_eq!(
            p["listOfMaps"],
            json!({"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string"}}})
        );
        assert_eq!(
            p["free"],
            json!({"type": "object", "additionalProperties":
                {"type": "object", "x-kubernetes-preserve-unknown-fields": true}})
        );
    }

    #[test]
    fn required_is_sorted_at_every_level() {
        let s = ok(json!({
            "zebra": "string | required=true", "alpha": "string | required=true",
            "mike": "integer | required=true", "optional": "string",
            "config": {"zulu": "string | required=true", "alpha": "string | required=true"},
        }));
        assert_eq!(s["required"], json!(["alpha", "mike", "zebra"]));
        assert_eq!(
            s["properties"]["config"]["required"],
            json!(["alpha", "zulu"])
        );
        assert!(s.get("default").is_none());
    }

    #[test]
    fn output_is_in_kubernetes_keyword_order() {
        let s = ok(json!({"a": "integer | maximum=5 description=\"d\" default=1"}));
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(
            text,
            r#"{"type":"object","default":{},"properties":{"a":{"description":"d","type":"integer","default":1,"maximum":5}}}"#
        );
    }

    #[test]
    fn default_cascade_adds_empty_object_defaults() {
        let s = ok(json!({
            "name": "string",
            "ingress": {"enabled": "boolean | default=false", "host": "string | default=\"example.com\""},
        }));
        assert_eq!(s["default"], json!({}), "top-level spec gets default {{}}");
        assert_eq!(s["properties"]["ingress"]["default"], json!({}));
        // The cascade climbs through objects that only have defaulted descendants.
        let s = ok(json!({"a": {"b": {"c": "integer | default=1"}}}));
        assert_eq!(s["properties"]["a"]["default"], json!({}));
        assert_eq!(
            s["properties"]["a"]["properties"]["b"]["default"],
            json!({})
        );
        assert_eq!(s["default"], json!({}));
    }

    #[test]
    fn no_default_cascade_with_required_fields_or_without_child_defaults() {
        let s = ok(json!({
            "ingress": {"host": "string | required=true", "port": "integer | default=80"},
        }));
        assert!(s["properties"]["ingress"].get("default").is_none());
        assert!(s.get("default").is_none(), "no child of spec has a default");
        let s = ok(json!({"plain": {"a": "string"}}));
        assert!(s["properties"]["plain"].get("default").is_none());
        assert!(s.get("default").is_none());
        // A required field at the top stops spec's own default, not the nested one.
        let s = ok(json!({"n": "string | required=true", "o": {"x": "integer | default=1"}}));
        assert!(s.get("default").is_none());
        assert_eq!(s["properties"]["o"]["default"], json!({}));
    }

    #[test]
    fn all_markers_on_fields() {
        let s = ok(json!({
            "name": "string | required=true immutable=true description=\"My Name\" pattern=\"^[a-z]+$\" minLength=1 maxLength=10",
            "replicas": "integer | default=1 minimum=1 maximum=100 enum=\"1,2,100\"",
            "ports": "[]integer | uniqueItems=true minItems=1 maxItems=3",
            "check": "string | validation=\"self != 'x'\"",
        }));
        let p = &s["properties"];
        assert_eq!(
            p["name"],
            json!({"description": "My Name", "type": "string", "maxLength": 10, "minLength": 1,
                   "pattern": "^[a-z]+$",
                   "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "field is immutable"}]})
        );
        assert_eq!(
            p["replicas"],
            json!({"type": "integer", "default": 1, "maximum": 100, "minimum": 1, "enum": [1, 2, 100]})
        );
        assert_eq!(
            p["ports"],
            json!({"type": "array", "maxItems": 3, "minItems": 1, "items": {"type": "integer"},
                   "x-kubernetes-list-type": "set"})
        );
        assert!(p["ports"].get("uniqueItems").is_none());
        assert_eq!(
            p["check"]["x-kubernetes-validations"],
            json!([{"rule": "self != 'x'", "message": "validation failed"}])
        );
        assert_eq!(s["required"], json!(["name"]));
    }

    #[test]
    fn struct_custom_types_are_inlined() {
        let s = ok_with(
            json!({"listener": "Listener", "listeners": "[]Listener", "byName": "map[string]Listener"}),
            json!({"Listener": {"port": "integer | required=true", "host": "string"}}),
        );
        let listener = json!({"type": "object", "required": ["port"], "properties": {
            "host": {"type": "string"}, "port": {"type": "integer"}}});
        assert_eq!(s["properties"]["listener"], listener);
        assert_eq!(s["properties"]["listeners"]["items"], listener);
        assert_eq!(s["properties"]["byName"]["additionalProperties"], listener);
        assert!(!serde_json::to_string(&s).unwrap().contains("$ref"));
    }

    #[test]
    fn custom_types_can_use_each_other_and_markers_add_on_top() {
        let s = ok_with(
            json!({"server": "Server | description=\"main\""}),
            json!({
                "Server": {"listener": "Listener", "name": "string"},
                "Listener": {"port": "Port"},
                "Port": "integer | default=80 minimum=1",
            }),
        );
        let server = &s["properties"]["server"];
        assert_eq!(server["description"], "main");
        assert_eq!(
            server["properties"]["listener"]["properties"]["port"],
            json!({"type": "integer", "default": 80, "minimum": 1})
        );
        // Defaults inside the custom types cascade through them.
        assert_eq!(server["properties"]["listener"]["default"], json!({}));
        assert_eq!(server["default"], json!({}));
        assert_eq!(s["default"], json!({}));
    }

    #[test]
    fn alias_with_required_true_makes_its_fields_required() {
        let s = ok_with(
            json!({"b": "Name", "a": "Name | description=\"x\"", "c": "[]Name", "opt": "Other"}),
            json!({"Name": "string | required=true", "Other": "string"}),
        );
        // Only direct references are required; `[]Name` is an array, not the alias.
        assert_eq!(s["required"], json!(["a", "b"]));
        assert_eq!(
            s["properties"]["a"],
            json!({"description": "x", "type": "string"})
        );
        // Both the alias and an explicit marker: listed once.
        let s = ok_with(
            json!({"a": "Name | required=true"}),
            json!({"Name": "string | required=true"}),
        );
        assert_eq!(s["required"], json!(["a"]));
    }

    #[test]
    fn unknown_types_and_number() {
        assert_eq!(
            errs(json!({"price": "number"}), None),
            one("spec.price", "unknown type: number")
        );
        assert_eq!(
            errs(json!({"ingress": {"host": "Hostname"}}), None),
            one("spec.ingress.host", "unknown type: Hostname")
        );
        assert_eq!(
            errs(json!({"xs": "[]map[string]Missing"}), None),
            one("spec.xs", "unknown type: Missing")
        );
        // `number` works once it is defined as a custom type.
        let s = ok_with(json!({"price": "number"}), json!({"number": "float"}));
        assert_eq!(s["properties"]["price"], json!({"type": "number"}));
    }

    #[test]
    fn grammar_and_marker_errors_are_reported_per_field() {
        let e = errs(
            json!({
                "a": "[]",
                "b": "map[int]string",
                "c": "map[string]",
                "d": "",
                "e": "string | foo=bar",
                "f": "string | required",
                "g": "integer | default=abc",
                "h": 5,
                "i": null,
                "j": ["string"],
                "ok": "string",
            }),
            None,
        );
        assert_eq!(
            e,
            vec![
                ("spec.a".to_string(), "empty slice element type".to_string()),
                ("spec.b".to_string(), "map key must be string".to_string()),
                (
                    "spec.c".to_string(),
                    "map value type is required".to_string()
                ),
                ("spec.d".to_string(), "empty type".to_string()),
                (
                    "spec.e".to_string(),
                    "invalid marker key \"foo\": unknown marker: foo".to_string()
                ),
                (
                    "spec.f".to_string(),
                    "marker key 'required' without a value".to_string()
                ),
                (
                    "spec.g".to_string(),
                    "default value must be a valid integer, got: abc".to_string()
                ),
                ("spec.h".to_string(), "unexpected type: int".to_string()),
                ("spec.i".to_string(), "unexpected type: null".to_string()),
                (
                    "spec.j".to_string(),
                    "unexpected type: sequence".to_string()
                ),
            ]
        );
    }

    #[test]
    fn nesting_too_deep_is_reported_with_the_remainder() {
        let deep = format!("{}string", "[]".repeat(17));
        assert_eq!(
            errs(json!({"x": deep}), None),
            one("spec.x", "type nesting too deep (max 16): \"string\"")
        );
    }

    #[test]
    fn field_names_with_dots_use_brackets_in_paths() {
        assert_eq!(
            errs(json!({"labels": {"app.kubernetes.io/name": "nope"}}), None),
            one(
                r#"spec.labels["app.kubernetes.io/name"]"#,
                "unknown type: nope"
            )
        );
    }

    #[test]
    fn type_errors_have_type_paths_and_come_first() {
        let e = errs(
            json!({"z": "Bad", "y": "Missing"}),
            Some(json!({"Bad": {"port": "integer | foo=1"}, "Alias": "[]"})),
        );
        assert_eq!(
            e,
            vec![
                (
                    "types.Alias".to_string(),
                    "empty slice element type".to_string()
                ),
                (
                    "types.Bad.port".to_string(),
                    "invalid marker key \"foo\": unknown marker: foo".to_string()
                ),
                // `z` refers to the failed type Bad: not reported again.
                ("spec.y".to_string(), "unknown type: Missing".to_string()),
            ]
        );
    }

    #[test]
    fn unknown_type_inside_a_type_is_reported_at_its_field() {
        assert_eq!(
            errs(json!({}), Some(json!({"A": {"price": "number"}}))),
            one("types.A.price", "unknown type: number")
        );
    }

    #[test]
    fn cycles_are_reported_like_kro() {
        let e = errs(
            json!({"a": "A"}),
            Some(json!({"A": {"b": "B"}, "B": {"a": "[]A"}})),
        );
        assert_eq!(
            e,
            one(
                "types.B",
                "cyclic dependency in type B: graph contains a cycle: B -> A -> B"
            )
        );
        assert_eq!(
            errs(json!({}), Some(json!({"Node": {"next": "Node"}}))),
            one("types.Node", "self references are not allowed")
        );
    }

    #[test]
    fn non_map_inputs_do_not_panic() {
        assert_eq!(
            errs(json!("string"), None),
            one("spec", "unexpected type: string")
        );
        assert_eq!(
            errs(json!({}), Some(json!(["A"]))),
            one("types", "unexpected type: sequence")
        );
        assert_eq!(
            errs(json!({}), Some(json!({"A": 1.5}))),
            one("types.A", "unexpected type: float")
        );
        assert_eq!(
            simple_to_openapi(&json!(null), None),
            Ok(json!({"type": "object"}))
        );
        assert_eq!(
            simple_to_openapi(&json!({}), Some(&json!(null))),
            Ok(json!({"type": "object"}))
        );
    }

    #[test]
    fn deep_yaml_nesting_is_rejected_not_overflowed() {
        let mut v = json!("string");
        for _ in 0..200 {
            v = json!({ "n": v });
        }
        let e = simple_to_openapi(&v, None).unwrap_err();
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].message, "object nesting too deep (max 128)");
    }

    proptest::proptest! {
        /// Any field text, in the spec or as a type alias, yields a schema or errors: never a panic.
        #[test]
        fn arbitrary_field_strings_never_panic(
            field in r#"[a-zA-Z\[\]{}|="\\ .,0-9]{0,40}"#,
            alias in r#"[a-zA-Z\[\]{}|="\\ .,0-9]{0,40}"#,
        ) {
            let types = json!({"T": alias, "U": {"x": "T"}});
            match simple_to_openapi(&json!({"f": field, "g": "U"}), Some(&types)) {
                Ok(schema) => proptest::prop_assert_eq!(&schema["type"], "object"),
                Err(errors) => proptest::prop_assert!(!errors.is_empty()),
            }
        }
    }

    #[test]
    fn schema_error_displays_path_and_message() {
        let e = SchemaError {
            path: "spec.a".into(),
            message: "unknown type: x".into(),
        };
        assert_eq!(e.to_string(), "spec.a: unknown type: x");
    }
}
