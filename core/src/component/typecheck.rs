//! Static type checking of component-type and addon templates, when the definitions are loaded
//! (upstream checks them in its admission webhooks, `internal/validation/component/cel_env.go`).
//!
//! Every expression is typed with the shared checker ([`crate::expr::check::infer`]) against:
//!
//! | variable | type |
//! | --- | --- |
//! | `parameters` | the definition's merged parameters + envOverrides schema |
//! | `envOverrides`, `environmentConfigs` | its env-overridable fields |
//! | `metadata` | `name`, `namespace` (strings), `labels`, `annotations`, `podSelectors` (string maps) |
//! | `component` | `name`, `namespace`, `projectName`; `environment`: `name`; `addon`/`trait`: `name`, `instanceName` |
//! | `workload`, `build` | `dyn` (no schema) |
//! | a forEach variable | the element of a list; `{key, value}` for a map |
//! | `resource` (in `where`) | the target kind's Kubernetes schema, when its apiVersion is known |
//!
//! and, where the template's (or patch target's) kind has a bundled Kubernetes schema, against the
//! type of the field the value is written into. What it reports (KLN3008–KLN3010):
//!
//! - an undefined field (`parameters.replicaz`), selection on a scalar, an operator or function
//!   applied to types it has no overload for;
//! - a standalone value whose type does not fit its field (`value: ${parameters.port}` in an
//!   env var, a string into `replicas`), a string template in a non-string field, a value that
//!   cannot be written into a manifest (bytes, library objects) — standalone or interpolated;
//! - `includeWhen`/`where` that are not bool, `forEach` that is neither a list nor a map, a dynamic
//!   map key that is not a string.
//!
//! It is lenient wherever the runtime is: `dyn` fits everything, numbers fit numeric fields
//! (kiln keeps integers as integers, upstream makes every number a double, and `number`
//! parameters may hold either, so they are `dyn`), and interpolated scalars, lists and maps are
//! written as text exactly as upstream does (its engine tests pin `"config: ${map}"` → JSON), so
//! only values that cannot be written at all are refused inside a string.

use serde_json::{json, Map, Value};

use crate::diag::{codes, Code, Diagnostic};
use crate::expr::check::{infer, Scope};
use crate::expr::types::Type;
use crate::fieldpath::FieldPath;
use crate::openapi::{NodeChild, SchemaNode, Schemas};

use super::kinds::{
    Loc, Model, Op, OutputSource, ProjectTypeDef, ResourceTpl, ResourceTypeDef, Target, TraitDef,
    TypeDef,
};
use super::pointer::{self, Step};
use super::shorthand;
use super::template::{classify, Exprs, Piece, Tpl};

/// The variables a template of a definition document (ComponentType, ComponentTypeDefinition,
/// Addon, Trait, and their cluster kinds) sees, typed as [`Checker`] types them: for the editor
/// (`ide`), which shows and completes them. `None` for any other document.
pub(crate) fn definition_scope(v: &Value) -> Option<Scope> {
    let is_trait = match v.get("kind")?.as_str()? {
        "ComponentTypeDefinition" | "ComponentType" | "ClusterComponentType" => false,
        "Addon" | "Trait" | "ClusterTrait" => true,
        _ => return None,
    };
    let schemas = super::kinds::spec_schemas(v.get("spec"), &FieldPath::root().key("spec"))
        .unwrap_or_default();
    let exprs = Exprs::default();
    let c = Checker::new(&exprs);
    Some(if Model::of(v) == Model::Upstream {
        c.upstream_scope(&schemas, is_trait)
    } else {
        c.base_scope(&schemas, is_trait)
    })
}

/// The type of a forEach's loop variable over a value of type `t`, as [`Checker`] declares it
/// (a list's element, a map's `{key, value}` entry; `dyn` for what cannot be iterated): for
/// the editor (`ide`).
pub(crate) fn loop_var_type(t: &Type) -> Type {
    let exprs = Exprs::default();
    Checker::new(&exprs).loop_var(t).unwrap_or(Type::Dyn)
}

/// Object-comparison depth after which anything is accepted.
const MAX_DEPTH: usize = 8;

/// Checks definitions against one set of compiled expressions.
pub(crate) struct Checker<'e> {
    exprs: &'e Exprs,
    k8s: Schemas,
}

