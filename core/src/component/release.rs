//! Rendering one Component for one environment into its Release: the workload with the
//! environment's overrides, the type's resources, then each addon instance in the Component's order
//! (creates, then patches, then removes), then platform labels, checks and the documented order.

use std::borrow::Cow;
use std::collections::BTreeSet;

use cel::{Context, Value as CelValue};
use serde_json::{json, Value};

use crate::diag::{codes, Diagnostic};
use crate::expr::value::to_val;
use crate::fieldpath::FieldPath;

use super::context::{
    self, NoSection, Params, Section, Source, LABEL_COMPONENT, LABEL_ENVIRONMENT,
};
use super::kinds::{
    ComponentDef, Loc, Model, PatchDef, PostValidation, ReleaseBindingDef, RemoveDef, ResourceTpl,
    Target, TraitDef, TypeDef, WorkloadDef,
};
use super::template::{root_context, Exprs, Renderer, TplError};
use super::{order, overrides, patch, pointer};

/// Everything one release needs.
pub(crate) struct Unit<'u, 'a> {
    pub component: &'u ComponentDef<'a>,
    pub type_def: &'u TypeDef<'a>,
    /// One per `component.addons` entry, same order.
    pub addons: Vec<&'u TraitDef<'a>>,
    /// One per `type_def.embedded` entry, same order.
    pub embedded: Vec<&'u TraitDef<'a>>,
    pub workload: &'u WorkloadDef<'a>,
    pub deployment: Option<&'u ReleaseBindingDef<'a>>,
    pub env: String,
    pub namespace: String,
}

struct Ctx<'u, 'a, 'e> {
    unit: &'u Unit<'u, 'a>,
    r: Renderer<'e>,
    /// Most items one forEach may produce.
    max_items: usize,
    /// The labels every rendered resource gets: upstream's `openchoreo.dev/*` labels for upstream
    /// kinds, the first implementation's `openchoreo.org/*` labels for the proposal's.
    labels: serde_json::Map<String, Value>,
}

impl Ctx<'_, '_, '_> {
    fn suffix(&self) -> String {
        format!(
            " (component {:?}, environment {})",
            self.unit.component.name,
            crate::diag::quote(&self.unit.env)
        )
    }

    fn tpl_diag(&self, loc: &Loc<'_>, e: TplError) -> Diagnostic {
        loc.error(
            e.code,
            &e.path,
            format!("{}{}", e.message, self.suffix()),
            e.hint,
        )
    }
}

/// Bind the variables some expression reads, read in place (the unit's parameters are
/// borrowed, not copied to be read). Every expression evaluated in these contexts is one of
/// `exprs` (an expression that is not is refused as not compiled), so a variable none of them
/// reads is never looked up.
fn with_vars<'c, V: std::borrow::Borrow<Value>>(
    ctx: &mut Context<'c, 'static>,
    exprs: &Exprs,
    vars: &[(&str, V)],
) {
    for (k, v) in vars {
        if exprs.reads(k) {
            ctx.add_variable_as_val(k.to_string(), to_val(v.borrow()));
        }
    }
}

/// Render one unit.
pub(crate) fn render(
    unit: &Unit<'_, '_>,
    exprs: &Exprs,
    opts: &super::Options,
    platform: &super::upstream::Platform<'_>,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    if unit.type_def.model == Model::Upstream {
        return render_upstream(unit, exprs, opts, platform);
    }
    let mut labels = serde_json::Map::new();
    labels.insert(LABEL_COMPONENT.into(), json!(unit.component.name));
    labels.insert(LABEL_ENVIRONMENT.into(), json!(unit.env));
    let c = Ctx {
        unit,
        r: Renderer {
            exprs,
            budget: opts.eval,
        },
        max_items: opts.max_collection_size,
        labels,
    };
    let comp = unit.component;
    let ty = unit.type_def;
    let Resolved {
        params,
        workload_spec: wl_spec,
        addon_params,
    } = resolve(unit, &c.suffix())?;
    let base_vars = context::component_vars(
        comp,
        &unit.namespace,
        &unit.env,
        unit.workload,
        &wl_spec,
        &params,
    );

    let mut ctx = root_context().new_inner_scope();
    with_vars(&mut ctx, exprs, &base_vars);
    let mut resources: Vec<Value> = Vec::new();
    // The template each resource was made from, parallel to `resources`: where a problem with
    // the finished object is reported.
    let mut made_by: Vec<(&Loc<'_>, &ResourceTpl)> = Vec::new();
    for t in &ty.resources {
        let made = c.resource(&ctx, &ty.loc, t).map_err(|e| vec![e])?;
        made_by.extend(std::iter::repeat_n((&ty.loc, t), made.len()));
        resources.extend(made);
    }

    for ((use_, addon), params) in comp.addons.iter().zip(&unit.addons).zip(&addon_params) {
        // An addon sees the component's variables with its own parameters, envOverrides and
        // environmentConfigs in their place: a scope over the component's, so the component's
        // values are not converted again for every addon.
        let vars = context::addon_vars(&addon.name, &use_.instance, params);
        let mut actx = ctx.new_inner_scope();
        with_vars(&mut actx, exprs, &vars);
        for t in &addon.creates {
            let made = c.resource(&actx, &addon.loc, t).map_err(|e| vec![e])?;
            made_by.extend(std::iter::repeat_n((&addon.loc, t), made.len()));
            resources.extend(made);
        }
        for p in &addon.patches {
            c.patch(&actx, addon, &use_.instance, p, &mut resources)
                .map_err(|e| vec![e])?;
        }
        // Removes mark what they match; the marked resources go after the last entry, so every
        // entry sees the same set.
        let mut marked = vec![false; resources.len()];
        for rm in &addon.removes {
            c.remove(&actx, addon, &use_.instance, rm, &resources, &mut marked)
                .map_err(|e| vec![e])?;
        }
        let mut keep = marked.iter().map(|m| !m);
        resources.retain(|_| keep.next().unwrap_or(true));
        let mut keep = marked.iter().map(|m| !m);
        made_by.retain(|_| keep.next().unwrap_or(true));
    }

    check_schemas(&c, &resources, &made_by, &opts.schemas)?;
    if opts.provenance {
        let instance = format!("Component/{}", comp.name);
        for (res, (loc, t)) in resources.iter_mut().zip(&made_by) {
            // Named by the definitions' own names, not the documents they were read from: a
            // snapshot or release renders exactly as the live definitions do.
            let definition = match unit.addons.iter().find(|a| std::ptr::eq(&a.loc, *loc)) {
                Some(a) => format!("Addon/{}", a.name),
                None => format!("ComponentTypeDefinition/{}", ty.name),
            };
            let node = t.id.clone().unwrap_or_else(|| t.at.to_string());
            crate::provenance::annotate(
                res,
                &[
                    (crate::provenance::PROVENANCE_DEFINITION, &definition),
                    (crate::provenance::PROVENANCE_INSTANCE, &instance),
                    (crate::provenance::PROVENANCE_NODE, &node),
                ],
            );
        }
    }
    finish(&c, resources)
}

