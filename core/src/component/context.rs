//! The values templates see: parameters (merged, defaulted, validated) and the context variables.
//!
//! | variable | content |
//! | --- | --- |
//! | `metadata` | `name`, `namespace`, `labels`, `annotations` (the Component's; `{}` when unset), `podSelectors` |
//! | `parameters` | Component parameters deep-merged with the environment's overrides, defaults applied |
//! | `envOverrides` / `environmentConfigs` | the env-overridable part of `parameters` |
//! | `workload` | the Workload's `spec` (with the environment's overrides applied) plus `name` |
//! | `build` | the Component's `spec.build` plus `image` when the Workload names exactly one image |
//! | `component` | `name`, `namespace`, `projectName` (when set) |
//! | `environment` | `name` |
//! | `addon` / `trait` / `instanceName` | in addons: `{name, instanceName}` and the instance name |

use serde_json::{json, Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::fieldpath::FieldPath;
use crate::schema;

use super::kinds::{get, ComponentDef, Loc, WorkloadDef};
use super::shorthand::Schemas;

/// Labels kiln (like OpenChoreo's first implementation) puts on every rendered resource and offers
/// as `metadata.podSelectors`.
pub(crate) const LABEL_COMPONENT: &str = "openchoreo.org/component";
/// See [`LABEL_COMPONENT`].
pub(crate) const LABEL_ENVIRONMENT: &str = "openchoreo.org/environment";
/// See [`LABEL_COMPONENT`].
pub(crate) const LABEL_PROJECT: &str = "openchoreo.org/project";

/// Maps merge key by key, recursively; anything else from `over` replaces `base` (lists too).
pub(crate) fn deep_merge(base: &mut Value, over: &Value) {
    match (base, over) {
        (Value::Object(b), Value::Object(o)) => {
            for (k, v) in o {
                match b.get_mut(k) {
                    Some(existing) => deep_merge(existing, v),
                    None => {
                        b.insert(k.clone(), v.clone());
                    }
                }
            }
        }
        (b, o) => *b = o.clone(),
    }
}

/// Where a set of values came from, for diagnostics.
pub(crate) struct Source<'l, 'a> {
    pub loc: &'l Loc<'a>,
    pub at: FieldPath,
}

/// Resolved parameters of a Component or addon instance.
pub(crate) struct Params {
    pub all: Value,
    pub env_part: Value,
}

/// Merge, default and validate parameters. Overrides are first checked on their own against the
/// envOverrides schema (so a field that is not overridable is reported at the override), then the
/// merged result against the full schema.
pub(crate) fn resolve_params(
    schemas: &Schemas,
    what: &str,
    base: &Value,
    base_src: &Source<'_, '_>,
    overrides: Option<(&Value, &Source<'_, '_>)>,
) -> Result<Params, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    if let Some((ov, src)) = overrides {
        for v in schema::validate(schemas.env_optional(), ov) {
            let rel = viol_path(&v);
            let (code, hint) = match v.rule.as_str() {
                "unknown field" | "additionalProperties" => (
                    codes::OVERRIDE_NOT_ALLOWED,
                    format!("only fields declared under envOverrides of {what} may be overridden per environment; set this one on the Component"),
                ),
                rule => (
                    codes::PARAMETER_INVALID,
                    format!("the envOverrides schema of {what} constrains this field with {rule}"),
                ),
            };
            let msg = if code == codes::OVERRIDE_NOT_ALLOWED {
                format!(
                    "{} is not an environment override of {what}",
                    display_path(&rel)
                )
            } else {
                strip_path(&v)
            };
            errors.push(src.loc.error(code, &src.at.join(&rel), msg, hint));
        }
    }
    // Overrides with errors of their own are left out, so the Component's own parameters are
    // still checked in the same run.
    let overrides = overrides.filter(|_| errors.is_empty());
    let mut all = base.clone();
    if let Some((ov, _)) = overrides {
        deep_merge(&mut all, ov);
    }
    schemas.defaults().apply(&mut all);
    for v in schema::validate(&schemas.merged, &all) {
        let rel = viol_path(&v);
        // Blame the environment when it supplied the offending value.
        let src = match overrides {
            Some((ov, s)) if !rel.is_empty() && get(ov, &rel).is_some() => s,
            _ => base_src,
        };
        let hint = match v.rule.as_str() {
            "required" => format!("set the field: {what} declares it without a default"),
            "unknown field" | "additionalProperties" => {
                format!("{what} declares no such parameter: check the spelling (kiln schema prints the schema)")
            }
            rule => format!("{what} constrains this field with {rule}"),
        };
        errors.push(src.loc.error(
            codes::PARAMETER_INVALID,
            &src.at.join(&rel),
            strip_path(&v),
            hint,
        ));
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let env_part = match &all {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| schemas.env_keys.contains(*k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ),
        _ => json!({}),
    };
    Ok(Params { all, env_part })
}

/// Upstream's `applySchemaSection`: defaults of one schema section (`parameters` or
/// `environmentConfigs`) applied to the values given for it, then validated against it. Unlike
/// the proposal's merged parameters, the two sections are separate variables.
pub(crate) fn resolve_section(
    section: &Value,
    what: &str,
    section_name: &str,
    value: &Value,
    src: &Source<'_, '_>,
) -> Result<Value, Vec<Diagnostic>> {
    let mut v = if value.is_object() {
        value.clone()
    } else {
        json!({})
    };
    schema::apply_defaults(section, &mut v);
    let errors: Vec<Diagnostic> = schema::validate(section, &v)
        .into_iter()
        .map(|viol| {
            let rel = viol_path(&viol);
            let hint = match viol.rule.as_str() {
                "required" => format!("set the field: the {section_name} of {what} declare it without a default"),
                "unknown field" | "additionalProperties" => format!(
                    "the {section_name} of {what} declare no such field: check the spelling (kiln schema prints the schema)"
                ),
                rule => format!("the {section_name} of {what} constrain this field with {rule}"),
            };
            src.loc.error(
                codes::PARAMETER_INVALID,
                &src.at.join(&rel),
                strip_path(&viol),
                hint,
            )
        })
        .collect();
    if errors.is_empty() {
        Ok(v)
    } else {
        Err(errors)
    }
}

/// Variables of an upstream ComponentType's templates (`ComponentContext` upstream).
pub(crate) const UPSTREAM_TYPE_VARS: &[&str] = &[
    "metadata",
    "parameters",
    "environmentConfigs",
    "workload",
    "configurations",
    "dependencies",
    "dataplane",
    "environment",
    "gateway",
];

/// Variables of an upstream Trait's templates (`TraitContext` upstream).
pub(crate) const UPSTREAM_TRAIT_VARS: &[&str] = &[
    "metadata",
    "trait",
    "parameters",
    "environmentConfigs",
    "workload",
    "configurations",
    "dependencies",
    "dataplane",
    "environment",
    "gateway",
];

fn viol_path(v: &schema::Violation) -> FieldPath {
    if v.path.is_empty() || v.path == "(root)" {
        FieldPath::root()
    } else {
        FieldPath::parse(&v.path).unwrap_or_default()
    }
}

fn display_path(p: &FieldPath) -> String {
    if p.is_empty() {
        "(root)".into()
    } else {
        p.to_string()
    }
}

fn strip_path(v: &schema::Violation) -> String {
    v.message
        .strip_prefix(&format!("{}: ", v.path))
        .unwrap_or(&v.message)
        .to_string()
}

/// The variables of a Component's templates. `workload_spec` is the Workload's spec with the
/// environment's overrides applied.
pub(crate) fn component_vars(
    comp: &ComponentDef<'_>,
    namespace: &str,
    env: &str,
    workload: &WorkloadDef<'_>,
    workload_spec: &Value,
    params: &Params,
) -> Vec<(&'static str, Value)> {
    let mut selectors = Map::new();
    selectors.insert(LABEL_COMPONENT.into(), json!(comp.name));
    selectors.insert(LABEL_ENVIRONMENT.into(), json!(env));
    if let Some(p) = &comp.project {
        selectors.insert(LABEL_PROJECT.into(), json!(p));
    }
    let metadata = json!({
        "name": comp.name,
        "namespace": namespace,
        "labels": comp.labels,
        "annotations": comp.annotations,
        "podSelectors": Value::Object(selectors),
    });
    let mut wl = workload_spec.clone();
    if let Value::Object(m) = &mut wl {
        m.entry("name").or_insert_with(|| json!(workload.name));
    }
    let mut build = comp.build.clone();
    if let (Value::Object(b), Some(image)) = (&mut build, single_image(workload_spec)) {
        b.entry("image").or_insert(json!(image));
    }
    let mut component = json!({"name": comp.name, "namespace": namespace});
    if let Some(p) = &comp.project {
        component["projectName"] = json!(p);
    }
    vec![
        ("metadata", metadata),
        ("parameters", params.all.clone()),
        ("envOverrides", params.env_part.clone()),
        ("environmentConfigs", params.env_part.clone()),
        ("workload", wl),
        ("build", build),
        ("component", component),
        ("environment", json!({ "name": env })),
    ]
}

/// The variables an addon instance sets over the component's (see `component_vars`): its own
/// parameters, envOverrides and environmentConfigs, and who it is.
pub(crate) fn addon_vars(
    addon: &str,
    instance: &str,
    params: &Params,
) -> Vec<(&'static str, Value)> {
    let me = json!({"name": addon, "instanceName": instance});
    vec![
        ("parameters", params.all.clone()),
        ("envOverrides", params.env_part.clone()),
        ("environmentConfigs", params.env_part.clone()),
        ("addon", me.clone()),
        ("trait", me),
        ("instanceName", json!(instance)),
    ]
}

/// Variables available in type templates.
pub(crate) const TYPE_VARS: &[&str] = &[
    "metadata",
    "parameters",
    "envOverrides",
    "environmentConfigs",
    "workload",
    "build",
    "component",
    "environment",
];

/// Variables available in addon templates.
pub(crate) const ADDON_VARS: &[&str] = &[
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
];

/// The one image a Workload names: `spec.image`, `spec.container.image`, or the image of its only
/// container.
fn single_image(spec: &Value) -> Option<String> {
    if let Some(s) = spec.get("image").and_then(Value::as_str) {
        return Some(s.to_string());
    }
    if let Some(s) = spec
        .get("container")
        .and_then(|c| c.get("image"))
        .and_then(Value::as_str)
    {
        return Some(s.to_string());
    }
    let images: Vec<&str> = match spec.get("containers") {
        Some(Value::Object(m)) => m
            .values()
            .filter_map(|c| c.get("image").and_then(Value::as_str))
            .collect(),
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(|c| c.get("image").and_then(Value::as_str))
            .collect(),
        _ => Vec::new(),
    };
    match images.as_slice() {
        [one] => Some(one.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_merge_replaces_lists_and_merges_maps() {
        let mut a = json!({"a": {"b": 1, "c": [1, 2]}, "d": 1});
        deep_merge(&mut a, &json!({"a": {"c": [3], "e": 2}, "d": {"x": 1}}));
        assert_eq!(a, json!({"a": {"b": 1, "c": [3], "e": 2}, "d": {"x": 1}}));
    }

    #[test]
    fn single_image_forms() {
        assert_eq!(single_image(&json!({"image": "a"})).as_deref(), Some("a"));
        assert_eq!(
            single_image(&json!({"containers": {"app": {"image": "b"}}})).as_deref(),
            Some("b")
        );
        assert_eq!(
            single_image(&json!({"containers": {"a": {"image": "b"}, "c": {"image": "d"}}})),
            None
        );
    }
}
