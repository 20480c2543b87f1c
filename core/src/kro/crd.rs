//! The CustomResourceDefinition kro generates for an RGD's instance kind (reference/kro.md §3.4).
//!
//! `kiln schema` prints it so the CRD can be reviewed, applied ahead of kro, or fed to other tools
//! (editors, validators). The shape follows kro's `pkg/graph/crd`: one version, served and stored,
//! with the status subresource; spec from SimpleSchema, status inferred from the status
//! expressions' types plus kro's `state` and `conditions`; kro's default printer columns.

use serde_json::{json, Map, Value};

use super::plural::plural;
use super::Rgd;

/// Labels kro's controller puts on the CRDs it owns that do not depend on the live object (the
/// RGD's UID and kro's version are left out: offline there are none).
fn labels(rgd: &Rgd, from_schema: Option<&Value>) -> Map<String, Value> {
    let mut m = from_schema
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    m.insert("kro.run/owned".into(), json!("true"));
    m.insert(
        "kro.run/resource-graph-definition-name".into(),
        json!(rgd.graph.name),
    );
    m
}

/// kro's default columns, with the descriptions its generated CRDs carry (a CRD compared with
/// the one kro applies must not differ by them).
fn default_printer_columns() -> Value {
    json!([
        {"description": "The state of a ResourceGraphDefinition instance", "jsonPath": ".status.state", "name": "State", "type": "string"},
        {"description": "Whether a ResourceGraphDefinition instance is ready", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status", "name": "Ready", "type": "string"},
        {"description": "Age of the resource", "jsonPath": ".metadata.creationTimestamp", "name": "Age", "type": "date"},
    ])
}

/// The instance CRD of a loaded RGD.
pub fn instance_crd(rgd: &Rgd) -> Value {
    let sch = &rgd.graph.document.value["spec"]["schema"];
    let lower = rgd.kind.to_lowercase();
    let plural = plural(&lower);
    let mut names = Map::new();
    names.insert("kind".into(), json!(rgd.kind));
    names.insert("listKind".into(), json!(format!("{}List", rgd.kind)));
    names.insert("plural".into(), json!(plural));
    names.insert("singular".into(), json!(lower));
    for key in ["shortNames", "categories"] {
        if let Some(v @ Value::Array(_)) = sch.get(key) {
            names.insert(key.into(), v.clone());
        }
    }
    let spec_schema = if rgd.spec_schema.is_object() {
        rgd.spec_schema.clone()
    } else {
        json!({"type": "object"})
    };
    let status_schema = if rgd.status_schema.is_object() {
        rgd.status_schema.clone()
    } else {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    };
    let columns = match sch.get("additionalPrinterColumns") {
        Some(Value::Array(c)) if !c.is_empty() => Value::Array(c.clone()),
        _ => default_printer_columns(),
    };
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(format!("{plural}.{}", rgd.group)));
    metadata.insert(
        "labels".into(),
        Value::Object(labels(
            rgd,
            sch.get("metadata").and_then(|m| m.get("labels")),
        )),
    );
    if let Some(a @ Value::Object(m)) = sch.get("metadata").and_then(|m| m.get("annotations")) {
        if !m.is_empty() {
            metadata.insert("annotations".into(), a.clone());
        }
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": rgd.group,
            "names": names,
            "scope": if rgd.namespaced { "Namespaced" } else { "Cluster" },
            "versions": [{
                "name": rgd.version,
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec_schema,
                        "status": status_schema,
                    }
                }},
                "subresources": {"status": {}},
                "additionalPrinterColumns": columns,
            }]
        }
    })
}

/// The instance CRD of an RGD document as far as it is known before the RGD is loaded: its
/// spec from SimpleSchema, its status open. `None` when the kind, version or schema is not
/// usable (the RGD reports that when it loads). Templates of other RGDs that create instances
/// of this kind are checked against it.
pub fn spec_only_crd(rgd: &Value) -> Option<Value> {
    let sch = rgd.get("spec")?.get("schema")?;
    let kind = sch.get("kind")?.as_str()?;
    let version = sch.get("apiVersion")?.as_str()?;
    let group = match sch.get("group") {
        None | Some(Value::Null) => super::rgd::KRO_GROUP,
        Some(g) => g.as_str().filter(|g| !g.is_empty())?,
    };
    let scope = match sch.get("scope").and_then(Value::as_str) {
        None => "Namespaced",
        Some(s @ ("Namespaced" | "Cluster")) => s,
        Some(_) => return None,
    };
    let empty = json!({});
    let spec =
        crate::schema::simple_to_openapi(sch.get("spec").unwrap_or(&empty), sch.get("types"))
            .ok()?;
    Some(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": group,
            "names": {"kind": kind},
            "scope": scope,
            "versions": [{
                "name": version,
                "served": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "metadata": {"type": "object"},
                        "spec": spec,
                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    }
                }},
            }]
        }
    }))
}
