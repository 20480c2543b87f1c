//! Upstream's resource pipeline (`internal/pipeline/resource`, driven by
//! `internal/controller/resourcereleasebinding`, commit ad3f5030): a ResourceReleaseBinding
//! deploys a Resource to an environment by rendering its (Cluster)ResourceType's `resources`
//! (a database, a cache, a message broker…) into the project's data-plane namespace, and
//! resolves the type's `outputs`, which the components that depend on the resource read. A
//! binding that pins a ResourceRelease (`spec.resourceRelease`) renders the release's frozen type
//! and parameters instead of the live Resource's, as upstream's controller always does.
//!
//! The context is upstream's `BaseContext`: `metadata` (the base name
//! `GenerateK8sName("r_" + resource, environment)`, the data-plane namespace, names, uids and
//! the seven labels of `buildMetadataContext`), `parameters` (the Resource's, defaulted by the
//! type), `environmentConfigs` (the binding's `resourceTypeEnvironmentConfigs`), `dataplane`,
//! `environment` and `gateway` (always present, `{}` without a gateway, as upstream's
//! `buildBaseContext` makes it). Resources render in order (`includeWhen`); nothing is added to
//! them and they are not sorted, as upstream's `RenderManifests` returns them.
//!
//! Outputs are evaluated against the same context. Upstream adds `applied.<id>.status` (the
//! applied objects' live status) for outputs and `readyWhen`; that exists only in a cluster, so
//! an output that reads `applied` is not resolved offline: a component that binds it gets the
//! binding's `status.outputs` from `--observed`, or a named error.

use serde_json::{json, Value};

use crate::diag::{codes, Diagnostic};
use crate::expr::value::to_val;
use crate::fieldpath::FieldPath;

use super::context::{self, NoSection, Sections, Source};
use super::kinds::{
    OutputSource, ResourceBindingDef, ResourceDef, ResourceReleaseDef, ResourceTypeDef,
};
use super::project::{plane, uid};
use super::template::{root_context, Exprs, Renderer, TplError};
use super::upstream::Platform;
use super::Options;

/// The variables a resource type's resources may read: the same as a project type's.
pub(crate) const RESOURCE_TYPE_VARS: &[&str] = super::project::PROJECT_TYPE_VARS;

/// The variables of outputs and `readyWhen`: the same, and the applied objects' status.
pub(crate) const RESOURCE_OUTPUT_VARS: &[&str] = &[
    "metadata",
    "parameters",
    "environmentConfigs",
    "dataplane",
    "environment",
    "gateway",
    "applied",
];

const LABEL_RESOURCE: &str = "openchoreo.dev/resource";
const LABEL_RESOURCE_UID: &str = "openchoreo.dev/resource-uid";

/// The strings of an output that are templates.
fn output_strings(s: &OutputSource) -> Vec<(&str, &'static str)> {
    match s {
        OutputSource::Value(v) => vec![(v.as_str(), "value")],
        OutputSource::SecretKeyRef { name, key } => {
            vec![
                (name.as_str(), "secretKeyRef.name"),
                (key.as_str(), "secretKeyRef.key"),
            ]
        }
        OutputSource::ConfigMapKeyRef { name, key } => vec![
            (name.as_str(), "configMapKeyRef.name"),
            (key.as_str(), "configMapKeyRef.key"),
        ],
    }
}

fn sub_path(at: &FieldPath, dotted: &str) -> FieldPath {
    dotted.split('.').fold(at.clone(), |p, k| p.key(k))
}

/// Compile a resource type's expressions (resources, outputs, readyWhen) once.
pub(crate) fn compile(
    t: &ResourceTypeDef<'_>,
    exprs: &mut Exprs,
    limits: &crate::expr::cel::ExprLimits,
    diags: &mut Vec<Diagnostic>,
) {
    let mut errs = Vec::new();
    super::compile_resources(&t.resources, RESOURCE_TYPE_VARS, exprs, limits, &mut errs);
    for o in &t.outputs {
        for (s, field) in output_strings(&o.source) {
            exprs.add_string(
                s,
                &sub_path(&o.at, field),
                RESOURCE_OUTPUT_VARS,
                limits,
                &mut errs,
            );
        }
    }
    for (rw, at) in &t.ready_when {
        exprs.add_string(
            &format!("${{{rw}}}"),
            at,
            RESOURCE_OUTPUT_VARS,
            limits,
            &mut errs,
        );
    }
    super::push_tpl_errors(&t.loc, errs, diags);
}

