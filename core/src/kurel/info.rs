//! `kiln info PKG`: metadata, parameters, resources and patches, each patch with whether it is
//! enabled and why, as one YAML-ready value. Parameters are the package's with the local
//! extension's overrides (no values files: info describes the package as installed here).
//!
//! Info is descriptive: a package whose parameters or patch conditions are broken is still
//! described as far as possible, and the problems are returned alongside.

use serde_json::{json, Map, Value};

use crate::diag::Diagnostic;
use crate::fieldpath::FieldPath;

use super::package::{Enabled, Origin};
use super::parameters::MetadataSource;
use super::variables::Resolver;
use super::{enablement, Instance, Options, Package};

/// What `kiln info` prints, and the problems found while working it out.
#[derive(Debug, Clone)]
pub struct Info {
    /// The description.
    pub value: Value,
    /// Warnings and errors (errors make `kiln info` exit 1 after printing).
    pub warnings: Vec<Diagnostic>,
}

/// Describe a package.
pub fn info(pkg: &Package) -> Info {
    let mut problems: Vec<Diagnostic> = pkg.warnings.clone();
    let params = match super::instance_parameters(pkg, &Instance::default()) {
        Ok((p, w)) => {
            problems.extend(w);
            p
        }
        Err(ds) => {
            problems.extend(ds);
            pkg.parameters.clone()
        }
    };
    let resolver = Resolver::new(&params, Options::default().max_depth);

    let mut package = serde_json::to_value(&pkg.metadata).unwrap_or(Value::Null);
    if let Some(m) = package.as_object_mut() {
        m.shift_remove("source");
        m.insert("path".into(), json!(pkg.dir));
        m.insert(
            "metadataFrom".into(),
            json!(match pkg.metadata.source {
                MetadataSource::Parameters => "parameters.yaml (kurel:)",
                MetadataSource::KurelYaml => "kurel.yaml",
            }),
        );
    }

    let mut shown_params = params.clone();
    if let Some(m) = shown_params.as_object_mut() {
        m.shift_remove("kurel");
    }

    let resources: Vec<Value> = pkg
        .resources
        .iter()
        .map(|doc| {
            // Names often hold variables; show them resolved when they resolve.
            let mut errs = Vec::new();
            let v = resolver.resolve_tree(&doc.value, &FieldPath::root(), &mut errs);
            let v = if errs.is_empty() {
                v
            } else {
                doc.value.clone()
            };
            let s = |p: &str| v.pointer(p).cloned().unwrap_or(Value::Null);
            let mut m = Map::new();
            m.insert("apiVersion".into(), s("/apiVersion"));
            m.insert("kind".into(), s("/kind"));
            m.insert("name".into(), s("/metadata/name"));
            if let Some(ns) = v.pointer("/metadata/namespace") {
                m.insert("namespace".into(), ns.clone());
            }
            m.insert("file".into(), json!(doc.file()));
            Value::Object(m)
        })
        .collect();

    let decisions = match enablement::plan(&pkg.patches, &resolver) {
        Ok(plan) => {
            problems.extend(plan.warnings);
            Some((plan.decisions, plan.order))
        }
        Err(ds) => {
            problems.extend(ds);
            None
        }
    };
    let patches: Vec<Value> = pkg
        .patches
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut m = Map::new();
            m.insert("patch".into(), json!(p.id));
            m.insert(
                "origin".into(),
                json!(match p.origin {
                    Origin::Package => "package",
                    Origin::Local => "local",
                }),
            );
            m.insert("file".into(), json!(p.file));
            if let Some(d) = &p.meta.description {
                m.insert("description".into(), json!(d));
            }
            match &decisions {
                Some((ds, order)) => {
                    let d = &ds[i];
                    m.insert("enabled".into(), json!(d.enabled));
                    m.insert("why".into(), json!(d.why));
                    if let Some(pos) = order.iter().position(|&x| x == i) {
                        m.insert("applyOrder".into(), json!(pos + 1));
                    }
                }
                None => {
                    m.insert("enabled".into(), Value::Null);
                    m.insert(
                        "why".into(),
                        json!(match &p.meta.enabled {
                            Enabled::Always => "no enabled condition".to_string(),
                            Enabled::Literal(b) => format!("enabled: {b}"),
                            Enabled::Variable(v) =>
                                format!("depends on {v}; the patch plan has errors"),
                        }),
                    );
                }
            }
            if !p.meta.requires.is_empty() {
                m.insert(
                    "requires".into(),
                    json!(p
                        .meta
                        .requires
                        .iter()
                        .map(|r| r.name.clone())
                        .collect::<Vec<_>>()),
                );
            }
            if !p.meta.conflicts.is_empty() {
                m.insert(
                    "conflicts".into(),
                    json!(p
                        .meta
                        .conflicts
                        .iter()
                        .map(|r| r.name.clone())
                        .collect::<Vec<_>>()),
                );
            }
            m.insert("operations".into(), json!(p.ops.len()));
            Value::Object(m)
        })
        .collect();

    let mut out = Map::new();
    out.insert("package".into(), package);
    if let Some(l) = &pkg.local {
        out.insert("localExtension".into(), json!(l.dir));
    }
    out.insert("parameters".into(), shown_params);
    out.insert("resources".into(), Value::Array(resources));
    out.insert("patches".into(), Value::Array(patches));
    Info {
        value: Value::Object(out),
        warnings: problems,
    }
}
