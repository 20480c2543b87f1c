//! Component types front-end (`openchoreo.dev/v1alpha1`): ComponentTypeDefinitions, Addons,
//! Components, Workloads, ComponentDeployments, ComponentEnvSnapshots and ComponentReleases
//! rendered into one Release per component and environment. See `docs/component-types.md`.
//!
//! The stages, one module each:
//!
//! - [`kinds`]: documents → plain structs (with upstream aliases), shape checks;
//! - `shorthand`: the shorthand schema → JSON Schema, merged parameters + envOverrides;
//! - `template`: the `${…}` scanner, expressions compiled once per definition, rendering;
//! - `functions`: the helper functions (`oc_merge`, `oc_omit`, `oc_generate_name`, …);
//! - `typecheck`: every template expression typed against the schemas, at load;
//! - `context`: parameters (merge, defaults, validation) and the context variables;
//! - `overrides`: an environment's env/file overrides merged into a copy of the workload;
//! - `pointer` and `patch`: addon patch paths with filters, and the operations;
//! - `release`: one Component in one environment → its resources (creates, patches, removes);
//! - `upstream`: the context of upstream kinds (ComponentType, Trait…) as OpenChoreo's controller
//!   builds it: names, labels, configurations, data plane, dependencies, helper views;
//! - `project`: upstream's project pipeline (a ProjectReleaseBinding → its cell namespace…);
//! - `schemaextract`: routes from endpoint API schemas (OpenAPI, protobuf) for
//!   `workload.toEndpointResources`;
//! - `order`: the output order; [`snapshot`]: snapshot digests.
//!
//! A Release is the list of rendered objects (what a GitOps tool applies), not a wrapping
//! `Release`/`RenderedRelease` object.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};

use rayon::prelude::*;
use serde_json::{json, Value};

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::Document;
use crate::expr::budget::EvalBudget;
use crate::expr::cel::ExprLimits;
use crate::fieldpath::FieldPath;
use crate::openapi::Schemas;

mod context;
mod crd;
pub(crate) mod functions;
pub mod kinds;
mod order;
mod overrides;
mod patch;
mod pointer;
mod project;
mod release;
mod resource;
mod schemaextract;
mod shorthand;
pub mod snapshot;
mod template;
pub(crate) mod typecheck;
mod upstream;

use kinds::{
    ComponentDef, Family, Loc, Model, ReleaseBindingDef, ReleaseDef, SnapshotDef, TraitDef,
    TypeDef, WorkloadDef,
};
use template::{Exprs, TplError};

/// The apiVersion of every component-types document.
pub const API_VERSION: &str = "openchoreo.dev/v1alpha1";

/// Settings of a component render.
#[derive(Debug, Clone)]
pub struct Options {
    /// The environment to render (`kiln render --env NAME`).
    pub env: Option<String>,
    /// Namespace for Components that set none (`--namespace`).
    pub namespace: Option<String>,
    /// Expression compile limits.
    pub expr: ExprLimits,
    /// Work one expression evaluation may do.
    pub eval: EvalBudget,
    /// Most items one forEach may produce.
    pub max_collection_size: usize,
    /// Schemas every rendered resource is checked against: the bundled Kubernetes kinds plus the
    /// CRDs of the run.
    pub schemas: Schemas,
    /// Annotate rendered resources with the definition, component and resource that made them.
    pub provenance: bool,
    /// Live objects (`--observed`): where an upstream render finds the Environment, DataPlane,
    /// Project or uids the inputs do not hold.
    pub observed: Option<crate::observed::Observed>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            env: None,
            namespace: None,
            expr: ExprLimits::default(),
            eval: EvalBudget::default(),
            max_collection_size: crate::limits::DEFAULT_COMPONENT_COLLECTION_SIZE,
            schemas: Schemas::bundled(),
            provenance: false,
            observed: None,
        }
    }
}

/// What a component render produced.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Objects to print, in the documented order.
    pub objects: Vec<Value>,
    /// Warnings (errors fail the render instead).
    pub warnings: Vec<Diagnostic>,
}

/// Whether a document belongs to this front-end.
pub fn is_component_document(d: &Document) -> bool {
    d.api_version().is_some_and(is_component_api_version)
}

/// Whether an apiVersion is this front-end's (`openchoreo.dev/…`).
pub fn is_component_api_version(api_version: &str) -> bool {
    api_version.starts_with("openchoreo.dev/")
}

/// Whether kiln renders from a document of this `openchoreo.dev` kind (it is consumed, never
/// passed through).
pub fn renders_kind(kind: &str) -> bool {
    RENDERING_KINDS.contains(&kind)
}

/// Everything read from the documents.
#[derive(Default)]
struct Loaded<'a> {
    types: Vec<TypeDef<'a>>,
    addons: Vec<TraitDef<'a>>,
    components: Vec<ComponentDef<'a>>,
    workloads: Vec<WorkloadDef<'a>>,
    deployments: Vec<ReleaseBindingDef<'a>>,
    snapshots: Vec<SnapshotDef<'a>>,
    releases: Vec<ReleaseDef<'a>>,
    /// Upstream's ProjectTypes and ClusterProjectTypes, and the ProjectReleaseBindings rendered
    /// with them (`project`).
    project_types: Vec<kinds::ProjectTypeDef<'a>>,
    project_bindings: Vec<kinds::ProjectBindingDef<'a>>,
    /// Upstream's (Cluster)ResourceTypes, Resources and ResourceReleaseBindings, rendered by its
    /// resource pipeline (`resource`).
    resource_types: Vec<kinds::ResourceTypeDef<'a>>,
    resources: Vec<kinds::ResourceDef<'a>>,
    resource_bindings: Vec<kinds::ResourceBindingDef<'a>>,
    resource_releases: Vec<kinds::ResourceReleaseDef<'a>>,
    /// Documents of other openchoreo.dev kinds, passed through.
    others: Vec<Value>,
    /// The same documents, which upstream renders read (Environment, DataPlane, Project…).
    platform: Vec<&'a Document>,
    exprs: Exprs,
    /// `(file, document index)` of every document with an error: what uses one is checked as far
    /// as it can be (its own parameters) but not rendered.
    broken: BTreeSet<(String, usize)>,
    /// Names of those documents: a reference to one is explained by its own errors, not reported
    /// again as unknown.
    failed_names: BTreeSet<String>,
}

impl Loaded<'_> {
    fn is_broken(&self, loc: &Loc<'_>) -> bool {
        self.broken
            .contains(&(loc.doc.file().to_string(), loc.doc.index))
    }
}

fn err(
    loc: &Loc<'_>,
    code: crate::diag::Code,
    at: &FieldPath,
    msg: String,
    hint: &str,
) -> Diagnostic {
    loc.error(code, at, msg, hint)
}

/// Kinds that exist upstream but are outputs, not rendering inputs.
const UNSUPPORTED: &[&str] = &["RenderedRelease", "Release"];

/// Upstream's frozen project release. kiln renders a ProjectReleaseBinding from the live
/// Project and its (Cluster)ProjectType (`project`); a ProjectRelease would be ignored, so it is
/// refused.
const PROJECT_PIPELINE_KINDS: &[&str] = &["ProjectRelease"];

/// Upstream's one-off build run: its controller renders a workflow-plane job from it
/// (`internal/controller/workflowrun`). It is an imperative request, not something a rendered
/// release holds, and kiln renders no builds, so it is refused rather than passed on.
const RUN_KINDS: &[&str] = &["WorkflowRun"];

/// The other kinds of upstream's API (`api/v1alpha1`, commit ad3f5030): control-plane
/// configuration that no pipeline turns into data-plane objects of a component. Those an upstream
/// render reads (Environment, DataPlane, ClusterDataPlane, Project, SecretReference,
/// ObservabilityAlertsNotificationChannel) are read; all pass through unchanged, as any document
/// kiln does not render. An `openchoreo.dev` kind not in this list or the ones above is refused,
/// so the next kind upstream adds is looked at before it is let through.
const PLATFORM_KINDS: &[&str] = &[
    "Project",
    "Environment",
    "DataPlane",
    "ClusterDataPlane",
    "SecretReference",
    "ObservabilityAlertsNotificationChannel",
    "ObservabilityAlertRule",
    "ObservabilityPlane",
    "ClusterObservabilityPlane",
    "DeploymentPipeline",
    "WorkflowPlane",
    "ClusterWorkflowPlane",
    "Workflow",
    "ClusterWorkflow",
    "AuthzRole",
    "ClusterAuthzRole",
    "AuthzRoleBinding",
    "ClusterAuthzRoleBinding",
];

/// The kinds the front-end renders from, with their upstream aliases: what a near miss is
/// measured against.
const RENDERING_KINDS: &[&str] = &[
    "ComponentTypeDefinition",
    "ComponentType",
    "ClusterComponentType",
    "Addon",
    "Trait",
    "ClusterTrait",
    "Component",
    "Workload",
    "ComponentDeployment",
    "ReleaseBinding",
    "ComponentEnvSnapshot",
    "ComponentRelease",
    "ProjectType",
    "ClusterProjectType",
    "ProjectReleaseBinding",
    "ResourceType",
    "ClusterResourceType",
    "Resource",
    "ResourceReleaseBinding",
    "ResourceRelease",
];