/// What one binding rendered: the objects, and each output resolved (`{name, value}`,
/// `{name, secretKeyRef: {name, key}}`, `{name, configMapKeyRef: …}`, as upstream writes them
/// into the binding's `status.outputs`) or the reason it needs a cluster.
#[derive(Debug, Clone)]
pub(crate) struct RenderedResource {
    pub objects: Vec<Value>,
    pub outputs: Vec<(String, Result<Value, String>)>,
    /// Fields of the parameters and environment configs the type does not declare.
    pub warnings: Vec<Diagnostic>,
}

/// Render one ResourceReleaseBinding.
pub(crate) fn render(
    b: &ResourceBindingDef<'_>,
    resources: &[ResourceDef<'_>],
    types: &[ResourceTypeDef<'_>],
    releases: &[ResourceReleaseDef<'_>],
    exprs: &Exprs,
    opts: &Options,
    platform: &Platform<'_>,
) -> Result<RenderedResource, Vec<Diagnostic>> {
    let suffix = format!(
        " (resource {:?} of project {:?}, environment {:?})",
        b.resource, b.project, b.environment
    );
    let missing = |what: String, hint: String| {
        vec![b.loc.error(
            codes::PLATFORM_INPUT,
            &FieldPath::root().key("spec"),
            format!("{what}{suffix}"),
            hint,
        )]
    };
    let Some(ns) = namespace_of(b, opts) else {
        return Err(vec![b.loc.error(
            codes::COMPONENT_NAMESPACE,
            &FieldPath::root().key("metadata"),
            format!(
                "ResourceReleaseBinding of resource {:?} has no namespace",
                b.resource
            ),
            "set metadata.namespace or pass --namespace",
        )]);
    };
    let env = b.environment.as_str();
    // What renders: the ResourceRelease the binding pins (its frozen type and parameters, as
    // upstream's buildResourceTypeFromRelease / buildResourceFromRelease), else the live
    // Resource and its type. The live Resource's uid is read either way (buildMetadataContext).
    let in_ns = |n: &Option<String>| n.as_deref().unwrap_or(ns.as_str()) == ns;
    let live = resources
        .iter()
        .find(|r| r.name == b.resource && in_ns(&r.namespace));
    let (ty, type_kind, params, params_src): (&ResourceTypeDef<'_>, &str, &Value, Source<'_, '_>) =
        match &b.release {
            Some(rel_name) => {
                let Some(rel) = releases
                    .iter()
                    .find(|r| &r.name == rel_name && in_ns(&r.namespace))
                else {
                    return Err(missing(
                        format!("ResourceRelease {rel_name:?} (namespace {}), which the binding pins, is not among the inputs", crate::diag::quote(&ns)),
                        format!("add the ResourceRelease {rel_name:?} (as `kubectl get -o yaml` prints it), or leave spec.resourceRelease unset to render the live Resource and its type"),
                    ));
                };
                if rel.project != b.project || rel.resource != b.resource {
                    return Err(vec![b.loc.error(
                        codes::PLATFORM_INPUT,
                        &FieldPath::root().key("spec").key("resourceRelease"),
                        format!(
                            "ResourceRelease {rel_name:?} belongs to resource {:?} of project {:?}, not to this binding's{suffix}",
                            rel.resource, rel.project
                        ),
                        "upstream refuses a binding whose owner does not match its release's (validateReleaseOwner); pin a release of this resource",
                    )]);
                }
                let kind = if rel.type_def.cluster {
                    "ClusterResourceType"
                } else {
                    "ResourceType"
                };
                (
                    &rel.type_def,
                    kind,
                    &rel.parameters,
                    Source {
                        loc: &rel.loc,
                        at: FieldPath::root().key("spec").key("parameters"),
                    },
                )
            }
            None => {
                let Some(res) = live else {
                    return Err(missing(
                        format!("Resource {:?} (namespace {}) is not among the inputs", b.resource, crate::diag::quote(&ns)),
                        format!("add the Resource {:?} (with its metadata.uid): upstream renders the binding from it and its type", b.resource),
                    ));
                };
                if res.project != b.project {
                    return Err(vec![b.loc.error(
                        codes::PLATFORM_INPUT,
                        &FieldPath::root().key("spec").key("owner").key("projectName"),
                        format!(
                            "the binding's project {:?} is not the project {:?} that owns Resource {:?}{suffix}",
                            b.project, res.project, b.resource
                        ),
                        "upstream refuses a binding whose owner does not match its resource's (validateReleaseOwner); fix spec.owner",
                    )]);
                }
                let cluster = res.type_kind == "ClusterResourceType";
                let Some(ty) = types.iter().find(|t| {
                    t.cluster == cluster
                        && t.name == res.type_name
                        && (cluster || in_ns(&t.namespace))
                }) else {
                    return Err(missing(
                        format!(
                            "{} {:?}, the type of Resource {:?}, is not among the inputs",
                            res.type_kind, res.type_name, b.resource
                        ),
                        format!(
                            "add the {} {:?} to the inputs: upstream renders the resource from it",
                            res.type_kind, res.type_name
                        ),
                    ));
                };
                (
                    ty,
                    res.type_kind.as_str(),
                    &res.parameters,
                    Source {
                        loc: &res.loc,
                        at: FieldPath::root().key("spec").key("parameters"),
                    },
                )
            }
        };
    // The live Resource's uid: from the inputs, else --observed (a pinned release renders
    // without the live Resource's spec, but upstream still reads its uid).
    let live_value = live.map(|r| &r.loc.doc.value).or_else(|| {
        platform
            .find("Resource", Some(&ns), &b.resource)
            .map(|f| f.value)
    });
    let Some(resource_uid) = live_value.and_then(uid) else {
        return Err(missing(
            format!("the uid of Resource {:?} is not known offline", b.resource),
            "upstream puts it into the openchoreo.dev/resource-uid label and metadata.resourceUID; give the Resource its metadata.uid (as `kubectl get -o yaml` prints it), or pass the live Resource with --observed".into(),
        ));
    };
    let Some(project) = platform.find("Project", Some(&ns), &b.project) else {
        return Err(missing(
            format!("Project {:?} (namespace {}) is not among the inputs", b.project, crate::diag::quote(&ns)),
            format!("add the Project {:?} (with its metadata.uid) to the inputs or pass it with --observed", b.project),
        ));
    };
    let Some(project_uid) = uid(project.value) else {
        return Err(missing(
            format!("the uid of Project {:?} is not known offline", b.project),
            "upstream puts it into the openchoreo.dev/project-uid label; give the Project its metadata.uid or pass the live object with --observed".into(),
        ));
    };
    let plane = match plane(platform, &ns, env) {
        Ok(p) => p,
        Err((what, hint)) => return Err(missing(what, hint)),
    };
    let base_name = super::upstream::k8s_name(&[&format!("r_{}", b.resource), env], "");
    let dp_namespace = super::upstream::data_plane_namespace(&ns, &b.project, env);
    let mut labels = super::project::project_labels(env, &plane, &ns, &b.project, &project_uid);
    labels.insert(LABEL_RESOURCE.into(), json!(b.resource));
    labels.insert(LABEL_RESOURCE_UID.into(), json!(resource_uid));
    // Upstream's MetadataContext has no omitempty: every field is present. The data plane's uid
    // is the only one a cluster always knows and the inputs may not; it is left out when
    // unknown, so reading it is an error rather than a wrong "".
    let mut metadata = json!({
        "name": base_name,
        "namespace": dp_namespace,
        "resourceNamespace": ns,
        "resourceName": b.resource,
        "resourceUID": resource_uid,
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
    // Parameters: the Resource's, defaulted (and, as everywhere in kiln, validated) by the type.
    let what = format!("{type_kind} {:?}", ty.name);
    let empty = json!({});
    let Sections {
        parameters,
        environment_configs: env_configs,
        warnings,
    } = context::resolve_sections(
        &ty.schemas,
        NoSection::AsGiven,
        &what,
        (if params.is_null() { &empty } else { params }, &params_src),
        (
            &b.env_configs,
            &Source {
                loc: &b.loc,
                at: FieldPath::root()
                    .key("spec")
                    .key("resourceTypeEnvironmentConfigs"),
            },
        ),
    )?;
    let mut ctx = root_context().new_inner_scope();
    for (k, v) in [
        ("metadata", metadata),
        ("parameters", parameters),
        ("environmentConfigs", env_configs),
        ("dataplane", plane.dataplane),
        ("environment", plane.environment),
        ("gateway", plane.gateway.unwrap_or_else(|| json!({}))),
    ] {
        ctx.add_variable_as_val(k, to_val(&v));
    }
    let r = Renderer {
        exprs,
        budget: opts.eval,
    };
    let loc = &ty.loc;
    let diag = |e: TplError| loc.error(e.code, &e.path, format!("{}{suffix}", e.message), e.hint);
    let mut objects = Vec::new();
    let mut made_by = Vec::new();
    for t in &ty.resources {
        let id = t.id.as_deref().unwrap_or("");
        if let Some(cond) = &t.include_when {
            let at = t.at.key("includeWhen");
            match r.eval(&ctx, cond, &at).map_err(|e| vec![diag(e)])? {
                cel::Value::Bool(true) => {}
                cel::Value::Bool(false) => continue,
                other => {
                    return Err(vec![loc.error(
                        codes::RESULT_TYPE,
                        &at,
                        format!(
                            "includeWhen {cond:?} of resource {id:?} must return a bool, got {:?}{suffix}",
                            other.type_of()
                        ),
                        "compare explicitly, e.g. ${environmentConfigs.adminEnabled == true}",
                    )])
                }
            }
        }
        let tpl_at = t.at.key("template");
        let obj = r
            .render_planned(&ctx, &t.plan, &t.template, (&t.at, "template"))
            .map_err(|e| vec![diag(e)])?;
        let present = |p: &str| {
            obj.pointer(p)
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
        };
        if !(obj.is_object()
            && present("/apiVersion")
            && present("/kind")
            && present("/metadata/name"))
        {
            return Err(vec![loc.error(
                codes::RESOURCE_INVALID,
                &tpl_at,
                format!(
                    "resource {id:?} renders without apiVersion, kind or metadata.name{suffix}"
                ),
                "every rendered object needs apiVersion, kind and metadata.name",
            )]);
        }
        objects.push(obj);
        made_by.push(t);
    }
    // Checked against the Kubernetes schemas as a component's objects are: upstream's apply
    // would refuse what they refuse.
    super::release::check_and_annotate(
        &mut objects,
        &made_by,
        (loc, &suffix),
        opts,
        &format!("{type_kind}/{}", ty.name),
        &format!("Resource/{}", b.resource),
    )?;
    // Outputs: upstream's ResolveOutputs, over the same context (without `applied`).
    let mut outputs = Vec::new();
    for o in &ty.outputs {
        let strings = output_strings(&o.source);
        let reads_applied = strings.iter().any(|(s, _)| reads(exprs, s, "applied"));
        if reads_applied {
            outputs.push((
                o.name.clone(),
                Err(format!(
                    "output {:?} of {what} reads applied.<id>.status, the live status of an applied object, which only a cluster has",
                    o.name
                )),
            ));
            continue;
        }
        let mut vals = Vec::new();
        for (s, field) in &strings {
            let at = sub_path(&o.at, field);
            match r.render_string(&ctx, s, &at).map_err(|e| vec![diag(e)])? {
                Value::String(v) => vals.push(v),
                other => {
                    return Err(vec![loc.error(
                        codes::RESULT_TYPE,
                        &at,
                        format!(
                            "output {:?} ({field}) must be a string, got {}{suffix}",
                            o.name,
                            super::shorthand::type_word(&other)
                        ),
                        "upstream's outputs are strings; convert with string(...)",
                    )])
                }
            }
        }
        let resolved = match &o.source {
            OutputSource::Value(_) => json!({"name": o.name, "value": vals[0]}),
            OutputSource::SecretKeyRef { .. } => {
                json!({"name": o.name, "secretKeyRef": {"name": vals[0], "key": vals[1]}})
            }
            OutputSource::ConfigMapKeyRef { .. } => {
                json!({"name": o.name, "configMapKeyRef": {"name": vals[0], "key": vals[1]}})
            }
        };
        outputs.push((o.name.clone(), Ok(resolved)));
    }
    Ok(RenderedResource {
        objects,
        outputs,
        warnings,
    })
}

/// The binding's namespace (else `--namespace`).
pub(crate) fn namespace_of(b: &ResourceBindingDef<'_>, opts: &Options) -> Option<String> {
    b.namespace.clone().or_else(|| opts.namespace.clone())
}

/// Whether any expression of template string `s` reads variable `var`.
fn reads(exprs: &Exprs, s: &str, var: &str) -> bool {
    let sources: Vec<&str> = match super::template::classify(s) {
        Ok(super::template::Tpl::Whole(e)) => vec![e],
        Ok(super::template::Tpl::Parts(p)) => p
            .into_iter()
            .filter_map(|p| match p {
                super::template::Piece::Expr(e) => Some(e),
                super::template::Piece::Text(_) => None,
            })
            .collect(),
        _ => vec![],
    };
    sources.iter().any(|src| {
        exprs
            .get(src)
            .is_some_and(|c| c.refs.roots.iter().any(|r| r == var))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use crate::component::{render, Options};
    use crate::document::{parse_file, Document, YamlLimits};

    const PLATFORM: &str = r#"
apiVersion: openchoreo.dev/v1alpha1
kind: Project
metadata: {name: shop, namespace: default, uid: p-uid}
spec: {}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Environment
metadata: {name: dev, namespace: default, uid: e-uid}
spec: {dataPlaneRef: {kind: ClusterDataPlane, name: default}}
---
apiVersion: openchoreo.dev/v1alpha1
kind: ClusterDataPlane
metadata: {name: default, uid: d-uid}
spec: {gateway: {}}
"#;

    /// A cut-down valkey type with the shape of the getting-started sample: an admin object
    /// gated on a gateway, an output that reads `gateway` under a false condition.
    const CACHE: &str = r#"
---
apiVersion: openchoreo.dev/v1alpha1
kind: ClusterResourceType
metadata: {name: cache}
spec:
  environmentConfigs:
    openAPIV3Schema:
      type: object
      properties:
        adminEnabled: {type: boolean, default: false}
  outputs:
    - name: host
      value: "${metadata.name}.${metadata.namespace}.svc.cluster.local"
    - name: adminURL
      value: '${environmentConfigs.adminEnabled ? "https://" + gateway.ingress.external.https.host : "disabled"}'
    - name: password
      secretKeyRef: {name: "${metadata.name}-creds", key: password}
  resources:
    - id: service
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${metadata.name}", namespace: "${metadata.namespace}", labels: "${metadata.labels}"}
        spec: {ports: [{port: 6379}]}
    - id: admin
      includeWhen: "${environmentConfigs.adminEnabled && has(gateway.ingress.external)}"
      template:
        apiVersion: v1
        kind: Service
        metadata: {name: "${metadata.name}-admin"}
    - id: no-gateway
      includeWhen: "${!has(gateway.ingress)}"
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${metadata.name}-no-gateway"}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Resource
metadata: {name: redis, namespace: default, uid: r-uid}
spec: {owner: {projectName: shop}, type: {kind: ClusterResourceType, name: cache}}
---
apiVersion: openchoreo.dev/v1alpha1
kind: ResourceReleaseBinding
metadata: {name: redis-dev, namespace: default}
spec: {owner: {projectName: shop, resourceName: redis}, environment: dev}
"#;

    fn run(text: &str) -> Result<Vec<Value>, crate::diag::Diagnostics> {
        let d: Vec<Document> =
            parse_file("t.yaml", text.to_string(), &YamlLimits::default()).unwrap();
        let refs: Vec<&Document> = d.iter().collect();
        render(
            &refs,
            &Options {
                env: Some("dev".into()),
                namespace: Some("default".into()),
                ..Options::default()
            },
        )
        .map(|r| r.objects)
    }

    fn rendered(objs: &[Value]) -> Vec<&Value> {
        objs.iter()
            .filter(|o| o["apiVersion"] != json!("openchoreo.dev/v1alpha1"))
            .collect()
    }

    /// Upstream's `internal/pipeline/resource/valkey_sample_test.go`
    /// (`TestValkeySample_RendersWithoutGateway`): without a gateway anywhere, `gateway` is still
    /// declared (`{}`), the gated objects are left out, and `adminURL` resolves to "disabled"
    /// instead of failing to compile.
    #[test]
    fn renders_without_a_gateway_as_upstreams_valkey_sample_test() {
        let out = run(&format!("{PLATFORM}{CACHE}")).unwrap();
        let objs = rendered(&out);
        // `gateway` is `{}`, so has(gateway.ingress) is false rather than an error.
        // GenerateK8sName("r_redis", "dev"): `_` sanitised to `-`, the hash over the raw parts.
        let name = crate::component::upstream::k8s_name(&["r_redis", "dev"], "");
        let names: Vec<&Value> = objs.iter().map(|o| &o["metadata"]["name"]).collect();
        assert_eq!(
            names,
            [&json!(name), &json!(format!("{name}-no-gateway"))],
            "{objs:#?}"
        );
        let svc = objs[0];
        assert!(name.starts_with("r-redis-dev-"), "{name}");
        assert_eq!(svc["metadata"]["name"], json!(name));
        assert_eq!(
            svc["metadata"]["namespace"],
            json!(crate::component::upstream::data_plane_namespace(
                "default", "shop", "dev"
            ))
        );
        let labels = svc["metadata"]["labels"].as_object().unwrap();
        let keys: Vec<&str> = labels.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "openchoreo.dev/environment",
                "openchoreo.dev/environment-uid",
                "openchoreo.dev/namespace",
                "openchoreo.dev/project",
                "openchoreo.dev/project-uid",
                "openchoreo.dev/resource",
                "openchoreo.dev/resource-uid",
            ]
        );
        assert_eq!(labels["openchoreo.dev/resource-uid"], json!("r-uid"));
    }

    /// The outputs feed a component's resource dependency in the same run (no --observed).
    #[test]
    fn outputs_resolve_a_dependency_in_the_same_run() {
        let component = r#"
---
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentType
metadata: {name: web, namespace: default}
spec:
  workloadType: deployment
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${metadata.name}", namespace: "${metadata.namespace}"}
        spec:
          selector: {matchLabels: "${metadata.podSelectors}"}
          template:
            metadata: {labels: "${metadata.podSelectors}"}
            spec:
              containers: [{name: main, image: "${workload.container.image}", env: "${dependencies.toContainerEnvs()}"}]
---
apiVersion: openchoreo.dev/v1alpha1
kind: Component
metadata: {name: api, namespace: default, uid: c-uid}
spec: {owner: {projectName: shop}, componentType: {kind: ComponentType, name: deployment/web}}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Workload
metadata: {name: api, namespace: default}
spec:
  owner: {projectName: shop, componentName: api}
  container: {image: "api:1"}
  dependencies:
    resources:
      - {ref: redis, envBindings: {adminURL: ADMIN, host: HOST, password: PASSWORD}}
"#;
        let out = run(&format!("{PLATFORM}{CACHE}{component}")).unwrap();
        let deploy = out
            .iter()
            .find(|o| o["kind"] == json!("Deployment"))
            .unwrap();
        let env = &deploy["spec"]["template"]["spec"]["containers"][0]["env"];
        let name = crate::component::upstream::k8s_name(&["r_redis", "dev"], "");
        let ns = crate::component::upstream::data_plane_namespace("default", "shop", "dev");
        assert_eq!(
            env,
            &json!([
                {"name": "ADMIN", "value": "disabled"},
                {"name": "HOST", "value": format!("{name}.{ns}.svc.cluster.local")},
                {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": format!("{name}-creds"), "key": "password"}}},
            ])
        );
    }

    /// With the admin UI enabled and no gateway, `has(gateway.ingress.external)` fails as CEL
    /// (and upstream's engine) fails it: `gateway.ingress` does not exist. The render fails,
    /// naming the resource and the expression, rather than guessing false.
    #[test]
    fn an_expression_that_fails_fails_the_render() {
        let text = format!("{PLATFORM}{CACHE}").replace(
            "spec: {owner: {projectName: shop, resourceName: redis}, environment: dev}",
            "spec: {owner: {projectName: shop, resourceName: redis}, environment: dev, resourceTypeEnvironmentConfigs: {adminEnabled: true}}",
        );
        let e = run(&text).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e:?}");
        assert_eq!(e.0[0].code.id, "KLN5002", "{e:?}");
        assert_eq!(
            e.0[0].path.as_deref(),
            Some("spec.resources[1].includeWhen"),
            "{e:?}"
        );
        assert!(e.0[0].message.contains("resource \"redis\""), "{e:?}");
    }

    /// The resource kinds are rendering kinds: a near miss is named with a did-you-mean, not
    /// passed through (a misspelt binding would leave its resource out of the render).
    #[test]
    fn a_misspelt_resource_kind_is_named() {
        let e = run("apiVersion: openchoreo.dev/v1alpha1\nkind: ResourceReleaseBindng\nmetadata: {name: x}\nspec: {}\n")
            .unwrap_err();
        assert_eq!(e.0[0].code.id, "KLN1011", "{e:?}");
        assert!(
            e.0[0]
                .hint
                .as_deref()
                .unwrap_or("")
                .contains("did you mean \"ResourceReleaseBinding\"?"),
            "{e:?}"
        );
    }
}
