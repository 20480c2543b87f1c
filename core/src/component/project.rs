//! Upstream's project pipeline (`internal/pipeline/project`, driven by
//! `internal/controller/projectreleasebinding`, commit ad3f5030): a ProjectReleaseBinding deploys
//! a Project to an environment by rendering its (Cluster)ProjectType's `resources` — at least
//! the project's cell Namespace `dp-<namespace>-<project>-<environment>-<hash>`, into which the
//! project's components render.
//!
//! The context is upstream's `BaseContext`: `metadata` (the cell namespace, names, uids and
//! labels), `parameters` (the Project's, defaulted by the type), `environmentConfigs` (the
//! binding's), `dataplane`, `environment` and `gateway`. The type's validations are checked
//! first; resources render in order (`includeWhen`, `forEach` with `var` defaulting to `item`),
//! and one of them must be the v1 Namespace named `${metadata.namespace}`. Unlike a component's
//! release, nothing is added to the rendered objects and they are not sorted.

use serde_json::{json, Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::value::to_val;
use crate::fieldpath::FieldPath;

use super::context::{self, NoSection, Sections, Source};
use super::kinds::{Loc, ProjectBindingDef, ProjectTypeDef};
use super::template::{root_context, Exprs, Renderer, TplError};
use super::upstream::Platform;
use super::Options;

/// The variables a project type's expressions may read.
pub(crate) const PROJECT_TYPE_VARS: &[&str] = &[
    "metadata",
    "parameters",
    "environmentConfigs",
    "dataplane",
    "environment",
    "gateway",
];

const LABEL_NAMESPACE: &str = "openchoreo.dev/namespace";
const LABEL_PROJECT: &str = "openchoreo.dev/project";
const LABEL_PROJECT_UID: &str = "openchoreo.dev/project-uid";
const LABEL_ENVIRONMENT: &str = "openchoreo.dev/environment";
const LABEL_ENVIRONMENT_UID: &str = "openchoreo.dev/environment-uid";

/// Compile a project type's expressions (validations and resources) once.
pub(crate) fn compile(
    t: &ProjectTypeDef<'_>,
    exprs: &mut Exprs,
    limits: &crate::expr::cel::ExprLimits,
    diags: &mut Vec<Diagnostic>,
) {
    let mut errs = Vec::new();
    super::compile_resources(&t.resources, PROJECT_TYPE_VARS, exprs, limits, &mut errs);
    super::compile_validations(&t.validations, PROJECT_TYPE_VARS, exprs, limits, &mut errs);
    super::push_tpl_errors(&t.loc, errs, diags);
}

/// Render one ProjectReleaseBinding: the objects of its project's type, in order, and the
/// warnings naming the fields of its values the type does not declare.
pub(crate) fn render(
    b: &ProjectBindingDef<'_>,
    types: &[ProjectTypeDef<'_>],
    exprs: &Exprs,
    opts: &Options,
    platform: &Platform<'_>,
) -> Result<(Vec<Value>, Vec<Diagnostic>), Vec<Diagnostic>> {
    let suffix = format!(
        " (project {:?}, environment {:?})",
        b.project, b.environment
    );
    let missing = |what: String, hint: String| {
        vec![b.loc.error(
            codes::PLATFORM_INPUT,
            &FieldPath::root().key("spec"),
            format!("{what}{suffix}"),
            hint,
        )]
    };
    let Some(ns) = b.namespace.clone().or_else(|| opts.namespace.clone()) else {
        return Err(vec![b.loc.error(
            codes::COMPONENT_NAMESPACE,
            &FieldPath::root().key("metadata"),
            format!(
                "ProjectReleaseBinding of project {:?} has no namespace",
                b.project
            ),
            "set metadata.namespace or pass --namespace",
        )]);
    };
    let env = b.environment.as_str();
    // The Project, its uid and its type.
    let Some(project) = platform.find("Project", Some(&ns), &b.project) else {
        return Err(missing(
            format!("Project {:?} (namespace {}) is not among the inputs", b.project, crate::diag::quote(&ns)),
            format!("add the Project {:?} (with its metadata.uid) to the inputs or pass it with --observed", b.project),
        ));
    };
    let project = project.value;
    let Some(project_uid) = uid(project) else {
        return Err(missing(
            format!("the uid of Project {:?} is not known offline", b.project),
            "upstream puts it into the openchoreo.dev/project-uid label; give the Project its metadata.uid (as `kubectl get -o yaml` prints it) or pass the live object with --observed".into(),
        ));
    };
    let type_kind = project
        .pointer("/spec/type/kind")
        .and_then(Value::as_str)
        .filter(|k| !k.is_empty())
        .unwrap_or("ProjectType");
    let type_name = project
        .pointer("/spec/type/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let cluster = type_kind == "ClusterProjectType";
    let Some(ty) = types.iter().find(|t| {
        t.cluster == cluster
            && t.name == type_name
            && (cluster || t.namespace.as_deref().unwrap_or(ns.as_str()) == ns)
    }) else {
        return Err(missing(
            format!("{type_kind} {type_name:?}, the type of Project {:?}, is not among the inputs", b.project),
            format!("add the {type_kind} {type_name:?} to the inputs: upstream renders the project's namespace from it"),
        ));
    };
    let plane = match plane(platform, &ns, env) {
        Ok(p) => p,
        Err((what, hint)) => return Err(missing(what, hint)),
    };
    let dp_namespace = super::upstream::data_plane_namespace(&ns, &b.project, env);
    let labels = project_labels(env, &plane, &ns, &b.project, &project_uid);
    let mut metadata = json!({
        "namespace": dp_namespace,
        "projectNamespace": ns,
        "projectName": b.project,
        "projectUID": project_uid,
        "environmentName": env,
        "environmentUID": plane.environment_uid,
        "dataPlaneName": plane.dp_name,
        "labels": labels,
        "annotations": b.annotations,
    });
    if let Some(u) = &plane.dp_uid {
        metadata["dataPlaneUID"] = json!(u);
    }
    let Plane {
        dataplane,
        environment: environment_var,
        gateway,
        ..
    } = plane;
    // Parameters: the Project's, defaulted (and, as everywhere in kiln, validated) by the type.
    let what = format!("{type_kind} {:?}", ty.name);
    let project_doc: Option<&Document> = platform.docs.iter().copied().find(|d| {
        d.kind() == Some("Project")
            && d.name() == Some(b.project.as_str())
            && d.value
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .is_none_or(|n| n == ns)
    });
    let project_loc = project_doc.map(Loc::new);
    let params_src = match &project_loc {
        Some(l) => Source {
            loc: l,
            at: FieldPath::root().key("spec").key("parameters"),
        },
        None => Source {
            loc: &b.loc,
            at: FieldPath::root().key("spec"),
        },
    };
    let empty = json!({});
    let Sections {
        parameters,
        environment_configs: env_configs,
        warnings,
    } = context::resolve_sections(
        &ty.schemas,
        NoSection::AsGiven,
        &what,
        (
            project.pointer("/spec/parameters").unwrap_or(&empty),
            &params_src,
        ),
        (
            &b.env_configs,
            &Source {
                loc: &b.loc,
                at: FieldPath::root().key("spec").key("environmentConfigs"),
            },
        ),
    )?;
    let mut ctx = root_context().new_inner_scope();
    let mut vars = vec![
        ("metadata", metadata),
        ("parameters", parameters),
        ("environmentConfigs", env_configs),
        ("dataplane", dataplane),
        ("environment", environment_var),
    ];
    if let Some(g) = gateway {
        vars.push(("gateway", g));
    }
    for (k, v) in vars {
        ctx.add_variable_as_val(k, to_val(&v));
    }
    let r = Renderer {
        exprs,
        budget: opts.eval,
    };
    let loc = &ty.loc;
    let diag = |e: TplError| loc.error(e.code, &e.path, format!("{}{suffix}", e.message), e.hint);
    let as_bool = |src: &str, at: &FieldPath, what: &str| -> Result<bool, Diagnostic> {
        match r.eval(&ctx, src, at).map_err(diag)? {
            cel::Value::Bool(b) => Ok(b),
            other => Err(loc.error(
                codes::RESULT_TYPE,
                at,
                format!(
                    "{what} {src:?} must return a bool, got {:?}{suffix}",
                    other.type_of()
                ),
                "compare explicitly, e.g. ${parameters.enabled == true}",
            )),
        }
    };
    for v in &ty.validations {
        if !as_bool(&v.rule, &v.at.key("rule"), "validation rule").map_err(|d| vec![d])? {
            return Err(vec![loc.error(
                codes::VALIDATION_FAILED,
                &v.at,
                format!("{what} validation failed: {}{suffix}", v.message),
                format!(
                    "the rule ${{{}}} is false for this project and environment",
                    v.rule.trim()
                ),
            )]);
        }
    }
    let mut out = Vec::new();
    let mut made_by = Vec::new();
    for t in &ty.resources {
        if let Some(cond) = &t.include_when {
            if !as_bool(cond, &t.at.key("includeWhen"), "includeWhen").map_err(|d| vec![d])? {
                continue;
            }
        }
        let tpl_at = t.at.key("template");
        let items: Vec<Option<Value>> = match &t.for_each {
            None => vec![None],
            Some(fe) => {
                let at = t.at.key("forEach");
                match r.eval_json(&ctx, fe, &at).map_err(|e| vec![diag(e)])? {
                    Value::Array(a) => a.into_iter().map(Some).collect(),
                    Value::Object(m) => m
                        .into_iter()
                        .map(|(k, v)| Some(json!({"key": k, "value": v})))
                        .collect(),
                    other => {
                        return Err(vec![loc.error(
                            codes::RESULT_TYPE,
                            &at,
                            format!(
                                "forEach {fe:?} must return a list or a map, got {}{suffix}",
                                super::shorthand::type_word(&other)
                            ),
                            "iterate over a list, e.g. ${parameters.quotas}",
                        )])
                    }
                }
            }
        };
        if items.len() > opts.max_collection_size {
            return Err(vec![loc.error(
                codes::FOREACH_RESULT,
                &t.at.key("forEach"),
                format!(
                    "forEach produced {} items, more than {}",
                    items.len(),
                    opts.max_collection_size
                ),
                "reduce the list, or raise the limit with --limit collection-size=N",
            )]);
        }
        for item in items {
            let mut inner = ctx.new_inner_scope();
            if let Some(item) = &item {
                inner.add_variable_as_val(t.var.clone(), to_val(item));
            }
            let obj = r
                .render_planned(&inner, &t.plan, &t.template, (&t.at, "template"))
                .map_err(|e| vec![diag(e)])?;
            let ok = obj
                .get("apiVersion")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
                && obj
                    .get("kind")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty())
                && obj
                    .pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .is_some_and(|s| !s.is_empty());
            if !ok {
                return Err(vec![loc.error(
                    codes::RESOURCE_INVALID,
                    &tpl_at,
                    format!(
                        "resource {:?} renders without apiVersion, kind or metadata.name{suffix}",
                        t.id.as_deref().unwrap_or("")
                    ),
                    "every rendered object needs apiVersion, kind and metadata.name",
                )]);
            }
            out.push(obj);
            made_by.push(t);
        }
    }
    // Upstream's validateRenderedResources: the cell namespace must be among them.
    let has_namespace = out.iter().any(|o| {
        o.get("apiVersion").and_then(Value::as_str) == Some("v1")
            && o.get("kind").and_then(Value::as_str) == Some("Namespace")
            && o.pointer("/metadata/name").and_then(Value::as_str)
                == Some(dp_namespace_of(&b.project, &ns, env).as_str())
    });
    if !has_namespace {
        return Err(vec![loc.error(
            codes::RESOURCE_INVALID,
            &FieldPath::root().key("spec").key("resources"),
            format!(
                "{what} renders no v1 Namespace named {:?}, the project's namespace in this environment{suffix}",
                dp_namespace_of(&b.project, &ns, env)
            ),
            "declare it in spec.resources: {apiVersion: v1, kind: Namespace, metadata: {name: ${metadata.namespace}}}",
        )]);
    }
    // Checked against the Kubernetes schemas as a component's objects are.
    super::release::check_and_annotate(
        &mut out,
        &made_by,
        (loc, &suffix),
        opts,
        &format!("{type_kind}/{}", ty.name),
        &format!("Project/{}", b.project),
    )?;
    Ok((out, warnings))
}

/// The labels of upstream's `buildMetadataContext` that every object of a project in an
/// environment carries, in upstream's order; the resource pipeline adds its resource's two.
pub(crate) fn project_labels(
    env: &str,
    plane: &Plane,
    ns: &str,
    project: &str,
    project_uid: &str,
) -> Map<String, Value> {
    let mut labels = Map::new();
    for (k, v) in [
        (LABEL_ENVIRONMENT, env),
        (LABEL_ENVIRONMENT_UID, plane.environment_uid.as_str()),
        (LABEL_NAMESPACE, ns),
        (LABEL_PROJECT, project),
        (LABEL_PROJECT_UID, project_uid),
    ] {
        labels.insert(k.into(), json!(v));
    }
    labels
}

/// What the project and resource pipelines read from an environment: its uid, its data plane
/// (name, uid) and the `dataplane`, `environment` and `gateway` variables (upstream's
/// `BuildDataPlaneContext` and `BuildEnvironmentContext`, the same in both pipelines).
pub(crate) struct Plane {
    pub environment_uid: String,
    pub dp_name: String,
    pub dp_uid: Option<String>,
    pub dataplane: Value,
    pub environment: Value,
    /// The environment's gateway, each ingress/egress endpoint falling back to the data plane's.
    pub gateway: Option<Value>,
}

/// The Environment `env` of namespace `ns` and its data plane, from the inputs or `--observed`;
/// `Err((what is missing, hint))` when one of them (or the environment's uid) is not known.
pub(crate) fn plane(
    platform: &Platform<'_>,
    ns: &str,
    env: &str,
) -> Result<Plane, (String, String)> {
    let Some(environment) = platform.find("Environment", Some(ns), env) else {
        return Err((
            format!("Environment {env:?} (namespace {}) is not among the inputs", crate::diag::quote(ns)),
            format!("add the Environment {env:?} (with its metadata.uid) to the inputs or pass it with --observed"),
        ));
    };
    let environment = environment.value;
    let Some(environment_uid) = uid(environment) else {
        return Err((
            format!("the uid of Environment {env:?} is not known offline"),
            "upstream puts it into the openchoreo.dev/environment-uid label; give the Environment its metadata.uid or pass the live object with --observed".into(),
        ));
    };
    let Some((dp_name, dp)) = super::upstream::find_data_plane(platform, environment, ns) else {
        return Err((
            format!("the data plane of Environment {env:?} is not among the inputs"),
            "add the DataPlane or ClusterDataPlane the Environment's dataPlaneRef names (else the one named default)".into(),
        ));
    };
    let dp_gateway = dp.pointer("/spec/gateway");
    let mut dataplane = Map::new();
    if let Some(s) = dp
        .pointer("/spec/secretStoreRef/name")
        .and_then(Value::as_str)
    {
        dataplane.insert("secretStore".into(), json!(s));
    }
    if let Some(g) = super::upstream::gateway_data(dp_gateway, None) {
        dataplane.insert("gateway".into(), g);
    }
    if let Some(o) = dp
        .pointer("/spec/observabilityPlaneRef")
        .filter(|o| o.is_object())
    {
        dataplane.insert(
            "observabilityPlaneRef".into(),
            json!({"kind": o.get("kind").and_then(Value::as_str).unwrap_or(""), "name": o.get("name").and_then(Value::as_str).unwrap_or("")}),
        );
    }
    let gateway = super::upstream::gateway_data(environment.pointer("/spec/gateway"), dp_gateway);
    let mut environment_var = Map::new();
    if let Some(g) = &gateway {
        environment_var.insert("gateway".into(), g.clone());
    }
    Ok(Plane {
        environment_uid,
        dp_name,
        dp_uid: uid(dp),
        dataplane: Value::Object(dataplane),
        environment: Value::Object(environment_var),
        gateway,
    })
}

fn dp_namespace_of(project: &str, ns: &str, env: &str) -> String {
    super::upstream::data_plane_namespace(ns, project, env)
}

pub(crate) fn uid(v: &Value) -> Option<String> {
    v.pointer("/metadata/uid")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}