/// A per-component document read ahead of [`load`]'s loop, with what reading it said. Boxed:
/// there is one entry per input document until the loop takes them.
enum ReadAhead<'a> {
    Component(Option<Box<ComponentDef<'a>>>, Vec<Diagnostic>),
    Workload(Option<Box<WorkloadDef<'a>>>, Vec<Diagnostic>),
    Deployment(Option<Box<ReleaseBindingDef<'a>>>, Vec<Diagnostic>),
}

/// Whether [`render_units_taking`] may be handed the `spec` of this document instead of reading
/// it in place: the documents there are one or more of per component (Component, Workload,
/// ReleaseBinding and their proposal names), read into their definitions without a copy.
pub fn takes_spec(d: &Document) -> bool {
    is_unit_document(d) && d.value.get("spec").is_some_and(Value::is_object)
}

/// Whether a document is one of those there are one or more of per component: a Component, a
/// Workload or a binding (ReleaseBinding, ComponentDeployment), which only the releases of its
/// component read ([`UnitReuse`]).
pub fn is_unit_document(d: &Document) -> bool {
    d.api_version() == Some(API_VERSION)
        && matches!(
            d.kind().and_then(Family::of),
            Some(Family::Component | Family::Workload | Family::ReleaseBinding)
        )
}

/// The documents there are one or more of per component, read on every core: a fleet has
/// thousands, and reading them one after another on the main thread was a tenth of the run.
/// Each reads its own document only (and its spec from `specs`, when it was handed over);
/// `load` takes them in document order.
fn read_ahead<'a>(docs: &[&'a Document], specs: Vec<Option<Value>>) -> Vec<Option<ReadAhead<'a>>> {
    let mut specs = specs;
    specs.resize_with(docs.len(), || None);
    docs.par_iter()
        .zip(specs)
        .with_max_len(crate::process::PIECE)
        .map(|(&d, taken)| {
            if d.api_version() != Some(API_VERSION) {
                return None;
            }
            let (loc, v, mut ds) = (Loc::new(d), &d.value, Vec::new());
            Some(match Family::of(d.kind().unwrap_or(""))? {
                Family::Component => ReadAhead::Component(
                    kinds::component_def(loc, Cow::Borrowed(v), taken, &mut ds).map(Box::new),
                    ds,
                ),
                Family::Workload => ReadAhead::Workload(
                    kinds::workload_def(loc, Cow::Borrowed(v), taken, &mut ds).map(Box::new),
                    ds,
                ),
                Family::ReleaseBinding => ReadAhead::Deployment(
                    kinds::release_binding_def(loc, v, taken, &mut ds).map(Box::new),
                    ds,
                ),
                _ => return None,
            })
        })
        .collect()
}

/// Read and check every document (the specs handed over in `specs`, by document, read from
/// there); compile every expression once.
fn load<'a>(
    docs: &[&'a Document],
    specs: Vec<Option<Value>>,
    limits: &ExprLimits,
) -> (Loaded<'a>, Vec<Diagnostic>) {
    let mut l = Loaded::default();
    let mut diags = Vec::new();
    let mut ahead = read_ahead(docs, specs);
    // Sized once: grown by doubling, the lists of a fleet's definitions were copied again and
    // again on the main thread.
    let count = |f: fn(&ReadAhead<'_>) -> bool| ahead.iter().flatten().filter(|a| f(a)).count();
    l.components
        .reserve(count(|a| matches!(a, ReadAhead::Component(..))));
    l.workloads
        .reserve(count(|a| matches!(a, ReadAhead::Workload(..))));
    l.deployments
        .reserve(count(|a| matches!(a, ReadAhead::Deployment(..))));
    for (i, &d) in docs.iter().enumerate() {
        let loc = Loc::new(d);
        let root = FieldPath::root();
        match ahead[i].take() {
            Some(ReadAhead::Component(c, ds)) => {
                diags.extend(ds);
                l.components.extend(c.map(|c| *c));
                continue;
            }
            Some(ReadAhead::Workload(w, ds)) => {
                diags.extend(ds);
                l.workloads.extend(w.map(|w| *w));
                continue;
            }
            Some(ReadAhead::Deployment(dd, ds)) => {
                diags.extend(ds);
                l.deployments.extend(dd.map(|d| *d));
                continue;
            }
            None => {}
        }
        if d.api_version() != Some(API_VERSION) {
            diags.push(err(
                &loc,
                codes::COMPONENT_INVALID,
                &root.key("apiVersion"),
                format!("unsupported apiVersion {:?}", d.api_version().unwrap_or("")),
                "component-types documents use apiVersion: openchoreo.dev/v1alpha1",
            ));
            continue;
        }
        let kind = d.kind().unwrap_or("");
        let v = &d.value;
        match Family::of(kind) {
            Some(Family::ComponentType) => {
                if let Some(t) = kinds::type_def(loc, v, &mut diags) {
                    l.types.push(t);
                }
            }
            Some(Family::Trait) => {
                if let Some(a) = kinds::trait_def(loc, v, &mut diags) {
                    l.addons.push(a);
                }
            }
            // Components, Workloads and ReleaseBindings were read ahead (`read_ahead`).
            Some(Family::Snapshot) => {
                let before = diags.len();
                if let Some(s) = kinds::snapshot_def(loc.clone(), v, &mut diags) {
                    l.snapshots.push(s);
                }
                if diags.len() == before {
                    check_digest(&loc, v, &mut diags);
                }
            }
            Some(Family::ComponentRelease) => {
                if let Some(r) = kinds::release_def(loc, v, &mut diags) {
                    l.releases.push(r);
                }
            }
            None if matches!(kind, "ResourceType" | "ClusterResourceType") => {
                if let Some(t) = kinds::resource_type_def(loc, v, &mut diags) {
                    l.resource_types.push(t);
                }
            }
            None if kind == "Resource" => {
                if let Some(r) = kinds::resource_def(loc, v, &mut diags) {
                    l.resources.push(r);
                }
            }
            None if kind == "ResourceReleaseBinding" => {
                if let Some(b) = kinds::resource_binding_def(loc, v, &mut diags) {
                    l.resource_bindings.push(b);
                }
            }
            None if kind == "ResourceRelease" => {
                if let Some(r) = kinds::resource_release_def(loc, v, &mut diags) {
                    l.resource_releases.push(r);
                }
            }
            _ if UNSUPPORTED.contains(&kind) => diags.push(err(
                &loc,
                codes::COMPONENT_INVALID,
                &root.key("kind"),
                format!("kind {kind} is an output of rendering, not an input"),
                "render from the definitions (live, a ComponentEnvSnapshot or a ComponentRelease); kiln prints the rendered objects themselves",
            )),
            None if matches!(kind, "ProjectType" | "ClusterProjectType") => {
                if let Some(t) = kinds::project_type_def(loc, v, &mut diags) {
                    l.project_types.push(t);
                }
            }
            None if kind == "ProjectReleaseBinding" => {
                if let Some(b) = kinds::project_binding_def(loc, v, &mut diags) {
                    l.project_bindings.push(b);
                }
            }
            _ if PROJECT_PIPELINE_KINDS.contains(&kind) => diags.push(err(
                &loc,
                codes::UNSUPPORTED_FEATURE,
                &root.key("kind"),
                format!("kind {kind} freezes a project type for upstream's project pipeline; kiln renders ProjectReleaseBindings from the live Project and its type, and does not read releases"),
                "leave ProjectReleases out of a kiln render; give the Project, its (Cluster)ProjectType and the ProjectReleaseBindings",
            )),
            _ if RUN_KINDS.contains(&kind) => diags.push(err(
                &loc,
                codes::UNSUPPORTED_FEATURE,
                &root.key("kind"),
                format!("kind {kind} is a build run, which upstream's controller executes on a workflow plane; kiln renders no builds"),
                "leave build runs out of a kiln render; Workflow and ClusterWorkflow definitions are accepted and passed through",
            )),
            // Other OpenChoreo kinds (Project, Environment, DataPlane…) are not rendering inputs:
            // they pass through unchanged, like any document kiln does not render.
            _ if PLATFORM_KINDS.contains(&kind) => {
                l.others.push(v.clone());
                l.platform.push(d);
            }
            // Anything else: a near miss of a kind kiln reads would silently drop what it says
            // (a misspelt ComponentDeployment renders production without its overrides), and a
            // kind upstream added after the version kiln follows may change what renders.
            _ => {
                let near = crate::suggest::nearest(
                    kind,
                    RENDERING_KINDS
                        .iter()
                        .chain(PLATFORM_KINDS)
                        .chain(PROJECT_PIPELINE_KINDS)
                        .copied(),
                );
                diags.push(crate::suggest::suggesting(
                    err(
                        &loc,
                        codes::UNKNOWN_KIND,
                        &root.key("kind"),
                        format!("unknown component-types kind {kind}"),
                        &match near {
                            Some(n) => crate::suggest::did_you_mean(n),
                            None => "kiln knows the openchoreo.dev kinds of OpenChoreo's API at commit ad3f5030 (docs/component-types.md, Kinds); a kind it does not know may change what upstream renders, so it is refused rather than passed through".to_string(),
                        },
                    ),
                    near,
                ))
            }
        }
    }
    check_duplicates(&l, &mut diags);
    let mut exprs = Exprs::default();
    // Every definition is type-checked once all are compiled, as `validate` promises every
    // problem: an expression that did not compile was reported and is left out (the checker
    // finds no compiled form for it), and the others are checked.
    let types: Vec<&TypeDef<'_>> = l
        .types
        .iter()
        .chain(l.snapshots.iter().map(|s| &s.type_def))
        .chain(l.releases.iter().map(|r| &r.type_def))
        .collect();
    for t in &types {
        compile_type(t, &mut exprs, limits, &mut diags);
    }
    let addons: Vec<&TraitDef<'_>> = l
        .addons
        .iter()
        .chain(l.snapshots.iter().flat_map(|s| s.addons.iter()))
        .chain(l.releases.iter().flat_map(|r| r.addons.iter()))
        .collect();
    for a in &addons {
        compile_addon(a, &mut exprs, limits, &mut diags);
    }
    for t in &l.project_types {
        project::compile(t, &mut exprs, limits, &mut diags);
    }
    let resource_types: Vec<&kinds::ResourceTypeDef<'_>> = l
        .resource_types
        .iter()
        .chain(l.resource_releases.iter().map(|r| &r.type_def))
        .collect();
    for t in &resource_types {
        resource::compile(t, &mut exprs, limits, &mut diags);
    }
    let checker = typecheck::Checker::new(&exprs);
    for t in &l.project_types {
        diags.extend(checker.check_project_type(t));
    }
    for t in resource_types {
        diags.extend(checker.check_resource_type(t));
    }
    for t in types {
        diags.extend(checker.check_type(t));
    }
    for a in addons {
        diags.extend(checker.check_addon(a));
    }
    l.exprs = exprs;
    l.broken = diags
        .iter()
        .filter(|d| d.is_error())
        .filter_map(|d| Some((d.file.clone()?, d.document?)))
        .collect();
    l.failed_names = docs
        .iter()
        .filter(|d| l.broken.contains(&(d.file().to_string(), d.index)))
        .filter_map(|d| d.name().map(str::to_string))
        .collect();
    (l, diags)
}

fn check_digest(loc: &Loc<'_>, v: &Value, diags: &mut Vec<Diagnostic>) {
    let at = FieldPath::root()
        .key("metadata")
        .key("annotations")
        .key(snapshot::DIGEST_ANNOTATION);
    let actual = snapshot::digest(v);
    match snapshot::recorded_digest(v) {
        None => diags.push(err(
            loc,
            codes::SNAPSHOT_DIGEST,
            &at,
            format!("snapshot has no {} annotation", snapshot::DIGEST_ANNOTATION),
            "create snapshots with kiln snapshot create; they are stamped with the digest of their content",
        )),
        Some(d) if d != actual => diags.push(err(
            loc,
            codes::SNAPSHOT_DIGEST,
            &at,
            format!("snapshot digest {d} does not match its content ({actual}): it was changed after it was created"),
            "recreate the snapshot with kiln snapshot create, or restore it from git",
        )),
        Some(_) => {}
    }
}

fn check_duplicates(l: &Loaded<'_>, diags: &mut Vec<Diagnostic>) {
    /// `items` are each definition's key and place; `describe` writes a key for the message,
    /// only for a duplicate (a fleet has tens of thousands of definitions and none).
    fn dup<'x, K: Ord>(
        items: impl Iterator<Item = (K, &'x Loc<'x>)>,
        describe: impl Fn(&K) -> String,
        what: &str,
        at: &FieldPath,
        diags: &mut Vec<Diagnostic>,
    ) {
        let mut seen: BTreeMap<K, &Loc<'_>> = BTreeMap::new();
        for (key, loc) in items {
            if let Some(prev) = seen.get(&key) {
                diags.push(loc.error(
                    codes::DUPLICATE_DEFINITION,
                    at,
                    format!(
                        "{what} {} is already defined in {}",
                        describe(&key),
                        prev.doc.file()
                    ),
                    "remove or rename one of them",
                ));
            } else {
                seen.insert(key, loc);
            }
        }
    }
    let name_at = FieldPath::root().key("metadata").key("name");
    fn ns(n: &Option<String>) -> &str {
        n.as_deref().unwrap_or_default()
    }
    let named = |(n, ns): &(&str, &str)| format!("{n:?} (namespace {ns:?})");
    dup(
        l.types
            .iter()
            .map(|t| ((t.name.as_str(), ns(&t.namespace)), &t.loc)),
        named,
        "ComponentTypeDefinition",
        &name_at,
        diags,
    );
    dup(
        l.addons
            .iter()
            .map(|t| ((t.name.as_str(), ns(&t.namespace)), &t.loc)),
        named,
        "Addon",
        &name_at,
        diags,
    );
    dup(
        l.components.iter().map(|t| (t.name.as_str(), &t.loc)),
        |n| format!("{n:?}"),
        "Component",
        &name_at,
        diags,
    );
    dup(
        l.workloads.iter().map(|t| (t.component.as_str(), &t.loc)),
        |c| format!("for component {c:?}"),
        "Workload",
        &FieldPath::root()
            .key("spec")
            .key("owner")
            .key("componentName"),
        diags,
    );
    dup(
        l.deployments
            .iter()
            .map(|t| ((t.component.as_str(), t.environment.as_str()), &t.loc)),
        |(c, e)| format!("for component {c:?} in environment {e:?}"),
        "ComponentDeployment",
        &FieldPath::root().key("spec").key("environment"),
        diags,
    );
    dup(
        l.releases
            .iter()
            .map(|t| ((t.name.as_str(), ns(&t.namespace)), &t.loc)),
        named,
        "ComponentRelease",
        &name_at,
        diags,
    );
    dup(
        l.snapshots
            .iter()
            .map(|t| ((t.component_name.as_str(), t.environment.as_str()), &t.loc)),
        |(c, e)| format!("of component {c:?} for environment {e:?}"),
        "ComponentEnvSnapshot",
        &FieldPath::root().key("spec").key("environment"),
        diags,
    );
}

