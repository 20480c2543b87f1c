//! Status hydration (`kiln status`): the instance status kro would write, from observed state.
//!
//! Each instance is rendered as in direct mode with the observed objects bound (a created
//! resource reads as its live counterpart: desired object plus live status). Then, as kro's
//! instance controller does:
//!
//! - a resource is ready when it is excluded (`includeWhen`), or observed and every `readyWhen`
//!   holds against the live object (`each` for each item of a collection; an empty collection is
//!   ready); an externalRef is ready when found;
//! - status fields are evaluated best-effort against the live objects: a field whose expression
//!   cannot be resolved yet (a missing key, an object not observed) is left out;
//! - `state` is `ACTIVE` when every resource is ready, else `IN_PROGRESS`;
//! - the conditions are kro's built-ins (`InstanceManaged`, `GraphResolved`, `ResourcesReady`,
//!   `Ready`), unless the definition declares its own `conditions` (`runtime.newCondition`):
//!   then, as kro, only the author's conditions are written, each expression evaluated with
//!   `schema.status.conditions` holding the built-ins (for `runtime.condition(schema, 'Ready')`);
//!   an expression whose data is not there yet is skipped, one that fails otherwise (or two
//!   conditions of one type, which are both dropped) makes `state` `ERROR`.
//!   `lastTransitionTime` is not written: it is the cluster's clock, and output here is
//!   deterministic.

use cel::Value as CelValue;
use serde_json::{json, Map, Value};

use crate::diag::Diagnostic;
use crate::document::Document;
use crate::expr::budget::{execute, EvalBudget};
use crate::expr::cel::root_context;
use crate::expr::value::{from_cel, to_val};
use crate::fieldpath::{FieldPath, Segment};
use crate::ir::{Expr, HoleKind, Part, Template};
use crate::kro::nesting::{object_ref, Nesting};
use crate::kro::Rgd;
use crate::observed::Observed;
use crate::render::{render_unit_detailed, Outcome, Unit};

/// Why one resource of an instance is not ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotReady {
    /// The resource id.
    pub id: String,
    /// Why, in words.
    pub reason: String,
}

/// The hydrated status of one instance.
#[derive(Debug, Clone)]
pub struct InstanceStatus {
    /// `apiVersion`, `kind`, `metadata` (name, namespace) and the `status` kro would write.
    pub object: Value,
    /// Resources that are not ready, in topological order.
    pub not_ready: Vec<NotReady>,
}

