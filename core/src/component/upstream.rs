//! The rendering context of upstream OpenChoreo kinds (ComponentType, ClusterComponentType,
//! Trait, ClusterTrait, and ComponentReleases freezing them), built offline as upstream's
//! controller builds it (`internal/controller/releasebinding/controller.go`, `buildMetadataContext`;
//! `internal/pipeline/component/context/`): the generated names and namespace, the
//! `openchoreo.dev/*` labels and pod selectors, the workload as the controller extracts it, the
//! configurations split into config and secret, the data plane and gateway read from the
//! Environment and DataPlane documents among the inputs, and the precomputed views the helper
//! functions (`configurations.toVolumes()`, `workload.toServicePorts()`, …) return.
//!
//! What only exists in a cluster (uids) is read from the input objects' `metadata.uid` or from
//! `--observed`; when neither has it the render fails with a diagnostic naming it, because every
//! resource upstream renders carries the uid labels.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::{json, Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::observed::Observed;

use super::functions::{fnv32a, safe_name_with};
use super::kinds::{ComponentDef, Loc};

/// The name of the hidden variable holding the helpers' precomputed views. `@` cannot start a
/// CEL identifier, so no template can read it directly.
pub(crate) const DERIVED: &str = "@oc_derived";

const LABEL_NAMESPACE: &str = "openchoreo.dev/namespace";
const LABEL_PROJECT: &str = "openchoreo.dev/project";
const LABEL_COMPONENT: &str = "openchoreo.dev/component";
const LABEL_ENVIRONMENT: &str = "openchoreo.dev/environment";
const LABEL_COMPONENT_UID: &str = "openchoreo.dev/component-uid";
const LABEL_ENVIRONMENT_UID: &str = "openchoreo.dev/environment-uid";
const LABEL_PROJECT_UID: &str = "openchoreo.dev/project-uid";

/// Upstream's length limits (`internal/dataplane/kubernetes/name.go`).
const MAX_RESOURCE_NAME: usize = 253;
const MAX_NAMESPACE_NAME: usize = 63;

/// The openchoreo.dev documents of a run that are not rendering inputs themselves (Project,
/// Environment, DataPlane, ClusterDataPlane, SecretReference…), which an upstream render reads.
#[derive(Default)]
pub(crate) struct Platform<'a> {
    pub docs: Vec<&'a Document>,
    pub observed: Option<Observed>,
    /// The endpoint statuses of the components rendered in this run, as upstream's controller
    /// writes them into their ReleaseBindings (`resolveServiceURLs`), keyed by namespace,
    /// project, component and environment: what a dependency on one of them resolves against.
    pub statuses: BTreeMap<(String, String, String, String), Vec<Value>>,
    /// Render without resolving dependencies (the first pass, which only computes `statuses`).
    pub skip_dependencies: bool,
    /// The outputs of the resources rendered in this run (upstream's resource pipeline), keyed
    /// by namespace, project, resource and environment, as upstream's controller writes them into
    /// the ResourceReleaseBinding's `status.outputs`: each resolved, or why it needs a cluster.
    /// `Err` says why a binding in the inputs gives no outputs (it failed, or is not unique).
    pub resource_outputs:
        BTreeMap<(String, String, String, String), Result<ResourceOutputs, String>>,
    /// `docs` indexed, made on the first look-up: every upstream release looks several platform
    /// objects up, and the documents include every live Component of the run, so a scan per
    /// look-up made a fleet's render quadratic.
    pub index: std::sync::OnceLock<Index>,
}

/// [`Platform::docs`] by the hash of their kind and name, and of their kind (a collision only
/// adds a candidate, which the look-up then checks), each list in input order.
#[derive(Default)]
pub(crate) struct Index {
    by_kind_name: HashMap<u64, Vec<usize>>,
    by_kind: HashMap<u64, Vec<usize>>,
}

fn hash_of(key: impl std::hash::Hash) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::default().hash_one(key)
}

/// The outputs of one rendered resource binding, in the type's order.
pub(crate) type ResourceOutputs = Vec<(String, Result<Value, String>)>;

/// Where a platform object was found.
pub(crate) struct Found<'v> {
    pub value: &'v Value,
}

impl Platform<'_> {
    fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut index = Index::default();
            for (i, d) in self.docs.iter().enumerate() {
                let Some(k) = d.value.get("kind").and_then(Value::as_str) else {
                    continue;
                };
                index.by_kind.entry(hash_of(k)).or_default().push(i);
                if let Some(n) = d.value.pointer("/metadata/name").and_then(Value::as_str) {
                    index
                        .by_kind_name
                        .entry(hash_of((k, n)))
                        .or_default()
                        .push(i);
                }
            }
            index
        })
    }

    /// The documents that may be of `kind` (each still to be checked), in input order.
    fn of_kind(&self, kind: &str) -> impl Iterator<Item = &Document> {
        let candidates = self.index().by_kind.get(&hash_of(kind));
        candidates.into_iter().flatten().map(|&i| self.docs[i])
    }

    /// The object of `kind` named `name`, in namespace `ns` (or cluster-scoped / without a
    /// namespace), from the inputs first, then from the observed state.
    pub(crate) fn find(&self, kind: &str, ns: Option<&str>, name: &str) -> Option<Found<'_>> {
        let matches = |v: &Value| {
            v.get("kind").and_then(Value::as_str) == Some(kind)
                && v.pointer("/metadata/name").and_then(Value::as_str) == Some(name)
                && match (ns, v.pointer("/metadata/namespace").and_then(Value::as_str)) {
                    (_, None) => true,
                    (Some(want), Some(have)) => want == have,
                    (None, Some(_)) => false,
                }
        };
        // The first document that matches, in input order, as a scan would find it.
        let candidates = self.index().by_kind_name.get(&hash_of((kind, name)));
        let docs = candidates.into_iter().flatten().map(|&i| self.docs[i]);
        if let Some(d) = docs.into_iter().find(|d| matches(&d.value)) {
            return Some(Found { value: &d.value });
        }
        let o = self.observed.as_ref()?;
        let api = super::API_VERSION;
        o.get(api, kind, ns.unwrap_or(""), name)
            .or_else(|| o.get(api, kind, "", name))
            .map(|value| Found { value })
    }
}

impl Platform<'_> {
    /// Upstream's `getDefaultNotificationChannelName`: the ObservabilityAlertsNotificationChannel
    /// of the namespace that is the environment's default (inputs first, then observed state).
    /// A channel becomes the default in a cluster also when it is the environment's only one:
    /// its controller sets `isEnvDefault` then (`ensureDefaultChannel`), so an only channel
    /// counts as the default here too. Several without a default: upstream's pick depends on
    /// the order its controller sees them, so there is none (upstream then leaves the field out).
    fn default_notification_channel(&self, namespace: &str, env: &str) -> Option<String> {
        const KIND: &str = "ObservabilityAlertsNotificationChannel";
        let of_env = |v: &Value| {
            v.get("kind").and_then(Value::as_str) == Some(KIND)
                && v.pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .is_none_or(|n| n == namespace)
                && v.pointer("/spec/environment").and_then(Value::as_str) == Some(env)
        };
        let name = |v: &Value| {
            v.pointer("/metadata/name")
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        let mut channels: Vec<&Value> = self
            .of_kind(KIND)
            .map(|d| &d.value)
            .filter(|v| of_env(v))
            .collect();
        if let Some(o) = self.observed.as_ref() {
            for v in o
                .select(super::API_VERSION, KIND, Some(namespace), &json!({}))
                .unwrap_or_default()
            {
                if of_env(v) && !channels.iter().any(|c| name(c) == name(v)) {
                    channels.push(v);
                }
            }
        }
        let is_default =
            |v: &Value| v.pointer("/spec/isEnvDefault").and_then(Value::as_bool) == Some(true);
        match channels.iter().find(|v| is_default(v)) {
            Some(v) => name(v),
            None => match channels.as_slice() {
                [only] => name(only),
                _ => None,
            },
        }
    }
}