fn push_tpl_errors(loc: &Loc<'_>, errs: Vec<TplError>, diags: &mut Vec<Diagnostic>) {
    for e in errs {
        diags.push(loc.error(e.code, &e.path, e.message, e.hint));
    }
}

fn with_var<'x>(base: &[&'x str], var: Option<&'x str>) -> Vec<&'x str> {
    let mut v = base.to_vec();
    v.extend(var);
    v
}

/// Register the expressions of resource templates (a type's resources, an addon's creates):
/// includeWhen and forEach see `base`; the template also sees the forEach variable.
fn compile_resources(
    resources: &[kinds::ResourceTpl],
    base: &[&str],
    exprs: &mut Exprs,
    limits: &ExprLimits,
    errs: &mut Vec<TplError>,
) {
    for r in resources {
        if let Some(e) = &r.include_when {
            exprs.add_string(
                &format!("${{{e}}}"),
                &r.at.key("includeWhen"),
                base,
                limits,
                errs,
            );
        }
        if let Some(e) = &r.for_each {
            exprs.add_string(
                &format!("${{{e}}}"),
                &r.at.key("forEach"),
                base,
                limits,
                errs,
            );
        }
        let vars = with_var(base, r.for_each.as_ref().map(|_| r.var.as_str()));
        exprs.add_value(&r.template, &r.at.key("template"), &vars, limits, errs);
    }
}

fn compile_validations(
    rules: &[kinds::Validation],
    vars: &[&str],
    exprs: &mut Exprs,
    limits: &ExprLimits,
    errs: &mut Vec<TplError>,
) {
    for v in rules {
        exprs.add_string(
            &format!("${{{}}}", v.rule),
            &v.at.key("rule"),
            vars,
            limits,
            errs,
        );
    }
}

/// A post-render validation's expressions: `when` and `forEach` over the definition's context,
/// `where` and `rule` with the loop variable and `resource` as well.
fn compile_post_validations(
    rules: &[kinds::PostValidation],
    vars: &[&str],
    exprs: &mut Exprs,
    limits: &ExprLimits,
    errs: &mut Vec<TplError>,
) {
    for v in rules {
        if let Some(e) = &v.when {
            exprs.add_string(&format!("${{{e}}}"), &v.at.key("when"), vars, limits, errs);
        }
        if let Some(e) = &v.for_each {
            exprs.add_string(
                &format!("${{{e}}}"),
                &v.at.key("forEach"),
                vars,
                limits,
                errs,
            );
        }
        let mut rv = with_var(vars, v.for_each.as_ref().map(|_| v.var.as_str()));
        rv.push("resource");
        if let Some(w) = &v.target.where_ {
            exprs.add_string(
                &format!("${{{w}}}"),
                &v.at.key("target").key("where"),
                &rv,
                limits,
                errs,
            );
        }
        exprs.add_string(
            &format!("${{{}}}", v.rule),
            &v.at.key("rule"),
            &rv,
            limits,
            errs,
        );
    }
}

fn compile_type(
    t: &TypeDef<'_>,
    exprs: &mut Exprs,
    limits: &ExprLimits,
    diags: &mut Vec<Diagnostic>,
) {
    let mut errs = Vec::new();
    let vars = if t.model == Model::Upstream {
        context::UPSTREAM_TYPE_VARS
    } else {
        context::TYPE_VARS
    };
    compile_resources(&t.resources, vars, exprs, limits, &mut errs);
    compile_validations(&t.validations, vars, exprs, limits, &mut errs);
    compile_post_validations(&t.post_validations, vars, exprs, limits, &mut errs);
    for e in &t.embedded {
        exprs.add_value(
            &e.parameters,
            &e.at.key("parameters"),
            vars,
            limits,
            &mut errs,
        );
        exprs.add_value(
            &e.environment_configs,
            &e.at.key("environmentConfigs"),
            vars,
            limits,
            &mut errs,
        );
    }
    push_tpl_errors(&t.loc, errs, diags);
}

