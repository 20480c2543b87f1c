//! `kiln schema` on ResourceGraphDefinitions: the instance CRD kro would create, checked by an
//! independent validator (`kubernetes-validate --strict` from PyPI, installed into target/ by
//! scripts/kubernetes-validate.sh), and by hand on one example.

use crate::common;

use common::{kiln, root, validator};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn schema_json(path: &str) -> Value {
    let o = kiln(&root(), &["schema", "--output-format", "json", path]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

/// Names, scope, version, printer columns, and a status schema typed from the status expressions.
#[test]
fn crd_of_the_webapp_example() {
    let crd = schema_json("examples/webapp/rgd.yaml");
    assert_eq!(crd["kind"], "CustomResourceDefinition");
    assert_eq!(crd["metadata"]["name"], "webapps.example.com");
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "example.com");
    assert_eq!(spec["scope"], "Namespaced");
    assert_eq!(
        spec["names"],
        serde_json::json!({"kind": "WebApp", "listKind": "WebAppList", "plural": "webapps", "singular": "webapp"})
    );
    let v = &spec["versions"][0];
    assert_eq!(v["name"], "v1alpha1");
    assert_eq!(v["served"], true);
    assert_eq!(v["storage"], true);
    assert_eq!(v["subresources"], serde_json::json!({"status": {}}));
    let columns: Vec<&str> = v["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(columns, ["State", "Ready", "Age"]);
    // The descriptions kro's pkg/graph/crd/defaults.go gives them.
    let descriptions: Vec<&str> = v["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["description"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        descriptions,
        [
            "The state of a ResourceGraphDefinition instance",
            "Whether a ResourceGraphDefinition instance is ready",
            "Age of the resource"
        ]
    );
    let props = &v["schema"]["openAPIV3Schema"]["properties"];
    assert_eq!(props["spec"]["properties"]["replicas"]["type"], "integer");
    let status = &props["status"]["properties"];
    assert_eq!(status["state"]["type"], "string");
    assert_eq!(status["conditions"]["type"], "array");
}

/// Status fields take the CEL type of their expression (kro's table, reference §8).
#[test]
fn status_schema_is_inferred_from_expression_types() {
    let dir = tempfile::tempdir().unwrap();
    let rgd = dir.path().join("rgd.yaml");
    std::fs::write(
        &rgd,
        r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: apps.kro.run}
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    scope: Cluster
    group: apps.example.org
    spec:
      name: string
    status:
      replicas: ${deployment.status.availableReplicas}
      endpoint: "http://${service.spec.clusterIP}"
      ready: ${deployment.status.availableReplicas > 0}
      ports: ${service.spec.ports.map(p, p.port)}
      nested:
        selector: ${deployment.spec.selector}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${schema.spec.name}", namespace: default}
        spec:
          selector: {matchLabels: {app: x}}
          template:
            metadata: {labels: {app: x}}
            spec: {containers: [{name: app, image: nginx}]}
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${schema.spec.name}", namespace: default}
        spec:
          ports: [{port: 80}]
"#,
    )
    .unwrap();
    let crd = schema_json(rgd.to_str().unwrap());
    assert_eq!(crd["metadata"]["name"], "apps.apps.example.org");
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let status = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"]
        ["properties"];
    assert_eq!(status["replicas"], serde_json::json!({"type": "integer"}));
    assert_eq!(status["endpoint"], serde_json::json!({"type": "string"}));
    assert_eq!(status["ready"], serde_json::json!({"type": "boolean"}));
    assert_eq!(
        status["ports"],
        serde_json::json!({"type": "array", "items": {"type": "integer"}})
    );
    let selector = &status["nested"]["properties"]["selector"];
    assert_eq!(selector["type"], "object");
    assert_eq!(
        selector["properties"]["matchLabels"]["additionalProperties"]["type"],
        "string"
    );
}

/// Every CRD kiln generates for the upstream corpus and the examples passes
/// `kubernetes-validate --strict` (the apiextensions.k8s.io/v1 schema, unknown fields rejected).
#[test]
fn generated_crds_pass_kubernetes_validate() {
    let exe = validator();
    let out = tempfile::tempdir().unwrap();
    let mut inputs: Vec<PathBuf> = std::fs::read_dir(root().join("testdata/corpus/kro"))
        .unwrap()
        .map(|e| e.unwrap().path().join("rgd.yaml"))
        .filter(|p| p.exists())
        .collect();
    inputs.sort();
    inputs.push(root().join("examples/webapp/rgd.yaml"));
    let mut files = Vec::new();
    for (i, rgd) in inputs.iter().enumerate() {
        // A true upstream error (see cli.rs every_corpus_rgd_validates): no CRD to generate.
        if rgd.to_string_lossy().contains("gemma-on-tpu") {
            continue;
        }
        let o = kiln(&root(), &["schema", rgd.to_str().unwrap()]);
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}: {}",
            rgd.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        let f = out.path().join(format!("crd-{i:02}.yaml"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f);
    }
    assert!(files.len() >= 40, "{} CRDs", files.len());
    let o = Command::new(&exe)
        .arg("--strict")
        .args(&files)
        .output()
        .expect("kubernetes-validate runs");
    let report =
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{report}");
    // The validator must have recognised each file as a CRD, not skipped it.
    let passed = report
        .lines()
        .filter(|l| l.contains("passed for resource customresourcedefinition/"))
        .count();
    assert_eq!(passed, files.len(), "{report}");
}

/// The validator really rejects a broken CRD, so the test above can fail.
#[test]
fn kubernetes_validate_rejects_a_broken_crd() {
    let exe = validator();
    let o = kiln(&root(), &["schema", "examples/webapp/rgd.yaml"]);
    let text = String::from_utf8_lossy(&o.stdout).replace("storage: true", "storage: 1");
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("crd.yaml");
    std::fs::write(&f, text).unwrap();
    let o = Command::new(&exe).arg("--strict").arg(&f).output().unwrap();
    assert!(!o.status.success());
}

/// Unknown Kubernetes versions are refused with a hint naming the bundled one.
#[test]
fn kube_version_must_be_bundled() {
    let o = kiln(
        &root(),
        &["validate", "--kube-version", "1.20", "examples/webapp"],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("bundled: 1.37"));
    let o = kiln(
        &root(),
        &["validate", "--kube-version", "1.37", "examples/webapp"],
    );
    assert_eq!(o.status.code(), Some(0));
}

/// `--kube-version`'s help says which version is bundled, in every command that takes it,
/// instead of pointing at another help that repeats it (issue 40).
#[test]
fn kube_version_help_names_the_bundled_version() {
    let bundled = kiln_core::openapi::Schemas::kubernetes_version();
    for cmd in ["render", "validate", "schema", "diff"] {
        let o = kiln(&root(), &[cmd, "--help"]);
        let help = String::from_utf8_lossy(&o.stdout);
        let entry = help
            .split("--kube-version")
            .nth(1)
            .and_then(|rest| rest.split("\n\n").next())
            .unwrap_or_else(|| panic!("kiln {cmd} --help has no --kube-version: {help}"));
        assert!(
            entry.contains(&format!("Kubernetes {bundled} only")),
            "kiln {cmd}: {entry}"
        );
        assert!(!entry.contains("--help"), "kiln {cmd}: {entry}");
    }
}

/// `--crds DIR` makes a custom kind's schema known: an unknown field is then an error.
#[test]
fn crds_from_a_directory_check_templates() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("crds")).unwrap();
    std::fs::write(
        dir.path().join("crds/widget.yaml"),
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.org}
spec:
  group: example.org
  scope: Namespaced
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
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
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("rgd.yaml"),
        r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: w.kro.run}
