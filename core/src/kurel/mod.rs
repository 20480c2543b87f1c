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
//! Many instances of one package (`kiln render PKG --instances DIR`) share everything that does
//! not depend on the instance: [`Prepared`] holds it (the package, the base parameters after the
//! common values files, the patches' requires/conflicts order, the schemas of the package's
//! kinds), and [`render_instances`] renders each instance's values on top of it in parallel.
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
pub mod secrets;
pub mod validate;
pub mod values;
pub mod variables;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{Document, SourceFile};
use crate::fieldpath::FieldPath;
use crate::openapi::Schemas;
use crate::scope::Scopes;

/// What a package directory is: the input walk decides it (it stops there), in [`crate::source`].
pub use crate::source::is_kurel_package as is_package;
pub use package::{
    load, load_with_buffers, load_with_limits, LoadError, Origin, Package, PatchFile,
};

/// Rendering options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Most nested variable references followed (default 10).
    pub max_depth: usize,
    /// Namespace for namespaced resources that set none (`kiln render -n`).
    pub namespace: Option<String>,
    /// CustomResourceDefinitions from outside the package (`--crds`, and CRDs among the other
    /// inputs of the run): resources of their kinds are checked against them, as the package's own
    /// CRDs are.
    pub crds: Vec<Value>,
    /// Annotate rendered objects with the package, instance and resource file that made them.
    pub provenance: bool,
    /// Keep each instance's `-v` lines ([`Rendered::details`]; on by default).
    pub details: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            max_depth: variables::DEFAULT_MAX_DEPTH,
            namespace: None,
            crds: Vec::new(),
            provenance: false,
            details: true,
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
    Prepared::new(pkg, instance, options)?.render(None)
}

/// The part of rendering a package that does not depend on the instance, worked out once: the
/// parameters every instance starts from (package defaults ← local extension ← the common
/// values files), the patches' `requires`/`conflicts` structure, and the schemas and scopes of
/// the package's kinds. [`Prepared::render`] then renders one instance on top of it; it is
/// `Sync`, so [`render_instances`] renders many instances from one `Prepared` in parallel.
#[derive(Debug)]
pub struct Prepared<'p> {
    pkg: &'p Package,
    options: Options,
    /// Parameters before the instance's own values file and the `--set` arguments.
    base: Value,
    /// `--set` arguments, applied to every instance after its values file.
    sets: Vec<String>,
    structure: enablement::Structure,
    /// Schemas of the package's kinds: the bundle plus the CRDs of `resources/` as written.
    schemas: Schemas,
    scopes: Scopes,
    /// Those CRDs: an instance whose rendered CRDs are the same reuses `schemas` and `scopes`.
    crds: Vec<Value>,
    /// For each resource, the paths of its lone `${…}` references whose field is a string in
    /// the kind's schema (where a number or boolean is written as text): schema lookups done once
    /// for every instance.
    string_fields: Vec<BTreeSet<FieldPath>>,
    /// Each resource's [`variables::TreePlan`], when it has one.
    plans: Vec<Option<variables::TreePlan>>,
    /// Warnings of the shared part (loading, the common overrides, patch references).
    warnings: Vec<Diagnostic>,
}

/// What rendering one instance on top of a [`Prepared`] gave, before the shared part's
/// diagnostics are added.
struct Outcome {
    /// Objects, auto-enable log and `-v` details; `None` on any error (the structure's included).
    rendered: Option<(Vec<Value>, Vec<String>, Vec<String>)>,
    errors: Diagnostics,
    warnings: Vec<Diagnostic>,
}

/// Calls `found` with the path of every string of a template that is exactly one `${…}`
/// reference (the values that keep the referenced type), keys as written.
fn lone_references(v: &Value, at: &mut FieldPath, found: &mut dyn FnMut(&FieldPath)) {
    match v {
        Value::String(s) if s.contains("${") => {
            if let Ok([variables::Piece::Ref(_)]) = variables::scan(s).as_deref() {
                found(at);
            }
        }
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                at.0.push(crate::fieldpath::Segment::Index(i));
                lone_references(x, at, found);
                at.0.pop();
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                at.0.push(crate::fieldpath::Segment::Key(k.clone()));
                lone_references(x, at, found);
                at.0.pop();
            }
        }
        _ => {}
    }
}

