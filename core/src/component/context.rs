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

use std::borrow::Cow;

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

/// What upstream does with the values given for a schema section a definition does not have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoSection {
    /// The component pipeline (`applySchemaSection` in upstream's
    /// `internal/pipeline/component/context/component.go`): the variable is `{}`, every value
    /// given is dropped.
    Empty,
    /// The project and resource pipelines (`applySchemaDefaults`): the values as given.
    AsGiven,
}

/// One schema section of an upstream kind (`spec.parameters` or `spec.environmentConfigs`).
pub(crate) struct Section<'s> {
    /// Its `openAPIV3Schema`, `$ref`s inlined.
    pub schema: &'s Value,
    /// Whether the definition has the section at all.
    pub declared: bool,
    /// What a missing section does to the values.
    pub missing: NoSection,
}

impl<'s> Section<'s> {
    /// The `parameters` section of a definition's schemas.
    pub(crate) fn parameters(s: &'s Schemas, missing: NoSection) -> Self {
        Self {
            schema: s.params.as_ref().unwrap_or(&s.merged),
            declared: s.declares_params,
            missing,
        }
    }

    /// The `environmentConfigs` section of a definition's schemas.
    pub(crate) fn environment_configs(s: &'s Schemas, missing: NoSection) -> Self {
        Self {
            schema: &s.env,
            declared: s.declares_env,
            missing,
        }
    }
}