fn compile_addon(
    a: &TraitDef<'_>,
    exprs: &mut Exprs,
    limits: &ExprLimits,
    diags: &mut Vec<Diagnostic>,
) {
    let mut errs = Vec::new();
    let base = if a.model == Model::Upstream {
        context::UPSTREAM_TRAIT_VARS
    } else {
        context::ADDON_VARS
    };
    compile_validations(&a.validations, base, exprs, limits, &mut errs);
    compile_post_validations(&a.post_validations, base, exprs, limits, &mut errs);
    compile_resources(&a.creates, base, exprs, limits, &mut errs);
    for p in &a.patches {
        if let Some(e) = &p.for_each {
            exprs.add_string(
                &format!("${{{e}}}"),
                &p.at.key("forEach"),
                base,
                limits,
                &mut errs,
            );
        }
        let vars = with_var(base, p.for_each.as_ref().map(|_| p.var.as_str()));
        if let Some(w) = &p.target.where_ {
            let mut wv = vars.clone();
            wv.push("resource");
            exprs.add_string(
                &format!("${{{w}}}"),
                &p.at.key("target").key("where"),
                &wv,
                limits,
                &mut errs,
            );
        }
        for o in &p.ops {
            exprs.add_string(&o.path, &o.at.key("path"), &vars, limits, &mut errs);
            if let Some(v) = &o.value {
                exprs.add_value(v, &o.at.key("value"), &vars, limits, &mut errs);
            }
        }
    }
    for rm in &a.removes {
        if let Some(e) = &rm.for_each {
            exprs.add_string(
                &format!("${{{e}}}"),
                &rm.at.key("forEach"),
                base,
                limits,
                &mut errs,
            );
        }
        if let Some(w) = &rm.target.where_ {
            let mut wv = with_var(base, rm.for_each.as_ref().map(|_| rm.var.as_str()));
            wv.push("resource");
            exprs.add_string(
                &format!("${{{w}}}"),
                &rm.at.key("target").key("where"),
                &wv,
                limits,
                &mut errs,
            );
        }
    }
    push_tpl_errors(&a.loc, errs, diags);
}

/// The definitions one Component uses.
struct Inputs<'u, 'a> {
    component: &'u ComponentDef<'a>,
    type_def: &'u TypeDef<'a>,
    addons: Vec<&'u TraitDef<'a>>,
    /// The traits the type embeds, one per `type_def.embedded` entry.
    embedded: Vec<&'u TraitDef<'a>>,
    workload: &'u WorkloadDef<'a>,
}

/// Find a Component's type, addons and workload among `types`/`addons`/`workloads`. A
/// missing workload gives `None` without a diagnostic: whether that is an error depends on
/// what was asked for (see [`missing_workload`]).
fn resolve<'u, 'a>(
    component: &'u ComponentDef<'a>,
    types: &[&'u TypeDef<'a>],
    addons: &[&'u TraitDef<'a>],
    workload: Option<&'u WorkloadDef<'a>>,
    failed: &BTreeSet<String>,
    diags: &mut Vec<Diagnostic>,
) -> Option<Inputs<'u, 'a>> {
    let before = diags.len();
    let c = component;
    let ct_at = FieldPath::root().key("spec").key("componentType");
    let ns_rank = |ns: &Option<String>| -> u8 {
        if *ns == c.namespace {
            0
        } else if ns.is_none() {
            1
        } else {
            2
        }
    };
    // Upstream tells a ComponentType from a ClusterComponentType of the same name by the
    // reference's kind; so does kiln, for definitions of those kinds.
    let kind_fits = |want: &Option<String>, v: &Value, kinds: [&str; 2]| -> bool {
        let have = v.get("kind").and_then(Value::as_str).unwrap_or("");
        match want {
            Some(w) if kinds.contains(&w.as_str()) && kinds.contains(&have) => w == have,
            _ => true,
        }
    };
    let mut candidates: Vec<&&TypeDef<'a>> = types
        .iter()
        .filter(|t| t.name == c.type_name)
        .filter(|t| {
            kind_fits(
                &c.type_kind,
                &t.value,
                ["ComponentType", "ClusterComponentType"],
            )
        })
        .collect();
    candidates.sort_by_key(|t| ns_rank(&t.namespace));
    let type_def = match candidates.first() {
        Some(t) if t.workload_type == c.workload_type => Some(**t),
        Some(t) => {
            diags.push(c.loc.error(
                codes::UNKNOWN_COMPONENT_TYPE,
                &ct_at,
                format!(
                    "componentType {}/{} does not match ComponentTypeDefinition {:?}, whose workloadType is {:?}",
                    c.workload_type, c.type_name, t.name, t.workload_type
                ),
                format!("write componentType: {}/{}", t.workload_type, t.name),
            ));
            None
        }
        // A definition that failed to load is explained by its own errors.
        None if failed.contains(&c.type_name) => None,
        None => {
            let known: Vec<String> = types
                .iter()
                .map(|t| format!("{}/{}", t.workload_type, t.name))
                .collect();
            diags.push(c.loc.error(
                codes::UNKNOWN_COMPONENT_TYPE,
                &ct_at,
                format!("unknown componentType {}/{}", c.workload_type, c.type_name),
                if known.is_empty() {
                    "add the ComponentTypeDefinition to the inputs".to_string()
                } else {
                    format!(
                        "add the ComponentTypeDefinition to the inputs; known: {}",
                        known.join(", ")
                    )
                },
            ));
            None
        }
    };
    let mut used = Vec::new();
    for u in &c.addons {
        let mut cands: Vec<&&TraitDef<'a>> = addons
            .iter()
            .filter(|a| a.name == u.name)
            .filter(|a| kind_fits(&u.kind, &a.value, ["Trait", "ClusterTrait"]))
            .collect();
        cands.sort_by_key(|a| ns_rank(&a.namespace));
        match cands.first() {
            Some(a) => used.push(**a),
            None if failed.contains(&u.name) => {}
            None => {
                let known: Vec<&str> = addons.iter().map(|a| a.name.as_str()).collect();
                diags.push(c.loc.error(
                    codes::UNKNOWN_ADDON,
                    &u.at.key("name"),
                    format!("unknown addon {:?} (instance {:?})", u.name, u.instance),
                    if known.is_empty() {
                        "add the Addon to the inputs".to_string()
                    } else {
                        format!("add the Addon to the inputs; known: {}", known.join(", "))
                    },
                ));
            }
        }
    }
    let mut embedded = Vec::new();
    if let Some(t) = type_def {
        for e in &t.embedded {
            let mut cands: Vec<&&TraitDef<'a>> = addons
                .iter()
                .filter(|a| a.name == e.name)
                .filter(|a| kind_fits(&e.kind, &a.value, ["Trait", "ClusterTrait"]))
                .collect();
            cands.sort_by_key(|a| ns_rank(&a.namespace));
            match cands.first() {
                Some(a) if a.model == Model::Proposal => diags.push(t.loc.error(
                    codes::UNKNOWN_ADDON,
                    &e.at.key("name"),
                    format!(
                        "ComponentType {:?} embeds {:?}, an Addon of the proposal's kinds, not an upstream Trait",
                        t.name, e.name
                    ),
                    "embedded traits are upstream Traits or ClusterTraits (openAPIV3Schema sections)",
                )),
                Some(a) => embedded.push(**a),
                None if failed.contains(&e.name) => {}
                None => diags.push(t.loc.error(
                    codes::UNKNOWN_ADDON,
                    &e.at.key("name"),
                    format!(
                        "ComponentType {:?} embeds trait {:?} (instance {:?}), which is not among the inputs",
                        t.name, e.name, e.instance
                    ),
                    "add the Trait to the inputs: upstream applies embedded traits to every component of the type",
                )),
            }
        }
    }
    // A type renders with upstream's context or the proposal's; a trait written for the other
    // would read variables that are not there.
    if let Some(t) = type_def {
        for (a, u) in used.iter().zip(&c.addons) {
            if a.model != t.model {
                diags.push(c.loc.error(
                    codes::UNKNOWN_ADDON,
                    &u.at.key("name"),
                    format!(
                        "{} {:?} cannot be used with {} {:?}",
                        if a.model == Model::Upstream { "Trait" } else { "Addon" },
                        a.name,
                        if t.model == Model::Upstream { "ComponentType" } else { "ComponentTypeDefinition" },
                        t.name
                    ),
                    "upstream kinds (ComponentType, Trait: openAPIV3Schema sections) and the proposal's (ComponentTypeDefinition, Addon, or spec.schema shorthand) render with different context variables; write both in one style",
                ));
            }
        }
    }
    if diags.len() > before || type_def.is_none() || used.len() < c.addons.len() {
        return None;
    }
    Some(Inputs {
        component: c,
        type_def: type_def?,
        addons: used,
        embedded,
        workload: workload?,
    })
}

