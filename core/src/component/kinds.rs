//! The kinds of `openchoreo.dev/v1alpha1` and their upstream aliases, read into plain structs.
//!
//! Every struct remembers where it was read from ([`Loc`]): a document and a base path, so a
//! definition embedded in a ComponentEnvSnapshot reports errors at its place inside the snapshot
//! (`spec.componentTypeDefinition.spec.resources[0]…`). Reading checks shapes and collects every
//! problem; expressions are compiled later ([`super::load`]).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::{json, Map, Value};

use crate::diag::{codes, Code, Diagnostic};
use crate::document::Document;
use crate::fieldpath::FieldPath;

use super::crd;
use super::shorthand::{self, type_word, Schemas};
use super::template::Plan;

/// Where a definition lives: a document and the path of the object inside it.
#[derive(Debug, Clone)]
pub(crate) struct Loc<'a> {
    pub doc: &'a Document,
    pub base: FieldPath,
    /// The object was read from a bare `spec` embedded at `base` (a ComponentRelease's frozen
    /// `componentType` spec, profile or workload): relative paths lose their leading `spec`.
    pub bare_spec: bool,
}

impl<'a> Loc<'a> {
    pub(crate) fn new(doc: &'a Document) -> Self {
        Self {
            doc,
            base: FieldPath::root(),
            bare_spec: false,
        }
    }

    pub(crate) fn nested(&self, rel: &FieldPath) -> Self {
        Self {
            doc: self.doc,
            base: self.at(rel),
            bare_spec: false,
        }
    }

    /// An object whose `spec` is the value at `rel` (the object itself is synthesised).
    pub(crate) fn nested_spec(&self, rel: &FieldPath) -> Self {
        Self {
            bare_spec: true,
            ..self.nested(rel)
        }
    }

    /// The document path of `rel` (relative to the object).
    pub(crate) fn at(&self, rel: &FieldPath) -> FieldPath {
        match rel.0.split_first() {
            Some((crate::fieldpath::Segment::Key(k), rest)) if self.bare_spec && k == "spec" => {
                self.base.join(&FieldPath(rest.to_vec()))
            }
            _ => self.base.join(rel),
        }
    }

    /// A warning at `rel` (relative to the object).
    pub(crate) fn warning(
        &self,
        code: Code,
        rel: &FieldPath,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Diagnostic {
        self.doc.diag(
            Diagnostic::warning(code, message).with_hint(hint),
            &self.at(rel),
        )
    }

    /// An error at `rel` (relative to the object).
    pub(crate) fn error(
        &self,
        code: Code,
        rel: &FieldPath,
        message: impl Into<String>,
        hint: impl Into<String>,
    ) -> Diagnostic {
        self.doc.diag(
            Diagnostic::error(code, message).with_hint(hint),
            &self.at(rel),
        )
    }
}

/// The workload types a ComponentTypeDefinition may declare.
pub(crate) const WORKLOAD_TYPES: &[&str] = &["deployment", "statefulset", "cronjob", "job"];

/// The definition a kind is read into: each upstream kind with its cluster-scoped and
/// proposal-era aliases (ComponentTypeDefinition, Addon, ComponentDeployment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Family {
    ComponentType,
    Trait,
    Component,
    Workload,
    ReleaseBinding,
    Snapshot,
    ComponentRelease,
}

impl Family {
    pub(crate) fn of(kind: &str) -> Option<Self> {
        Some(match kind {
            "ComponentTypeDefinition" | "ComponentType" | "ClusterComponentType" => {
                Self::ComponentType
            }
            "Addon" | "Trait" | "ClusterTrait" => Self::Trait,
            "Component" => Self::Component,
            "Workload" => Self::Workload,
            "ComponentDeployment" | "ReleaseBinding" => Self::ReleaseBinding,
            "ComponentEnvSnapshot" => Self::Snapshot,
            "ComponentRelease" => Self::ComponentRelease,
            _ => return None,
        })
    }

    /// The family of a definition a ComponentEnvSnapshot may embed: snapshots freeze the
    /// namespaced definitions a component resolved, never a cluster-scoped one.
    fn of_embedded(kind: &str) -> Option<Self> {
        Self::of(kind).filter(|_| !kind.starts_with("Cluster"))
    }
}

/// One templated resource (of a type, or created by an addon).
#[derive(Debug, Clone)]
pub(crate) struct ResourceTpl {
    pub id: Option<String>,
    /// Upstream's `targetPlane` (`dataplane` when absent).
    pub target_plane: Option<String>,
    pub include_when: Option<String>,
    pub for_each: Option<String>,
    pub var: String,
    pub template: Value,
    /// `template`, compiled when first rendered.
    pub plan: Plan,
    /// Path of the entry (`spec.resources[0]`), relative to the definition.
    pub at: FieldPath,
}

/// A `validations` rule of an upstream ComponentType or Trait.
#[derive(Debug, Clone)]
pub(crate) struct Validation {
    /// The expression inside `${…}`.
    pub rule: String,
    pub message: String,
    /// Path of the entry (`spec.validations[0]`).
    pub at: FieldPath,
}

/// A `postRenderValidations` entry of an upstream ComponentType or Trait: a rule checked
/// against each rendered resource its target selects, after every trait is applied (upstream's
/// `internal/pipeline/component/postrender.go`).
#[derive(Debug, Clone)]
pub(crate) struct PostValidation {
    /// Guard over the definition's context, evaluated once (the loop variable is not visible).
    pub when: Option<String>,
    pub for_each: Option<String>,
    pub var: String,
    pub target: Target,
    /// `target.mustMatch` (default true): selecting nothing fails the render.
    pub must_match: bool,
    /// `dataplane` (default) or `observabilityplane`: only resources of that plane are selected.
    pub target_plane: String,
    /// The expression inside `${…}`, with `resource` bound to each selected resource.
    pub rule: String,
    pub message: String,
    /// Path of the entry (`spec.postRenderValidations[0]`).
    pub at: FieldPath,
}

/// A trait a ComponentType embeds (`spec.traits[]`): applied to every component of the type,
/// before the component's own traits, with parameters that may be `${…}` over the component's
/// context.
#[derive(Debug, Clone)]
pub(crate) struct EmbeddedTrait {
    pub name: String,
    /// `Trait` or `ClusterTrait`, when given.
    pub kind: Option<String>,
    pub instance: String,
    pub parameters: Value,
    pub environment_configs: Value,
    /// `parameters` and `environment_configs`, compiled when first rendered.
    pub plans: [Plan; 2],
    pub at: FieldPath,
}

/// A ComponentTypeDefinition.
#[derive(Debug, Clone)]
pub(crate) struct TypeDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    pub workload_type: String,
    pub schemas: Schemas,
    pub resources: Vec<ResourceTpl>,
    pub model: Model,
    pub validations: Vec<Validation>,
    pub post_validations: Vec<PostValidation>,
    pub embedded: Vec<EmbeddedTrait>,
    /// The whole object, for snapshots.
    pub value: Value,
}

/// A patch operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Replace,
    Remove,
    MergeShallow,
}

/// One operation of a patch.
#[derive(Debug, Clone)]
pub(crate) struct OpDef {
    pub op: Op,
    pub path: String,
    pub value: Option<Value>,
    /// `path` and `value`, compiled when first rendered.
    pub plans: [Plan; 2],
    /// `path` parsed, when it has no `${…}`.
    pub parsed: OnceLock<Result<Vec<super::pointer::Step>, String>>,
    pub at: FieldPath,
}

/// Which resources a patch applies to.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    /// `None`: any group; `Some("")`: the core group.
    pub group: Option<String>,
    pub version: String,
    pub kind: String,
    pub where_: Option<String>,
}

/// One patch of an addon.
#[derive(Debug, Clone)]
pub(crate) struct PatchDef {
    pub for_each: Option<String>,
    pub var: String,
    pub target: Target,
    pub ops: Vec<OpDef>,
    pub at: FieldPath,
}

/// One remove of an addon (upstream Trait `removes[]`): drops whole resources.
#[derive(Debug, Clone)]
pub(crate) struct RemoveDef {
    pub for_each: Option<String>,
    pub var: String,
    pub target: Target,
    pub at: FieldPath,
}

/// An upstream Trait or ClusterTrait, or the proposal's Addon (`model` says which).
#[derive(Debug, Clone)]
pub(crate) struct TraitDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    pub schemas: Schemas,
    pub creates: Vec<ResourceTpl>,
    pub patches: Vec<PatchDef>,
    pub removes: Vec<RemoveDef>,
    pub model: Model,
    pub validations: Vec<Validation>,
    pub post_validations: Vec<PostValidation>,
    pub value: Value,
}

/// One addon instance of a Component.
#[derive(Debug, Clone)]
pub(crate) struct AddonUse {
    pub name: String,
    /// `kind` of an upstream trait reference (`Trait` or `ClusterTrait`), when given.
    pub kind: Option<String>,
    pub instance: String,
    pub config: Value,
    pub at: FieldPath,
    /// Where `config` is (for parameter errors).
    pub config_at: FieldPath,
}

/// A Component.
#[derive(Debug, Clone)]
pub(crate) struct ComponentDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    /// `metadata.uid`, when the Component was exported from a cluster.
    pub uid: Option<String>,
    /// `spec.componentType.kind` (`ComponentType` or `ClusterComponentType`), when given.
    pub type_kind: Option<String>,
    pub namespace: Option<String>,
    pub labels: Value,
    pub annotations: Value,
    pub project: Option<String>,
    pub workload_type: String,
    pub type_name: String,
    pub parameters: Value,
    pub addons: Vec<AddonUse>,
    pub build: Value,
    /// The fields its spec was written with, in order (upstream's Component has fewer than the
    /// proposal's; a render with an upstream type refuses the others).
    pub spec_fields: Vec<String>,
    /// The whole document, borrowed from the input when it is one (a fleet holds thousands;
    /// a copy doubled what the run holds), owned when built from a release or snapshot. A
    /// spec handed over (`read_ahead`) is not in it.
    pub value: Cow<'a, Value>,
}

/// A Workload.
#[derive(Debug, Clone)]
pub(crate) struct WorkloadDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    /// The component it belongs to.
    pub component: String,
    pub spec: Value,
    /// The whole document, borrowed from the input when it is one (a fleet holds thousands;
    /// a copy doubled what the run holds), owned when built from a release or snapshot.
    pub value: Cow<'a, Value>,
}

/// One list of a workload override (`env` or `files`): entries keyed by `key`, in order.
#[derive(Debug, Clone, Default)]
pub(crate) struct KeyedList {
    pub entries: Vec<(String, Value)>,
}

/// Environment overrides of the workload's container configuration: a ComponentDeployment's
/// `configurationOverrides.{env, files}` or a ReleaseBinding's `workloadOverrides.container.{env,
/// files, resources}`.
#[derive(Debug, Clone, Default)]
pub(crate) struct WorkloadOverrides {
    pub env: KeyedList,
    pub files: KeyedList,
    /// Replaces the container's `resources` (ReleaseBinding only).
    pub resources: Option<Value>,
}

/// An upstream ReleaseBinding, or the proposal's ComponentDeployment: one component's settings
/// for one environment.
#[derive(Debug, Clone)]
pub(crate) struct ReleaseBindingDef<'a> {
    pub loc: Loc<'a>,
    pub component: String,
    pub environment: String,
    pub overrides: Value,
    pub overrides_at: FieldPath,
    /// Per addon instance: overrides and where they are.
    pub addon_overrides: BTreeMap<String, (Value, FieldPath)>,
    /// Env and file overrides of the workload, when given.
    pub workload_overrides: Option<WorkloadOverrides>,
    /// The ComponentRelease to render (ReleaseBinding `spec.releaseName`).
    pub release_name: Option<String>,
}

/// A ComponentEnvSnapshot: frozen copies of everything a component needs, for one environment.
#[derive(Debug, Clone)]
pub(crate) struct SnapshotDef<'a> {
    pub loc: Loc<'a>,
    pub component_name: String,
    pub environment: String,
    pub type_def: TypeDef<'a>,
    pub component: ComponentDef<'a>,
    pub addons: Vec<TraitDef<'a>>,
    pub workload: WorkloadDef<'a>,
}

/// A ComponentRelease: the frozen type, traits, component profile and workload of one component,
/// independent of any environment. Read into the same definitions as live documents.
#[derive(Debug, Clone)]
pub(crate) struct ReleaseDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    pub component_name: String,
    pub type_def: TypeDef<'a>,
    pub component: ComponentDef<'a>,
    pub addons: Vec<TraitDef<'a>>,
    pub workload: WorkloadDef<'a>,
}

/// Reads one object's fields, collecting errors against its location.
pub(crate) struct Reader<'r, 'a> {
    pub loc: &'r Loc<'a>,
    pub errors: &'r mut Vec<Diagnostic>,
}

impl Reader<'_, '_> {
    fn invalid(&mut self, at: &FieldPath, msg: impl Into<String>, hint: impl Into<String>) {
        self.errors
            .push(self.loc.error(codes::COMPONENT_INVALID, at, msg, hint));
    }

    /// A required non-empty string.
    fn string(&mut self, v: &Value, at: &FieldPath, hint: &str) -> Option<String> {
        match get(v, at) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            Some(Value::String(_)) | None | Some(Value::Null) => {
                self.invalid(at, format!("{} is required", last(at)), hint);
                None
            }
            Some(other) => {
                self.invalid(
                    at,
                    format!("{} must be a string, not {}", last(at), type_word(other)),
                    hint,
                );
                None
            }
        }
    }

    /// An optional string.
    fn opt_string(&mut self, v: &Value, at: &FieldPath) -> Option<String> {
        match get(v, at) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.invalid(
                    at,
                    format!("{} must be a string, not {}", last(at), type_word(other)),
                    "quote the value",
                );
                None
            }
        }
    }

    /// An optional map (missing or null → `{}`).
    fn map(&mut self, v: &Value, at: &FieldPath) -> Value {
        match get(v, at) {
            None | Some(Value::Null) => json!({}),
            Some(m @ Value::Object(_)) => m.clone(),
            Some(other) => {
                self.invalid(
                    at,
                    format!("{} must be a map, not {}", last(at), type_word(other)),
                    "write key: value pairs",
                );
                json!({})
            }
        }
    }
}

/// Names a loop variable may not take: they would hide a context variable.
pub(crate) const RESERVED_VARS: &[&str] = &[
    "metadata",
    "parameters",
    "envOverrides",
    "environmentConfigs",
    "workload",
    "build",
    "component",
    "environment",
    "addon",
    "trait",
    "instanceName",
    "resource",
];

fn last(at: &FieldPath) -> String {
    match at.0.last() {
        Some(crate::fieldpath::Segment::Key(k)) => k.clone(),
        Some(crate::fieldpath::Segment::Index(i)) => format!("item {i}"),
        None => "value".into(),
    }
}

/// The value at a relative path.
pub(crate) fn get<'v>(v: &'v Value, at: &FieldPath) -> Option<&'v Value> {
    let mut cur = v;
    for seg in &at.0 {
        cur = match seg {
            crate::fieldpath::Segment::Key(k) => cur.get(k)?,
            crate::fieldpath::Segment::Index(i) => cur.get(*i)?,
        };
    }
    Some(cur)
}

/// `spec.<key>`.
fn spec_path(key: &str) -> FieldPath {
    FieldPath::root().key("spec").key(key)
}

/// `metadata.<key>`.
fn metadata_path(key: &str) -> FieldPath {
    FieldPath::root().key("metadata").key(key)
}

fn metadata_name(r: &mut Reader<'_, '_>, v: &Value) -> Option<String> {
    r.string(v, &metadata_path("name"), "give the object a metadata.name")
}

