//! The function's configuration: a `Render` object (`fn.kiln.dev/v1alpha1`), or the `ConfigMap`
//! kpt makes of `kpt fn eval … -- key=value`, turned into the options the `kiln` CLI has.
//!
//! The configuration is untrusted (it sits in a repository anyone may change), so it is checked
//! strictly: an unknown field or a value of the wrong type is an error naming the field, not
//! something ignored. Its paths are resolved later, inside the root (`Request.files`, `Files::Within`).

use kiln_core::diag::{codes, key_path, quote, Diagnostic};
use serde_json::{json, Map, Value};

/// apiVersion of the `Render` configuration.
pub const API_VERSION: &str = "fn.kiln.dev/v1alpha1";
/// Its kind.
pub const KIND: &str = "Render";

/// What the configuration asks for; every field is optional.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// Files or directories to render besides the items (definitions, instances, packages),
    /// relative to the root.
    pub paths: Vec<String>,
    /// The environment components are rendered for.
    pub environment: Option<String>,
    /// kurel values files, relative to the root.
    pub values: Vec<String>,
    /// kurel `path=value` overrides, in order.
    pub sets: Vec<String>,
    /// Namespace for namespaced objects that set none.
    pub namespace: Option<String>,
    /// Warnings fail the run.
    pub strict: bool,
    /// API groups whose kinds kiln does not know may pass through (`*` for every group): the
    /// custom resources a transformer sees beside kiln's inputs.
    pub pass_through: Vec<String>,
    /// Ship kro definitions to the controller (`kro`) instead of rendering them (`direct`).
    pub kro_mode: bool,
    /// kro mode: also emit the generated instance CRDs.
    pub emit_crds: bool,
    /// kro mode: Argo CD sync waves on CRDs and RGDs.
    pub sync_waves: bool,
    /// Live objects (files or directories relative to the root) that externalRefs and status
    /// reads resolve against.
    pub observed: Vec<String>,
    /// Leave out the provenance annotations.
    pub no_provenance: bool,
    /// A run that renders nothing (a generator whose `paths` hold nothing to render, or no items
    /// and no `paths`) succeeds instead of failing.
    pub allow_empty: bool,
}

/// The options that are booleans, by their name in the configuration.
fn flag<'a>(o: &'a mut Options, key: &str) -> Option<&'a mut bool> {
    Some(match key {
        "strict" => &mut o.strict,
        "emitCRDs" => &mut o.emit_crds,
        "syncWaves" => &mut o.sync_waves,
        "noProvenance" => &mut o.no_provenance,
        "allowEmpty" => &mut o.allow_empty,
        _ => return None,
    })
}

/// `mode`: `direct` or `kro`.
fn mode(s: &str, path: &str, errs: &mut Vec<Diagnostic>) -> bool {
    match s {
        "direct" => false,
        "kro" => true,
        _ => {
            errs.push(
                error(path, format!("mode {} is not direct or kro", quote(s)))
                    .with_hint("direct renders every object here; kro ships the RGDs and instances to the controller (docs/strategies.md)"),
            );
            false
        }
    }
}

/// Read a functionConfig. `None` (no configuration) means the defaults: render the items.
pub fn parse(config: Option<&Value>) -> Result<Options, Vec<Diagnostic>> {
    let Some(config) = config else {
        return Ok(Options::default());
    };
    let mut errs = Vec::new();
    let map = config.as_object().expect("the envelope reader checks this");
    let api_version = map.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    let opts = match (api_version, kind) {
        (API_VERSION, KIND) => from_render(map, &mut errs),
        ("v1", "ConfigMap") => from_config_map(map, &mut errs),
        _ => {
            errs.push(
                error(
                    "",
                    format!("functionConfig of kind {} (apiVersion {}) is not a kiln configuration", quote(kind), quote(api_version)),
                )
                .with_hint(format!(
                    "use apiVersion: {API_VERSION}, kind: {KIND} (see `kiln-krm schema`), or a ConfigMap of the same options"
                )),
            );
            Options::default()
        }
    };
    if errs.is_empty() {
        Ok(opts)
    } else {
        Err(errs)
    }
}

fn error(path: &str, message: impl Into<String>) -> Diagnostic {
    let d = Diagnostic::error(codes::REQUEST_INVALID, message).in_file("functionConfig");
    if path.is_empty() {
        d
    } else {
        d.at(path)
    }
}

