//! The shorthand schema of ComponentTypeDefinitions and Addons → JSON Schema.
//!
//! A schema section is a field map: `name: "type | marker=value …"`, or a nested map for an inline
//! object. Types are `string`, `integer`, `number`, `boolean`, `[]T` (also `array<T>`), `map<T>`
//! (also `map[string]T`), or a name from the `types:` section. The generated schema is a Kubernetes
//! structural schema (`nullable: true` rather than a type list), so the shared
//! [`crate::schema::apply_defaults`] and [`crate::schema::validate`] apply to it unchanged.
//!
//! Required rule (OpenChoreo's first implementation, which both upstream versions agree on for
//! fields without a default): a field is required unless it has a `default`, is marked
//! `required=false`, or is an object none of whose fields is required. Such an object defaults to
//! `{}` so that its fields' defaults apply when it is omitted.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

use crate::fieldpath::FieldPath;
use crate::schema;

/// One problem in a schema section, located relative to the section's parent (`spec.schema`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// Where, e.g. `parameters.lifecycle.imagePullPolicy`.
    pub path: FieldPath,
    /// What is wrong.
    pub message: String,
}

/// The schemas of one definition.
#[derive(Debug, Clone, Default)]
pub(crate) struct Schemas {
    /// Parameters and envOverrides merged: what a Component's `parameters` are checked against.
    pub merged: Value,
    /// envOverrides alone: what an environment may override.
    pub env: Value,
    /// Top-level fields of envOverrides.
    pub env_keys: BTreeSet<String>,
    /// The parameters section alone (upstream `spec.parameters`), which an upstream render
    /// checks a Component's `parameters` against; `None` for shorthand schemas.
    pub params: Option<Value>,
    /// Whether an upstream definition has a `spec.parameters` / `spec.environmentConfigs`
    /// section: upstream treats the values of a missing section differently from those of an
    /// empty one (see `context::NoSection`). `false` for shorthand schemas.
    pub declares_params: bool,
    /// See `declares_params`.
    pub declares_env: bool,
    /// What every unit of this definition uses, derived from the above on first use.
    derived: std::sync::OnceLock<Derived>,
}

#[derive(Debug, Clone)]
struct Derived {
    env_optional: Value,
    defaults: crate::schema::DefaultsPlan,
}

/// Equal when the schemas are: the derived parts follow from them.
impl PartialEq for Schemas {
    fn eq(&self, other: &Self) -> bool {
        self.merged == other.merged && self.env == other.env && self.env_keys == other.env_keys
    }
}

impl Schemas {
    fn derived(&self) -> &Derived {
        self.derived.get_or_init(|| Derived {
            env_optional: without_required(&self.env),
            defaults: crate::schema::DefaultsPlan::new(&self.merged),
        })
    }

    /// `env` with no field required: what one environment's overrides are checked against.
    pub(crate) fn env_optional(&self) -> &Value {
        &self.derived().env_optional
    }

    /// The defaulting plan of `merged`.
    pub(crate) fn defaults(&self) -> &crate::schema::DefaultsPlan {
        &self.derived().defaults
    }
}

