//! kurel packages: parameters, resources, conditional patches and local extensions rendered into
//! manifests. See `docs/kurel.md`.
//!
//! A package (`NAME.kurel/`) is an immutable definition: `parameters.yaml` (metadata under
//! `kurel:`, defaults), `resources/` (plain manifests with `${path}` variables) and `patches/`
//! (`.kpatch` or YAML, with optional sidecar metadata). An instance adds the user's side: the local
//! extension `NAME.local.kurel/` found next to the package (found by [`load`]), `--values` files
//! and `--set` arguments. [`render`] resolves the parameters, substitutes variables, decides which
//! patches apply ([`enablement`]), applies them ([`patch`]) and validates the result
//! ([`validate`]); every problem is reported at once and nothing is returned on error.
//!
//! ```
//! # use std::fs;
//! # let dir = std::env::temp_dir().join(format!("kurel-doc-{}", std::process::id()));
//! # let pkg = dir.join("web.kurel");
//! # fs::create_dir_all(pkg.join("resources")).unwrap();
//! # fs::create_dir_all(pkg.join("patches")).unwrap();
//! fs::write(pkg.join("parameters.yaml"),
//!     "kurel: {name: web, version: 1.0.0, appVersion: \"2.1\"}\nreplicas: 2\nprod: true\n").unwrap();
//! fs::write(pkg.join("resources/cm.yaml"),
//!     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {version: \"${kurel.appVersion}\"}\n").unwrap();
//! fs::write(pkg.join("patches/10-prod.kpatch"), "[configmap.web]\ndata.mode: production\n").unwrap();
//! fs::write(pkg.join("patches/10-prod.yaml"), "enabled: ${prod}\n").unwrap();
//!
//! let package = kiln_core::kurel::load(&pkg).unwrap();
//! let out = kiln_core::kurel::render(&package, &Default::default(), &Default::default()).unwrap();
//! assert_eq!(out.objects[0]["data"]["version"], "2.1");
//! assert_eq!(out.objects[0]["data"]["mode"], "production");
//! # fs::remove_dir_all(dir).unwrap();
//! ```

pub mod enablement;
pub mod info;
pub mod kpatch;
pub mod package;
pub mod parameters;
pub mod patch;
pub mod schema;
pub mod validate;
pub mod values;
pub mod variables;

use serde_json::Value;

use crate::diag::{Diagnostic, Diagnostics};
use crate::document::Document;
use crate::fieldpath::FieldPath;

pub use package::{is_package, load, load_with_limits, LoadError, Origin, Package, PatchFile};

/// Rendering options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Most nested variable references followed (default 10).
    pub max_depth: usize,
    /// Namespace for namespaced resources that set none (`kiln render -n`).
    pub namespace: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_depth: variables::DEFAULT_MAX_DEPTH,
            namespace: None,
        }
    }
}

/// The user's side of an instance, besides the local extension: values files (already read,
/// see [`values::read_values_files`]) and `--set` arguments.
#[derive(Debug, Clone, Default)]
pub struct Instance {
    /// `--values` documents, merged in order.
    pub values: Vec<Document>,
    /// `--set path=value` arguments, applied in order after the values files.
    pub sets: Vec<String>,
}

/// A rendered package.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// The objects, in resource file order.
    pub objects: Vec<Value>,
    /// Warnings (loading, overrides, advice).
    pub warnings: Vec<Diagnostic>,
    /// Lines for stderr: auto-enabled patches.
    pub log: Vec<String>,
    /// Lines for stderr with `-v`: each patch operation applied.
    pub details: Vec<String>,
}

/// The parameters of an instance: package defaults ← local extension ← values files ← `--set`.
/// Warnings go to `warnings`; any error fails.
pub fn instance_parameters(
    pkg: &Package,
    instance: &Instance,
) -> Result<(Value, Vec<Diagnostic>), Diagnostics> {
    let mut diags = Diagnostics::new();
    let mut params = pkg.parameters.clone();
    if let Some(local) = &pkg.local {
        if let Some(doc) = &local.parameters {
            values::merge_document(&mut params, doc, &mut diags);
        }
    }
    for doc in &instance.values {
        values::merge_document(&mut params, doc, &mut diags);
    }
    values::apply_sets(&mut params, &instance.sets, &mut diags);
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok((params, diags.0))
    }
}

