//! The whole render, as one pure function over parsed documents.
//!
//! Documents are classified (definitions, instances of the kinds they define, everything else),
//! definitions are lowered once, and units are rendered in parallel. Output keeps input order: each
//! instance is replaced by its objects in topological order, other documents pass through unchanged,
//! definitions are consumed. Documents of the component-type front-end (`openchoreo.dev`) are handed
//! to it as a whole; its releases come after everything else. Any error means no output at all.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde_json::Value;

use crate::component;
use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::Document;
use crate::expr::cel::ExprLimits;
use crate::fieldpath::FieldPath;
use crate::kro::nesting::{self, Catalog};
use crate::kro::{self, Rgd};
use crate::observed::Observed;
use crate::openapi::Schemas;
use crate::render::RenderLimits;
use crate::scope::Scopes;
use crate::strategy::{self, KroMode};

/// Each unit's origin (defined below the front-ends, in [`crate::provenance`]).
pub use crate::provenance::{Origin, OriginKind};

/// Every document is an object with apiVersion and kind (a check of the documents' layer).
pub use crate::document::check_objects as check_documents;

/// Nested compositions are the kro front-end's ([`crate::kro::nesting`]).
pub use crate::kro::nesting::{
    nested_definitions, object_ref, render_instance, Nesting, MAX_NESTING,
};

/// Settings of one run.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Namespace for instances that name none (what `kubectl -n` or an Argo CD destination would
    /// give them).
    pub namespace: Option<String>,
    /// Expression compile limits.
    pub expr: ExprLimits,
    /// Evaluation limits.
    pub render: RenderLimits,
    /// Settings of the component-type front-end.
    pub component: component::Options,
    /// CustomResourceDefinitions from outside the inputs (`--crds DIR`): their kinds' scopes and
    /// schemas are known to the checks, and they are not part of the output.
    pub crds: Vec<Document>,
    /// Groups whose kinds nothing defines but that are meant to pass through (`*`: all).
    pub pass_through: Vec<String>,
    /// Live objects that externalRefs and status reads resolve against (`--observed`).
    pub observed: Option<Observed>,
    /// kro mode: RGDs and instances are shipped to the controller (see [`crate::strategy`]).
    pub kro: Option<KroMode>,
    /// Annotate rendered objects with the definition, instance and node that produced them.
    pub provenance: bool,
}

impl Options {
    /// What a kro instance's render reads of these options.
    pub fn nesting(&self) -> nesting::Settings<'_> {
        nesting::Settings {
            namespace: self.namespace.as_deref(),
            observed: self.observed.as_ref(),
            render: &self.render,
            provenance: self.provenance,
            pending_ok: self.kro.is_some(),
        }
    }
}

/// The result of a successful run.
#[derive(Debug, Clone, Default)]
pub struct Output {
    /// Objects to print, in order.
    pub objects: Vec<Value>,
    /// Warnings (errors make the run fail instead).
    pub warnings: Vec<Diagnostic>,
}

