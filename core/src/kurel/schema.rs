//! JSON Schema (draft 2020-12) of a package's parameters, for editors and CI checks of values
//! files.
//!
//! Types and defaults are inferred from `parameters.yaml` (with the local extension's overrides as
//! defaults, since that is what a values file overrides). Each schema node is then tightened by
//! where its variable lands: `replicas: ${app.replicas}` in a Deployment makes `app.replicas` an
//! int32 with the Kubernetes field's description; an enum field (`imagePullPolicy`) gives an
//! `enum`; a reference inside text (`image: ${repo}:${tag}`) requires a scalar. A parameter that
//! is itself a lone reference to another (`a: ${b}`) passes its landings on to `b`.
//! `x-kiln-used-at` lists the fields a parameter lands in.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::document::Document;
use crate::fieldpath::{FieldPath, Segment};
use crate::openapi::{FieldLookup, Schemas};

use super::kpatch::{Action, Seg};
use super::variables::{parse_path, scan, Piece, Step};
use super::Package;

/// Where a variable is used.
#[derive(Debug, Clone)]
struct Landing {
    /// The whole value is the reference (so it keeps its type).
    lone: bool,
    /// The Kubernetes schema node of the field, when known.
    field: Option<Value>,
    /// `apps/v1 Deployment spec.replicas`.
    at: String,
}

fn infer(v: &Value) -> Value {
    match v {
        Value::Null => json!({}),
        Value::Bool(b) => json!({"type": "boolean", "default": b}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer", "default": n}),
        Value::Number(n) => json!({"type": "number", "default": n}),
        Value::String(s) if s.contains("${") => {
            // Derived from other parameters: its type is that of what it references.
            json!({"default": s, "description": format!("derived: {s}")})
        }
        Value::String(s) => json!({"type": "string", "default": s}),
        Value::Array(items) => {
            let mut node = json!({"type": "array", "default": v});
            let kinds: Vec<Value> = items
                .iter()
                .map(infer)
                .map(|mut s| {
                    if let Some(o) = s.as_object_mut() {
                        o.shift_remove("default");
                    }
                    s
                })
                .collect();
            if let Some(first) = kinds.first() {
                if kinds.iter().all(|k| k.get("type") == first.get("type")) {
                    node["items"] = first.clone();
                }
            }
            node
        }
        Value::Object(m) => {
            let props: Map<String, Value> = m.iter().map(|(k, x)| (k.clone(), infer(x))).collect();
            json!({"type": "object", "properties": props})
        }
    }
}

/// The schema node of a parameter path inside the generated schema.
fn node_mut<'a>(root: &'a mut Value, steps: &[Step]) -> Option<&'a mut Value> {
    steps.iter().try_fold(root, |n, s| match s {
        Step::Key(k) => n.get_mut("properties")?.get_mut(k),
        Step::Index(_) => n.get_mut("items"),
    })
}

fn k8s_types(field: &Value) -> Vec<String> {
    if field
        .get("x-kubernetes-int-or-string")
        .and_then(Value::as_bool)
        == Some(true)
    {
        return vec!["integer".into(), "string".into()];
    }
    let mut out: Vec<String> = match field.get("type") {
        Some(Value::String(t)) => vec![t.clone()],
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
        _ => Vec::new(),
    };
    if out.is_empty() {
        for k in ["oneOf", "anyOf"] {
            for b in field.get(k).and_then(Value::as_array).into_iter().flatten() {
                if let Some(t) = b.get("type").and_then(Value::as_str) {
                    out.push(t.to_string());
                }
            }
        }
    }
    out.retain(|t| t != "null");
    out
}

fn first_sentence(s: &str) -> String {
    let end = s.find(". ").map(|i| i + 1).unwrap_or(s.len());
    s[..end].trim().to_string()
}