fn is_crd(o: &&Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
}

impl<'p> Prepared<'p> {
    /// The shared part of rendering `pkg` with the common overrides of `common` (values files
    /// merged into the base parameters; `--set` arguments kept to apply last, per instance). An
    /// error in the common overrides fails here, once, rather than once per instance.
    pub fn new(
        pkg: &'p Package,
        common: &Instance,
        options: &Options,
    ) -> Result<Self, Diagnostics> {
        let mut diags = Diagnostics::new();
        let mut base = pkg.parameters.clone();
        if let Some(local) = &pkg.local {
            if let Some(doc) = &local.parameters {
                values::merge_document(&mut base, doc, &mut diags);
            }
        }
        for doc in &common.values {
            values::merge_document(&mut base, doc, &mut diags);
        }
        if diags.has_errors() {
            // The `--set` arguments are checked too, so one run reports every bad override.
            values::apply_sets(&mut base, &common.sets, &mut diags);
            return Err(finish(diags, pkg.warnings.clone()));
        }
        let mut warnings = pkg.warnings.clone();
        warnings.extend(diags);
        let structure = enablement::structure(&pkg.patches);
        warnings.extend(structure.warnings.iter().cloned());
        // apiVersion and kind are plain text in practice; schemas come from the bundle and the
        // package's CRDs as written.
        let crds: Vec<Value> = pkg
            .resources
            .iter()
            .map(|d| &d.value)
            .filter(is_crd)
            .cloned()
            .collect();
        let known: Vec<Value> = crds.iter().chain(&options.crds).cloned().collect();
        let schemas = validate::schemas_for(&known);
        let string_fields = pkg
            .resources
            .iter()
            .map(|doc| {
                let mut out = BTreeSet::new();
                let (api, kind) = (doc.api_version().unwrap_or(""), doc.kind().unwrap_or(""));
                lone_references(&doc.value, &mut FieldPath::root(), &mut |p| {
                    if validate::wants_string(&schemas, api, kind, p) {
                        out.insert(p.clone());
                    }
                });
                out
            })
            .collect::<Vec<BTreeSet<FieldPath>>>();
        // Found once: every instance resolves the same templates.
        let plans = (pkg.resources.iter().zip(&string_fields))
            .map(|(doc, strings)| variables::TreePlan::of(&doc.value, &|p| strings.contains(p)))
            .collect();
        Ok(Self {
            pkg,
            options: options.clone(),
            base,
            sets: common.sets.clone(),
            structure,
            scopes: validate::scopes_for(&known),
            schemas,
            crds,
            string_fields,
            plans,
            warnings,
        })
    }