/// `metadata.uid`, when the object was exported from a cluster.
fn metadata_uid(v: &Value) -> Option<String> {
    crate::lookup::pointer(v, "/metadata/uid")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

fn metadata_namespace(r: &mut Reader<'_, '_>, v: &Value) -> Option<String> {
    let at = metadata_path("namespace");
    let ns = r.opt_string(v, &at).filter(|s| !s.is_empty())?;
    // What a component is rendered in (its releases, its data plane's names): the API
    // server's rule first.
    if let Some(problem) = crate::names::namespace_problem(&ns) {
        let d = r
            .loc
            .error(codes::NAMESPACE, &at, problem, crate::names::NAMESPACE_RULE);
        r.errors.push(d);
        return None;
    }
    Some(ns)
}

/// The schemas of a type or addon: shorthand `spec.schema`, or upstream `spec.parameters` /
/// `spec.environmentConfigs` with `openAPIV3Schema`.
fn schemas(r: &mut Reader<'_, '_>, v: &Value) -> Schemas {
    schemas_at(r, v, &FieldPath::root().key("spec"))
}

/// The schemas a definition's spec declares, or the errors of converting them, relative to the
/// returned path. Also the editor's (`ide`), which types templates by them.
pub(crate) fn spec_schemas(
    spec: Option<&Value>,
    spec_at: &FieldPath,
) -> Result<Schemas, (Vec<shorthand::SchemaError>, FieldPath)> {
    let upstream = spec
        .is_some_and(|s| s.get("parameters").is_some() || s.get("environmentConfigs").is_some());
    if upstream {
        shorthand::from_openapi(
            spec.and_then(|s| s.get("parameters")),
            spec.and_then(|s| s.get("environmentConfigs")),
        )
        .map_err(|e| (e, spec_at.clone()))
    } else {
        shorthand::from_shorthand(spec.and_then(|s| s.get("schema")))
            .map_err(|e| (e, spec_at.key("schema")))
    }
}

/// [`schemas`] of the spec at `spec_at` (a ResourceRelease holds its type's spec further in).
fn schemas_at(r: &mut Reader<'_, '_>, v: &Value, spec_at: &FieldPath) -> Schemas {
    let spec = get(v, spec_at);
    let shorthand = spec.and_then(|s| s.get("schema"));
    let upstream = spec
        .is_some_and(|s| s.get("parameters").is_some() || s.get("environmentConfigs").is_some());
    if upstream && shorthand.is_some() {
        r.invalid(
            &spec_at.key("schema"),
            "both spec.schema and spec.parameters/environmentConfigs are set",
            "use either the shorthand spec.schema or openAPIV3Schema sections, not both",
        );
    }
    match spec_schemas(spec, spec_at) {
        Ok(s) => s,
        Err((errs, base)) => {
            for e in errs {
                r.errors.push(r.loc.error(
                    codes::SHORTHAND_SCHEMA,
                    &base.join(&e.path),
                    e.message,
                    "write `type | marker=value …`, e.g. `integer | default=1 minimum=0`",
                ));
            }
            Schemas::default()
        }
    }
}

/// Read a ComponentTypeDefinition, or an upstream ComponentType or ClusterComponentType.
pub(crate) fn type_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<TypeDef<'a>> {
    if Model::of(v) == Model::Upstream {
        return upstream_type_def(loc, v, errors);
    }
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let schemas = schemas(&mut r, v);
    // The proposal's ComponentTypeDefinition, and the first implementation's ComponentType
    // written with its shorthand `spec.schema`: kiln's schema of the definition.
    let spec: ProposalTypeSpec = crd::spec(&loc, "ComponentTypeDefinition", v, errors)?;
    let mut s = Semantic { loc: &loc, errors };
    let resources = s.type_resources(&spec.workload_type, spec.resources);
    if errors.len() > before {
        return None;
    }
    Some(TypeDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        workload_type: spec.workload_type,
        schemas,
        resources,
        model: Model::Proposal,
        validations: Vec::new(),
        post_validations: Vec::new(),
        embedded: Vec::new(),
        value: v.clone(),
    })
}

/// The spec of the proposal's ComponentTypeDefinition (kiln's schema,
/// `core/data/proposal/schemas.json`); `schema` is read by [`schemas`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProposalTypeSpec {
    workload_type: String,
    resources: Vec<TemplateSpec>,
}

impl Semantic<'_, '_> {
    /// A type's resources and the rules on them both models share: a workload type kiln
    /// renders, unique ids, and a primary resource whose id is the workload type (upstream's CEL
    /// rule; the proposal's workload-type constraint).
    fn type_resources(&mut self, wt: &str, list: Vec<TemplateSpec>) -> Vec<ResourceTpl> {
        if !WORKLOAD_TYPES.contains(&wt) {
            self.errors.push(self.loc.error(
                codes::WORKLOAD_TYPE,
                &spec_path("workloadType"),
                format!("workloadType {wt:?} is not supported"),
                "use one of deployment, statefulset, cronjob, job",
            ));
        }
        let res_at = spec_path("resources");
        let mut resources = Vec::new();
        let mut ids = BTreeSet::new();
        for (i, t) in list.into_iter().enumerate() {
            let t = self.template(t, res_at.index(i), None);
            let id = t.id.clone().unwrap_or_default();
            if !ids.insert(id.clone()) {
                self.errors.push(self.loc.error(
                    codes::WORKLOAD_TYPE,
                    &t.at.key("id"),
                    format!("resource id {id:?} is used more than once"),
                    "give every resource its own id",
                ));
            }
            resources.push(t);
        }
        if WORKLOAD_TYPES.contains(&wt) && !ids.contains(wt) {
            self.errors.push(self.loc.error(
                codes::WORKLOAD_TYPE,
                &res_at,
                format!(
                    "resources must contain a primary resource with id {wt:?} (the workloadType)"
                ),
                format!("give the {wt} resource `id: {wt}`"),
            ));
        }
        resources
    }
}

/// The spec of an upstream ComponentType or ClusterComponentType (`ComponentTypeSpec`).
/// `allowedWorkflows` and `allowedTraits` govern builds and what developers may attach, not what
/// renders: the schema checks them, nothing reads them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypeSpec {
    workload_type: String,
    parameters: Option<Value>,
    environment_configs: Option<Value>,
    #[serde(default)]
    traits: Vec<EmbeddedTraitSpec>,
    #[serde(default)]
    validations: Vec<RuleSpec>,
    #[serde(default)]
    pre_render_validations: Vec<RuleSpec>,
    #[serde(default)]
    post_render_validations: Vec<PostValidationSpec>,
    resources: Vec<TemplateSpec>,
}

/// A templated resource of an upstream type or trait (`ResourceTemplate`, `TraitCreate`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TemplateSpec {
    id: Option<String>,
    target_plane: Option<String>,
    include_when: Option<String>,
    for_each: Option<String>,
    var: Option<String>,
    template: Value,
}

/// A `validations` / `preRenderValidations` entry (`ValidationRule`).
#[derive(Deserialize)]
struct RuleSpec {
    rule: String,
    message: String,
}

/// A `postRenderValidations` entry (`PostRenderValidation`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PostValidationSpec {
    when: Option<String>,
    for_each: Option<String>,
    var: Option<String>,
    target: TargetSpec,
    target_plane: Option<String>,
    rule: String,
    message: String,
}

/// A patch, remove or post-render validation target. The CRD requires `group` (`""` is the
/// core group).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TargetSpec {
    group: String,
    version: String,
    kind: String,
    #[serde(rename = "where")]
    where_: Option<String>,
    must_match: Option<bool>,
}

/// A trait a ComponentType embeds (`ComponentTypeTrait`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EmbeddedTraitSpec {
    name: String,
    kind: Option<String>,
    instance_name: String,
    parameters: Option<Value>,
    environment_configs: Option<Value>,
}

/// The semantic rules of upstream specs no schema keyword states: control fields are one
/// `${…}` each (the CRD's pattern also admits `${a} ${b}`), and loop variables.
struct Semantic<'r, 'a> {
    loc: &'r Loc<'a>,
    errors: &'r mut Vec<Diagnostic>,
}

impl Semantic<'_, '_> {
    fn invalid(&mut self, at: &FieldPath, msg: impl Into<String>, hint: impl Into<String>) {
        self.errors
            .push(self.loc.error(codes::COMPONENT_INVALID, at, msg, hint));
    }

    /// A control field's expression (the inside of its one `${…}`).
    fn control(&mut self, s: Option<&str>, at: &FieldPath) -> Option<String> {
        let s = s?;
        let e = super::template::standalone(s);
        if e.is_none() {
            self.errors.push(self.loc.error(
                codes::NOT_STANDALONE,
                at,
                format!(
                    "{} must be exactly one ${{…}} expression, got {s:?}",
                    last(at)
                ),
                "write e.g. ${parameters.autoscaling.enabled}",
            ));
        }
        e
    }

    /// `forEach` and `var` of the entry at `at`. Upstream's CRDs carry the CEL rule "var is
    /// required when forEach is specified" on every entry with a loop, so the API server refuses
    /// such an entry even though upstream's renderer would default the variable to `item`.
    /// The proposal's Addon instead defaults `var` to `default` (`item`).
    fn for_each(
        &mut self,
        for_each: Option<&str>,
        var: Option<&str>,
        at: &FieldPath,
        default: Option<&str>,
    ) -> (Option<String>, String) {
        let fe = self.control(for_each, &at.key("forEach"));
        if let Some(name) = var {
            if RESERVED_VARS.contains(&name) {
                self.invalid(
                    &at.key("var"),
                    format!("var {name:?} would hide a context variable"),
                    format!("use an identifier other than {}", RESERVED_VARS.join(", ")),
                );
            }
        } else if for_each.is_some() && default.is_none() {
            self.invalid(
                &at.key("var"),
                "var is required when forEach is specified",
                "name the loop variable, e.g. var: item (upstream's CRD rule)",
            );
        }
        (fe, var.or(default).unwrap_or("item").to_string())
    }

    /// A templated resource at `at` (`default`: its loop variable when `var` is not given).
    fn template(&mut self, t: TemplateSpec, at: FieldPath, default: Option<&str>) -> ResourceTpl {
        let include_when = self.control(t.include_when.as_deref(), &at.key("includeWhen"));
        let (for_each, var) = self.for_each(t.for_each.as_deref(), t.var.as_deref(), &at, default);
        ResourceTpl {
            id: t.id,
            target_plane: t.target_plane,
            include_when,
            for_each,
            var,
            template: t.template,
            plan: Plan::default(),
            at,
        }
    }

    /// `validations`, or `preRenderValidations` (which upstream prefers); both set is refused by
    /// the CRD's CEL rule.
    fn validations(&mut self, old: Vec<RuleSpec>, pre: Vec<RuleSpec>) -> Vec<Validation> {
        if !old.is_empty() && !pre.is_empty() {
            self.invalid(
                &spec_path("preRenderValidations"),
                "set only one of spec.validations and spec.preRenderValidations",
                "validations is deprecated upstream; move its rules to preRenderValidations",
            );
        }
        let (key, list) = if pre.is_empty() {
            ("validations", old)
        } else {
            ("preRenderValidations", pre)
        };
        self.rules(list, &spec_path(key))
    }

    /// The rules of the list at `at`, each one `${…}`.
    fn rules(&mut self, list: Vec<RuleSpec>, at: &FieldPath) -> Vec<Validation> {
        let mut out = Vec::new();
        for (i, v) in list.into_iter().enumerate() {
            let e_at = at.index(i);
            if let Some(rule) = self.control(Some(&v.rule), &e_at.key("rule")) {
                out.push(Validation {
                    rule,
                    message: v.message,
                    at: e_at,
                });
            }
        }
        out
    }

    fn post_validations(&mut self, list: Vec<PostValidationSpec>) -> Vec<PostValidation> {
        let at = spec_path("postRenderValidations");
        let mut out = Vec::new();
        for (i, v) in list.into_iter().enumerate() {
            let e_at = at.index(i);
            let when = self.control(v.when.as_deref(), &e_at.key("when"));
            let (for_each, var) =
                self.for_each(v.for_each.as_deref(), v.var.as_deref(), &e_at, None);
            let must_match = v.target.must_match.unwrap_or(true);
            let target = self.target(v.target, &e_at.key("target"));
            let rule = self.control(Some(&v.rule), &e_at.key("rule"));
            if let Some(rule) = rule {
                out.push(PostValidation {
                    when,
                    for_each,
                    var,
                    target,
                    must_match,
                    target_plane: v.target_plane.unwrap_or_else(|| "dataplane".into()),
                    rule,
                    message: v.message,
                    at: e_at,
                });
            }
        }
        out
    }

    fn target(&mut self, t: TargetSpec, at: &FieldPath) -> Target {
        let where_ = self.control(t.where_.as_deref(), &at.key("where"));
        Target {
            group: Some(t.group),
            version: t.version,
            kind: t.kind,
            where_,
        }
    }

    /// An object-valued field the CRD leaves free (`x-kubernetes-preserve-unknown-fields`) that
    /// renders as a map of parameters.
    fn map(&mut self, x: Option<Value>, at: &FieldPath) -> Value {
        match x {
            None | Some(Value::Null) => json!({}),
            Some(mut m @ Value::Object(_)) => {
                exact(&mut m);
                m
            }
            Some(other) => {
                self.invalid(
                    at,
                    format!("{} must be a map, not {}", last(at), type_word(&other)),
                    "write key: value pairs",
                );
                json!({})
            }
        }
    }

    /// Parameter and environment-config schemas (`openAPIV3Schema` sections) of the spec at
    /// `spec_at`.
    fn schemas(
        &mut self,
        parameters: Option<&Value>,
        env: Option<&Value>,
        spec_at: &FieldPath,
    ) -> Schemas {
        match shorthand::from_openapi(parameters, env) {
            Ok(s) => s,
            Err(errs) => {
                for e in errs {
                    self.errors.push(self.loc.error(
                        codes::SHORTHAND_SCHEMA,
                        &spec_at.join(&e.path),
                        e.message,
                        "write `type | marker=value …`, e.g. `integer | default=1 minimum=0`",
                    ));
                }
                Schemas::default()
            }
        }
    }
}

/// Read an upstream ComponentType or ClusterComponentType: its CRD, then the rules the CRD
/// states in CEL (a primary resource whose id is the workloadType; one of validations and
/// preRenderValidations; var with forEach) and kiln's own (unique resource and instance names,
/// the workload types kiln renders).
fn upstream_type_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<TypeDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("ComponentType");
    let spec: Option<TypeSpec> = crd::spec(&loc, kind, v, errors);
    let spec = spec?;
    let mut s = Semantic { loc: &loc, errors };
    let wt = spec.workload_type;
    let schemas = s.schemas(
        spec.parameters.as_ref(),
        spec.environment_configs.as_ref(),
        &FieldPath::root().key("spec"),
    );
    let resources = s.type_resources(&wt, spec.resources);
    let validations = s.validations(spec.validations, spec.pre_render_validations);
    let post_validations = s.post_validations(spec.post_render_validations);
    let tr_at = spec_path("traits");
    let mut embedded = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for (i, t) in spec.traits.into_iter().enumerate() {
        let e_at = tr_at.index(i);
        let parameters = s.map(t.parameters, &e_at.key("parameters"));
        let environment_configs = s.map(t.environment_configs, &e_at.key("environmentConfigs"));
        if let Some(prev) = seen.insert(t.instance_name.clone(), i) {
            s.errors.push(loc.error(
                codes::DUPLICATE_INSTANCE,
                &e_at.key("instanceName"),
                format!(
                    "instanceName {:?} is used by embedded traits {prev} and {i}",
                    t.instance_name
                ),
                "give every embedded trait its own instanceName",
            ));
            continue;
        }
        embedded.push(EmbeddedTrait {
            name: t.name,
            kind: t.kind,
            instance: t.instance_name,
            parameters,
            environment_configs,
            plans: Default::default(),
            at: e_at,
        });
    }
    if errors.len() > before {
        return None;
    }
    Some(TypeDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        workload_type: wt,
        schemas,
        resources,
        model: Model::Upstream,
        validations,
        post_validations,
        embedded,
        value: v.clone(),
    })
}