/// Build the schemas from a shorthand `spec.schema` section (`types`, `parameters`,
/// `envOverrides`). `None` or `null` gives empty schemas.
pub(crate) fn from_shorthand(section: Option<&Value>) -> Result<Schemas, Vec<SchemaError>> {
    let empty = Map::new();
    let sec = match section {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(m)) => m,
        Some(_) => {
            return Err(vec![err(
                FieldPath::root(),
                "schema must be a map with types, parameters and envOverrides",
            )])
        }
    };
    let mut errors = Vec::new();
    for key in sec.keys() {
        if !matches!(key.as_str(), "types" | "parameters" | "envOverrides") {
            errors.push(err(
                FieldPath::root().key(key),
                format!(
                    "unknown schema section {key:?}; expected types, parameters or envOverrides"
                ),
            ));
        }
    }
    let field_map = |key: &str, errors: &mut Vec<SchemaError>| -> Map<String, Value> {
        match sec.get(key) {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                errors.push(err(
                    FieldPath::root().key(key),
                    format!("{key} must be a map of field names to shorthand types"),
                ));
                Map::new()
            }
        }
    };
    let types = field_map("types", &mut errors);
    let params = field_map("parameters", &mut errors);
    let env = field_map("envOverrides", &mut errors);
    let mut b = Builder {
        types: &types,
        built: BTreeMap::new(),
        stack: Vec::new(),
        errors: Vec::new(),
    };
    for name in types.keys() {
        b.named_type(name, &FieldPath::root().key("types").key(name));
    }
    let mut merged_fields = params.clone();
    merge_field_maps(
        &mut merged_fields,
        &env,
        &FieldPath::root().key("envOverrides"),
        &mut errors,
    );
    // The env-only schema is built first so that errors in envOverrides are reported at their
    // own path; the merged build repeats the same checks and its duplicate errors are dropped.
    let env_schema = b.object(&env, &FieldPath::root().key("envOverrides"));
    let params_schema = b.object(&params, &FieldPath::root().key("parameters"));
    let merged = {
        let mut quiet = Builder {
            types: &types,
            built: b.built.clone(),
            stack: Vec::new(),
            errors: Vec::new(),
        };
        quiet.object(&merged_fields, &FieldPath::root().key("parameters"))
    };
    let _ = params_schema;
    errors.extend(b.errors);
    if !errors.is_empty() {
        errors.sort_by(|a, b| {
            (a.path.to_string(), &a.message).cmp(&(b.path.to_string(), &b.message))
        });
        errors.dedup();
        return Err(errors);
    }
    Ok(Schemas {
        merged: strip_top_default(merged),
        env: strip_top_default(env_schema),
        env_keys: env.keys().cloned().collect(),
        params: None,
        declares_params: false,
        declares_env: false,
        derived: std::sync::OnceLock::new(),
    })
}

