//! kro's typed checks (stage 6 and 7 of reference/kro.md §6.1) and status schema inference (§8).
//!
//! Runs after the structural stages succeeded, so every identifier is known. Each expression is
//! typed against the instance schema, the schemas of the resources it reads, its forEach iterators
//! and its comprehension variables ([`crate::expr::check`]), then compared with the field it fills
//! in its resource's schema ([`crate::expr::types::compatible`]). Conditions must be booleans and
//! forEach dimensions lists. Status expressions give the instance CRD its status schema.

use serde_json::{json, Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::check::{infer, Scope};
use crate::expr::types::{compatible, Type};
use crate::fieldpath::{FieldPath, Segment};
use crate::ir::{Expr, HoleKind, Node, NodeKind, Part, Template};
use crate::openapi::{NodeChild, SchemaNode, Schemas};

/// Inputs of the typed stage.
pub(crate) struct Input<'a> {
    pub doc: &'a Document,
    pub nodes: &'a [Node],
    pub spec_schema: &'a Value,
    pub status: Option<&'a Template>,
    pub conditions: &'a [Expr],
    pub schemas: &'a Schemas,
}

/// What the typed stage found.
pub(crate) struct Output {
    pub errors: Vec<Diagnostic>,
    /// The inferred instance status schema (author fields plus `state` and `conditions`).
    pub status_schema: Value,
}

/// The object a template creates, typed by its kind's schema; `None` when the kind is unknown or
/// written as an expression.
fn kind_node(node: &Node, schemas: &Schemas) -> Option<SchemaNode> {
    let v = match &node.kind {
        NodeKind::Template(t) | NodeKind::External(t) => &t.value,
    };
    let av = v.get("apiVersion")?.as_str()?;
    let kind = v.get("kind")?.as_str()?;
    if av.contains("${") || kind.contains("${") {
        return None;
    }
    schemas.lookup(av, kind).map(|k| k.node())
}

/// The schema node at a template path, `Some(dyn)` below free-form nodes, `None` when the path is
/// not in the schema (reported by the literal check, KLN2010).
fn type_at(root: &SchemaNode, path: &FieldPath) -> Option<Type> {
    let mut cur = root.clone();
    for seg in &path.0 {
        let child = match seg {
            Segment::Key(k) => cur.field(k),
            Segment::Index(_) => cur.items(),
        };
        match child {
            NodeChild::Node(n) => cur = n,
            NodeChild::Anything => return Some(Type::Dyn),
            NodeChild::Missing => return None,
        }
    }
    Some(Type::of_node(&cur))
}

/// The type of `schema` in expressions: the instance object. Also the editor's (`ide`).
pub(crate) fn instance_type(spec_schema: &Value, schemas: &Schemas) -> Type {
    let spec = if spec_schema.is_object() {
        spec_schema.clone()
    } else {
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true})
    };
    let root = json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            // Reading the instance's own status is allowed by kro but its value is not known offline.
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }
    });
    Type::Object(schemas.node_of(&root, true))
}