struct Sink<'l, 'a> {
    loc: &'l Loc<'a>,
    /// `ComponentTypeDefinition "web"`, for hints.
    what: String,
    diags: Vec<Diagnostic>,
}

impl Sink<'_, '_> {
    fn push(&mut self, code: Code, at: &FieldPath, msg: String, hint: &str) {
        self.diags.push(self.loc.error(code, at, msg, hint));
    }
}

const OVERLOAD_HINT: &str =
    "the operand types do not match; convert explicitly, e.g. string(x), int(x), double(x)";

impl<'e> Checker<'e> {
    pub(crate) fn new(exprs: &'e Exprs) -> Self {
        Self {
            exprs,
            k8s: Schemas::bundled(),
        }
    }

    /// Check a ComponentTypeDefinition's resources.
    pub(crate) fn check_type(&self, t: &TypeDef<'_>) -> Vec<Diagnostic> {
        let mut sink = Sink {
            loc: &t.loc,
            what: format!("ComponentTypeDefinition {:?}", t.name),
            diags: Vec::new(),
        };
        let mut scope = if t.model == Model::Upstream {
            self.upstream_scope(&t.schemas, false)
        } else {
            self.base_scope(&t.schemas, false)
        };
        for v in &t.validations {
            self.condition(&mut sink, "rule", &v.rule, &v.at.key("rule"), &mut scope);
        }
        for r in &t.resources {
            self.resource(&mut sink, r, &mut scope);
        }
        self.post_validations(&mut sink, &t.post_validations, &mut scope);
        sink.diags
    }

    /// Check an Addon's creates, patches and removes.
    pub(crate) fn check_addon(&self, a: &TraitDef<'_>) -> Vec<Diagnostic> {
        let mut sink = Sink {
            loc: &a.loc,
            what: format!("Addon {:?}", a.name),
            diags: Vec::new(),
        };
        let mut scope = if a.model == Model::Upstream {
            self.upstream_scope(&a.schemas, true)
        } else {
            self.base_scope(&a.schemas, true)
        };
        for v in &a.validations {
            self.condition(&mut sink, "rule", &v.rule, &v.at.key("rule"), &mut scope);
        }
        for r in &a.creates {
            self.resource(&mut sink, r, &mut scope);
        }
        for p in &a.patches {
            let n = scope.len();
            if let Some(fe) = &p.for_each {
                let el = self.for_each(&mut sink, fe, &p.at.key("forEach"), &mut scope);
                scope.declare(p.var.clone(), el);
            }
            let kind = self.target_node(&p.target);
            self.where_(&mut sink, &p.target, kind.as_ref(), &p.at, &mut scope);
            for o in &p.ops {
                self.string(
                    &mut sink,
                    &o.path,
                    &o.at.key("path"),
                    Some(&Type::String),
                    &mut scope,
                );
                if let (Some(v), false) = (&o.value, o.op == Op::Remove) {
                    let node = kind.as_ref().and_then(|k| node_at_pointer(k, &o.path));
                    self.value(&mut sink, v, &o.at.key("value"), node.as_ref(), &mut scope);
                }
            }
            scope.truncate(n);
        }
        for rm in &a.removes {
            let n = scope.len();
            if let Some(fe) = &rm.for_each {
                let el = self.for_each(&mut sink, fe, &rm.at.key("forEach"), &mut scope);
                scope.declare(rm.var.clone(), el);
            }
            let kind = self.target_node(&rm.target);
            self.where_(&mut sink, &rm.target, kind.as_ref(), &rm.at, &mut scope);
            scope.truncate(n);
        }
        self.post_validations(&mut sink, &a.post_validations, &mut scope);
        sink.diags
    }

    /// Check a ProjectType's validations and resources (upstream's project pipeline context).
    pub(crate) fn check_project_type(&self, t: &ProjectTypeDef<'_>) -> Vec<Diagnostic> {
        let kind = if t.cluster {
            "ClusterProjectType"
        } else {
            "ProjectType"
        };
        let mut sink = Sink {
            loc: &t.loc,
            what: format!("{kind} {:?}", t.name),
            diags: Vec::new(),
        };
        let mut scope = self.pipeline_scope(
            &t.schemas,
            &[
                "namespace",
                "projectNamespace",
                "projectName",
                "projectUID",
                "environmentName",
                "environmentUID",
                "dataPlaneName",
                "dataPlaneUID",
            ],
        );
        for v in &t.validations {
            self.condition(&mut sink, "rule", &v.rule, &v.at.key("rule"), &mut scope);
        }
        for r in &t.resources {
            self.resource(&mut sink, r, &mut scope);
        }
        sink.diags
    }