/// Decide which (component, environment) releases to render.
fn plan<'u, 'a>(
    l: &'u Loaded<'a>,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Vec<release::Unit<'u, 'a>> {
    let types: Vec<&TypeDef<'a>> = l.types.iter().collect();
    let addons: Vec<&TraitDef<'a>> = l.addons.iter().collect();
    // Indexes by component name: a fleet has thousands of components, and scanning every
    // deployment and workload per component made planning quadratic.
    let mut deployments_of: HashMap<&str, Vec<&ReleaseBindingDef<'a>>> = HashMap::new();
    for d in &l.deployments {
        deployments_of
            .entry(d.component.as_str())
            .or_default()
            .push(d);
    }
    let mut workload_of: HashMap<&str, &WorkloadDef<'a>> = HashMap::new();
    for w in &l.workloads {
        // The first workload of a component is the one used, as before.
        workload_of.entry(w.component.as_str()).or_insert(w);
    }
    let mut releases_of: HashMap<&str, Vec<&ReleaseDef<'a>>> = HashMap::new();
    for r in &l.releases {
        releases_of
            .entry(r.component_name.as_str())
            .or_default()
            .push(r);
    }
    let deployment = |c: &str, e: &str| {
        deployments_of
            .get(c)
            .and_then(|ds| ds.iter().find(|d| d.environment == e).copied())
    };
    // The environments a component has deployments for, sorted.
    let environments_of = |c: &str| -> Vec<String> {
        deployments_of
            .get(c)
            .map(|ds| {
                ds.iter()
                    .map(|d| d.environment.clone())
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect()
            })
            .unwrap_or_default()
    };
    let wanted = |e: &str| opts.env.as_deref().is_none_or(|w| w == e);
    // An environment nothing mentions is a typo, not a request for defaults: `--env prodution`
    // would render every component without its production overrides.
    if let Some(want) = opts.env.as_deref() {
        let known: BTreeSet<&str> = l
            .deployments
            .iter()
            .map(|d| d.environment.as_str())
            .chain(l.snapshots.iter().map(|s| s.environment.as_str()))
            .chain(l.resource_bindings.iter().map(|b| b.environment.as_str()))
            .chain(l.project_bindings.iter().map(|b| b.environment.as_str()))
            .chain(
                l.platform
                    .iter()
                    .filter(|d| d.kind() == Some("Environment"))
                    .filter_map(|d| d.name()),
            )
            .collect();
        let renders_something =
            !l.components.is_empty() || !l.releases.is_empty() || !l.snapshots.is_empty();
        // Inputs that mention no environment at all are no exception: `--env prodution` over a
        // definitions folder would label the defaults with the typo.
        if renders_something && !known.contains(want) {
            let list: Vec<&str> = known.iter().copied().collect();
            let hint = match crate::suggest::nearest(want, list.iter().copied()) {
                Some(n) => format!(
                    "{} (environments of the inputs: {})",
                    crate::suggest::did_you_mean(n),
                    list.join(", ")
                ),
                None if list.is_empty() => "the inputs name no environment: add the environment's ComponentDeployment/ReleaseBinding (or its Environment)".to_string(),
                None => format!("environments of the inputs: {}", list.join(", ")),
            };
            let mut d = Diagnostic::error(
                codes::ENVIRONMENT,
                format!("no ComponentDeployment, ReleaseBinding, Environment or snapshot is for environment {}", crate::diag::quote(want)),
            )
            .with_hint(hint);
            // Placed on the first component, whose environments these are.
            if let Some(c) = l.components.first() {
                d = d.in_file(c.loc.doc.file());
            }
            diags.push(d);
            return Vec::new();
        }
    }
    let mut units = Vec::new();
    let mut covered: BTreeSet<(String, String)> = BTreeSet::new();

    for s in &l.snapshots {
        covered.insert((s.component_name.clone(), s.environment.clone()));
    }
    // Each component is planned on its own, on every core (a fleet has thousands); units and
    // diagnostics are taken in the components' order.
    let plan_component = |c: &'u ComponentDef<'a>,
                          diags: &mut Vec<Diagnostic>,
                          units: &mut Vec<release::Unit<'u, 'a>>| {
        let envs: Vec<String> = match &opts.env {
            Some(e) => vec![e.clone()],
            None => environments_of(&c.name),
        };
        let wl = workload_of.get(c.name.as_str()).copied();
        // Nothing would render for it anyway: the missing Workload is what to say.
        if envs.is_empty() && wl.is_none() {
            let before = diags.len();
            let _no_workload = resolve(c, &types, &addons, wl, &l.failed_names, diags);
            if diags.len() == before {
                diags.push(missing_workload(c, &envs, false));
            }
            return;
        }
        if envs.is_empty() {
            diags.push(c.loc.error(
                codes::ENVIRONMENT,
                &FieldPath::root().key("metadata").key("name"),
                format!("component {:?} has no environment to render for", c.name),
                "pass --env NAME or add a ComponentDeployment for the component",
            ));
            return;
        }
        let before = diags.len();
        let inputs = resolve(c, &types, &addons, wl, &l.failed_names, diags);
        // A component with errors of its own renders nothing; one without a Workload yet
        // renders only the releases its bindings pin (see `missing_workload`).
        if inputs.is_none() && (diags.len() > before || wl.is_some()) {
            return;
        }
        let mut without_workload = Vec::new();
        for env in envs {
            if covered.contains(&(c.name.clone(), env.clone())) {
                diags.push(c.loc.error(
                    codes::ENVIRONMENT,
                    &FieldPath::root().key("metadata").key("name"),
                    format!("component {:?} in environment {env:?} is given both as live definitions and as a ComponentEnvSnapshot", c.name),
                    "render the environment's folder (snapshot + ComponentDeployment) on its own, or leave the snapshot out",
                ));
                continue;
            }
            let dep = deployment(&c.name, &env);
            // A binding that names a release renders that release, not the live definitions.
            if let Some(rn) = dep.and_then(|d| d.release_name.as_deref()) {
                if let Some(r) = bound_release(l, &c.name, rn, dep, diags) {
                    units.extend(release_unit(r, dep, env, opts, diags));
                }
                continue;
            }
            let Some(inputs) = &inputs else {
                without_workload.push(env);
                continue;
            };
            if let Some(u) = unit(inputs, dep, env, opts, diags) {
                units.push(u);
            }
        }
        if !without_workload.is_empty() {
            diags.push(missing_workload(c, &without_workload, opts.env.is_some()));
        }
    };
    let planned: Vec<(Vec<release::Unit<'u, 'a>>, Vec<Diagnostic>)> = l
        .components
        .par_iter()
        .with_max_len(crate::process::PIECE)
        .map(|c| {
            let (mut units, mut diags) = (Vec::new(), Vec::new());
            plan_component(c, &mut diags, &mut units);
            (units, diags)
        })
        .collect();
    for (u, d) in planned {
        units.extend(u);
        diags.extend(d);
    }
    // Components given only as ComponentReleases, in the order their first release appears.
    let live: BTreeSet<&str> = l.components.iter().map(|c| c.name.as_str()).collect();
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    for first in &l.releases {
        let name = first.component_name.as_str();
        if live.contains(name) || !seen.insert(name) {
            continue;
        }
        let releases: Vec<&ReleaseDef<'a>> = releases_of.get(name).cloned().unwrap_or_default();
        let envs: Vec<String> = match &opts.env {
            Some(e) => vec![e.clone()],
            None => environments_of(name),
        };
        if envs.is_empty() {
            diags.push(first.loc.error(
                codes::ENVIRONMENT,
                &FieldPath::root().key("spec").key("owner").key("componentName"),
                format!("ComponentRelease {:?} of component {name:?} has no environment to render for", first.name),
                "pass --env NAME or add a ReleaseBinding for the component",
            ));
            continue;
        }
        for env in envs {
            if covered.contains(&(name.to_string(), env.clone())) {
                diags.push(first.loc.error(
                    codes::ENVIRONMENT,
                    &FieldPath::root().key("metadata").key("name"),
                    format!("component {name:?} in environment {env:?} is given both as a ComponentRelease and as a ComponentEnvSnapshot"),
                    "render the environment's folder on its own, or leave one of them out",
                ));
                continue;
            }
            let dep = deployment(name, &env);
            let chosen = match dep.and_then(|d| d.release_name.as_deref()) {
                Some(rn) => bound_release(l, name, rn, dep, diags),
                None if releases.len() == 1 => Some(releases[0]),
                None => {
                    let names: Vec<&str> = releases.iter().map(|r| r.name.as_str()).collect();
                    let (loc, at) = match dep {
                        Some(d) => (&d.loc, FieldPath::root().key("spec").key("releaseName")),
                        None => (&first.loc, FieldPath::root().key("metadata").key("name")),
                    };
                    diags.push(loc.error(
                        codes::RELEASE_REF,
                        &at,
                        format!(
                            "component {name:?} has {} ComponentReleases ({}) and nothing says which to render in environment {env:?}",
                            names.len(),
                            names.join(", ")
                        ),
                        "set spec.releaseName in the environment's ReleaseBinding, or pass only the release to render",
                    ));
                    None
                }
            };
            if let Some(r) = chosen {
                units.extend(release_unit(r, dep, env, opts, diags));
            }
        }
    }
    for s in &l.snapshots {
        if !wanted(&s.environment) {
            continue;
        }
        if let Some(d) =
            deployment(&s.component_name, &s.environment).filter(|d| d.release_name.is_some())
        {
            diags.push(d.loc.error(
                codes::RELEASE_REF,
                &FieldPath::root().key("spec").key("releaseName"),
                format!(
                    "component {:?} in environment {:?} is given as a ComponentEnvSnapshot, but its binding names a ComponentRelease",
                    s.component_name, s.environment
                ),
                "render a snapshot with a ComponentDeployment without releaseName, or render the release without the snapshot",
            ));
            continue;
        }
        let st = [&s.type_def];
        let sa: Vec<&TraitDef<'a>> = s.addons.iter().collect();
        let Some(inputs) = resolve(
            &s.component,
            &st,
            &sa,
            Some(&s.workload),
            &l.failed_names,
            diags,
        ) else {
            continue;
        };
        if let Some(u) = unit(
            &inputs,
            deployment(&s.component_name, &s.environment),
            s.environment.clone(),
            opts,
            diags,
        ) {
            units.push(u);
        }
    }
    // A deployment for a component that is not here at all is a mistake (a typo in the owner).
    let known: BTreeSet<&str> = l
        .components
        .iter()
        .map(|c| c.name.as_str())
        .chain(l.snapshots.iter().map(|s| s.component_name.as_str()))
        .chain(l.releases.iter().map(|r| r.component_name.as_str()))
        .collect();
    for d in &l.deployments {
        // A component that failed to load is explained by its own errors.
        if wanted(&d.environment)
            && !known.contains(d.component.as_str())
            && !l.failed_names.contains(&d.component)
        {
            diags.push(d.loc.error(
                codes::UNKNOWN_COMPONENT,
                &FieldPath::root().key("spec").key("owner").key("componentName"),
                format!("ComponentDeployment names component {:?}, which is not among the inputs", d.component),
                "add the Component (or its snapshot or release) to the inputs, or correct spec.owner.componentName",
            ));
        }
    }
    units
}

/// A Component without a Workload in the environments `envs`. Upstream's component controller
/// (`validateAndFetchWorkload`, `internal/controller/component/controller.go`) creates no
/// release for it — its Ready condition says `WorkloadNotFound`, waiting for the first build to
/// write the Workload — and deploys the other components: so a run renders the others and warns
/// (`--strict` makes it an error). Asked for by name (`--env`, `kiln snapshot create
/// --component`) it is an error: what was asked for cannot be rendered.
fn missing_workload(c: &ComponentDef<'_>, envs: &[String], asked: bool) -> Diagnostic {
    let at = FieldPath::root().key("metadata").key("name");
    let hint = "add a Workload whose spec.owner.componentName (or metadata.name) is the component's name; a component built from source gets one from its first build";
    let envs = match envs {
        [] => String::new(),
        [one] => format!(" in environment {one}"),
        many => format!(" in environments {}", many.join(", ")),
    };
    if asked {
        c.loc.error(
            codes::MISSING_WORKLOAD,
            &at,
            format!(
                "component {:?} has no Workload, so nothing renders for it{envs}",
                c.name
            ),
            hint,
        )
    } else {
        c.loc.warning(
            codes::MISSING_WORKLOAD,
            &at,
            format!(
                "component {:?} has no Workload yet, so nothing renders for it{envs}: upstream deploys nothing until its Workload exists",
                c.name
            ),
            hint,
        )
    }
}

/// The ComponentRelease a binding names: it must be among the inputs and belong to the component.
fn bound_release<'u, 'a>(
    l: &'u Loaded<'a>,
    component: &str,
    name: &str,
    dep: Option<&ReleaseBindingDef<'a>>,
    diags: &mut Vec<Diagnostic>,
) -> Option<&'u ReleaseDef<'a>> {
    let at = FieldPath::root().key("spec").key("releaseName");
    let found = l.releases.iter().find(|r| r.name == name);
    let problem = match found {
        Some(r) if r.component_name == component => return Some(r),
        Some(r) => format!(
            "releaseName {name:?} is a ComponentRelease of component {:?}, not of {component:?}",
            r.component_name
        ),
        None => format!("releaseName {name:?} names no ComponentRelease among the inputs"),
    };
    if let Some(d) = dep {
        let known: Vec<&str> = l
            .releases
            .iter()
            .filter(|r| r.component_name == component)
            .map(|r| r.name.as_str())
            .collect();
        diags.push(d.loc.error(
            codes::RELEASE_REF,
            &at,
            problem,
            if known.is_empty() {
                "add the ComponentRelease to the inputs, or remove releaseName to render the live definitions".to_string()
            } else {
                format!("releases of the component among the inputs: {}", known.join(", "))
            },
        ));
    }
    None
}

/// The unit of a ComponentRelease in one environment: its frozen definitions, resolved among
/// themselves, with the environment's binding.
fn release_unit<'u, 'a>(
    r: &'u ReleaseDef<'a>,
    dep: Option<&'u ReleaseBindingDef<'a>>,
    env: String,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Option<release::Unit<'u, 'a>> {
    if r.namespace.is_none() && opts.namespace.is_none() {
        diags.push(r.loc.error(
            codes::COMPONENT_NAMESPACE,
            &FieldPath::root().key("metadata"),
            format!("ComponentRelease {:?} has no namespace", r.name),
            "set metadata.namespace on the ComponentRelease or pass --namespace",
        ));
        return None;
    }
    let rt = [&r.type_def];
    let ra: Vec<&TraitDef<'a>> = r.addons.iter().collect();
    // A release is self-contained: nothing outside it explains a missing definition.
    let inputs = resolve(
        &r.component,
        &rt,
        &ra,
        Some(&r.workload),
        &BTreeSet::new(),
        diags,
    )?;
    unit(&inputs, dep, env, opts, diags)
}

fn unit<'u, 'a>(
    inputs: &Inputs<'u, 'a>,
    deployment: Option<&'u ReleaseBindingDef<'a>>,
    env: String,
    opts: &Options,
    diags: &mut Vec<Diagnostic>,
) -> Option<release::Unit<'u, 'a>> {
    let c = inputs.component;
    let Some(namespace) = c.namespace.clone().or_else(|| opts.namespace.clone()) else {
        diags.push(c.loc.error(
            codes::COMPONENT_NAMESPACE,
            &FieldPath::root().key("metadata"),
            format!("component {:?} has no namespace", c.name),
            "set metadata.namespace on the Component or pass --namespace",
        ));
        return None;
    };
    if let Some(d) = deployment {
        let instances: BTreeSet<&str> = c.addons.iter().map(|a| a.instance.as_str()).collect();
        let mut bad = false;
        let ty = inputs.type_def;
        for (inst, (_, at)) in &d.addon_overrides {
            // Upstream reads traitEnvironmentConfigs only for the Component's own trait
            // instances; an embedded trait's environmentConfigs come from the type's binding.
            if !instances.contains(inst.as_str())
                && ty.model == Model::Upstream
                && ty.embedded.iter().any(|e| &e.instance == inst)
            {
                diags.push(d.loc.warning(
                    codes::IGNORED_INPUT,
                    at,
                    format!(
                        "traitEnvironmentConfigs names instance {inst:?}, a trait ComponentType {:?} embeds: upstream ignores it, and so does kiln",
                        ty.name
                    ),
                    "an embedded trait's environmentConfigs are bound in the ComponentType's spec.traits; bind them to the type's ${environmentConfigs.…} and set those in componentTypeEnvironmentConfigs",
                ));
                continue;
            }
            if !instances.contains(inst.as_str()) {
                bad = true;
                diags.push(d.loc.error(
                    codes::OVERRIDE_NOT_ALLOWED,
                    at,
                    format!("addonOverrides names instance {inst:?}, which component {:?} does not have", c.name),
                    format!(
                        "addon overrides are keyed by instanceName; the component's instances are: {}",
                        if instances.is_empty() { "(none)".to_string() } else { instances.iter().copied().collect::<Vec<_>>().join(", ") }
                    ),
                ));
            }
        }
        if bad {
            return None;
        }
    }
    Some(release::Unit {
        component: c,
        type_def: inputs.type_def,
        addons: inputs.addons.clone(),
        embedded: inputs.embedded.clone(),
        workload: inputs.workload,
        deployment,
        env,
        namespace,
    })
}

fn split(diags: Vec<Diagnostic>) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    diags.into_iter().partition(Diagnostic::is_error)
}

/// Upstream parses endpoint API schemas only when a template of the type or of a trait calls
/// `workload.toEndpointResources` (`usesEndpointResources` in `pipeline.go`), and logs a schema
/// that gives no routes; such an endpoint renders catch-all routing. kiln warns of it (KLN6028),
/// once per Workload and endpoint.
fn endpoint_schema_warnings(units: &[release::Unit<'_, '_>]) -> Vec<Diagnostic> {
    let uses = |v: &Value| {
        v.get("spec")
            .is_some_and(|s| s.to_string().contains("toEndpointResources"))
    };
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for u in units {
        if u.type_def.model == Model::Proposal
            || !(uses(&u.type_def.value)
                || u.addons.iter().chain(&u.embedded).any(|a| uses(&a.value)))
        {
            continue;
        }
        let wl = u.workload;
        for (name, reason) in upstream::endpoint_schema_failures(&wl.spec) {
            if !seen.insert((
                wl.loc.doc.file().to_string(),
                wl.loc.doc.index,
                name.clone(),
            )) {
                continue;
            }
            out.push(wl.loc.warning(
                codes::ENDPOINT_SCHEMA,
                &FieldPath::root()
                    .key("spec")
                    .key("endpoints")
                    .key(&name)
                    .key("schema"),
                format!(
                    "endpoint {name:?} of workload {:?}: {reason}; workload.toEndpointResources({name:?}) is optional.none(), as upstream renders it",
                    wl.name
                ),
                "upstream's controller logs the same and falls back to catch-all routing; fix the schema to get one route per operation",
            ));
        }
    }
    out
}

/// The undeclared parameter fields of every unit (`release::undeclared_parameters`), each
/// once: a Component renders once per environment, its parameters are the same each time.
fn undeclared_parameter_warnings(units: &[release::Unit<'_, '_>]) -> Vec<Diagnostic> {
    let mut seen = BTreeSet::new();
    units
        .iter()
        .flat_map(release::undeclared_parameters)
        .filter(|d| seen.insert(d.to_string()))
        .collect()
}

/// Render every Component (or snapshot) in the documents: one Release per component and
/// environment, releases in input order (live components first, then snapshots), each sorted by
/// kind, apiVersion, namespace, name. Other `openchoreo.dev` kinds pass through first.
pub fn render(docs: &[&Document], opts: &Options) -> Result<Rendered, Diagnostics> {
    render_units(docs, opts, Ok).map(|r| Rendered {
        objects: r.units.into_iter().flatten().collect(),
        warnings: r.warnings,
    })
}

/// The result of [`render_units`]: what `finish` made of each unit, in output order (the
/// documents the front-end passes through first, then one entry per release).
#[derive(Debug, Clone, Default)]
pub struct RenderedUnits<T> {
    /// One entry per unit.
    pub units: Vec<T>,
    /// What produced each unit (same order as `units`).
    pub origins: Vec<crate::provenance::Origin>,
    /// Each unit's [`UnitReuse`] key (same order as `units`): `None` for a unit that has none,
    /// and for every unit of a render without [`UnitReuse`].
    pub keys: Vec<Option<String>>,
    /// Warnings (errors fail the render instead).
    pub warnings: Vec<Diagnostic>,
}

/// What a render exchanges with another rendered beside it (`kiln diff`'s two sides): the
/// other's unit of a release whose key this run also has. A release's key is its component's
/// [`document_keys`] entry (what its render reads besides its environment: the caller's digest
/// of every other document of the run and of the options, and every Component, Workload and
/// binding document of its component, as JSON; file names and positions reach none of its
/// objects), then its environment and namespace. A run whose releases depend on each other's (a
/// component's dependencies resolve against another's service) makes no keys.
pub struct UnitReuse<'a, T> {
    /// The run's [`document_keys`], made before any spec was handed over.
    pub keys: &'a HashMap<String, String>,
    /// The other run's unit of this key, when it has one.
    pub take: &'a (dyn Fn(&str) -> Option<T> + Sync),
    /// Whether the other run will take this run's units of the component of this
    /// [`document_keys`] entry: they are made by `make` then, not by the run's `finish`.
    pub shares: &'a (dyn Fn(&str) -> bool + Sync),
    /// The unit of a shared release's objects.
    pub make: &'a (dyn Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync),
}