/// What each input document that is not a definition or a component document is.
enum Item<'a> {
    /// A kro instance, with its index among the run's documents.
    Instance(&'a Rgd, &'a Document, usize),
    /// A document that passes through, with its index among the run's documents.
    Passthrough(&'a Document, usize),
    /// kro mode: an RGD shipped as it is.
    Definition(&'a Document),
    /// kro mode: an RGD's generated instance CRD.
    GeneratedCrd(&'a Rgd),
}

/// Definitions found in the inputs, keyed by (group, version, kind) of their instances.
pub struct Definitions {
    /// Loaded RGDs, in input order.
    pub rgds: Vec<Rgd>,
    /// Whether the RGDs instantiate each other in a cycle (reported; nothing is nested then).
    pub nesting_cycle: bool,
    /// `(group, version, kind)` served by the CRDs of the inputs and `--crds`.
    pub crd_kinds: std::collections::BTreeSet<(String, String, String)>,
    /// The bundled Kubernetes schemas plus those of the CRDs of the inputs and `--crds`: what
    /// every front-end checks its output against.
    pub schemas: Schemas,
    by_gvk: BTreeMap<(String, String, String), usize>,
    /// The same RGDs by kind alone, looked up without building a key: [`Definitions::find`]
    /// runs for every input document and every rendered object (nested compositions).
    by_kind: BTreeMap<String, Vec<usize>>,
}

impl Definitions {
    /// The RGD defining this apiVersion and kind.
    pub fn find(&self, api_version: &str, kind: &str) -> Option<&Rgd> {
        let (group, version) = api_version.rsplit_once('/')?;
        self.by_kind
            .get(kind)?
            .iter()
            .map(|&i| &self.rgds[i])
            .find(|r| r.group == group && r.version == version)
    }
}

impl Catalog for Definitions {
    fn rgds(&self) -> &[Rgd] {
        &self.rgds
    }
    fn find(&self, api_version: &str, kind: &str) -> Option<&Rgd> {
        Definitions::find(self, api_version, kind)
    }
    fn nesting_cycle(&self) -> bool {
        self.nesting_cycle
    }
}

/// Load every definition in the documents. Errors are collected; definitions that loaded are kept so
/// later stages can still report their own problems.
pub fn load_definitions(docs: &[Document], opts: &Options) -> (Definitions, Diagnostics) {
    let mut diags = Diagnostics::new();
    let mut scopes = Scopes::new();
    let mut schemas = Schemas::bundled();
    let mut crd_kinds = std::collections::BTreeSet::new();
    // The CRDs and RGDs among the documents, found on every core (in order): the run may hold
    // thousands of other documents.
    let special: Vec<&Document> = docs
        .par_iter()
        .filter(|d| strategy::is_crd(d) || kro::is_rgd(d))
        .collect();
    for d in special.iter().copied().chain(&opts.crds) {
        if d.kind() == Some("CustomResourceDefinition")
            && d.api_version()
                .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        {
            crd_kinds.extend(served_kinds(&d.value));
            scopes.declare_crd(&d.value);
            if let Err(e) = schemas.add_crd(&d.value) {
                diags.push(
                    d.diag(
                        Diagnostic::warning(
                            codes::TEMPLATE_SCHEMA,
                            format!(
                                "CustomResourceDefinition not used for checking templates: {e}"
                            ),
                        )
                        .with_hint("templates of this kind are not checked against a schema"),
                        &FieldPath::root().key("spec"),
                    ),
                );
            }
        }
        if kro::is_rgd(d) {
            // Instances of RGD kinds are themselves resources other RGDs may create.
            let sch = &d.value["spec"]["schema"];
            if let Some(k) = sch["kind"].as_str() {
                let group = sch["group"].as_str().unwrap_or(kro::rgd::KRO_GROUP);
                scopes.declare(group, k, sch["scope"].as_str() != Some("Cluster"));
            }
        }
    }
    let rgd_docs: Vec<&Document> = special.into_iter().filter(|d| kro::is_rgd(d)).collect();
    let (rgds, by_gvk, rgd_diags) =
        kro::definitions::load_all(&rgd_docs, &scopes, &mut schemas, &crd_kinds, &opts.expr);
    diags.extend(rgd_diags);
    let mut by_kind: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (key, &i) in &by_gvk {
        by_kind.entry(key.2.clone()).or_default().push(i);
    }
    let mut defs = Definitions {
        rgds,
        nesting_cycle: false,
        crd_kinds,
        schemas,
        by_gvk,
        by_kind,
    };
    if let Some(d) = nesting::nesting_cycle(&defs) {
        defs.nesting_cycle = true;
        diags.push(d);
    }
    (defs, diags)
}

/// kro mode's order: CRDs of the inputs, generated instance CRDs (on request), RGDs, then the
/// rest in input order.
fn kro_mode_order<'a>(
    items: Vec<Item<'a>>,
    docs: &'a [Document],
    defs: &'a Definitions,
    mode: &KroMode,
) -> Vec<Item<'a>> {
    let (crds, rest): (Vec<Item<'a>>, Vec<Item<'a>>) = items
        .into_iter()
        .partition(|i| matches!(i, Item::Passthrough(d, _) if strategy::is_crd(d)));
    let mut out = crds;
    if mode.emit_crds {
        out.extend(defs.rgds.iter().map(Item::GeneratedCrd));
    }
    out.extend(docs.iter().filter(|d| kro::is_rgd(d)).map(Item::Definition));
    out.extend(rest);
    out
}

/// `(group, version, kind)` of each version a CRD serves.
fn served_kinds(crd: &Value) -> Vec<(String, String, String)> {
    let spec = &crd["spec"];
    let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str()) else {
        return Vec::new();
    };
    spec["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| v["served"].as_bool() != Some(false))
        .filter_map(|v| v["name"].as_str())
        .map(|v| (group.to_string(), v.to_string(), kind.to_string()))
        .collect()
}