    /// Check a ResourceType's resources, outputs (strings) and readyWhen (bools).
    pub(crate) fn check_resource_type(&self, t: &ResourceTypeDef<'_>) -> Vec<Diagnostic> {
        let kind = if t.cluster {
            "ClusterResourceType"
        } else {
            "ResourceType"
        };
        let mut sink = Sink {
            loc: &t.loc,
            what: format!("{kind} {:?}", t.name),
            diags: Vec::new(),
        };
        let mut scope = self.pipeline_scope(
            &t.schemas,
            &[
                "name",
                "namespace",
                "resourceNamespace",
                "resourceName",
                "resourceUID",
                "projectName",
                "projectUID",
                "environmentName",
                "environmentUID",
                "dataPlaneName",
                "dataPlaneUID",
            ],
        );
        for r in &t.resources {
            self.resource(&mut sink, r, &mut scope);
        }
        // Outputs and readyWhen also see the applied objects' status (no schema: dyn).
        scope.declare("applied", Type::Dyn);
        for o in &t.outputs {
            let strings: Vec<(&str, FieldPath)> = match &o.source {
                OutputSource::Value(v) => vec![(v.as_str(), o.at.key("value"))],
                OutputSource::SecretKeyRef { name, key } => vec![
                    (name.as_str(), o.at.key("secretKeyRef").key("name")),
                    (key.as_str(), o.at.key("secretKeyRef").key("key")),
                ],
                OutputSource::ConfigMapKeyRef { name, key } => vec![
                    (name.as_str(), o.at.key("configMapKeyRef").key("name")),
                    (key.as_str(), o.at.key("configMapKeyRef").key("key")),
                ],
            };
            for (src, at) in strings {
                self.string(&mut sink, src, &at, Some(&Type::String), &mut scope);
            }
        }
        for (rw, at) in &t.ready_when {
            self.condition(&mut sink, "readyWhen", rw, at, &mut scope);
        }
        sink.diags
    }

    /// The context of upstream's project and resource pipelines (`BaseContext`): `metadata`
    /// with the given string fields and string-map `labels`/`annotations`, `parameters` and
    /// `environmentConfigs` typed by their sections, and `dataplane`, `environment`, `gateway`
    /// as `dyn` (their shape follows the platform objects).
    fn pipeline_scope(&self, params: &shorthand::Schemas, metadata: &[&str]) -> Scope {
        let string = json!({"type": "string"});
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let mut md = serde_json::Map::new();
        for k in metadata {
            md.insert((*k).into(), string.clone());
        }
        for k in ["labels", "annotations"] {
            md.insert(k.into(), string_map.clone());
        }
        let mut s = Scope::new();
        s.declare(
            "metadata",
            self.object(json!({"type": "object", "properties": Value::Object(md)})),
        );
        let typed = |v: &Value| Type::of_node(&self.k8s.node_of(&numbers_dynamic(v), false));
        s.declare(
            "parameters",
            typed(params.params.as_ref().unwrap_or(&params.merged)),
        );
        s.declare("environmentConfigs", typed(&params.env));
        for k in ["dataplane", "environment", "gateway"] {
            s.declare(k, Type::Dyn);
        }
        s
    }

    fn object(&self, schema: Value) -> Type {
        Type::Object(self.k8s.node_of(&schema, false))
    }

    fn base_scope(&self, params: &shorthand::Schemas, addon: bool) -> Scope {
        let string = json!({"type": "string"});
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let mut s = Scope::new();
        s.declare(
            "metadata",
            self.object(json!({"type": "object", "properties": {
                "name": string, "namespace": string, "labels": string_map,
                "annotations": string_map, "podSelectors": string_map,
            }})),
        );
        let (all, env) = parameter_schemas(params);
        let typed = |v: Option<Value>| match v {
            Some(v) => Type::of_node(&self.k8s.node_of(&v, false)),
            None => Type::Dyn,
        };
        s.declare("parameters", typed(all));
        let env = typed(env);
        s.declare("envOverrides", env.clone());
        s.declare("environmentConfigs", env);
        s.declare("workload", Type::Dyn);
        s.declare("build", Type::Dyn);
        s.declare(
            "component",
            self.object(json!({"type": "object", "properties": {
                "name": string, "namespace": string, "projectName": string,
            }})),
        );
        s.declare(
            "environment",
            self.object(json!({"type": "object", "properties": {"name": string}})),
        );
        if addon {
            let me = self.object(json!({"type": "object", "properties": {
                "name": string, "instanceName": string,
            }}));
            s.declare("addon", me.clone());
            s.declare("trait", me);
            s.declare("instanceName", Type::String);
        }
        s
    }

