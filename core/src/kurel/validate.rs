//! Validation of the rendered resources: structure, identity, the Kubernetes schema of each kind
//! (the bundled built-in schemas plus CRDs shipped in the package), and the fields the API server
//! would require. Errors block; warnings (advice) do not, unless `--strict`.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::openapi::Schemas;
use crate::scope::{group_of, Scopes};

/// Kinds whose pod template is at `spec.template`.
const WORKLOADS: &[(&str, &str)] = &[
    ("apps", "Deployment"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("apps", "ReplicaSet"),
];

/// Schemas for the package: the bundle plus the package's own CRDs.
pub fn schemas_for(objects: &[Value]) -> Schemas {
    let mut s = Schemas::bundled();
    for o in objects {
        if o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            // An invalid CRD is reported by its own schema check; here it just adds nothing.
            let _ = s.add_crd(o);
        }
    }
    s
}

/// Whether the field at `path` of an object of this kind is a plain string in its schema (not
/// int-or-string, not free-form).
pub fn wants_string(schemas: &Schemas, api_version: &str, kind: &str, path: &FieldPath) -> bool {
    let Some(ks) = schemas.lookup(api_version, kind) else {
        return false;
    };
    ks.field_with(path, |f| match f {
        crate::openapi::FieldRef::Schema(node) => {
            if node
                .get("x-kubernetes-int-or-string")
                .and_then(Value::as_bool)
                == Some(true)
            {
                return false;
            }
            match node.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(ts)) => {
                    let ts: Vec<&str> = ts
                        .iter()
                        .filter_map(Value::as_str)
                        .filter(|t| *t != "null")
                        .collect();
                    ts == ["string"]
                }
                _ => false,
            }
        }
        _ => false,
    })
}

/// Scope knowledge for the package: built-ins plus its CRDs.
pub fn scopes_for(objects: &[Value]) -> Scopes {
    let mut s = Scopes::new();
    for o in objects {
        if o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition") {
            s.declare_crd(o);
        }
    }
    s
}

/// Validate rendered objects; `docs[i]` is the resource document object `i` came from.
pub fn validate(
    objects: &[Value],
    docs: &[Document],
    schemas: &Schemas,
    scopes: &Scopes,
) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    // Keys borrowed from the objects: copying four strings of every object of every instance
    // to find the rare duplicate was a cost of each.
    let mut seen: BTreeMap<(&str, &str, &str, &str), usize> = BTreeMap::new();
    for (i, (obj, doc)) in objects.iter().zip(docs).enumerate() {
        let at = |d: Diagnostic, p: &FieldPath| doc.diag(d, p);
        let root = FieldPath::root();
        let field = crate::lookup::field;
        let top = |k: &str| {
            field(obj, k)
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let meta = |k: &str| {
            field(obj, "metadata")
                .and_then(|m| field(m, k))
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
        };
        let (Some(api), Some(kind), Some(name)) = (top("apiVersion"), top("kind"), meta("name"))
        else {
            out.push(at(
                Diagnostic::error(
                    codes::KUREL_RESOURCE,
                    "after variables and patches the resource lacks a string apiVersion, kind or metadata.name",
                )
                .with_hint("check the variables used in these fields"),
                &root,
            ));
            continue;
        };
        let ns = meta("namespace").unwrap_or("");
        let key = (group_of(api), kind, ns, name);
        if let Some(first) = seen.get(&key) {
            let other = docs
                .get(*first)
                .map(|d| d.file().to_string())
                .unwrap_or_default();
            out.push(at(
                Diagnostic::error(
                    codes::KUREL_DUPLICATE_RESOURCE,
                    format!(
                        "{kind} {}{name} is defined twice (also in {other})",
                        if ns.is_empty() {
                            String::new()
                        } else {
                            format!("{ns}/")
                        }
                    ),
                )
                .with_hint("give each resource a unique kind, namespace and name"),
                &root.key("metadata").key("name"),
            ));
        } else {
            seen.insert(key, i);
        }
        if !ns.is_empty() && !scopes.is_namespaced(api, kind) {
            out.push(at(
                Diagnostic::warning(
                    codes::KUREL_NAMESPACE,
                    format!("{kind} is cluster-scoped; metadata.namespace {ns:?} is ignored by Kubernetes"),
                )
                .with_hint("remove metadata.namespace"),
                &root.key("metadata").key("namespace"),
            ));
        }
        if let Some(ks) = schemas.lookup(api, kind) {
            // Types, unknown fields and enums, in one walk of the schema.
            for (p, msg) in ks.check_rendered(obj) {
                out.push(at(
                    Diagnostic::error(codes::KUREL_SCHEMA, msg).with_hint(format!(
                        "see the {kind} schema (Kubernetes {}); fix the resource, the parameter or the patch that sets this field",
                        Schemas::kubernetes_version()
                    )),
                    &p,
                ));
            }
        } else if let Some(d) = crate::inventory::check_builtin(api, kind) {
            // A built-in group's unknown kind, at the resource's kind.
            out.push(at(d, &root.key("kind")));
        }
        required(obj, group_of(api), kind, &mut |p, msg| {
            out.push(at(
                Diagnostic::error(codes::KUREL_INCOMPLETE, msg)
                    .with_hint("the API server rejects the object without it"),
                &p,
            ))
        });
        advice(obj, kind, &mut |p, msg, hint| {
            out.push(at(
                Diagnostic::warning(codes::KUREL_ADVICE, msg).with_hint(hint),
                &p,
            ))
        });
    }
    out
}

fn nonempty_list(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::Array(a)) if !a.is_empty())
}

