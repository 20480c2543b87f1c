//! Reading a Flux `kustomize.toolkit.fluxcd.io/v1` Kustomization: the fields that decide what
//! Flux builds and applies.
//!
//! Every problem is reported with its field path; fields that only steer the controller
//! (`interval`, `prune`, `sourceRef`, health checks, …) are accepted and ignored, and a field
//! the API does not have is an error, as the API server's strict validation makes it.

use kiln_core::diag::{bounded, codes, key_path, quote, Diagnostic, Diagnostics};
use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::flux::postbuild::Spec as PostBuildSpec;
use serde_json::{Map, Value};

/// The API version read.
pub const API_VERSION: &str = "kustomize.toolkit.fluxcd.io/v1";

/// Spec fields that do not change what is built (read by the controller only).
const CONTROLLER_FIELDS: &[&str] = &[
    "interval",
    "retryInterval",
    "timeout",
    "sourceRef",
    "prune",
    "wait",
    "force",
    "healthChecks",
    "healthCheckExprs",
    "dependsOn",
    "decryption",
    "kubeConfig",
    "serviceAccountName",
    "suspend",
    "deletionPolicy",
    "ignoreMissingComponents",
];

/// What a Kustomization says about building.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Kustomization {
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace` (where `substituteFrom` sources live), if set.
    pub namespace: Option<String>,
    /// `spec.path`, as written (`None`: the source's root).
    pub path: Option<String>,
    /// `spec.targetNamespace`.
    pub target_namespace: Option<String>,
    /// `spec.namePrefix`.
    pub name_prefix: Option<String>,
    /// `spec.nameSuffix`.
    pub name_suffix: Option<String>,
    /// `spec.commonMetadata.labels`.
    pub common_labels: Map<String, Value>,
    /// `spec.commonMetadata.annotations`.
    pub common_annotations: Map<String, Value>,
    /// `spec.patches`: `{patch, target}` entries, as kustomize's `patches`.
    pub patches: Vec<Value>,
    /// `spec.images`: kustomize image overrides.
    pub images: Vec<Value>,
    /// `spec.components`: paths relative to `spec.path`.
    pub components: Vec<String>,
    /// `spec.postBuild`, when present.
    pub post_build: Option<PostBuildSpec>,
}

fn err(path: &str, msg: impl Into<String>, hint: &str) -> Diagnostic {
    Diagnostic::error(codes::REQUEST_INVALID, msg)
        .at(path.to_string())
        .with_hint(hint)
}

/// Read the Kustomization in `text` (the file `name`). The file holds exactly one document.
pub fn parse(name: &str, text: &str, limits: &YamlLimits) -> Result<Kustomization, Diagnostics> {
    let docs = parse_file(name, text.to_string(), limits).map_err(|d| Diagnostics(vec![d]))?;
    let mut errs = Diagnostics::new();
    let in_file = |d: Diagnostic| d.in_file(name.to_string());
    let [doc] = docs.as_slice() else {
        errs.push(in_file(
            Diagnostic::error(
                codes::REQUEST_INVALID,
                format!(
                    "the file holds {} documents; a Kustomization file holds exactly one",
                    docs.len()
                ),
            )
            .with_hint("put the Flux Kustomization alone in the file"),
        ));
        return Err(errs);
    };
    let v = &doc.value;
    let hint_kind = "the file must hold a kustomize.toolkit.fluxcd.io/v1 Kustomization (Flux's, not kustomize's kustomization.yaml)";
    if v.get("apiVersion").and_then(Value::as_str) != Some(API_VERSION) {
        errs.push(err(
            "apiVersion",
            format!(
                "apiVersion is {}, not {API_VERSION}",
                v.get("apiVersion")
                    .map_or("missing".into(), |a| match a.as_str() {
                        Some(text) => quote(text),
                        None => bounded(&a.to_string()),
                    })
            ),
            hint_kind,
        ));
    }
    if v.get("kind").and_then(Value::as_str) != Some("Kustomization") {
        errs.push(err("kind", "kind is not Kustomization", hint_kind));
    }
    let mut k = Kustomization::default();
    match v.pointer("/metadata/name").and_then(Value::as_str) {
        Some(n) if !n.is_empty() => k.name = n.to_string(),
        _ => errs.push(err(
            "metadata.name",
            "metadata.name is missing",
            "name the Kustomization",
        )),
    }
    k.namespace = v
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .map(str::to_string);
    let spec = match v.get("spec") {
        Some(Value::Object(m)) => m.clone(),
        _ => {
            errs.push(err(
                "spec",
                "spec is missing or not a mapping",
                "a Kustomization has a spec with at least sourceRef and interval",
            ));
            Map::new()
        }
    };
    let string = |key: &str, errs: &mut Diagnostics| -> Option<String> {
        match spec.get(key) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                errs.push(err(
                    &format!("spec.{key}"),
                    format!("spec.{key} must be a string"),
                    "write it as a string",
                ));
                None
            }
        }
    };
    k.path = string("path", &mut errs);
    k.target_namespace = string("targetNamespace", &mut errs).filter(|s| !s.is_empty());
    // Both are namespaces the API server checks (targetNamespace is written into every object
    // of the build): its rule and its words.
    for (field, ns) in [
        ("metadata.namespace", &k.namespace),
        ("spec.targetNamespace", &k.target_namespace),
    ] {
        let given = ns.as_deref().filter(|s| !s.is_empty());
        if let Some(problem) = given.and_then(kiln_core::names::namespace_problem) {
            errs.push(err(field, problem, kiln_core::names::NAMESPACE_RULE));
        }
    }
    k.name_prefix = string("namePrefix", &mut errs).filter(|s| !s.is_empty());
    k.name_suffix = string("nameSuffix", &mut errs).filter(|s| !s.is_empty());
    let list = |key: &str, errs: &mut Diagnostics| -> Vec<Value> {
        match spec.get(key) {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(_) => {
                errs.push(err(
                    &format!("spec.{key}"),
                    format!("spec.{key} must be a list"),
                    "write it as a list",
                ));
                Vec::new()
            }
        }
    };
    for (i, p) in list("patches", &mut errs).into_iter().enumerate() {
        let at = format!("spec.patches[{i}]");
        let Some(m) = p.as_object() else {
            errs.push(err(
                &at,
                "a patch must be a mapping with patch and target",
                "write {patch: \"...\", target: {kind: ...}}",
            ));
            continue;
        };
        if !m.get("patch").is_some_and(Value::is_string) {
            errs.push(err(
                &format!("{at}.patch"),
                "a patch needs patch, a string (a strategic merge or JSON6902 patch)",
                "write the patch as a block string: patch: |",
            ));
        }
        if let Some(k) = m.keys().find(|k| !matches!(k.as_str(), "patch" | "target")) {
            errs.push(err(
                &key_path(&at, k, |a, k| format!("{a}.{k}")),
                format!("unknown patch field {}", quote(k)),
                "a patch has patch and target",
            ));
        }
        k.patches.push(p);
    }
    for (i, im) in list("images", &mut errs).into_iter().enumerate() {
        let at = format!("spec.images[{i}]");
        match im.as_object() {
            Some(m) if m.get("name").is_some_and(Value::is_string) => {
                if let Some(f) = m
                    .keys()
                    .find(|f| !matches!(f.as_str(), "name" | "newName" | "newTag" | "digest"))
                {
                    errs.push(err(
                        &key_path(&at, f, |a, f| format!("{a}.{f}")),
                        format!("unknown image field {}", quote(f)),
                        "an image has name, newName, newTag and digest",
                    ));
                }
                k.images.push(im);
            }
            _ => errs.push(err(
                &at,
                "an image needs a name",
                "write {name: app, newTag: v2}",
            )),
        }
    }
    for (i, c) in list("components", &mut errs).into_iter().enumerate() {
        match c {
            Value::String(s) => k.components.push(s),
            _ => errs.push(err(
                &format!("spec.components[{i}]"),
                "a component must be a path (a string)",
                "write the path relative to spec.path",
            )),
        }
    }
    match spec.get("commonMetadata") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (key, v) in m {
                let target = match key.as_str() {
                    "labels" => &mut k.common_labels,
                    "annotations" => &mut k.common_annotations,
                    other => {
                        errs.push(err(
                            &key_path("spec.commonMetadata", other, |a, o| format!("{a}.{o}")),
                            format!("unknown commonMetadata field {}", quote(other)),
                            "commonMetadata has labels and annotations",
                        ));
                        continue;
                    }
                };
                match v {
                    Value::Object(pairs) if pairs.values().all(Value::is_string) => {
                        *target = pairs.clone()
                    }
                    Value::Null => {}
                    _ => errs.push(err(
                        &format!("spec.commonMetadata.{key}"),
                        format!("commonMetadata.{key} must map names to strings"),
                        "quote the values",
                    )),
                }
            }
        }
        Some(_) => errs.push(err(
            "spec.commonMetadata",
            "commonMetadata must be a mapping",
            "write {labels: {...}, annotations: {...}}",
        )),
    }
    if let Some(pb) = spec.get("postBuild") {
        match PostBuildSpec::parse(pb) {
            Ok(s) => k.post_build = Some(s),
            Err(ds) => errs.extend(ds.0.into_iter().map(|d| {
                let p = d.path.clone().map_or("spec.postBuild".to_string(), |p| {
                    if p.is_empty() {
                        "spec.postBuild".into()
                    } else {
                        format!("spec.postBuild.{p}")
                    }
                });
                Diagnostic { path: Some(p), ..d }
            })),
        }
    }
    for key in spec.keys() {
        let known = CONTROLLER_FIELDS.contains(&key.as_str())
            || matches!(
                key.as_str(),
                "path"
                    | "targetNamespace"
                    | "namePrefix"
                    | "nameSuffix"
                    | "commonMetadata"
                    | "patches"
                    | "images"
                    | "components"
                    | "postBuild"
            );
        if !known {
            let hint = if matches!(key.as_str(), "patchesStrategicMerge" | "patchesJson6902") {
                "removed in kustomize.toolkit.fluxcd.io/v1: use spec.patches"
            } else {
                "check the spelling against the Kustomization API (kustomize.toolkit.fluxcd.io/v1)"
            };
            errs.push(err(
                &key_path("spec", key, |a, k| format!("{a}.{k}")),
                format!("unknown field spec.{}", bounded(key)),
                hint,
            ));
        }
    }
    if errs.is_empty() {
        Ok(k)
    } else {
        errs.0 = errs.0.into_iter().map(in_file).collect();
        Err(errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Kustomization, Diagnostics> {
        parse("ks.yaml", text, &YamlLimits::default())
    }

    const FULL: &str = r#"
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  interval: 10m
  sourceRef: {kind: OCIRepository, name: apps}
  path: ./deploy
  prune: true
  targetNamespace: shop
  namePrefix: p-
  commonMetadata: {labels: {team: a}, annotations: {owner: b}}
  patches:
    - patch: |
        - op: add
          path: /metadata/labels/x
          value: y
      target: {kind: Deployment}
  images: [{name: nginx, newTag: "1.27"}]
  components: [../components/hpa]
  postBuild:
    substitute: {env: prod}
    substituteFrom: [{kind: ConfigMap, name: vars, optional: true}]
"#;

    #[test]
    fn reads_every_build_field() {
        let k = read(FULL).unwrap();
        assert_eq!(k.name, "apps");
        assert_eq!(k.namespace.as_deref(), Some("flux-system"));
        assert_eq!(k.path.as_deref(), Some("./deploy"));
        assert_eq!(k.target_namespace.as_deref(), Some("shop"));
        assert_eq!(k.name_prefix.as_deref(), Some("p-"));
        assert_eq!(k.common_labels["team"], "a");
        assert_eq!(k.patches.len(), 1);
        assert_eq!(k.images.len(), 1);
        assert_eq!(k.components, ["../components/hpa"]);
        let pb = k.post_build.unwrap();
        assert_eq!(pb.substitute["env"], "prod");
        assert!(pb.substitute_from[0].optional);
    }

    #[test]
    fn problems_are_reported_with_their_fields() {
        let bad = FULL
            .replace(
                "kustomize.toolkit.fluxcd.io/v1",
                "kustomize.toolkit.fluxcd.io/v1beta1",
            )
            .replace("prune: true", "prune: true\n  patchesStrategicMerge: []")
            .replace("substitute: {env: prod}", "substitute: {env: 3}");
        let e = read(&bad).unwrap_err();
        let paths: Vec<_> =
            e.0.iter()
                .map(|d| d.path.clone().unwrap_or_default())
                .collect();
        assert!(paths.contains(&"apiVersion".to_string()), "{paths:?}");
        assert!(
            paths.contains(&"spec.patchesStrategicMerge".to_string()),
            "{paths:?}"
        );
        assert!(
            paths.iter().any(|p| p.starts_with("spec.postBuild")),
            "{paths:?}"
        );
        assert!(e.0.iter().all(|d| d.file.as_deref() == Some("ks.yaml")));
    }

    #[test]
    fn exactly_one_document() {
        let code = |text: &str| read(text).unwrap_err().0[0].code.id;
        assert_eq!(code(""), "KLN1010");
        assert_eq!(code(&format!("{FULL}---\n{FULL}")), "KLN1010");
        assert_eq!(code("a: ["), "KLN1004");
    }
}