    /// The variables of upstream's `ComponentContext` / `TraitContext`: `parameters` and
    /// `environmentConfigs` typed by their own sections, `metadata` by upstream's
    /// `MetadataContext`; the platform views (`workload`, `configurations`, `dependencies`,
    /// `dataplane`, `environment`, `gateway`) are `dyn`.
    fn upstream_scope(&self, params: &shorthand::Schemas, is_trait: bool) -> Scope {
        let string = json!({"type": "string"});
        let string_map = json!({"type": "object", "additionalProperties": {"type": "string"}});
        let mut s = Scope::new();
        let mut md = serde_json::Map::new();
        for k in [
            "componentName",
            "componentUID",
            "projectName",
            "projectUID",
            "dataPlaneName",
            "dataPlaneUID",
            "environmentName",
            "environmentUID",
            "name",
            "namespace",
            "componentNamespace",
        ] {
            md.insert(k.into(), string.clone());
        }
        for k in ["labels", "annotations", "podSelectors"] {
            md.insert(k.into(), string_map.clone());
        }
        s.declare(
            "metadata",
            self.object(json!({"type": "object", "properties": Value::Object(md)})),
        );
        let typed = |v: &Value| Type::of_node(&self.k8s.node_of(&numbers_dynamic(v), false));
        s.declare(
            "parameters",
            typed(params.params.as_ref().unwrap_or(&params.merged)),
        );
        s.declare("environmentConfigs", typed(&params.env));
        for k in [
            "workload",
            "configurations",
            "dependencies",
            "dataplane",
            "environment",
            "gateway",
        ] {
            s.declare(k, Type::Dyn);
        }
        if is_trait {
            s.declare(
                "trait",
                self.object(json!({"type": "object", "properties": {
                    "name": string, "instanceName": string,
                }})),
            );
        }
        s
    }

    /// includeWhen → forEach → template, as they are rendered.
    fn resource(&self, sink: &mut Sink<'_, '_>, t: &ResourceTpl, scope: &mut Scope) {
        if let Some(e) = &t.include_when {
            self.condition(sink, "includeWhen", e, &t.at.key("includeWhen"), scope);
        }
        let n = scope.len();
        if let Some(fe) = &t.for_each {
            let el = self.for_each(sink, fe, &t.at.key("forEach"), scope);
            scope.declare(t.var.clone(), el);
        }
        let kind = kind_node(&self.k8s, &t.template);
        self.value(
            sink,
            &t.template,
            &t.at.key("template"),
            kind.as_ref(),
            scope,
        );
        scope.truncate(n);
    }

    /// The type of an expression, or `None` after reporting why it does not type-check (or when
    /// it did not compile, which was reported already).
    fn infer(
        &self,
        sink: &mut Sink<'_, '_>,
        src: &str,
        at: &FieldPath,
        scope: &mut Scope,
    ) -> Option<Type> {
        let c = self.exprs.get(src)?;
        match infer(c.program.expression(), scope) {
            Ok(t) => Some(t),
            Err(msg) => {
                let reads = |v: &str| c.refs.roots.iter().any(|r| r == v);
                let hint = if !msg.starts_with("undefined field") {
                    OVERLOAD_HINT.to_string()
                } else if ["parameters", "envOverrides", "environmentConfigs"]
                    .iter()
                    .any(|v| reads(v))
                {
                    format!(
                        "check the spelling against the schema of {} (kiln schema prints it); envOverrides and environmentConfigs hold only its env-overridable fields",
                        sink.what
                    )
                } else if reads("metadata") {
                    "metadata has name, namespace, labels, annotations and podSelectors".to_string()
                } else {
                    "check the field name against the value's schema (a resource has its kind's fields)"
                        .to_string()
                };
                let d = sink.loc.error(
                    codes::TYPE_CHECK,
                    at,
                    format!("expression {src:?} does not type-check: {msg}"),
                    hint,
                );
                // An undefined field's nearest declared one, for an editor's quick fix.
                let suggested = crate::suggest::suggested_in(&msg);
                sink.diags
                    .push(crate::suggest::suggesting(d, suggested.as_deref()));
                None
            }
        }
    }

