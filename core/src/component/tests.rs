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
            ..Options::default()
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
    let dev = run(&format!("{BASIC}{DEV}"), Some("dev")).unwrap();
    assert_eq!(dev.objects[0]["spec"]["replicas"], json!(1));
    // An environment nothing mentions is a typo, not a request for the defaults.
    let e = run(BASIC, Some("prdo")).unwrap_err();
    assert_eq!(e.0[0].code.id, "KLN6015");
    assert!(e.0[0]
        .hint
        .as_deref()
        .unwrap()
        .contains("did you mean \"prod\"?"));
}

/// `--env` names an environment the inputs must mention, also when they mention none at all
/// (README: an `--env` no ComponentDeployment mentions is an error): rendering the defaults
/// would label them with a typo.
#[test]
fn an_environment_is_refused_when_the_inputs_name_none() {
    let no_env = BASIC
        .split("---\napiVersion: openchoreo.dev/v1alpha1\nkind: ComponentDeployment")
        .next()
        .unwrap();
    assert!(!no_env.contains("ComponentDeployment"));
    let e = run(no_env, Some("production")).unwrap_err();
    assert_eq!(e.0[0].code.id, "KLN6015");
    assert!(
        e.0[0]
            .hint
            .as_deref()
            .unwrap()
            .contains("the inputs name no environment"),
        "{:?}",
        e.0[0].hint
    );
}

/// A development environment with no overrides.
const DEV: &str = r#"---
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentDeployment
metadata: {name: shop-dev}
spec: {owner: {componentName: shop}, environment: dev}
"#;

fn codes_of(e: &Diagnostics) -> Vec<(&'static str, String)> {
    e.0.iter()
        .filter(|d| d.is_error())
        .map(|d| (d.code.id, d.path.clone().unwrap_or_default()))
        .collect()
}

#[test]
fn interpolated_scalars_and_maps_are_not_type_errors() {
    // Upstream writes ints, bools and maps inside strings as text (its engine tests pin it).
    let text = BASIC.replace(
        "metadata: {name: \"${metadata.name}\"}",
        "metadata: {name: \"${metadata.name}-${parameters.port}\", annotations: {a: \"x ${metadata.labels} ${parameters.replicas > 1}\"}}",
    );
    let out = run(&text, Some("prod")).unwrap();
    assert_eq!(out.objects[0]["metadata"]["name"], json!("shop-8080"));
    assert_eq!(
        out.objects[0]["metadata"]["annotations"]["a"],
        json!("x {} true")
    );
}

#[test]
fn type_errors_are_found_where_rendering_would_not_reach() {
    // The HPA is never included, but its misspelt parameter is still an error.
    let text = BASIC.replace(
        "  resources:\n",
        "  resources:\n    - id: hpa\n      includeWhen: ${false}\n      template: {apiVersion: v1, kind: ConfigMap, metadata: {name: \"${parameters.prot}\"}}\n",
    );
    let e = run(&text, Some("prod")).unwrap_err();
    assert_eq!(
        codes_of(&e),
        [(
            "KLN3008",
            "spec.resources[0].template.metadata.name".to_string()
        )]
    );
}

#[test]
fn a_malformed_workload_list_is_reported_at_the_workload() {
    let text = BASIC
        .replace(
            "spec: {containers: {app: {image: \"nginx:1\"}}}",
            "spec: {containers: {app: {image: \"nginx:1\", env: oops}}}",
        )
        .replace(
            "overrides: {replicas: 3}}",
            "overrides: {replicas: 3}, configurationOverrides: {env: [{key: A, value: b}]}}",
        );
    let e = run(&text, Some("prod")).unwrap_err();
    assert_eq!(
        codes_of(&e),
        [("KLN6001", "spec.containers.app.env".to_string())]
    );
    // Without overrides the Workload's own shape is the template's business.
    assert!(run(&format!("{text}{DEV}"), Some("dev")).is_ok());
}

/// [`BASIC`] with an Addon named `name` of `spec` (its lines, indented) beside it, used by its
/// Component as instance `t`.
fn with_addon(name: &str, spec: &str) -> String {
    let addon =
        format!("apiVersion: openchoreo.dev/v1alpha1\nkind: Addon\nmetadata: {{name: {name}}}\nspec:\n{spec}");
    format!("{BASIC}---\n{addon}").replace(
        "spec: {componentType: deployment/web}",
        &format!(
            "spec: {{componentType: deployment/web, addons: [{{name: {name}, instanceName: t}}]}}"
        ),
    )
}