/// Build the schemas from upstream-style sections: `spec.parameters.openAPIV3Schema` and
/// `spec.environmentConfigs.openAPIV3Schema` (local `$defs`/`$ref` are inlined).
pub(crate) fn from_openapi(
    parameters: Option<&Value>,
    env: Option<&Value>,
) -> Result<Schemas, Vec<SchemaError>> {
    let mut errors = Vec::new();
    let mut section = |v: Option<&Value>, key: &str| -> Value {
        let Some(v) = v.filter(|v| !v.is_null()) else {
            return json!({"type": "object", "properties": {}});
        };
        let at = FieldPath::root().key(key).key("openAPIV3Schema");
        let Some(s) = v.get("openAPIV3Schema").filter(|s| s.is_object()) else {
            errors.push(err(
                FieldPath::root().key(key),
                format!("{key} must hold an openAPIV3Schema object"),
            ));
            return json!({});
        };
        let defs = s
            .get("$defs")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut out = s.clone();
        if let Some(o) = out.as_object_mut() {
            o.remove("$defs");
            o.remove("$schema");
        }
        if let Err(m) = inline_refs(&mut out, &defs, &mut Vec::new(), 0) {
            errors.push(err(at.clone(), m));
        }
        if out.get("type").and_then(Value::as_str).unwrap_or("object") != "object" {
            errors.push(err(
                at,
                "openAPIV3Schema must describe an object (type: object)",
            ));
        }
        out
    };
    let p = section(parameters, "parameters");
    let e = section(env, "environmentConfigs");
    if !errors.is_empty() {
        return Err(errors);
    }
    let env_keys: BTreeSet<String> = e
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let mut merged = p.clone();
    if let Some(m) = merged.as_object_mut() {
        m.insert("type".into(), json!("object"));
        let props = m
            .entry("properties")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .map(std::mem::take)
            .unwrap_or_default();
        let mut props = props;
        if let Some(ep) = e.get("properties").and_then(Value::as_object) {
            for (k, v) in ep {
                // Upstream keeps parameters and environmentConfigs apart, so a field may be
                // declared in both; the merged view (`kiln schema`, the proposal-era
                // `envOverrides`) keeps the environment's declaration.
                props.insert(k.clone(), v.clone());
            }
        }
        m.insert("properties".into(), Value::Object(props));
        let mut req: BTreeSet<String> = str_list(m.get("required"));
        req.extend(str_list(e.get("required")));
        if req.is_empty() {
            m.remove("required");
        } else {
            m.insert(
                "required".into(),
                json!(req.into_iter().collect::<Vec<_>>()),
            );
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Schemas {
        merged,
        env: e,
        env_keys,
        params: Some(p),
        declares_params: parameters.is_some_and(|v| !v.is_null()),
        declares_env: env.is_some_and(|v| !v.is_null()),
        derived: std::sync::OnceLock::new(),
    })
}

fn str_list(v: Option<&Value>) -> BTreeSet<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// Replace `{"$ref": "#/$defs/X"}` by a copy of `X`, refusing cycles and other references.
fn inline_refs(
    v: &mut Value,
    defs: &Map<String, Value>,
    stack: &mut Vec<String>,
    depth: usize,
) -> Result<(), String> {
    if depth > 64 {
        return Err("schema nests more than 64 levels deep".into());
    }
    match v {
        Value::Object(m) => {
            if let Some(r) = m.get("$ref").and_then(Value::as_str).map(str::to_string) {
                let name = r
                    .strip_prefix("#/$defs/")
                    .ok_or_else(|| format!("$ref {r:?} is not a local #/$defs/ reference"))?;
                if stack.iter().any(|s| s == name) {
                    return Err(format!("$ref cycle through {name:?}"));
                }
                let mut target = defs
                    .get(name)
                    .cloned()
                    .ok_or_else(|| format!("$ref {r:?} names no entry of $defs"))?;
                stack.push(name.to_string());
                inline_refs(&mut target, defs, stack, depth + 1)?;
                stack.pop();
                m.remove("$ref");
                // Sibling keywords (description, default) stay and win over the referenced ones.
                if let Value::Object(t) = target {
                    for (k, tv) in t {
                        m.entry(k).or_insert(tv);
                    }
                }
                return Ok(());
            }
            for (_, child) in m.iter_mut() {
                inline_refs(child, defs, stack, depth + 1)?;
            }
            Ok(())
        }
        Value::Array(a) => {
            for child in a {
                inline_refs(child, defs, stack, depth + 1)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// The top-level object needs no `default: {}`: parameters always start from `{}`.
fn strip_top_default(mut v: Value) -> Value {
    if let Some(m) = v.as_object_mut() {
        m.remove("default");
    }
    v
}

fn err(path: FieldPath, message: impl Into<String>) -> SchemaError {
    SchemaError {
        path,
        message: message.into(),
    }
}

/// Merge envOverrides' field map into parameters': nested inline objects merge, anything else
/// declared twice is an error (a field cannot be both static and overridable).
fn merge_field_maps(
    base: &mut Map<String, Value>,
    add: &Map<String, Value>,
    at: &FieldPath,
    errors: &mut Vec<SchemaError>,
) {
    for (k, v) in add {
        match (base.get_mut(k), v) {
            (None, _) => {
                base.insert(k.clone(), v.clone());
            }
            (Some(Value::Object(b)), Value::Object(a)) => {
                merge_field_maps(b, a, &at.key(k), errors)
            }
            (Some(_), _) => errors.push(err(
                at.key(k),
                format!("field {k:?} is declared in both parameters and envOverrides"),
            )),
        }
    }
}

struct Builder<'a> {
    types: &'a Map<String, Value>,
    /// Named types already built (`None` when building failed).
    built: BTreeMap<String, Option<Value>>,
    stack: Vec<String>,
    errors: Vec<SchemaError>,
}

/// Deepest accepted nesting of inline objects and type references.
const MAX_DEPTH: usize = 32;

impl Builder<'_> {
    fn error(&mut self, path: &FieldPath, message: impl Into<String>) {
        self.errors.push(err(path.clone(), message));
    }

    /// The schema of a named type, built once.
    fn named_type(&mut self, name: &str, at: &FieldPath) -> Option<Value> {
        if let Some(b) = self.built.get(name) {
            return b.clone();
        }
        if self.stack.iter().any(|s| s == name) {
            let mut cycle = self.stack.clone();
            cycle.push(name.to_string());
            self.error(at, format!("type cycle: {}", cycle.join(" -> ")));
            return None;
        }
        let def = self.types.get(name)?.clone();
        let path = FieldPath::root().key("types").key(name);
        self.stack.push(name.to_string());
        let out = match &def {
            Value::Object(fields) => Some(self.object(fields, &path)),
            Value::String(s) => self.field(s, &path).map(|(s, _)| s),
            _ => {
                self.error(
                    &path,
                    "a type must be a map of fields or a shorthand string",
                );
                None
            }
        };
        self.stack.pop();
        self.built.insert(name.to_string(), out.clone());
        out
    }

    /// An inline object (field map). Keys are processed in sorted order so output is stable.
    fn object(&mut self, fields: &Map<String, Value>, at: &FieldPath) -> Value {
        let mut props = Map::new();
        let mut required = BTreeSet::new();
        let mut explicit_default = None;
        let mut keys: Vec<&String> = fields.keys().collect();
        keys.sort();
        if at.0.len() > MAX_DEPTH {
            self.error(
                at,
                format!("schema nests more than {MAX_DEPTH} levels deep"),
            );
            return json!({"type": "object"});
        }
        for k in keys {
            let def = &fields[k];
            let p = at.key(k);
            if k == "$default" {
                if def.is_object() {
                    explicit_default = Some(def.clone());
                } else {
                    self.error(&p, "$default must be a map");
                }
                continue;
            }
            let built = match def {
                Value::String(s) => self.field(s, &p),
                Value::Object(m) => {
                    let o = self.object(m, &p);
                    let req = o.get("default").is_none();
                    Some((o, req))
                }
                Value::Null => {
                    self.error(&p, "field has no type; write e.g. `string` or a nested map");
                    None
                }
                other => {
                    self.error(
                        &p,
                        format!(
                            "field definition must be a shorthand string or a map, not {}",
                            type_word(other)
                        ),
                    );
                    None
                }
            };
            if let Some((schema, req)) = built {
                if req {
                    required.insert(k.clone());
                }
                props.insert(k.clone(), schema);
            }
        }
        let mut out = Map::new();
        out.insert("type".into(), json!("object"));
        out.insert("properties".into(), Value::Object(props));
        if !required.is_empty() {
            out.insert(
                "required".into(),
                json!(required.iter().cloned().collect::<Vec<_>>()),
            );
        }
        match explicit_default {
            Some(d) => {
                out.insert("default".into(), d);
            }
            // Nothing inside is required: the object may be omitted and then defaults to `{}`,
            // so its fields' defaults still apply.
            None if required.is_empty() => {
                out.insert("default".into(), json!({}));
            }
            None => {}
        }
        Value::Object(out)
    }

    /// One shorthand field: its schema and whether it is required.
    fn field(&mut self, text: &str, at: &FieldPath) -> Option<(Value, bool)> {
        let (ty, constraints) = match text.split_once('|') {
            Some((t, c)) => (t.trim(), c),
            None => (text.trim(), ""),
        };
        if ty.is_empty() {
            self.error(at, "missing type before '|'");
            return None;
        }
        let mut schema = self.type_expr(ty, at, 0)?;
        let tokens = match tokenize(constraints) {
            Ok(t) => t,
            Err(m) => {
                self.error(at, m);
                return None;
            }
        };
        let mut required: Option<bool> = None;
        let mut custom = Map::new();
        let mut default = None;
        let before = self.errors.len();
        for (key, value) in tokens {
            match self.marker(&mut schema, &key, value.as_deref(), at) {
                Ok(MarkerEffect::None) => {}
                Ok(MarkerEffect::Required(r)) => required = Some(r),
                Ok(MarkerEffect::Default(d)) => default = Some(d),
                Ok(MarkerEffect::Custom) => {
                    custom.insert(
                        key.clone(),
                        value.map(Value::String).unwrap_or(Value::Bool(true)),
                    );
                }
                Err(m) => self.error(at, m),
            }
        }
        if self.errors.len() > before {
            return None;
        }
        if !custom.is_empty() {
            if let Some(m) = schema.as_object_mut() {
                m.insert("x-custom-markers".into(), Value::Object(custom));
            }
        }
        if let Some(d) = default {
            // A default must itself be a valid value of the field.
            let mut check = schema.clone();
            if let Some(m) = check.as_object_mut() {
                m.remove("default");
            }
            if let Some(v) = schema::validate(&check, &d).first() {
                self.error(
                    at,
                    format!(
                        "default {d} does not satisfy the field's own schema: {}",
                        v.message
                    ),
                );
                return None;
            }
            if let Some(m) = schema.as_object_mut() {
                m.insert("default".into(), d);
            }
        }
        let has_default = schema.get("default").is_some();
        let req = required.unwrap_or(!has_default);
        Some((schema, req))
    }

    fn type_expr(&mut self, ty: &str, at: &FieldPath, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            self.error(at, "type expression nests too deeply");
            return None;
        }
        let ty = ty.trim();
        if let Some(inner) = ty.strip_prefix("[]") {
            return Some(json!({"type": "array", "items": self.type_expr(inner, at, depth + 1)?}));
        }
        if let Some(inner) = ty.strip_prefix("array<").and_then(|r| r.strip_suffix('>')) {
            return Some(json!({"type": "array", "items": self.type_expr(inner, at, depth + 1)?}));
        }
        if let Some(inner) = ty.strip_prefix("map<").and_then(|r| r.strip_suffix('>')) {
            let inner = match inner.split_once(',') {
                // `map<string, T>`: the key type must be string.
                Some((k, v)) if k.trim() == "string" => v,
                Some((k, _)) => {
                    self.error(at, format!("map keys must be strings, not {:?}", k.trim()));
                    return None;
                }
                None => inner,
            };
            return Some(
                json!({"type": "object", "additionalProperties": self.type_expr(inner, at, depth + 1)?}),
            );
        }
        if let Some(rest) = ty.strip_prefix("map[") {
            let Some((k, v)) = rest.split_once(']') else {
                self.error(
                    at,
                    format!("malformed map type {ty:?}; write map<T> or map[string]T"),
                );
                return None;
            };
            if k.trim() != "string" {
                self.error(at, format!("map keys must be strings, not {:?}", k.trim()));
                return None;
            }
            return Some(
                json!({"type": "object", "additionalProperties": self.type_expr(v, at, depth + 1)?}),
            );
        }
        match ty {
            "string" | "integer" | "number" | "boolean" => Some(json!({ "type": ty })),
            "object" => {
                self.error(
                    at,
                    "'object' is not a type; use map<T> for free-form maps or define a structured type under types",
                );
                None
            }
            name if self.types.contains_key(name) => self.named_type(name, at),
            other => {
                self.error(
                    at,
                    format!(
                        "unknown type {other:?}; expected string, integer, number, boolean, []T, map<T> or a name from types"
                    ),
                );
                None
            }
        }
    }

    fn marker(
        &mut self,
        schema: &mut Value,
        key: &str,
        value: Option<&str>,
        _at: &FieldPath,
    ) -> Result<MarkerEffect, String> {
        let ty = schema
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let need = |v: Option<&str>| -> Result<String, String> {
            v.map(str::to_string)
                .ok_or_else(|| format!("marker {key:?} needs a value ({key}=...)"))
        };
        let set = |schema: &mut Value, k: &str, v: Value| {
            if let Some(m) = schema.as_object_mut() {
                m.insert(k.to_string(), v);
            }
        };
        match key {
            "default" => Ok(MarkerEffect::Default(typed_value(&need(value)?, schema)?)),
            "required" => Ok(MarkerEffect::Required(boolean(key, value)?)),
            "nullable" => {
                if boolean(key, value)? {
                    set(schema, "nullable", json!(true));
                }
                Ok(MarkerEffect::None)
            }
            "enum" => {
                let raw = need(value)?;
                let mut items = Vec::new();
                for item in split_top(&raw, ',') {
                    items.push(typed_value(item.trim(), schema)?);
                }
                if items.is_empty() {
                    return Err("enum needs at least one value".into());
                }
                set(schema, "enum", Value::Array(items));
                Ok(MarkerEffect::None)
            }
            "minimum" | "maximum" | "multipleOf" => {
                if !matches!(ty.as_str(), "integer" | "number") {
                    return Err(format!(
                        "marker {key:?} applies to integer and number fields, not {ty}"
                    ));
                }
                let raw = need(value)?;
                let n: serde_json::Number = serde_json::from_str(raw.trim())
                    .map_err(|_| format!("{key}={raw} is not a number"))?;
                set(schema, key, Value::Number(n));
                Ok(MarkerEffect::None)
            }
            "exclusiveMinimum" | "exclusiveMaximum" | "uniqueItems" => {
                set(schema, key, json!(boolean(key, value)?));
                Ok(MarkerEffect::None)
            }
            "minLength" | "maxLength" | "minItems" | "maxItems" | "minProperties"
            | "maxProperties" => {
                let want = match key {
                    "minLength" | "maxLength" => "string",
                    "minItems" | "maxItems" => "array",
                    _ => "object",
                };
                if ty != want {
                    return Err(format!("marker {key:?} applies to {want} fields, not {ty}"));
                }
                let raw = need(value)?;
                let n: u64 = raw
                    .trim()
                    .parse()
                    .map_err(|_| format!("{key}={raw} is not a non-negative integer"))?;
                set(schema, key, json!(n));
                Ok(MarkerEffect::None)
            }
            "pattern" => {
                let p = unquote(&need(value)?);
                regex::Regex::new(&p)
                    .map_err(|e| format!("pattern {p:?} is not a valid regular expression: {e}"))?;
                set(schema, key, json!(p));
                Ok(MarkerEffect::None)
            }
            "format" | "title" | "description" => {
                set(schema, key, json!(unquote(&need(value)?)));
                Ok(MarkerEffect::None)
            }
            "example" => {
                let raw = need(value)?;
                let v = typed_value(&raw, schema).unwrap_or_else(|_| json!(unquote(&raw)));
                set(schema, key, v);
                Ok(MarkerEffect::None)
            }
            // Custom markers (scaffolding hints, `oc:` annotations) are kept for tools but do not
            // take part in validation.
            _ => Ok(MarkerEffect::Custom),
        }
    }
}

enum MarkerEffect {
    None,
    Required(bool),
    Default(Value),
    Custom,
}

fn boolean(key: &str, value: Option<&str>) -> Result<bool, String> {
    match value.map(str::trim) {
        None | Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(format!("{key}={other} must be true or false")),
    }
}

/// A JSON value's type in the words diagnostics use ("a map", "a list", …), for every reader of
/// the component front-end.
pub(crate) fn type_word(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Strip one level of quotes: `"…"` JSON-unquoted, `'…'` with `''` meaning `'`.
fn unquote(s: &str) -> String {
    let t = s.trim();
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        if let Ok(v) = serde_json::from_str::<String>(t) {
            return v;
        }
    }
    if t.len() >= 2 && t.starts_with('\'') && t.ends_with('\'') {
        return t[1..t.len() - 1].replace("''", "'");
    }
    t.to_string()
}

/// A marker value parsed by the field's type.
fn typed_value(raw: &str, schema: &Value) -> Result<Value, String> {
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("");
    let t = raw.trim();
    match ty {
        "string" => Ok(json!(unquote(t))),
        "integer" => t
            .parse::<i64>()
            .map(|i| json!(i))
            .map_err(|_| format!("{t:?} is not an integer")),
        "number" => serde_json::from_str::<serde_json::Number>(t)
            .map(Value::Number)
            .map_err(|_| format!("{t:?} is not a number")),
        "boolean" => match t {
            "true" => Ok(json!(true)),
            "false" => Ok(json!(false)),
            _ => Err(format!("{t:?} is not true or false")),
        },
        _ => serde_json::from_str::<Value>(t).map_err(|_| {
            format!("{t:?} is not a JSON value (write lists as [\"a\",\"b\"] and maps as {{\"k\":\"v\"}})")
        }),
    }
}

/// Split the constraints part into `(key, value)` tokens: whitespace separates tokens outside
/// quotes and brackets, a bare `|` is ignored, and a token without `=` has no value.
fn tokenize(s: &str) -> Result<Vec<(String, Option<String>)>, String> {
    let mut out = Vec::new();
    for tok in split_top(s, ' ') {
        let tok = tok.trim();
        if tok.is_empty() || tok == "|" {
            continue;
        }
        match tok.split_once('=') {
            Some((k, v)) if !k.is_empty() => out.push((k.to_string(), Some(v.to_string()))),
            Some(_) => return Err(format!("marker {tok:?} has no name")),
            None => out.push((tok.to_string(), None)),
        }
    }
    Ok(out)
}

/// Split at `sep` (a space also splits at any whitespace) outside quotes, brackets and braces.
fn split_top(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote: Option<char> = None;
    let mut depth = 0usize;
    let mut escape = false;
    for c in s.chars() {
        if let Some(q) = quote {
            cur.push(c);
            if escape {
                escape = false;
            } else if c == '\\' && q == '"' {
                escape = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' => {
                quote = Some(c);
                cur.push(c);
            }
            '[' | '{' => {
                depth += 1;
                cur.push(c);
            }
            ']' | '}' => {
                depth = depth.saturating_sub(1);
                cur.push(c);
            }
            c if depth == 0 && (c == sep || (sep == ' ' && c.is_whitespace())) => {
                out.push(std::mem::take(&mut cur));
            }
            c => cur.push(c),
        }
    }
    out.push(cur);
    out.retain(|t| !(sep == ' ' && t.trim().is_empty()));
    out
}

/// A copy of a schema without any `required` lists: what an environment override is checked
/// against (it only has to be well-typed; the merged result must be complete).
pub(crate) fn without_required(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != "required")
                .map(|(k, v)| {
                    let v = if k == "enum" || k == "default" || k == "example" {
                        v.clone()
                    } else {
                        without_required(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_required).collect()),
        other => other.clone(),
    }
}

/// The schema as JSON Schema (draft 2020-12) for editors and form UIs: `nullable` becomes a type
/// list, fields that environments may override are marked `x-env-overridable`.
pub(crate) fn to_json_schema(s: &Schemas, title: &str) -> Value {
    let mut out = json_schema_node(&s.merged);
    if let Some(m) = out.as_object_mut() {
        if let Some(props) = m.get_mut("properties").and_then(Value::as_object_mut) {
            for k in &s.env_keys {
                if let Some(Value::Object(p)) = props.get_mut(k) {
                    p.insert("x-env-overridable".into(), json!(true));
                }
            }
        }
        let mut head = Map::new();
        head.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        head.insert("title".into(), json!(title));
        for (k, v) in std::mem::take(m) {
            head.insert(k, v);
        }
        *m = head;
    }
    out
}

fn json_schema_node(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let nullable = m.get("nullable").and_then(Value::as_bool) == Some(true);
            let mut out = Map::new();
            for (k, val) in m {
                match k.as_str() {
                    "nullable" => {}
                    "type" if nullable => {
                        out.insert(k.clone(), json!([val.clone(), "null"]));
                    }
                    "properties" => {
                        let props = val
                            .as_object()
                            .map(|p| {
                                p.iter()
                                    .map(|(pk, pv)| (pk.clone(), json_schema_node(pv)))
                                    .collect::<Map<_, _>>()
                            })
                            .unwrap_or_default();
                        out.insert(k.clone(), Value::Object(props));
                    }
                    "items" | "additionalProperties" => {
                        out.insert(k.clone(), json_schema_node(val));
                    }
                    _ => {
                        out.insert(k.clone(), val.clone());
                    }
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(v: Value) -> Result<Schemas, Vec<SchemaError>> {
        from_shorthand(Some(&v))
    }

    #[test]
    fn seed_schema() {
        let s = build(json!({
            "types": {"ResourceSpec": {"cpu": "string | default=100m", "memory": "string | default=256Mi"}},
            "parameters": {
                "runtime": {"command": "[]string | default=[]"},
                "lifecycle": {
                    "terminationGracePeriodSeconds": "integer | default=30 minimum=1 maximum=300",
                    "imagePullPolicy": "string | default=IfNotPresent enum=Always,IfNotPresent,Never"
                },
                "labels": "map<string> | default={}"
            },
            "envOverrides": {"resources": {"requests": "ResourceSpec"}, "replicas": "integer | default=1"}
        }))
        .unwrap();
        let m = &s.merged;
        assert_eq!(
            m["properties"]["lifecycle"]["properties"]["imagePullPolicy"]["enum"],
            json!(["Always", "IfNotPresent", "Never"])
        );
        assert_eq!(m["properties"]["lifecycle"]["default"], json!({}));
        assert_eq!(
            m["properties"]["labels"]["additionalProperties"],
            json!({"type": "string"})
        );
        assert_eq!(
            m["properties"]["resources"]["properties"]["requests"]["properties"]["cpu"]["default"],
            json!("100m")
        );
        assert!(m.get("required").is_none());
        assert_eq!(
            s.env_keys.iter().collect::<Vec<_>>(),
            ["replicas", "resources"]
        );
        let mut v = json!({});
        schema::apply_defaults(&s.merged, &mut v);
        assert_eq!(v["resources"]["requests"]["memory"], json!("256Mi"));
        assert_eq!(v["lifecycle"]["terminationGracePeriodSeconds"], json!(30));
    }

    #[test]
    fn required_rules() {
        let s = build(json!({"parameters": {
            "a": "string", "b": "string | required=false", "c": "string | default=x",
            "d": "string | required=true default=y", "o": {"x": "string"}
        }}))
        .unwrap();
        assert_eq!(s.merged["required"], json!(["a", "d", "o"]));
    }

    #[test]
    fn custom_markers_are_kept_and_quotes_work() {
        let s = build(json!({"parameters": {
            "a": "string | default='it''s | here' scaffold=skip oc:sensitive",
            "e": "string | enum=\"x y\",\"z\" default=\"z\""
        }}))
        .unwrap();
        let a = &s.merged["properties"]["a"];
        assert_eq!(a["default"], json!("it's | here"));
        assert_eq!(
            a["x-custom-markers"],
            json!({"scaffold": "skip", "oc:sensitive": true})
        );
        assert_eq!(s.merged["properties"]["e"]["enum"], json!(["x y", "z"]));
    }

    #[test]
    fn errors_name_the_field() {
        let e = build(
            json!({"parameters": {"a": "strin", "b": "integer | default=x", "c": "object"},
                             "types": {"T": {"x": "U"}, "U": {"y": "T"}}}),
        )
        .unwrap_err();
        let paths: Vec<String> = e.iter().map(|e| e.path.to_string()).collect();
        assert!(paths.contains(&"parameters.a".to_string()), "{e:?}");
        assert!(paths.contains(&"parameters.b".to_string()), "{e:?}");
        assert!(paths.contains(&"parameters.c".to_string()), "{e:?}");
        assert!(e.iter().any(|e| e.message.contains("cycle")), "{e:?}");
    }

    #[test]
    fn default_must_match_constraints() {
        let e =
            build(json!({"parameters": {"a": "integer | default=500 maximum=300"}})).unwrap_err();
        assert!(e[0].message.contains("maximum"), "{e:?}");
    }

    #[test]
    fn duplicate_between_sections() {
        let e = build(json!({"parameters": {"a": "string"}, "envOverrides": {"a": "string"}}))
            .unwrap_err();
        assert_eq!(e[0].path.to_string(), "envOverrides.a");
    }

    #[test]
    fn openapi_sections_merge_and_inline_refs() {
        let s = from_openapi(
            Some(&json!({"openAPIV3Schema": {"type": "object", "$defs": {"R": {"type": "object", "properties": {"cpu": {"type": "string", "default": "1"}}}},
                "properties": {"r": {"$ref": "#/$defs/R"}}}})),
            Some(&json!({"openAPIV3Schema": {"type": "object", "properties": {"replicas": {"type": "integer", "default": 1}}}})),
        )
        .unwrap();
        assert_eq!(
            s.merged["properties"]["r"]["properties"]["cpu"]["default"],
            json!("1")
        );
        assert!(s.env_keys.contains("replicas"));
        let e = from_openapi(
            Some(&json!({"openAPIV3Schema": {"type": "object", "$defs": {"A": {"$ref": "#/$defs/A"}}, "properties": {"a": {"$ref": "#/$defs/A"}}}})),
            None,
        )
        .unwrap_err();
        assert!(e[0].message.contains("cycle"));
    }

    #[test]
    fn json_schema_output() {
        let s = build(json!({"parameters": {"a": "string | nullable=true"}, "envOverrides": {"n": "integer | default=1"}})).unwrap();
        let j = to_json_schema(&s, "t");
        assert_eq!(j["properties"]["a"]["type"], json!(["string", "null"]));
        assert_eq!(j["properties"]["n"]["x-env-overridable"], json!(true));
        assert_eq!(j["title"], json!("t"));
    }
}