struct Checker<'a> {
    doc: &'a Document,
    errors: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn push(&mut self, code: crate::diag::Code, msg: String, hint: &str, e: &Expr) {
        self.errors.push(
            self.doc
                .diag(Diagnostic::error(code, msg).with_hint(hint), &e.path),
        );
    }

    /// Type an expression; a type error is reported with `what` as context and gives `None`.
    fn infer(&mut self, e: &Expr, scope: &mut Scope, what: &str) -> Option<Type> {
        match infer(e.compiled.program.expression(), scope) {
            Ok(t) => Some(t),
            Err(msg) => {
                let d = Diagnostic::error(codes::TYPE_CHECK, format!("{what} {:?}: {msg}", e.source()))
                    .with_hint("check field names against the kind's schema; convert types explicitly (string(x), int(x))");
                // An undefined field's nearest declared one, for an editor's quick fix.
                let d =
                    crate::suggest::suggesting(d, crate::suggest::suggested_in(&msg).as_deref());
                self.errors.push(self.doc.diag(d, &e.path));
                None
            }
        }
    }

    fn condition(&mut self, e: &Expr, scope: &mut Scope, id: &str, key: &str) {
        let what = format!("failed to type-check {key} expression in resource {id:?}:");
        let Some(t) = self.infer(e, scope, &what) else {
            return;
        };
        let ok = match &t {
            Type::Dyn | Type::Bool => true,
            Type::Optional(inner) => matches!(**inner, Type::Bool | Type::Dyn),
            _ => false,
        };
        if !ok {
            self.push(
                codes::CONDITION_TYPE,
                format!(
                    "{key} expression {:?} in resource {id:?} must return bool or optional_type(bool), but returns {:?}",
                    e.source(),
                    t.to_string()
                ),
                "compare explicitly, e.g. ${schema.spec.replicas > 0}",
                e,
            );
        }
    }

    fn hole(
        &mut self,
        id: &str,
        path: &FieldPath,
        kind: &HoleKind,
        expected: Option<&Type>,
        scope: &mut Scope,
    ) {
        let what = format!(
            "resource {id:?}: failed to compile template expression at path {:?}:",
            path.to_string()
        );
        match kind {
            HoleKind::Standalone(e) => {
                let Some(t) = self.infer(e, scope, &what) else {
                    return;
                };
                if let Some(want) = expected {
                    self.fits(id, path, e, &t, want);
                }
            }
            HoleKind::Interpolated(parts) => {
                let mut all_typed = true;
                for p in parts {
                    let Part::Expr(e) = p else { continue };
                    let Some(t) = self.infer(e, scope, &what) else {
                        all_typed = false;
                        continue;
                    };
                    if t.certainly_not(&[&Type::String]) {
                        self.push(
                            codes::TYPE_MISMATCH,
                            format!(
                                "type mismatch in resource {id:?} at path {:?}: expression {:?} returns type {:?} but expected \"string\" (expressions inside a string template must return strings)",
                                path.to_string(),
                                e.source(),
                                t.to_string()
                            ),
                            "wrap the value in string(...), or make the field one standalone ${...}",
                            e,
                        );
                        all_typed = false;
                    }
                }
                if let (true, Some(want), Some(Part::Expr(first))) = (
                    all_typed,
                    expected,
                    parts.iter().find(|p| matches!(p, Part::Expr(_))),
                ) {
                    if compatible(&Type::String, want).is_err() {
                        self.push(
                            codes::TYPE_MISMATCH,
                            format!(
                                "type mismatch in resource {id:?} at path {:?}: template {:?} returns type \"string\" but expected {:?}",
                                path.to_string(),
                                first.written,
                                want.to_string()
                            ),
                            "a string template always produces a string; write the whole value as one ${...} of the field's type",
                            first,
                        );
                    }
                }
            }
        }
    }

    fn fits(&mut self, id: &str, path: &FieldPath, e: &Expr, got: &Type, want: &Type) {
        if let Err(detail) = compatible(got, want) {
            let plain = detail.starts_with("type kind mismatch");
            self.push(
                codes::TYPE_MISMATCH,
                format!(
                    "type mismatch in resource {id:?} at path {:?}: expression {:?} returns type {:?} but expected {:?}{}",
                    path.to_string(),
                    e.source(),
                    got.to_string(),
                    want.to_string(),
                    if plain { String::new() } else { format!(": {detail}") }
                ),
                "convert the value (string(x), int(x)) or fix the field it is written into",
                e,
            );
        }
    }
}