fn uid_of(v: &Value) -> Option<String> {
    v.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// The context of one upstream render.
pub(crate) struct Upstream {
    /// `metadata`, `dataplane`, `environment`, `gateway` (when configured), `workload`,
    /// `configurations`, `dependencies` and the hidden precomputed views.
    pub vars: Vec<(&'static str, Value)>,
    /// The labels upstream adds to every rendered resource (`postProcessResources`).
    pub labels: Map<String, Value>,
}

/// Everything a failing lookup needs to say where.
struct Blame<'c, 'a> {
    comp: &'c ComponentDef<'a>,
    /// The Workload, where problems with its configuration are reported.
    workload: &'c Loc<'a>,
    env: &'c str,
    errors: Vec<Diagnostic>,
}

impl Blame<'_, '_> {
    fn at_workload(&mut self, code: crate::diag::Code, at: FieldPath, what: String, hint: String) {
        self.errors.push(self.workload.error(
            code,
            &at,
            format!(
                "{what} (component {:?}, environment {})",
                self.comp.name,
                crate::diag::quote(self.env)
            ),
            hint,
        ));
    }

    fn missing(&mut self, what: String, hint: String) {
        self.errors.push(self.comp.loc.error(
            codes::PLATFORM_INPUT,
            &FieldPath::root().key("metadata").key("name"),
            format!(
                "{what} (component {:?}, environment {})",
                self.comp.name,
                crate::diag::quote(self.env)
            ),
            hint,
        ));
    }
}

/// Build the upstream context of `comp` in environment `env`. `namespace` is the component's
/// namespace (its own or `--namespace`); `workload_spec` is the Workload's spec with the
/// environment's overrides applied.
pub(crate) fn build(
    comp: &ComponentDef<'_>,
    workload: &Loc<'_>,
    env: &str,
    namespace: &str,
    workload_spec: &Value,
    platform: &Platform<'_>,
) -> Result<Upstream, Vec<Diagnostic>> {
    let mut b = Blame {
        comp,
        workload,
        env,
        errors: Vec::new(),
    };
    let uid_hint = |kind: &str, name: &str| {
        format!(
            "upstream puts the {kind}'s uid into the openchoreo.dev/*-uid labels and pod selectors of every resource; give the {kind} {name:?} its metadata.uid (as `kubectl get -o yaml` prints it) among the inputs, or pass the live object with --observed"
        )
    };
    // Project.
    let project = comp.project.clone();
    let project_uid = match &project {
        None => {
            b.missing(
                "an upstream component needs spec.owner.projectName".into(),
                "upstream's ComponentRelease requires the owning project; set spec.owner.projectName on the Component (or the ComponentRelease)".into(),
            );
            None
        }
        Some(p) => match platform.find("Project", Some(namespace), p) {
            None => {
                b.missing(
                    format!("Project {p:?} (namespace {}) is not among the inputs", crate::diag::quote(namespace)),
                    format!("add the Project {p:?} to the inputs (with its metadata.uid) or pass it with --observed"),
                );
                None
            }
            Some(f) => match uid_of(f.value) {
                Some(u) => Some(u),
                None => {
                    b.missing(
                        format!("the uid of Project {p:?} is not known offline"),
                        uid_hint("Project", p),
                    );
                    None
                }
            },
        },
    };
    // Component uid: the live Component's, else the observed one's.
    let component_uid = comp.uid.clone().or_else(|| {
        platform
            .find("Component", Some(namespace), &comp.name)
            .and_then(|f| uid_of(f.value))
    });
    if component_uid.is_none() {
        b.missing(
            format!("the uid of Component {:?} is not known offline", comp.name),
            uid_hint("Component", &comp.name),
        );
    }
    // Environment and its data plane.
    let environment = platform.find("Environment", Some(namespace), env);
    let environment_uid = match &environment {
        None => {
            b.missing(
                format!("Environment {env:?} (namespace {}) is not among the inputs", crate::diag::quote(namespace)),
                format!("upstream reads the Environment for its data plane, gateway and uid; add the Environment {env:?} (with its metadata.uid) to the inputs or pass it with --observed"),
            );
            None
        }
        Some(f) => {
            let u = uid_of(f.value);
            if u.is_none() {
                b.missing(
                    format!("the uid of Environment {env:?} is not known offline"),
                    uid_hint("Environment", env),
                );
            }
            u
        }
    };
    let env_value = environment.as_ref().map(|f| f.value);
    let dataplane = env_value.and_then(|e| {
        let env_ns = e
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .unwrap_or(namespace);
        match e.pointer("/spec/dataPlaneRef") {
            // Upstream: no reference → the DataPlane "default" of the environment's namespace,
            // else the ClusterDataPlane "default".
            None | Some(Value::Null) => platform
                .find("DataPlane", Some(env_ns), "default")
                .map(|f| ("DataPlane", "default".to_string(), f))
                .or_else(|| {
                    platform
                        .find("ClusterDataPlane", None, "default")
                        .map(|f| ("ClusterDataPlane", "default".to_string(), f))
                })
                .or_else(|| {
                    b.missing(
                        format!("Environment {env:?} names no dataPlaneRef and no DataPlane or ClusterDataPlane \"default\" is among the inputs"),
                        "add the environment's DataPlane to the inputs (upstream reads its secret store and gateway)".into(),
                    );
                    None
                }),
            Some(r) => {
                let kind = r.get("kind").and_then(Value::as_str).unwrap_or("DataPlane");
                let name = r.get("name").and_then(Value::as_str).unwrap_or("");
                let found = match kind {
                    "ClusterDataPlane" => platform.find("ClusterDataPlane", None, name),
                    _ => platform.find("DataPlane", Some(env_ns), name),
                };
                match found {
                    Some(f) => Some((
                        if kind == "ClusterDataPlane" {
                            "ClusterDataPlane"
                        } else {
                            "DataPlane"
                        },
                        name.to_string(),
                        f,
                    )),
                    None => {
                        b.missing(
                            format!("{kind} {name:?}, the data plane of Environment {env:?}, is not among the inputs"),
                            format!("add the {kind} {name:?} to the inputs (upstream reads its secret store and gateway)"),
                        );
                        None
                    }
                }
            }
        }
    });
    let workload = workload_data(workload_spec, &mut b);
    let configurations = configurations(workload_spec, namespace, platform, &mut b);
    let dependencies = dependencies(workload_spec, comp, namespace, env, platform, &mut b);
    if !b.errors.is_empty() {
        return Err(b.errors);
    }
    let (Some(project), Some(project_uid), Some(component_uid), Some(environment_uid)) =
        (project, project_uid, component_uid, environment_uid)
    else {
        return Err(b.errors);
    };
    let Some((_dp_kind, dp_name, dp)) = dataplane else {
        return Err(b.errors);
    };
    let name = safe_name_with(&[comp.name.clone(), env.to_string()], MAX_RESOURCE_NAME, "");
    let dp_namespace = data_plane_namespace(namespace, &project, env);
    // In key order, as upstream's maps are written.
    let mut sorted = BTreeMap::new();
    sorted.insert(LABEL_NAMESPACE, json!(namespace));
    sorted.insert(LABEL_PROJECT, json!(project));
    sorted.insert(LABEL_COMPONENT, json!(comp.name));
    sorted.insert(LABEL_ENVIRONMENT, json!(env));
    sorted.insert(LABEL_COMPONENT_UID, json!(component_uid));
    sorted.insert(LABEL_ENVIRONMENT_UID, json!(environment_uid));
    sorted.insert(LABEL_PROJECT_UID, json!(project_uid));
    let labels: Map<String, Value> = sorted
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
    let mut metadata = json!({
        "componentName": comp.name,
        "componentUID": component_uid,
        "projectName": project,
        "projectUID": project_uid,
        "dataPlaneName": dp_name,
        "environmentName": env,
        "environmentUID": environment_uid,
        "name": name,
        "namespace": dp_namespace,
        "componentNamespace": namespace,
        "labels": Value::Object(labels.clone()),
        "annotations": {},
        "podSelectors": Value::Object(labels.clone()),
    });
    // The data plane's uid only reaches `metadata.dataPlaneUID`; without it the key is absent
    // and a template that reads it fails naming it.
    if let Some(u) = uid_of(dp.value) {
        metadata["dataPlaneUID"] = json!(u);
    }
    let dp_gateway = dp.value.pointer("/spec/gateway");
    let mut dataplane_var = Map::new();
    if let Some(s) = dp
        .value
        .pointer("/spec/secretStoreRef/name")
        .and_then(Value::as_str)
    {
        dataplane_var.insert("secretStore".into(), json!(s));
    }
    if let Some(g) = gateway_data(dp_gateway, None) {
        dataplane_var.insert("gateway".into(), g);
    }
    if let Some(o) = dp
        .value
        .pointer("/spec/observabilityPlaneRef")
        .filter(|o| o.is_object())
    {
        let mut m = Map::new();
        for k in ["kind", "name"] {
            if let Some(s) = o.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                m.insert(k.into(), json!(s));
            }
        }
        dataplane_var.insert("observabilityPlaneRef".into(), Value::Object(m));
    }
    if let Some(a) = dp
        .value
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .filter(|a| !a.is_empty())
    {
        dataplane_var.insert("annotations".into(), Value::Object(a.clone()));
    }
    let gateway = gateway_data(
        env_value.and_then(|e| e.pointer("/spec/gateway")),
        dp_gateway,
    );
    let mut environment_var = Map::new();
    if let Some(g) = &gateway {
        environment_var.insert("gateway".into(), g.clone());
    }
    if let Some(ch) = platform.default_notification_channel(namespace, env) {
        environment_var.insert("defaultNotificationChannel".into(), json!(ch));
    }
    let prefix = format!("{}-{env}", comp.name);
    let mut derived = derived(&configurations, &workload, &dependencies, &prefix);
    derived["endpointResources"] = endpoint_resources(workload_spec);
    let mut vars = vec![
        ("metadata", metadata),
        ("dataplane", Value::Object(dataplane_var)),
        ("environment", Value::Object(environment_var)),
        ("workload", workload),
        ("configurations", configurations),
        ("dependencies", dependencies),
        (DERIVED, derived),
    ];
    if let Some(g) = gateway {
        vars.push(("gateway", g));
    }
    Ok(Upstream { vars, labels })
}

/// Upstream's `ExtractEndpointResources`: each endpoint's routes from its API schema, for the
/// endpoints that have some (a schema that does not parse gives none; the render warns of it,
/// see [`super::endpoint_schema_warnings`]).
fn endpoint_resources(workload_spec: &Value) -> Value {
    let mut out = Map::new();
    for (name, ep) in workload_spec
        .get("endpoints")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Ok(routes) = super::schemaextract::extract(ep) {
            if !routes.is_empty() {
                out.insert(name.clone(), Value::Array(routes));
            }
        }
    }
    Value::Object(out)
}

