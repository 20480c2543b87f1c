//! What Flux would apply for a Kustomization: the rendered tree built by kustomize with the
//! Kustomization's own transformations, then `postBuild` substitution, then `commonMetadata`.
//!
//! kustomize-controller does not pass its transformations to kustomize as flags: it rewrites
//! the `kustomization.yaml` at `spec.path` (generating one when there is none) and runs a
//! builtins-only kustomize build with load restrictions off. This module does the same in a
//! scratch copy of the source root, and runs the real `kubectl kustomize` (found on `PATH`)
//! over it:
//!
//! | Kustomization field | in the kustomization file |
//! | --- | --- |
//! | `targetNamespace` | `namespace` |
//! | `namePrefix`, `nameSuffix` | `namePrefix`, `nameSuffix` |
//! | `patches` | appended to `patches` |
//! | `images` | an entry of the same `name` replaced, others appended to `images` |
//! | `components` | appended to `components` (paths relative to `spec.path`) |
//!
//! Without a kustomization file, one is generated as Flux does: every `.yaml`/`.yml` file below
//! `spec.path` (each must hold Kubernetes objects), and every sub-directory holding a
//! kustomization file as one resource (not descended into). `commonMetadata` is set on every
//! object's own labels and annotations after substitution (not on selectors or templates), as
//! kustomize-controller sets it when it applies.

use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic, Diagnostics};
use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::flux::postbuild::{self, PostBuild};
use kiln_core::inplace::Protect;
use kiln_core::kustomize_paths::{self, is_kustomization_file};
use kiln_core::kustomize_reach;
use kiln_core::redact::Secrets;
use serde_json::{Map, Value};

use crate::kustomization::Kustomization;
use crate::vars::Sources;

pub use kiln_core::kustomize_paths::KUSTOMIZATION_FILES;

/// The settings of a preview.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `kubectl` to run (`None`: found on `PATH`).
    pub kubectl: Option<PathBuf>,
    /// Run `postBuild` substitution.
    pub substitute: bool,
    /// Where `substituteFrom` ConfigMaps and Secrets are read.
    pub vars_from: Option<PathBuf>,
    /// Substitution without strict mode (a variable that is not set is empty).
    pub lenient: bool,
    /// Limits for reading YAML.
    pub yaml: YamlLimits,
    /// Most bytes one object's substitution may produce.
    pub max_output_bytes: usize,
    /// Let the kustomizations name remote bases and files (`--allow-remote-bases`).
    pub allow_remote_bases: bool,
    /// How long `kubectl kustomize` may run (`None`: [`kiln_core::kustomize_build::DEFAULT_TIMEOUT`]).
    pub timeout: Option<std::time::Duration>,
}

/// The result: objects in kustomize's order, and secrets for redacting diagnostics.
#[derive(Debug, Default)]
pub struct Preview {
    /// What Flux would apply.
    pub objects: Vec<Value>,
    /// What Flux would do unlike what the build asked for.
    pub warnings: Vec<Diagnostic>,
}

/// A failed preview: the diagnostics, and the values to keep out of them.
#[derive(Debug, Default)]
pub struct Failure {
    /// What went wrong.
    pub diagnostics: Vec<Diagnostic>,
    /// Secret variable values (from Secrets), to redact.
    pub secrets: Secrets,
}

impl From<Diagnostics> for Failure {
    fn from(d: Diagnostics) -> Self {
        Failure {
            diagnostics: d.0,
            secrets: Secrets::default(),
        }
    }
}