/// Check the documents and load their definitions, for commands that only need the graphs. Any
/// error fails the whole call, with every diagnostic found (sorted).
pub fn definitions(docs: &[Document], opts: &Options) -> Result<Definitions, Diagnostics> {
    let mut diags = crate::document::check_objects(docs);
    if !diags.has_errors() {
        let (defs, def_diags) = load_definitions(docs, opts);
        diags.extend(def_diags);
        if !diags.has_errors() {
            return Ok(defs);
        }
    }
    diags.sort();
    Err(diags)
}

/// Render documents. On success, the objects to print and any warnings; on failure, every
/// diagnostic found (sorted), and no objects.
pub fn render(docs: &[Document], opts: &Options) -> Result<Output, Diagnostics> {
    let units = render_units(docs, opts, Ok)?;
    Ok(Output {
        objects: units.units.into_iter().flatten().collect(),
        warnings: units.warnings,
    })
}

/// The result of [`render_units`]: what `finish` made of each unit, in output order.
#[derive(Debug, Clone, Default)]
pub struct Units<T> {
    /// One entry per unit that produced output: a pass-through document, an instance, and last
    /// the component releases (when there are components).
    pub units: Vec<T>,
    /// What produced each unit (same length and order as `units`).
    pub origins: Vec<Origin>,
    /// Warnings (errors make the run fail instead).
    pub warnings: Vec<Diagnostic>,
    /// With an [`Exchange`]: for each unit, the key of the kro instance it rendered
    /// ([`instance_key`]), `None` for every other unit; empty otherwise.
    pub keys: Vec<Option<String>>,
}

/// Units of kro instances exchanged with another run of the same context instead of rendered
/// again: what `kiln diff` does with the kro instances both sides hold unchanged (the request
/// supplies it, and decides when the context is the same). The render of a kro instance reads
/// its own document's value, the run's definitions (RGDs and CRDs) and the run's options, and
/// nothing else: not its file, not its position, not another document. Asked in direct mode
/// only (kro mode ships instances in another order, with definitions).
pub trait InstanceCache<U>: Sync {
    /// The unit another run rendered for the instance of this key ([`instance_key`]).
    fn take(&self, key: &str) -> Option<U>;
    /// Whether another run will take this run's unit of the instance of this key: its objects
    /// are then made into a unit by [`InstanceCache::make`], not by the run's `finish`.
    fn shares(&self, key: &str) -> bool;
    /// The unit of a shared instance's objects.
    fn make(&self, objects: Vec<Value>) -> Result<U, Diagnostic>;
}

/// A run's exchange of kro instance units with another run: each instance unit's key is said
/// ([`Units::keys`]), and units are taken from or made for the other run through `cache`.
pub struct Exchange<'a, U> {
    /// The other run's units, when it has this run's context.
    pub cache: Option<&'a dyn InstanceCache<U>>,
    /// The component releases' exchange.
    pub components: Option<component::UnitReuse<'a, U>>,
    /// The instance keys of the documents, by index, when they were made already (`None` for a
    /// document that is not an instance): not made again.
    pub known: Option<&'a [Option<String>]>,
}

/// What identifies a kro instance document for [`InstanceCache`]: its value as JSON, keys in their
/// order. Two documents with the same key render the same objects in the same run context
/// (formatting, comments, file and position do not reach the objects).
pub fn instance_key(doc: &Document) -> String {
    serde_json::to_string(&doc.value).unwrap_or_default()
}

/// Render documents and hand each unit's objects to `finish` on the worker that rendered them.
///
/// This is how a caller serialises output in parallel and keeps memory bounded: `finish` turns
/// the objects into bytes and they are dropped there, so the whole run never holds every
/// rendered object at once. Units come back in output order whatever the number of threads; on
/// any error (including one from `finish`) there is no output at all.
pub fn render_units<T, F>(
    docs: &[Document],
    opts: &Options,
    finish: F,
) -> Result<Units<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_units_with(docs, &[], opts, finish, None)
}