/// The endpoints of a Workload whose API schema gives no routes for a reason (upstream logs it and
/// renders catch-all routing): `(endpoint name, reason)`, in name order.
pub(crate) fn endpoint_schema_failures(workload_spec: &Value) -> Vec<(String, String)> {
    workload_spec
        .get("endpoints")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(name, ep)| {
            super::schemaextract::extract(ep)
                .err()
                .map(|e| (name.clone(), e))
        })
        .collect()
}

/// Upstream's `ExtractWorkloadData`: the container's image, command and args, and the endpoints
/// with `targetPort` defaulting to `port` and `visibility` always starting with `project`.
fn workload_data(spec: &Value, b: &mut Blame<'_, '_>) -> Value {
    let c = spec.get("container").cloned().unwrap_or(json!({}));
    // Upstream's Container has these fields and no others (its API server prunes the rest); a
    // field kiln would drop silently, such as `resources` from a workload override, is refused.
    for k in c.as_object().into_iter().flat_map(|m| m.keys()) {
        if !matches!(
            k.as_str(),
            "name" | "image" | "command" | "args" | "env" | "files"
        ) {
            b.at_workload(
                codes::UNSUPPORTED_FEATURE,
                FieldPath::root().key("spec").key("container").key(k),
                format!("the container field {k:?} is not part of upstream's Workload and would not render"),
                "upstream's container has image, command, args, env and files; set resources through the type's environmentConfigs".into(),
            );
        }
    }
    for k in spec.as_object().into_iter().flat_map(|m| m.keys()) {
        if !matches!(
            k.as_str(),
            "owner" | "container" | "endpoints" | "dependencies" | "name"
        ) {
            b.at_workload(
                codes::UNSUPPORTED_FEATURE,
                FieldPath::root().key("spec").key(k),
                format!("the Workload field {k:?} is not part of upstream's Workload and would not render with an upstream ComponentType"),
                "upstream's Workload has owner, container, endpoints and dependencies".into(),
            );
        }
    }
    let mut container = Map::new();
    if let Some(i) = c
        .get("image")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
    {
        container.insert("image".into(), json!(i));
    }
    for k in ["command", "args"] {
        if let Some(a) = c.get(k).and_then(Value::as_array).filter(|a| !a.is_empty()) {
            container.insert(k.into(), Value::Array(a.clone()));
        }
    }
    let mut endpoints = Map::new();
    match spec.get("endpoints") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (name, ep) in m {
                let port = ep.get("port").and_then(Value::as_i64).unwrap_or(0);
                let target = ep
                    .get("targetPort")
                    .and_then(Value::as_i64)
                    .filter(|t| *t != 0)
                    .unwrap_or(port);
                let mut vis = vec!["project".to_string()];
                for v in ep
                    .get("visibility")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !vis.iter().any(|x| x == v) {
                        vis.push(v.to_string());
                    }
                }
                let mut e = Map::new();
                if let Some(d) = ep
                    .get("displayName")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    e.insert("displayName".into(), json!(d));
                }
                e.insert("port".into(), json!(port));
                e.insert("targetPort".into(), json!(target));
                e.insert(
                    "type".into(),
                    json!(ep.get("type").and_then(Value::as_str).unwrap_or("")),
                );
                if let Some(bp) = ep
                    .get("basePath")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                {
                    e.insert("basePath".into(), json!(bp));
                }
                e.insert("visibility".into(), json!(vis));
                endpoints.insert(name.clone(), Value::Object(e));
            }
        }
        Some(_) => b.at_workload(
            codes::COMPONENT_INVALID,
            FieldPath::root().key("spec").key("endpoints"),
            "the Workload's spec.endpoints is not a map of endpoint name → endpoint".into(),
            "write endpoints: {http: {type: HTTP, port: 8080}}".into(),
        ),
    }
    json!({"container": Value::Object(container), "endpoints": Value::Object(endpoints)})
}

/// A secretKeyRef resolved through its SecretReference (upstream `resolveSecretRef`; a missing
/// SecretReference or key is an error, as upstream's `collectSecretReferences` makes it).
fn remote_ref(
    r: &Value,
    namespace: &str,
    platform: &Platform<'_>,
    what: &str,
    at: FieldPath,
    b: &mut Blame<'_, '_>,
) -> Option<Value> {
    let name = r.get("name").and_then(Value::as_str).unwrap_or("");
    let key = r.get("key").and_then(Value::as_str).unwrap_or("");
    let Some(found) = platform.find("SecretReference", Some(namespace), name) else {
        b.at_workload(
            codes::PLATFORM_INPUT,
            at,
            format!("{what} reads SecretReference {name:?}, which is not among the inputs"),
            format!("add the SecretReference {name:?} (namespace {}) to the inputs: upstream resolves the secret's remote reference from it", crate::diag::quote(namespace)),
        );
        return None;
    };
    let data = found
        .value
        .pointer("/spec/data")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    match data
        .iter()
        .find(|d| d.get("secretKey").and_then(Value::as_str) == Some(key))
    {
        Some(d) => {
            let rr = d.get("remoteRef").cloned().unwrap_or(json!({}));
            let mut m = Map::new();
            m.insert(
                "key".into(),
                json!(rr.get("key").and_then(Value::as_str).unwrap_or("")),
            );
            for k in ["property", "version"] {
                if let Some(s) = rr.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()) {
                    m.insert(k.into(), json!(s));
                }
            }
            Some(Value::Object(m))
        }
        None => {
            let keys: Vec<&str> = data
                .iter()
                .filter_map(|d| d.get("secretKey").and_then(Value::as_str))
                .collect();
            b.at_workload(
                codes::PLATFORM_INPUT,
                at,
                format!(
                    "{what} reads key {key:?} of SecretReference {name:?}, which has no such key"
                ),
                format!("keys of the SecretReference: {}", keys.join(", ")),
            );
            None
        }
    }
}

/// Upstream's `ExtractConfigurationsFromWorkload`: env vars and files of the container, split
/// into configs (literal values) and secrets (a `valueFrom.secretKeyRef`).
fn configurations(
    spec: &Value,
    namespace: &str,
    platform: &Platform<'_>,
    b: &mut Blame<'_, '_>,
) -> Value {
    let c = spec.get("container").cloned().unwrap_or(json!({}));
    let mut cfg_envs = Vec::new();
    let mut sec_envs = Vec::new();
    let mut cfg_files = Vec::new();
    let mut sec_files = Vec::new();
    let container_at = FieldPath::root().key("spec").key("container");
    let secret_at = |list: &str, i: usize| {
        container_at
            .key(list)
            .index(i)
            .key("valueFrom")
            .key("secretKeyRef")
    };
    for (i, e) in c
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = e.get("key").and_then(Value::as_str).unwrap_or("");
        match e.pointer("/valueFrom/secretKeyRef") {
            Some(r) if r.is_object() => {
                let what = format!("env {name:?}");
                if let Some(rr) = remote_ref(r, namespace, platform, &what, secret_at("env", i), b)
                {
                    sec_envs.push(json!({"name": name, "value": "", "remoteRef": rr}));
                }
            }
            _ => cfg_envs.push(json!({
                "name": name,
                "value": e.get("value").and_then(Value::as_str).unwrap_or(""),
            })),
        }
    }
    for (i, f) in c
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let name = f.get("key").and_then(Value::as_str).unwrap_or("");
        let mount = f.get("mountPath").and_then(Value::as_str).unwrap_or("");
        match f.pointer("/valueFrom/secretKeyRef") {
            Some(r) if r.is_object() => {
                let what = format!("file {name:?}");
                if let Some(rr) =
                    remote_ref(r, namespace, platform, &what, secret_at("files", i), b)
                {
                    sec_files.push(
                        json!({"name": name, "mountPath": mount, "value": "", "remoteRef": rr}),
                    );
                }
            }
            _ => cfg_files.push(json!({
                "name": name,
                "mountPath": mount,
                "value": f.get("value").and_then(Value::as_str).unwrap_or(""),
            })),
        }
    }
    json!({
        "configs": {"envs": cfg_envs, "files": cfg_files},
        "secrets": {"envs": sec_envs, "files": sec_files},
    })
}