    /// The package.
    pub fn package(&self) -> &'p Package {
        self.pkg
    }

    /// Warnings of the shared part: loading, the common overrides, patch references. They are
    /// part of [`Prepared::render`]'s result, and reported once by [`render_instances`].
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// Render one instance: the base parameters, then `values` (the instance's own values file,
    /// if any), then the `--set` arguments. The result has every warning, the shared ones first.
    pub fn render(&self, values: Option<&Document>) -> Result<Rendered, Diagnostics> {
        let out = self.outcome(values);
        let mut warnings = self.warnings.clone();
        warnings.extend(out.warnings);
        let mut errors = self.structure.errors.clone();
        errors.extend(out.errors);
        match out.rendered {
            Some((objects, log, details)) if !errors.has_errors() => Ok(Rendered {
                objects,
                warnings,
                log,
                details,
            }),
            _ => Err(finish(errors, warnings)),
        }
    }

    /// Schemas and scopes for rendered objects: the shared ones unless the instance changed the
    /// package's CRDs (a CRD with variables, or patched).
    fn schemas_for(&self, objects: &[Value]) -> (Cow<'_, Schemas>, Cow<'_, Scopes>) {
        if objects.iter().filter(is_crd).eq(self.crds.iter()) {
            (Cow::Borrowed(&self.schemas), Cow::Borrowed(&self.scopes))
        } else {
            let known: Vec<Value> = objects
                .iter()
                .filter(is_crd)
                .chain(&self.options.crds)
                .cloned()
                .collect();
            (
                Cow::Owned(validate::schemas_for(&known)),
                Cow::Owned(validate::scopes_for(&known)),
            )
        }
    }

    /// The provenance annotations: the package (`Package/NAME@VERSION`), the instance (its
    /// values file's name with `--instances`, else the package's name) and the resource file
    /// within the package (`resources/app.yaml`, with `#N` for the Nth document of a file of
    /// several).
    fn stamp(&self, objects: &mut [Value], values: Option<&Document>) {
        let pkg = self.pkg;
        let definition = format!("Package/{}@{}", pkg.metadata.name, pkg.metadata.version);
        let instance = match values {
            Some(d) => std::path::Path::new(d.file())
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default(),
            None => pkg.metadata.name.clone(),
        };
        let mut per_file: BTreeMap<&str, usize> = BTreeMap::new();
        for d in &pkg.resources {
            *per_file.entry(d.file()).or_default() += 1;
        }
        for (o, d) in objects.iter_mut().zip(&pkg.resources) {
            let file = d.file();
            let rel = file
                .strip_prefix(pkg.dir.as_str())
                .map(|r| r.trim_start_matches('/'))
                .unwrap_or(file);
            let node = if per_file.get(file).copied().unwrap_or(1) > 1 {
                format!("{rel}#{}", d.index + 1)
            } else {
                rel.to_string()
            };
            crate::provenance::annotate(
                o,
                &[
                    (crate::provenance::PROVENANCE_DEFINITION, &definition),
                    (crate::provenance::PROVENANCE_INSTANCE, &instance),
                    (crate::provenance::PROVENANCE_NODE, &node),
                ],
            );
        }
    }

    fn outcome(&self, values: Option<&Document>) -> Outcome {
        self.outcome_with(values, false)
    }

    /// The outcome of one instance; patches change the objects in place unless `careful` (see
    /// [`patch::apply_patch_in_place`]: when an operation fails, the instance is rendered again
    /// with `careful`, for the diagnostics of every operation).
    fn outcome_with(&self, values: Option<&Document>, careful: bool) -> Outcome {
        let pkg = self.pkg;
        let mut errors = Diagnostics::new();
        let mut warnings = Vec::new();
        let failed = |errors: Diagnostics, warnings: Vec<Diagnostic>| Outcome {
            rendered: None,
            errors,
            warnings,
        };

        // Parameters: the shared base, the instance's values, the `--set` arguments.
        let mut params = self.base.clone();
        let mut diags = Diagnostics::new();
        if let Some(doc) = values {
            values::merge_document(&mut params, doc, &mut diags);
        }
        values::apply_sets(&mut params, &self.sets, &mut diags);
        if diags.has_errors() {
            return failed(diags, warnings);
        }
        warnings.extend(diags);
        let resolver = variables::Resolver::new(&params, self.options.max_depth);

        // Variables in resources.
        let mut objects = Vec::with_capacity(pkg.resources.len());
        for (k, doc) in pkg.resources.iter().enumerate() {
            let mut errs = Vec::new();
            let wants = |p: &FieldPath| self.string_fields[k].contains(p);
            let v = match &self.plans[k] {
                Some(plan) => resolver.resolve_planned(&doc.value, plan, &mut errs),
                None => {
                    resolver.resolve_tree_typed(&doc.value, &FieldPath::root(), &wants, &mut errs)
                }
            };
            for (p, e) in errs {
                errors.push(doc.diag(Diagnostic::error(e.code, e.message).with_hint(e.hint), &p));
            }
            objects.push(v);
        }

        // Which patches apply.
        let plan = match enablement::decide(&pkg.patches, &self.structure, &resolver) {
            Ok(p) => Some(p),
            Err(ds) => {
                errors.extend(ds);
                None
            }
        };
        let Some(plan) = plan else {
            return failed(errors, warnings);
        };
        // Resources with variable errors are still patched, so the patches' own variable errors
        // come out in the same run; anything else a patch reports then (a target whose name did
        // not resolve) could be a consequence, and is left out.
        let resources_failed = errors.has_errors();

        // Apply, in order. Errors are collected and application goes on, so one run reports
        // every failing operation.
        let mut details = Vec::new();
        {
            let (schemas, _) = self.schemas_for(&objects);
            let mut op_errors = Vec::new();
            for &i in &plan.order {
                let Some(p) = pkg.patches.get(i) else {
                    continue;
                };
                let keep = self.options.details;
                if keep {
                    let d = plan.decisions.get(i).map_or("", |d| d.why.as_str());
                    details.push(format!("applying {} ({d})", p.id));
                }
                let applied = if careful {
                    Some(patch::apply_patch(
                        &mut objects,
                        p,
                        &resolver,
                        &schemas,
                        &mut op_errors,
                        keep,
                    ))
                } else {
                    patch::apply_patch_in_place(
                        &mut objects,
                        p,
                        &resolver,
                        &schemas,
                        &mut op_errors,
                        keep,
                    )
                };
                match applied {
                    Some(lines) => details.extend(lines),
                    None => return self.outcome_with(values, true),
                }
            }
            if resources_failed {
                errors.extend(op_errors.into_iter().filter(|d| {
                    [
                        codes::KUREL_VARIABLE_SYNTAX,
                        codes::KUREL_VARIABLE_UNDEFINED,
                        codes::KUREL_VARIABLE_CYCLE,
                        codes::KUREL_VARIABLE_DEPTH,
                        codes::KUREL_VARIABLE_TYPE,
                    ]
                    .contains(&d.code)
                }));
            } else {
                errors.extend(op_errors);
            }
        }
        if errors.has_errors() {
            return failed(errors, warnings);
        }

        // Namespace for namespaced resources without one.
        let (schemas, scopes) = self.schemas_for(&objects);
        if let Some(ns) = &self.options.namespace {
            for o in &mut objects {
                let namespaced = {
                    let text = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
                    scopes.is_namespaced(text("apiVersion"), text("kind"))
                };
                if namespaced {
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
        if errors.has_errors() || self.structure.errors.has_errors() {
            return failed(errors, warnings);
        }
        if self.options.provenance {
            self.stamp(&mut objects, values);
        }
        if !self.options.details {
            details = Vec::new();
        }
        Outcome {
            rendered: Some((objects, plan.log, details)),
            errors,
            warnings,
        }
    }
}

/// The result of [`render_instances`].
#[derive(Debug, Clone)]
pub struct RenderedInstances<T> {
    /// What `make_unit` made of each instance's objects, in instance order.
    pub units: Vec<T>,
    /// Objects rendered, over all instances.
    pub objects: usize,
    /// The shared warnings, then each instance's (a warning several instances share is given
    /// once, naming them).
    pub warnings: Vec<Diagnostic>,
    /// Lines for stderr: auto-enabled patches, naming the instances.
    pub log: Vec<String>,
    /// Lines for stderr with `-v`: each instance's patch operations, prefixed with its file.
    pub details: Vec<String>,
    /// The instances' files, in instance order.
    pub sources: Vec<Arc<SourceFile>>,
    /// With [`Exchange::Keep`], each instance's [`Record`], in instance order (else empty).
    pub records: Vec<Record>,
}

/// Everything one instance gave but its unit: what another run of the same package (the other
/// side of a diff) takes with the unit instead of rendering the instance again.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    objects: usize,
    identities: Vec<Identity>,
    warnings: Vec<Diagnostic>,
    log: Vec<String>,
    details: Vec<String>,
}

impl Record {
    /// The record as a run that read the package from the directory `to` would have made it,
    /// where this one's run read it from `from` (each the directory holding the package, as its
    /// files are named; a revision is written out for its run, somewhere else each time): the
    /// patch file that begins each `-v` line of an operation moves from one to the other.
    /// `None` when anything else mentions `from` (a warning in a package file): that instance
    /// renders again.
    pub fn relocated(&self, from: &str, to: &str) -> Option<Record> {
        if from == to {
            return Some(self.clone());
        }
        let has = |s: &Option<String>| s.as_deref().is_some_and(|s| s.contains(from));
        let warned = self.warnings.iter().any(|d| {
            d.message.contains(from)
                || has(&d.file)
                || has(&d.path)
                || has(&d.hint)
                || has(&d.suggestion)
        });
        if warned || self.log.iter().any(|l| l.contains(from)) {
            return None;
        }
        let mut details = Vec::with_capacity(self.details.len());
        for l in &self.details {
            // `  FILE:LINE: TARGET: OPERATION` ([`patch::apply_patch`]).
            match l.strip_prefix("  ").and_then(|r| r.strip_prefix(from)) {
                Some(rest) if !rest.contains(from) => details.push(format!("  {to}{rest}")),
                _ if !l.contains(from) => details.push(l.clone()),
                _ => return None,
            }
        }
        Some(Record {
            details,
            ..self.clone()
        })
    }
}

/// Instances exchanged with another run of the same package ([`render_instances_exchanging`]).
pub enum Exchange<'a, T> {
    /// Nothing taken, nothing kept.
    None,
    /// Each instance's [`Record`] is kept in the result, for another run to take.
    Keep,
    /// The unit and record of an instance file (name and text) another run rendered, when it
    /// did: the caller's promise is that the other run's package, its common values, `--set`
    /// arguments and options were the same, so the same file renders the same.
    Take(&'a (dyn Fn(&SourceFile) -> Option<(T, Record)> + Sync)),
}

/// What one instance gave, before the instances are put together.
struct InstanceResult<T> {
    unit: Option<T>,
    record: Record,
    errors: Diagnostics,
}

/// What makes an object unique in a cluster: API group, kind, namespace, name.
type Identity = (String, String, String, String);

fn identity(o: &Value) -> Option<Identity> {
    // Small maps, read for every rendered object: scanned, not hashed (`crate::lookup`).
    let field = crate::lookup::field;
    let top = |k: &str| field(o, k).and_then(Value::as_str);
    let meta = |k: &str| {
        field(o, "metadata")
            .and_then(|m| field(m, k))
            .and_then(Value::as_str)
    };
    Some((
        crate::scope::group_of(top("apiVersion")?).to_string(),
        top("kind")?.to_string(),
        meta("namespace").unwrap_or("").to_string(),
        meta("name")?.to_string(),
    ))
}

/// Render one instance per values document in `instances` (each layered on the base parameters
/// of `prep`, before its `--set` arguments), in parallel, and hand each instance's objects to
/// `make_unit` on the worker that rendered them (so a caller can serialise there). Units come back
/// in instance order, so the result does not depend on the number of threads.
///
/// All or nothing: any error in any instance fails the whole run, with every instance's
/// diagnostics. A diagnostic is named after the instance it came from (unless it is in the
/// instance's own file); one that several instances share is given once, naming them. Two
/// instances that render an object of the same group, kind, namespace and name are an error
/// (KLN7030): applied together, one would overwrite the other.
pub fn render_instances<T, F>(
    prep: &Prepared,
    instances: Vec<Document>,
    make_unit: F,
) -> Result<RenderedInstances<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_instances_exchanging(prep, instances, make_unit, Exchange::None)
}