/// Which context and rules a type or trait renders with. Upstream's current kinds
/// (ComponentType, ClusterComponentType, Trait, ClusterTrait with `spec.parameters` /
/// `environmentConfigs`) render as OpenChoreo's controller does; the proposal's kinds
/// (ComponentTypeDefinition, Addon) and the first implementation's ComponentType and Trait
/// (shorthand `spec.schema`, which frozen releases still hold) keep the proposal's context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Model {
    Proposal,
    Upstream,
}

impl Model {
    pub(crate) fn of(v: &Value) -> Self {
        let upstream_kind = matches!(
            v.get("kind").and_then(Value::as_str),
            Some("ComponentType" | "ClusterComponentType" | "Trait" | "ClusterTrait")
        );
        if upstream_kind && v.get("spec").and_then(|s| s.get("schema")).is_none() {
            Model::Upstream
        } else {
            Model::Proposal
        }
    }
}

/// Read an Addon, or an upstream Trait or ClusterTrait.
pub(crate) fn trait_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<TraitDef<'a>> {
    if Model::of(v) == Model::Upstream {
        return upstream_trait_def(loc, v, errors);
    }
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let schemas = schemas(&mut r, v);
    // The proposal's Addon, and the first implementation's Trait written with its shorthand
    // `spec.schema`, have one shape: kiln's schema of the Addon.
    let spec: AddonSpec = crd::spec(&loc, "Addon", v, errors)?;
    let mut s = Semantic { loc: &loc, errors };
    // Upstream's Trait creates default their forEach variable to `item`, as patches do.
    let creates = (spec.creates.into_iter().enumerate())
        .map(|(i, t)| s.template(t, spec_path("creates").index(i), Some("item")))
        .collect();
    let patches = (spec.patches.into_iter().enumerate())
        .filter_map(|(i, p)| s.proposal_patch(p, spec_path("patches").index(i)))
        .collect();
    let removes = (spec.removes.into_iter().enumerate())
        .filter_map(|(i, rm)| s.proposal_remove(rm, spec_path("removes").index(i)))
        .collect();
    if errors.len() > before {
        return None;
    }
    Some(TraitDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        schemas,
        creates,
        patches,
        removes,
        model: Model::Proposal,
        validations: Vec::new(),
        post_validations: Vec::new(),
        value: v.clone(),
    })
}

/// The spec of the proposal's Addon (kiln's schema, `core/data/proposal/schemas.json`).
/// `displayName` and `description` document the addon; `schema` (or the sections
/// `parameters` / `environmentConfigs`) is read by [`schemas`].
#[derive(Deserialize)]
struct AddonSpec {
    #[serde(default)]
    creates: Vec<TemplateSpec>,
    #[serde(default)]
    patches: Vec<AddonPatchSpec>,
    #[serde(default)]
    removes: Vec<AddonRemoveSpec>,
}

/// A patch or remove target of the proposal's Addon: `group` absent matches any group.
#[derive(Deserialize)]
struct AddonTargetSpec {
    group: Option<String>,
    version: String,
    kind: String,
    #[serde(rename = "where")]
    where_: Option<String>,
}

/// An Addon's `patches[]` entry; `op` is matched without regard to case, as the proposal's
/// implementation did, and `mergeShallow` is one of them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddonPatchSpec {
    for_each: Option<String>,
    var: Option<String>,
    target: AddonTargetSpec,
    operations: Vec<OpSpec>,
}

/// An Addon's `removes[]` entry.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AddonRemoveSpec {
    for_each: Option<String>,
    var: Option<String>,
    target: AddonTargetSpec,
}

impl Semantic<'_, '_> {
    fn proposal_target(&mut self, t: AddonTargetSpec, at: &FieldPath) -> Target {
        let where_ = self.control(t.where_.as_deref(), &at.key("where"));
        Target {
            group: t.group,
            version: t.version,
            kind: t.kind,
            where_,
        }
    }

    fn proposal_patch(&mut self, p: AddonPatchSpec, at: FieldPath) -> Option<PatchDef> {
        let (for_each, var) =
            self.for_each(p.for_each.as_deref(), p.var.as_deref(), &at, Some("item"));
        let target = self.proposal_target(p.target, &at.key("target"));
        let mut ops = Vec::new();
        for (i, o) in p.operations.into_iter().enumerate() {
            let o_at = at.key("operations").index(i);
            let op = match o.op.to_ascii_lowercase().as_str() {
                "add" => Op::Add,
                "replace" => Op::Replace,
                "remove" => Op::Remove,
                "mergeshallow" => Op::MergeShallow,
                _ => {
                    self.invalid(
                        &o_at.key("op"),
                        format!("unsupported patch operation {:?}", o.op),
                        "use add, replace, remove or mergeShallow",
                    );
                    continue;
                }
            };
            ops.extend(self.operation(op, o, o_at));
        }
        Some(PatchDef {
            for_each,
            var,
            target,
            ops,
            at,
        })
    }

    /// A remove; the workload resource kinds may not be removed (upstream's Trait webhook).
    fn proposal_remove(&mut self, rm: AddonRemoveSpec, at: FieldPath) -> Option<RemoveDef> {
        let (for_each, var) =
            self.for_each(rm.for_each.as_deref(), rm.var.as_deref(), &at, Some("item"));
        let target = self.proposal_target(rm.target, &at.key("target"));
        self.removal(RemoveDef {
            for_each,
            var,
            target,
            at,
        })
    }

    /// Refuse a remove whose target is a workload resource kind (upstream's Trait webhook rule,
    /// which kiln applies to the proposal's Addon too).
    fn removal(&mut self, rm: RemoveDef) -> Option<RemoveDef> {
        if UNREMOVABLE_KINDS.contains(&rm.target.kind.as_str()) {
            self.invalid(
                &rm.at.key("target").key("kind"),
                format!(
                    "an addon may not remove the workload resource kind {}",
                    rm.target.kind
                ),
                "removes drop supporting resources (Services, HPAs, PDBs…); the workload resource belongs to the component type",
            );
            return None;
        }
        Some(rm)
    }
}

/// Kinds an addon may not remove: the primary workload (upstream's Trait webhook rule).
const UNREMOVABLE_KINDS: &[&str] = &["Deployment", "StatefulSet", "DaemonSet", "CronJob", "Job"];

/// The spec of an upstream Trait or ClusterTrait (`TraitSpec`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TraitSpec {
    parameters: Option<Value>,
    environment_configs: Option<Value>,
    #[serde(default)]
    creates: Vec<TemplateSpec>,
    #[serde(default)]
    patches: Vec<PatchSpec>,
    #[serde(default)]
    removes: Vec<RemoveSpec>,
    #[serde(default)]
    validations: Vec<RuleSpec>,
    #[serde(default)]
    pre_render_validations: Vec<RuleSpec>,
    #[serde(default)]
    post_render_validations: Vec<PostValidationSpec>,
}

/// A Trait's `patches[]` entry (`TraitPatch`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PatchSpec {
    for_each: Option<String>,
    var: Option<String>,
    target: TargetSpec,
    target_plane: Option<String>,
    operations: Vec<OpSpec>,
}

/// One JSON Patch operation (`JSONPatchOperation`): the CRD's enum is add, replace, remove.
#[derive(Deserialize)]
struct OpSpec {
    op: String,
    path: String,
    value: Option<Value>,
}

/// A Trait's `removes[]` entry (`TraitRemove`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoveSpec {
    for_each: Option<String>,
    var: Option<String>,
    target: TargetSpec,
    target_plane: Option<String>,
}

impl Semantic<'_, '_> {
    /// A patch's or remove's `targetPlane`. Upstream selects only resources of that plane (the
    /// CRD defaults it to `dataplane`); kiln renders every plane into one release, so only the
    /// default is accepted and `observabilityplane` is refused rather than ignored.
    fn target_plane(&mut self, plane: Option<&str>, at: &FieldPath) {
        if let Some(p) = plane.filter(|p| *p != "dataplane") {
            self.errors.push(self.loc.error(
                codes::UNSUPPORTED_FEATURE,
                &at.key("targetPlane"),
                format!("a trait patch or remove with targetPlane {p:?} is not implemented by kiln"),
                "kiln renders every plane into one release and patches data-plane resources; leave targetPlane out",
            ));
        }
    }

    fn patch(&mut self, p: PatchSpec, at: FieldPath) -> PatchDef {
        let (for_each, var) = self.for_each(p.for_each.as_deref(), p.var.as_deref(), &at, None);
        self.target_plane(p.target_plane.as_deref(), &at);
        let target = self.target(p.target, &at.key("target"));
        let mut ops = Vec::new();
        for (i, o) in p.operations.into_iter().enumerate() {
            let o_at = at.key("operations").index(i);
            let op = match o.op.as_str() {
                "add" => Op::Add,
                "replace" => Op::Replace,
                _ => Op::Remove,
            };
            ops.extend(self.operation(op, o, o_at));
        }
        PatchDef {
            for_each,
            var,
            target,
            ops,
            at,
        }
    }

    /// One operation of a patch, `op` read: a path, and a value unless it removes (upstream's
    /// JSON patch would write null; a missing value is a mistake kiln names).
    fn operation(&mut self, op: Op, o: OpSpec, at: FieldPath) -> Option<OpDef> {
        if o.path.is_empty() {
            self.invalid(
                &at.key("path"),
                "path is required",
                "a JSON Pointer such as /spec/template/spec/volumes/-",
            );
            return None;
        }
        if op != Op::Remove && o.value.is_none() {
            self.invalid(
                &at.key("value"),
                format!("{} needs a value", o.op),
                "add value: …",
            );
            return None;
        }
        Some(OpDef {
            op,
            path: o.path,
            value: o.value,
            plans: Default::default(),
            parsed: OnceLock::new(),
            at,
        })
    }

    /// A remove; the workload resource kinds may not be removed (upstream's Trait webhook).
    fn remove(&mut self, rm: RemoveSpec, at: FieldPath) -> Option<RemoveDef> {
        let (for_each, var) = self.for_each(rm.for_each.as_deref(), rm.var.as_deref(), &at, None);
        self.target_plane(rm.target_plane.as_deref(), &at);
        let target = self.target(rm.target, &at.key("target"));
        self.removal(RemoveDef {
            for_each,
            var,
            target,
            at,
        })
    }
}

/// Read an upstream Trait or ClusterTrait: its CRD (which also refuses the proposal's
/// `mergeShallow`, outside its op enum), then the rules it states in CEL (var with forEach; one
/// of validations and preRenderValidations) and upstream's webhook rule on removes.
fn upstream_trait_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<TraitDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("Trait");
    let spec: Option<TraitSpec> = crd::spec(&loc, kind, v, errors);
    let spec = spec?;
    let mut s = Semantic { loc: &loc, errors };
    let schemas = s.schemas(
        spec.parameters.as_ref(),
        spec.environment_configs.as_ref(),
        &FieldPath::root().key("spec"),
    );
    let creates = (spec.creates.into_iter().enumerate())
        .map(|(i, t)| s.template(t, spec_path("creates").index(i), None))
        .collect();
    let patches = (spec.patches.into_iter().enumerate())
        .map(|(i, p)| s.patch(p, spec_path("patches").index(i)))
        .collect();
    let removes = (spec.removes.into_iter().enumerate())
        .filter_map(|(i, rm)| s.remove(rm, spec_path("removes").index(i)))
        .collect();
    let validations = s.validations(spec.validations, spec.pre_render_validations);
    let post_validations = s.post_validations(spec.post_render_validations);
    if errors.len() > before {
        return None;
    }
    Some(TraitDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        schemas,
        creates,
        patches,
        removes,
        model: Model::Upstream,
        validations,
        post_validations,
        value: v.clone(),
    })
}

/// The spec of an upstream Component (`ComponentSpec`). `autoDeploy`, `autoBuild` and
/// `workflow` govern builds and promotion, not what renders: the schema checks them, nothing
/// reads them.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ComponentSpec {
    owner: ProjectOwner,
    component_type: ComponentTypeRef,
    parameters: Option<Value>,
    #[serde(default)]
    traits: Vec<TraitUseSpec>,
}

/// A Component's `spec.componentType`: `name` is `workloadType/name` (the CRD's pattern).
#[derive(Deserialize)]
struct ComponentTypeRef {
    kind: Option<String>,
    name: String,
}

/// One of a Component's `spec.traits` (`ComponentTrait`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct TraitUseSpec {
    name: String,
    kind: Option<String>,
    instance_name: String,
    parameters: Option<Value>,
    /// The proposal's name of `parameters` (upstream's schema has no such field).
    config: Option<Value>,
}

/// Whether a Component is upstream's shape (`componentType: {kind, name}`, none of the
/// proposal's `addons` and `build`), read through the CRD; the proposal's keeps its rules.
fn upstream_component_spec(spec: Option<&Value>) -> bool {
    let has = |k: &str| spec.and_then(|s| s.get(k)).is_some();
    spec.and_then(|s| s.get("componentType"))
        .is_some_and(Value::is_object)
        && !has("addons")
        && !has("build")
}

/// `v` with every map of it sized to its entries. A value read through serde (a spec into its
/// struct) has its maps rebuilt one insertion at a time, with room to grow they never use, held
/// for every Component and binding of a fleet until the run ends.
fn exact(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let mut sized = serde_json::Map::with_capacity(m.len());
            for (k, mut x) in std::mem::take(m) {
                exact(&mut x);
                sized.insert(k, x);
            }
            *m = sized;
        }
        Value::Array(a) => a.iter_mut().for_each(exact),
        _ => {}
    }
}

/// [`ComponentDef::spec_fields`] of a spec.
fn spec_fields(spec: Option<&Value>) -> Vec<String> {
    spec.and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Read a Component; `taken` is its spec when it was moved out of the document
/// (`component::takes_spec`).
pub(crate) fn component_def<'a>(
    loc: Loc<'a>,
    value: Cow<'a, Value>,
    taken: Option<Value>,
    errors: &mut Vec<Diagnostic>,
) -> Option<ComponentDef<'a>> {
    let spec_in = taken.as_ref().or_else(|| value.get("spec"));
    if upstream_component_spec(spec_in) {
        return upstream_component_def(loc, value, taken, errors);
    }
    let type_kind = spec_in
        .and_then(|s| crate::lookup::pointer(s, "/componentType/kind"))
        .and_then(Value::as_str)
        .map(str::to_string);
    let spec_fields = spec_fields(spec_in);
    let v: &Value = &value;
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let labels = r.map(v, &metadata_path("labels"));
    let annotations = r.map(v, &metadata_path("annotations"));
    let uid = metadata_uid(v);
    // The proposal's Component (and one built from a release or snapshot): kiln's schema of it.
    let spec: ProposalComponentSpec = match taken {
        Some(spec) => crd::spec_taken(&loc, PROPOSAL_COMPONENT, spec, errors)?,
        None => crd::spec(&loc, PROPOSAL_COMPONENT, v, errors)?,
    };
    let mut s = Semantic { loc: &loc, errors };
    // `workloadType/name`, or upstream's `{kind, name}` beside the proposal's fields.
    let ct_at = spec_path("componentType");
    let ct = match &spec.component_type {
        Value::String(t) => Some((t.clone(), ct_at.clone())),
        Value::Object(m) => match m.get("name") {
            Some(Value::String(t)) if !t.is_empty() => Some((t.clone(), ct_at.key("name"))),
            _ => {
                s.invalid(
                    &ct_at.key("name"),
                    "name is required",
                    "e.g. name: deployment/web-app",
                );
                None
            }
        },
        _ => {
            s.invalid(
                &ct_at,
                "componentType is required (workloadType/name)",
                "e.g. componentType: deployment/web-app",
            );
            None
        }
    };
    let wt_name = ct.and_then(|(t, at)| match t.split_once('/') {
        Some((wt, n)) if !wt.is_empty() && !n.is_empty() && !n.contains('/') => {
            Some((wt.to_string(), n.to_string()))
        }
        _ => {
            s.invalid(
                &at,
                format!("componentType {t:?} is not of the form workloadType/name"),
                "e.g. componentType: deployment/web-app",
            );
            None
        }
    });
    let parameters = s.map(spec.parameters, &spec_path("parameters"));
    let build = s.map(spec.build, &spec_path("build"));
    // Proposal: `addons[]` with `config` (the seed also writes `parameters`); upstream: `traits[]`
    // with `parameters`.
    let uses = [("addons", spec.addons), ("traits", spec.traits)]
        .into_iter()
        .flat_map(|(key, list)| {
            (list.into_iter().enumerate()).map(move |(i, t)| (spec_path(key).index(i), t))
        });
    let addons = s.addon_uses(uses);
    if errors.len() > before {
        return None;
    }
    let (workload_type, type_name) = wt_name?;
    Some(ComponentDef {
        loc: loc.clone(),
        name: name?,
        uid,
        type_kind,
        spec_fields,
        namespace,
        labels,
        annotations,
        project: spec.owner.and_then(|o| o.project_name),
        workload_type,
        type_name,
        parameters,
        addons,
        build,
        value,
    })
}