/// The component a Component, Workload or binding document belongs to ([`is_unit_document`]):
/// a Component's name; a Workload's or binding's `spec.owner.componentName` (a proposal Workload
/// without one: its own name), as their readers find it.
fn unit_owner(d: &Document) -> &str {
    let owner =
        crate::lookup::pointer(&d.value, "/spec/owner/componentName").and_then(Value::as_str);
    match d.kind() {
        Some("Component") => d.name(),
        _ => owner.or_else(|| d.name()),
    }
    .unwrap_or("")
}

/// Each component's part of its releases' [`UnitReuse`] keys, by component name: `context` (the
/// caller's digest of the rest of the run) and the JSON of every Component, Workload and binding
/// document of the component, in document order.
pub fn document_keys(docs: &[Document], context: &str) -> HashMap<String, String> {
    // Each document written on the worker that holds it: a fleet has thousands.
    let written: Vec<(&str, String)> = docs
        .par_iter()
        .with_max_len(crate::process::PIECE)
        .filter(|d| is_unit_document(d))
        .map(|d| (unit_owner(d), d.value.to_string()))
        .collect();
    let mut keys: HashMap<String, String> = HashMap::new();
    for (owner, json) in written {
        let key = keys
            .entry(owner.to_string())
            .or_insert_with(|| format!("component\n{context}\n"));
        key.push_str(&json);
        key.push('\n');
    }
    keys
}