/// Hydrate the status of one instance against observed state.
pub fn hydrate(
    rgd: &Rgd,
    doc: &Document,
    nesting: &Nesting<'_>,
    observed: &Observed,
) -> Result<InstanceStatus, Vec<Diagnostic>> {
    let settings = nesting.settings;
    let prepared = crate::kro::instance::prepare(rgd, doc, settings.namespace)?;
    let g = &rgd.graph;
    // Observed state bound, and what needs more than it waits (kro's softResolve) rather
    // than failing.
    let unit = Unit {
        observed: Some(observed),
        pending_ok: true,
        ..nesting.unit(rgd, doc, prepared)
    };
    // Status expressions see the instance as the resources' do (its live metadata included).
    let schema = unit.variables[0].1.clone();
    let out = render_unit_detailed(&unit, settings.render)?;
    let budget = settings.render.eval;

    let mut not_ready = Vec::new();
    let mut resolved_all = true;
    // What status expressions see of each resource: its live object(s).
    let mut live: Vec<(String, Value)> = vec![("schema".into(), schema.clone())];
    for &i in &g.order {
        let node = &g.nodes[i];
        let mut fail = |reason: String| {
            not_ready.push(NotReady {
                id: node.id.clone(),
                reason,
            })
        };
        match &out.outcomes[i] {
            Outcome::Excluded => {}
            Outcome::Waiting(why) => {
                resolved_all = false;
                fail(why.clone());
            }
            Outcome::External(None) => fail("externalRef not observed".into()),
            Outcome::External(Some(v)) => {
                live.push((node.id.clone(), v.clone()));
                let items: Vec<&Value> = match v {
                    Value::Array(a) => a.iter().collect(),
                    one => vec![one],
                };
                let own = if matches!(v, Value::Array(_)) {
                    "each"
                } else {
                    &node.id
                };
                if let Some(why) = first_unready(&node.ready_when, own, &items, &budget) {
                    fail(why);
                }
            }
            Outcome::Rendered(desired) => {
                let mut found = Vec::new();
                let mut missing = Vec::new();
                for d in desired {
                    match observed.get_like(d) {
                        Some(l) => found.push(l),
                        None => missing.push(object_ref(d)),
                    }
                }
                let collection = !node.for_each.is_empty();
                if collection {
                    live.push((
                        node.id.clone(),
                        Value::Array(found.iter().map(|v| (*v).clone()).collect()),
                    ));
                } else if let Some(l) = found.first() {
                    live.push((node.id.clone(), (*l).clone()));
                }
                if !missing.is_empty() {
                    fail(format!("not observed: {}", missing.join(", ")));
                    continue;
                }
                let own = if collection { "each" } else { &node.id };
                if let Some(why) = first_unready(&node.ready_when, own, &found, &budget) {
                    fail(why);
                }
            }
        }
    }

    let mut status = Map::new();
    if let Some(t) = &rgd.status {
        if let Value::Object(fields) = soft_resolve(t, &live, &budget) {
            for (k, v) in fields {
                // kro computes `state` and `conditions` itself.
                if k != "state" && k != "conditions" {
                    status.insert(k, v);
                }
            }
        }
    }
    let ready = not_ready.is_empty();
    let builtins = builtin_conditions(resolved_all, &not_ready);
    let mut state = if ready { "ACTIVE" } else { "IN_PROGRESS" };
    let conditions = if rgd.conditions.is_empty() {
        builtins
    } else {
        // kro writes only the author's conditions when the definition declares them; the
        // built-ins stay readable through runtime.condition(schema, 'Ready').
        let authored = author_conditions(&rgd.conditions, &live, &builtins, &schema, &budget);
        if authored.degraded {
            state = "ERROR";
        }
        Value::Array(authored.conditions)
    };
    status.insert("state".into(), json!(state));
    status.insert("conditions".into(), conditions);

    let s = &schema;
    let mut metadata = Map::new();
    metadata.insert("name".into(), s["metadata"]["name"].clone());
    if let Some(ns) = s["metadata"]["namespace"].as_str() {
        metadata.insert("namespace".into(), json!(ns));
    }
    Ok(InstanceStatus {
        object: json!({
            "apiVersion": s["apiVersion"],
            "kind": s["kind"],
            "metadata": metadata,
            "status": status,
        }),
        not_ready,
    })
}

fn condition(kind: &str, ok: bool, reason: &str, message: Option<String>) -> Value {
    let mut c = Map::new();
    c.insert("type".into(), json!(kind));
    c.insert("status".into(), json!(if ok { "True" } else { "False" }));
    c.insert("reason".into(), json!(reason));
    if let Some(m) = message {
        c.insert("message".into(), json!(m));
    }
    Value::Object(c)
}

fn builtin_conditions(resolved: bool, not_ready: &[NotReady]) -> Value {
    let listed = (!not_ready.is_empty()).then(|| {
        not_ready
            .iter()
            .map(|n| format!("{}: {}", n.id, n.reason))
            .collect::<Vec<_>>()
            .join("; ")
    });
    let ready = not_ready.is_empty();
    json!([
        condition("InstanceManaged", true, "Managed", None),
        condition(
            "GraphResolved",
            resolved,
            if resolved {
                "Resolved"
            } else {
                "ResolutionFailed"
            },
            None
        ),
        condition(
            "ResourcesReady",
            ready,
            if ready {
                "AllResourcesReady"
            } else {
                "NotReady"
            },
            listed.clone()
        ),
        condition(
            "Ready",
            ready,
            if ready { "Ready" } else { "NotReady" },
            listed
        ),
    ])
}

/// The author's conditions of one instance.
struct Authored {
    /// In declaration order, as kro writes them (type, status, then reason and message when not
    /// empty, and observedGeneration when the instance has a generation).
    conditions: Vec<Value>,
    /// An expression failed for a reason other than data not there yet, returned something
    /// that is not a condition, or two conditions have the same type: kro sets state ERROR.
    degraded: bool,
}

