//! ComponentEnvSnapshots: full copies of a component's inputs, stamped with a digest.
//!
//! The digest is `sha256:` + the hex SHA-256 of the canonical JSON (object keys sorted, no
//! whitespace) of `{"addons", "component", "componentTypeDefinition", "workload"}` taken from the
//! snapshot's `spec`: the promotable content. The owner and environment are not part of it, so a
//! snapshot promoted to another environment keeps its digest, and a commit message can name what
//! was promoted. It is stored in the annotation [`DIGEST_ANNOTATION`].

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::kinds::SNAPSHOT_TYPE_KEYS;

/// Annotation holding a snapshot's digest.
pub const DIGEST_ANNOTATION: &str = "kiln.dev/snapshot-digest";

/// Canonical JSON: keys sorted at every level, compact.
pub(crate) fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    write_canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The digest of a snapshot object's content.
pub fn digest(snapshot: &Value) -> String {
    let spec = snapshot.get("spec");
    let field = |k: &str| spec.and_then(|s| s.get(k)).cloned().unwrap_or(Value::Null);
    let ty = SNAPSHOT_TYPE_KEYS
        .iter()
        .find_map(|k| spec.and_then(|s| s.get(*k)).cloned())
        .unwrap_or(Value::Null);
    let content = json!({
        "addons": field("addons"),
        "component": field("component"),
        "componentTypeDefinition": ty,
        "workload": field("workload"),
    });
    let d = Sha256::digest(canonical_json(&content).as_bytes());
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    format!("sha256:{hex}")
}

/// The digest recorded in a snapshot, if any.
pub fn recorded_digest(snapshot: &Value) -> Option<&str> {
    snapshot
        .get("metadata")?
        .get("annotations")?
        .get(DIGEST_ANNOTATION)?
        .as_str()
}

/// Build a snapshot object.
pub(crate) fn build(
    component: &Value,
    type_def: &Value,
    addons: Vec<Value>,
    workload: &Value,
    env: &str,
) -> Value {
    let md = component.get("metadata");
    let name = md
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(format!("{name}-{env}")));
    if let Some(ns) = md.and_then(|m| m.get("namespace")) {
        metadata.insert("namespace".into(), ns.clone());
    }
    let mut owner = Map::new();
    if let Some(p) = component
        .get("spec")
        .and_then(|s| s.get("owner"))
        .and_then(|o| o.get("projectName"))
    {
        owner.insert("projectName".into(), p.clone());
    }
    owner.insert("componentName".into(), json!(name));
    let mut snap = json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "ComponentEnvSnapshot",
        "metadata": Value::Object(metadata),
        "spec": {
            "owner": Value::Object(owner),
            "environment": env,
            "componentTypeDefinition": type_def,
            "component": component,
            "addons": addons,
            "workload": workload,
        }
    });
    stamp(&mut snap);
    snap
}

/// Write the digest annotation.
pub(crate) fn stamp(snap: &mut Value) {
    let d = digest(snap);
    if let Some(md) = snap.get_mut("metadata").and_then(Value::as_object_mut) {
        let ann = md.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        if let Some(a) = ann.as_object_mut() {
            a.insert(DIGEST_ANNOTATION.into(), json!(d));
        }
    }
}

/// A copy of a snapshot for another environment: same content (and digest), new environment and
/// name.
pub fn retarget(snapshot: &Value, env: &str) -> Value {
    let mut s = snapshot.clone();
    let comp = s
        .get("spec")
        .and_then(|x| x.get("owner"))
        .and_then(|o| o.get("componentName"))
        .and_then(Value::as_str)
        .unwrap_or("component")
        .to_string();
    if let Some(spec) = s.get_mut("spec").and_then(Value::as_object_mut) {
        spec.insert("environment".into(), json!(env));
    }
    if let Some(md) = s.get_mut("metadata").and_then(Value::as_object_mut) {
        md.insert("name".into(), json!(format!("{comp}-{env}")));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys() {
        assert_eq!(
            canonical_json(&json!({"b": [1, {"d": 1, "c": "x"}], "a": null})),
            r#"{"a":null,"b":[1,{"c":"x","d":1}]}"#
        );
    }

    #[test]
    fn digest_ignores_environment_and_key_order() {
        let a = build(
            &json!({"metadata": {"name": "c"}, "spec": {}}),
            &json!({"kind": "ComponentTypeDefinition", "spec": {"x": 1, "y": 2}}),
            vec![],
            &json!({"kind": "Workload"}),
            "dev",
        );
        let b = retarget(&a, "prod");
        assert_eq!(digest(&a), digest(&b));
        assert_eq!(recorded_digest(&b), Some(digest(&a).as_str()));
        let mut c = a.clone();
        c["spec"]["componentTypeDefinition"]["spec"]["x"] = json!(3);
        assert_ne!(digest(&a), digest(&c));
    }
}