/// The key of kiln's schema of the proposal's Component in `core/data/proposal/schemas.json`
/// (upstream's Component is the CRD's).
const PROPOSAL_COMPONENT: &str = "ProposalComponent";

/// The spec of the proposal's Component (kiln's schema).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProposalComponentSpec {
    owner: Option<ProposalOwner>,
    component_type: Value,
    parameters: Option<Value>,
    build: Option<Value>,
    #[serde(default)]
    addons: Vec<TraitUseSpec>,
    #[serde(default)]
    traits: Vec<TraitUseSpec>,
}

/// The proposal's `spec.owner` (each kind's schema says which names it requires).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ProposalOwner {
    component_name: Option<String>,
    project_name: Option<String>,
}

impl Semantic<'_, '_> {
    /// A Component's addon (trait) instances, each with where it is: `config` or `parameters`
    /// (one of them), and kiln's rule that instance names are unique (KLN6008).
    fn addon_uses(
        &mut self,
        list: impl Iterator<Item = (FieldPath, TraitUseSpec)>,
    ) -> Vec<AddonUse> {
        let mut out = Vec::new();
        let mut seen: BTreeMap<String, FieldPath> = BTreeMap::new();
        for (at, t) in list {
            if t.config.is_some() && t.parameters.is_some() {
                self.invalid(
                    &at.key("parameters"),
                    "both config and parameters are set",
                    "use one of them",
                );
                continue;
            }
            if let Some(prev) = seen.get(&t.instance_name) {
                self.errors.push(self.loc.error(
                    codes::DUPLICATE_INSTANCE,
                    &at.key("instanceName"),
                    format!(
                        "addon instance name {:?} is already used by {prev}",
                        t.instance_name
                    ),
                    "give every addon instance its own instanceName",
                ));
                continue;
            }
            seen.insert(t.instance_name.clone(), self.loc.at(&at));
            let (key, config) = match t.config {
                Some(c) => ("config", Some(c)),
                None => ("parameters", t.parameters),
            };
            out.push(AddonUse {
                name: t.name,
                kind: t.kind,
                instance: t.instance_name,
                config: self.map(config, &at.key(key)),
                config_at: at.key(key),
                at,
            });
        }
        out
    }
}

/// Read an upstream Component: its CRD (owner with project, the type reference's pattern, each
/// trait's name and instance), then kiln's rule that instance names are unique (KLN6008).
fn upstream_component_def<'a>(
    loc: Loc<'a>,
    value: Cow<'a, Value>,
    taken: Option<Value>,
    errors: &mut Vec<Diagnostic>,
) -> Option<ComponentDef<'a>> {
    let v: &Value = &value;
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let labels = r.map(v, &metadata_path("labels"));
    let annotations = r.map(v, &metadata_path("annotations"));
    let spec_fields = spec_fields(taken.as_ref().or_else(|| v.get("spec")));
    let spec: ComponentSpec = match taken {
        Some(spec) => crd::spec_taken(&loc, "Component", spec, errors)?,
        None => crd::spec(&loc, "Component", v, errors)?,
    };
    let mut s = Semantic { loc: &loc, errors };
    // The CRD's pattern has checked `workloadType/name`.
    let (workload_type, type_name) = spec
        .component_type
        .name
        .split_once('/')
        .map(|(w, n)| (w.to_string(), n.to_string()))
        .unwrap_or_default();
    let parameters = s.map(spec.parameters, &spec_path("parameters"));
    let uses =
        (spec.traits.into_iter().enumerate()).map(|(i, t)| (spec_path("traits").index(i), t));
    let addons = s.addon_uses(uses);
    if errors.len() > before {
        return None;
    }
    Some(ComponentDef {
        loc: loc.clone(),
        name: name?,
        uid: metadata_uid(v),
        type_kind: spec.component_type.kind,
        spec_fields,
        namespace,
        labels,
        annotations,
        project: Some(spec.owner.project_name),
        workload_type,
        type_name,
        parameters,
        addons,
        build: json!({}),
        value,
    })
}

/// The part of an upstream Workload's spec kiln reads itself; templates read the whole spec
/// as `workload`.
#[derive(Deserialize)]
struct WorkloadSpec {
    owner: WorkloadOwner,
}

/// `spec.owner` of a Workload.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WorkloadOwner {
    component_name: String,
}

/// Whether a Workload document is upstream's shape, read through the CRD: upstream's owner
/// reference (`owner.projectName`, which its CRD requires and the proposal's owner does not
/// have) and no proposal-era field (`containers`, `connections`, a top-level `image`). The
/// proposal's Workload (`container` or `containers`, an owner with only `componentName`, or
/// none) keeps its rules, and one rendered with an upstream type is checked then
/// (`upstream::workload_data`). A Workload frozen in a ComponentRelease is not a document of
/// its own and has no owner; it is read as it was frozen.
fn upstream_workload(loc: &Loc<'_>, spec: Option<&Value>) -> bool {
    let has = |k: &str| spec.and_then(|s| s.get(k)).is_some();
    loc.base.0.is_empty()
        && spec
            .and_then(|s| crate::lookup::pointer(s, "/owner/projectName"))
            .is_some()
        && !["containers", "connections", "image"]
            .iter()
            .any(|k| has(k))
}

/// Read a Workload.
pub(crate) fn workload_def<'a>(
    loc: Loc<'a>,
    value: Cow<'a, Value>,
    taken: Option<Value>,
    errors: &mut Vec<Diagnostic>,
) -> Option<WorkloadDef<'a>> {
    let v: &Value = &value;
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    // Templates read the whole spec: the one moved out of the document is kept (its check reads
    // a copy), else the document's is copied.
    fn read<T: serde::de::DeserializeOwned>(
        loc: &Loc<'_>,
        kind: &str,
        v: &Value,
        taken: Option<&Value>,
        errors: &mut Vec<Diagnostic>,
    ) -> Option<T> {
        match taken {
            Some(spec) => crd::spec_taken(loc, kind, spec.clone(), errors),
            None => crd::spec(loc, kind, v, errors),
        }
    }
    if upstream_workload(&loc, taken.as_ref().or_else(|| v.get("spec"))) {
        let spec: Option<WorkloadSpec> = read(&loc, "Workload", v, taken.as_ref(), errors);
        let (name, spec) = (name?, spec?);
        return Some(WorkloadDef {
            loc: loc.clone(),
            name,
            component: spec.owner.component_name,
            spec: taken.or_else(|| v.get("spec").cloned()).unwrap_or_default(),
            value,
        });
    }
    // The proposal's Workload (and a frozen one): kiln's schema of it.
    let spec: ProposalWorkloadSpec = read(&loc, PROPOSAL_WORKLOAD, v, taken.as_ref(), errors)?;
    let mut s = Semantic { loc: &loc, errors };
    // A map by name (the first implementation) or a list (the proposal's text): a shape no
    // structural schema states.
    for (key, x) in [
        ("containers", spec.containers),
        ("endpoints", spec.endpoints),
        ("connections", spec.connections),
    ] {
        if x.is_some_and(|x| !(x.is_object() || x.is_array())) {
            s.invalid(
                &spec_path(key),
                format!("{key} must be a map or a list"),
                "see the Workload example in docs/component-types.md",
            );
        }
    }
    if errors.len() > before {
        return None;
    }
    let name = name?;
    Some(WorkloadDef {
        loc: loc.clone(),
        component: spec.owner.component_name.unwrap_or_else(|| name.clone()),
        name,
        spec: taken
            .or_else(|| v.get("spec").cloned())
            .filter(|s| !s.is_null())
            .unwrap_or_else(|| json!({})),
        value,
    })
}

/// The key of kiln's schema of the proposal's Workload in `core/data/proposal/schemas.json`
/// (upstream's Workload is the CRD's).
const PROPOSAL_WORKLOAD: &str = "ProposalWorkload";

/// The part of the proposal's Workload kiln reads itself (kiln's schema); templates read the
/// whole spec as `workload`.
#[derive(Deserialize)]
struct ProposalWorkloadSpec {
    #[serde(default)]
    owner: ProposalOwner,
    containers: Option<Value>,
    endpoints: Option<Value>,
    connections: Option<Value>,
}

/// The spec of an upstream ReleaseBinding (`ReleaseBindingSpec`) or the proposal's
/// ComponentDeployment, which also takes the upstream names. `owner.projectName` is required by
/// upstream's CRD (the API server refuses a binding without it); kiln selects by component.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BindingSpec {
    owner: ComponentOwner,
    environment: String,
    release_name: Option<String>,
    component_type_environment_configs: Option<Value>,
    trait_environment_configs: Option<BTreeMap<String, Value>>,
    workload_overrides: Option<Map<String, Value>>,
    state: Option<String>,
    // The proposal's ComponentDeployment.
    overrides: Option<Value>,
    addon_overrides: Option<BTreeMap<String, Value>>,
    configuration_overrides: Option<ConfigurationOverridesSpec>,
}

/// `spec.owner` of the kinds a component owns.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ComponentOwner {
    component_name: String,
}

/// `workloadOverrides.container` (`ContainerOverride`); `resources` is kiln's addition
/// ([`crd`] adds it to the schema).
#[derive(Deserialize)]
struct ContainerOverrideSpec {
    #[serde(default)]
    env: Vec<Map<String, Value>>,
    #[serde(default)]
    files: Vec<Map<String, Value>>,
    resources: Option<Value>,
}

/// A ComponentDeployment's `configurationOverrides` (the first implementation's JSON name for
/// `files` was `file`).
#[derive(Deserialize)]
struct ConfigurationOverridesSpec {
    #[serde(default)]
    env: Vec<Map<String, Value>>,
    files: Option<Vec<Map<String, Value>>>,
    file: Option<Vec<Map<String, Value>>>,
}

/// Read a ReleaseBinding, or the proposal's ComponentDeployment: its schema (upstream's CRD, or
/// the one kiln wrote for the proposal's kind), then what kiln does not render (a `state` other
/// than `Active`; `workloadOverrides` fields beside `container`, which the CRD preserves
/// unvalidated) and kiln's own rules (an environment, unique override keys, one name of each
/// override).
pub(crate) fn release_binding_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    taken: Option<Value>,
    errors: &mut Vec<Diagnostic>,
) -> Option<ReleaseBindingDef<'a>> {
    let before = errors.len();
    let kind = v
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or("ReleaseBinding");
    let spec: BindingSpec = match taken {
        Some(spec) => crd::spec_taken(&loc, kind, spec, errors)?,
        None => crd::spec(&loc, kind, v, errors)?,
    };
    let mut s = Semantic { loc: &loc, errors };
    if spec.environment.is_empty() {
        s.invalid(
            &spec_path("environment"),
            "environment is required",
            "e.g. environment: production",
        );
    }
    if let Some(state) = spec.state.filter(|st| st != "Active") {
        s.errors.push(loc.error(
            codes::UNSUPPORTED_FEATURE,
            &spec_path("state"),
            format!("ReleaseBinding state {state:?} is not implemented by kiln"),
            "upstream stops deploying the release (Undeploy); kiln renders active bindings only — leave the binding out of the render",
        ));
    }
    // A ComponentDeployment may use either name; the proposal's wins, as it always has.
    let (ov_key, overrides) = match spec.overrides {
        Some(o) => ("overrides", Some(o)),
        None => (
            "componentTypeEnvironmentConfigs",
            spec.component_type_environment_configs,
        ),
    };
    let overrides_at = spec_path(ov_key);
    let overrides = s.map(overrides, &overrides_at);
    let (ao_key, addon_overrides) = match spec.addon_overrides {
        Some(o) => ("addonOverrides", o),
        None => (
            "traitEnvironmentConfigs",
            spec.trait_environment_configs.unwrap_or_default(),
        ),
    };
    let ao_at = spec_path(ao_key);
    let addon_overrides = (addon_overrides.into_iter())
        .map(|(k, x)| {
            let at = ao_at.key(&k);
            let x = if x.is_null() { json!({}) } else { x };
            (k, (x, at))
        })
        .collect();
    let workload_overrides = match (spec.configuration_overrides, spec.workload_overrides) {
        (Some(_), Some(_)) => {
            s.invalid(
                &spec_path("workloadOverrides"),
                "both configurationOverrides and workloadOverrides are set",
                "use configurationOverrides (ComponentDeployment) or workloadOverrides (ReleaseBinding), not both",
            );
            None
        }
        (Some(co), None) => Some(s.configuration_overrides(co)),
        (None, Some(wo)) => s.container_override(wo),
        (None, None) => None,
    };
    if errors.len() > before {
        return None;
    }
    Some(ReleaseBindingDef {
        loc: loc.clone(),
        component: spec.owner.component_name,
        environment: spec.environment,
        overrides,
        overrides_at,
        addon_overrides,
        workload_overrides,
        release_name: spec.release_name.filter(|n| !n.is_empty()),
    })
}

impl Semantic<'_, '_> {
    /// `workloadOverrides`: only `container` is acted on (the CRD keeps other fields unvalidated;
    /// kiln refuses them rather than ignore them).
    fn container_override(&mut self, wo: Map<String, Value>) -> Option<WorkloadOverrides> {
        let outer = spec_path("workloadOverrides");
        let mut container = None;
        for (k, x) in wo {
            if k == "container" {
                container = Some(x);
            } else {
                self.invalid(
                    &outer.key(&k),
                    format!("workloadOverrides.{k} is not supported"),
                    "workload overrides are container.env, container.files and container.resources",
                );
            }
        }
        let at = outer.key("container");
        let c: ContainerOverrideSpec = match serde_json::from_value(container?) {
            Ok(c) => c,
            // The schema has typed `container`; this is the schema and the type disagreeing.
            Err(e) => {
                self.invalid(
                    &at,
                    format!("container does not read: {e}"),
                    "compare with upstream's ReleaseBinding CRD",
                );
                return None;
            }
        };
        Some(WorkloadOverrides {
            env: self.keyed_list(c.env, &at.key("env")),
            files: self.keyed_list(c.files, &at.key("files")),
            resources: c.resources,
        })
    }

    /// A ComponentDeployment's `configurationOverrides.{env, files}` (or `file`).
    fn configuration_overrides(&mut self, co: ConfigurationOverridesSpec) -> WorkloadOverrides {
        let at = spec_path("configurationOverrides");
        if co.file.is_some() && co.files.is_some() {
            self.invalid(&at.key("file"), "both file and files are set", "use files");
        }
        let (files_key, files) = match co.file {
            Some(f) if co.files.is_none() => ("file", f),
            _ => ("files", co.files.unwrap_or_default()),
        };
        WorkloadOverrides {
            env: self.keyed_list(co.env, &at.key("env")),
            files: self.keyed_list(files, &at.key(files_key)),
            resources: None,
        }
    }