/// Render one unit of an upstream ComponentType as upstream's pipeline does
/// (`internal/pipeline/component/pipeline.go`, `Render`): the context, the type's validations,
/// its resources, its embedded traits, then the component's traits (each: validations, creates,
/// patches, removes), then the labels of `metadata.labels` on every resource.
fn render_upstream(
    unit: &Unit<'_, '_>,
    exprs: &Exprs,
    opts: &super::Options,
    platform: &super::upstream::Platform<'_>,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    let comp = unit.component;
    let ty = unit.type_def;
    let suffix = format!(
        " (component {:?}, environment {})",
        comp.name,
        crate::diag::quote(&unit.env)
    );
    let Resolved {
        params,
        workload_spec: wl_spec,
        addon_params,
    } = resolve(unit, &suffix)?;
    let up = super::upstream::build(
        comp,
        &unit.workload.loc,
        &unit.env,
        &unit.namespace,
        &wl_spec,
        platform,
    )?;
    let c = Ctx {
        unit,
        r: Renderer {
            exprs,
            budget: opts.eval,
        },
        max_items: opts.max_collection_size,
        labels: up.labels.clone(),
    };
    let mut ctx = root_context().new_inner_scope();
    with_vars(&mut ctx, exprs, &up.vars);
    with_vars(
        &mut ctx,
        exprs,
        &[
            ("parameters", &params.all),
            ("environmentConfigs", &params.env_part),
        ],
    );
    c.validations(
        &ctx,
        &ty.loc,
        &ty.validations,
        &format!("ComponentType {:?}", ty.name),
    )
    .map_err(|e| vec![e])?;
    let mut resources: Vec<Value> = Vec::new();
    let mut made_by: Vec<(&Loc<'_>, &ResourceTpl)> = Vec::new();
    for t in &ty.resources {
        let made = c.resource(&ctx, &ty.loc, t).map_err(|e| vec![e])?;
        made_by.extend(std::iter::repeat_n((&ty.loc, t), made.len()));
        resources.extend(made);
    }
    // Trait instances with post-render validations, evaluated once every trait is applied.
    let mut post_traits: Vec<(&TraitDef<'_>, &str, Params, &str)> = Vec::new();
    // Embedded traits: their parameters are `${…}` over the component's context, resolved first.
    for (e, addon) in ty.embedded.iter().zip(&unit.embedded) {
        let ps =
            c.r.render_planned(&ctx, &e.plans[0], &e.parameters, (&e.at, "parameters"))
                .map_err(|err| vec![c.tpl_diag(&ty.loc, err)])?;
        let es =
            c.r.render_planned(
                &ctx,
                &e.plans[1],
                &e.environment_configs,
                (&e.at, "environmentConfigs"),
            )
            .map_err(|err| vec![c.tpl_diag(&ty.loc, err)])?;
        let what = format!(
            "Trait {:?} (embedded instance {:?})",
            addon.name, e.instance
        );
        let params = trait_params(
            addon,
            &what,
            (&ps, &ty.loc, e.at.key("parameters")),
            (&es, &ty.loc, e.at.key("environmentConfigs")),
        )?;
        c.apply_trait(
            &ctx,
            addon,
            &e.instance,
            &params,
            &mut resources,
            &mut made_by,
        )?;
        if !addon.post_validations.is_empty() {
            post_traits.push((*addon, e.instance.as_str(), params, "embedded instance"));
        }
    }
    for ((use_, addon), params) in comp.addons.iter().zip(&unit.addons).zip(&addon_params) {
        c.apply_trait(
            &ctx,
            addon,
            &use_.instance,
            params,
            &mut resources,
            &mut made_by,
        )?;
    }
    // Upstream's evaluatePostRenderValidations: after every trait, over the final resource set
    // (before labels), the type's rules in its context, then each trait instance's in its own;
    // every failure is reported.
    let planes: Vec<&str> = made_by
        .iter()
        .map(|(_, t)| t.target_plane.as_deref().unwrap_or("dataplane"))
        .collect();
    let mut post_errors = Vec::new();
    c.post_validations(
        &ctx,
        &ty.loc,
        &ty.post_validations,
        &format!("ComponentType {:?}", ty.name),
        (&resources, &planes),
        &mut post_errors,
    );
    let owned: Vec<(&TraitDef<'_>, &str, Params, &str)> = comp
        .addons
        .iter()
        .zip(&unit.addons)
        .zip(addon_params)
        .filter(|((_, a), _)| !a.post_validations.is_empty())
        .map(|((u, a), p)| (*a, u.instance.as_str(), p, "instance"))
        .collect();
    for (addon, instance, params, how) in post_traits.into_iter().chain(owned) {
        let actx = trait_scope(&ctx, addon, instance, &params, exprs);
        c.post_validations(
            &actx,
            &addon.loc,
            &addon.post_validations,
            &format!("Trait {:?} ({how} {instance:?})", addon.name),
            (&resources, &planes),
            &mut post_errors,
        );
    }
    if !post_errors.is_empty() {
        return Err(post_errors);
    }
    check_schemas(&c, &resources, &made_by, &opts.schemas)?;
    let data_plane: Vec<bool> = planes.iter().map(|p| *p == "dataplane").collect();
    add_dp_resource_hash(&ty.workload_type, &mut resources, &data_plane);
    if opts.provenance {
        provenance(unit, &mut resources, &made_by);
    }
    finish(&c, resources)
}

/// Upstream's `addDPResourceHashAnnotation` (`internal/pipeline/component/pipeline.go`): for a
/// deployment or statefulset type, a hash of every other resource (without its metadata, sorted
/// by kind, apiVersion, namespace, name) goes into the main workload's pod-template annotation
/// `openchoreo.dev/dp-resource-hash`, so a change of a ConfigMap or Secret rolls the pods.
/// Upstream hashes go-spew's `%#v` text of the objects (`k8s.io/utils/dump.ForHash`) with
/// FNV-32a and encodes the decimal with `rand.SafeEncodeString`; numbers are written as the
/// float64 that upstream's JSON-decoded templates and context hold.
fn add_dp_resource_hash(workload_type: &str, resources: &mut [Value], data_plane: &[bool]) {
    let main_kind = match workload_type {
        "deployment" => "Deployment",
        "statefulset" => "StatefulSet",
        _ => return,
    };
    let kind_of = |r: &Value| {
        r.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    // Only data-plane resources count (upstream renders the others into another release).
    let mut others: Vec<&Value> = resources
        .iter()
        .zip(data_plane.iter().chain(std::iter::repeat(&true)))
        .filter(|(r, dp)| **dp && kind_of(r) != main_kind)
        .map(|(r, _)| r)
        .collect();
    if others.is_empty() {
        return;
    }
    others.sort_by_key(|r| order::key(r));
    let mut text = String::from("([]map[string]interface {})[");
    for (i, r) in others.iter().enumerate() {
        if i > 0 {
            text.push(' ');
        }
        let mut m = r.as_object().cloned().unwrap_or_default();
        m.remove("metadata");
        spew_map(&m, &mut text);
    }
    text.push(']');
    let hash = super::functions::fnv32a(text.as_bytes());
    let encoded = safe_encode(&hash.to_string());
    if let Some(main) = resources.iter_mut().find(|r| kind_of(r) == main_kind) {
        if let Some(spec) = main.get_mut("spec").and_then(Value::as_object_mut) {
            let tpl = spec.entry("template").or_insert_with(|| json!({}));
            if !tpl.is_object() {
                *tpl = json!({});
            }
            let md = tpl
                .as_object_mut()
                .map(|t| t.entry("metadata").or_insert_with(|| json!({})));
            if let Some(md) = md {
                if !md.is_object() {
                    *md = json!({});
                }
                if let Some(md) = md.as_object_mut() {
                    let ann = md.entry("annotations").or_insert_with(|| json!({}));
                    if !ann.is_object() {
                        *ann = json!({});
                    }
                    if let Some(a) = ann.as_object_mut() {
                        a.insert("openchoreo.dev/dp-resource-hash".into(), json!(encoded));
                    }
                }
            }
        }
    }
}

/// `k8s.io/apimachinery/pkg/util/rand.SafeEncodeString`.
fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.chars()
        .map(|c| ALPHANUMS[(c as usize) % ALPHANUMS.len()] as char)
        .collect()
}

/// go-spew's `%#v` of a `map[string]interface {}` met as a slice element or map value's content:
/// `map[k:(type)v …]`, keys sorted.
fn spew_map(m: &serde_json::Map<String, Value>, out: &mut String) {
    out.push_str("map[");
    let mut keys: Vec<&String> = m.keys().collect();
    keys.sort();
    for (i, k) in keys.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(k);
        out.push(':');
        spew_typed(&m[k.as_str()], out);
    }
    out.push(']');
}

/// go-spew's `%#v` of an `interface {}` value: its dynamic type in parentheses, then the value.
fn spew_typed(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("(interface {})<nil>"),
        Value::Bool(b) => {
            out.push_str("(bool)");
            out.push_str(if *b { "true" } else { "false" });
        }
        Value::Number(n) => {
            out.push_str("(float64)");
            out.push_str(&super::template::go_g(n.as_f64().unwrap_or(0.0)));
        }
        Value::String(s) => {
            out.push_str("(string)");
            out.push_str(s);
        }
        Value::Array(a) => {
            out.push_str("([]interface {})[");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                spew_typed(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push_str("(map[string]interface {})");
            spew_map(m, out);
        }
    }
}

/// An upstream trait instance's two sections: its parameters and its environmentConfigs, each
/// defaulted and validated against its own schema.
fn trait_params(
    addon: &TraitDef<'_>,
    what: &str,
    params: (&Value, &Loc<'_>, FieldPath),
    env: (&Value, &Loc<'_>, FieldPath),
) -> Result<Params, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let all = context::resolve_section(
        &Section::parameters(&addon.schemas, NoSection::Empty),
        what,
        "parameters",
        params.0,
        &Source {
            loc: params.1,
            at: params.2,
        },
    )
    .map_err(|e| errors.extend(e))
    .ok();
    let env_part = context::resolve_section(
        &Section::environment_configs(&addon.schemas, NoSection::Empty),
        what,
        "environmentConfigs",
        env.0,
        &Source {
            loc: env.1,
            at: env.2,
        },
    )
    .map_err(|e| errors.extend(e))
    .ok();
    match (all, env_part) {
        (Some(all), Some(env_part)) if errors.is_empty() => Ok(Params { all, env_part }),
        _ => Err(errors),
    }
}

fn provenance(unit: &Unit<'_, '_>, resources: &mut [Value], made_by: &[(&Loc<'_>, &ResourceTpl)]) {
    let instance = format!("Component/{}", unit.component.name);
    for (res, (loc, t)) in resources.iter_mut().zip(made_by) {
        let definition = match unit
            .addons
            .iter()
            .chain(&unit.embedded)
            .find(|a| std::ptr::eq(&a.loc, *loc))
        {
            Some(a) => format!("Addon/{}", a.name),
            None => format!("ComponentTypeDefinition/{}", unit.type_def.name),
        };
        let node = t.id.clone().unwrap_or_else(|| t.at.to_string());
        crate::provenance::annotate(
            res,
            &[
                (crate::provenance::PROVENANCE_DEFINITION, &definition),
                (crate::provenance::PROVENANCE_INSTANCE, &instance),
                (crate::provenance::PROVENANCE_NODE, &node),
            ],
        );
    }
}

/// A release's parameters, resolved: the component's (with the environment's overrides), the
/// workload with the environment's overrides, each addon instance's.
struct Resolved {
    params: Params,
    workload_spec: Value,
    addon_params: Vec<Params>,
}

/// Resolve every parameter of a release, reporting every problem at once.
/// The workload's spec with the environment's env/file overrides applied (upstream step 2), or
/// `None` with the error recorded.
fn overridden_workload(
    unit: &Unit<'_, '_>,
    suffix: &str,
    errors: &mut Vec<Diagnostic>,
) -> Option<Value> {
    let Some((d, o)) = unit
        .deployment
        .and_then(|d| d.workload_overrides.as_ref().map(|o| (d, o)))
    else {
        return Some(unit.workload.spec.clone());
    };
    overrides::apply(&unit.workload.spec, o)
        .map_err(|(at, m)| {
            errors.push(unit.workload.loc.error(
                codes::COMPONENT_INVALID,
                &at,
                format!(
                    "cannot apply the workload overrides of environment {:?} ({}): {m}{suffix}",
                    d.environment,
                    d.loc.doc.file(),
                ),
                "env and files of a container are lists of {key, value} entries",
            ))
        })
        .ok()
}

fn resolve(unit: &Unit<'_, '_>, suffix: &str) -> Result<Resolved, Vec<Diagnostic>> {
    let comp = unit.component;
    let ty = unit.type_def;
    let mut errors = Vec::new();
    let type_what = format!("ComponentTypeDefinition {:?}", ty.name);
    let comp_src = Source {
        loc: &comp.loc,
        at: FieldPath::root().key("spec").key("parameters"),
    };
    if ty.model == Model::Upstream {
        return resolve_upstream(unit, suffix);
    }
    let ov_src = unit.deployment.map(|d| Source {
        loc: &d.loc,
        at: d.overrides_at.clone(),
    });
    let params = context::resolve_params(
        &ty.schemas,
        &type_what,
        &comp.parameters,
        &comp_src,
        unit.deployment
            .zip(ov_src.as_ref())
            .map(|(d, s)| (&d.overrides, s)),
    )
    .map_err(|ds| errors.extend(ds))
    .ok();
    let workload_spec = overridden_workload(unit, suffix, &mut errors);
    let mut addon_params = Vec::new();
    for (use_, addon) in comp.addons.iter().zip(&unit.addons) {
        let src = Source {
            loc: &comp.loc,
            at: use_.config_at.clone(),
        };
        let ov = unit.deployment.and_then(|d| {
            d.addon_overrides
                .get(&use_.instance)
                .map(|(v, at)| (v, d, at))
        });
        let ov_src = ov.map(|(_, d, at)| Source {
            loc: &d.loc,
            at: at.clone(),
        });
        let what = format!("Addon {:?} (instance {:?})", addon.name, use_.instance);
        match context::resolve_params(
            &addon.schemas,
            &what,
            &use_.config,
            &src,
            ov.zip(ov_src.as_ref()).map(|((v, _, _), s)| (v, s)),
        ) {
            Ok(p) => addon_params.push(p),
            Err(ds) => errors.extend(ds),
        }
    }
    match (params, workload_spec) {
        (Some(params), Some(workload_spec)) if errors.is_empty() => Ok(Resolved {
            params,
            workload_spec,
            addon_params,
        }),
        _ => Err(errors),
    }
}

/// [`resolve`] for an upstream ComponentType: `parameters` from the Component against
/// `spec.parameters`, `environmentConfigs` from the binding against `spec.environmentConfigs`,
/// and each trait instance's two sections likewise (upstream `processComponentParameters`,
/// `ExtractTraitInstanceBindings`).
fn resolve_upstream(unit: &Unit<'_, '_>, suffix: &str) -> Result<Resolved, Vec<Diagnostic>> {
    let comp = unit.component;
    let ty = unit.type_def;
    let what = format!("ComponentType {:?}", ty.name);
    let mut errors = Vec::new();
    // Upstream's Component has these fields; any other would not render (its API server prunes
    // it), so a proposal-era field on a Component of an upstream type is a mistake.
    if comp.loc.doc.kind() == Some("Component") {
        let spec_at = FieldPath::root().key("spec");
        for k in &comp.spec_fields {
            if !matches!(
                k.as_str(),
                "owner"
                    | "componentType"
                    | "autoDeploy"
                    | "autoBuild"
                    | "parameters"
                    | "traits"
                    | "workflow"
            ) {
                errors.push(comp.loc.error(
                    codes::UNSUPPORTED_FEATURE,
                    &spec_at.key(k),
                    format!(
                        "Component field spec.{k} is not part of upstream's Component and would not render with ComponentType {:?}{suffix}",
                        ty.name
                    ),
                    "upstream's Component has owner, componentType, autoDeploy, autoBuild, parameters, traits and workflow",
                ));
            }
        }
    }
    let all = context::resolve_section(
        &Section::parameters(&ty.schemas, NoSection::Empty),
        &what,
        "parameters",
        &comp.parameters,
        &Source {
            loc: &comp.loc,
            at: FieldPath::root().key("spec").key("parameters"),
        },
    )
    .map_err(|e| errors.extend(e))
    .ok();
    let empty = json!({});
    let (env_value, env_src) = match unit.deployment {
        Some(d) => (
            &d.overrides,
            Source {
                loc: &d.loc,
                at: d.overrides_at.clone(),
            },
        ),
        None => (
            &empty,
            Source {
                loc: &comp.loc,
                at: FieldPath::root(),
            },
        ),
    };
    let env_part = context::resolve_section(
        &Section::environment_configs(&ty.schemas, NoSection::Empty),
        &what,
        "environmentConfigs",
        env_value,
        &env_src,
    )
    .map_err(|e| errors.extend(e))
    .ok();
    let workload_spec = overridden_workload(unit, suffix, &mut errors);
    let mut addon_params = Vec::new();
    for (use_, addon) in comp.addons.iter().zip(&unit.addons) {
        let what = format!("Trait {:?} (instance {:?})", addon.name, use_.instance);
        let (ov, ov_loc, ov_at) = match unit.deployment.and_then(|d| {
            d.addon_overrides
                .get(&use_.instance)
                .map(|(v, at)| (v, d, at))
        }) {
            Some((v, d, at)) => (v, &d.loc, at.clone()),
            None => (&empty, &comp.loc, FieldPath::root()),
        };
        match trait_params(
            addon,
            &what,
            (&use_.config, &comp.loc, use_.config_at.clone()),
            (ov, ov_loc, ov_at),
        ) {
            Ok(p) => addon_params.push(p),
            Err(ds) => errors.extend(ds),
        }
    }
    match (all, env_part, workload_spec) {
        (Some(all), Some(env_part), Some(workload_spec)) if errors.is_empty() => Ok(Resolved {
            params: Params { all, env_part },
            workload_spec,
            addon_params,
        }),
        _ => Err(errors),
    }
}

/// The fields of an upstream unit's parameters and environment configs that its definitions'
/// schemas do not declare, one warning each (see [`context::undeclared_warnings`]): the
/// Component's `parameters`, the binding's `componentTypeEnvironmentConfigs`, each trait
/// instance's `parameters` and `traitEnvironmentConfigs`, and the literal keys of each embedded
/// trait's `parameters` and `environmentConfigs` (upstream's `applySchemaSection` for each).
/// The proposal's kinds refuse undeclared parameters instead (KLN6005).
pub(crate) fn undeclared_parameters(unit: &Unit<'_, '_>) -> Vec<Diagnostic> {
    let comp = unit.component;
    let ty = unit.type_def;
    if ty.model == Model::Proposal {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut check = |section: Section<'_>, what: &str, name: &str, value: &Value, loc, at| {
        out.extend(context::undeclared_warnings(
            &section,
            what,
            name,
            value,
            &Source { loc, at },
        ));
    };
    let what = format!("ComponentType {:?}", ty.name);
    check(
        Section::parameters(&ty.schemas, NoSection::Empty),
        &what,
        "parameters",
        &comp.parameters,
        &comp.loc,
        FieldPath::root().key("spec").key("parameters"),
    );
    if let Some(d) = unit.deployment {
        check(
            Section::environment_configs(&ty.schemas, NoSection::Empty),
            &what,
            "environmentConfigs",
            &d.overrides,
            &d.loc,
            d.overrides_at.clone(),
        );
    }
    for (e, addon) in ty.embedded.iter().zip(&unit.embedded) {
        let what = format!(
            "Trait {:?} (embedded instance {:?})",
            addon.name, e.instance
        );
        check(
            Section::parameters(&addon.schemas, NoSection::Empty),
            &what,
            "parameters",
            &e.parameters,
            &ty.loc,
            e.at.key("parameters"),
        );
        check(
            Section::environment_configs(&addon.schemas, NoSection::Empty),
            &what,
            "environmentConfigs",
            &e.environment_configs,
            &ty.loc,
            e.at.key("environmentConfigs"),
        );
    }
    for (use_, addon) in comp.addons.iter().zip(&unit.addons) {
        let what = format!("Trait {:?} (instance {:?})", addon.name, use_.instance);
        check(
            Section::parameters(&addon.schemas, NoSection::Empty),
            &what,
            "parameters",
            &use_.config,
            &comp.loc,
            use_.config_at.clone(),
        );
        if let Some((v, at)) = unit
            .deployment
            .and_then(|d| d.addon_overrides.get(&use_.instance).map(|o| (d, o)))
            .map(|(d, (v, at))| (v, (&d.loc, at.clone())))
        {
            check(
                Section::environment_configs(&addon.schemas, NoSection::Empty),
                &what,
                "environmentConfigs",
                v,
                at.0,
                at.1,
            );
        }
    }
    out
}

/// What can be checked of a release whose definitions have errors of their own: its parameters.
pub(crate) fn check_parameters(unit: &Unit<'_, '_>) -> Result<(), Vec<Diagnostic>> {
    let suffix = format!(
        " (component {:?}, environment {})",
        unit.component.name,
        crate::diag::quote(&unit.env)
    );
    resolve(unit, &suffix).map(|_| ())
}

/// Every finished resource against the Kubernetes schema of its kind, as kro templates and kurel
/// resources are checked: a misspelt field or a value of the wrong type never reaches the
/// cluster. A problem is reported at the template the resource was made from, at the deepest
/// field the template writes literally (an expression that produced a bad value is reported
/// where it is written).
fn check_schemas(
    c: &Ctx<'_, '_, '_>,
    resources: &[Value],
    made_by: &[(&Loc<'_>, &ResourceTpl)],
    schemas: &crate::openapi::Schemas,
) -> Result<(), Vec<Diagnostic>> {
    // Made once for the unit, not once for each of its resources: it is only shown in errors.
    let suffix = c.suffix();
    let errors: Vec<Diagnostic> = resources
        .iter()
        .zip(made_by)
        .flat_map(|(res, (loc, t))| schema_errors(res, loc, t, &suffix, schemas))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The last steps of the project and resource pipelines, as for a component's objects: each
/// object checked against the Kubernetes schemas (every problem reported, nothing returned on
/// one), then, with provenance on, annotated with its definition, instance and template node.
pub(crate) fn check_and_annotate(
    objects: &mut [Value],
    made_by: &[&ResourceTpl],
    (loc, suffix): (&Loc<'_>, &str),
    opts: &super::Options,
    definition: &str,
    instance: &str,
) -> Result<(), Vec<Diagnostic>> {
    let errors: Vec<Diagnostic> = objects
        .iter()
        .zip(made_by)
        .flat_map(|(o, t)| schema_errors(o, loc, t, suffix, &opts.schemas))
        .collect();
    if !errors.is_empty() {
        return Err(errors);
    }
    if opts.provenance {
        for (o, t) in objects.iter_mut().zip(made_by) {
            let node = t.id.clone().unwrap_or_else(|| t.at.to_string());
            crate::provenance::annotate(
                o,
                &[
                    (crate::provenance::PROVENANCE_DEFINITION, definition),
                    (crate::provenance::PROVENANCE_INSTANCE, instance),
                    (crate::provenance::PROVENANCE_NODE, &node),
                ],
            );
        }
    }
    Ok(())
}

/// A rendered object checked against the Kubernetes schema of its kind (when kiln bundles one),
/// each problem placed at the template `t` that wrote it; `suffix` names the unit. Shared by the
/// component, project and resource pipelines.
pub(crate) fn schema_errors(
    res: &Value,
    loc: &Loc<'_>,
    t: &ResourceTpl,
    suffix: &str,
    schemas: &crate::openapi::Schemas,
) -> Vec<Diagnostic> {
    let mut errors = Vec::new();
    let (Some(api), Some(kind)) = (
        res.get("apiVersion").and_then(Value::as_str),
        res.get("kind").and_then(Value::as_str),
    ) else {
        return errors; // reported by `finish`
    };
    let Some(ks) = schemas.lookup(api, kind) else {
        // A built-in group's unknown kind, reported at the template's kind.
        if let Some(d) = crate::inventory::check_builtin(api, kind) {
            errors.push(loc.error(
                d.code,
                &t.at.key("template").key("kind"),
                format!("{}: {}{suffix}", describe(res), d.message),
                d.hint.unwrap_or_default(),
            ));
        }
        return errors;
    };
    for (p, msg) in ks.check_rendered(res) {
        let written = literal_prefix(&t.template, &p);
        errors.push(loc.error(
            codes::COMPONENT_SCHEMA,
            &t.at.key("template").join(&written),
            format!("{}: {p}: {msg}{suffix}", describe(res)),
            format!(
                "see the {kind} schema (Kubernetes {}); fix the template, the parameter or the addon patch that writes this field",
                crate::openapi::Schemas::kubernetes_version()
            ),
        ));
    }
    errors
}

/// The longest prefix of `path` that exists in the template as written.
fn literal_prefix(template: &Value, path: &FieldPath) -> FieldPath {
    use crate::fieldpath::Segment;
    let mut at = template;
    let mut out = FieldPath::root();
    for seg in &path.0 {
        let next = match seg {
            Segment::Key(k) => at.get(k.as_str()),
            Segment::Index(i) => at.get(*i),
        };
        match next {
            Some(v) => {
                at = v;
                out = match seg {
                    Segment::Key(k) => out.key(k),
                    Segment::Index(i) => out.index(*i),
                };
            }
            None => break,
        }
    }
    out
}

/// A trait instance's context: the component's, with the instance's `parameters`,
/// `environmentConfigs` and `trait` (upstream's `BuildTraitContext`).
fn trait_scope<'p>(
    base: &'p Context<'_, 'static>,
    addon: &TraitDef<'_>,
    instance: &str,
    params: &Params,
    exprs: &Exprs,
) -> Context<'p, 'static> {
    let mut actx = base.new_inner_scope();
    with_vars(
        &mut actx,
        exprs,
        &[
            ("parameters", Cow::Borrowed(&params.all)),
            ("environmentConfigs", Cow::Borrowed(&params.env_part)),
            (
                "trait",
                Cow::Owned(json!({"name": addon.name, "instanceName": instance})),
            ),
        ],
    );
    actx
}

impl Ctx<'_, '_, '_> {
    /// Upstream's `evaluateOnePostRender` for each rule: `when` once, then per `forEach` item the
    /// resources of the rule's plane its target selects (kind, group, version, then `where`);
    /// none selected fails unless `mustMatch: false`; the rule must be true for each, with
    /// `resource` bound to it. Failures are collected in `errors` (upstream joins them all).
    fn post_validations(
        &self,
        ctx: &Context<'_, '_>,
        loc: &Loc<'_>,
        rules: &[PostValidation],
        what: &str,
        (resources, planes): (&[Value], &[&str]),
        errors: &mut Vec<Diagnostic>,
    ) {
        for v in rules {
            if let Err(e) = self.post_validation(ctx, loc, v, what, resources, planes, errors) {
                errors.push(e);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn post_validation(
        &self,
        ctx: &Context<'_, '_>,
        loc: &Loc<'_>,
        v: &PostValidation,
        what: &str,
        resources: &[Value],
        planes: &[&str],
        errors: &mut Vec<Diagnostic>,
    ) -> Result<(), Diagnostic> {
        if let Some(w) = &v.when {
            let at = v.at.key("when");
            match self
                .r
                .eval(ctx, w, &at)
                .map_err(|e| self.tpl_diag(loc, e))?
            {
                CelValue::Bool(true) => {}
                CelValue::Bool(false) => return Ok(()),
                other => {
                    return Err(loc.error(
                        codes::RESULT_TYPE,
                        &at,
                        format!(
                            "when {w:?} must return a bool, got {:?}{}",
                            other.type_of(),
                            self.suffix()
                        ),
                        "compare explicitly, e.g. ${parameters.enabled == true}",
                    ))
                }
            }
        }
        let items: Vec<Option<Value>> = match &v.for_each {
            None => vec![None],
            Some(fe) => self
                .items(ctx, loc, fe, &v.at.key("forEach"))?
                .into_iter()
                .map(Some)
                .collect(),
        };
        for item in items {
            let mut scope = ctx.new_inner_scope();
            let iter = match &item {
                Some(item) => {
                    scope.add_variable_as_val(v.var.clone(), to_val(item));
                    format!(" (forEach {}={})", v.var, item)
                }
                None => String::new(),
            };
            let in_plane: Vec<Value> = resources
                .iter()
                .zip(planes)
                .filter(|(_, p)| **p == v.target_plane)
                .map(|(r, _)| r.clone())
                .collect();
            let selected = self.select(&scope, loc, &v.target, &v.at, &in_plane)?;
            if selected.is_empty() {
                if v.must_match {
                    errors.push(loc.error(
                        codes::VALIDATION_FAILED,
                        &v.at.key("target"),
                        format!(
                            "{what} post-render validation: no resource matched target {}{iter}{}",
                            describe_target(&v.target),
                            self.suffix()
                        ),
                        "the target must select a rendered resource (another trait may have removed it); set target.mustMatch: false if it need not",
                    ));
                }
                continue;
            }
            let at = v.at.key("rule");
            for i in selected {
                let res = &in_plane[i];
                let mut rctx = scope.new_inner_scope();
                rctx.add_variable_as_val("resource", to_val(res));
                match self.r.eval(&rctx, &v.rule, &at) {
                    Err(e) => errors.push(self.tpl_diag(loc, e)),
                    Ok(CelValue::Bool(true)) => {}
                    Ok(CelValue::Bool(false)) => errors.push(loc.error(
                        codes::VALIDATION_FAILED,
                        &v.at,
                        format!(
                            "{what} post-render validation on {} failed: {}{iter}{}",
                            describe(res),
                            v.message,
                            self.suffix()
                        ),
                        format!(
                            "the rule ${{{}}} is false for this rendered resource",
                            v.rule.trim()
                        ),
                    )),
                    Ok(other) => errors.push(loc.error(
                        codes::VALIDATION_FAILED,
                        &at,
                        format!(
                            "{what} post-render rule on {} must evaluate to a bool, got {:?}{}",
                            describe(res),
                            other.type_of(),
                            self.suffix()
                        ),
                        "write a comparison, e.g. ${has(resource.spec.template.spec.securityContext)}",
                    )),
                }
            }
        }
        Ok(())
    }

    /// Upstream's `EvaluateValidationRules`: each rule must be true; every failing rule is
    /// reported, at the rule, with its message.
    fn validations(
        &self,
        ctx: &Context<'_, '_>,
        loc: &Loc<'_>,
        rules: &[super::kinds::Validation],
        what: &str,
    ) -> Result<(), Diagnostic> {
        for v in rules {
            let at = v.at.key("rule");
            match self
                .r
                .eval(ctx, &v.rule, &at)
                .map_err(|e| self.tpl_diag(loc, e))?
            {
                CelValue::Bool(true) => {}
                CelValue::Bool(false) => {
                    return Err(loc.error(
                        codes::VALIDATION_FAILED,
                        &v.at,
                        format!("{what} validation failed: {}{}", v.message, self.suffix()),
                        format!(
                            "the rule ${{{}}} is false for this component",
                            v.rule.trim()
                        ),
                    ))
                }
                other => {
                    return Err(loc.error(
                        codes::VALIDATION_FAILED,
                        &at,
                        format!(
                            "{what} validation rule must evaluate to a bool, got {:?}{}",
                            other.type_of(),
                            self.suffix()
                        ),
                        "write a comparison, e.g. ${size(workload.endpoints) > 0}",
                    ))
                }
            }
        }
        Ok(())
    }

    /// One upstream trait instance over the resources so far (upstream `ProcessTraits`):
    /// validations, creates, patches, then removes.
    fn apply_trait<'l>(
        &self,
        base: &Context<'_, 'static>,
        addon: &'l TraitDef<'_>,
        instance: &str,
        params: &Params,
        resources: &mut Vec<Value>,
        made_by: &mut Vec<(&'l Loc<'l>, &'l ResourceTpl)>,
    ) -> Result<(), Vec<Diagnostic>> {
        let actx = trait_scope(base, addon, instance, params, self.r.exprs);
        self.validations(
            &actx,
            &addon.loc,
            &addon.validations,
            &format!("Trait {:?} (instance {instance:?})", addon.name),
        )
        .map_err(|e| vec![e])?;
        for t in &addon.creates {
            let made = self.resource(&actx, &addon.loc, t).map_err(|e| vec![e])?;
            made_by.extend(std::iter::repeat_n((&addon.loc, t), made.len()));
            resources.extend(made);
        }
        for p in &addon.patches {
            self.patch(&actx, addon, instance, p, resources)
                .map_err(|e| vec![e])?;
        }
        let mut marked = vec![false; resources.len()];
        for rm in &addon.removes {
            self.remove(&actx, addon, instance, rm, resources, &mut marked)
                .map_err(|e| vec![e])?;
        }
        let mut keep = marked.iter().map(|m| !m);
        resources.retain(|_| keep.next().unwrap_or(true));
        let mut keep = marked.iter().map(|m| !m);
        made_by.retain(|_| keep.next().unwrap_or(true));
        Ok(())
    }

    /// includeWhen → forEach → render → strip omit.
    fn resource(
        &self,
        ctx: &Context<'_, '_>,
        loc: &Loc<'_>,
        t: &ResourceTpl,
    ) -> Result<Vec<Value>, Diagnostic> {
        if let Some(cond) = &t.include_when {
            match self
                .r
                .eval_field(ctx, cond, (&t.at, "includeWhen"))
                .map_err(|e| self.tpl_diag(loc, e))?
            {
                CelValue::Bool(true) => {}
                CelValue::Bool(false) => return Ok(Vec::new()),
                other => {
                    return Err(loc.error(
                        codes::RESULT_TYPE,
                        &t.at.key("includeWhen"),
                        format!(
                            "includeWhen {cond:?} must return a bool, got {:?}{}",
                            other.type_of(),
                            self.suffix()
                        ),
                        "compare explicitly, e.g. ${parameters.replicas > 1}",
                    ))
                }
            }
        }
        let items = match &t.for_each {
            None => {
                let v = self
                    .r
                    .render_planned(ctx, &t.plan, &t.template, (&t.at, "template"))
                    .map_err(|e| self.tpl_diag(loc, e))?;
                return Ok(vec![v]);
            }
            Some(fe) => self.items(ctx, loc, fe, &t.at.key("forEach"))?,
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let mut inner = ctx.new_inner_scope();
            inner.add_variable_as_val(t.var.clone(), to_val(&item));
            out.push(
                self.r
                    .render_planned(&inner, &t.plan, &t.template, (&t.at, "template"))
                    .map_err(|e| self.tpl_diag(loc, e))?,
            );
        }
        Ok(out)
    }

    /// A forEach's items: a list as is, a map as `{key, value}` entries sorted by key.
    fn items(
        &self,
        ctx: &Context<'_, '_>,
        loc: &Loc<'_>,
        source: &str,
        at: &FieldPath,
    ) -> Result<Vec<Value>, Diagnostic> {
        let v = self
            .r
            .eval_json(ctx, source, at)
            .map_err(|e| self.tpl_diag(loc, e))?;
        let items = match v {
            Value::Array(a) => a,
            // from_cel returns maps with sorted keys.
            Value::Object(m) => m
                .into_iter()
                .map(|(k, v)| json!({"key": k, "value": v}))
                .collect(),
            other => {
                return Err(loc.error(
                    codes::RESULT_TYPE,
                    at,
                    format!(
                        "forEach {source:?} must return a list or a map, got {}{}",
                        super::shorthand::type_word(&other),
                        self.suffix()
                    ),
                    "iterate over a list, e.g. ${parameters.configurations}",
                ))
            }
        };
        if items.len() > self.max_items {
            return Err(loc.error(
                codes::FOREACH_RESULT,
                at,
                format!(
                    "forEach {source:?} produced {} items, more than {}",
                    items.len(),
                    self.max_items
                ),
                "reduce the list, or raise the limit with --limit collection-size=N",
            ));
        }
        Ok(items)
    }

    fn patch(
        &self,
        ctx: &Context<'_, '_>,
        addon: &TraitDef<'_>,
        instance: &str,
        p: &PatchDef,
        resources: &mut [Value],
    ) -> Result<(), Diagnostic> {
        let loc = &addon.loc;
        let items: Vec<Option<Value>> = match &p.for_each {
            None => vec![None],
            Some(fe) => self
                .items(ctx, loc, fe, &p.at.key("forEach"))?
                .into_iter()
                .map(Some)
                .collect(),
        };
        let who = format!("addon {:?} instance {instance:?}", addon.name);
        for item in items {
            let mut scope = ctx.new_inner_scope();
            if let Some(item) = &item {
                scope.add_variable_as_val(p.var.clone(), to_val(item));
            }
            let selected = self.select(&scope, loc, &p.target, &p.at, resources)?;
            if selected.is_empty() {
                return Err(loc.error(
                    codes::PATCH_TARGET,
                    &p.at.key("target"),
                    format!(
                        "patch of {who} matched no resource ({}){}",
                        describe_target(&p.target),
                        self.suffix()
                    ),
                    "check the target's group, version and kind against the resources rendered before this addon; use forEach over an empty list to make a patch conditional",
                ));
            }
            // Operations are rendered once per item, then applied to every selected resource.
            let mut ops = Vec::with_capacity(p.ops.len());
            for o in &p.ops {
                let path = match self
                    .r
                    .render_string_planned(&scope, &o.plans[0], &o.path, (&o.at, "path"))
                    .map_err(|e| self.tpl_diag(loc, e))?
                {
                    Value::String(s) => s,
                    other => {
                        return Err(loc.error(
                            codes::RESULT_TYPE,
                            &o.at.key("path"),
                            format!("path must render to a string, got {other}{}", self.suffix()),
                            "write the path as text with ${…} inside it",
                        ))
                    }
                };
                let value = match &o.value {
                    Some(v) if o.op != super::kinds::Op::Remove => Some(
                        self.r
                            .render_planned(&scope, &o.plans[1], v, (&o.at, "value"))
                            .map_err(|e| self.tpl_diag(loc, e))?,
                    ),
                    _ => None,
                };
                // Parsed once per operation, not per selected resource (and a path without
                // `${…}` once per definition); an error is reported with the first resource.
                let steps = if o.plans[0].is_literal() {
                    Cow::Borrowed(o.parsed.get_or_init(|| pointer::parse(&path)))
                } else {
                    Cow::Owned(pointer::parse(&path))
                };
                ops.push((o, path, value, steps));
            }
            for &i in &selected {
                let Some(res) = resources.get_mut(i) else {
                    continue;
                };
                let res_name = describe(res);
                for (o, path, value, steps) in &ops {
                    let steps = Result::as_ref(&**steps).map_err(|m| {
                        loc.error(
                            codes::PATCH_PATH,
                            &o.at.key("path"),
                            format!("{who}, {res_name}, path {path:?}: {m}{}", self.suffix()),
                            "write a JSON Pointer starting with /, with filters as [?(@.field=='value')]",
                        )
                    })?;
                    let pointers = pointer::expand(res, steps).map_err(|m| {
                        loc.error(
                            codes::PATCH_PATH,
                            &o.at.key("path"),
                            format!("{who}, {res_name}, path {path:?}: {m}{}", self.suffix()),
                            "check the filter value against the resource (e.g. the container name)",
                        )
                    })?;
                    for tokens in pointers {
                        patch::apply(res, o.op, &tokens, value.as_ref()).map_err(|m| {
                            loc.error(
                                codes::PATCH_FAILED,
                                &o.at,
                                format!(
                                    "{who}, {res_name}: {} at {path:?} failed: {m}{}",
                                    op_name(o.op),
                                    self.suffix()
                                ),
                                "add creates missing parent maps; replace and remove need the target to exist",
                            )
                        })?;
                    }
                }
            }
        }
        Ok(())
    }
}

impl Ctx<'_, '_, '_> {
    /// Indices of the resources a target selects: same kind, group and version, then `where`
    /// (with `resource` bound to each candidate).
    fn select(
        &self,
        scope: &Context<'_, '_>,
        loc: &Loc<'_>,
        target: &Target,
        entry_at: &FieldPath,
        resources: &[Value],
    ) -> Result<Vec<usize>, Diagnostic> {
        let mut selected = Vec::new();
        for (i, res) in resources.iter().enumerate() {
            if !target_matches(target, res) {
                continue;
            }
            if let Some(w) = &target.where_ {
                let at = entry_at.key("target").key("where");
                let mut wctx = scope.new_inner_scope();
                wctx.add_variable_as_val("resource", to_val(res));
                match self
                    .r
                    .eval(&wctx, w, &at)
                    .map_err(|e| self.tpl_diag(loc, e))?
                {
                    CelValue::Bool(true) => {}
                    CelValue::Bool(false) => continue,
                    other => {
                        return Err(loc.error(
                            codes::RESULT_TYPE,
                            &at,
                            format!(
                                "where {w:?} must return a bool, got {:?}{}",
                                other.type_of(),
                                self.suffix()
                            ),
                            "compare explicitly, e.g. ${resource.metadata.name.endsWith('-x')}",
                        ))
                    }
                }
            }
            selected.push(i);
        }
        Ok(selected)
    }

    /// Mark the resources one remove entry selects (per forEach item). Upstream says nothing about
    /// a remove that matches nothing; like a patch, it is an error here.
    fn remove(
        &self,
        ctx: &Context<'_, '_>,
        addon: &TraitDef<'_>,
        instance: &str,
        rm: &RemoveDef,
        resources: &[Value],
        marked: &mut [bool],
    ) -> Result<(), Diagnostic> {
        let loc = &addon.loc;
        let items: Vec<Option<Value>> = match &rm.for_each {
            None => vec![None],
            Some(fe) => self
                .items(ctx, loc, fe, &rm.at.key("forEach"))?
                .into_iter()
                .map(Some)
                .collect(),
        };
        for item in items {
            let mut scope = ctx.new_inner_scope();
            if let Some(item) = &item {
                scope.add_variable_as_val(rm.var.clone(), to_val(item));
            }
            let selected = self.select(&scope, loc, &rm.target, &rm.at, resources)?;
            if selected.is_empty() {
                return Err(loc.error(
                    codes::PATCH_TARGET,
                    &rm.at.key("target"),
                    format!(
                        "remove of addon {:?} instance {instance:?} matched no resource ({}){}",
                        addon.name,
                        describe_target(&rm.target),
                        self.suffix()
                    ),
                    "check the target's group, version and kind against the resources rendered before this addon's removes; use forEach over an empty list to make a remove conditional",
                ));
            }
            for i in selected {
                if let Some(m) = marked.get_mut(i) {
                    *m = true;
                }
            }
        }
        Ok(())
    }
}

/// `apps/v1 Deployment where …`, for messages.
fn describe_target(t: &Target) -> String {
    format!(
        "{}/{} {}{}",
        t.group
            .as_deref()
            .map(|g| if g.is_empty() {
                "core".to_string()
            } else {
                g.to_string()
            })
            .unwrap_or_else(|| "any group".into()),
        t.version,
        t.kind,
        if t.where_.is_some() { " where …" } else { "" }
    )
}

fn op_name(op: super::kinds::Op) -> &'static str {
    match op {
        super::kinds::Op::Add => "add",
        super::kinds::Op::Replace => "replace",
        super::kinds::Op::Remove => "remove",
        super::kinds::Op::MergeShallow => "mergeShallow",
    }
}

/// `Kind/name` of a resource, for messages.
fn describe(res: &Value) -> String {
    format!(
        "{}/{}",
        res.get("kind").and_then(Value::as_str).unwrap_or("?"),
        res.get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("?")
    )
}

/// (group, version) of an apiVersion: `v1` is the core group `""`.
pub(crate) fn group_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

fn target_matches(t: &Target, res: &Value) -> bool {
    let kind = res.get("kind").and_then(Value::as_str).unwrap_or("");
    let (g, v) = group_version(res.get("apiVersion").and_then(Value::as_str).unwrap_or(""));
    kind == t.kind && v == t.version && t.group.as_deref().is_none_or(|tg| tg == g)
}

/// Labels, object checks, duplicate check, order.
fn finish(c: &Ctx<'_, '_, '_>, mut resources: Vec<Value>) -> Result<Vec<Value>, Vec<Diagnostic>> {
    let unit = c.unit;
    let comp = unit.component;
    let mut errors = Vec::new();
    for res in resources.iter_mut() {
        let name = res
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty());
        let ok = res
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
            && res
                .get("kind")
                .and_then(Value::as_str)
                .is_some_and(|s| !s.is_empty())
            && name.is_some();
        if !ok {
            errors.push(comp.loc.error(
                codes::RESOURCE_INVALID,
                &FieldPath::root(),
                format!(
                    "a rendered resource ({}) lacks apiVersion, kind or metadata.name{}",
                    describe(res),
                    c.suffix()
                ),
                "every template must render apiVersion, kind and metadata.name",
            ));
            continue;
        }
        if let Some(md) = res.get_mut("metadata").and_then(Value::as_object_mut) {
            let labels = md.entry("labels").or_insert_with(|| json!({}));
            if labels.is_null() {
                *labels = json!({});
            }
            match labels.as_object_mut() {
                Some(l) => {
                    for (k, v) in &c.labels {
                        l.insert(k.clone(), v.clone());
                    }
                }
                None => errors.push(comp.loc.error(
                    codes::RESOURCE_INVALID,
                    &FieldPath::root(),
                    format!(
                        "metadata.labels of {} is not a map{}",
                        describe(res),
                        c.suffix()
                    ),
                    "labels must be a map of strings",
                )),
            }
        }
    }
    let mut seen = BTreeSet::new();
    for res in &resources {
        let key = order::key(res);
        if !seen.insert(key) {
            errors.push(comp.loc.error(
                codes::DUPLICATE_RESOURCE,
                &FieldPath::root(),
                format!(
                    "two rendered resources are both {} {} named {:?}{}{}",
                    key.1,
                    key.0,
                    key.3,
                    if key.2.is_empty() { String::new() } else { format!(" in namespace {:?}", key.2) },
                    c.suffix()
                ),
                "make names unique, e.g. ${metadata.name}-${instanceName} or use the forEach variable in the name",
            ));
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    order::sort(&mut resources);
    Ok(resources)
}

#[cfg(test)]
mod dp_hash_tests {
    use super::*;

    /// The hash upstream's pipeline test pins ("Pinned: part of the upgrade contract") for its
    /// configurations-and-secrets case
    /// (internal/pipeline/component/testdata/configurations-and-secrets/
    /// expected-resources-with-config-helpers.yaml): three ConfigMaps and three ExternalSecrets
    /// next to the Deployment.
    #[test]
    fn dp_resource_hash_matches_upstream_vector() {
        let labels = json!({"openchoreo.dev/component": "test-app"});
        let cm = |name: &str, data: Value| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": name, "namespace": "test-namespace", "labels": labels},
                   "data": data})
        };
        let es = |name: &str, data: Value| {
            json!({"apiVersion": "external-secrets.io/v1", "kind": "ExternalSecret",
                   "metadata": {"name": name, "namespace": "test-namespace", "labels": labels},
                   "spec": {"refreshInterval": "15s",
                            "secretStoreRef": {"name": "dev-vault-store", "kind": "ClusterSecretStore"},
                            "target": {"name": name, "creationPolicy": "Owner"},
                            "data": data}})
        };
        let rr = |k: &str, p: &str| json!({"key": k, "property": p});
        let mut resources = vec![
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "test-component-dev-12345678"},
                   "spec": {"replicas": 3, "template": {"spec": {}}}}),
            // The env ConfigMap's template sets no namespace, which sorts it first.
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "test-app-dev-env-configs-6f21fc92", "labels": labels},
                   "data": {"LOG_LEVEL": "error", "DEBUG_MODE": "true", "NEW_CONFIG": "production"}}),
            cm(
                "test-app-dev-config-app-properties-ac691794",
                json!({"app.properties": "app.name=myapp\napp.version=1.0.0\n"}),
            ),
            cm(
                "test-app-dev-config-config-json-9aa130bc",
                json!({"config.json": "{\n  \"database\": {\n    \"host\": \"prod.db.example.com\",\n    \"port\": 5432\n  }\n}\n"}),
            ),
            es(
                "test-app-dev-env-secrets-757009dd",
                json!([{"secretKey": "DB_PASSWORD", "remoteRef": rr("prod/db", "password")},
                      {"secretKey": "API_KEY", "remoteRef": rr("dev/api", "api_key")}]),
            ),
            es(
                "test-app-dev-secret-application-yaml-07d48de3",
                json!([{"secretKey": "application.yaml", "remoteRef": rr("dev/config", "application.yaml")}]),
            ),
            es(
                "test-app-dev-secret-tls-crt-1381e562",
                json!([{"secretKey": "tls.crt", "remoteRef": rr("prod/certificates", "tls.crt")}]),
            ),
        ];
        // A resource for the observability plane does not count (upstream hashes data-plane
        // resources only).
        resources.push(
            json!({"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
                              "metadata": {"name": "alerts"}, "spec": {"groups": []}}),
        );
        let mut planes = vec![true; resources.len() - 1];
        planes.push(false);
        add_dp_resource_hash("deployment", &mut resources, &planes);
        assert_eq!(
            resources[0]
                .pointer("/spec/template/metadata/annotations/openchoreo.dev~1dp-resource-hash"),
            Some(&json!("696979b485"))
        );
    }
}