fn from_render(map: &Map<String, Value>, errs: &mut Vec<Diagnostic>) -> Options {
    let mut o = Options::default();
    for key in map.keys() {
        if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "spec") {
            errs.push(
                error(
                    &key_path("", key, |_, k| k.to_string()),
                    format!("unknown field {}", quote(key)),
                )
                .with_hint("a Render has apiVersion, kind, metadata and spec"),
            );
        }
    }
    if let Some(m) = map.get("metadata") {
        if !m.is_object() {
            errs.push(error("metadata", "metadata must be an object"));
        }
    }
    let spec = match map.get("spec") {
        None | Some(Value::Null) => return o,
        Some(Value::Object(s)) => s,
        Some(_) => {
            errs.push(error("spec", "spec must be an object"));
            return o;
        }
    };
    for (key, v) in spec {
        let path = key_path("spec", key, |p, k| format!("{p}.{k}"));
        match key.as_str() {
            "paths" => o.paths = strings(v, &path, errs),
            "values" => o.values = strings(v, &path, errs),
            "environment" => o.environment = string(v, &path, errs),
            "namespace" => o.namespace = string(v, &path, errs),
            "passThrough" => o.pass_through = strings(v, &path, errs),
            "observed" => o.observed = strings(v, &path, errs),
            "mode" => {
                if let Some(s) = string(v, &path, errs) {
                    o.kro_mode = mode(&s, &path, errs);
                }
            }
            "strict" | "emitCRDs" | "syncWaves" | "noProvenance" | "allowEmpty" => match v {
                Value::Bool(b) => *flag(&mut o, key).expect("listed above") = *b,
                _ => errs.push(error(&path, format!("{key} must be true or false"))),
            },
            "set" => match v {
                Value::Object(sets) => {
                    for (p, value) in sets {
                        match scalar_text(value) {
                            Some(text) => o.sets.push(format!("{p}={text}")),
                            None => errs.push(
                                error(&key_path(&path, p, |a, k| format!("{a}[{k:?}]")), format!("the set value of {} must be a string, number, boolean or null", quote(p)))
                                    .with_hint("set one leaf per entry: `app.image.tag: \"1.2\"`; put structured values in a values file"),
                            ),
                        }
                    }
                }
                _ => errs.push(
                    error(&path, "set must be a mapping of parameter paths to values")
                        .with_hint("e.g. set: {app.replicas: 3}"),
                ),
            },
            _ => errs.push(error(&path, format!("unknown field {}", quote(key))).with_hint(
                "spec fields are paths, environment, values, set, namespace, passThrough, strict, mode, emitCRDs, syncWaves, observed, noProvenance and allowEmpty (see `kiln-krm schema`)",
            )),
        }
    }
    o
}

/// kpt passes `-- key=value` as ConfigMap data (all strings). Lists are comma-separated;
/// `set.PATH=VALUE` or `set=PATH=VALUE` give one override each.
fn from_config_map(map: &Map<String, Value>, errs: &mut Vec<Diagnostic>) -> Options {
    let mut o = Options::default();
    for key in map.keys() {
        if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "data") {
            errs.push(
                error(
                    &key_path("", key, |_, k| k.to_string()),
                    format!("unknown field {} in a ConfigMap functionConfig", quote(key)),
                )
                .with_hint("only data is read"),
            );
        }
    }
    let data = match map.get("data") {
        None | Some(Value::Null) => return o,
        Some(Value::Object(d)) => d,
        Some(_) => {
            errs.push(error("data", "data must be a mapping of strings"));
            return o;
        }
    };
    let list = |s: &str| -> Vec<String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect()
    };
    for (key, v) in data {
        let path = key_path("data", key, |p, k| format!("{p}[{k:?}]"));
        let Some(s) = v.as_str() else {
            errs.push(error(&path, "ConfigMap data values must be strings"));
            continue;
        };
        match key.as_str() {
            "paths" => o.paths.extend(list(s)),
            "values" => o.values.extend(list(s)),
            "passThrough" => o.pass_through.extend(list(s)),
            "observed" => o.observed.extend(list(s)),
            "environment" => o.environment = Some(s.to_string()),
            "namespace" => o.namespace = Some(s.to_string()),
            "mode" => o.kro_mode = mode(s, &path, errs),
            "strict" | "emitCRDs" | "syncWaves" | "noProvenance" | "allowEmpty" => match s {
                "true" => *flag(&mut o, key).expect("listed above") = true,
                "false" => *flag(&mut o, key).expect("listed above") = false,
                _ => errs.push(error(&path, format!("{key} must be \"true\" or \"false\""))),
            },
            "set" => {
                if s.contains('=') {
                    o.sets.push(s.to_string());
                } else {
                    errs.push(
                        error(&path, "set must be PATH=VALUE")
                            .with_hint("e.g. `-- set=app.replicas=3` or `-- set.app.replicas=3`"),
                    );
                }
            }
            _ => match key.strip_prefix("set.") {
                Some(p) if !p.is_empty() => o.sets.push(format!("{p}={s}")),
                _ => errs.push(error(&path, format!("unknown option {}", quote(key))).with_hint(
                    "options are paths, environment, values, set (or set.PATH), namespace, passThrough, strict, mode, emitCRDs, syncWaves, observed, noProvenance and allowEmpty",
                )),
            },
        }
    }
    o
}