fn tighten(node: &mut Value, landings: &[Landing]) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    let mut used: Vec<String> = Vec::new();
    for l in landings {
        used.push(l.at.clone());
        if !l.lone {
            // Embedded in text: must be a scalar.
            if !obj.contains_key("type") {
                obj.insert("type".into(), json!(["string", "number", "boolean"]));
            }
            continue;
        }
        let Some(field) = &l.field else { continue };
        let types = k8s_types(field);
        let have = obj.get("type").and_then(Value::as_str).map(str::to_string);
        match (&have, types.as_slice()) {
            (None, [one]) => {
                obj.insert("type".into(), json!(one));
            }
            (None, many) if !many.is_empty() => {
                obj.insert("type".into(), json!(many));
            }
            _ => {}
        }
        let compatible = match (&have, types.as_slice()) {
            (Some(h), ts) => {
                ts.is_empty()
                    || ts
                        .iter()
                        .any(|t| t == h || (t == "number" && h == "integer"))
            }
            (None, _) => true,
        };
        if !compatible {
            continue;
        }
        if let Some(f) = field.get("format").and_then(Value::as_str) {
            if f == "int32" && obj.get("type") == Some(&json!("integer")) {
                obj.insert("minimum".into(), json!(i32::MIN));
                obj.insert("maximum".into(), json!(i32::MAX));
            }
            obj.entry("format").or_insert(json!(f));
        }
        if let Some(e) = field.get("enum") {
            obj.entry("enum").or_insert(e.clone());
        }
        if let Some(d) = field.get("description").and_then(Value::as_str) {
            if !obj.contains_key("description") {
                obj.insert("description".into(), json!(first_sentence(d)));
            }
        }
    }
    if !used.is_empty() {
        used.sort();
        used.dedup();
        obj.insert("x-kiln-used-at".into(), json!(used));
    }
}