    fn condition(
        &self,
        sink: &mut Sink<'_, '_>,
        what: &str,
        src: &str,
        at: &FieldPath,
        scope: &mut Scope,
    ) {
        let Some(t) = self.infer(sink, src, at, scope) else {
            return;
        };
        if !matches!(t, Type::Bool | Type::Dyn) {
            sink.push(
                codes::CONDITION_TYPE,
                at,
                format!("{what} {src:?} must return a bool, but returns {t}"),
                "compare explicitly, e.g. ${parameters.replicas > 1} or ${has(parameters.hpa)}",
            );
        }
    }

    /// A forEach's loop variable type: a list's element, a map's `{key, value}` entry.
    fn for_each(
        &self,
        sink: &mut Sink<'_, '_>,
        src: &str,
        at: &FieldPath,
        scope: &mut Scope,
    ) -> Type {
        let Some(t) = self.infer(sink, src, at, scope) else {
            return Type::Dyn;
        };
        match self.loop_var(&t) {
            Some(el) => el,
            None => {
                sink.push(
                    codes::CONDITION_TYPE,
                    at,
                    format!("forEach {src:?} must return a list or a map, but returns {t}"),
                    "iterate over a list or a map, e.g. ${parameters.mounts}",
                );
                Type::Dyn
            }
        }
    }

    fn loop_var(&self, t: &Type) -> Option<Type> {
        Some(match t {
            Type::Dyn => Type::Dyn,
            Type::Optional(inner) => self.loop_var(inner)?,
            Type::List(el) => (**el).clone(),
            Type::Map(k, v) => self.object(json!({"type": "object", "properties": {
                "key": schema_of(k), "value": schema_of(v),
            }})),
            Type::Object(_) => self.object(json!({"type": "object", "properties": {
                "key": {"type": "string"},
                "value": {"x-kubernetes-preserve-unknown-fields": true},
            }})),
            _ => return None,
        })
    }

    /// A patch's or remove's `where`, with `resource` typed by the target kind when known.
    /// Post-render validations: `when` a bool over the context, `forEach` a list or map, then
    /// `where` and `rule` bools with `resource` typed by the target's kind.
    fn post_validations(
        &self,
        sink: &mut Sink<'_, '_>,
        rules: &[super::kinds::PostValidation],
        scope: &mut Scope,
    ) {
        for v in rules {
            if let Some(w) = &v.when {
                self.condition(sink, "when", w, &v.at.key("when"), scope);
            }
            let n = scope.len();
            if let Some(fe) = &v.for_each {
                let el = self.for_each(sink, fe, &v.at.key("forEach"), scope);
                scope.declare(v.var.clone(), el);
            }
            let kind = self.target_node(&v.target);
            self.where_(sink, &v.target, kind.as_ref(), &v.at, scope);
            scope.declare("resource", kind.map(Type::Object).unwrap_or(Type::Dyn));
            self.condition(sink, "rule", &v.rule, &v.at.key("rule"), scope);
            scope.truncate(n);
        }
    }

    fn where_(
        &self,
        sink: &mut Sink<'_, '_>,
        target: &Target,
        kind: Option<&SchemaNode>,
        entry_at: &FieldPath,
        scope: &mut Scope,
    ) {
        let Some(w) = &target.where_ else { return };
        let n = scope.len();
        scope.declare(
            "resource",
            kind.map(|k| Type::Object(k.clone())).unwrap_or(Type::Dyn),
        );
        self.condition(
            sink,
            "where",
            w,
            &entry_at.key("target").key("where"),
            scope,
        );
        scope.truncate(n);
    }

    /// The schema of a target's kind, when its apiVersion is known (an absent group matches any
    /// group, so nothing is assumed then).
    fn target_node(&self, t: &Target) -> Option<SchemaNode> {
        let api_version = match t.group.as_deref()? {
            "" => t.version.clone(),
            g => format!("{g}/{}", t.version),
        };
        self.k8s.lookup(&api_version, &t.kind).map(|k| k.node())
    }