fn pod_spec_required(
    spec: Option<&Value>,
    at: &FieldPath,
    report: &mut dyn FnMut(FieldPath, String),
) {
    let Some(spec) = spec.filter(|s| s.is_object()) else {
        report(at.clone(), "the pod template has no spec".into());
        return;
    };
    if !nonempty_list(spec.get("containers")) {
        report(at.key("containers"), "the pod has no containers".into());
        return;
    }
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = spec.get(key) {
            for (i, c) in cs.iter().enumerate() {
                let p = at.key(key).index(i);
                if !matches!(c.get("name"), Some(Value::String(s)) if !s.is_empty()) {
                    report(p.clone(), "the container has no name".into());
                }
                if !matches!(c.get("image"), Some(Value::String(s)) if !s.is_empty()) {
                    report(p.key("image"), "the container has no image".into());
                }
            }
        }
    }
}

fn required(obj: &Value, group: &str, kind: &str, report: &mut dyn FnMut(FieldPath, String)) {
    let spec_p = FieldPath::root().key("spec");
    if WORKLOADS.contains(&(group, kind)) {
        let Some(spec) = obj.get("spec").filter(|s| s.is_object()) else {
            report(spec_p, format!("the {kind} has no spec"));
            return;
        };
        if !spec.get("selector").is_some_and(Value::is_object) {
            report(
                spec_p.key("selector"),
                format!("the {kind} has no spec.selector"),
            );
        }
        match spec.get("template") {
            Some(t) if t.is_object() => {
                pod_spec_required(t.get("spec"), &spec_p.key("template").key("spec"), report)
            }
            _ => report(
                spec_p.key("template"),
                format!("the {kind} has no spec.template"),
            ),
        }
    } else if group.is_empty() && kind == "Pod" {
        pod_spec_required(obj.get("spec"), &spec_p, report);
    } else if group.is_empty() && kind == "Service" {
        let spec = obj.get("spec");
        let ty = spec
            .and_then(|s| s.get("type"))
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP");
        let headless = spec
            .and_then(|s| s.get("clusterIP"))
            .and_then(Value::as_str)
            == Some("None");
        if ty != "ExternalName" && !headless && !nonempty_list(spec.and_then(|s| s.get("ports"))) {
            report(spec_p.key("ports"), "the Service has no ports".into());
        }
        if let Some(Value::Array(ports)) = spec.and_then(|s| s.get("ports")) {
            for (i, p) in ports.iter().enumerate() {
                match p.get("port").and_then(Value::as_i64) {
                    Some(n) if (1..=65535).contains(&n) => {}
                    Some(n) => report(
                        spec_p.key("ports").index(i).key("port"),
                        format!("port {n} is outside 1–65535"),
                    ),
                    None if p.get("port").is_none() => report(
                        spec_p.key("ports").index(i),
                        "the port has no port number".into(),
                    ),
                    None => {} // wrong type: reported by the schema check
                }
            }
        }
    }
}

fn advice(obj: &Value, kind: &str, report: &mut dyn FnMut(FieldPath, String, &str)) {
    let api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if api != "v1" {
        return;
    }
    match kind {
        "Service" => {
            let spec = obj.get("spec");
            let ty = spec
                .and_then(|s| s.get("type"))
                .and_then(Value::as_str)
                .unwrap_or("ClusterIP");
            let has_selector = spec
                .and_then(|s| s.get("selector"))
                .is_some_and(|s| s.as_object().is_some_and(|m| !m.is_empty()));
            if ty != "ExternalName" && !has_selector {
                report(
                    FieldPath::root().key("spec"),
                    "the Service has no selector, so it routes to no pods".into(),
                    "add spec.selector, or ignore this if endpoints are managed by hand",
                );
            }
        }
        "ConfigMap" | "Secret" => {
            let empty = ["data", "stringData", "binaryData"].iter().all(|k| {
                obj.get(*k)
                    .is_none_or(|v| v.as_object().is_none_or(|m| m.is_empty()))
            });
            if empty {
                report(
                    FieldPath::root(),
                    format!("the {kind} has no data"),
                    "add data, or remove the resource",
                );
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    fn check(text: &str) -> Vec<(String, String)> {
        let docs = parse_file("r.yaml", text.into(), &YamlLimits::default()).unwrap();
        let objs: Vec<Value> = docs.iter().map(|d| d.value.clone()).collect();
        validate(&objs, &docs, &schemas_for(&objs), &scopes_for(&objs))
            .into_iter()
            .map(|d| (d.code.slug.to_string(), d.path.unwrap_or_default()))
            .collect()
    }

    #[test]
    fn finds_schema_and_required_problems() {
        let got = check(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec:\n  replicas: \"1\"\n  template:\n    spec:\n      containers: [{name: a, bogus: 1}]\n---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {selector: {}, template: {spec: {containers: [{name: a, image: x}]}}}\n",
        );
        assert!(
            got.contains(&("kurel-schema".into(), "spec.replicas".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&(
                "kurel-schema".into(),
                "spec.template.spec.containers[0].bogus".into()
            )),
            "{got:?}"
        );
        assert!(
            got.contains(&("kurel-incomplete".into(), "spec.selector".into())),
            "{got:?}"
        );
        assert!(
            got.contains(&(
                "kurel-incomplete".into(),
                "spec.template.spec.containers[0].image".into()
            )),
            "{got:?}"
        );
        assert!(
            got.contains(&("kurel-duplicate-resource".into(), "metadata.name".into())),
            "{got:?}"
        );
    }

    #[test]
    fn advice_is_a_warning() {
        let got = check("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n");
        assert_eq!(got, vec![("kurel-advice".to_string(), String::new())]);
    }
}
