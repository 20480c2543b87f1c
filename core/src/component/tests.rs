//! End-to-end tests of the component front-end on in-memory documents.

use super::*;
use crate::document::{parse_file, YamlLimits};

fn docs(text: &str) -> Vec<Document> {
    parse_file("t.yaml", text.to_string(), &YamlLimits::default()).unwrap()
}

fn run(text: &str, env: Option<&str>) -> Result<Rendered, Diagnostics> {
    let d = docs(text);
    let refs: Vec<&Document> = d.iter().collect();
    render(
        &refs,
        &Options {
            env: env.map(str::to_string),
            namespace: Some("default".into()),
        },
    )
}

const BASIC: &str = r#"
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentTypeDefinition
metadata: {name: web}
spec:
  workloadType: deployment
  schema:
    parameters: {port: integer | default=8080}
    envOverrides: {replicas: integer | default=1}
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${metadata.name}"}
        spec:
          replicas: ${parameters.replicas}
          template:
            spec:
              containers: [{name: app, image: "${workload.containers.app.image}"}]
---
apiVersion: openchoreo.dev/v1alpha1
kind: Component
metadata: {name: shop}
spec: {componentType: deployment/web}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Workload
metadata: {name: shop}
spec: {containers: {app: {image: "nginx:1"}}}
---
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentDeployment
metadata: {name: shop-prod}
spec: {owner: {componentName: shop}, environment: prod, overrides: {replicas: 3}}
"#;

#[test]
fn renders_a_component_for_an_environment() {
    let out = run(BASIC, Some("prod")).unwrap();
    assert_eq!(out.objects.len(), 1);
    let d = &out.objects[0];
    assert_eq!(d["spec"]["replicas"], json!(3));
    assert_eq!(
        d["metadata"]["labels"]["openchoreo.org/environment"],
        json!("prod")
    );
    let dev = run(BASIC, Some("dev")).unwrap();
    assert_eq!(dev.objects[0]["spec"]["replicas"], json!(1));
}