/// The `dependencies` variable (upstream `newDependenciesContextData` over the controller's
/// `buildConnectionItems`). An endpoint dependency resolves through the target component's live
/// ReleaseBinding in the same environment, from `--observed`: upstream reads the URL of the
/// endpoint for the dependency's visibility from that binding's `status.endpoints`
/// (`resolveConnection`), and binds it to env vars (`buildEnvVarsForConnection`). Upstream
/// renders a dependency it cannot resolve yet without its env vars and retries later; offline
/// there is no later, so kiln refuses it by name, as it does resource dependencies, which it
/// does not resolve.
fn dependencies(
    spec: &Value,
    comp: &ComponentDef<'_>,
    namespace: &str,
    env: &str,
    platform: &Platform<'_>,
    b: &mut Blame<'_, '_>,
) -> Value {
    let deps = spec.get("dependencies");
    let at = |list: &str, i: usize| {
        FieldPath::root()
            .key("spec")
            .key("dependencies")
            .key(list)
            .index(i)
    };
    let resources = deps
        .and_then(|d| d.get("resources"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut resource_items = Vec::new();
    for (i, dep) in resources.iter().enumerate() {
        if platform.skip_dependencies {
            break;
        }
        let name = s(dep, "ref");
        let project = comp.project.clone().unwrap_or_default();
        match resolve_resource(platform, namespace, &project, env, dep) {
            Ok(item) => resource_items.push(item),
            Err(why) => b.at_workload(
                codes::PLATFORM_INPUT,
                at("resources", i),
                format!("the dependency on resource {name:?} (project {project:?}) cannot be resolved offline: {why}"),
                format!("upstream reads the resource's outputs from its ResourceReleaseBinding for environment {env:?} (status.outputs, once Ready): give the Resource, its (Cluster)ResourceType and that binding in the inputs (kiln resolves what needs no cluster), or pass the live binding with --observed"),
            ),
        }
    }
    let endpoints = deps
        .and_then(|d| d.get("endpoints"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut items = Vec::new();
    let mut env_vars = Vec::new();
    for (i, conn) in endpoints.iter().enumerate() {
        if platform.skip_dependencies {
            break;
        }
        let target = s(conn, "component");
        let endpoint = s(conn, "name");
        let visibility = s(conn, "visibility");
        let project = match s(conn, "project") {
            "" => comp.project.clone().unwrap_or_default(),
            p => p.to_string(),
        };
        let what = format!(
            "the dependency on endpoint {endpoint:?} of component {target:?} (project {project:?}, visibility {visibility:?})"
        );
        let url = match resolve_connection(
            platform, namespace, &project, target, env, endpoint, visibility,
        ) {
            Ok(u) => u,
            Err(why) => {
                b.at_workload(
                    codes::PLATFORM_INPUT,
                    at("endpoints", i),
                    format!("{what} cannot be resolved offline: {why}"),
                    format!("upstream reads the URL from the live ReleaseBinding of {target:?} in environment {env:?} (its status.endpoints); pass it with --observed"),
                );
                continue;
            }
        };
        let mut vars = Vec::new();
        let bind = |k: &str| {
            conn.pointer(&format!("/envBindings/{k}"))
                .and_then(Value::as_str)
                .filter(|n| !n.is_empty())
        };
        let entry = |name: &str, value: String| {
            if value.is_empty() {
                json!({"name": name})
            } else {
                json!({"name": name, "value": value})
            }
        };
        let port = url.get("port").and_then(Value::as_i64).unwrap_or(0);
        if let Some(n) = bind("address") {
            vars.push(entry(n, endpoint_address(&url)));
        }
        if let Some(n) = bind("host") {
            vars.push(entry(n, s(&url, "host").to_string()));
        }
        if let Some(n) = bind("port") {
            vars.push(entry(
                n,
                if port != 0 {
                    port.to_string()
                } else {
                    String::new()
                },
            ));
        }
        if let Some(n) = bind("basePath") {
            vars.push(entry(n, s(&url, "path").to_string()));
        }
        env_vars.extend(vars.iter().cloned());
        items.push(json!({
            "namespace": namespace,
            "project": project,
            "component": target,
            "endpoint": endpoint,
            "visibility": visibility,
            "envVars": vars,
        }));
    }
    // Upstream's newDependenciesContextData: endpoint env vars first, then each resource's.
    let mut mounts = Vec::new();
    let mut volumes = Vec::new();
    for item in &resource_items {
        env_vars.extend(arr(item, "/envVars").into_iter().cloned());
        mounts.extend(arr(item, "/volumeMounts").into_iter().cloned());
        volumes.extend(arr(item, "/volumes").into_iter().cloned());
    }
    json!({"items": items, "resources": resource_items, "envVars": env_vars, "volumeMounts": mounts, "volumes": volumes})
}

/// Upstream's `resolveResourceDependency` and `BuildResourceDependencyItem`
/// (`controller_resourcedependencies.go`, `context/resourcedependency.go`): the one
/// ResourceReleaseBinding of the resource in the consumer's namespace, project and environment
/// (from `--observed`: its outputs exist only once a cluster resolved them), Ready for its
/// current generation; each `envBindings` output (in output-name order) becomes an env var — a
/// literal `value`, or `valueFrom` a Secret or ConfigMap key —, each `fileBindings` output (a
/// Secret or ConfigMap key) a mount with one volume per source object, named
/// `r-<FNV-1a of ref:kind:name>`, volumes sorted by kind then name.
fn resolve_resource(
    platform: &Platform<'_>,
    namespace: &str,
    project: &str,
    env: &str,
    dep: &Value,
) -> Result<Value, String> {
    let name = s(dep, "ref");
    let found = observed_bindings(
        platform,
        "ResourceReleaseBinding",
        namespace,
        ("resourceName", name),
        project,
        env,
    );
    let in_run = platform.resource_outputs.get(&(
        namespace.to_string(),
        project.to_string(),
        name.to_string(),
        env.to_string(),
    ));
    let rrb = match (found.as_slice(), in_run) {
        // The live binding's status, as upstream's controller reads it.
        ([one], _) => *one,
        // Without one, the resource rendered in this run: the outputs upstream's resource
        // pipeline resolves from the same definitions (ResolveOutputs).
        ([], Some(Ok(outputs))) => return resource_item_from_outputs(dep, outputs, name),
        ([], Some(Err(why))) => return Err(why.clone()),
        ([], None) => return Err(format!("no ResourceReleaseBinding of {project}/{name} for environment {env:?} among the inputs or --observed")),
        _ => return Err(format!("several observed ResourceReleaseBindings of {project}/{name} for environment {env:?}")),
    };
    let generation = rrb
        .pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let ready = arr(rrb, "/status/conditions").into_iter().any(|c| {
        s(c, "type") == "Ready"
            && s(c, "status") == "True"
            && c.get("observedGeneration")
                .and_then(Value::as_i64)
                .unwrap_or(0)
                == generation
    });
    if !ready {
        return Err(format!(
            "ResourceReleaseBinding {:?} is not Ready for its current generation (status.conditions Ready with observedGeneration = metadata.generation)",
            rrb.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
        ));
    }
    resource_item(dep, name, &arr(rrb, "/status/outputs"))
}

/// A resource dependency resolved against the outputs of the resource rendered in the same run.
/// An output bound by the dependency that needs a cluster (it reads an applied object's status)
/// is an error naming it; outputs the dependency does not bind are not needed.
fn resource_item_from_outputs(
    dep: &Value,
    outputs: &ResourceOutputs,
    name: &str,
) -> Result<Value, String> {
    let bound: BTreeSet<&str> = ["envBindings", "fileBindings"]
        .into_iter()
        .flat_map(|k| dep.get(k).and_then(Value::as_object).into_iter().flatten())
        .map(|(k, _)| k.as_str())
        .collect();
    let mut resolved = Vec::new();
    for (out, r) in outputs {
        match r {
            Ok(v) => resolved.push(v),
            Err(why) if bound.contains(out.as_str()) => {
                return Err(format!(
                    "{why}; its value is in the live ResourceReleaseBinding's status.outputs"
                ))
            }
            Err(_) => {}
        }
    }
    resource_item(dep, name, &resolved)
}

/// `BuildResourceDependencyItem` over a binding's resolved outputs.
fn resource_item(dep: &Value, name: &str, outputs: &[&Value]) -> Result<Value, String> {
    let output = |o: &str| outputs.iter().copied().find(|x| s(x, "name") == o);
    let sorted = |k: &str| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = dep
            .get(k)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .map(|(a, b)| (a.clone(), b.as_str().unwrap_or("").to_string()))
            .collect();
        v.sort();
        v
    };
    let key_ref = |r: &Value| json!({"name": s(r, "name"), "key": s(r, "key")});
    let mut env_vars = Vec::new();
    for (out, var) in sorted("envBindings") {
        let o = output(&out)
            .ok_or_else(|| format!("output not resolved on resource release binding: {out}"))?;
        env_vars.push(
            if let Some(r) = o.get("secretKeyRef").filter(|r| r.is_object()) {
                json!({"name": var, "valueFrom": {"secretKeyRef": key_ref(r)}})
            } else if let Some(r) = o.get("configMapKeyRef").filter(|r| r.is_object()) {
                json!({"name": var, "valueFrom": {"configMapKeyRef": key_ref(r)}})
            } else if s(o, "value").is_empty() {
                json!({"name": var})
            } else {
                json!({"name": var, "value": s(o, "value")})
            },
        );
    }
    let mut mounts = Vec::new();
    let mut volumes: BTreeMap<(String, String), Value> = BTreeMap::new();
    for (out, path) in sorted("fileBindings") {
        let o = output(&out)
            .ok_or_else(|| format!("output not resolved on resource release binding: {out}"))?;
        let (kind, r) = if let Some(r) = o.get("secretKeyRef").filter(|r| r.is_object()) {
            ("secret", r)
        } else if let Some(r) = o.get("configMapKeyRef").filter(|r| r.is_object()) {
            ("configmap", r)
        } else {
            return Err(format!("output kind cannot be mounted as file: {out}"));
        };
        let source = s(r, "name").to_string();
        let vol = resource_volume_name(name, kind, &source);
        volumes
            .entry((kind.to_string(), source.clone()))
            .or_insert_with(|| {
                if kind == "secret" {
                    json!({"name": vol, "secret": {"secretName": source}})
                } else {
                    json!({"name": vol, "configMap": {"name": source}})
                }
            });
        let mut m = json!({"name": vol, "mountPath": path});
        if !s(r, "key").is_empty() {
            m["subPath"] = json!(s(r, "key"));
        }
        mounts.push(m);
    }
    Ok(json!({
        "ref": name,
        "envVars": env_vars,
        "volumeMounts": mounts,
        "volumes": volumes.into_values().collect::<Vec<_>>(),
    }))
}

/// Upstream's `resourceDepVolumeName`: `r-` and the FNV-1a 32-bit hash of `ref:kind:name`.
fn resource_volume_name(reference: &str, kind: &str, name: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in format!("{reference}:{kind}:{name}").bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("r-{h:08x}")
}

/// The observed bindings of `kind` in `namespace` whose owner is `project` and
/// `owner = (field, name)` (`componentName` or `resourceName`) in environment `env`.
fn observed_bindings<'p>(
    platform: &'p Platform<'_>,
    kind: &str,
    namespace: &str,
    (owner_field, owner): (&str, &str),
    project: &str,
    env: &str,
) -> Vec<&'p Value> {
    let Some(observed) = platform.observed.as_ref() else {
        return Vec::new();
    };
    let owner_path = format!("/spec/owner/{owner_field}");
    observed
        .select(super::API_VERSION, kind, Some(namespace), &json!({}))
        .unwrap_or_default()
        .into_iter()
        .filter(|rb| {
            rb.pointer("/spec/owner/projectName")
                .and_then(Value::as_str)
                == Some(project)
                && rb.pointer(&owner_path).and_then(Value::as_str) == Some(owner)
                && rb.pointer("/spec/environment").and_then(Value::as_str) == Some(env)
        })
        .collect()
}

/// Upstream's `resolveConnection`: the one ReleaseBinding of the target component in the
/// environment, not undeployed, with a URL for the visibility in its status.
fn resolve_connection(
    platform: &Platform<'_>,
    namespace: &str,
    project: &str,
    component: &str,
    env: &str,
    endpoint: &str,
    visibility: &str,
) -> Result<Value, String> {
    let bindings = observed_bindings(
        platform,
        "ReleaseBinding",
        namespace,
        ("componentName", component),
        project,
        env,
    );
    let key = (
        namespace.to_string(),
        project.to_string(),
        component.to_string(),
        env.to_string(),
    );
    let rb = match bindings.as_slice() {
        // The target rendered in this run: its service URL, as its controller would write it.
        [] if platform.statuses.contains_key(&key) => {
            let ep = platform.statuses[&key]
                .iter()
                .find(|e| s(e, "name") == endpoint)
                .ok_or_else(|| {
                    format!("component {component:?} (rendered in this run) has no Service port for endpoint {endpoint:?}")
                })?;
            return url_for_visibility(ep, visibility).ok_or_else(|| {
                format!("component {component:?} (rendered in this run) has no URL for endpoint {endpoint:?} with visibility {visibility:?} (an external URL needs a route labelled with the endpoint and an external ingress gateway)")
            });
        }
        [] => {
            return Err(format!(
                "no ReleaseBinding of {project}/{component} for environment {env:?} among --observed, and the component is not rendered in this run"
            ))
        }
        [one] => *one,
        _ => {
            return Err(format!(
                "several observed ReleaseBindings of {project}/{component} for environment {env:?}"
            ))
        }
    };
    if rb.pointer("/spec/state").and_then(Value::as_str) == Some("Undeploy") {
        return Err("the component is undeployed".into());
    }
    let eps = rb
        .pointer("/status/endpoints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(ep) = eps.iter().find(|e| s(e, "name") == endpoint) else {
        return Err(format!(
            "endpoint {endpoint:?} is not (yet) in the binding's status"
        ));
    };
    url_for_visibility(ep, visibility)
        .ok_or_else(|| format!("endpoint {endpoint:?} has no URL for visibility {visibility:?}"))
}

/// Upstream's `resolveURLForVisibility`: the service URL for project and namespace visibility,
/// the first of the HTTPS, HTTP and TLS external URLs for external visibility.
fn url_for_visibility(ep: &Value, visibility: &str) -> Option<Value> {
    let url = match visibility {
        "project" | "namespace" => ep.get("serviceURL").cloned(),
        "external" => ["https", "http", "tls"]
            .iter()
            .find_map(|k| ep.pointer(&format!("/externalURLs/{k}")).cloned()),
        _ => None,
    };
    url.filter(Value::is_object)
}

/// Upstream's `resolveServiceURLs` (`internal/controller/releasebinding/endpoint_resolve.go`)
/// over a rendered release: the Service (`v1`) whose ports match most of the workload's endpoint
/// ports (the only one, when there is one; the first of equals), and for each endpoint whose port
/// it has, `{name, type, serviceURL: {scheme, host: <service>.<namespace>.svc.cluster.local, port,
/// path}}`.
pub(crate) fn service_statuses(
    objects: &[Value],
    workload_spec: &Value,
    gateway: Option<&Value>,
) -> Vec<Value> {
    let Some(endpoints) = workload_spec.get("endpoints").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut out = route_statuses(objects, endpoints, gateway);
    let services: Vec<(&str, &str, Vec<i64>)> = objects
        .iter()
        .filter(|o| s(o, "apiVersion") == "v1" && s(o, "kind") == "Service")
        .map(|o| {
            let ports = o
                .pointer("/spec/ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("port").and_then(Value::as_i64))
                .filter(|p| *p > 0 && *p <= i64::from(i32::MAX))
                .collect();
            let name = o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            let ns = o
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or("");
            (name, ns, ports)
        })
        .collect();
    let ep_ports: std::collections::BTreeSet<i64> = endpoints
        .values()
        .filter_map(|e| e.get("port").and_then(Value::as_i64))
        .collect();
    let best = match services.as_slice() {
        [] => return out,
        [one] => one,
        many => {
            let mut best = &many[0];
            let mut best_count = None;
            for svc in many {
                let count = svc.2.iter().filter(|p| ep_ports.contains(p)).count();
                if best_count.is_none_or(|b| count > b) {
                    best_count = Some(count);
                    best = svc;
                }
            }
            best
        }
    };
    let mut names: Vec<&String> = endpoints.keys().collect();
    names.sort();
    for name in names {
        let ep = &endpoints[name];
        let port = ep.get("port").and_then(Value::as_i64).unwrap_or(0);
        if !best.2.contains(&port) {
            continue;
        }
        let scheme = match s(ep, "type") {
            "Websocket" => "ws",
            "gRPC" => "grpc",
            "TCP" => "tcp",
            "UDP" => "udp",
            _ => "http",
        };
        let mut url = json!({
            "scheme": scheme,
            "host": format!("{}.{}.svc.cluster.local", best.0, best.1),
            "port": port,
        });
        if !s(ep, "basePath").is_empty() {
            url["path"] = json!(s(ep, "basePath"));
        }
        // Upstream's resolveServiceURLs: an endpoint with gateway URLs gets its serviceURL in
        // place, the others a new entry.
        match out.iter_mut().find(|e| s(e, "name") == name.as_str()) {
            Some(e) => e["serviceURL"] = url,
            None => out.push(json!({"name": name, "type": s(ep, "type"), "serviceURL": url})),
        }
    }
    out
}

/// Which workload endpoint types each Gateway API route kind exposes (upstream's
/// `routeKindCompat`).
fn route_exposes(kind: &str, ep_type: &str) -> bool {
    match kind {
        "HTTPRoute" => matches!(ep_type, "HTTP" | "GraphQL" | "Websocket" | "gRPC"),
        "GRPCRoute" => ep_type == "gRPC",
        "TLSRoute" => matches!(ep_type, "HTTP" | "GraphQL" | "Websocket" | "gRPC" | "TCP"),
        _ => false,
    }
}

/// Upstream's `resolveEndpointURLStatuses`: each rendered Gateway API route labelled
/// `openchoreo.dev/endpoint-name` (and `-visibility`) gives its endpoint gateway URLs — the
/// route's first hostname, its base path (the `openchoreo.dev/endpoint-base-path` annotation,
/// else an HTTPRoute's first match path), and the ports of the ingress gateway for the
/// visibility (external, else internal) of `gateway` (the Environment's `spec.gateway` when it
/// has an ingress, else the data plane's). HTTPRoute and GRPCRoute fill `http`/`https`, TLSRoute
/// `tls`; the scheme follows the endpoint type. The last route of an endpoint and visibility
/// wins, as upstream overwrites.
fn route_statuses(
    objects: &[Value],
    endpoints: &Map<String, Value>,
    gateway: Option<&Value>,
) -> Vec<Value> {
    let mut routes: BTreeMap<&str, (Option<&Value>, Option<&Value>)> = BTreeMap::new();
    for o in objects {
        let kind = s(o, "kind");
        let (group, _) = super::release::group_version(s(o, "apiVersion"));
        if group != "gateway.networking.k8s.io" {
            continue;
        }
        let label = |k: &str| {
            o.pointer("/metadata/labels")
                .and_then(|l| l.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let name = label("openchoreo.dev/endpoint-name");
        let Some(ep) = endpoints.get(name) else {
            continue;
        };
        if !route_exposes(kind, s(ep, "type")) {
            continue;
        }
        let slot = routes.entry(name).or_default();
        if label("openchoreo.dev/endpoint-visibility") == "external" {
            slot.0 = Some(o);
        } else {
            slot.1 = Some(o);
        }
    }
    let ingress = gateway.and_then(|g| g.get("ingress"));
    let mut out = Vec::new();
    for (name, (external, internal)) in routes {
        let ep_type = s(&endpoints[name], "type");
        let mut status = json!({"name": name, "type": ep_type});
        for (route, key, gw) in [
            (
                external,
                "externalURLs",
                ingress.and_then(|i| i.get("external")),
            ),
            (
                internal,
                "internalURLs",
                ingress.and_then(|i| i.get("internal")),
            ),
        ] {
            let (Some(r), Some(gw)) = (route, gw) else {
                continue;
            };
            let host = r
                .pointer("/spec/hostnames/0")
                .and_then(Value::as_str)
                .unwrap_or("");
            if host.is_empty() {
                continue;
            }
            if let Some(urls) = route_urls(r, ep_type, host, gw) {
                status[key] = urls;
            }
        }
        out.push(status);
    }
    out
}

/// Upstream's `buildRouteURLs`, `routePath` and `schemeFor`.
fn route_urls(route: &Value, ep_type: &str, host: &str, gw: &Value) -> Option<Value> {
    let kind = s(route, "kind");
    let path = route
        .pointer("/metadata/annotations/openchoreo.dev~1endpoint-base-path")
        .and_then(Value::as_str)
        .filter(|p| !p.is_empty())
        .or_else(|| {
            (kind == "HTTPRoute")
                .then(|| route.pointer("/spec/rules/0/matches/0/path/value"))
                .flatten()
                .and_then(Value::as_str)
        })
        .unwrap_or("");
    let scheme = |tls: bool| match (ep_type, tls) {
        ("HTTP" | "GraphQL", false) => "http",
        ("HTTP" | "GraphQL", true) => "https",
        ("Websocket", false) => "ws",
        ("Websocket", true) => "wss",
        ("gRPC", false) => "grpc",
        ("gRPC", true) => "grpcs",
        ("TCP", true) => "tls",
        _ => "",
    };
    let url = |listener: &str, tls: bool| {
        gw.get(listener).filter(|l| l.is_object()).map(|l| {
            let mut u = json!({"scheme": scheme(tls), "host": host});
            if let Some(p) = l.get("port").and_then(Value::as_i64).filter(|p| *p != 0) {
                u["port"] = json!(p);
            }
            if !path.is_empty() {
                u["path"] = json!(path);
            }
            u
        })
    };
    let mut urls = Map::new();
    let listeners: &[(&str, bool)] = match kind {
        "HTTPRoute" | "GRPCRoute" => &[("http", false), ("https", true)],
        "TLSRoute" => &[("tls", true)],
        _ => &[],
    };
    for (listener, tls) in listeners {
        if let Some(u) = url(listener, *tls) {
            urls.insert((*listener).to_string(), u);
        }
    }
    (!urls.is_empty()).then_some(Value::Object(urls))
}

/// The gateway upstream reads a rendered component's route URLs against
/// (`resolveGatewayEndpointByVisibility`): the Environment's `spec.gateway` when it configures
/// an ingress, else the data plane's. `None` without an Environment or data plane.
pub(crate) fn route_gateway(platform: &Platform<'_>, namespace: &str, env: &str) -> Option<Value> {
    let e = platform.find("Environment", Some(namespace), env)?.value;
    let (_, dp) = find_data_plane(platform, e, namespace)?;
    match e.pointer("/spec/gateway") {
        Some(g) if g.get("ingress").is_some_and(|i| !i.is_null()) => Some(g.clone()),
        _ => dp.pointer("/spec/gateway").cloned(),
    }
}

/// The data plane of an Environment (upstream's `GetDataPlaneFromRef`): its `dataPlaneRef`
/// (a DataPlane in the environment's namespace, or a ClusterDataPlane), without one the DataPlane
/// `default` of the environment's namespace, else the ClusterDataPlane `default`. Its name and
/// object.
pub(crate) fn find_data_plane<'p>(
    platform: &'p Platform<'_>,
    environment: &Value,
    namespace: &str,
) -> Option<(String, &'p Value)> {
    let env_ns = environment
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or(namespace);
    let (name, found) = match environment.pointer("/spec/dataPlaneRef") {
        None | Some(Value::Null) => (
            "default",
            platform
                .find("DataPlane", Some(env_ns), "default")
                .or_else(|| platform.find("ClusterDataPlane", None, "default")),
        ),
        Some(r) => {
            let name = s(r, "name");
            (
                name,
                match s(r, "kind") {
                    "ClusterDataPlane" => platform.find("ClusterDataPlane", None, name),
                    _ => platform.find("DataPlane", Some(env_ns), name),
                },
            )
        }
    };
    found.map(|f| (name.to_string(), f.value))
}

/// The data-plane namespace of a project in an environment (upstream's
/// `GenerateK8sNameWithLengthLimit(63, "dp", namespace, project, environment)`).
pub(crate) fn data_plane_namespace(namespace: &str, project: &str, env: &str) -> String {
    safe_name_with(
        &[
            "dp".to_string(),
            namespace.to_string(),
            project.to_string(),
            env.to_string(),
        ],
        MAX_NAMESPACE_NAME,
        "",
    )
}

/// Upstream's `formatEndpointAddress`.
fn endpoint_address(url: &Value) -> String {
    let scheme = s(url, "scheme");
    let mut out = String::new();
    if matches!(scheme, "http" | "https" | "ws" | "wss" | "tls") {
        out.push_str(scheme);
        out.push_str("://");
    }
    out.push_str(s(url, "host"));
    let port = url.get("port").and_then(Value::as_i64).unwrap_or(0);
    if port != 0 {
        out.push_str(&format!(":{port}"));
    }
    let path = s(url, "path");
    if !path.is_empty() {
        if !path.starts_with('/') {
            out.push('/');
        }
        out.push_str(path);
    }
    out
}

/// A gateway spec as the template sees it: only configured ingress/egress and external/internal
/// entries, each environment value preferred over the data plane's (`mergeGatewayData`).
pub(crate) fn gateway_data(env: Option<&Value>, dp: Option<&Value>) -> Option<Value> {
    let mut out = Map::new();
    for dir in ["ingress", "egress"] {
        let mut net = Map::new();
        for side in ["external", "internal"] {
            fn pick<'v>(g: Option<&'v Value>, dir: &str, side: &str) -> Option<&'v Value> {
                g.and_then(|g| g.get(dir))
                    .and_then(|n| n.get(side))
                    .filter(|v| v.is_object())
            }
            if let Some(ep) = pick(env, dir, side).or_else(|| pick(dp, dir, side)) {
                net.insert(side.into(), endpoint_data(ep));
            }
        }
        if !net.is_empty() {
            out.insert(dir.into(), Value::Object(net));
        }
    }
    (!out.is_empty()).then_some(Value::Object(out))
}

fn endpoint_data(ep: &Value) -> Value {
    let mut m = Map::new();
    for k in ["name", "namespace"] {
        if let Some(s) = ep.get(k).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            m.insert(k.into(), json!(s));
        }
    }
    for l in ["http", "https", "tls"] {
        if let Some(li) = ep.get(l).filter(|v| v.is_object()) {
            let mut lm = Map::new();
            if let Some(s) = li
                .get("listenerName")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                lm.insert("listenerName".into(), json!(s));
            }
            if let Some(p) = li.get("port").and_then(Value::as_i64).filter(|p| *p != 0) {
                lm.insert("port".into(), json!(p));
            }
            if let Some(s) = li
                .get("host")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            {
                lm.insert("host".into(), json!(s));
            }
            m.insert(l.into(), Value::Object(lm));
        }
    }
    Value::Object(m)
}