    /// Override entries by `key`: kiln's rule that a key is given once and is not empty (an
    /// override that names no variable, or names one twice, is a mistake).
    fn keyed_list(&mut self, list: Vec<Map<String, Value>>, at: &FieldPath) -> KeyedList {
        let mut out = KeyedList::default();
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        for (i, e) in list.into_iter().enumerate() {
            let k_at = at.index(i).key("key");
            let key = e
                .get("key")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if key.is_empty() {
                self.invalid(
                    &k_at,
                    "key is required",
                    "every entry is identified by its key",
                );
                continue;
            }
            if let Some(prev) = seen.insert(key.clone(), i) {
                self.invalid(
                    &k_at,
                    format!("key {key:?} is overridden twice (entries {prev} and {i})"),
                    "give each key one override",
                );
                continue;
            }
            out.entries.push((key, Value::Object(e)));
        }
        out
    }
}

/// The key of a snapshot's embedded type (`componentTypeDefinition` in the proposal text,
/// `componentType` in the first implementation).
pub(crate) const SNAPSHOT_TYPE_KEYS: [&str; 2] = ["componentTypeDefinition", "componentType"];

/// The spec of a ComponentEnvSnapshot (kiln's schema): the embedded definitions are whole
/// objects, each read by its own kind's reader. Fields the schema requires are optional here so
/// an envelope that does not conform is still read ([`crd::unchecked`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotSpec {
    #[serde(default)]
    owner: ProposalOwner,
    environment: Option<String>,
    component_type_definition: Option<Value>,
    component_type: Option<Value>,
    component: Option<Value>,
    workload: Option<Value>,
    #[serde(default)]
    addons: Vec<Value>,
}

/// Read a ComponentEnvSnapshot: kiln's schema of it, then the objects embedded in it.
pub(crate) fn snapshot_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<SnapshotDef<'a>> {
    let before = errors.len();
    let kind = "ComponentEnvSnapshot";
    let spec: SnapshotSpec =
        crd::spec(&loc, kind, v, errors).or_else(|| crd::unchecked(kind, v))?;
    let mut s = Semantic { loc: &loc, errors };
    let [ctd, ct] = SNAPSHOT_TYPE_KEYS;
    let ty = match (spec.component_type_definition, spec.component_type) {
        // The digest covers one of them; the other would be neither checked nor rendered.
        (Some(_), Some(_)) => {
            s.invalid(
                &spec_path(ct),
                format!("both spec.{ctd} and spec.{ct} are set"),
                format!("keep spec.{ctd}, as kiln snapshot create writes it"),
            );
            None
        }
        (Some(x), None) => Some((x, spec_path(ctd))),
        (None, Some(x)) => Some((x, spec_path(ct))),
        (None, None) => {
            s.invalid(
                &spec_path(ctd),
                format!("spec.{ctd} must embed a full ComponentTypeDefinition object"),
                "create snapshots with kiln snapshot create",
            );
            None
        }
    };
    let t = ty
        .and_then(|(x, at)| s.embedded(x, at, Family::ComponentType, "a ComponentTypeDefinition"));
    let c = (spec.component)
        .and_then(|x| s.embedded(x, spec_path("component"), Family::Component, "a Component"));
    let w = (spec.workload)
        .and_then(|x| s.embedded(x, spec_path("workload"), Family::Workload, "a Workload"));
    let a: Vec<_> = (spec.addons.into_iter().enumerate())
        .filter_map(|(i, x)| s.embedded(x, spec_path("addons").index(i), Family::Trait, "an Addon"))
        .collect();
    let addons: Vec<_> = (a.into_iter())
        .filter_map(|(x, at)| trait_def(loc.nested(&at), &x, errors))
        .collect();
    let type_def = t.and_then(|(x, at)| type_def(loc.nested(&at), &x, errors));
    let component =
        c.and_then(|(x, at)| component_def(loc.nested(&at), Cow::Owned(x), None, errors));
    let workload = w.and_then(|(x, at)| workload_def(loc.nested(&at), Cow::Owned(x), None, errors));
    if errors.len() > before {
        return None;
    }
    let (component, component_name) = (component?, spec.owner.component_name?);
    if component_name != component.name {
        errors.push(loc.error(
            codes::COMPONENT_INVALID,
            &spec_path("owner").key("componentName"),
            format!(
                "owner.componentName {component_name:?} differs from the embedded component {:?}",
                component.name
            ),
            "create snapshots with kiln snapshot create",
        ));
        return None;
    }
    Some(SnapshotDef {
        loc: loc.clone(),
        component_name,
        environment: spec.environment?,
        type_def: type_def?,
        component,
        addons,
        workload: workload?,
    })
}

impl Semantic<'_, '_> {
    /// A definition a snapshot embeds at `at`, which must be an object of `family` (`want`).
    fn embedded(
        &mut self,
        x: Value,
        at: FieldPath,
        family: Family,
        want: &str,
    ) -> Option<(Value, FieldPath)> {
        // Not an object: the schema has said so.
        let kind = x.as_object()?.get("kind").and_then(Value::as_str);
        if kind.and_then(Family::of_embedded) != Some(family) {
            self.invalid(
                &at.key("kind"),
                format!("{at} must embed {want}"),
                "create snapshots with kiln snapshot create",
            );
            return None;
        }
        Some((x, at))
    }
}

/// The spec of a current upstream ComponentRelease (`ComponentReleaseSpec`). The frozen type's
/// and traits' specs and the workload are validated by the readers of their own kinds.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseSpec {
    owner: ReleaseOwner,
    component_type: Frozen,
    #[serde(default)]
    traits: Vec<Frozen>,
    #[serde(default)]
    component_profile: Map<String, Value>,
    workload: Value,
}

/// `spec.owner` of a ComponentRelease.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ReleaseOwner {
    project_name: String,
    component_name: String,
}

/// A frozen definition of a ComponentRelease: `{kind, name, spec}`.
#[derive(Deserialize)]
struct Frozen {
    kind: String,
    name: String,
    spec: Value,
}

/// What a ComponentRelease's spec holds, whichever version wrote it: the frozen type, traits,
/// component profile and workload, each with where it is.
struct ReleaseParts<'a> {
    project: Option<String>,
    component_name: String,
    ty: (Value, Loc<'a>),
    traits: Vec<(Value, Loc<'a>)>,
    profile: Map<String, Value>,
    /// `None` when missing (reported), so the other frozen definitions are still read.
    workload: Option<Value>,
}

/// Whether a ComponentRelease is its first version: a bare ComponentType spec (no `spec` inside
/// `componentType`) or traits as a map. Anything else is read as current upstream, through its
/// CRD.
fn first_version_release(v: &Value) -> bool {
    let spec = v.get("spec");
    let ct = spec.and_then(|s| s.get("componentType"));
    let bare_type = ct.and_then(Value::as_object).is_some_and(|m| {
        !m.contains_key("spec") && (m.contains_key("workloadType") || m.contains_key("resources"))
    });
    bare_type
        || spec
            .and_then(|s| s.get("traits"))
            .is_some_and(Value::is_object)
}

/// A definition a release froze, as an object of its kind named `name`.
fn frozen_object(kind: &str, name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": super::API_VERSION,
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// Read a ComponentRelease. Current upstream embeds `componentType: {kind, name, spec}` and
/// `traits: [{kind, name, spec}]`; its first version embedded the bare ComponentType spec and a
/// map of trait name → spec. Both are read. The component profile (`parameters`, `traits[]`) and
/// the frozen workload (a Workload spec) become a Component and a Workload named after
/// `spec.owner.componentName`, so a release renders through the same path as live definitions.
pub(crate) fn release_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ReleaseDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let parts = if first_version_release(v) {
        first_release_parts(&loc, v, name.as_deref().unwrap_or_default(), errors)
    } else {
        upstream_release_parts(&loc, v, errors)
    };
    // The frozen definitions are read even after a problem above, so every error is reported.
    let (name, parts) = (name?, parts?);
    let ReleaseParts {
        project,
        component_name,
        ty: (ty_value, ty_loc),
        traits,
        profile,
        workload,
    } = parts;
    let type_def = type_def(ty_loc, &ty_value, errors);
    let mut addons = Vec::new();
    let mut names: BTreeMap<String, FieldPath> = BTreeMap::new();
    for (obj, tloc) in traits {
        if let Some(a) = trait_def(tloc.clone(), &obj, errors) {
            if let Some(prev) = names.get(&a.name) {
                errors.push(tloc.error(
                    codes::DUPLICATE_DEFINITION,
                    &FieldPath::root(),
                    format!("trait {:?} is frozen twice (first at {prev})", a.name),
                    "a ComponentRelease holds each trait once",
                ));
                continue;
            }
            names.insert(a.name.clone(), tloc.base.clone());
            addons.push(a);
        }
    }
    let type_def = type_def?;
    let mut comp_spec = serde_json::Map::new();
    if let Some(pr) = &project {
        comp_spec.insert("owner".into(), json!({ "projectName": pr }));
    }
    comp_spec.insert(
        "componentType".into(),
        json!(format!("{}/{}", type_def.workload_type, type_def.name)),
    );
    for key in ["parameters", "traits"] {
        if let Some(x) = profile.get(key) {
            comp_spec.insert(key.into(), x.clone());
        }
    }
    let mut comp_md = serde_json::Map::new();
    comp_md.insert("name".into(), json!(component_name));
    if let Some(ns) = &namespace {
        comp_md.insert("namespace".into(), json!(ns));
    }
    let comp_obj = json!({
        "apiVersion": super::API_VERSION,
        "kind": "Component",
        "metadata": Value::Object(comp_md),
        "spec": Value::Object(comp_spec),
    });
    let prof_at = spec_path("componentProfile");
    let component = component_def(
        loc.nested_spec(&prof_at),
        Cow::Owned(comp_obj),
        None,
        errors,
    );
    let wl_at = spec_path("workload");
    let workload = workload.and_then(|w| {
        if w.get("kind").and_then(Value::as_str) == Some("Workload") {
            workload_def(loc.nested(&wl_at), Cow::Owned(w), None, errors)
        } else {
            let obj = frozen_object("Workload", &component_name, w);
            workload_def(loc.nested_spec(&wl_at), Cow::Owned(obj), None, errors)
        }
    });
    if errors.len() > before {
        return None;
    }
    Some(ReleaseDef {
        loc: loc.clone(),
        name,
        namespace,
        component_name,
        type_def,
        component: component?,
        addons,
        workload: workload?,
    })
}

/// The parts of a current upstream ComponentRelease: its CRD (owner, the frozen type's and
/// traits' `{kind, name, spec}`, the profile), then the frozen definitions as objects of their
/// kinds, read (and validated) by their own readers.
fn upstream_release_parts<'a>(
    loc: &Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ReleaseParts<'a>> {
    let spec: ReleaseSpec = crd::spec(loc, "ComponentRelease", v, errors)?;
    let ct_at = spec_path("componentType");
    let ct = spec.component_type;
    // `name` may be `deployment/web-app`; the type is named by its last part.
    let short = ct.name.rsplit('/').next().unwrap_or_default();
    if short.is_empty() {
        errors.push(loc.error(
            codes::COMPONENT_INVALID,
            &ct_at.key("name"),
            format!("componentType.name {:?} names no ComponentType", ct.name),
            "the ComponentType's name, e.g. deployment/web-app",
        ));
        return None;
    }
    let ty = (frozen_object(&ct.kind, short, ct.spec), loc.nested(&ct_at));
    let traits = (spec.traits.into_iter().enumerate())
        .map(|(i, t)| {
            let at = spec_path("traits").index(i);
            (frozen_object(&t.kind, &t.name, t.spec), loc.nested(&at))
        })
        .collect();
    Some(ReleaseParts {
        project: Some(spec.owner.project_name),
        component_name: spec.owner.component_name,
        ty,
        traits,
        profile: spec.component_profile,
        workload: Some(spec.workload),
    })
}

/// The key of kiln's schema of a first-version ComponentRelease in
/// `core/data/proposal/schemas.json` (a current one is upstream's CRD).
const FIRST_RELEASE: &str = "ProposalComponentRelease";

/// The spec of a first-version ComponentRelease (kiln's schema). The frozen type, traits and
/// workload are read by their own kinds' readers, and the profile by the Component's, so the
/// schema leaves them free. Fields the schema requires are optional here so an envelope that
/// does not conform is still read ([`crd::unchecked`]).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FirstReleaseSpec {
    #[serde(default)]
    owner: ProposalOwner,
    component_type: Option<Map<String, Value>>,
    /// A map of trait name → spec, or (beside a bare type) current upstream's
    /// `[{kind, name, spec}]`: a shape no structural schema states, so it is read here.
    traits: Option<Value>,
    #[serde(default)]
    component_profile: Map<String, Value>,
    workload: Option<Map<String, Value>>,
}

/// The parts of a first-version ComponentRelease: the bare ComponentType spec (named after the
/// release) and a map of trait name → spec, which froze the first implementation's definitions
/// and render with the proposal's context.
fn first_release_parts<'a>(
    loc: &Loc<'a>,
    v: &Value,
    release_name: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<ReleaseParts<'a>> {
    let spec: FirstReleaseSpec =
        crd::spec(loc, FIRST_RELEASE, v, errors).or_else(|| crd::unchecked(FIRST_RELEASE, v))?;
    let mut s = Semantic { loc, errors };
    let ct_at = spec_path("componentType");
    let ty = spec.component_type.map(|m| {
        (
            frozen_object("ComponentTypeDefinition", release_name, Value::Object(m)),
            loc.nested_spec(&ct_at),
        )
    });
    let tr_at = spec_path("traits");
    let mut traits = Vec::new();
    match spec.traits {
        None => {}
        Some(Value::Array(items)) => {
            for (i, t) in items.into_iter().enumerate() {
                let at = tr_at.index(i);
                let tname = t.get("name").and_then(Value::as_str).unwrap_or("");
                let spec = t.get("spec").filter(|x| x.is_object());
                let (false, Some(spec)) = (tname.is_empty(), spec) else {
                    s.invalid(
                        &at,
                        "a frozen trait needs a name and a spec",
                        "write {kind: Trait, name: NAME, spec: {...}}",
                    );
                    continue;
                };
                let kind = t.get("kind").and_then(Value::as_str).unwrap_or("Trait");
                traits.push((frozen_object(kind, tname, spec.clone()), loc.nested(&at)));
            }
        }
        Some(Value::Object(m)) => {
            for (tname, spec) in m {
                let at = tr_at.key(&tname);
                if !spec.is_object() {
                    s.invalid(
                        &at,
                        format!("the frozen spec of trait {tname:?} must be a map"),
                        "write the Trait's spec",
                    );
                    continue;
                }
                traits.push((frozen_object("Addon", &tname, spec), loc.nested_spec(&at)));
            }
        }
        Some(other) => s.invalid(
            &tr_at,
            format!("spec.traits must be a list, not {}", type_word(&other)),
            "write [{kind: Trait, name: NAME, spec: {...}}]",
        ),
    }
    Some(ReleaseParts {
        project: spec.owner.project_name,
        component_name: spec.owner.component_name?,
        ty: ty?,
        traits,
        profile: spec.component_profile,
        workload: spec.workload.map(Value::Object),
    })
}

/// An upstream ProjectType or ClusterProjectType: what upstream's project pipeline
/// (`internal/pipeline/project`) renders for each ProjectReleaseBinding of a Project of the type.
#[derive(Debug, Clone)]
pub(crate) struct ProjectTypeDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    /// ClusterProjectType.
    pub cluster: bool,
    pub schemas: Schemas,
    pub validations: Vec<Validation>,
    pub resources: Vec<ResourceTpl>,
}

/// The spec of a ProjectType or ClusterProjectType (`ProjectTypeSpec`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectTypeSpec {
    parameters: Option<Value>,
    environment_configs: Option<Value>,
    #[serde(default)]
    validations: Vec<RuleSpec>,
    resources: Vec<TemplateSpec>,
}