/// Find `kubectl`: the given path, or the first `kubectl` on `PATH`.
pub fn find_kubectl(given: Option<&Path>) -> Result<PathBuf, Diagnostic> {
    if let Some(p) = given {
        return Ok(p.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let c = dir.join("kubectl");
        if c.is_file() {
            return Ok(c);
        }
    }
    Err(Diagnostic::error(
        codes::REQUEST_INVALID,
        "kubectl not found on PATH: showing what Flux applies needs `kubectl kustomize`",
    )
    .with_hint("install kubectl (1.14 or newer has kustomize built in) and put it on PATH; `kiln-flux build PATH` without --kustomization needs no kubectl"))
}

/// What Flux applies after kustomize built: `postBuild` substitution (with `--substitute`),
/// then `commonMetadata`; and what the API server would refuse of the result. A problem is
/// placed on the file its object came from (kustomize's origin), with the object's kind and
/// name, never on a line of kustomize's output.
pub fn after_build(
    built: kustomize_reach::Built,
    k: &Kustomization,
    opts: &Options,
    protect: Option<Protect>,
) -> Result<Preview, Failure> {
    let origins = built.origins;
    let mut objects: Vec<Value> = built.docs.into_iter().map(|d| d.value).collect();
    // Kind and name as kustomize built them (before substitution changes them).
    let ids: Vec<String> = objects
        .iter()
        .map(|o| {
            format!(
                "{} {}",
                o.get("kind").and_then(Value::as_str).unwrap_or("?"),
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .unwrap_or("?")
            )
        })
        .collect();
    let place = |i: usize, mut d: Diagnostic| {
        // The substitution's messages may name the object already.
        if !d.message.starts_with(&ids[i]) {
            d.message = format!("{}: {}", ids[i], d.message);
        }
        d.line = None;
        d.column = None;
        d.file = Some(match origins.get(i).cloned().flatten() {
            Some(f) => f,
            None => "kustomize build".to_string(),
        });
        d
    };
    let mut secrets = Secrets::default();
    let mut warnings = Vec::new();
    let mut substituted = false;
    if let (Some(spec), true) = (&k.post_build, opts.substitute) {
        let sources = match &opts.vars_from {
            Some(d) => Sources::read(d, &opts.yaml)?,
            None => Sources::default(),
        };
        let vars = spec
            .variables(|r| sources.lookup(r, k.namespace.as_deref()))
            .map_err(|ds| {
                let mut f = Failure::from(ds);
                for d in &mut f.diagnostics {
                    d.path = d.path.take().map(|p| format!("spec.postBuild.{p}"));
                    if opts.vars_from.is_none() {
                        d.hint = Some("name a directory holding the ConfigMaps and Secrets with --vars-from DIR, or mark the entry optional: true".into());
                    }
                }
                f
            })?;
        vars.add_secrets_to(&mut secrets);
        let mut settings = PostBuild::new(vars);
        settings.strategy = spec.strategy;
        settings.strict = !opts.lenient;
        settings.max_output_bytes = opts.max_output_bytes;
        settings.yaml = opts.yaml;
        if settings.runs() {
            substituted = true;
            // All objects at once: their results together stay within the output limit.
            objects = postbuild::apply_each(objects, &settings).map_err(|errs| Failure {
                diagnostics: errs
                    .into_iter()
                    .map(|(i, d)| match i {
                        Some(i) => place(i, d),
                        None => d,
                    })
                    .collect(),
                secrets: secrets.clone(),
            })?;
        } else if protect == Some(Protect::Escape) {
            // kustomize-controller substitutes only when a variable is set (or the strategy is
            // Always): with none, the escapes reach the cluster as written.
            warnings.push(
                Diagnostic::warning(
                    codes::FLUX_UNESCAPED,
                    "this Kustomization's postBuild sets no variable (its substitute is empty and its substituteFrom sources are optional and missing), so Flux skips substitution: the `$${` that --protect wrote would reach the cluster as written",
                )
                .at("spec.postBuild")
                .with_hint("build with --protect=annotate (the opt-out annotation is right whether substitution runs or not)"),
            );
        }
    }
    if !k.common_labels.is_empty() || !k.common_annotations.is_empty() {
        for o in &mut objects {
            set_metadata(o, "labels", &k.common_labels);
            set_metadata(o, "annotations", &k.common_annotations);
        }
    }
    let schemas = kiln_core::openapi::Schemas::bundled();
    let mut refused = Vec::new();
    for (i, o) in objects.iter().enumerate() {
        let (Some(api), Some(kind)) = (
            o.get("apiVersion").and_then(Value::as_str),
            o.get("kind").and_then(Value::as_str),
        ) else {
            continue;
        };
        let Some(ks) = schemas.lookup(api, kind) else {
            continue;
        };
        for (path, msg) in ks.check_rendered(o) {
            let why = if substituted {
                "after postBuild substitution, "
            } else {
                ""
            };
            let d = Diagnostic::error(codes::PASSTHROUGH_SCHEMA, format!("{why}{msg}"))
                .at(path.to_string())
                .with_hint(format!(
                    "the API server rejects it (Kubernetes {} {kind} schema); Flux substitutes the object's YAML, so a value that must stay a string is quoted in the variable's use (`\"${{VAR}}\"` does not help: write the field so it holds more than the variable)",
                    kiln_core::openapi::Schemas::kubernetes_version()
                ));
            refused.push(place(i, d));
        }
    }
    if !refused.is_empty() {
        return Err(Failure {
            diagnostics: refused,
            secrets,
        });
    }
    Ok(Preview { objects, warnings })
}

/// The path check of a Flux build: Flux's confined file system, reproduced.
pub fn check_options(opts: &Options) -> kustomize_paths::Options {
    kustomize_paths::Options {
        allow_remote: opts.allow_remote_bases,
        yaml: opts.yaml,
        ..kustomize_paths::Options::default()
    }
}

/// Flux's build: load restrictions off (fluxcd/pkg kustomize, `SecureBuild`).
pub fn kubectl_args() -> Vec<String> {
    vec!["--load-restrictor".into(), "LoadRestrictionsNone".into()]
}

/// What to fix when Flux's build fails.
pub const BUILD_HINT: &str = "the rendered tree, with the Kustomization's transformations, is what Flux builds; fix the kustomization.yaml or the Kustomization's patches, images or components";

fn set_metadata(o: &mut Value, field: &str, pairs: &Map<String, Value>) {
    if pairs.is_empty() {
        return;
    }
    let Some(m) = o.as_object_mut() else { return };
    let meta = m
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(meta) = meta.as_object_mut() else {
        return;
    };
    let target = meta
        .entry(field)
        .or_insert_with(|| Value::Object(Map::new()));
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Some(t) = target.as_object_mut() {
        for (k, v) in pairs {
            t.insert(k.clone(), v.clone());
        }
    }
}

use kiln_core::kustomize_build::io_err;

/// Rewrite (or generate) the kustomization file at `dir` with the Kustomization's fields.
pub fn write_overlay(dir: &Path, k: &Kustomization, yaml: &YamlLimits) -> Result<(), Diagnostics> {
    let existing = KUSTOMIZATION_FILES.iter().find(|n| dir.join(n).is_file());
    let (file, mut kus) = match existing {
        Some(name) => {
            let path = dir.join(name);
            let text =
                std::fs::read_to_string(&path).map_err(|e| Diagnostics(vec![io_err(&path, &e)]))?;
            let docs = parse_file(name, text, yaml).map_err(|d| Diagnostics(vec![d]))?;
            let v = match docs.into_iter().next().map(|d| d.value) {
                Some(Value::Object(m)) => m,
                None => Map::new(),
                Some(_) => {
                    return Err(Diagnostics(vec![Diagnostic::error(
                        codes::NOT_AN_OBJECT,
                        "the kustomization file is not a mapping",
                    )
                    .in_file(name.to_string())]))
                }
            };
            (path, v)
        }
        None => (dir.join("kustomization.yaml"), generated(dir, yaml)?),
    };
    let set = |kus: &mut Map<String, Value>, key: &str, v: &Option<String>| {
        if let Some(v) = v {
            kus.insert(key.into(), Value::String(v.clone()));
        }
    };
    set(&mut kus, "namespace", &k.target_namespace);
    set(&mut kus, "namePrefix", &k.name_prefix);
    set(&mut kus, "nameSuffix", &k.name_suffix);
    let append = |kus: &mut Map<String, Value>, key: &str, items: Vec<Value>| {
        if items.is_empty() {
            return;
        }
        let list = kus.entry(key).or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(a) = list {
            a.extend(items);
        }
    };
    append(&mut kus, "patches", k.patches.clone());
    append(
        &mut kus,
        "components",
        k.components.iter().cloned().map(Value::String).collect(),
    );
    for image in &k.images {
        let list = kus
            .entry("images")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(a) = list {
            match a.iter_mut().find(|i| i.get("name") == image.get("name")) {
                Some(slot) => *slot = image.clone(),
                None => a.push(image.clone()),
            }
        }
    }
    let text = kiln_core::output::to_yaml(&Value::Object(kus)).map_err(|d| Diagnostics(vec![d]))?;
    std::fs::write(&file, text).map_err(|e| Diagnostics(vec![io_err(&file, &e)]))?;
    Ok(())
}

/// The kustomization Flux generates for a directory without one.
fn generated(dir: &Path, yaml: &YamlLimits) -> Result<Map<String, Value>, Diagnostics> {
    let mut resources = Vec::new();
    let mut errs = Diagnostics::new();
    scan(dir, "", yaml, &mut resources, &mut errs);
    if errs.has_errors() {
        return Err(errs);
    }
    let mut m = Map::new();
    m.insert(
        "apiVersion".into(),
        "kustomize.config.k8s.io/v1beta1".into(),
    );
    m.insert("kind".into(), "Kustomization".into());
    m.insert(
        "resources".into(),
        Value::Array(resources.into_iter().map(Value::String).collect()),
    );
    Ok(m)
}

fn scan(dir: &Path, rel: &str, yaml: &YamlLimits, out: &mut Vec<String>, errs: &mut Diagnostics) {
    let Ok(entries) = std::fs::read_dir(dir.join(rel)) else {
        return;
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .collect();
    names.sort();
    for n in names {
        let child = if rel.is_empty() {
            n.clone()
        } else {
            format!("{rel}/{n}")
        };
        let path = dir.join(&child);
        if path.is_dir() {
            if KUSTOMIZATION_FILES.iter().any(|k| path.join(k).is_file()) {
                out.push(format!("./{child}"));
            } else {
                scan(dir, &child, yaml, out, errs);
            }
            continue;
        }
        if !(n.ends_with(".yaml") || n.ends_with(".yml")) || is_kustomization_file(&child) {
            continue;
        }
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) => {
                errs.push(io_err(&path, &e));
                continue;
            }
        };
        match parse_file(&child, text, yaml) {
            Err(d) => errs.push(d),
            Ok(docs) => {
                if let Some(d) = docs
                    .iter()
                    .find(|d| d.kind().is_none() || d.api_version().is_none())
                {
                    errs.push(
                        Diagnostic::error(
                            codes::NOT_AN_OBJECT,
                            "Flux cannot decode this file as Kubernetes objects (a document has no apiVersion or kind)",
                        )
                        .in_document(&child, d.index)
                        .with_hint("Flux lists every YAML file below spec.path when there is no kustomization.yaml; add a kustomization.yaml listing the resources, or move the file out"),
                    );
                    continue;
                }
                out.push(format!("./{child}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_overlay_carries_the_kustomizations_fields() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("kustomization.yaml"),
            "resources: [a.yaml]\nimages: [{name: nginx, newTag: '1'}, {name: redis, newTag: '7'}]\n",
        )
        .unwrap();
        let k = Kustomization {
            target_namespace: Some("shop".into()),
            name_prefix: Some("p-".into()),
            images: vec![serde_json::json!({"name": "nginx", "newTag": "2"})],
            components: vec!["../c".into()],
            patches: vec![serde_json::json!({"patch": "x", "target": {"kind": "Deployment"}})],
            ..Kustomization::default()
        };
        write_overlay(d.path(), &k, &YamlLimits::default()).unwrap();
        let text = std::fs::read_to_string(d.path().join("kustomization.yaml")).unwrap();
        let v = &parse_file("k", text, &YamlLimits::default()).unwrap()[0].value;
        assert_eq!(v["namespace"], "shop");
        assert_eq!(v["namePrefix"], "p-");
        assert_eq!(v["images"][0]["newTag"], "2");
        assert_eq!(v["images"][1]["name"], "redis");
        assert_eq!(v["components"][0], "../c");
        assert_eq!(v["patches"][0]["target"]["kind"], "Deployment");
        assert_eq!(v["resources"][0], "a.yaml");
    }

    #[test]
    fn a_generated_kustomization_lists_files_and_kustomize_directories() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path();
        std::fs::create_dir_all(p.join("base/x")).unwrap();
        std::fs::create_dir_all(p.join("plain")).unwrap();
        std::fs::write(p.join("base/kustomization.yaml"), "resources: []\n").unwrap();
        std::fs::write(p.join("base/x/ignored.yaml"), "a: 1\n").unwrap();
        std::fs::write(
            p.join("plain/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
        )
        .unwrap();
        std::fs::write(p.join("run.sh"), "echo\n").unwrap();
        let m = generated(p, &YamlLimits::default()).unwrap();
        assert_eq!(
            m["resources"],
            serde_json::json!(["./base", "./plain/cm.yaml"])
        );
        std::fs::write(p.join("values.yaml"), "replicas: 3\n").unwrap();
        let e = generated(p, &YamlLimits::default()).unwrap_err();
        assert_eq!(e.0[0].code, codes::NOT_AN_OBJECT);
    }
}