fn arr<'v>(v: &'v Value, p: &str) -> Vec<&'v Value> {
    v.pointer(p)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn s<'v>(v: &'v Value, k: &str) -> &'v str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

pub(crate) fn k8s_name(parts: &[&str], extra: &str) -> String {
    let parts: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
    safe_name_with(&parts, MAX_RESOURCE_NAME, extra)
}

fn config_name(prefix: &str, file: &str) -> String {
    k8s_name(&[prefix, "config", &file.replace('.', "-")], "")
}

fn remote_ref_hash(r: Option<&Value>) -> String {
    match r {
        None => String::new(),
        Some(r) => format!(
            "{:08x}",
            fnv32a(
                format!("{}\0{}\0{}", s(r, "key"), s(r, "property"), s(r, "version")).as_bytes()
            )
        ),
    }
}

fn secret_file_name(prefix: &str, file: &str, r: Option<&Value>) -> String {
    k8s_name(
        &[prefix, "secret", &file.replace('.', "-")],
        &remote_ref_hash(r),
    )
}

fn secret_env_name(prefix: &str, envs: &[&Value]) -> String {
    let extra = if envs.is_empty() {
        String::new()
    } else {
        let mut text = String::new();
        for e in envs {
            if let Some(r) = e.get("remoteRef") {
                text.push_str(&format!(
                    "{}\0{}\0{}\0{}\0",
                    s(e, "name"),
                    s(r, "key"),
                    s(r, "property"),
                    s(r, "version")
                ));
            }
        }
        format!("{:08x}", fnv32a(text.as_bytes()))
    };
    k8s_name(&[prefix, "env-secrets"], &extra)
}