/// Read a ProjectType or ClusterProjectType: its CRD (at least one resource, ids unique, `var`
/// with `forEach` by its CEL rule), then control fields that are one `${…}` each.
pub(crate) fn project_type_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ProjectTypeDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let cluster = v.get("kind").and_then(Value::as_str) == Some("ClusterProjectType");
    let kind = if cluster {
        "ClusterProjectType"
    } else {
        "ProjectType"
    };
    let spec: ProjectTypeSpec = crd::spec(&loc, kind, v, errors)?;
    let mut s = Semantic { loc: &loc, errors };
    let schemas = s.schemas(
        spec.parameters.as_ref(),
        spec.environment_configs.as_ref(),
        &FieldPath::root().key("spec"),
    );
    let validations = s.rules(spec.validations, &spec_path("validations"));
    let resources = (spec.resources.into_iter().enumerate())
        .map(|(i, t)| s.template(t, spec_path("resources").index(i), None))
        .collect();
    if errors.len() > before {
        return None;
    }
    Some(ProjectTypeDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        cluster,
        schemas,
        validations,
        resources,
    })
}

/// An upstream ProjectReleaseBinding: a Project deployed to an environment.
#[derive(Debug, Clone)]
pub(crate) struct ProjectBindingDef<'a> {
    pub loc: Loc<'a>,
    pub namespace: Option<String>,
    pub project: String,
    pub environment: String,
    pub env_configs: Value,
    pub annotations: Value,
}

/// The spec of a ProjectReleaseBinding (`ProjectReleaseBindingSpec`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectBindingSpec {
    owner: ProjectOwner,
    environment: String,
    project_release: Option<String>,
}

/// `spec.owner` of the kinds a project owns.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProjectOwner {
    project_name: String,
}

/// Read a ProjectReleaseBinding. `spec.projectRelease` names a frozen ProjectRelease, which kiln
/// does not read (it renders from the live Project and its type), so it is refused.
pub(crate) fn project_binding_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ProjectBindingDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let env_configs = r.map(v, &spec_path("environmentConfigs"));
    let annotations = r.map(v, &metadata_path("annotations"));
    let spec: Option<ProjectBindingSpec> = crd::spec(&loc, "ProjectReleaseBinding", v, errors);
    if spec.as_ref().is_some_and(|s| s.project_release.is_some()) {
        errors.push(loc.error(
            codes::UNSUPPORTED_FEATURE,
            &spec_path("projectRelease"),
            "ProjectReleaseBinding spec.projectRelease names a frozen ProjectRelease, which kiln does not read",
            "kiln renders a project binding from the live Project and its (Cluster)ProjectType; leave projectRelease unset (upstream's Project controller then seeds it with the latest release, which is what the live definitions render)",
        ));
    }
    if errors.len() > before {
        return None;
    }
    let spec = spec?;
    Some(ProjectBindingDef {
        loc: loc.clone(),
        namespace,
        project: spec.owner.project_name,
        environment: spec.environment,
        env_configs,
        annotations,
    })
}

/// An upstream ResourceType or ClusterResourceType: what upstream's resource pipeline
/// (`internal/pipeline/resource`) renders for each ResourceReleaseBinding of a Resource of the
/// type, and the outputs a component's resource dependency reads.
#[derive(Debug, Clone)]
pub(crate) struct ResourceTypeDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    /// ClusterResourceType.
    pub cluster: bool,
    pub schemas: Schemas,
    pub resources: Vec<ResourceTpl>,
    /// `readyWhen` of each resource (the expression inside `${…}`, its path): read at load and
    /// type-checked, never evaluated (it gates readiness in a cluster, not what renders).
    pub ready_when: Vec<(String, FieldPath)>,
    pub outputs: Vec<ResourceOutput>,
}

/// One `spec.outputs` entry of a resource type (`ResourceTypeOutput`): exactly one source.
#[derive(Debug, Clone)]
pub(crate) struct ResourceOutput {
    pub name: String,
    pub source: OutputSource,
    /// Path of the entry (`spec.outputs[0]`).
    pub at: FieldPath,
}

/// Where an output's value comes from; each string is a template (`${…}` or literal text).
#[derive(Debug, Clone)]
pub(crate) enum OutputSource {
    Value(String),
    SecretKeyRef { name: String, key: String },
    ConfigMapKeyRef { name: String, key: String },
}

/// The spec of a ResourceType or ClusterResourceType (`ResourceTypeSpec`), also frozen in a
/// ResourceRelease. `retainPolicy` only decides what deletion keeps: the schema checks it,
/// nothing renders from it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceTypeSpec {
    parameters: Option<Value>,
    environment_configs: Option<Value>,
    resources: Vec<ResourceEntrySpec>,
    #[serde(default)]
    outputs: Vec<OutputSpec>,
}

/// One `spec.resources` entry of a resource type (`ResourceTypeManifest`): no forEach, no
/// targetPlane, unlike a component type's.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceEntrySpec {
    id: String,
    include_when: Option<String>,
    ready_when: Option<String>,
    template: Value,
}

/// One `spec.outputs` entry (`ResourceTypeOutput`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct OutputSpec {
    name: String,
    value: Option<String>,
    secret_key_ref: Option<KeyRefSpec>,
    config_map_key_ref: Option<KeyRefSpec>,
}

/// An output's `secretKeyRef` / `configMapKeyRef`.
#[derive(Deserialize)]
struct KeyRefSpec {
    name: String,
    key: String,
}

/// Read a ResourceType or ClusterResourceType.
pub(crate) fn resource_type_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ResourceTypeDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let cluster = v.get("kind").and_then(Value::as_str) == Some("ClusterResourceType");
    let kind = if cluster {
        "ClusterResourceType"
    } else {
        "ResourceType"
    };
    let spec: ResourceTypeSpec = crd::spec(&loc, kind, v, errors)?;
    let spec_at = FieldPath::root().key("spec");
    let parts = Semantic { loc: &loc, errors }.resource_type(spec, &spec_at);
    if errors.len() > before {
        return None;
    }
    Some(ResourceTypeDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        cluster,
        schemas: parts.schemas,
        resources: parts.resources,
        ready_when: parts.ready_when,
        outputs: parts.outputs,
    })
}

/// What a resource type's spec renders from (a type's, or one a ResourceRelease froze).
struct ResourceTypeParts {
    schemas: Schemas,
    resources: Vec<ResourceTpl>,
    ready_when: Vec<(String, FieldPath)>,
    outputs: Vec<ResourceOutput>,
}

impl Semantic<'_, '_> {
    /// The semantic rules of a resource type's spec at `spec_at` (its CRD has checked the
    /// shape, ids and output names unique, at least one resource): control fields that are one
    /// `${…}` each, and exactly one source per output (the CRD's CEL rule).
    fn resource_type(&mut self, spec: ResourceTypeSpec, spec_at: &FieldPath) -> ResourceTypeParts {
        let schemas = self.schemas(
            spec.parameters.as_ref(),
            spec.environment_configs.as_ref(),
            spec_at,
        );
        let mut resources = Vec::new();
        let mut ready_when = Vec::new();
        for (i, e) in spec.resources.into_iter().enumerate() {
            let at = spec_at.key("resources").index(i);
            if let Some(rw) = self.control(e.ready_when.as_deref(), &at.key("readyWhen")) {
                ready_when.push((rw, at.key("readyWhen")));
            }
            let t = TemplateSpec {
                id: Some(e.id),
                target_plane: None,
                include_when: e.include_when,
                for_each: None,
                var: None,
                template: e.template,
            };
            resources.push(self.template(t, at, None));
        }
        let outputs = (spec.outputs.into_iter().enumerate())
            .filter_map(|(i, o)| self.output(o, spec_at.key("outputs").index(i)))
            .collect();
        ResourceTypeParts {
            schemas,
            resources,
            ready_when,
            outputs,
        }
    }

    /// One output: exactly one of `value`, `secretKeyRef`, `configMapKeyRef` (the CRD's CEL
    /// rule).
    fn output(&mut self, o: OutputSpec, at: FieldPath) -> Option<ResourceOutput> {
        let set: Vec<&str> = [
            ("value", o.value.is_some()),
            ("secretKeyRef", o.secret_key_ref.is_some()),
            ("configMapKeyRef", o.config_map_key_ref.is_some()),
        ]
        .into_iter()
        .filter_map(|(k, given)| given.then_some(k))
        .collect();
        let source = match (o.value, o.secret_key_ref, o.config_map_key_ref) {
            (Some(v), None, None) => OutputSource::Value(v),
            (None, Some(r), None) => OutputSource::SecretKeyRef {
                name: r.name,
                key: r.key,
            },
            (None, None, Some(r)) => OutputSource::ConfigMapKeyRef {
                name: r.name,
                key: r.key,
            },
            _ => {
                self.invalid(
                    &at,
                    format!(
                        "an output needs exactly one of value, secretKeyRef, configMapKeyRef (has {})",
                        if set.is_empty() {
                            "none".to_string()
                        } else {
                            set.join(", ")
                        }
                    ),
                    "upstream's CRD rule: exactly one source per output",
                );
                return None;
            }
        };
        Some(ResourceOutput {
            name: o.name,
            source,
            at,
        })
    }
}

/// An upstream ResourceRelease: the frozen type and parameters a binding's `spec.resourceRelease`
/// pins (what upstream's binding controller renders: `buildResourceTypeFromRelease`,
/// `buildResourceFromRelease`).
#[derive(Debug, Clone)]
pub(crate) struct ResourceReleaseDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    pub project: String,
    pub resource: String,
    /// The frozen type: `kind`/`name` from `spec.resourceType`, the rest from its `spec`; its
    /// `loc` is the release's, its paths under `spec.resourceType.spec`.
    pub type_def: ResourceTypeDef<'a>,
    pub parameters: Value,
}

/// The spec of a ResourceRelease (`ResourceReleaseSpec`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceReleaseSpec {
    owner: ResourceOwner,
    resource_type: FrozenResourceType,
    parameters: Option<Value>,
}

/// A ResourceRelease's `spec.resourceType`: the CRD requires all three.
#[derive(Deserialize)]
struct FrozenResourceType {
    kind: String,
    name: String,
    spec: ResourceTypeSpec,
}

/// Read a ResourceRelease: its CRD (which validates the frozen type's spec as a
/// ResourceType's), then the frozen type's semantic rules.
pub(crate) fn resource_release_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ResourceReleaseDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let spec: ResourceReleaseSpec = crd::spec(&loc, "ResourceRelease", v, errors)?;
    let mut s = Semantic { loc: &loc, errors };
    let rt = spec.resource_type;
    let parts = s.resource_type(rt.spec, &spec_path("resourceType").key("spec"));
    let parameters = s.map(spec.parameters, &spec_path("parameters"));
    if errors.len() > before {
        return None;
    }
    Some(ResourceReleaseDef {
        loc: loc.clone(),
        name: name?,
        namespace: namespace.clone(),
        project: spec.owner.project_name,
        resource: spec.owner.resource_name,
        type_def: ResourceTypeDef {
            loc: loc.clone(),
            name: rt.name,
            namespace,
            cluster: rt.kind == "ClusterResourceType",
            schemas: parts.schemas,
            resources: parts.resources,
            ready_when: parts.ready_when,
            outputs: parts.outputs,
        },
        parameters,
    })
}

/// An upstream Resource: an instance of a (Cluster)ResourceType owned by a project.
#[derive(Debug, Clone)]
pub(crate) struct ResourceDef<'a> {
    pub loc: Loc<'a>,
    pub name: String,
    pub namespace: Option<String>,
    pub project: String,
    /// `ResourceType` (the default) or `ClusterResourceType`.
    pub type_kind: String,
    pub type_name: String,
    pub parameters: Value,
}

/// The spec of a Resource (`ResourceSpec`).
#[derive(Deserialize)]
struct ResourceSpec {
    owner: ProjectOwner,
    #[serde(rename = "type")]
    type_ref: ResourceTypeRef,
}

/// A Resource's `spec.type`: the kind defaults to a namespaced ResourceType, as upstream's CRD
/// defaults it.
#[derive(Deserialize)]
struct ResourceTypeRef {
    #[serde(default = "resource_type_kind")]
    kind: String,
    name: String,
}

fn resource_type_kind() -> String {
    "ResourceType".into()
}

/// Read a Resource.
pub(crate) fn resource_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ResourceDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    let name = metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let parameters = r.map(v, &spec_path("parameters"));
    let spec: Option<ResourceSpec> = crd::spec(&loc, "Resource", v, errors);
    if errors.len() > before {
        return None;
    }
    let spec = spec?;
    Some(ResourceDef {
        loc: loc.clone(),
        name: name?,
        namespace,
        project: spec.owner.project_name,
        type_kind: spec.type_ref.kind,
        type_name: spec.type_ref.name,
        parameters,
    })
}

/// An upstream ResourceReleaseBinding: a Resource deployed to an environment.
#[derive(Debug, Clone)]
pub(crate) struct ResourceBindingDef<'a> {
    pub loc: Loc<'a>,
    pub namespace: Option<String>,
    pub project: String,
    pub resource: String,
    pub environment: String,
    /// `spec.resourceRelease`: the pinned ResourceRelease, rendered instead of the live Resource
    /// and type.
    pub release: Option<String>,
    pub env_configs: Value,
    pub annotations: Value,
}

/// The spec of a ResourceReleaseBinding (`ResourceReleaseBindingSpec`). `retainPolicy` only
/// decides what deletion keeps: the schema checks it, nothing renders from it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceBindingSpec {
    owner: ResourceOwner,
    environment: String,
    resource_release: Option<String>,
}

/// `spec.owner` of the kinds a Resource owns.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceOwner {
    project_name: String,
    resource_name: String,
}