/// [`render`], handing each release's objects to `finish` on the worker that rendered it (how the
/// pipeline serialises releases in parallel without holding them all).
pub fn render_units<T, F>(
    docs: &[&Document],
    opts: &Options,
    finish: F,
) -> Result<RenderedUnits<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_units_taking(docs, Vec::new(), opts, finish, None)
}

/// [`render_units`] of documents some of which the caller has handed over the specs of:
/// `specs[i]`, when given, is the `spec` moved out of `docs[i]` (a document for which
/// [`takes_spec`] holds). Those specs are read into the run's definitions without a copy: a
/// fleet's Components, Workloads and bindings were held twice, as parsed and as read.
///
/// With `reuse`, each release has a key (see [`UnitReuse`]), and a release whose key the other
/// run has takes that run's unit instead of rendering again.
pub fn render_units_taking<T, F>(
    docs: &[&Document],
    specs: Vec<Option<Value>>,
    opts: &Options,
    finish: F,
    reuse: Option<&UnitReuse<'_, T>>,
) -> Result<RenderedUnits<T>, Diagnostics>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    if docs.is_empty() {
        return Ok(RenderedUnits {
            units: Vec::new(),
            origins: Vec::new(),
            keys: Vec::new(),
            warnings: Vec::new(),
        });
    }
    // Every stage runs even when an earlier one found errors, so one run reports every problem:
    // a release that uses a definition with errors has its own parameters checked, and is not
    // rendered (that would only repeat the definition's errors).
    let (l, diags) = load(docs, specs, &opts.expr);
    let (mut errors, mut warnings) = split(diags);
    let mut pd = Vec::new();
    let units = plan(&l, opts, &mut pd);
    let (e, w) = split(pd);
    errors.extend(e);
    warnings.extend(w);
    warnings.extend(endpoint_schema_warnings(&units));
    warnings.extend(undeclared_parameter_warnings(&units));
    let mut platform = upstream::Platform {
        // The live Components too: a release records no uid, the live object has it.
        docs: l
            .platform
            .iter()
            .copied()
            .chain(l.components.iter().map(|c| c.loc.doc))
            .collect(),
        observed: opts.observed.clone(),
        ..Default::default()
    };
    // Resource bindings (upstream's resource pipeline) render first: the outputs they resolve
    // are what the components' resource dependencies read.
    let rendered_resources = render_resource_bindings(&l, opts, &platform);
    // Every binding of the run, rendered or not: a dependency on a resource whose binding failed
    // is explained by the binding's own errors, not reported as missing.
    for b in l
        .resource_bindings
        .iter()
        .filter(|b| opts.env.as_deref().is_none_or(|e| e == b.environment))
    {
        let Some(ns) = resource::namespace_of(b, opts) else {
            continue;
        };
        let key = (
            ns,
            b.project.clone(),
            b.resource.clone(),
            b.environment.clone(),
        );
        let rendered = rendered_resources
            .iter()
            .find(|(x, _)| std::ptr::eq(*x, b))
            .and_then(|(_, r)| r.as_ref().ok());
        let entry = match (platform.resource_outputs.contains_key(&key), rendered) {
            (true, _) => Err(format!(
                "several ResourceReleaseBindings of {}/{} for environment {:?} among the inputs",
                b.project, b.resource, b.environment
            )),
            (false, Some(r)) => Ok(r.outputs.clone()),
            (false, None) => Err(
                "its ResourceReleaseBinding among the inputs does not render (see its errors), so its outputs are not resolved"
                    .to_string(),
            ),
        };
        platform.resource_outputs.insert(key, entry);
    }
    let is_broken = |u: &release::Unit<'_, '_>| {
        l.is_broken(&u.component.loc)
            || l.is_broken(&u.type_def.loc)
            || l.is_broken(&u.workload.loc)
            || u.deployment.is_some_and(|d| l.is_broken(&d.loc))
            || u.addons.iter().any(|a| l.is_broken(&a.loc))
    };
    // A dependency on a component rendered in this run resolves against that component's
    // service URL, as its controller would write it into its ReleaseBinding: a first pass
    // renders the upstream units (without resolving their own dependencies) to find them.
    let has_dependencies = units.iter().any(|u| {
        u.type_def.model == Model::Upstream
            && crate::lookup::pointer(&u.workload.spec, "/dependencies/endpoints")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
    });
    if has_dependencies {
        let first = upstream::Platform {
            docs: platform.docs.clone(),
            observed: platform.observed.clone(),
            skip_dependencies: true,
            ..Default::default()
        };
        let found: Vec<_> = units
            .par_iter()
            .filter(|u| u.type_def.model == Model::Upstream && !is_broken(u))
            .filter_map(|u| {
                let objs = release::render(u, &l.exprs, opts, &first).ok()?;
                let key = (
                    u.namespace.clone(),
                    u.component.project.clone().unwrap_or_default(),
                    u.component.name.clone(),
                    u.env.clone(),
                );
                let gateway = upstream::route_gateway(&first, &u.namespace, &u.env);
                Some((
                    key,
                    upstream::service_statuses(&objs, &u.workload.spec, gateway.as_ref()),
                ))
            })
            .collect();
        platform.statuses = found.into_iter().collect();
    }
    let platform = platform;
    // A release that reads another's service (its dependencies) has no key: its render reads
    // more than its own documents.
    let keyed = reuse.filter(|_| !has_dependencies);
    type Made<T> = (Result<Option<T>, Vec<Diagnostic>>, Option<String>);
    let results: Vec<Made<T>> = units
        .par_iter()
        .map(|u| {
            if is_broken(u) {
                return (release::check_parameters(u).map(|()| None), None);
            }
            // A release read from a ComponentRelease or snapshot has documents of its own
            // component only when the live ones are among the inputs too.
            let keyed = keyed.and_then(|r| {
                let docs = r.keys.get(u.component.name.as_str())?;
                Some((r, docs, format!("{docs}{}\n{}\n", u.env, u.namespace)))
            });
            let Some((r, docs, key)) = keyed else {
                let made = release::render(u, &l.exprs, opts, &platform)
                    .and_then(|objs| finish(objs).map(Some).map_err(|d| vec![d]));
                return (made, None);
            };
            if let Some(t) = (r.take)(&key) {
                return (Ok(Some(t)), Some(key));
            }
            let made = release::render(u, &l.exprs, opts, &platform).and_then(|objs| {
                if (r.shares)(docs) {
                    (r.make)(objs)
                } else {
                    finish(objs)
                }
                .map(Some)
                .map_err(|d| vec![d])
            });
            (made, Some(key))
        })
        .collect();
    use crate::provenance::{Origin, OriginKind};
    let mut out = Vec::with_capacity(results.len() + 1);
    let mut origins = Vec::with_capacity(results.len() + 1);
    let mut keys = Vec::with_capacity(results.len() + 1);
    // One unit a document, named by its file: a door that writes files keeps each where it was.
    for (v, d) in l.others.iter().zip(&l.platform) {
        match finish(vec![v.clone()]) {
            Ok(u) => {
                out.push(u);
                origins.push(Origin::of(OriginKind::ComponentPassthrough, d));
                keys.push(None);
            }
            Err(d) => errors.push(d),
        }
    }
    // Project bindings (upstream's project pipeline): the cell namespaces the components render
    // into, before them.
    for b in &l.project_bindings {
        if opts.env.as_deref().is_some_and(|e| e != b.environment) || l.is_broken(&b.loc) {
            continue;
        }
        let types: Vec<_> = l
            .project_types
            .iter()
            .filter(|t| !l.is_broken(&t.loc))
            .cloned()
            .collect();
        match project::render(b, &types, &l.exprs, opts, &platform).and_then(|(objs, w)| {
            warnings.extend(w);
            finish(objs).map_err(|d| vec![d])
        }) {
            Ok(t) => {
                out.push(t);
                let mut o = Origin::of(OriginKind::Project, b.loc.doc);
                o.detail = Some(b.environment.clone());
                origins.push(o);
                keys.push(None);
            }
            Err(ds) => errors.extend(ds),
        }
    }
    // Then the resources, each binding's objects in its type's order.
    for (b, r) in rendered_resources {
        match r.and_then(|r| {
            warnings.extend(r.warnings);
            finish(r.objects).map_err(|d| vec![d])
        }) {
            Ok(t) => {
                out.push(t);
                let mut o = Origin::of(OriginKind::Resource, b.loc.doc);
                o.detail = Some(b.environment.clone());
                origins.push(o);
                keys.push(None);
            }
            Err(ds) => errors.extend(ds),
        }
    }
    for ((r, key), u) in results.into_iter().zip(&units) {
        match r {
            Ok(None) => {}
            Ok(Some(t)) => {
                out.push(t);
                let mut o = Origin::of(OriginKind::Component, u.component.loc.doc);
                o.detail = Some(u.env.clone());
                origins.push(o);
                keys.push(key);
            }
            Err(ds) => errors.extend(ds),
        }
    }
    if !errors.is_empty() {
        errors.extend(warnings);
        return Err(Diagnostics(errors));
    }
    // The definitions read are left for the process's exit: freeing them one by one was
    // serial work on the main thread before the output could be written.
    crate::process::discard(units);
    crate::process::discard(platform);
    crate::process::discard(l);
    Ok(RenderedUnits {
        units: out,
        origins,
        keys,
        warnings,
    })
}