/// [`render_units`] for documents the caller has no further use for: the value of each
/// document that will pass through is moved into its unit instead of copied, and so is the value
/// of each kro instance in direct mode (unless an `exchange` asks for instance keys, which read
/// the value); the document keeps a stub (apiVersion, kind, metadata name and namespace: what
/// diagnostics and origins read). A component's own documents ([`component::takes_spec`])
/// hand their `spec` over to the component front-end likewise. CustomResourceDefinitions,
/// definitions and the other component documents are left as they are. At thousands of plain
/// manifests the copies were the largest cost of a pass-through (fresh memory the kernel must
/// zero); at thousands of instances, the parsed instances were held to the end of the run,
/// beside the output, and freed one by one on the main thread after it.
pub fn render_units_moving<T, F>(
    docs: &mut [Document],
    opts: &Options,
    finish: F,
    exchange: Option<&Exchange<'_, T>>,
) -> Result<Units<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let declared = kro::definitions::declared_kinds(docs);
    // Instance keys (a diff's exchange) read the instance's value: then instances stay in place.
    let instances_move = opts.kro.is_none() && exchange.is_none();
    // On the workers: a stub per document is an allocation or five, for every document.
    let moved: Vec<std::sync::Mutex<Option<Value>>> = docs
        .par_iter_mut()
        .with_max_len(crate::process::PIECE)
        .map(|d| {
            let moves = d.value.is_object()
                && !kro::is_rgd(d)
                && !component::is_component_document(d)
                && !strategy::is_crd(d)
                && d.kind().is_some()
                && d.api_version().is_some_and(|api| {
                    let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
                    instances_move
                        || !declared.contains(&(
                            group.to_string(),
                            version.to_string(),
                            d.kind().unwrap_or("").to_string(),
                        ))
                });
            // A component's own documents hand their spec over instead (read into its
            // definitions without a copy); the rest of the document stays.
            if !moves && component::takes_spec(d) {
                return std::sync::Mutex::new(d.value.get_mut("spec").map(Value::take));
            }
            std::sync::Mutex::new(moves.then(|| {
                let stub = crate::document::identity_stub(&d.value, false);
                std::mem::replace(&mut d.value, stub)
            }))
        })
        .collect();
    render_units_with(docs, &moved, opts, finish, exchange)
}