/// [`render_instances`], exchanging instances with another run of the same package (`kiln
/// diff`'s two sides): keeping each instance's [`Record`], or taking the unit and record of an
/// instance the other run rendered instead of rendering it again. Each instance's parsed values
/// are dropped on the worker once it is rendered: only the files' texts (for diagnostics) stay.
pub fn render_instances_exchanging<T, F>(
    prep: &Prepared,
    instances: Vec<Document>,
    make_unit: F,
    exchange: Exchange<'_, T>,
) -> Result<RenderedInstances<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let sources: Vec<Arc<SourceFile>> = instances.iter().map(|d| d.source.clone()).collect();
    let take = match exchange {
        Exchange::Take(t) => Some(t),
        _ => None,
    };
    let results: Vec<InstanceResult<T>> = instances
        .into_par_iter()
        .map(|doc| {
            if let Some((unit, record)) = take.and_then(|t| t(&doc.source)) {
                return InstanceResult {
                    unit: Some(unit),
                    record,
                    errors: Diagnostics::new(),
                };
            }
            let out = prep.outcome(Some(&doc));
            drop(doc);
            let mut errors = out.errors;
            let mut unit = None;
            let mut record = Record {
                objects: 0,
                identities: Vec::new(),
                warnings: out.warnings,
                log: Vec::new(),
                details: Vec::new(),
            };
            if let Some((objects, log, details)) = out.rendered {
                record.objects = objects.len();
                record.identities = objects.iter().filter_map(identity).collect();
                record.identities.sort();
                record.identities.dedup();
                record.log = log;
                record.details = details;
                match make_unit(objects) {
                    Ok(t) => unit = Some(t),
                    Err(d) => errors.push(d),
                }
            }
            InstanceResult {
                unit,
                record,
                errors,
            }
        })
        .collect();

    let names: Vec<&str> = sources.iter().map(|s| s.name.as_str()).collect();
    let total = names.len();
    let mut errors = prep.structure.errors.clone();
    errors.extend(grouped(
        results.iter().map(|r| r.errors.0.as_slice()),
        &names,
    ));
    errors.extend(duplicate_identities(
        results.iter().map(|r| r.record.identities.as_slice()),
        &names,
    ));
    let mut warnings = prep.warnings.clone();
    warnings.extend(grouped(
        results.iter().map(|r| r.record.warnings.as_slice()),
        &names,
    ));
    if errors.has_errors() {
        return Err(finish(errors, warnings));
    }

    // Log lines several instances share are said once.
    let mut log: Vec<(String, Vec<usize>)> = Vec::new();
    let mut at: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, r) in results.iter().enumerate() {
        for l in &r.record.log {
            match at.get(l.as_str()) {
                Some(&k) => log[k].1.push(i),
                None => {
                    at.insert(l, log.len());
                    log.push((l.clone(), vec![i]));
                }
            }
        }
    }
    let log = log
        .into_iter()
        .map(|(l, who)| format!("{}: {l}", instances_label(&who, &names, total)))
        .collect();
    let keep = matches!(exchange, Exchange::Keep);
    let mut details = Vec::new();
    let mut units = Vec::with_capacity(total);
    let mut records = Vec::with_capacity(if keep { total } else { 0 });
    let mut objects = 0;
    for (r, name) in results.into_iter().zip(&names) {
        details.extend(r.record.details.iter().map(|d| format!("{name}: {d}")));
        objects += r.record.objects;
        units.extend(r.unit);
        if keep {
            records.push(r.record);
        }
    }
    Ok(RenderedInstances {
        units,
        objects,
        warnings,
        log,
        details,
        sources,
        records,
    })
}