/// Run the typed stage.
pub(crate) fn check(input: &Input<'_>) -> Output {
    let mut c = Checker {
        doc: input.doc,
        errors: Vec::new(),
    };
    let kinds: Vec<Option<SchemaNode>> = input
        .nodes
        .iter()
        .map(|n| kind_node(n, input.schemas))
        .collect();
    let object = |i: usize| kinds[i].clone().map(Type::Object).unwrap_or(Type::Dyn);

    // Every expression may read `schema` and every resource (collections as lists).
    let mut base = Scope::new();
    base.declare("schema", instance_type(input.spec_schema, input.schemas));
    for (i, n) in input.nodes.iter().enumerate() {
        let t = object(i);
        let t = if n.is_collection() { Type::list(t) } else { t };
        base.declare(n.id.clone(), t);
    }

    for (i, n) in input.nodes.iter().enumerate() {
        let id = n.id.as_str();
        // Dimensions see schema and resources but not each other (kro: they are independent).
        let mut iterators = Vec::new();
        for (it, e) in &n.for_each {
            let what = format!("node {id:?}: forEach iterator {it:?}:");
            let el = match c.infer(e, &mut base, &what) {
                Some(t @ (Type::List(_) | Type::Dyn)) => t.element(),
                Some(t) => {
                    c.push(
                        codes::CONDITION_TYPE,
                        format!(
                            "node {id:?}: forEach iterator {it:?} must return a list, got {:?}",
                            t.to_string()
                        ),
                        "a forEach dimension iterates over a list, e.g. ${schema.spec.regions}",
                        e,
                    );
                    Type::Dyn
                }
                None => Type::Dyn,
            };
            iterators.push((it.clone(), el));
        }
        for e in &n.include_when {
            c.condition(e, &mut base, id, "includeWhen");
        }
        let mut own = Scope::new();
        own.declare(if n.is_collection() { "each" } else { id }, object(i));
        for e in &n.ready_when {
            c.condition(e, &mut own, id, "readyWhen");
        }
        if let NodeKind::Template(t) = &n.kind {
            // Templates also see this node's iterators, declared for the node only.
            let outer = base.len();
            for (it, el) in iterators {
                base.declare(it, el);
            }
            for h in &t.holes {
                let expected = kinds[i].as_ref().and_then(|k| type_at(k, &h.path));
                c.hole(id, &h.path, &h.kind, expected.as_ref(), &mut base);
            }
            base.truncate(outer);
        }
    }

    let status_schema = status_schema(&mut c, input.status, &mut base);

    // Custom conditions also see `runtime`, and return a condition or a list of them (kro's
    // validateConditionOutputType; dyn is left to evaluation).
    let outer = base.len();
    base.declare(
        crate::expr::library::runtime::VAR,
        Type::Opaque(crate::expr::library::runtime::RUNTIME_TYPE),
    );
    for e in input.conditions {
        let what = "failed to build instance conditions: failed to type-check condition";
        let Some(t) = c.infer(e, &mut base, what) else {
            continue;
        };
        let el = match &t {
            Type::List(el) => (**el).clone(),
            t => t.clone(),
        };
        let ok = match &el {
            Type::Dyn => true,
            Type::Opaque(n) => *n == crate::expr::library::runtime::CONDITION_TYPE,
            _ => false,
        };
        if !ok {
            c.push(
                codes::CONDITION_TYPE,
                format!(
                    "failed to build instance conditions: condition {:?}: condition expressions must return runtime.newCondition(...) or a list of them, got {:?}",
                    e.source(),
                    t.to_string()
                ),
                "wrap the value: ${runtime.newCondition({type: 'Name', status: x ? 'True' : 'False', reason: 'Why', message: 'What'})}",
                e,
            );
        }
    }
    base.truncate(outer);
    Output {
        errors: c.errors,
        status_schema,
    }
}

/// kro's table (reference §8): CEL output type → OpenAPI.
fn openapi_of(t: &Type) -> Value {
    match t {
        Type::Bool => json!({"type": "boolean"}),
        Type::Int | Type::Uint => json!({"type": "integer"}),
        Type::Double => json!({"type": "number"}),
        Type::String => json!({"type": "string"}),
        Type::Bytes => json!({"type": "string", "format": "byte"}),
        Type::Timestamp => json!({"type": "string", "format": "date-time"}),
        Type::Duration => json!({"type": "string"}),
        Type::IntOrString => json!({"x-kubernetes-int-or-string": true}),
        Type::List(el) => json!({"type": "array", "items": openapi_of(el)}),
        Type::Map(_, v) => json!({"type": "object", "additionalProperties": openapi_of(v)}),
        Type::Optional(inner) => openapi_of(inner),
        Type::Object(n) => n.inline(),
        Type::Dyn | Type::Null | Type::TypeValue | Type::Opaque(_) => {
            json!({"x-kubernetes-preserve-unknown-fields": true})
        }
    }
}