fn env_config_name(prefix: &str) -> String {
    k8s_name(&[prefix, "env-configs"], "")
}

fn volume_name(mount: &str, file: &str) -> String {
    format!(
        "file-mount-{:08x}",
        fnv32a(format!("{mount}/{file}").as_bytes())
    )
}

/// Upstream's `BuildDerivedContext`: what each helper function returns.
fn derived(configurations: &Value, workload: &Value, dependencies: &Value, prefix: &str) -> Value {
    let cfg_files = arr(configurations, "/configs/files");
    let sec_files = arr(configurations, "/secrets/files");
    let cfg_envs = arr(configurations, "/configs/envs");
    let sec_envs = arr(configurations, "/secrets/envs");

    let config_file_list: Vec<Value> = cfg_files
        .iter()
        .map(|f| {
            let mut e = json!({
                "name": s(f, "name"),
                "mountPath": s(f, "mountPath"),
                "value": s(f, "value"),
                "resourceName": config_name(prefix, s(f, "name")),
            });
            if let Some(r) = f.get("remoteRef") {
                e["remoteRef"] = r.clone();
            }
            e
        })
        .collect();
    let secret_file_list: Vec<Value> = sec_files
        .iter()
        .map(|f| {
            let mut e = json!({
                "name": s(f, "name"),
                "mountPath": s(f, "mountPath"),
                "resourceName": secret_file_name(prefix, s(f, "name"), f.get("remoteRef")),
            });
            if let Some(r) = f.get("remoteRef") {
                e["remoteRef"] = r.clone();
            }
            e
        })
        .collect();
    let mut env_from = Vec::new();
    if !cfg_envs.is_empty() {
        env_from.push(json!({"configMapRef": {"name": env_config_name(prefix)}}));
    }
    if !sec_envs.is_empty() {
        env_from.push(json!({"secretRef": {"name": secret_env_name(prefix, &sec_envs)}}));
    }
    let mounts: Vec<Value> = cfg_files
        .iter()
        .chain(sec_files.iter())
        .map(|f| {
            json!({
                "name": volume_name(s(f, "mountPath"), s(f, "name")),
                "mountPath": format!("{}/{}", s(f, "mountPath"), s(f, "name")),
                "subPath": s(f, "name"),
            })
        })
        .collect();
    // Volumes by name (a secret file replaces a config file of the same mount), sorted by name.
    let mut volumes: BTreeMap<String, Value> = BTreeMap::new();
    for f in &cfg_files {
        let n = volume_name(s(f, "mountPath"), s(f, "name"));
        volumes.insert(
            n.clone(),
            json!({"name": n, "configMap": {"name": config_name(prefix, s(f, "name"))}}),
        );
    }
    for f in &sec_files {
        let n = volume_name(s(f, "mountPath"), s(f, "name"));
        volumes.insert(
            n.clone(),
            json!({"name": n, "secret": {"secretName": secret_file_name(prefix, s(f, "name"), f.get("remoteRef"))}}),
        );
    }
    let config_envs = if cfg_envs.is_empty() {
        json!([])
    } else {
        json!([{"resourceName": env_config_name(prefix), "envs": cfg_envs}])
    };
    let secret_envs = if sec_envs.is_empty() {
        json!([])
    } else {
        json!([{"resourceName": secret_env_name(prefix, &sec_envs), "envs": sec_envs}])
    };
    json!({
        "configFileList": config_file_list,
        "secretFileList": secret_file_list,
        "containerEnvFrom": env_from,
        "configVolumeMounts": mounts,
        "configVolumes": volumes.into_values().collect::<Vec<_>>(),
        "configEnvs": config_envs,
        "secretEnvs": secret_envs,
        "servicePorts": service_ports(workload),
        "dependencyEnvVars": dependencies.get("envVars").cloned().unwrap_or(json!([])),
        "dependencyVolumeMounts": dependencies.get("volumeMounts").cloned().unwrap_or(json!([])),
        "dependencyVolumes": dependencies.get("volumes").cloned().unwrap_or(json!([])),
    })
}