    /// A template value, with the schema node of the field it fills when known.
    fn value(
        &self,
        sink: &mut Sink<'_, '_>,
        v: &Value,
        at: &FieldPath,
        node: Option<&SchemaNode>,
        scope: &mut Scope,
    ) {
        match v {
            Value::String(s) => {
                let want = node.map(Type::of_node);
                self.string(sink, s, at, want.as_ref(), scope);
            }
            Value::Array(items) => {
                let child = node.and_then(|n| match n.items() {
                    NodeChild::Node(c) => Some(c),
                    _ => None,
                });
                for (i, x) in items.iter().enumerate() {
                    self.value(sink, x, &at.index(i), child.as_ref(), scope);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let p = at.key(k);
                    let dynamic = self.key(sink, k, &p, scope);
                    let child = if dynamic {
                        None
                    } else {
                        node.and_then(|n| match n.field(k) {
                            NodeChild::Node(c) => Some(c),
                            _ => None,
                        })
                    };
                    self.value(sink, x, &p, child.as_ref(), scope);
                }
            }
            _ => {}
        }
    }

    /// A map key; `true` when it holds expressions (its field is then unknown).
    fn key(&self, sink: &mut Sink<'_, '_>, k: &str, at: &FieldPath, scope: &mut Scope) -> bool {
        match classify(k) {
            Ok(Tpl::Literal) | Err(_) => false,
            Ok(Tpl::Whole(e)) => {
                if let Some(t) = self.infer(sink, e, at, scope) {
                    if t.certainly_not(&[&Type::String]) {
                        sink.push(
                            codes::TYPE_MISMATCH,
                            at,
                            format!(
                                "dynamic map key {k:?} must be a string, but expression {e:?} returns {t}"
                            ),
                            "convert it with string(...)",
                        );
                    }
                }
                true
            }
            Ok(Tpl::Parts(parts)) => {
                self.parts(sink, &parts, at, scope);
                true
            }
        }
    }

    /// Type the expressions of an interpolated string; `true` when all of them typed.
    fn parts(
        &self,
        sink: &mut Sink<'_, '_>,
        parts: &[Piece],
        at: &FieldPath,
        scope: &mut Scope,
    ) -> bool {
        let mut ok = true;
        for p in parts {
            let Piece::Expr(e) = p else { continue };
            match self.infer(sink, e, at, scope) {
                Some(t) => {
                    if let Some(what) = unwritable(&t) {
                        sink.push(
                            codes::TYPE_MISMATCH,
                            at,
                            format!(
                                "expression {e:?} inside a string returns {what}, which cannot be written as text"
                            ),
                            "convert it explicitly, e.g. base64.encode(x) or string(x)",
                        );
                        ok = false;
                    }
                }
                None => ok = false,
            }
        }
        ok
    }

    /// A string value: standalone expressions must fit the field; interpolations produce strings.
    fn string(
        &self,
        sink: &mut Sink<'_, '_>,
        s: &str,
        at: &FieldPath,
        want: Option<&Type>,
        scope: &mut Scope,
    ) {
        match classify(s) {
            Ok(Tpl::Literal) | Err(_) => {}
            Ok(Tpl::Whole(e)) => {
                let Some(got) = self.infer(sink, e, at, scope) else {
                    return;
                };
                if let Some(what) = unwritable(&got) {
                    sink.push(
                        codes::TYPE_MISMATCH,
                        at,
                        format!("expression {e:?} returns {what}, which cannot be written into a manifest"),
                        "convert it explicitly, e.g. base64.encode(x) or string(x)",
                    );
                    return;
                }
                if let Some(want) = want {
                    if let Err(detail) = fits(&got, want, 0) {
                        let plain = detail.starts_with("type kind mismatch");
                        sink.push(
                            codes::TYPE_MISMATCH,
                            at,
                            format!(
                                "expression {e:?} returns {got}, but the field expects {want}{}",
                                if plain { String::new() } else { format!(": {detail}") }
                            ),
                            "convert the value (string(x), int(x)) or write it into a field of its type",
                        );
                    }
                }
            }
            Ok(Tpl::Parts(parts)) => {
                let all_typed = self.parts(sink, &parts, at, scope);
                if let (true, Some(want)) = (all_typed, want) {
                    if fits(&Type::String, want, 0).is_err() {
                        sink.push(
                            codes::TYPE_MISMATCH,
                            at,
                            format!(
                                "template {s:?} always produces a string, but the field expects {want}"
                            ),
                            "write the whole value as one ${…} of the field's type",
                        );
                    }
                }
            }
        }
    }
}