/// Read a ResourceReleaseBinding. `spec.resourceRelease` pins a frozen ResourceRelease, which is
/// rendered instead of the live Resource and type (as upstream's controller does); unset, the
/// live ones render.
pub(crate) fn resource_binding_def<'a>(
    loc: Loc<'a>,
    v: &Value,
    errors: &mut Vec<Diagnostic>,
) -> Option<ResourceBindingDef<'a>> {
    let before = errors.len();
    let mut r = Reader { loc: &loc, errors };
    metadata_name(&mut r, v);
    let namespace = metadata_namespace(&mut r, v);
    let env_configs = r.map(v, &spec_path("resourceTypeEnvironmentConfigs"));
    let annotations = r.map(v, &metadata_path("annotations"));
    let spec: Option<ResourceBindingSpec> = crd::spec(&loc, "ResourceReleaseBinding", v, errors);
    if errors.len() > before {
        return None;
    }
    let spec = spec?;
    Some(ResourceBindingDef {
        loc: loc.clone(),
        namespace,
        project: spec.owner.project_name,
        resource: spec.owner.resource_name,
        environment: spec.environment,
        release: spec.resource_release.filter(|s| !s.is_empty()),
        env_configs,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    fn doc(text: &str) -> Document {
        parse_file("t.yaml", text.to_string(), &YamlLimits::default())
            .unwrap()
            .remove(0)
    }

    /// The (line, path) of every problem `read` finds in `text`, which it must refuse.
    fn refused(
        text: &str,
        read: fn(&Document, &mut Vec<Diagnostic>) -> bool,
    ) -> Vec<(Option<usize>, String)> {
        let d = doc(text);
        let mut errors = Vec::new();
        assert!(!read(&d, &mut errors), "read although refused: {errors:?}");
        lines(&errors)
    }

    /// What `read` makes of `text`, which it must read without a problem.
    fn read_clean<T>(
        text: &str,
        read: impl FnOnce(&Document, &mut Vec<Diagnostic>) -> Option<T>,
    ) -> T {
        let d = doc(text);
        let mut errors = Vec::new();
        let t = read(&d, &mut errors);
        assert!(errors.is_empty(), "{errors:?}");
        t.unwrap()
    }

    /// [`refused`], with the (line, path) of every problem `read` must find.
    fn refused_at(
        text: &str,
        read: fn(&Document, &mut Vec<Diagnostic>) -> bool,
        expected: &[(usize, &str)],
    ) {
        let want: Vec<_> = (expected.iter())
            .map(|(line, path)| (Some(*line), path.to_string()))
            .collect();
        assert_eq!(refused(text, read), want);
    }

    fn lines(errors: &[Diagnostic]) -> Vec<(Option<usize>, String)> {
        errors
            .iter()
            .map(|d| (d.line, d.path.clone().unwrap_or_default()))
            .collect()
    }

    #[test]
    fn resource_reads_with_the_crd_default_kind() {
        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: Resource\nmetadata: {name: db, namespace: team}\nspec:\n  owner: {projectName: shop}\n  type: {name: postgres}\n  parameters: {size: 1}\n");
        let mut errors = Vec::new();
        let r = resource_def(Loc::new(&d), &d.value, &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            (r.name.as_str(), r.project.as_str(), r.type_kind.as_str()),
            ("db", "shop", "ResourceType")
        );
        assert_eq!(r.type_name, "postgres");
        assert_eq!(r.parameters, json!({"size": 1}));
    }

    /// Every schema violation and every semantic problem of one document, at once, each at its
    /// line.
    #[test]
    fn resource_reports_every_problem() {
        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: Resource\nmetadata: {name: db}\nspec:\n  owner: {}\n  type: {kind: Database, name: postgres}\n  parameters: 3\n  colour: red\n");
        let mut errors = Vec::new();
        assert!(resource_def(Loc::new(&d), &d.value, &mut errors).is_none());
        assert_eq!(
            lines(&errors),
            vec![
                (Some(7), "spec.parameters".to_string()),
                (Some(8), "spec.colour".to_string()),
                (Some(5), "spec.owner.projectName".to_string()),
                (Some(6), "spec.type.kind".to_string()),
            ]
        );
        assert_eq!(errors[1].code, codes::UNSUPPORTED_FEATURE);
    }

    #[test]
    fn project_binding_refuses_a_pinned_release() {
        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: ProjectReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop}\n  environment: dev\n  projectRelease: shop-1\n");
        let mut errors = Vec::new();
        assert!(project_binding_def(Loc::new(&d), &d.value, &mut errors).is_none());
        assert_eq!(
            lines(&errors),
            vec![(Some(7), "spec.projectRelease".to_string())]
        );
        assert_eq!(errors[0].code, codes::UNSUPPORTED_FEATURE);

        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: ProjectReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop}\n  environment: dev\n  environmentConfigs: {quota: 2}\n");
        let mut errors = Vec::new();
        let b = project_binding_def(Loc::new(&d), &d.value, &mut errors).unwrap();
        assert_eq!(
            (b.project.as_str(), b.environment.as_str()),
            ("shop", "dev")
        );
        assert_eq!(b.env_configs, json!({"quota": 2}));
    }

    #[test]
    fn resource_binding_reads_an_empty_release_as_live() {
        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: ResourceReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop, resourceName: db}\n  environment: dev\n  resourceRelease: \"\"\n  retainPolicy: Retain\n");
        let mut errors = Vec::new();
        let b = resource_binding_def(Loc::new(&d), &d.value, &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(b.release, None);
        assert_eq!((b.resource.as_str(), b.environment.as_str()), ("db", "dev"));

        assert_eq!(
            refused("apiVersion: openchoreo.dev/v1alpha1\nkind: ResourceReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop}\n  environment: \"\"\n", |d, e| resource_binding_def(Loc::new(d), &d.value, e).is_some()),
            vec![
                (Some(6), "spec.environment".to_string()),
                (Some(5), "spec.owner.resourceName".to_string()),
            ]
        );
    }

    /// A ReleaseBinding: its CRD (which requires `owner.projectName`), `container.resources`
    /// read although the CRD lacks it, and kiln's rules once the schema holds.
    #[test]
    fn release_binding_reads_through_its_crd() {
        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: ReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop, componentName: api}\n  environment: dev\n  releaseName: \"\"\n  traitEnvironmentConfigs: {logs: {level: debug}}\n  workloadOverrides:\n    container:\n      env: [{key: A, value: \"1\"}]\n      resources: {limits: {cpu: \"1\"}}\n");
        let mut errors = Vec::new();
        let b = release_binding_def(Loc::new(&d), &d.value, None, &mut errors).unwrap();
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            (b.component.as_str(), b.environment.as_str()),
            ("api", "dev")
        );
        assert_eq!(b.release_name, None);
        assert_eq!(b.overrides, json!({}));
        assert_eq!(b.addon_overrides["logs"].0, json!({"level": "debug"}));
        let wo = b.workload_overrides.unwrap();
        assert_eq!(wo.env.entries[0].0, "A");
        assert_eq!(wo.resources, Some(json!({"limits": {"cpu": "1"}})));

        assert_eq!(
            refused("apiVersion: openchoreo.dev/v1alpha1\nkind: ReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {componentName: api}\n  environment: dev\n  state: Paused\n", |d, e| release_binding_def(Loc::new(d), &d.value, None, e).is_some()),
            vec![
                (Some(5), "spec.owner.projectName".to_string()),
                (Some(7), "spec.state".to_string()),
            ]
        );

        let d = doc("apiVersion: openchoreo.dev/v1alpha1\nkind: ReleaseBinding\nmetadata: {name: b}\nspec:\n  owner: {projectName: shop, componentName: api}\n  environment: dev\n  state: Undeploy\n  workloadOverrides: {replicas: 2}\n");
        let mut errors = Vec::new();
        assert!(release_binding_def(Loc::new(&d), &d.value, None, &mut errors).is_none());
        assert_eq!(
            lines(&errors),
            vec![
                (Some(7), "spec.state".to_string()),
                (Some(8), "spec.workloadOverrides.replicas".to_string()),
            ]
        );
        assert_eq!(errors[0].code, codes::UNSUPPORTED_FEATURE);
    }

    /// A ResourceRelease through its CRD: the frozen type's `kind` is required, and its spec is
    /// validated as a ResourceType's, then by the CEL rule of one source per output.
    #[test]
    fn resource_release_reads_through_its_crd() {
        let head = "apiVersion: openchoreo.dev/v1alpha1\nkind: ResourceRelease\nmetadata: {name: r}\nspec:\n  owner: {projectName: shop, resourceName: db}\n";
        assert_eq!(
            refused(&format!("{head}  resourceType:\n    name: pg\n    spec:\n      resources: [{{id: a, template: {{}}}}]\n"), |d, e| resource_release_def(Loc::new(d), &d.value, e).is_some()),
            vec![(Some(6), "spec.resourceType.kind".to_string())]
        );

        assert_eq!(
            refused(&format!("{head}  resourceType:\n    kind: ClusterResourceType\n    name: pg\n    spec:\n      resources: [{{id: a, template: {{}}, readyWhen: \"${{true}}\"}}]\n      outputs:\n        - {{name: host, value: h}}\n        - {{name: both, value: h, configMapKeyRef: {{name: cm, key: k}}}}\n"), |d, e| resource_release_def(Loc::new(d), &d.value, e).is_some()),
            vec![(Some(13), "spec.resourceType.spec.outputs[1]".to_string())]
        );

        let d = doc(&format!("{head}  resourceType:\n    kind: ClusterResourceType\n    name: pg\n    spec:\n      resources: [{{id: a, template: {{}}, readyWhen: \"${{true}}\"}}]\n      outputs: [{{name: host, secretKeyRef: {{name: sec, key: k}}}}]\n  parameters: {{size: 1}}\n"));
        let mut errors = Vec::new();
        let r = resource_release_def(Loc::new(&d), &d.value, &mut errors).unwrap();
        assert!(r.type_def.cluster);
        assert_eq!(r.type_def.ready_when[0].0, "true");
        assert!(matches!(
            r.type_def.outputs[0].source,
            OutputSource::SecretKeyRef { .. }
        ));
        assert_eq!(r.parameters, json!({"size": 1}));
    }

    /// A ProjectType's resource with forEach and no var: the CRD's CEL rule.
    #[test]
    fn project_type_needs_var_with_for_each() {
        assert_eq!(
            refused("apiVersion: openchoreo.dev/v1alpha1\nkind: ClusterProjectType\nmetadata: {name: t}\nspec:\n  resources:\n    - {id: ns, template: {}}\n    - {id: a, forEach: \"${[1]}\", template: {}}\n", |d, e| project_type_def(Loc::new(d), &d.value, e).is_some()),
            vec![(Some(7), "spec.resources[1].var".to_string())]
        );
    }

    /// A current ComponentRelease's envelope through its CRD; the frozen type is validated once,
    /// by the ComponentType reader, at its place in the release.
    #[test]
    fn component_release_envelope_reads_through_its_crd() {
        assert_eq!(
            refused("apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentRelease\nmetadata: {name: r}\nspec:\n  owner: {componentName: web}\n  componentType:\n    kind: ComponentType\n    name: deployment/web\n    spec: {workloadType: deployment, colour: red, resources: [{id: deployment, template: {}}]}\n  workload: {}\n", |d, e| release_def(Loc::new(d), &d.value, e).is_some()),
            vec![(Some(5), "spec.owner.projectName".to_string())]
        );

        assert_eq!(
            refused("apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentRelease\nmetadata: {name: r}\nspec:\n  owner: {projectName: shop, componentName: web}\n  componentType:\n    kind: ComponentType\n    name: deployment/web\n    spec: {workloadType: deployment, colour: red, resources: [{id: deployment, template: {}}]}\n  workload: {}\n", |d, e| release_def(Loc::new(d), &d.value, e).is_some()),
            vec![(Some(9), "spec.componentType.spec.colour".to_string())]
        );
    }

    /// The proposal's Component through kiln's schema of it, then kiln's rules: one of
    /// `config` and `parameters`, instance names unique across `addons` and `traits`.
    #[test]
    fn proposal_component_reads_through_kilns_schema() {
        let read = |text: &str| {
            let d = doc(text);
            let mut errors = Vec::new();
            let c = component_def(Loc::new(&d), Cow::Borrowed(&d.value), None, &mut errors)
                .map(|c| (c.workload_type, c.type_name, c.addons.len(), c.build));
            (c, lines(&errors))
        };
        let head =
            "apiVersion: openchoreo.dev/v1alpha1\nkind: Component\nmetadata: {name: c}\nspec:\n";
        let (c, found) = read(&format!("{head}  componentType: deployment/web\n  build: {{image: x}}\n  addons: [{{name: a, instanceName: one, config: {{size: 1}}}}]\n  traits: [{{name: b, instanceName: two, parameters: {{}}}}]\n"));
        assert!(found.is_empty(), "{found:?}");
        assert_eq!(
            c.unwrap(),
            ("deployment".into(), "web".into(), 2, json!({"image": "x"}))
        );

        let (c, found) = read(&format!("{head}  componentType: web\n  colour: red\n"));
        assert!(c.is_none());
        assert_eq!(found, vec![(Some(6), "spec.colour".to_string())]);

        let (c, found) = read(&format!("{head}  componentType: web\n  addons:\n    - {{name: a, instanceName: one, config: {{}}, parameters: {{}}}}\n    - {{name: a, instanceName: two}}\n  traits:\n    - {{name: b, instanceName: two}}\n"));
        assert!(c.is_none());
        assert_eq!(
            found,
            vec![
                (Some(5), "spec.componentType".to_string()),
                (Some(7), "spec.addons[0].parameters".to_string()),
                (Some(10), "spec.traits[0].instanceName".to_string()),
            ]
        );
    }

    /// A ComponentEnvSnapshot through kiln's schema of it, then the definitions it embeds: read
    /// even when the envelope does not conform, so every error is reported at once.
    #[test]
    fn snapshot_reads_through_kilns_schema() {
        let head = "apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentEnvSnapshot\nmetadata: {name: s}\nspec:\n";
        let read = |d: &Document, e: &mut Vec<Diagnostic>| {
            snapshot_def(Loc::new(d), &d.value, e).is_some()
        };
        let ty = "{kind: ComponentTypeDefinition, metadata: {name: t}, spec: {workloadType: deployment, resources: [{id: deployment, template: {}}]}}";
        let wl = "{kind: Workload, metadata: {name: web}, spec: {image: nginx}}";
        let comp = "{kind: Component, metadata: {name: web}, spec: {componentType: deployment/t}}";
        let s = read_clean(&format!("{head}  owner: {{projectName: p, componentName: web}}\n  environment: dev\n  componentTypeDefinition: {ty}\n  component: {comp}\n  workload: {wl}\n  addons: [{{kind: Addon, metadata: {{name: a}}, spec: {{}}}}]\n"), |d, e| {
            snapshot_def(Loc::new(d), &d.value, e).map(|s| (s.component_name, s.environment, s.addons.len()))
        });
        assert_eq!(s, ("web".into(), "dev".into(), 1));

        let bad = "{kind: Component, metadata: {name: web}, spec: {componentType: web}}";
        refused_at(&format!("{head}  owner: {{componentName: web}}\n  colour: red\n  componentTypeDefinition: {ty}\n  component: {bad}\n  workload: {wl}\n"), read, &[(6, "spec.colour"), (4, "spec.environment"), (8, "spec.component.spec.componentType")]);
        refused_at(&format!("{head}  owner: {{componentName: web}}\n  environment: dev\n  componentTypeDefinition: {ty}\n  componentType: {ty}\n  component: {comp}\n  workload: {wl}\n  addons: [{comp}]\n"), read, &[(8, "spec.componentType"), (11, "spec.addons[0].kind")]);
    }

    /// A first-version ComponentRelease through kiln's schema of it, then its frozen
    /// definitions: read even when the envelope does not conform, so every error is reported at
    /// once; traits as a map of specs.
    #[test]
    fn first_version_release_reads_through_kilns_schema() {
        let head = "apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentRelease\nmetadata: {name: r}\nspec:\n";
        let read =
            |d: &Document, e: &mut Vec<Diagnostic>| release_def(Loc::new(d), &d.value, e).is_some();
        let r = read_clean(&format!("{head}  owner: {{projectName: p, componentName: web}}\n  componentType: {{workloadType: deployment, resources: [{{id: deployment, template: {{}}}}]}}\n  traits: {{label: {{}}}}\n  componentProfile: {{parameters: {{}}, traits: [{{name: label, instanceName: l}}]}}\n  workload: {{image: nginx}}\n"), |d, e| {
            release_def(Loc::new(d), &d.value, e).map(|r| (r.component_name, r.type_def.name, r.addons.len()))
        });
        assert_eq!(r, ("web".into(), "r".into(), 1));

        refused_at(&format!("{head}  owner: {{componentName: web}}\n  componentType: {{workloadType: deployment, resources: [{{id: deployment, forEach: \"${{x}}\", template: {{}}}}]}}\n  componentProfile: {{extra: 1}}\n  workload: {{image: nginx}}\n  colour: red\n"), read, &[(9, "spec.colour"), (7, "spec.componentProfile.extra"), (6, "spec.componentType.resources[0].var")]);
        refused_at(&format!("{head}  owner: {{componentName: web}}\n  componentType: {{workloadType: deployment, resources: [{{id: deployment, template: {{}}}}]}}\n  traits: {{a: 1}}\n"), read, &[(4, "spec.workload"), (7, "spec.traits.a")]);
    }

    /// The proposal's Workload through kiln's schema of it: a field it does not declare is a
    /// mistake (KLN6001); `containers`, `endpoints` and `connections` are a map or a list.
    #[test]
    fn proposal_workload_reads_through_kilns_schema() {
        let head =
            "apiVersion: openchoreo.dev/v1alpha1\nkind: Workload\nmetadata: {name: web}\nspec:\n";
        let workload = |spec: &str| {
            read_clean(&format!("{head}{spec}"), |d, e| {
                workload_def(Loc::new(d), Cow::Borrowed(&d.value), None, e)
                    .map(|w| (w.component, w.spec))
            })
        };
        let (component, spec) = workload("  owner: {componentName: api}\n  containers: {app: {image: nginx}}\n  endpoints: [{name: http, port: 80}]\n");
        assert_eq!(component, "api");
        assert_eq!(spec["containers"], json!({"app": {"image": "nginx"}}));
        let (component, _) = workload("  image: nginx\n");
        assert_eq!(
            component, "web",
            "without owner, the Workload names its Component"
        );

        let read = |d: &Document, e: &mut Vec<Diagnostic>| {
            let w = workload_def(Loc::new(d), Cow::Borrowed(&d.value), None, e);
            assert!(
                e.iter().all(|d| d.code == codes::COMPONENT_INVALID),
                "{e:?}"
            );
            w.is_some()
        };
        refused_at(
            &format!("{head}  image: [nginx]\n  colour: red\n"),
            read,
            &[(6, "spec.colour"), (5, "spec.image")],
        );
        assert_eq!(
            refused(
                &format!("{head}  containers: app\n  connections: [{{name: db}}]\n"),
                read
            ),
            vec![(Some(5), "spec.containers".to_string())]
        );
    }
}