/// kro's `EvaluateConditions` (pkg/runtime/conditions.go): each expression sees the resources,
/// `runtime`, and `schema` with kro's built-in conditions as its `status.conditions`. Data that is
/// not there yet skips an expression; duplicates of a type are all dropped.
fn author_conditions(
    exprs: &[Expr],
    live: &[(String, Value)],
    builtins: &Value,
    instance: &Value,
    budget: &EvalBudget,
) -> Authored {
    use crate::expr::library::runtime;
    let mut ctx = root_context().new_inner_scope();
    for (name, v) in live {
        if name != "schema" {
            ctx.add_variable_as_val(name.clone(), to_val(v));
        }
    }
    let mut schema = instance.clone();
    let lookups: Vec<Value> = builtins
        .as_array()
        .map(|a| a.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|c| {
            let mut m = Map::new();
            for k in runtime::CONDITION_KEYS {
                m.insert(k.into(), c.get(k).cloned().unwrap_or(json!("")));
            }
            Value::Object(m)
        })
        .collect();
    if let Value::Object(m) = &mut schema {
        m.insert("status".into(), json!({ "conditions": lookups }));
    }
    ctx.add_variable_as_val("schema", to_val(&schema));
    ctx.add_variable_from_value(runtime::VAR, runtime::value());
    let generation = instance
        .pointer("/metadata/generation")
        .and_then(Value::as_i64);

    let mut out: Vec<Value> = Vec::new();
    let mut degraded = false;
    for e in exprs {
        let v = match execute(&e.compiled.program, &ctx, budget) {
            Ok(v) => v,
            Err(err) => {
                use cel::ExecutionError as E;
                if !matches!(
                    err,
                    E::NoSuchKey(_) | E::UndeclaredReference(_) | E::IndexOutOfBounds(_)
                ) {
                    degraded = true;
                }
                continue;
            }
        };
        let items = match from_cel(&v) {
            Ok(Value::Array(items)) => items,
            Ok(one) => vec![one],
            Err(_) => {
                degraded = true;
                continue;
            }
        };
        if !items.iter().all(runtime::is_condition) {
            degraded = true;
            continue;
        }
        out.extend(items);
    }
    let type_of = |c: &Value| c["type"].as_str().unwrap_or("").to_string();
    let mut counts = std::collections::BTreeMap::new();
    for c in &out {
        *counts.entry(type_of(c)).or_insert(0) += 1;
    }
    if counts.values().any(|&n| n > 1) {
        degraded = true;
    }
    let conditions = out
        .iter()
        .filter(|c| counts[&type_of(c)] == 1)
        .map(|c| {
            let mut m = Map::new();
            m.insert("type".into(), c["type"].clone());
            m.insert("status".into(), c["status"].clone());
            for k in ["reason", "message"] {
                if c[k].as_str().is_some_and(|s| !s.is_empty()) {
                    m.insert(k.into(), c[k].clone());
                }
            }
            if let Some(g) = generation {
                m.insert("observedGeneration".into(), json!(g));
            }
            Value::Object(m)
        })
        .collect();
    Authored {
        conditions,
        degraded,
    }
}

/// The first `readyWhen` that does not hold for some item, as a reason.
fn first_unready(
    ready_when: &[Expr],
    own: &str,
    items: &[&Value],
    budget: &EvalBudget,
) -> Option<String> {
    for item in items {
        let mut ctx = root_context().new_inner_scope();
        ctx.add_variable_as_val(own.to_string(), to_val(item));
        for e in ready_when {
            let why = match execute(&e.compiled.program, &ctx, budget) {
                Ok(CelValue::Bool(true)) => continue,
                Ok(CelValue::Bool(false)) | Ok(CelValue::Null) => {
                    format!("readyWhen condition evaluated to false: {:?}", e.written)
                }
                Ok(_) => format!("readyWhen condition {:?} is not a bool", e.written),
                Err(err) => format!(
                    "readyWhen condition {:?} cannot be evaluated: {err}",
                    e.written
                ),
            };
            let name = item
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            return Some(if items.len() > 1 {
                format!("{name}: {why}")
            } else {
                why
            });
        }
    }
    None
}