/// Render the ResourceReleaseBindings for `--env` (every environment without one), in input
/// order; bindings and types with errors of their own are skipped (those errors are reported).
#[allow(clippy::type_complexity)]
fn render_resource_bindings<'l, 'a>(
    l: &'l Loaded<'a>,
    opts: &Options,
    platform: &upstream::Platform<'_>,
) -> Vec<(
    &'l kinds::ResourceBindingDef<'a>,
    Result<resource::RenderedResource, Vec<Diagnostic>>,
)> {
    let types: Vec<_> = l
        .resource_types
        .iter()
        .filter(|t| !l.is_broken(&t.loc))
        .cloned()
        .collect();
    let resources: Vec<_> = l
        .resources
        .iter()
        .filter(|r| !l.is_broken(&r.loc))
        .cloned()
        .collect();
    let releases: Vec<_> = l
        .resource_releases
        .iter()
        .filter(|r| !l.is_broken(&r.loc))
        .cloned()
        .collect();
    l.resource_bindings
        .iter()
        .filter(|b| opts.env.as_deref().is_none_or(|e| e == b.environment) && !l.is_broken(&b.loc))
        // A binding of a resource (or resource type) with errors: those errors explain it.
        .filter(|b| {
            !l.failed_names.contains(&b.resource)
                && b.release
                    .as_ref()
                    .is_none_or(|r| !l.failed_names.contains(r))
                && !l
                    .resources
                    .iter()
                    .filter(|r| r.name == b.resource)
                    .any(|r| l.failed_names.contains(&r.type_name))
        })
        .map(|b| {
            (
                b,
                resource::render(b, &resources, &types, &releases, &l.exprs, opts, platform),
            )
        })
        .collect()
}

/// The JSON Schema of each ComponentTypeDefinition's and Addon's parameters (parameters and
/// envOverrides merged; env-overridable fields marked `x-env-overridable`), keyed by
/// `Kind/name`. Empty when there are none.
pub fn json_schemas(docs: &[Document]) -> Result<Vec<(String, Value)>, Diagnostics> {
    let mut out = Vec::new();
    let mut diags = Vec::new();
    for d in docs.iter().filter(|d| is_component_document(d)) {
        let loc = Loc::new(d);
        let kind = d.kind().unwrap_or("");
        match Family::of(kind) {
            Some(Family::ComponentType) => {
                if let Some(t) = kinds::type_def(loc, &d.value, &mut diags) {
                    let title = format!("ComponentTypeDefinition/{}", t.name);
                    out.push((title.clone(), shorthand::to_json_schema(&t.schemas, &title)));
                }
            }
            Some(Family::Trait) => {
                if let Some(a) = kinds::trait_def(loc, &d.value, &mut diags) {
                    let title = format!("Addon/{}", a.name);
                    out.push((title.clone(), shorthand::to_json_schema(&a.schemas, &title)));
                }
            }
            _ => {}
        }
    }
    let (errors, _) = split(diags);
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    Ok(out)
}

/// What a checked snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The component's name.
    pub component: String,
    /// The environment it is for.
    pub environment: String,
    /// Its digest (`sha256:…`).
    pub digest: String,
}

/// Check one ComponentEnvSnapshot document: its shape, its embedded definitions, its
/// expressions and its digest.
pub fn check_snapshot(doc: &Document) -> Result<SnapshotInfo, Diagnostics> {
    if doc.kind() != Some("ComponentEnvSnapshot") {
        return Err(Diagnostics::from(Loc::new(doc).error(
            codes::COMPONENT_INVALID,
            &FieldPath::root().key("kind"),
            "not a ComponentEnvSnapshot".to_string(),
            "pass a snapshot written by kiln snapshot create",
        )));
    }
    let (l, diags) = load(&[doc], Vec::new(), &ExprLimits::default());
    let (errors, _) = split(diags);
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let Some(s) = l.snapshots.first() else {
        return Err(Diagnostics::from(
            Diagnostic::error(codes::INTERNAL, "snapshot not loaded")
                .with_hint("this is a bug in kiln; please report it"),
        ));
    };
    Ok(SnapshotInfo {
        component: s.component_name.clone(),
        environment: s.environment.clone(),
        digest: snapshot::digest(&doc.value),
    })
}

/// Create the ComponentEnvSnapshot of a live component for an environment: full copies of its
/// type, the component, its addons (in first-use order) and its workload, stamped with their
/// digest. The component is rendered for the environment first (with that environment's
/// ComponentDeployment, when one is among the documents), so a snapshot that would not render is
/// never written. A Component without a namespace gets `opts.namespace` written into its copy, so
/// the snapshot renders the same without `--namespace`.
pub fn create_snapshot(
    docs: &[Document],
    component: &str,
    env: &str,
    opts: &Options,
) -> Result<(Value, Vec<Diagnostic>), Diagnostics> {
    let refs: Vec<&Document> = docs.iter().filter(|d| is_component_document(d)).collect();
    let (l, diags) = load(&refs, Vec::new(), &opts.expr);
    let (mut errors, warnings) = split(diags);
    if !errors.is_empty() {
        return Err(Diagnostics(errors));
    }
    let Some(c) = l.components.iter().find(|c| c.name == component) else {
        let known: Vec<&str> = l.components.iter().map(|c| c.name.as_str()).collect();
        let d = Diagnostic::error(
            codes::UNKNOWN_COMPONENT,
            format!("no Component named {component:?} among the inputs"),
        )
        .with_hint(if known.is_empty() {
            "pass the folder holding the Component, its type, addons and workload".to_string()
        } else {
            format!("components found: {}", known.join(", "))
        });
        return Err(Diagnostics::from(d));
    };
    let types: Vec<&TypeDef<'_>> = l.types.iter().collect();
    let addons: Vec<&TraitDef<'_>> = l.addons.iter().collect();
    let wl = l.workloads.iter().find(|w| w.component == c.name);
    let dep = l
        .deployments
        .iter()
        .find(|d| d.component == c.name && d.environment == env);
    let before = errors.len();
    let Some(inputs) = resolve(c, &types, &addons, wl, &l.failed_names, &mut errors) else {
        if errors.len() == before && wl.is_none() {
            errors.push(missing_workload(c, &[env.to_string()], true));
        }
        return Err(Diagnostics(errors));
    };
    let Some(u) = unit(&inputs, dep, env.to_string(), opts, &mut errors) else {
        return Err(Diagnostics(errors));
    };
    let platform = upstream::Platform {
        // The live Components too: a release records no uid, the live object has it.
        docs: l
            .platform
            .iter()
            .copied()
            .chain(l.components.iter().map(|c| c.loc.doc))
            .collect(),
        observed: opts.observed.clone(),
        ..Default::default()
    };
    if let Err(ds) = release::render(&u, &l.exprs, opts, &platform) {
        return Err(Diagnostics(ds));
    }
    let mut comp_value = c.value.clone().into_owned();
    if c.namespace.is_none() {
        if let (Some(ns), Some(md)) = (
            &opts.namespace,
            comp_value
                .get_mut("metadata")
                .and_then(Value::as_object_mut),
        ) {
            md.insert("namespace".into(), json!(ns));
        }
    }
    let mut seen = BTreeSet::new();
    let addon_values: Vec<Value> = inputs
        .addons
        .iter()
        .filter(|a| seen.insert(a.name.clone()))
        .map(|a| a.value.clone())
        .collect();
    let snap = snapshot::build(
        &comp_value,
        &inputs.type_def.value,
        addon_values,
        &inputs.workload.value,
        env,
    );
    Ok((snap, warnings))
}

#[cfg(test)]
mod tests;