/// "instance a.yaml", "instances a.yaml, b.yaml and 3 more", "all 12 instances".
fn instances_label(who: &[usize], names: &[&str], total: usize) -> String {
    const SHOWN: usize = 3;
    match who {
        [one] => format!("instance {}", names[*one]),
        _ if who.len() == total => format!("all {total} instances"),
        _ => {
            let mut s: Vec<&str> = who.iter().take(SHOWN).map(|&i| names[i]).collect();
            let more = who.len().saturating_sub(SHOWN);
            let last = if more > 0 {
                format!("{more} more")
            } else {
                s.pop().unwrap_or_default().to_string()
            };
            format!("instances {} and {last}", s.join(", "))
        }
    }
}

/// Each instance's diagnostics, named after the instance; a diagnostic several instances share
/// (a package problem their values all reach) is given once, naming them. A diagnostic in the
/// instance's own file needs no name.
fn grouped<'a>(
    per_instance: impl Iterator<Item = &'a [Diagnostic]>,
    names: &[&str],
) -> Vec<Diagnostic> {
    type Key<'a> = (
        &'a Option<String>,
        Option<usize>,
        Option<usize>,
        Option<usize>,
        &'a Option<String>,
        crate::diag::Code,
        &'a str,
    );
    let mut groups: Vec<(&Diagnostic, Vec<usize>)> = Vec::new();
    let mut index: BTreeMap<Key<'a>, Vec<usize>> = BTreeMap::new();
    for (i, ds) in per_instance.enumerate() {
        for d in ds {
            let key = (
                &d.file,
                d.document,
                d.line,
                d.column,
                &d.path,
                d.code,
                d.message.as_str(),
            );
            let same = index.entry(key).or_default();
            match same.iter().find(|&&g| groups[g].0 == d) {
                Some(&g) => {
                    if groups[g].1.last() != Some(&i) {
                        groups[g].1.push(i);
                    }
                }
                None => {
                    same.push(groups.len());
                    groups.push((d, vec![i]));
                }
            }
        }
    }
    groups
        .into_iter()
        .map(|(d, who)| {
            let mut d = d.clone();
            let own_file = who.len() == 1 && d.file.as_deref() == Some(names[who[0]]);
            if !own_file {
                d.message = format!(
                    "{} ({})",
                    d.message,
                    instances_label(&who, names, names.len())
                );
            }
            d
        })
        .collect()
}

