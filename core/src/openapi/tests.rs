use serde_json::{json, Value};

use super::*;
use crate::document::{parse_file, YamlLimits};

fn yaml(text: &str) -> Value {
    parse_file("t.yaml", text.to_string(), &YamlLimits::default())
        .unwrap()
        .remove(0)
        .value
}

fn p(s: &str) -> FieldPath {
    FieldPath::parse(s).unwrap()
}

fn deployment() -> KindSchema {
    Schemas::bundled().lookup("apps/v1", "Deployment").unwrap()
}

/// The `type` of a schema node without `"null"`.
fn type_of(l: FieldLookup) -> String {
    let FieldLookup::Schema(s) = l else {
        panic!("not a schema: {l:?}")
    };
    match &s["type"] {
        Value::String(t) => t.clone(),
        Value::Array(ts) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap()
            .to_string(),
        other => panic!("no type: {other}"),
    }
}

fn messages(errs: &[(FieldPath, String)]) -> Vec<String> {
    errs.iter().map(|(p, m)| format!("{p}: {m}")).collect()
}

#[test]
fn bundled_data_loads_once_and_is_consistent() {
    let a = Schemas::bundled();
    let b = Schemas::bundled();
    assert!(Arc::ptr_eq(&a.bundle, &b.bundle));
    assert_eq!(Schemas::kubernetes_version(), "1.37");
    assert_eq!(a.bundle.len(), 862);
    // Every index entry points at a definition that exists.
    for (key, k) in a.bundle.kinds() {
        assert!(a.bundle.def(k.def_key).is_some(), "{key}");
    }
    assert!(a.bundle.kinds().count() > 100);
    // The tables are sorted, which the lookups' binary searches rely on.
    assert!(DEF_INDEX.windows(2).all(|w| w[0].0 < w[1].0));
    assert!(KIND_INDEX.windows(2).all(|w| w[0].0 < w[1].0));
    // Reproducible gzip: no mtime and no file name in the header.
    let gz = include_bytes!("../../data/kubernetes/definitions.json.gz");
    assert_eq!(&gz[..4], &[0x1f, 0x8b, 8, 0]);
    assert_eq!(&gz[4..8], &[0, 0, 0, 0]);
}