fn string(v: &Value, path: &str, errs: &mut Vec<Diagnostic>) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Null => None,
        _ => {
            errs.push(error(path, format!("{path} must be a string")));
            None
        }
    }
}

fn strings(v: &Value, path: &str, errs: &mut Vec<Diagnostic>) -> Vec<String> {
    match v {
        Value::Null => Vec::new(),
        Value::Array(a) => {
            let mut out = Vec::new();
            for (i, x) in a.iter().enumerate() {
                match x.as_str() {
                    Some(s) if !s.is_empty() => out.push(s.to_string()),
                    _ => errs.push(error(
                        &format!("{path}[{i}]"),
                        format!("{path}[{i}] must be a non-empty string"),
                    )),
                }
            }
            out
        }
        _ => {
            errs.push(error(path, format!("{path} must be a list of strings")));
            Vec::new()
        }
    }
}

/// The text of a `set` value as `kiln --set` takes it (`--set tag=1.10` stays a string for a
/// string parameter; others read it as YAML).
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some("null".into()),
        _ => None,
    }
}

/// The JSON Schema of the `Render` configuration (`kiln-krm schema`).
pub fn schema() -> Value {
    let list = |d: &str| json!({"type": "array", "items": {"type": "string", "minLength": 1}, "description": d});
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://kiln.dev/schemas/fn.kiln.dev/v1alpha1/render.json",
        "title": "Render",
        "description": "Configuration of the kiln KRM function (kiln-krm): what to render besides the items, and how.",
        "type": "object",
        "required": ["apiVersion", "kind"],
        "additionalProperties": false,
        "properties": {
            "apiVersion": {"const": API_VERSION},
            "kind": {"const": KIND},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "paths": list("Files or directories of definitions, instances, components or kurel packages to render, relative to the working directory (the kustomization root under kustomize); they may not leave it."),
                    "environment": {"type": "string", "description": "The environment components are rendered for."},
                    "values": list("kurel values files merged over the package's parameters, in order; relative to the working directory, which they may not leave."),
                    "set": {
                        "type": "object",
                        "description": "kurel parameter overrides, PATH: VALUE, applied after the values files.",
                        "additionalProperties": {"type": ["string", "number", "boolean", "null"]}
                    },
                    "namespace": {"type": "string", "description": "Namespace for namespaced objects whose instance, component or package sets none."},
                    "passThrough": list("API groups whose kinds kiln does not know pass through untouched (`*` for every group). Without it, such a document is an error: it may be a misspelt kind kiln would otherwise hand to the cluster unrendered."),
                    "strict": {"type": "boolean", "description": "Warnings fail the run."},
                    "mode": {"enum": ["direct", "kro"], "description": "direct (default) renders every object here; kro checks everything the same way, then emits the ResourceGraphDefinitions and defaulted instances for the in-cluster controller."},
                    "emitCRDs": {"type": "boolean", "description": "kro mode: also emit each RGD's generated instance CRD, first."},
                    "syncWaves": {"type": "boolean", "description": "kro mode: Argo CD sync waves on CRDs (-2) and RGDs (-1)."},
                    "observed": list("Live objects (YAML files or directories, e.g. kubectl get -o yaml output), relative to the working directory, which they may not leave: externalRefs, reads of a resource's status and of the instance's server-set metadata (metadata.uid, ...) resolve against them."),
                    "noProvenance": {"type": "boolean", "description": "Leave out the kiln.dev/definition, kiln.dev/instance and kiln.dev/node annotations rendered objects otherwise carry."},
                    "allowEmpty": {"type": "boolean", "description": "Accept a run that renders nothing: `paths` that hold nothing to render, or neither items nor `paths`. Without it such a run fails (an empty generator output applied by a GitOps tool deletes what it manages)."}
                }
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_options() {
        let c = json!({"apiVersion": API_VERSION, "kind": KIND, "spec": {
            "mode": "kro", "emitCRDs": true, "syncWaves": true, "observed": ["live"], "noProvenance": true,
            "allowEmpty": true}});
        let o = parse(Some(&c)).unwrap();
        assert!(o.kro_mode && o.emit_crds && o.sync_waves && o.no_provenance && o.allow_empty);
        assert_eq!(o.observed, ["live"]);
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {
            "mode": "kro", "syncWaves": "true", "observed": "a, b", "allowEmpty": "true"}});
        let o = parse(Some(&cm)).unwrap();
        assert!(o.kro_mode && o.sync_waves && !o.emit_crds && o.allow_empty);
        assert_eq!(o.observed, ["a", "b"]);
        let bad = json!({"apiVersion": API_VERSION, "kind": KIND, "spec": {"mode": "helm", "emitCRDs": "yes"}});
        let errs = parse(Some(&bad)).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
    }

    #[test]
    fn render_spec() {
        let c = json!({"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": "r"}, "spec": {
            "paths": ["defs"], "environment": "dev", "values": ["v.yaml"],
            "set": {"app.replicas": 3, "tag": "1.10", "on": true}, "namespace": "web", "strict": true,
            "passThrough": ["example.com", "*"]}});
        let o = parse(Some(&c)).unwrap();
        assert_eq!(o.paths, ["defs"]);
        assert_eq!(o.environment.as_deref(), Some("dev"));
        assert_eq!(o.values, ["v.yaml"]);
        assert_eq!(o.sets, ["app.replicas=3", "tag=1.10", "on=true"]);
        assert_eq!(o.namespace.as_deref(), Some("web"));
        assert!(o.strict);
        assert_eq!(o.pass_through, ["example.com", "*"]);
        assert_eq!(parse(None).unwrap(), Options::default());
    }

    #[test]
    fn unknown_fields_and_wrong_types_name_the_field() {
        let c = json!({"apiVersion": API_VERSION, "kind": KIND, "spec": {
            "pathz": ["x"], "paths": "defs", "strict": "yes", "set": {"a": [1]}}, "extra": 1});
        let errs = parse(Some(&c)).unwrap_err();
        let paths: Vec<_> = errs
            .iter()
            .map(|d| d.path.clone().unwrap_or_default())
            .collect();
        assert_eq!(
            paths,
            [
                "extra",
                "spec.pathz",
                "spec.paths",
                "spec.strict",
                "spec.set[\"a\"]"
            ]
        );
        assert!(errs
            .iter()
            .all(|d| d.code == codes::REQUEST_INVALID && d.is_error()));
    }

    #[test]
    fn config_map_from_kpt() {
        let c = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "function-input"},
            "data": {"paths": "a, b", "environment": "prod", "set": "x=1", "set.y.z": "2", "strict": "false",
                "passThrough": "cert-manager.io,example.com"}});
        let o = parse(Some(&c)).unwrap();
        assert_eq!(o.paths, ["a", "b"]);
        assert_eq!(o.environment.as_deref(), Some("prod"));
        assert_eq!(o.sets, ["x=1", "y.z=2"]);
        assert_eq!(o.pass_through, ["cert-manager.io", "example.com"]);
        let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"colour": "red", "strict": "maybe"}});
        let errs = parse(Some(&bad)).unwrap_err();
        assert_eq!(errs.len(), 2);
    }

    #[test]
    fn other_kinds_are_refused() {
        let c = json!({"apiVersion": "example.com/v1", "kind": "Render"});
        let errs = parse(Some(&c)).unwrap_err();
        assert!(errs[0].message.contains("not a kiln configuration"));
    }

    #[test]
    fn schema_names_every_option() {
        let s = schema();
        let props = s["properties"]["spec"]["properties"].as_object().unwrap();
        let keys: Vec<_> = props.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "paths",
                "environment",
                "values",
                "set",
                "namespace",
                "passThrough",
                "strict",
                "mode",
                "emitCRDs",
                "syncWaves",
                "observed",
                "noProvenance",
                "allowEmpty"
            ]
        );
    }
}