fn render_units_with<T, F>(
    docs: &[Document],
    moved: &[std::sync::Mutex<Option<Value>>],
    opts: &Options,
    finish: F,
    exchange: Option<&Exchange<'_, T>>,
) -> Result<Units<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let mut diags = crate::document::check_objects(docs);
    if diags.has_errors() {
        diags.sort();
        return Err(diags);
    }
    let (defs, def_diags) = load_definitions(docs, opts);
    diags.extend(def_diags);

    // Classified on every core; the collected order is the documents'.
    let items: Vec<Item<'_>> = docs
        .par_iter()
        .enumerate()
        .filter_map(|(i, d)| {
            if kro::is_rgd(d) || component::is_component_document(d) {
                // Definitions are consumed; components are rendered together below.
                None
            } else {
                Some(
                    match defs.find(d.api_version().unwrap_or(""), d.kind().unwrap_or("")) {
                        Some(r) => Item::Instance(r, d, i),
                        None => Item::Passthrough(d, i),
                    },
                )
            }
        })
        .collect();

    // Nothing passes through on a guess: near misses and undefined kinds are errors.
    // Kinds every RGD document declares, loaded or not: the instances of an RGD that failed to
    // load are explained by its own errors, not reported again as unknown.
    let mut declared = kro::definitions::declared_kinds(docs);
    declared.extend(defs.by_gvk.keys().cloned());
    let known = crate::inventory::Known {
        rgd_kinds: declared,
        crd_kinds: defs.crd_kinds.clone(),
        pass_through: opts.pass_through.clone(),
    };
    // The kind of the last document that passed: pass-through documents come in runs of one
    // kind (thousands of ConfigMaps), and the answer depends on nothing else.
    let mut passed: Option<(&str, &str)> = None;
    for item in &items {
        if let Item::Passthrough(d, _) = item {
            let (api, kind) = (d.api_version().unwrap_or(""), d.kind().unwrap_or(""));
            if passed == Some((api, kind)) {
                continue;
            }
            match crate::inventory::check_passthrough(api, kind, &known) {
                Some(problem) => diags.push(d.diag(problem, &FieldPath::root().key("kind"))),
                None => passed = Some((api, kind)),
            }
        }
    }

    let items = match &opts.kro {
        Some(mode) => kro_mode_order(items, docs, &defs, mode),
        None => items,
    };
    let cache = exchange.and_then(|e| e.cache);
    // The value `render_units_moving` moved out of document `i`, if it did (of a component's
    // own document: its spec).
    let taken = |i: usize| moved.get(i).and_then(|m| m.lock().ok()?.take());
    // Each unit with its instance key (when keys are asked for) and its origin.
    type Keyed<T> = Result<(T, Option<String>, Origin), Vec<Diagnostic>>;
    let rendered: Vec<Keyed<T>> = items
        .par_iter()
        .with_max_len(crate::process::PIECE)
        .map(|item| {
            let key = match (item, &opts.kro, exchange) {
                // Made already (`Exchange::known`, by document index), or made here.
                (Item::Instance(_, doc, i), None, Some(e)) => Some(
                    e.known
                        .and_then(|k| k.get(*i)?.clone())
                        .unwrap_or_else(|| instance_key(doc)),
                ),
                _ => None,
            };
            // Made here, on the worker: the file name it copies was a serial millisecond at
            // 10 000 instances.
            let origin = match item {
                Item::Passthrough(d, _) => Origin::of(OriginKind::Passthrough, d),
                Item::Instance(_, d, _) => Origin::of(OriginKind::Instance, d),
                Item::Definition(d) => Origin::of(OriginKind::Definition, d),
                Item::GeneratedCrd(r) => Origin::of(OriginKind::Definition, &r.graph.document),
            };
            if let (Some(k), Some(c)) = (&key, cache) {
                if let Some(unit) = c.take(k) {
                    return Ok((unit, key, origin));
                }
            }
            let nesting = Nesting {
                defs: &defs,
                settings: opts.nesting(),
            };
            let objects = match (item, &opts.kro) {
                (Item::Passthrough(d, _), Some(mode)) if strategy::is_crd(d) => {
                    vec![strategy::ship_input_crd(d, mode)]
                }
                // A value moved out of its document (see `render_units_moving`) is handed on
                // as it is; otherwise the document's is copied.
                (Item::Passthrough(d, i), _) => {
                    let value = taken(*i).unwrap_or_else(|| d.value.clone());
                    let problems =
                        crate::inventory::check_passthrough_schema(d, &value, &defs.schemas);
                    if !problems.is_empty() {
                        return Err(problems);
                    }
                    vec![value]
                }
                // Likewise an instance's value, consumed by its render (and freed on this
                // worker when the unit is done).
                (Item::Instance(rgd, doc, i), None) => match taken(*i) {
                    Some(value) => {
                        nesting::render_instance_value(rgd, doc, value, &nesting, None, 0)?
                    }
                    None => render_instance(rgd, doc, &nesting, None, 0)?,
                },
                (Item::Instance(rgd, doc, _), Some(mode)) => {
                    let prepared = kro::instance::prepare(rgd, doc, opts.namespace.as_deref())?;
                    let instance = prepared.schema.clone();
                    let unit = nesting.unit(rgd, doc, prepared);
                    strategy::ship_instance(unit, instance, &opts.render, mode)?
                }
                (Item::Definition(d), mode) => {
                    vec![strategy::ship_definition(d, &mode.unwrap_or_default())]
                }
                (Item::GeneratedCrd(rgd), mode) => {
                    vec![strategy::ship_crd(rgd, &mode.unwrap_or_default())]
                }
            };
            match (&key, cache) {
                (Some(k), Some(c)) if c.shares(k) => c.make(objects),
                _ => finish(objects),
            }
            .map(|u| (u, key, origin))
            .map_err(|d| vec![d])
        })
        .collect();

    let mut units = Vec::with_capacity(rendered.len() + 1);
    let mut origins = Vec::with_capacity(rendered.len() + 1);
    let mut keys = Vec::new();
    for r in rendered {
        match r {
            Ok((u, key, origin)) => {
                units.push(u);
                if exchange.is_some() {
                    keys.push(key);
                }
                origins.push(origin);
            }
            Err(ds) => diags.extend(ds),
        }
    }
    // Component releases follow the kro objects and pass-through documents, in the component
    // front-end's own documented order.
    // With the specs `render_units_moving` moved out of them.
    let (component_docs, component_specs): (Vec<&Document>, Vec<Option<Value>>) = docs
        .par_iter()
        .enumerate()
        .filter(|(_, d)| component::is_component_document(d))
        .map(|(i, d)| (d, taken(i)))
        .unzip();
    if !component_docs.is_empty() {
        // `--namespace` applies to components without one, as it does to kro instances.
        let mut component_opts = opts.component.clone();
        if component_opts.namespace.is_none() {
            component_opts.namespace = opts.namespace.clone();
        }
        component_opts.schemas = defs.schemas.clone();
        component_opts.provenance = opts.provenance;
        component_opts.observed = opts.observed.clone();
        match component::render_units_taking(
            &component_docs,
            component_specs,
            &component_opts,
            &finish,
            exchange.and_then(|e| e.components.as_ref()),
        ) {
            Ok(r) => {
                diags.extend(r.warnings);
                if exchange.is_some() {
                    keys.extend(r.keys);
                }
                units.extend(r.units);
                origins.extend(r.origins);
            }
            Err(ds) => diags.extend(ds.0),
        }
    }
    diags.sort();
    if diags.has_errors() {
        return Err(diags);
    }
    Ok(Units {
        units,
        origins,
        warnings: diags.0,
        keys,
    })
}