#[test]
fn deployment_field_lookups() {
    let d = deployment();
    assert!(d.namespaced);
    assert_eq!(type_of(d.field(&p("spec.replicas"))), "integer");
    assert_eq!(
        type_of(d.field(&p("spec.template.spec.containers[0].image"))),
        "string"
    );
    assert_eq!(
        type_of(d.field(&p("spec.template.spec.containers"))),
        "array"
    );
    assert_eq!(d.field(&p("spec.foo")), FieldLookup::Unknown { at: 1 });
    assert_eq!(
        d.field(&p("spec.template.spec.containers[0].imag")),
        FieldLookup::Unknown { at: 5 }
    );
    // Descending below a scalar is unknown too.
    assert_eq!(
        d.field(&p("spec.replicas.x")),
        FieldLookup::Unknown { at: 2 }
    );
    // metadata is ObjectMeta; labels is a map of strings.
    assert_eq!(
        type_of(d.field(&p(r#"metadata.labels["app.kubernetes.io/name"]"#))),
        "string"
    );
    assert_eq!(type_of(d.field(&p("apiVersion"))), "string");
    assert_eq!(d.field(&p("metadata.nme")), FieldLookup::Unknown { at: 1 });
    // The root resolves to the Deployment definition itself.
    let FieldLookup::Schema(root) = d.field(&FieldPath::root()) else {
        panic!()
    };
    assert!(root["properties"]["spec"].is_object());
}

#[test]
fn check_literal_catches_type_mismatch_and_unknown_field() {
    let d = deployment();
    let v = yaml(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
spec:
  replicas: "3"
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: "${schema.spec.image}"
          ports: [{containerPort: "${schema.spec.port}"}]
          resources: {limits: {cpu: 1, memory: 512Mi}}
      foo: 1
"#,
    );
    let errs = d.check_literal(&v);
    assert_eq!(
        messages(&errs),
        [
            "spec.replicas: expected integer type for path spec.replicas, got string",
            "spec.template.spec.foo: schema not found for field foo",
        ]
    );
    assert_eq!(errs[1].0, p("spec.template.spec.foo"));
}

#[test]
fn check_literal_reports_containers_kind_mismatch_and_floats() {
    let d = deployment();
    let v = json!({"spec": {"replicas": 1.5, "paused": "yes",
        "template": {"spec": {"containers": {"name": "x"}}}}});
    assert_eq!(
        messages(&d.check_literal(&v)),
        [
            "spec.replicas: expected integer type for path spec.replicas, got float64",
            "spec.paused: expected boolean type for path spec.paused, got string",
            "spec.template.spec.containers: expected array type for path spec.template.spec.containers, got object",
        ]
    );
}

/// issue 24: a whole number beyond int64 is not an integer Kubernetes can decode; it was
/// accepted because JSON holds it as an unsigned number.
#[test]
fn integers_beyond_int64_are_out_of_range() {
    let d = deployment();
    let max = json!({"spec": {"replicas": i64::MAX}});
    assert!(d.check_literal(&max).is_empty());
    let over = json!({"spec": {"replicas": 9_223_372_036_854_775_808u64}});
    assert_eq!(
        messages(&d.check_literal(&over)),
        ["spec.replicas: 9223372036854775808 is out of range for an integer at spec.replicas: integers are 64-bit signed, at most 9223372036854775807"]
    );
}

#[test]
fn int_or_string_accepts_both() {
    let svc = Schemas::bundled().lookup("v1", "Service").unwrap();
    for port in [json!(8080), json!("http")] {
        let v = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
            "spec": {"ports": [{"port": 80, "targetPort": port}]}});
        assert!(svc.check_literal(&v).is_empty(), "{port}");
    }
    let v = json!({"spec": {"ports": [{"targetPort": true}]}});
    assert_eq!(
        messages(&svc.check_literal(&v)),
        ["spec.ports[0].targetPort: expected string or integer type for path spec.ports[0].targetPort, got boolean"]
    );
    let FieldLookup::Schema(tp) = svc.field(&p("spec.ports[0].targetPort")) else {
        panic!()
    };
    assert!(tp["oneOf"].is_array());
}

/// The walk keeps its place on the stack and writes a path out only for a finding: every finding
/// names its full path, below list items and keys that need quoting, and the root-only rules
/// (`metadata` is ObjectMeta, `apiVersion`/`kind` are strings) apply at the root only.
#[test]
fn check_rendered_names_each_finding_by_its_full_path() {
    let d = deployment();
    let v = json!({"apiVersion": "apps/v1", "kind": 7,
        "metadata": {"name": "d", "annotations": {"a.b/c": 1}, "bogus": true},
        "spec": {"template": {
            "metadata": {"labels": {"app": "x"}, "kind": "Pod"},
            "spec": {"containers": [
                {"name": "a", "image": "i"},
                {"name": "b", "image": "i", "ports": [{"containerPort": "80"}]}]}}}});
    assert_eq!(
        messages(&d.check_rendered(&v)),
        [
            "kind: expected string type for path kind, got integer",
            r#"metadata.annotations["a.b/c"]: expected string type for path metadata.annotations["a.b/c"], got integer"#,
            "metadata.bogus: schema not found for field bogus",
            "spec.template.metadata.kind: schema not found for field kind",
            "spec.template.spec.containers[1].ports[0].containerPort: expected integer type for path spec.template.spec.containers[1].ports[0].containerPort, got string",
        ]
    );
}

/// A rendered object's strings must be one of their node's `enum` values, `${` or not (it has
/// no expressions left); a template's `${}` strings are left to the CEL checks.
#[test]
fn enums_are_checked_in_rendered_objects_only() {
    let crd = yaml(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.example.com}
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                parts:
                  type: array
                  items:
                    type: object
                    properties:
                      mode: {type: string, enum: [fast, slow]}
                      count: {type: integer}
"#,
    );
    let mut s = Schemas::bundled();
    s.add_crd(&crd).unwrap();
    let g = s.lookup("example.com/v1", "Gadget").unwrap();
    let v = json!({"spec": {"parts": [
        {"mode": "fast"}, {"mode": "medium", "count": "2"}, {"mode": "${x}", "count": "${n}"}]}});
    assert_eq!(
        messages(&g.check_rendered(&v)),
        [
            r#"spec.parts[1].mode: "medium" is not one of the allowed values "fast", "slow""#,
            "spec.parts[1].count: expected integer type for path spec.parts[1].count, got string",
            r#"spec.parts[2].mode: "${x}" is not one of the allowed values "fast", "slow""#,
        ]
    );
    assert_eq!(
        messages(&g.check_literal(&v)),
        ["spec.parts[1].count: expected integer type for path spec.parts[1].count, got string"]
    );
}