/// KLN7030: objects of the same identity rendered by several instances, one error per identity,
/// in the file of the second instance that renders it.
fn duplicate_identities<'a>(
    per_instance: impl Iterator<Item = &'a [Identity]>,
    names: &[&str],
) -> Vec<Diagnostic> {
    // Identities are counted in a hash map first: sorting every (identity, instance) pair of a
    // fleet compared its strings again and again to find none repeated. Only the pairs of an
    // identity seen more than once are sorted: each instance's identities are distinct, so the
    // order is total, and the same identities come side by side, in order, each with its
    // instances in order.
    let per_instance: Vec<&[Identity]> = per_instance.collect();
    let total = per_instance.iter().map(|ids| ids.len()).sum();
    let mut seen: std::collections::HashMap<&Identity, bool, foldhash::fast::FixedState> =
        std::collections::HashMap::with_capacity_and_hasher(total, Default::default());
    let mut repeated = false;
    for id in per_instance.iter().flat_map(|ids| ids.iter()) {
        seen.entry(id)
            .and_modify(|again| {
                *again = true;
                repeated = true;
            })
            .or_insert(false);
    }
    if !repeated {
        return Vec::new();
    }
    let mut all: Vec<(&Identity, usize)> = per_instance
        .iter()
        .enumerate()
        .flat_map(|(i, ids)| ids.iter().map(move |id| (id, i)))
        .filter(|(id, _)| seen.get(id).copied().unwrap_or(false))
        .collect();
    all.sort_unstable();
    all.chunk_by(|a, b| a.0 == b.0)
        .filter(|same| same.len() > 1)
        .map(|same| {
            (
                same[0].0,
                same.iter().map(|&(_, i)| i).collect::<Vec<usize>>(),
            )
        })
        .map(|((_, kind, ns, name), who)| {
            let object = if ns.is_empty() {
                format!("{kind} {name}")
            } else {
                format!("{kind} {ns}/{name}")
            };
            let by = match who.as_slice() {
                [a, b] => format!("both instances {} and {}", names[*a], names[*b]),
                _ => format!("{} instances: {}", who.len(), {
                    let shown: Vec<&str> = who.iter().take(3).map(|&i| names[i]).collect();
                    let more = who.len().saturating_sub(3);
                    if more > 0 {
                        format!("{} and {more} more", shown.join(", "))
                    } else {
                        shown.join(", ")
                    }
                }),
            };
            Diagnostic::error(
                codes::KUREL_INSTANCE_DUPLICATE,
                format!("{object} is rendered by {by}"),
            )
            .in_file(names[who[1]])
            .with_hint(
                "objects of different instances must differ in kind, namespace or name: give each \
                 instance its own value for the parameters the package names its objects (or \
                 their namespace) from",
            )
        })
        .collect()
}