/// Upstream's `buildServicePorts`: one port per endpoint in name order, skipping a repeated
/// port/protocol, named after the endpoint (a DNS label of at most 15 characters, made unique).
fn service_ports(workload: &Value) -> Vec<Value> {
    let Some(eps) = workload.get("endpoints").and_then(Value::as_object) else {
        return Vec::new();
    };
    let mut names: Vec<&String> = eps.keys().collect();
    names.sort();
    let mut out = Vec::new();
    let mut used: std::collections::BTreeSet<String> = Default::default();
    let mut seen: std::collections::BTreeSet<String> = Default::default();
    for n in names {
        let ep = &eps[n];
        let port = ep.get("port").and_then(Value::as_i64).unwrap_or(0);
        let target = ep
            .get("targetPort")
            .and_then(Value::as_i64)
            .filter(|t| *t != 0)
            .unwrap_or(port);
        let protocol = match s(ep, "type") {
            "UDP" => "UDP",
            _ => "TCP",
        };
        if !seen.insert(format!("{port}/{protocol}")) {
            continue;
        }
        let name = unique_port_name(n, port, &used);
        used.insert(name.clone());
        out.push(json!({"name": name, "port": port, "targetPort": target, "protocol": protocol}));
    }
    out
}

fn sanitize_port_name(name: &str) -> String {
    let lower = name.to_lowercase().replace('_', "-");
    let kept: String = lower
        .chars()
        .filter(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '-')
        .collect();
    let t = kept.trim_matches('-');
    if t.len() > 15 {
        t[..15].trim_end_matches('-').to_string()
    } else {
        t.to_string()
    }
}