/// A status template with every hole that resolves filled in, and every other one left out
/// (with the maps it empties).
fn soft_resolve(t: &Template, vars: &[(String, Value)], budget: &EvalBudget) -> Value {
    let mut ctx = root_context().new_inner_scope();
    for (name, v) in vars {
        ctx.add_variable_as_val(name.clone(), to_val(v));
    }
    let eval = |e: &Expr| -> Option<Value> {
        from_cel(&execute(&e.compiled.program, &ctx, budget).ok()?).ok()
    };
    let mut out = t.value.clone();
    let mut unresolved = Vec::new();
    for h in &t.holes {
        let value = match &h.kind {
            HoleKind::Standalone(e) => eval(e),
            HoleKind::Interpolated(parts) => parts
                .iter()
                .map(|p| match p {
                    Part::Text(s) => Some(s.clone()),
                    Part::Expr(e) => match eval(e)? {
                        Value::String(s) => Some(s),
                        _ => None,
                    },
                })
                .collect::<Option<String>>()
                .map(Value::String),
        };
        match (value, h.path.get_mut(&mut out)) {
            (Some(v), Some(slot)) => *slot = v,
            _ => unresolved.push(h.path.clone()),
        }
    }
    for p in unresolved.iter().rev() {
        remove(&mut out, p);
    }
    prune(&mut out);
    out
}

fn remove(v: &mut Value, path: &FieldPath) {
    let Some((last, parent)) = path.0.split_last() else {
        return;
    };
    let Some(p) = FieldPath(parent.to_vec()).get_mut(v) else {
        return;
    };
    match (last, p) {
        (Segment::Key(k), Value::Object(m)) => {
            m.shift_remove(k);
        }
        (Segment::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
        }
        _ => {}
    }
}

/// Drop maps that resolution left empty.
fn prune(v: &mut Value) {
    if let Value::Object(m) = v {
        m.values_mut().for_each(prune);
        m.retain(|_, v| !matches!(v, Value::Object(o) if o.is_empty()));
    }
}

/// The statuses of a request's instances, in input order.
#[derive(Debug)]
pub struct Statuses {
    /// One per kro instance among the inputs.
    pub instances: Vec<InstanceStatus>,
    /// Every file read, for source snippets.
    pub files: Vec<std::sync::Arc<crate::document::SourceFile>>,
}

/// `kiln status`: read the request (its inputs and `observed`), and hydrate every instance.
/// Observed state is required: without it there is nothing to read status from.
pub fn status(req: &crate::request::Request) -> Result<Statuses, crate::request::Failed> {
    use crate::diag::codes;
    use crate::request::Failed;
    if req.observed.is_empty() {
        return Err(Failed::new(
            vec![Diagnostic::error(
                codes::REQUEST_INVALID,
                "status needs observed state: there is nothing else to read status from",
            )
            .with_hint("pass --observed PATH: live objects, e.g. `kubectl get -o yaml` output, or a directory of them")],
            Vec::new(),
            &[],
        ));
    }
    let d = crate::request::definitions(req)?;
    let none = Observed::default();
    let observed = d.options.observed.as_ref().unwrap_or(&none);
    let nesting = Nesting {
        defs: &d.definitions,
        settings: d.options.nesting(),
    };
    let mut instances = Vec::new();
    let mut diags = Vec::new();
    for doc in &d.documents {
        let (Some(api), Some(kind)) = (doc.api_version(), doc.kind()) else {
            continue;
        };
        let Some(rgd) = d.definitions.find(api, kind) else {
            continue;
        };
        match hydrate(rgd, doc, &nesting, observed) {
            Ok(s) => instances.push(s),
            Err(ds) => diags.extend(ds),
        }
    }
    if !diags.is_empty() {
        let mut sorted = crate::diag::Diagnostics(diags);
        sorted.sort();
        return Err(Failed::new(sorted.0, d.files, &[]));
    }
    if instances.is_empty() {
        return Err(Failed::new(
            vec![Diagnostic::error(
                codes::REQUEST_INVALID,
                "the inputs hold no instance of a ResourceGraphDefinition: there is no status to hydrate",
            )
            .with_hint("name the RGDs and their instances among the inputs")],
            d.files,
            &[],
        ));
    }
    Ok(Statuses {
        instances,
        files: d.files,
    })
}