#[test]
fn removes_mark_then_drop() {
    let text = with_addon(
        "trim",
        r#"  creates:
    - template: {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}
    - template: {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}
  removes:
    - target: {version: v1, kind: ConfigMap, where: "${resource.metadata.name == 'a'}"}
    - target: {version: v1, kind: ConfigMap}
"#,
    );
    let out = run(&text, Some("prod")).unwrap();
    let kinds: Vec<&str> = out
        .objects
        .iter()
        .map(|o| o["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["Deployment"]);
}

/// Errors in rendering name the path of the value that failed, however deep, after siblings
/// rendered fine (the renderer extends and restores one path as it walks).
#[test]
fn render_errors_name_the_failing_path() {
    let text = BASIC.replace(
        r#"containers: [{name: app, image: "${workload.containers.app.image}"}]"#,
        r#"containers: [{name: app, image: "${workload.containers.app.image}"}, {name: "x", args: ["a", "${string(1 / (parameters.port - 8080))}"]}]"#,
    );
    let e = run(&text, Some("prod")).unwrap_err();
    let got = codes_of(&e);
    assert_eq!(
        got,
        [(
            "KLN5002",
            "spec.resources[0].template.spec.template.spec.containers[1].args[1]".to_string()
        )]
    );
}

/// A patch path with `${…}` is parsed for each item, one without once per definition: both
/// apply for every item, over units that share the definition.
#[test]
fn patch_paths_are_rendered_per_item() {
    let text = with_addon(
        "tag",
        r#"  patches:
    - forEach: "${['a', 'b']}"
      var: item
      target: {group: apps, version: v1, kind: Deployment}
      operations:
        - {op: add, path: "/metadata/annotations/${item}", value: "v-${item}"}
        - {op: add, path: /metadata/annotations/last, value: "${item}"}
"#,
    );
    let text = format!(
        "{text}---\n{}",
        r#"apiVersion: openchoreo.dev/v1alpha1
kind: ComponentDeployment
metadata: {name: shop-dev}
spec: {owner: {componentName: shop}, environment: dev}
"#
    );
    for env in ["prod", "dev"] {
        let out = run(&text, Some(env)).unwrap();
        assert_eq!(
            out.objects[0]["metadata"]["annotations"],
            serde_json::json!({"a": "v-a", "b": "v-b", "last": "b"}),
            "{env}"
        );
    }
}

/// The pipeline hands a component's own documents' specs over, moved out of the documents
/// (`takes_spec`, `render_units_taking`): they must read as the same definitions as specs read
/// in place, valid or not, in both models (same objects, same diagnostics at the same lines).
#[test]
fn specs_handed_over_read_as_specs_in_place() {
    let broken = r#"
apiVersion: openchoreo.dev/v1alpha1
kind: Component
metadata: {name: shop}
spec: {componentType: deployment/web, parameters: [1]}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Workload
metadata: {name: shop}
spec: {containers: 5}
---
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentDeployment
metadata: {name: shop-prod}
spec: {owner: {componentName: shop}, environment: prod, state: Paused, overrides: 3}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Component
metadata: {name: api}
spec:
  owner: {projectName: shop}
  componentType: {kind: ComponentType, name: deployment/web}
  traits: 5
"#;
    let cases = [
        (BASIC.to_string(), "prod"),
        (format!("{BASIC}---{broken}"), "prod"),
    ];
    let opts = |env: &str| Options {
        env: Some(env.to_string()),
        namespace: Some("default".into()),
        ..Options::default()
    };
    for (text, env) in cases {
        let d = docs(&text);
        let refs: Vec<&Document> = d.iter().collect();
        let in_place = render_units(&refs, &opts(env), Ok);
        let mut d = docs(&text);
        let specs: Vec<Option<Value>> = d
            .iter_mut()
            .map(|x| {
                if takes_spec(x) {
                    x.value.get_mut("spec").map(Value::take)
                } else {
                    None
                }
            })
            .collect();
        assert!(specs.iter().flatten().count() >= 3, "specs handed over");
        let refs: Vec<&Document> = d.iter().collect();
        let handed = render_units_taking(&refs, specs, &opts(env), Ok, None);
        if text.len() > BASIC.len() {
            let e = in_place.as_ref().expect_err("the broken documents fail");
            assert!(e.0.len() >= 4, "{e:?}");
        }
        assert_eq!(format!("{handed:?}"), format!("{in_place:?}"));
    }
}

/// Plain field paths are read from the variables' maps without the interpreter
/// (`template::selected`); wrapping the same path in `[…][0]` makes CEL evaluate it. Both must
/// give the same objects, or fail with the same code and message.
#[test]
fn field_paths_read_directly_match_cel() {
    // Each path in a field of its type: the replicas (int), the image (string) or the pod
    // template's labels (map).
    let render = |expr: &str, slot: &str| {
        let text = match slot {
            "int" => BASIC.replacen(
                "replicas: ${parameters.replicas}",
                &format!("replicas: ${{{expr}}}"),
                1,
            ),
            "string" => BASIC.replacen(
                "image: \"${workload.containers.app.image}\"",
                &format!("image: \"${{{expr}}}\""),
                1,
            ),
            _ => BASIC.replacen(
                "          template:\n            spec:",
                &format!("          template:\n            metadata: {{labels: \"${{{expr}}}\"}}\n            spec:"),
                1,
            ),
        };
        assert!(text.contains(&format!("${{{expr}}}")), "{slot}");
        run(&text, Some("prod")).map(|r| r.objects[0]["spec"].clone())
    };
    let ok = [
        ("parameters.port", "int"),
        ("parameters.replicas", "int"),
        ("metadata.name", "string"),
        ("workload.containers.app.image", "string"),
        ("metadata.labels", "map"),
    ];
    for (path, slot) in ok {
        let direct = render(path, slot).unwrap_or_else(|e| panic!("{path}: {e:?}"));
        let cel = render(&format!("[{path}][0]"), slot).unwrap();
        assert_eq!(direct, cel, "{path}");
    }
    for (path, slot) in [
        ("parameters.missing", "int"),
        ("metadata.name.first", "string"),
        ("workload.containers.app.image.tag", "string"),
        ("parameters.port.x", "int"),
    ] {
        let direct = render(path, slot).expect_err(path);
        let cel = render(&format!("[{path}][0]"), slot).expect_err(path);
        let said = |e: &Diagnostics| -> Vec<(&'static str, String)> {
            e.0.iter()
                .map(|d| (d.code.id, d.message.replace(&format!("[{path}][0]"), path)))
                .collect()
        };
        assert_eq!(said(&direct), said(&cel), "{path}");
    }
}