/// Render one instance of a package. Every problem is reported; on error nothing is returned.
pub fn render(
    pkg: &Package,
    instance: &Instance,
    options: &Options,
) -> Result<Rendered, Diagnostics> {
    let mut errors = Diagnostics::new();
    let mut warnings: Vec<Diagnostic> = pkg.warnings.clone();
    let params = match instance_parameters(pkg, instance) {
        Ok((p, w)) => {
            warnings.extend(w);
            p
        }
        Err(ds) => return Err(finish(ds, warnings)),
    };
    let resolver = variables::Resolver::new(&params, options.max_depth);

    // Variables in resources. apiVersion and kind are plain text in practice; schemas come from
    // the bundle and the package's CRDs as written.
    let raw: Vec<Value> = pkg.resources.iter().map(|d| d.value.clone()).collect();
    let schemas = validate::schemas_for(&raw);
    let mut objects = Vec::with_capacity(pkg.resources.len());
    for doc in &pkg.resources {
        let mut errs = Vec::new();
        let api = doc.api_version().unwrap_or("").to_string();
        let kind = doc.kind().unwrap_or("").to_string();
        let wants = |p: &FieldPath| validate::wants_string(&schemas, &api, &kind, p);
        let v = resolver.resolve_tree_typed(&doc.value, &FieldPath::root(), &wants, &mut errs);
        for (p, e) in errs {
            errors.push(doc.diag(Diagnostic::error(e.code, e.message).with_hint(e.hint), &p));
        }
        objects.push(v);
    }

    // Which patches apply.
    let plan = match enablement::plan(&pkg.patches, &resolver) {
        Ok(p) => Some(p),
        Err(ds) => {
            errors.extend(ds);
            None
        }
    };
    if errors.has_errors() {
        return Err(finish(errors, warnings));
    }
    let Some(plan) = plan else {
        return Err(finish(errors, warnings));
    };
    warnings.extend(plan.warnings.iter().cloned());

    // Apply, in order. Errors are collected and application goes on, so one run reports every
    // failing operation.
    let schemas = validate::schemas_for(&objects);
    let mut details = Vec::new();
    let mut op_errors = Vec::new();
    for &i in &plan.order {
        let Some(p) = pkg.patches.get(i) else {
            continue;
        };
        let d = plan
            .decisions
            .get(i)
            .map(|d| d.why.clone())
            .unwrap_or_default();
        details.push(format!("applying {} ({d})", p.id));
        details.extend(patch::apply_patch(
            &mut objects,
            p,
            &resolver,
            &schemas,
            &mut op_errors,
        ));
    }
    errors.extend(op_errors);
    if errors.has_errors() {
        return Err(finish(errors, warnings));
    }

    // Namespace for namespaced resources without one.
    let schemas = validate::schemas_for(&objects);
    let scopes = validate::scopes_for(&objects);
    if let Some(ns) = &options.namespace {
        for o in &mut objects {
            let api = o
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let kind = o
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if scopes.is_namespaced(&api, &kind) {
                if let Some(meta) = o.get_mut("metadata").and_then(Value::as_object_mut) {
                    let has_namespace = meta
                        .get("namespace")
                        .is_some_and(|n| n.as_str().is_some_and(|s| !s.is_empty()));
                    if !has_namespace {
                        // Right after the name, where people look for it.
                        let at = meta.keys().position(|k| k == "name").map_or(0, |i| i + 1);
                        meta.shift_insert(at, "namespace".into(), Value::String(ns.clone()));
                    }
                }
            }
        }
    }

    for d in validate::validate(&objects, &pkg.resources, &schemas, &scopes) {
        if d.is_error() {
            errors.push(d);
        } else {
            warnings.push(d);
        }
    }
    if errors.has_errors() {
        return Err(finish(errors, warnings));
    }
    Ok(Rendered {
        objects,
        warnings,
        log: plan.log,
        details,
    })
}

/// Errors first (sorted), then the warnings, so one report shows everything.
fn finish(mut errors: Diagnostics, warnings: Vec<Diagnostic>) -> Diagnostics {
    errors.sort();
    errors.extend(warnings);
    errors
}