fn unique_port_name(
    endpoint: &str,
    port: i64,
    used: &std::collections::BTreeSet<String>,
) -> String {
    let mut base = sanitize_port_name(endpoint);
    if base.is_empty() {
        base = format!("port-{port}");
    }
    let mut name = base.clone();
    let mut counter = 2;
    while used.contains(&name) {
        name = format!("{base}-{counter}");
        if name.len() > 15 {
            let suffix = format!("-{counter}");
            let max = 15usize.saturating_sub(suffix.len());
            name = if max > 0 {
                format!("{}{suffix}", &base[..max.min(base.len())])
            } else {
                format!("p-{counter}")
            };
        }
        counter += 1;
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Look-ups go through an index of the documents (`Platform::index`): they must find what a
    /// scan in input order finds, namespace rule included, and the environment's default
    /// notification channel as before.
    #[test]
    fn indexed_look_ups_find_what_a_scan_finds() {
        let text = "apiVersion: openchoreo.dev/v1alpha1\nkind: Project\nmetadata: {name: shop, namespace: a, uid: p-a}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: Project\nmetadata: {name: shop, namespace: b, uid: p-b}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: Project\nmetadata: {name: shop, uid: p-cluster}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: Environment\nmetadata: {name: shop, namespace: b, uid: e-b}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: ObservabilityAlertsNotificationChannel\nmetadata: {name: first, namespace: b}\nspec: {environment: dev}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: ObservabilityAlertsNotificationChannel\nmetadata: {name: second, namespace: b}\nspec: {environment: dev, isEnvDefault: true}\n";
        let docs = crate::document::parse_file("p.yaml", text.into(), &Default::default()).unwrap();
        let platform = Platform {
            docs: docs.iter().collect(),
            ..Default::default()
        };
        let uid = |kind: &str, ns: Option<&str>, name: &str| {
            platform.find(kind, ns, name).and_then(|f| {
                f.value
                    .pointer("/metadata/uid")?
                    .as_str()
                    .map(str::to_string)
            })
        };
        assert_eq!(uid("Project", Some("b"), "shop").as_deref(), Some("p-b"));
        assert_eq!(
            uid("Project", Some("c"), "shop").as_deref(),
            Some("p-cluster")
        );
        assert_eq!(uid("Project", None, "shop").as_deref(), Some("p-cluster"));
        assert_eq!(
            uid("Environment", Some("b"), "shop").as_deref(),
            Some("e-b")
        );
        assert_eq!(uid("Environment", Some("a"), "shop"), None);
        assert_eq!(uid("Project", Some("a"), "other"), None);
        assert_eq!(
            platform.default_notification_channel("b", "dev").as_deref(),
            Some("second")
        );
        assert_eq!(platform.default_notification_channel("a", "dev"), None);
    }

    // internal/pipeline/component/context/derived.go: buildServicePorts sorts endpoints by
    // name, maps UDP to UDP and everything else to TCP, drops a repeated port/protocol and
    // shortens names to 15 characters.
    #[test]
    fn service_ports_follow_upstream() {
        let wl = json!({"endpoints": {
            "zeta_API": {"port": 9090, "targetPort": 9090, "type": "gRPC"},
            "alpha": {"port": 8080, "targetPort": 80, "type": "HTTP"},
            "dup": {"port": 8080, "targetPort": 8080, "type": "REST"},
            "very-long-endpoint-name": {"port": 53, "targetPort": 53, "type": "UDP"},
        }});
        assert_eq!(
            json!(service_ports(&wl)),
            json!([
                {"name": "alpha", "port": 8080, "targetPort": 80, "protocol": "TCP"},
                {"name": "very-long-endpo", "port": 53, "targetPort": 53, "protocol": "UDP"},
                {"name": "zeta-api", "port": 9090, "targetPort": 9090, "protocol": "TCP"},
            ])
        );
    }

    // derived.go uniquePortName: a taken name gets -2, -3… within 15 characters.
    #[test]
    fn port_names_are_made_unique() {
        let mut used = std::collections::BTreeSet::new();
        used.insert("abcdefghijklmno".to_string());
        assert_eq!(
            unique_port_name("abcdefghijklmno", 1, &used),
            "abcdefghijklm-2"
        );
        assert_eq!(unique_port_name("___", 80, &used), "port-80");
    }

    // The names upstream's pipeline test pins for its configurations-and-secrets case
    // (internal/pipeline/component/testdata/configurations-and-secrets/
    // expected-resources-with-config-helpers.yaml): component test-app, environment dev, the
    // workload after the binding's overrides, secrets resolved through their SecretReferences.
    #[test]
    fn derived_names_match_upstream_vectors() {
        let rr = |k: &str, p: &str| json!({"key": k, "property": p});
        let cfg = json!({
            "configs": {
                "envs": [
                    {"name": "LOG_LEVEL", "value": "error"},
                    {"name": "DEBUG_MODE", "value": "true"},
                    {"name": "NEW_CONFIG", "value": "production"},
                ],
                "files": [
                    {"name": "config.json", "mountPath": "/etc/config", "value": "{}"},
                    {"name": "app.properties", "mountPath": "/etc/config", "value": "x"},
                ],
            },
            "secrets": {
                "envs": [
                    {"name": "DB_PASSWORD", "value": "", "remoteRef": rr("prod/db", "password")},
                    {"name": "API_KEY", "value": "", "remoteRef": rr("dev/api", "api_key")},
                ],
                "files": [
                    {"name": "tls.crt", "mountPath": "/etc/tls", "value": "", "remoteRef": rr("prod/certificates", "tls.crt")},
                    {"name": "application.yaml", "mountPath": "/etc/config", "value": "", "remoteRef": rr("dev/config", "application.yaml")},
                ],
            },
        });
        let deps = json!({"envVars": [], "volumeMounts": [], "volumes": []});
        let d = derived(&cfg, &json!({"endpoints": {}}), &deps, "test-app-dev");
        assert_eq!(
            d["containerEnvFrom"],
            json!([
                {"configMapRef": {"name": "test-app-dev-env-configs-6f21fc92"}},
                {"secretRef": {"name": "test-app-dev-env-secrets-757009dd"}},
            ])
        );
        let names = |k: &str, f: &str| -> Vec<String> {
            d[k].as_array()
                .unwrap()
                .iter()
                .map(|e| e.pointer(f).and_then(Value::as_str).unwrap().to_string())
                .collect()
        };
        assert_eq!(
            names("configFileList", "/resourceName"),
            [
                "test-app-dev-config-config-json-9aa130bc",
                "test-app-dev-config-app-properties-ac691794"
            ]
        );
        assert_eq!(
            names("secretFileList", "/resourceName"),
            [
                "test-app-dev-secret-tls-crt-1381e562",
                "test-app-dev-secret-application-yaml-07d48de3"
            ]
        );
        assert_eq!(
            names("configVolumeMounts", "/name"),
            [
                "file-mount-6c698306",
                "file-mount-d08babc2",
                "file-mount-9b2ef275",
                "file-mount-5953ef7b"
            ]
        );
        // Volumes are sorted by name; a secret file's volume names its secret.
        assert_eq!(
            d["configVolumes"],
            json!([
                {"name": "file-mount-5953ef7b", "secret": {"secretName": "test-app-dev-secret-application-yaml-07d48de3"}},
                {"name": "file-mount-6c698306", "configMap": {"name": "test-app-dev-config-config-json-9aa130bc"}},
                {"name": "file-mount-9b2ef275", "secret": {"secretName": "test-app-dev-secret-tls-crt-1381e562"}},
                {"name": "file-mount-d08babc2", "configMap": {"name": "test-app-dev-config-app-properties-ac691794"}},
            ])
        );
        assert_eq!(
            d["secretEnvs"][0]["resourceName"],
            json!("test-app-dev-env-secrets-757009dd")
        );
    }

    // derived.go generateVolumeHash: "file-mount-" + FNV-32a of mountPath/filename.
    #[test]
    fn resource_volume_names_hash_ref_kind_and_name() {
        // FNV-1a 32 of "orders-db:configmap:orders-db-conn", as upstream's resourceDepVolumeName
        // writes ref, ':', kind, ':', name into one hash (computed independently).
        assert_eq!(
            resource_volume_name("orders-db", "configmap", "orders-db-conn"),
            "r-b2036f44"
        );
        assert_eq!(
            resource_volume_name("orders-db", "secret", "orders-db-creds"),
            "r-47cc52d5"
        );
    }

    #[test]
    fn volume_names_hash_the_mount_path() {
        assert_eq!(
            volume_name("/etc/config", "app.yaml"),
            format!("file-mount-{:08x}", fnv32a(b"/etc/config/app.yaml"))
        );
    }
}