/// Insert `schema` at `path` into an object schema, creating intermediate objects.
fn insert(root: &mut Map<String, Value>, path: &[Segment], schema: Value) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let Segment::Key(k) = first else {
        // Status fields inside lists are unusual; kro types the whole list from its expression.
        return;
    };
    let props = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(props) = props else { return };
    if rest.is_empty() {
        props.insert(k.clone(), schema);
        return;
    }
    let child = props
        .entry(k.clone())
        .or_insert_with(|| json!({"type": "object"}));
    if let Value::Object(m) = child {
        insert(m, rest, schema);
    }
}

/// The keys kro owns in an instance's status: its own state and conditions.
const KRO_STATUS_KEYS: &[&str] = &["state", "conditions"];

fn status_schema(c: &mut Checker<'_>, status: Option<&Template>, scope: &mut Scope) -> Value {
    let mut root = Map::new();
    root.insert("type".into(), json!("object"));
    if let Some(t) = status {
        for h in &t.holes {
            if matches!(h.path.0.first(), Some(Segment::Key(k)) if KRO_STATUS_KEYS.contains(&k.as_str()))
            {
                continue;
            }
            let what = format!(
                "failed to type-check status expression at path {:?}:",
                h.path.to_string()
            );
            let ty = match &h.kind {
                HoleKind::Standalone(e) => c.infer(e, scope, &what).unwrap_or(Type::Dyn),
                HoleKind::Interpolated(parts) => {
                    // kro builds `"text" + (expr) + …` from a string template, so each expression
                    // must be a string there as in resource templates.
                    for p in parts {
                        let Part::Expr(e) = p else { continue };
                        let Some(t) = c.infer(e, scope, &what) else {
                            continue;
                        };
                        if t.certainly_not(&[&Type::String]) {
                            c.push(
                                codes::TYPE_MISMATCH,
                                format!(
                                    "failed to type-check status expression at path {:?}: expression {:?} returns type {:?} but expected \"string\" (expressions inside a string template must return strings)",
                                    h.path.to_string(),
                                    e.source(),
                                    t.to_string()
                                ),
                                "wrap the value in string(...), or make the field one standalone ${...}",
                                e,
                            );
                        }
                    }
                    Type::String
                }
            };
            insert(&mut root, &h.path.0, openapi_of(&ty));
        }
    }
    let props = root
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(props) = props {
        props.insert("state".into(), json!({"type": "string"}));
        props.insert(
            "conditions".into(),
            json!({
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string"},
                        "status": {"type": "string"},
                        "reason": {"type": "string"},
                        "message": {"type": "string"},
                        // kro's defaultConditionsType (pkg/graph/crd/defaults.go): no formats.
                        "lastTransitionTime": {"type": "string"},
                        "observedGeneration": {"type": "integer"},
                    }
                }
            }),
        );
    }
    Value::Object(root)
}

/// Paths under a status value that hold fixed values instead of expressions (kro rejects them).
pub(crate) fn static_status_fields(status: &Value) -> Vec<FieldPath> {
    fn walk(v: &Value, p: &FieldPath, out: &mut Vec<FieldPath>) {
        match v {
            Value::Object(m) => {
                for (k, x) in m {
                    if p.is_empty() && KRO_STATUS_KEYS.contains(&k.as_str()) {
                        continue;
                    }
                    walk(x, &p.key(k), out);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter().enumerate() {
                    walk(x, &p.index(i), out);
                }
            }
            Value::String(s) if s.contains("${") => {}
            _ => out.push(p.clone()),
        }
    }
    let mut out = Vec::new();
    walk(status, &FieldPath::root(), &mut out);
    out
}