spec:
  schema:
    apiVersion: v1alpha1
    kind: W
    spec: {name: string}
  resources:
    - id: widget
      template:
        apiVersion: example.org/v1
        kind: Widget
        metadata: {name: "${schema.spec.name}"}
        spec: {size: "${schema.spec.name}", colour: red}
"#,
    )
    .unwrap();
    let rgd = dir.path().join("rgd.yaml");
    // Without the CRD the kind is unknown and its fields are not checked.
    let o = kiln(&root(), &["validate", rgd.to_str().unwrap()]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let crds = dir.path().join("crds");
    let o = kiln(
        &root(),
        &[
            "validate",
            "--diagnostics",
            "json",
            "--crds",
            crds.to_str().unwrap(),
            rgd.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&o.stderr).unwrap();
    let codes: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    // The unknown field, and (in the same run: KLN2010 no longer hides the type checks) the
    // string written into the CRD's integer field.
    assert_eq!(codes, ["KLN2010", "KLN3009"], "{v}");
}

/// Custom status conditions (issue 26 item 1): kro takes `status.conditions` out of the status
/// before inferring its schema and gives the CRD its standard conditions list instead
/// (pkg/graph/builder.go inferStatusSchema, pkg/graph/crd/defaults.go defaultConditionsType: four
/// strings, lastTransitionTime a string, observedGeneration an integer, no formats).
#[test]
fn custom_conditions_are_typed_as_kro_types_them() {
    let crd = schema_json("testdata/strategies/status-conditions/rgd.yaml");
    let status = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"];
    assert_eq!(
        status["properties"]["conditions"],
        serde_json::json!({
            "type": "array",
            "items": {"type": "object", "properties": {
                "type": {"type": "string"},
                "status": {"type": "string"},
                "reason": {"type": "string"},
                "message": {"type": "string"},
                "lastTransitionTime": {"type": "string"},
                "observedGeneration": {"type": "integer"},
            }}
        })
    );
    // The other status fields are still inferred from their expressions.
    assert_eq!(
        status["properties"]["endpoint"],
        serde_json::json!({"type": "string"})
    );
}