#[cfg(test)]
mod type_tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    /// Each diagnostic's code, line and path.
    pub(super) type Found = Vec<(Code, Option<usize>, String)>;

    pub(super) fn found(errors: &[Diagnostic]) -> Found {
        errors
            .iter()
            .map(|e| (e.code, e.line, e.path.clone().unwrap_or_default()))
            .collect()
    }

    fn read(text: &str) -> (Option<TypeDef<'static>>, Found) {
        let d: &'static Document = Box::leak(Box::new(
            parse_file("t.yaml", text.to_string(), &YamlLimits::default())
                .unwrap()
                .remove(0),
        ));
        let mut errors = Vec::new();
        let t = type_def(Loc::new(d), &d.value, &mut errors);
        (t, found(&errors))
    }

    const HEAD: &str =
        "apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentType\nmetadata: {name: web}\nspec:\n";

    /// The proposal's ComponentTypeDefinition through kiln's schema of it, then the rules it
    /// shares with upstream's type (the workload-type constraint, unique ids).
    #[test]
    fn proposal_type_reads_through_kilns_schema() {
        let head = "apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentTypeDefinition\nmetadata: {name: web}\nspec:\n";
        let (t, f) = read(&format!("{head}  workloadType: deployment\n  schema: {{parameters: {{replicas: integer | default=1}}}}\n  resources:\n    - {{id: deployment, template: {{kind: Deployment}}}}\n"));
        assert!(f.is_empty(), "{f:?}");
        let t = t.unwrap();
        assert_eq!((t.model, t.resources.len()), (Model::Proposal, 1));

        let (t, f) = read(&format!("{head}  workloadType: deployment\n  colour: red\n  resources:\n    - {{template: {{kind: Deployment}}}}\n"));
        assert!(t.is_none());
        assert_eq!(
            f,
            vec![
                (codes::COMPONENT_INVALID, Some(6), "spec.colour".to_string()),
                (
                    codes::COMPONENT_INVALID,
                    Some(8),
                    "spec.resources[0].id".to_string()
                ),
            ]
        );

        let (t, f) = read(&format!("{head}  workloadType: job\n  resources:\n    - {{id: main, template: {{}}}}\n    - {{id: main, template: {{}}}}\n"));
        assert!(t.is_none());
        assert_eq!(
            f,
            vec![
                (
                    codes::WORKLOAD_TYPE,
                    Some(8),
                    "spec.resources[1].id".to_string()
                ),
                (codes::WORKLOAD_TYPE, Some(6), "spec.resources".to_string()),
            ]
        );
    }

    #[test]
    fn upstream_type_reads_with_the_crd_defaults() {
        let (t, errors) = read(&format!(
            "{HEAD}  workloadType: deployment\n  parameters: {{openAPIV3Schema: {{type: object, properties: {{replicas: {{type: integer, default: 1}}}}}}}}\n  validations: null\n  traits:\n    - {{name: sidecar, instanceName: s1, parameters: {{a: 1}}}}\n  postRenderValidations:\n    - target: {{group: apps, version: v1, kind: Deployment}}\n      rule: ${{true}}\n      message: m\n  resources:\n    - id: deployment\n      template: {{apiVersion: apps/v1, kind: Deployment}}\n    - id: svc\n      includeWhen: ${{parameters.replicas > 0}}\n      forEach: ${{[1, 2]}}\n      var: port\n      targetPlane: observabilityplane\n      template: {{apiVersion: v1, kind: Service}}\n"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        let t = t.unwrap();
        assert_eq!(t.model, Model::Upstream);
        assert_eq!(t.workload_type, "deployment");
        assert_eq!(t.resources.len(), 2);
        let svc = &t.resources[1];
        assert_eq!(svc.include_when.as_deref(), Some("parameters.replicas > 0"));
        assert_eq!(
            (svc.for_each.as_deref(), svc.var.as_str()),
            (Some("[1, 2]"), "port")
        );
        assert_eq!(svc.target_plane.as_deref(), Some("observabilityplane"));
        assert_eq!(svc.at.to_string(), "spec.resources[1]");
        assert_eq!(t.embedded[0].parameters, json!({"a": 1}));
        assert_eq!(t.embedded[0].environment_configs, json!({}));
        let pv = &t.post_validations[0];
        assert!(pv.must_match);
        assert_eq!(pv.target_plane, "dataplane");
        assert_eq!(pv.target.group.as_deref(), Some("apps"));
    }

    /// The CRD's violations come at once, each at its line; a field it does not declare is
    /// refused as KLN6026.
    #[test]
    fn upstream_type_reports_every_schema_violation() {
        let (t, errors) = read(&format!(
            "{HEAD}  workloadType: daemonset\n  resources:\n    - template: {{}}\n  colour: red\n"
        ));
        assert!(t.is_none());
        assert_eq!(
            errors,
            vec![
                (
                    codes::UNSUPPORTED_FEATURE,
                    Some(8),
                    "spec.colour".to_string()
                ),
                (
                    codes::COMPONENT_INVALID,
                    Some(7),
                    "spec.resources[0].id".to_string()
                ),
                (
                    codes::COMPONENT_INVALID,
                    Some(5),
                    "spec.workloadType".to_string()
                ),
            ]
        );
    }

    /// The rules the CRD states in CEL, and kiln's own, after the schema passes.
    #[test]
    fn upstream_type_semantic_rules() {
        let (t, errors) = read(&format!(
            "{HEAD}  workloadType: deployment\n  validations: [{{rule: \"${{true}}\", message: a}}]\n  preRenderValidations: [{{rule: \"${{true}}\", message: b}}]\n  traits: [{{name: a, instanceName: x}}, {{name: b, instanceName: x}}]\n  resources:\n    - id: svc\n      forEach: ${{[1]}}\n      template: {{}}\n    - id: svc\n      includeWhen: ${{a}} and ${{b}}\n      template: {{}}\n"
        ));
        assert!(t.is_none());
        assert_eq!(
            errors,
            vec![
                (
                    codes::COMPONENT_INVALID,
                    Some(10),
                    "spec.resources[0].var".to_string()
                ),
                (
                    codes::NOT_STANDALONE,
                    Some(14),
                    "spec.resources[1].includeWhen".to_string()
                ),
                (
                    codes::WORKLOAD_TYPE,
                    Some(13),
                    "spec.resources[1].id".to_string()
                ),
                (codes::WORKLOAD_TYPE, Some(9), "spec.resources".to_string()),
                (
                    codes::COMPONENT_INVALID,
                    Some(7),
                    "spec.preRenderValidations".to_string()
                ),
                (
                    codes::DUPLICATE_INSTANCE,
                    Some(8),
                    "spec.traits[1].instanceName".to_string()
                ),
            ]
        );
        // A workload type the CRD admits and kiln does not render.
        let (t, errors) = read(&format!(
            "{HEAD}  workloadType: proxy\n  resources: [{{id: x, template: {{}}}}]\n"
        ));
        assert!(t.is_none());
        assert_eq!(
            errors,
            vec![(
                codes::WORKLOAD_TYPE,
                Some(5),
                "spec.workloadType".to_string()
            )]
        );
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    fn addon(text: &str) -> (Option<TraitDef<'static>>, Vec<Diagnostic>) {
        let d: &'static Document = Box::leak(Box::new(
            parse_file("t.yaml", text.to_string(), &YamlLimits::default())
                .unwrap()
                .remove(0),
        ));
        let mut errors = Vec::new();
        (trait_def(Loc::new(d), &d.value, &mut errors), errors)
    }

    const PATCH: &str = "  patches:\n    - target: {version: v1, kind: Service}\n      operations: [{op: add, path: /a, value: 1}]\n";

    const TRAIT: &str =
        "apiVersion: openchoreo.dev/v1alpha1\nkind: ClusterTrait\nmetadata: {name: t}\nspec:\n";

    /// The proposal's Addon through kiln's schema of it: a missing `group` matches any group,
    /// ops are read without regard to case (`mergeShallow` among them), `var` defaults to
    /// `item`; every violation of the shape at once, then kiln's rules.
    #[test]
    fn proposal_addon_reads_through_kilns_schema() {
        let head = "apiVersion: openchoreo.dev/v1alpha1\nkind: Addon\nmetadata: {name: a}\nspec:\n";
        let (a, errors) = addon(&format!("{head}  displayName: A\n  patches:\n    - target: {{version: v1, kind: Service}}\n      forEach: ${{[1]}}\n      operations: [{{op: MergeShallow, path: /a, value: {{}}}}]\n  removes:\n    - target: {{group: autoscaling, version: v2, kind: HorizontalPodAutoscaler}}\n"));
        assert!(errors.is_empty(), "{errors:?}");
        let a = a.unwrap();
        assert_eq!(a.patches[0].target.group, None);
        assert_eq!(a.patches[0].var, "item");
        assert_eq!(a.patches[0].ops[0].op, Op::MergeShallow);
        assert_eq!(a.removes.len(), 1);

        let (a, errors) = addon(&format!("{head}  colour: red\n  patches:\n    - target: {{kind: Service}}\n      operations: []\n  removes:\n    - target: {{version: v1, kind: Service}}\n      where: ${{true}}\n"));
        assert!(a.is_none());
        let at: Vec<_> = errors
            .iter()
            .map(|d| (d.line, d.path.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            at,
            vec![
                (Some(5), "spec.colour".to_string()),
                (Some(8), "spec.patches[0].operations".to_string()),
                (Some(7), "spec.patches[0].target.version".to_string()),
                (Some(11), "spec.removes[0].where".to_string()),
            ]
        );
        assert!(
            errors[3]
                .hint
                .as_deref()
                .unwrap()
                .contains("inside the target"),
            "{errors:?}"
        );

        let (a, errors) = addon(&format!("{head}  patches:\n    - target: {{version: v1, kind: Service}}\n      operations: [{{op: move, path: /a}}, {{op: add, path: /b}}]\n  removes:\n    - target: {{version: v1, kind: Deployment}}\n"));
        assert!(a.is_none());
        let msgs: Vec<_> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            msgs,
            vec![
                "unsupported patch operation \"move\"",
                "add needs a value",
                "an addon may not remove the workload resource kind Deployment",
            ]
        );
    }

    #[test]
    fn upstream_trait_reads() {
        let (a, errors) = addon(&format!(
            "{TRAIT}  creates:\n    - {{forEach: '${{[1]}}', var: num, template: {{kind: ConfigMap}}}}\n  patches:\n    - target: {{group: '', version: v1, kind: Service, where: '${{true}}'}}\n      targetPlane: dataplane\n      operations: [{{op: add, path: /a, value: 1}}, {{op: remove, path: /b}}]\n  removes:\n    - {{target: {{group: autoscaling, version: v2, kind: HorizontalPodAutoscaler}}}}\n  preRenderValidations: [{{rule: '${{true}}', message: m}}]\n"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        let a = a.unwrap();
        assert_eq!(a.model, Model::Upstream);
        assert_eq!(a.creates[0].var, "num");
        let p = &a.patches[0];
        assert_eq!(p.target.group.as_deref(), Some(""));
        assert_eq!(p.target.where_.as_deref(), Some("true"));
        assert_eq!(
            p.ops.iter().map(|o| o.op).collect::<Vec<_>>(),
            vec![Op::Add, Op::Remove]
        );
        assert_eq!(p.ops[1].at.to_string(), "spec.patches[0].operations[1]");
        assert_eq!(a.removes[0].target.kind, "HorizontalPodAutoscaler");
        assert_eq!(
            a.validations[0].at.to_string(),
            "spec.preRenderValidations[0]"
        );
    }

    /// The CRD's op enum (no mergeShallow, case as written), then the rules it states in CEL and
    /// what kiln does not implement.
    #[test]
    fn upstream_trait_refusals() {
        let (a, errors) = addon(&format!(
            "{TRAIT}  patches:\n    - target: {{group: apps, version: v1, kind: Deployment}}\n      operations: [{{op: mergeShallow, path: /a, value: {{}}}}, {{op: Add, path: /a, value: 1}}]\n"
        ));
        assert!(a.is_none());
        assert_eq!(
            super::type_tests::found(&errors),
            vec![
                (
                    codes::COMPONENT_INVALID,
                    Some(7),
                    "spec.patches[0].operations[0].op".to_string()
                ),
                (
                    codes::COMPONENT_INVALID,
                    Some(7),
                    "spec.patches[0].operations[1].op".to_string()
                ),
            ]
        );
        let (a, errors) = addon(&format!(
            "{TRAIT}  patches:\n    - target: {{group: apps, version: v1, kind: Deployment}}\n      forEach: '${{[1]}}'\n      targetPlane: observabilityplane\n      operations: [{{op: add, path: /a}}]\n  removes:\n    - target: {{group: apps, version: v1, kind: StatefulSet}}\n"
        ));
        assert!(a.is_none());
        assert_eq!(
            super::type_tests::found(&errors),
            vec![
                (
                    codes::COMPONENT_INVALID,
                    Some(6),
                    "spec.patches[0].var".to_string()
                ),
                (
                    codes::UNSUPPORTED_FEATURE,
                    Some(8),
                    "spec.patches[0].targetPlane".to_string()
                ),
                (
                    codes::COMPONENT_INVALID,
                    Some(9),
                    "spec.patches[0].operations[0].value".to_string()
                ),
                (
                    codes::COMPONENT_INVALID,
                    Some(11),
                    "spec.removes[0].target.kind".to_string()
                ),
            ]
        );
    }

    /// Upstream's Trait CRD requires `group` on a patch target; the proposal's Addon (and the
    /// first implementation's shorthand Trait) match any group without one.
    #[test]
    fn upstream_trait_target_needs_a_group() {
        let (a, errors) = addon(&format!(
            "apiVersion: openchoreo.dev/v1alpha1\nkind: Trait\nmetadata: {{name: t}}\nspec:\n{PATCH}"
        ));
        assert!(a.is_none());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(
            errors[0].path.as_deref(),
            Some("spec.patches[0].target.group")
        );
        assert_eq!(errors[0].line, Some(6));

        let (a, errors) = addon(&format!(
            "apiVersion: openchoreo.dev/v1alpha1\nkind: Addon\nmetadata: {{name: t}}\nspec:\n{PATCH}"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        let a = a.unwrap();
        assert_eq!(a.model, Model::Proposal);
        assert_eq!(a.patches[0].target.group, None);

        let (a, errors) = addon(&format!(
            "apiVersion: openchoreo.dev/v1alpha1\nkind: Trait\nmetadata: {{name: t}}\nspec:\n  schema: {{}}\n{PATCH}"
        ));
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(a.unwrap().model, Model::Proposal);
    }
}