/// Errors first (sorted), then the warnings, so one report shows everything.
fn finish(mut errors: Diagnostics, warnings: Vec<Diagnostic>) -> Diagnostics {
    errors.sort();
    errors.extend(warnings);
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instances_are_named_briefly() {
        let names = ["a.yaml", "b.yaml", "c.yaml", "d.yaml", "e.yaml"];
        assert_eq!(instances_label(&[1], &names, 5), "instance b.yaml");
        assert_eq!(
            instances_label(&[0, 2], &names, 5),
            "instances a.yaml and c.yaml"
        );
        assert_eq!(
            instances_label(&[0, 1, 2, 3], &names, 5),
            "instances a.yaml, b.yaml, c.yaml and 1 more"
        );
        assert_eq!(
            instances_label(&[0, 1, 2, 3, 4], &names, 5),
            "all 5 instances"
        );
    }

    #[test]
    fn shared_diagnostics_are_given_once() {
        let names = ["i/a.yaml", "i/b.yaml", "i/c.yaml"];
        let pkg = Diagnostic::error(codes::KUREL_SCHEMA, "bad port").in_file("resources/x.yaml");
        let own = Diagnostic::error(codes::KUREL_OVERRIDE_TYPE, "bad type").in_file("i/b.yaml");
        let per: Vec<Vec<Diagnostic>> = vec![
            vec![pkg.clone()],
            vec![own.clone(), pkg.clone(), pkg.clone()],
            vec![],
        ];
        let got = grouped(per.iter().map(Vec::as_slice), &names);
        let messages: Vec<&str> = got.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            ["bad port (instances i/a.yaml and i/b.yaml)", "bad type"]
        );
    }

    /// A record moves from where one run read the package to where another did: the patch
    /// file of each operation's `-v` line moves; anything else that names the old place (a
    /// warning in a package file, a line that names it elsewhere) keeps the record from moving.
    #[test]
    fn records_move_only_their_patch_lines() {
        let record = |warning_file: &str, details: &[&str]| Record {
            objects: 1,
            identities: Vec::new(),
            warnings: vec![Diagnostic::warning(codes::KUREL_SCHEMA, "w").in_file(warning_file)],
            log: vec!["enabling 10-a (required by 20-b)".into()],
            details: details.iter().map(|d| d.to_string()).collect(),
        };
        let moved = record(
            "i/a.yaml",
            &[
                "applying 10-a.kpatch (x = true)",
                "  /t/1/shop/web.kurel/patches/10-a.kpatch:2: cm.a: k: v",
            ],
        )
        .relocated("/t/1/shop/", "shop/")
        .expect("moves");
        assert_eq!(
            moved.details,
            [
                "applying 10-a.kpatch (x = true)",
                "  shop/web.kurel/patches/10-a.kpatch:2: cm.a: k: v"
            ]
        );
        assert_eq!(moved.warnings, record("i/a.yaml", &[]).warnings);
        let in_package = record("/t/1/shop/web.kurel/resources/a.yaml", &[]);
        assert_eq!(in_package.relocated("/t/1/shop/", "shop/"), None);
        assert_eq!(
            in_package.relocated("/t/1/shop/", "/t/1/shop/"),
            Some(in_package.clone())
        );
        let elsewhere = record("i/a.yaml", &["  x: /t/1/shop/web.kurel"]);
        assert_eq!(elsewhere.relocated("/t/1/shop/", "shop/"), None);
    }

    /// Patches change objects in place; an operation that fails half way (it made the maps on
    /// its path, then found no list) is reported as if it had never run: the next operation
    /// sees the object as it was, and every operation is reported, as the careful way does.
    #[test]
    fn a_failing_operation_leaves_its_object_as_it_was() {
        let dir = std::env::temp_dir().join(format!("kurel-in-place-{}", std::process::id()));
        let pkg = dir.join("web.kurel");
        std::fs::create_dir_all(pkg.join("resources")).unwrap();
        std::fs::create_dir_all(pkg.join("patches")).unwrap();
        let write = |p: &str, t: &str| std::fs::write(pkg.join(p), t).unwrap();
        write(
            "parameters.yaml",
            "kurel: {name: web, version: 1.0.0, appVersion: '1'}\n",
        );
        write(
            "resources/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
        );
        write(
            "patches/10-p.kpatch",
            "[configmap.web]\nmetadata.extra.list[0]: a\nmetadata.extra[0]: b\n",
        );
        let package = load(&pkg).unwrap();
        let errors = render(&package, &Instance::default(), &Options::default()).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        let messages: Vec<&str> = errors
            .iter()
            .filter(|d| d.is_error())
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[1].contains("null"), "{messages:?}");
    }

    #[test]
    fn duplicate_identities_name_every_instance() {
        let names = ["a.yaml", "b.yaml", "c.yaml"];
        let id =
            |n: &str| -> Identity { ("apps".into(), "Deployment".into(), "ns".into(), n.into()) };
        let per = [vec![id("web")], vec![id("api")], vec![id("web"), id("api")]];
        let got = duplicate_identities(per.iter().map(Vec::as_slice), &names);
        let lines: Vec<String> = got
            .iter()
            .map(|d| format!("{} {}", d.file.as_deref().unwrap_or(""), d.message))
            .collect();
        assert_eq!(
            lines,
            [
                "c.yaml Deployment ns/api is rendered by both instances b.yaml and c.yaml",
                "c.yaml Deployment ns/web is rendered by both instances a.yaml and c.yaml",
            ]
        );
        assert!(got
            .iter()
            .all(|d| d.code == codes::KUREL_INSTANCE_DUPLICATE));
    }
}