/// Upstream's `applySchemaSection`: defaults of one schema section (`parameters` or
/// `environmentConfigs`) applied to the values given for it, then validated against it. Unlike
/// the proposal's merged parameters, the two sections are separate variables.
///
/// A field the section does not declare is not an error and stays in the value: upstream
/// validates with the Kubernetes schema validator, which lets undeclared properties through
/// (only `additionalProperties: false` refuses them), and since #3816 it does not prune them.
/// [`undeclared_warnings`] names them. A section the definition does not have gives
/// `section.missing`.
pub(crate) fn resolve_section(
    section: &Section<'_>,
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
    if !section.declared {
        return Ok(match section.missing {
            NoSection::Empty => json!({}),
            NoSection::AsGiven => v,
        });
    }
    schema::apply_defaults(section.schema, &mut v);
    let errors: Vec<Diagnostic> = schema::validate(section.schema, &v)
        .into_iter()
        .filter(|viol| viol.rule != UNDECLARED)
        .map(|viol| {
            let rel = viol_path(&viol);
            let hint = match viol.rule.as_str() {
                "required" => format!("set the field: the {section_name} of {what} declare it without a default"),
                "additionalProperties" => format!(
                    "the {section_name} of {what} allow no other fields (additionalProperties: false): check the spelling (kiln schema prints the schema)"
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

/// A definition's two sections, resolved: the values of `parameters` and `environmentConfigs`,
/// and the warnings naming the fields neither declares.
pub(crate) struct Sections {
    pub parameters: Value,
    pub environment_configs: Value,
    pub warnings: Vec<Diagnostic>,
}

/// [`resolve_section`] for both sections of `schemas` (the project and resource pipelines),
/// every error of both reported, and [`undeclared_warnings`] for both.
pub(crate) fn resolve_sections(
    schemas: &Schemas,
    missing: NoSection,
    what: &str,
    parameters: (&Value, &Source<'_, '_>),
    environment_configs: (&Value, &Source<'_, '_>),
) -> Result<Sections, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut one = |section: Section<'_>, name: &str, (value, src): (&Value, &Source<'_, '_>)| {
        warnings.extend(undeclared_warnings(&section, what, name, value, src));
        resolve_section(&section, what, name, value, src)
            .map_err(|e| errors.extend(e))
            .ok()
    };
    let p = one(
        Section::parameters(schemas, missing),
        "parameters",
        parameters,
    );
    let e = one(
        Section::environment_configs(schemas, missing),
        "environmentConfigs",
        environment_configs,
    );
    match (p, e) {
        (Some(parameters), Some(environment_configs)) if errors.is_empty() => Ok(Sections {
            parameters,
            environment_configs,
            warnings,
        }),
        _ => Err(errors),
    }
}

/// The rule name of the validator's violation for a field a schema does not declare.
const UNDECLARED: &str = "unknown field";

/// A warning (KLN6027) for each field of `value` that `section` does not declare, at any depth
/// (fields under `x-kubernetes-preserve-unknown-fields` or an `additionalProperties` schema are
/// declared). Upstream renders with it, but no template can read it by name (the templates are
/// type-checked against the schema): it has no effect unless a template writes out a whole
/// object holding it, and a section the definition does not have is dropped (component
/// pipeline) or passed on unread. `--strict` makes these errors.
pub(crate) fn undeclared_warnings(
    section: &Section<'_>,
    what: &str,
    section_name: &str,
    value: &Value,
    src: &Source<'_, '_>,
) -> Vec<Diagnostic> {
    let hint = format!(
        "remove the field, or declare it in the {section_name} schema of {what} (kiln schema prints the schema); --strict makes this an error"
    );
    if !section.declared {
        let what_happens = match section.missing {
            NoSection::Empty => {
                format!("upstream renders with {section_name} = {{}} and the field has no effect")
            }
            NoSection::AsGiven => {
                "upstream passes it on unchecked, and no template can read it by name".to_string()
            }
        };
        return value
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .map(|k| {
                let rel = FieldPath::root().key(k);
                src.loc.warning(
                    codes::IGNORED_INPUT,
                    &src.at.join(&rel),
                    format!(
                        "{section_name}.{rel} is not declared: {what} has no {section_name} schema, so {what_happens}"
                    ),
                    hint.clone(),
                )
            })
            .collect();
    }
    schema::validate(section.schema, value)
        .into_iter()
        .filter(|viol| viol.rule == UNDECLARED)
        .map(|viol| {
            let rel = viol_path(&viol);
            src.loc.warning(
                codes::IGNORED_INPUT,
                &src.at.join(&rel),
                format!(
                    "{section_name}.{rel} is not declared by the {section_name} schema of {what}: upstream keeps it unchecked (it does not prune it), and no template can read it by name"
                ),
                hint.clone(),
            )
        })
        .collect()
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
pub(crate) fn component_vars<'p>(
    comp: &ComponentDef<'_>,
    namespace: &str,
    env: &str,
    workload: &WorkloadDef<'_>,
    workload_spec: &Value,
    params: &'p Params,
) -> Vec<(&'static str, Cow<'p, Value>)> {
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
        ("metadata", Cow::Owned(metadata)),
        ("parameters", Cow::Borrowed(&params.all)),
        ("envOverrides", Cow::Borrowed(&params.env_part)),
        ("environmentConfigs", Cow::Borrowed(&params.env_part)),
        ("workload", Cow::Owned(wl)),
        ("build", Cow::Owned(build)),
        ("component", Cow::Owned(component)),
        ("environment", Cow::Owned(json!({ "name": env }))),
    ]
}

/// The variables an addon instance sets over the component's (see `component_vars`): its own
/// parameters, envOverrides and environmentConfigs, and who it is.
pub(crate) fn addon_vars<'p>(
    addon: &str,
    instance: &str,
    params: &'p Params,
) -> Vec<(&'static str, Cow<'p, Value>)> {
    let me = json!({"name": addon, "instanceName": instance});
    vec![
        ("parameters", Cow::Borrowed(&params.all)),
        ("envOverrides", Cow::Borrowed(&params.env_part)),
        ("environmentConfigs", Cow::Borrowed(&params.env_part)),
        ("addon", Cow::Owned(me.clone())),
        ("trait", Cow::Owned(me)),
        ("instanceName", Cow::Owned(json!(instance))),
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

    /// Upstream's `applySchemaSection` (`internal/pipeline/component/context/component.go`):
    /// undeclared fields, at any depth, are kept and not errors; declared ones are defaulted and
    /// validated; `additionalProperties: false` still refuses; a missing section gives `{}` in
    /// the component pipeline and the values as given in the project and resource pipelines.
    #[test]
    fn undeclared_fields_are_kept_and_named() {
        let docs = crate::document::parse_file(
            "t.yaml",
            "kind: Component\n".to_string(),
            &Default::default(),
        )
        .unwrap();
        let loc = Loc::new(&docs[0]);
        let src = Source {
            loc: &loc,
            at: FieldPath::root().key("spec").key("parameters"),
        };
        let schema = json!({"type": "object", "properties": {
            "size": {"type": "object", "properties": {"cpu": {"type": "string", "default": "1"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "closed": {"type": "object", "additionalProperties": false},
            "port": {"type": "integer"}}});
        let declared = Section {
            schema: &schema,
            declared: true,
            missing: NoSection::Empty,
        };
        let value = json!({"extra": 1, "size": {"memory": "1Gi"}, "free": {"x": 1},
            "labels": {"a": "b"}, "port": 80});
        let got = resolve_section(&declared, "T", "parameters", &value, &src).unwrap();
        assert_eq!(
            got,
            json!({"extra": 1, "size": {"memory": "1Gi", "cpu": "1"}, "free": {"x": 1},
                "labels": {"a": "b"}, "port": 80})
        );
        let warned: Vec<String> = undeclared_warnings(&declared, "T", "parameters", &value, &src)
            .into_iter()
            .map(|d| {
                assert_eq!(d.code, codes::IGNORED_INPUT);
                assert!(!d.is_error());
                d.path.unwrap_or_default()
            })
            .collect();
        assert_eq!(
            warned,
            ["spec.parameters.extra", "spec.parameters.size.memory"]
        );
        // What the schema forbids, or constrains, is still an error.
        for bad in [json!({"closed": {"x": 1}}), json!({"port": "80"})] {
            let e = resolve_section(&declared, "T", "parameters", &bad, &src).unwrap_err();
            assert_eq!(e[0].code, codes::PARAMETER_INVALID, "{bad}");
        }
        // A missing section.
        let empty = json!({"type": "object", "properties": {}});
        for (missing, want) in [
            (NoSection::Empty, json!({})),
            (NoSection::AsGiven, json!({"replicas": 2})),
        ] {
            let absent = Section {
                schema: &empty,
                declared: false,
                missing,
            };
            let v = json!({"replicas": 2});
            assert_eq!(
                resolve_section(&absent, "T", "parameters", &v, &src).unwrap(),
                want
            );
            let w = undeclared_warnings(&absent, "T", "parameters", &v, &src);
            assert_eq!(w.len(), 1);
            assert_eq!(w[0].path.as_deref(), Some("spec.parameters.replicas"));
        }
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