/// Record the landings of every reference in a value.
fn collect(
    v: &Value,
    at: &FieldPath,
    kind: Option<(&str, &str)>,
    schemas: &Schemas,
    out: &mut BTreeMap<String, Vec<Landing>>,
) {
    match v {
        Value::String(s) => {
            let Ok(pieces) = scan(s) else { return };
            let lone = pieces.len() == 1;
            for p in pieces {
                if let Piece::Ref(path) = p {
                    let field = kind.and_then(|(api, k)| match schemas.lookup(api, k)?.field(at) {
                        FieldLookup::Schema(n) => Some(n),
                        _ => None,
                    });
                    let at_s = match kind {
                        Some((api, k)) => format!("{api} {k} {at}"),
                        None => at.to_string(),
                    };
                    out.entry(path).or_default().push(Landing {
                        lone,
                        field,
                        at: at_s,
                    });
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect(x, &at.index(i), kind, schemas, out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                collect(x, &at.key(k), kind, schemas, out);
            }
        }
        _ => {}
    }
}

fn kind_of(doc: &Document) -> Option<(&str, &str)> {
    Some((doc.api_version()?, doc.kind()?))
}

/// Generate the parameter schema of a package.
pub fn generate(pkg: &Package) -> Value {
    let defaults = match super::instance_parameters(pkg, &super::Instance::default()) {
        Ok((p, _)) => p,
        Err(_) => pkg.parameters.clone(),
    };
    let mut params = defaults.clone();
    if let Some(m) = params.as_object_mut() {
        m.shift_remove("kurel");
    }
    let mut root = infer(&params);
    let schemas = super::validate::schemas_for(
        &pkg.resources
            .iter()
            .map(|d| d.value.clone())
            .collect::<Vec<_>>(),
    );

    let mut landings: BTreeMap<String, Vec<Landing>> = BTreeMap::new();
    for doc in &pkg.resources {
        collect(
            &doc.value,
            &FieldPath::root(),
            kind_of(doc),
            &schemas,
            &mut landings,
        );
    }
    for p in &pkg.patches {
        if let super::package::Enabled::Variable(v) = &p.meta.enabled {
            landings.entry(v.clone()).or_default().push(Landing {
                lone: true,
                field: Some(json!({"type": "boolean"})),
                at: format!("enabled of patch {}", p.id),
            });
        }
        for op in &p.ops {
            // The target's apiVersion comes from a resource of that kind.
            let api = pkg.resources.iter().find_map(|d| {
                d.kind()
                    .filter(|k| k.eq_ignore_ascii_case(&op.target.kind))
                    .and_then(|k| Some((d.api_version()?, k)))
            });
            let fp = FieldPath(
                op.path
                    .iter()
                    .map(|s| match s {
                        Seg::Key(k) => Segment::Key(k.clone()),
                        Seg::Index(i) => Segment::Index(*i),
                        Seg::Select { .. } => Segment::Index(0),
                    })
                    .collect(),
            );
            let value = match &op.action {
                Action::Set(v) | Action::Merge(v) => Some((v, fp)),
                Action::Append(v) | Action::Insert { value: v, .. } => Some((v, fp.index(0))),
                _ => None,
            };
            if let Some((v, fp)) = value {
                collect(v, &fp, api, &schemas, &mut landings);
            }
        }
    }
    // Parameters that are lone references pass their landings on (bounded: chains are at most
    // the maximum depth long).
    let mut derived: Vec<(String, String)> = Vec::new();
    let mut embedded: Vec<(String, String)> = Vec::new();
    collect_param_refs(&params, &FieldPath::root(), &mut derived, &mut embedded);
    for (from, to) in embedded {
        landings.entry(to).or_default().push(Landing {
            lone: false,
            field: None,
            at: format!("parameter {from}"),
        });
    }
    for _ in 0..super::variables::DEFAULT_MAX_DEPTH {
        let mut changed = false;
        for (from, to) in &derived {
            let add: Vec<Landing> = landings.get(from).cloned().unwrap_or_default();
            let entry = landings.entry(to.clone()).or_default();
            let before = entry.len();
            for l in add {
                if !entry.iter().any(|e| e.at == l.at) {
                    entry.push(l);
                }
            }
            changed |= entry.len() != before;
        }
        if !changed {
            break;
        }
    }
    for (path, ls) in &landings {
        let Ok(steps) = parse_path(path) else {
            continue;
        };
        if matches!(steps.first(), Some(Step::Key(k)) if k == "kurel") {
            continue;
        }
        if let Some(node) = node_mut(&mut root, &steps) {
            tighten(node, ls);
        }
    }
    let mut out = Map::new();
    out.insert(
        "$schema".into(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    out.insert(
        "title".into(),
        json!(format!(
            "{} {} parameters",
            pkg.metadata.name, pkg.metadata.version
        )),
    );
    if let Some(d) = &pkg.metadata.description {
        out.insert("description".into(), json!(d));
    }
    out.insert("type".into(), json!("object"));
    out.insert(
        "properties".into(),
        root.get("properties").cloned().unwrap_or(json!({})),
    );
    // Unknown top-level keys are typos (kiln warns about them); nested maps may grow.
    out.insert("additionalProperties".into(), json!(false));
    Value::Object(out)
}

/// `(parameter path, referenced path)` for every parameter that is exactly one reference (`lone`)
/// and for every reference embedded in a parameter's text (`embedded`).
fn collect_param_refs(
    v: &Value,
    at: &FieldPath,
    lone: &mut Vec<(String, String)>,
    embedded: &mut Vec<(String, String)>,
) {
    match v {
        Value::String(s) => {
            if let Ok(p) = scan(s) {
                if let [Piece::Ref(r)] = p.as_slice() {
                    lone.push((at.to_string(), r.clone()));
                } else {
                    for piece in p {
                        if let Piece::Ref(r) = piece {
                            embedded.push((at.to_string(), r));
                        }
                    }
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect_param_refs(x, &at.index(i), lone, embedded);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                collect_param_refs(x, &at.key(k), lone, embedded);
            }
        }
        _ => {}
    }
}