/// The merged parameters schema and the env-overridable part, prepared for typing: `number`
/// fields become `dyn` (a JSON `3` arrives as an int, `3.5` as a double). `None` when there is no
/// usable schema.
fn parameter_schemas(s: &shorthand::Schemas) -> (Option<Value>, Option<Value>) {
    if !s.merged.is_object() {
        return (None, None);
    }
    let all = numbers_dynamic(&s.merged);
    let mut env_props = Map::new();
    if let Some(props) = all.get("properties").and_then(Value::as_object) {
        for k in &s.env_keys {
            if let Some(p) = props.get(k) {
                env_props.insert(k.clone(), p.clone());
            }
        }
    }
    let env = json!({"type": "object", "properties": Value::Object(env_props)});
    (Some(all), Some(env))
}

fn numbers_dynamic(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let is_number = match m.get("type") {
                Some(Value::String(t)) => t == "number",
                Some(Value::Array(ts)) => ts.iter().any(|t| t == "number"),
                _ => false,
            };
            if is_number {
                return json!({"x-kubernetes-preserve-unknown-fields": true});
            }
            Value::Object(
                m.iter()
                    .map(|(k, x)| {
                        let x = match k.as_str() {
                            "default" | "enum" | "example" | "x-custom-markers" => x.clone(),
                            _ => numbers_dynamic(x),
                        };
                        (k.clone(), x)
                    })
                    .collect(),
            )
        }
        Value::Array(items) => Value::Array(items.iter().map(numbers_dynamic).collect()),
        other => other.clone(),
    }
}

/// A schema for a type (loop entries of a typed map).
fn schema_of(t: &Type) -> Value {
    match t {
        Type::Bool => json!({"type": "boolean"}),
        Type::Int | Type::Uint => json!({"type": "integer"}),
        Type::String => json!({"type": "string"}),
        Type::List(el) => json!({"type": "array", "items": schema_of(el)}),
        Type::Map(_, v) => json!({"type": "object", "additionalProperties": schema_of(v)}),
        Type::Object(n) => n.inline(),
        _ => json!({"x-kubernetes-preserve-unknown-fields": true}),
    }
}

/// The schema of a template's kind, when apiVersion and kind are literal and known.
fn kind_node(k8s: &Schemas, template: &Value) -> Option<SchemaNode> {
    let av = template.get("apiVersion")?.as_str()?;
    let kind = template.get("kind")?.as_str()?;
    if av.contains("${") || kind.contains("${") {
        return None;
    }
    k8s.lookup(av, kind).map(|k| k.node())
}

/// The schema node a literal patch path designates (`-`, indices, filters and wildcards are list
/// items). `None` when the path holds expressions or leaves the schema.
fn node_at_pointer(root: &SchemaNode, path: &str) -> Option<SchemaNode> {
    if path.contains("${") {
        return None;
    }
    let steps = pointer::parse(path).ok()?;
    let mut cur = root.clone();
    for step in steps {
        let child = match &step {
            Step::Key(k) if k == "-" || k.parse::<usize>().is_ok() => match cur.items() {
                NodeChild::Missing => cur.field(k),
                c => c,
            },
            Step::Key(k) => cur.field(k),
            Step::Index(_) | Step::Append | Step::All | Step::Filter { .. } => cur.items(),
        };
        match child {
            NodeChild::Node(n) => cur = n,
            NodeChild::Anything | NodeChild::Missing => return None,
        }
    }
    Some(cur)
}

/// Why a value of this type cannot be written into a manifest (from_cel refuses it).
fn unwritable(t: &Type) -> Option<String> {
    match t {
        Type::Bytes => Some("bytes".into()),
        Type::TypeValue => Some("a type".into()),
        Type::Opaque(n) => Some(format!("a {n}")),
        _ => None,
    }
}