#[test]
fn configmap_data_is_a_map_of_strings() {
    let cm = Schemas::bundled().lookup("v1", "ConfigMap").unwrap();
    assert_eq!(type_of(cm.field(&p("data.anything"))), "string");
    assert_eq!(type_of(cm.field(&p(r#"data["app.conf"]"#))), "string");
    let v = json!({"data": {"a": "1", "b": 2, "c": "${x}", "d": null}});
    assert_eq!(
        messages(&cm.check_literal(&v)),
        ["data.b: expected string type for path data.b, got integer"]
    );
}

#[test]
fn crd_with_preserve_unknown_fields() {
    let crd = yaml(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
                port: {x-kubernetes-int-or-string: true}
                config:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                tags: {type: array, items: {type: string}}
    - name: v0
      served: false
      storage: false
"#,
    );
    let mut s = Schemas::bundled();
    s.add_crd(&crd).unwrap();
    assert!(s.lookup("example.com/v0", "Widget").is_none());
    let w = s.lookup("example.com/v1", "Widget").unwrap();
    assert!(!w.namespaced);
    assert_eq!(type_of(w.field(&p("spec.size"))), "integer");
    assert_eq!(type_of(w.field(&p("spec.tags[3]"))), "string");
    assert_eq!(w.field(&p("spec.config.a.b[0]")), FieldLookup::Anything);
    assert_eq!(w.field(&p("spec.colour")), FieldLookup::Unknown { at: 1 });
    // metadata is ObjectMeta even though the CRD schema does not say so.
    assert_eq!(type_of(w.field(&p("metadata.name"))), "string");
    let v = yaml(
        r#"
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, labels: {a: b}}
spec:
  size: "${schema.spec.size}"
  port: http
  config: {anything: [1, {goes: here}]}
  tags: [a, 1]
  colour: red
"#,
    );
    assert_eq!(
        messages(&w.check_literal(&v)),
        [
            "spec.tags[1]: expected string type for path spec.tags[1], got integer",
            "spec.colour: schema not found for field colour",
        ]
    );
    // The bundle itself is not modified by adding a CRD.
    assert!(Schemas::bundled()
        .lookup("example.com/v1", "Widget")
        .is_none());
}

#[test]
fn add_crd_rejects_non_crds() {
    let mut s = Schemas::bundled();
    let refused = s
        .add_crd(&json!({"apiVersion": "v1", "kind": "ConfigMap"}))
        .expect_err("an error");
    assert!(
        refused.to_string().contains("CustomResourceDefinition"),
        "{refused}"
    );
    let bad_scope = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "spec": {"group": "g", "names": {"kind": "K"}, "scope": "Global", "versions": []}});
    assert!(s.add_crd(&bad_scope).unwrap_err().contains("scope"));
}

#[test]
fn scope_of_builtin_kinds() {
    let s = Schemas::bundled();
    let ns = |av: &str, k: &str| s.lookup(av, k).unwrap().namespaced;
    assert!(!ns("v1", "Namespace"));
    assert!(!ns("v1", "NamespaceList"));
    assert!(ns("apps/v1", "Deployment"));
    assert!(!ns("rbac.authorization.k8s.io/v1", "ClusterRole"));
    assert!(ns("rbac.authorization.k8s.io/v1", "Role"));
    assert!(!ns("apiextensions.k8s.io/v1", "CustomResourceDefinition"));
    assert!(ns("v1", "ConfigMap"));
    assert!(s.lookup("apps/v1", "Nope").is_none());
    assert!(s.lookup("v1", "DeleteOptions").is_none());
}

#[test]
fn free_form_fields_accept_anything() {
    // ControllerRevision.data is a RawExtension: a bare object.
    let cr = Schemas::bundled()
        .lookup("apps/v1", "ControllerRevision")
        .unwrap();
    assert_eq!(cr.field(&p("data.spec.x")), FieldLookup::Anything);
    assert!(cr
        .check_literal(&json!({"revision": 1, "data": {"spec": {"x": [1]}}}))
        .is_empty());
    // Quantity is string or number.
    let pod = Schemas::bundled().lookup("v1", "Pod").unwrap();
    let v = json!({"spec": {"containers": [{"name": "a",
        "resources": {"requests": {"cpu": 0.5, "memory": "1Gi"}, "limits": {"cpu": true}}}]}});
    assert_eq!(
        messages(&pod.check_literal(&v)),
        ["spec.containers[0].resources.limits.cpu: expected string or number type for path spec.containers[0].resources.limits.cpu, got boolean"]
    );
}

/// A node kept for a schema is the node `resolve` gives: the bundled definition itself (shared,
/// not copied) behind a `$ref`, a merged copy behind `allOf`, an empty node for a dangling
/// reference, and the node itself when it is inline.
#[test]
fn shared_nodes_are_the_resolved_nodes() {
    let b = Schemas::bundled().bundle;
    let mut shared = 0;
    for &(key, ..) in DEF_INDEX {
        for node in [
            json!({"$ref": format!("#/$defs/{key}")}),
            json!({"allOf": [{"$ref": format!("#/$defs/{key}")}], "description": "x"}),
            b.def(key).unwrap().clone(),
        ] {
            let kept = walk::resolve_shared(&b, &node);
            assert_eq!(
                *kept,
                walk::resolve(&b, &node, 0).into_owned(),
                "{key}: {node}"
            );
            if b.def_shared(key).is_some_and(|d| Arc::ptr_eq(d, &kept)) {
                shared += 1;
            }
        }
    }
    // Every definition reached through a plain `$ref` is shared, except those made of `allOf`.
    assert!(shared > DEF_INDEX.len() * 9 / 10, "{shared}");
    let dangling = json!({"$ref": "#/$defs/no.such.Definition"});
    assert_eq!(*walk::resolve_shared(&b, &dangling), json!({}));
}

#[test]
fn builtin_kind_lookup_agrees_with_the_table() {
    let all: Vec<_> = builtin_kinds().collect();
    assert!(all.len() > 100);
    for (api, kind) in &all {
        assert!(is_builtin_kind(api, kind), "{api} {kind}");
    }
    for (api, kind) in [
        ("apps/v1", "Deploymnet"),
        ("apps", "v1/Deployment"),
        ("apps/v", "1/Deployment"),
        ("v1", "service"),
        ("networking.k8s.io/v1beta1", "Ingress"),
        ("", ""),
        ("apps/v1/Deployment", ""),
    ] {
        assert!(!is_builtin_kind(api, kind), "{api} {kind}");
    }
    assert!(is_builtin_group("") && is_builtin_group("apps") && !is_builtin_group("example.com"));
}

/// The walk of a rendered object on compiled nodes finds what the walk on the raw schema finds,
/// message for message and in the same order, and again when the nodes are already compiled:
/// properties, `$ref`s, `additionalProperties`, `items`, `oneOf`/`anyOf` branches, int-or-string,
/// preserved fields, enums, the root's own rules and integers out of range.
#[test]
fn compiled_check_finds_what_the_walk_finds() {
    let crd = yaml(
        r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {x-kubernetes-int-or-string: true}
                mode: {type: string, enum: [a, b]}
                extra:
                  type: object
                  x-kubernetes-preserve-unknown-fields: true
                  properties: {n: {type: integer}}
                tags: {type: object, additionalProperties: {type: integer}}
                either:
                  oneOf:
                    - properties: {left: {type: string}}
                    - properties: {right: {type: boolean}}
                list:
                  type: array
                  items:
                    anyOf:
                      - {type: string}
                      - {type: integer}
"#,
    );
    let mut s = Schemas::bundled();
    s.add_crd(&crd).unwrap();
    let objects = [
        (
            "example.com/v1",
            "Widget",
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                "metadata": {"name": "w", "labels": {"a": 1}, "bogus": 2},
                "spec": {"size": "3", "mode": "c", "extra": {"x": [1], "n": "not checked"},
                    "tags": {"t": "no", "u": 4},
                    "either": {"left": 1, "right": "x", "middle": true},
                    "list": ["a", 1, true, {"k": 1}], "unknown": null, "nope": 1}}),
        ),
        (
            "apps/v1",
            "Deployment",
            json!({"apiVersion": "apps/v1", "kind": 7,
                "metadata": {"name": "d", "annotations": {"a.b/c": 1}},
                "spec": {"replicas": "2", "selector": {"matchLabels": {"app": "x"}},
                    "template": {"metadata": {"labels": {"app": "x"}, "kind": "Pod"},
                    "spec": {"containers": [
                        {"name": "a", "image": "i", "imagePullPolicy": "Sometimes",
                         "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
                         "ports": [{"containerPort": 18446744073709551615u64, "protocol": "TCP"}]},
                        {"name": "b", "image": "i", "ports": [{"containerPort": "80"}],
                         "env": [{"name": "E", "value": 1, "valueFrom": {"fieldRef": {"x": 1}}}]}],
                        "volumes": "none"}}}}),
        ),
        (
            "v1",
            "Service",
            json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
                "spec": {"type": "Balanced", "ports": [{"port": 80, "targetPort": "http"},
                    {"port": 1.5, "targetPort": true}], "selector": ["a"]}}),
        ),
    ];
    for (api, kind, v) in &objects {
        let ks = s.lookup(api, kind).unwrap();
        let mut walked = Vec::new();
        walk::check(
            &ks.bundle,
            &ks.root,
            v,
            &FieldPath::root(),
            true,
            &mut walked,
        );
        assert!(!walked.is_empty(), "{kind}: the case finds something");
        assert_eq!(messages(&ks.check_rendered(v)), messages(&walked), "{kind}");
        // Compiled nodes kept from the first check give the same findings.
        assert_eq!(
            messages(&ks.check_rendered(v)),
            messages(&walked),
            "{kind}, again"
        );
    }
}