/// Whether a value of type `got` may be written into a field of type `want`: kro's rule
/// ([`crate::expr::types::compatible`]) made as lenient as the component runtime is. Numbers fit
/// numeric fields, timestamps and durations are written as strings, `null` and `dyn` fit anything.
fn fits(got: &Type, want: &Type, depth: usize) -> Result<(), String> {
    use Type::*;
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let numeric = |t: &Type| matches!(t, Int | Uint | Double);
    match (got, want) {
        (Dyn, _) | (_, Dyn) | (Null, _) => Ok(()),
        (Optional(g), w) => fits(g, w, depth),
        (g, Optional(w)) => fits(g, w, depth),
        (g, w) if numeric(g) && numeric(w) => Ok(()),
        (Int | Uint | Double | String | IntOrString, IntOrString) => Ok(()),
        (IntOrString, Int | Uint | Double | String) => Ok(()),
        (Timestamp | Duration, String) => Ok(()),
        // Reported as unwritable instead.
        (Bytes | Opaque(_) | TypeValue, _) => Ok(()),
        (List(g), List(w)) => fits(g, w, depth + 1),
        (Map(_, g), Map(_, w)) => fits(g, w, depth + 1),
        // Which keys a map holds is not known statically.
        (Map(..), Object(_)) | (Object(_), Map(..)) => Ok(()),
        (Object(g), Object(w)) => {
            // Every field the value's object declares must exist in the target.
            let Some(props) = g.value().get("properties").and_then(Value::as_object) else {
                return Ok(());
            };
            for name in props.keys() {
                match w.field(name) {
                    NodeChild::Missing => {
                        return Err(format!("field {name:?} does not exist in the target"))
                    }
                    NodeChild::Anything => {}
                    NodeChild::Node(wn) => {
                        if let NodeChild::Node(gn) = g.field(name) {
                            fits(&Type::of_node(&gn), &Type::of_node(&wn), depth + 1)
                                .map_err(|e| format!("field {name:?}: {e}"))?;
                        }
                    }
                }
            }
            Ok(())
        }
        (g, w) if std::mem::discriminant(g) == std::mem::discriminant(w) => Ok(()),
        _ => Err(format!("type kind mismatch: got {got}, expected {want}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_fit_each_other_but_not_strings() {
        assert!(fits(&Type::Int, &Type::Double, 0).is_ok());
        assert!(fits(&Type::Double, &Type::Int, 0).is_ok());
        assert!(fits(&Type::Int, &Type::IntOrString, 0).is_ok());
        let refused = fits(&Type::Int, &Type::String, 0).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("type kind mismatch: got int, expected string"),
            "{refused}"
        );
        let refused = fits(&Type::Bool, &Type::String, 0).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("type kind mismatch: got bool, expected string"),
            "{refused}"
        );
        assert!(fits(&Type::list(Type::Int), &Type::list(Type::Double), 0).is_ok());
        let refused = fits(
            &Type::map(Type::String, Type::Int),
            &Type::list(Type::Int),
            0,
        )
        .expect_err("an error");
        assert!(
            refused.contains("type kind mismatch: got map(string, int), expected list(int)"),
            "{refused}"
        );
    }

    #[test]
    fn number_parameters_are_dynamic() {
        let s = numbers_dynamic(&json!({"type": "object", "properties": {
            "ratio": {"type": "number", "default": 0.5},
            "n": {"type": "integer"},
            "type": {"type": "string"}
        }}));
        assert_eq!(
            s["properties"]["ratio"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(s["properties"]["n"], json!({"type": "integer"}));
        assert_eq!(s["properties"]["type"], json!({"type": "string"}));
    }

    #[test]
    fn pointer_nodes() {
        let k8s = Schemas::bundled();
        let d = k8s.lookup("apps/v1", "Deployment").unwrap().node();
        let n = node_at_pointer(&d, "/spec/template/spec/volumes/-").unwrap();
        assert!(matches!(Type::of_node(&n), Type::Object(_)));
        let n = node_at_pointer(
            &d,
            "/spec/template/spec/containers/[?(@.name=='app')]/env/-",
        )
        .unwrap();
        assert!(n
            .value()
            .get("properties")
            .is_some_and(|p| p.get("valueFrom").is_some()));
        let n = node_at_pointer(&d, "/spec/replicas").unwrap();
        assert!(matches!(Type::of_node(&n), Type::Int));
        assert!(node_at_pointer(&d, "/spec/${x}").is_none());
        assert!(node_at_pointer(&d, "/spec/nope").is_none());
    }
}
