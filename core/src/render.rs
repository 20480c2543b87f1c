//! Evaluation of one unit (an instance of a definition) over the graph IR.
//!
//! Nodes are evaluated in the definition's topological order. A node whose dependency was excluded
//! is excluded too; `includeWhen` must hold; `forEach` expands to the cartesian product of its
//! dimensions, first dimension outermost. Each rendered object becomes a variable that later nodes
//! read (a collection as a list). Everything that needs a live cluster (status of a created
//! resource, an external reference) is an error that names the expression: offline, kiln renders
//! what kro would create, or nothing.

use std::collections::BTreeSet;

use cel::{Context, Value as CelValue};
use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::budget::{execute, overrun};
use crate::expr::cel::{root_context, ExecutionErrorExt};
use crate::expr::value::{from_cel, to_val, OMIT_MARKER};
use crate::fieldpath::FieldPath;
use crate::ir::{Expr, GraphDef, HoleKind, Node, NodeKind, Part, Template};
/// The evaluation limits of a unit (defined with every other limit in [`crate::limits`]).
pub use crate::limits::RenderLimits;
use crate::observed::Observed;
/// The provenance annotation names, shared by every front-end.
pub use crate::provenance::{
    annotate, PROVENANCE_DEFINITION, PROVENANCE_INSTANCE, PROVENANCE_NESTED_IN, PROVENANCE_NODE,
};
use cel::common::types::CelList;

/// One unit to render.
pub struct Unit<'a> {
    /// The definition.
    pub graph: &'a GraphDef,
    /// Root variables (`schema` for kro) with their values.
    pub variables: Vec<(String, Value)>,
    /// The namespace namespaced children inherit when they set none.
    pub namespace: Option<String>,
    /// The document that asked for this unit (the instance), where diagnostics point.
    pub origin: &'a Document,
    /// Live objects (`--observed`): externalRefs and reads of a resource's status resolve
    /// against them. Without them, such reads are errors (they need a cluster).
    pub observed: Option<&'a Observed>,
    /// Expands an object of a kind another definition of the run defines (a nested
    /// composition) into that definition's objects.
    pub nested: Option<&'a dyn Nested>,
    /// kro mode: a node whose expressions need a cluster waits (it and what depends on it are
    /// left to the controller) instead of failing the run.
    pub pending_ok: bool,
    /// Annotate each object with the definition, instance and node that produced it.
    pub provenance: Option<&'a Provenance>,
    /// How deep this unit is nested in other instances (0 for an instance of the inputs).
    pub depth: usize,
}

/// What [`Unit::nested`] does: render a nested instance.
pub trait Nested: Sync {
    /// The objects of `obj` when its kind is another definition's instance kind, or `None`.
    /// `origin` is the outermost instance document (where diagnostics point).
    /// `nested_in` gives the enclosing chain for provenance (`Shop/default/books#web`), asked
    /// only when `obj` is nested (every rendered object passes here).
    fn expand(
        &self,
        obj: &Value,
        origin: &Document,
        limits: &RenderLimits,
        nested_in: &dyn Fn() -> Option<String>,
        depth: usize,
    ) -> Option<Result<Vec<Value>, Vec<Diagnostic>>>;
}

/// The provenance annotations of one unit (see [`PROVENANCE_DEFINITION`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Provenance {
    /// `KIND/NAME` of the definition.
    pub definition: String,
    /// `KIND/NAMESPACE/NAME` (or `KIND/NAME`) of the instance.
    pub instance: String,
    /// For a nested instance, the instances and nodes it is nested in, outermost first
    /// (`Shop/default/books#web`, joined by ` > `).
    pub nested_in: Option<String>,
}

impl Provenance {
    fn stamp(&self, obj: &mut Value, node: &str) {
        annotate(
            obj,
            &[
                (PROVENANCE_DEFINITION, &self.definition),
                (PROVENANCE_INSTANCE, &self.instance),
                (PROVENANCE_NODE, node),
            ],
        );
        if let Some(chain) = &self.nested_in {
            annotate(obj, &[(PROVENANCE_NESTED_IN, chain)]);
        }
    }

    /// The chain a nested instance created by `node` of this unit is nested in.
    fn chain_for(&self, node: &str) -> String {
        let here = format!("{}#{node}", self.instance);
        match &self.nested_in {
            Some(outer) => format!("{outer} > {here}"),
            None => here,
        }
    }
}

#[derive(Debug, Clone)]
enum State {
    Pending,
    Excluded,
    /// An externalRef with no observed state to resolve it.
    External,
    /// Observed state was given, but lacks what the node is (why, for messages).
    Missing(String),
    /// kro mode: needs the cluster; left to the controller.
    Waiting,
    Rendered,
    /// Its evaluation failed (reported), or a dependency's did: not evaluated further, so every
    /// other resource is still evaluated and every failure of the unit reported at once.
    Failed,
}

/// What one node came to, for callers that look past the objects (`kiln status`).
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Not rendered: an includeWhen was false, or a dependency was excluded.
    Excluded,
    /// Needs a cluster (kro mode), or observed state lacks it.
    Waiting(String),
    /// An externalRef: the observed object (a list for a selector), if any.
    External(Option<Value>),
    /// The desired objects, before any nested expansion (one unless a collection).
    Rendered(Vec<Value>),
}

/// The result of [`render_unit_detailed`].
#[derive(Debug, Clone)]
pub struct UnitOutput {
    /// The objects, in topological order (nested instances expanded).
    pub objects: Vec<Value>,
    /// Each node's outcome, by node index.
    pub outcomes: Vec<Outcome>,
}

/// What a node's evaluation produced, before it is recorded.
enum Step {
    Excluded,
    Single(Value),
    Items(Vec<Value>),
    External(Result<Value, String>),
}

/// Render a unit into its objects, in topological order.
pub fn render_unit(unit: &Unit<'_>, limits: &RenderLimits) -> Result<Vec<Value>, Vec<Diagnostic>> {
    render_nodes(unit, limits, false).map(|o| o.objects)
}

/// [`render_unit`], also reporting what became of each node.
pub fn render_unit_detailed(
    unit: &Unit<'_>,
    limits: &RenderLimits,
) -> Result<UnitOutput, Vec<Diagnostic>> {
    render_nodes(unit, limits, true)
}

fn render_nodes(
    unit: &Unit<'_>,
    limits: &RenderLimits,
    detailed: bool,
) -> Result<UnitOutput, Vec<Diagnostic>> {
    let g = unit.graph;
    let mut ctx = root_context().new_inner_scope();
    for (name, v) in &unit.variables {
        ctx.add_variable_as_val(name.clone(), g.reads_of(name).to_val(v));
    }
    let mut state = vec![State::Pending; g.nodes.len()];
    // Every failure of the unit, in evaluation order.
    let mut failures: Vec<Diagnostic> = Vec::new();
    // Only objects another node reads need converting into CEL values.
    let mut read = vec![false; g.nodes.len()];
    for n in &g.nodes {
        for &d in &n.dependencies {
            read[d] = true;
        }
    }
    let mut out = Vec::new();
    let mut outcomes = if detailed {
        vec![Outcome::Excluded; g.nodes.len()]
    } else {
        Vec::new()
    };
    // Nodes other expressions read as one object, and where that object is: in `out`, or (when
    // it is not output as is: an external object, a nested instance, an object with observed
    // status) in `views`. This is what plain field paths read directly (see `direct`).
    let mut singles: Vec<usize> = Vec::new();
    let mut at: Vec<Option<usize>> = vec![None; g.nodes.len()];
    let mut views: Vec<Option<Value>> = vec![None; g.nodes.len()];
    // Nodes whose bound value holds an observed status.
    let mut has_status = vec![false; g.nodes.len()];
    // Objects this unit's own nodes put in `out` (index in `out`, node).
    let mut own: Vec<(usize, usize)> = Vec::new();

    for &i in &g.order {
        let node = &g.nodes[i];
        if node
            .dependencies
            .iter()
            .any(|&d| matches!(state[d], State::Excluded))
        {
            state[i] = State::Excluded;
            continue;
        }
        if let Some(&d) = node
            .dependencies
            .iter()
            .find(|&&d| matches!(state[d], State::Failed))
        {
            // Skipped, and said so beside the failure it follows from.
            state[i] = State::Failed;
            let failed = &g.nodes[d].id;
            failures.push(
                unit.origin.diag(
                    Diagnostic::warning(
                        codes::NOT_EVALUATED,
                        format!(
                            "resource {:?} was not evaluated: it depends on {failed:?}, which failed (in definition {:?}, {})",
                            node.id, g.name, node.path
                        ),
                    )
                    .with_hint(format!("fix the failure of {failed:?} first; {:?} is checked once it evaluates", node.id)),
                    &FieldPath::root(),
                ),
            );
            continue;
        }
        if node
            .dependencies
            .iter()
            .any(|&d| matches!(state[d], State::Waiting))
        {
            state[i] = State::Waiting;
            if detailed {
                let d = node
                    .dependencies
                    .iter()
                    .find(|&&d| matches!(state[d], State::Waiting))
                    .map(|&d| g.nodes[d].id.as_str())
                    .unwrap_or_default();
                outcomes[i] = Outcome::Waiting(format!("dependency {d:?} is not ready"));
            }
            continue;
        }
        let direct: Vec<(&str, &Value)> = unit
            .variables
            .iter()
            .map(|(name, v)| (name.as_str(), v))
            .chain(singles.iter().map(|&n| {
                let v = match (&views[n], at[n]) {
                    (Some(v), _) => v,
                    (None, Some(o)) => &out[o],
                    (None, None) => &Value::Null,
                };
                (g.nodes[n].id.as_str(), v)
            }))
            .collect();
        let ev = Evaluator {
            unit,
            state: &state,
            has_status: &has_status,
            limits,
        };
        let step = match ev.step(&ctx, node, &direct) {
            Ok(s) => s,
            Err(ds) if unit.pending_ok && ds.iter().all(needs_cluster) => {
                drop(direct);
                state[i] = State::Waiting;
                if detailed {
                    outcomes[i] = Outcome::Waiting(ds[0].message.clone());
                }
                continue;
            }
            Err(ds) => {
                drop(direct);
                failures.extend(ds);
                state[i] = State::Failed;
                continue;
            }
        };
        drop(direct);
        match step {
            Step::Excluded => state[i] = State::Excluded,
            Step::External(Err(_)) if unit.observed.is_none() => {
                if detailed {
                    outcomes[i] = Outcome::External(None);
                }
                state[i] = State::External;
            }
            Step::External(Err(why)) => {
                if detailed {
                    outcomes[i] = Outcome::Waiting(why.clone());
                }
                state[i] = State::Missing(why);
            }
            Step::External(Ok(live)) => {
                if read[i] {
                    ctx.add_variable_as_val(node.id.clone(), g.reads_of(&node.id).to_val(&live));
                }
                has_status[i] = true;
                if detailed {
                    outcomes[i] = Outcome::External(Some(live.clone()));
                }
                views[i] = Some(live);
                singles.push(i);
                state[i] = State::Rendered;
            }
            Step::Single(obj) => {
                let view = unit.observed.and_then(|o| with_status(o, &obj));
                has_status[i] = view.is_some();
                if read[i] {
                    let bound = view.as_ref().unwrap_or(&obj);
                    ctx.add_variable_as_val(node.id.clone(), g.reads_of(&node.id).to_val(bound));
                }
                if detailed {
                    outcomes[i] = Outcome::Rendered(vec![obj.clone()]);
                }
                singles.push(i);
                let chain = || unit.provenance.map(|p| p.chain_for(&node.id));
                match unit
                    .nested
                    .and_then(|n| n.expand(&obj, unit.origin, limits, &chain, unit.depth + 1))
                {
                    Some(expanded) => {
                        out.extend(expanded?);
                        views[i] = Some(view.unwrap_or(obj));
                    }
                    None => {
                        views[i] = view;
                        at[i] = Some(out.len());
                        own.push((out.len(), i));
                        out.push(obj);
                    }
                }
                state[i] = State::Rendered;
            }
            Step::Items(items) => {
                let views_of: Option<Vec<Value>> = unit
                    .observed
                    .map(|o| items.iter().map(|it| with_status(o, it)).collect())
                    .and_then(|v: Vec<Option<Value>>| v.into_iter().collect());
                has_status[i] = views_of.is_some();
                if read[i] {
                    let bound = views_of.as_ref().unwrap_or(&items);
                    let list = CelList::from(bound.iter().map(to_val).collect::<Vec<_>>());
                    ctx.add_variable_as_val(node.id.clone(), Box::new(list));
                }
                if detailed {
                    outcomes[i] = Outcome::Rendered(items.clone());
                }
                for it in items {
                    let chain = || unit.provenance.map(|p| p.chain_for(&node.id));
                    match unit
                        .nested
                        .and_then(|n| n.expand(&it, unit.origin, limits, &chain, unit.depth + 1))
                    {
                        Some(expanded) => out.extend(expanded?),
                        None => {
                            own.push((out.len(), i));
                            out.push(it);
                        }
                    }
                }
                state[i] = State::Rendered;
            }
        }
    }
    if !failures.is_empty() {
        return Err(failures);
    }
    // Stamped last: expressions read the objects as the templates made them. Objects of a
    // nested instance carry their own definition's provenance already.
    if let Some(p) = unit.provenance {
        for (o, n) in own {
            p.stamp(&mut out[o], &g.nodes[n].id);
        }
    }
    Ok(UnitOutput {
        objects: out,
        outcomes,
    })
}

/// Whether a path read of an object (`metadata.uid`) is metadata the API server sets.
fn is_server_set(path: &[String]) -> bool {
    matches!(path, [md, field] if md == "metadata" && crate::observed::SERVER_SET_METADATA.contains(&field.as_str()))
}

/// A diagnostic that only a cluster (or observed state) could have avoided.
fn needs_cluster(d: &Diagnostic) -> bool {
    d.code == codes::NEEDS_CLUSTER || d.code == codes::NOT_OBSERVED
}

/// A rendered object with the `status` of its live counterpart, when that has one.
fn with_status(observed: &Observed, obj: &Value) -> Option<Value> {
    let status = observed.get_like(obj)?.get("status")?;
    let mut v = obj.clone();
    v.as_object_mut()?.insert("status".into(), status.clone());
    Some(v)
}

/// The value at `position` (see [`crate::ir::Hole::position`]) in a copy of a template.
fn at_position<'a>(mut v: &'a mut Value, position: &[usize]) -> Option<&'a mut Value> {
    for &i in position {
        v = match v {
            Value::Object(m) => m.values_mut().nth(i)?,
            Value::Array(a) => a.get_mut(i)?,
            _ => return None,
        };
    }
    Some(v)
}

/// A JSON value as CEL hands it back: maps with sorted keys (CEL maps are hash maps, and
/// `from_cel` sorts them), or `None` for what has no such result (an integer only `uint` holds,
/// which `from_cel` refuses: the CEL path reports it).
fn as_cel_result(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Number(n) if n.as_i64().is_none() && n.as_u64().is_some() => return None,
        Value::Array(items) => {
            Value::Array(items.iter().map(as_cel_result).collect::<Option<_>>()?)
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            let mut out = serde_json::Map::new();
            for (k, v) in entries {
                out.insert(k.clone(), as_cel_result(v)?);
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

fn is_optional(v: &CelValue) -> bool {
    matches!(v, CelValue::Opaque(o) if o.downcast_ref::<cel::objects::OptionalValue>().is_some())
}

fn optional_bool(v: &CelValue) -> Option<bool> {
    match v {
        CelValue::Opaque(o) => match o.downcast_ref::<cel::objects::OptionalValue>()?.value()? {
            CelValue::Bool(b) => Some(*b),
            _ => None,
        },
        _ => None,
    }
}

fn type_name(v: &CelValue) -> String {
    format!("{:?}", v.type_of()).to_lowercase()
}

struct Evaluator<'u, 's> {
    unit: &'u Unit<'u>,
    state: &'s [State],
    has_status: &'s [bool],
    limits: &'s RenderLimits,
}

impl Evaluator<'_, '_> {
    /// Evaluate one node whose dependencies are all rendered.
    fn step(
        &self,
        ctx: &Context<'_, '_>,
        node: &Node,
        direct: &[(&str, &Value)],
    ) -> Result<Step, Vec<Diagnostic>> {
        let template = match &node.kind {
            NodeKind::External(t) => {
                return match self.unit.observed {
                    None => Ok(Step::External(Err(String::new()))),
                    Some(o) => Ok(Step::External(
                        self.resolve_external(ctx, o, node, t, direct)?,
                    )),
                }
            }
            NodeKind::Template(t) => t,
        };
        for e in &node.include_when {
            let included = match self.direct(e, direct) {
                Some(Value::Bool(b)) => {
                    self.check_offline(e)?;
                    *b
                }
                Some(Value::Null) => {
                    self.check_offline(e)?;
                    false
                }
                _ => match self.eval_fallback(ctx, e, direct)? {
                    CelValue::Bool(b) => b,
                    CelValue::Null => false,
                    v if is_optional(&v) => optional_bool(&v).unwrap_or(false),
                    other => {
                        return Err(vec![self.diag(
                            codes::RESULT_TYPE,
                            format!(
                                "includeWhen expression {:?} must return a bool, got {}",
                                e.source(),
                                type_name(&other)
                            ),
                            e,
                            "compare explicitly, e.g. ${schema.spec.replicas > 0}",
                        )])
                    }
                },
            };
            if !included {
                return Ok(Step::Excluded);
            }
        }
        if node.for_each.is_empty() {
            Ok(Step::Single(self.fill(
                ctx,
                template,
                node.namespaced,
                direct,
            )?))
        } else {
            Ok(Step::Items(self.expand(
                ctx,
                node,
                template,
                self.limits,
                direct,
            )?))
        }
    }

    /// Find an externalRef's object in the observed state: by name (namespace defaulting to the
    /// instance's for a namespaced kind), or by selector (a list, from every namespace unless one
    /// is named). `Err` says what is missing.
    fn resolve_external(
        &self,
        ctx: &Context<'_, '_>,
        observed: &Observed,
        node: &Node,
        t: &Template,
        direct: &[(&str, &Value)],
    ) -> Result<Result<Value, String>, Vec<Diagnostic>> {
        let r = self.fill(ctx, t, false, direct)?;
        let s = |p: &str| r.pointer(p).and_then(Value::as_str).unwrap_or("");
        let (api, kind) = (s("/apiVersion"), s("/kind"));
        let ns = r
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty());
        if let Some(selector) = r.pointer("/metadata/selector").filter(|v| !v.is_null()) {
            let found = observed.select(api, kind, ns, selector).map_err(|why| {
                vec![self.unit.graph.diag(
                    Diagnostic::error(
                        codes::RESOURCE_SHAPE,
                        format!("resource {:?}: externalRef selector: {why}", node.id),
                    )
                    .with_hint("write a LabelSelector: matchLabels and/or matchExpressions"),
                    &node.path.key("externalRef").key("metadata").key("selector"),
                )]
            })?;
            return Ok(Ok(Value::Array(found.into_iter().cloned().collect())));
        }
        let name = s("/metadata/name");
        let ns = match ns {
            Some(n) => n,
            None if node.namespaced => self.unit.namespace.as_deref().unwrap_or(""),
            None => "",
        };
        Ok(match observed.get(api, kind, ns, name) {
            Some(live) => Ok(live.clone()),
            None => Err(format!(
                "externalRef {:?} ({kind} {}{name}) is not in the observed state",
                node.id,
                if ns.is_empty() {
                    String::new()
                } else {
                    format!("{ns}/")
                }
            )),
        })
    }

    /// A diagnostic in the instance's document that also says where in the definition the
    /// expression is.
    fn diag(&self, code: crate::diag::Code, msg: String, e: &Expr, hint: &str) -> Diagnostic {
        let g = self.unit.graph;
        // Where the expression is written, as file:line of the definition.
        let line = crate::document::locate(&g.document.source.text, g.document.index, &e.path);
        let at = match line.map(|(l, _)| l) {
            Some(l) => format!("{}:{l}", g.document.file()),
            None => g.document.file().to_string(),
        };
        let d = Diagnostic::error(
            code,
            format!("{msg} (in definition {:?} at {at}, {})", g.name, e.path),
        )
        .with_hint(hint);
        self.unit.origin.diag(d, &FieldPath::root())
    }

    /// Refuse expressions that read what only a cluster has, then evaluate.
    fn eval(
        &self,
        ctx: &Context<'_, '_>,
        e: &Expr,
        direct: &[(&str, &Value)],
    ) -> Result<CelValue, Vec<Diagnostic>> {
        self.check_offline(e)?;
        execute(&e.compiled.program, ctx, &self.limits.eval).map_err(|err| {
            if matches!(err, cel::ExecutionError::NoSuchKey(_)) {
                if let Some(d) = self.not_rendered(e, direct) {
                    return vec![d];
                }
            }
            if let Some(msg) = overrun(&err) {
                return vec![self.diag(
                    codes::EVAL_BUDGET,
                    format!("expression {:?} stopped: {msg}", e.source()),
                    e,
                    "iterate over less data, or raise the budget (see docs/cel.md, evaluation limits)",
                )];
            }
            let (msg, hint) = err.explain(e.source());
            vec![self.diag(codes::EVALUATION, msg, e, &hint)]
        })
    }

    /// [`Self::eval`] of an expression [`Self::direct`] could not read: a plain field path's
    /// variable is bound only with what other expressions read (see `ir::variable_reads`), so
    /// it is bound whole here, for CEL to report what is wrong with the path.
    fn eval_fallback(
        &self,
        ctx: &Context<'_, '_>,
        e: &Expr,
        direct: &[(&str, &Value)],
    ) -> Result<CelValue, Vec<Diagnostic>> {
        if let Some(root) = e.compiled.field_path.as_deref().and_then(|p| p.first()) {
            if let Some((_, v)) = direct.iter().rev().find(|(name, _)| name == root) {
                let mut whole = ctx.new_inner_scope();
                whole.add_variable_as_val(root.clone(), to_val(v));
                return self.eval(&whole, e, direct);
            }
        }
        self.eval(ctx, e, direct)
    }

    /// A read of a resource's field that the object kiln renders does not have: the template
    /// does not set it and its schema gives no default. Either a typo, or a value only the
    /// cluster fills in (an operator's field, `metadata.uid`): said as such, with the fields the
    /// object does have at that level, instead of "No such key".
    fn not_rendered(&self, e: &Expr, direct: &[(&str, &Value)]) -> Option<Diagnostic> {
        use crate::expr::reads::{reads, Reads};
        let g = self.unit.graph;
        for (root, r) in reads(e.compiled.program.expression()) {
            let node = g.node_index(&root);
            match node {
                Some(i) if !matches!(self.state[i], State::Rendered) => continue,
                // The instance (`schema`): only its server-set metadata is said here; any other
                // missing field is CEL's "no such key", whose hint (a default) fits it.
                None if !self.unit.variables.iter().any(|(n, _)| *n == root) => continue,
                _ => {}
            }
            let Some((_, obj)) = direct.iter().rev().find(|(n, _)| *n == root) else {
                continue;
            };
            // The first path the expression reads that the object lacks.
            let mut stack: Vec<(Vec<String>, &Reads, &Value)> = vec![(Vec::new(), &r, obj)];
            while let Some((path, r, v)) = stack.pop() {
                let (Reads::Fields(fields), Value::Object(m)) = (r, v) else {
                    continue;
                };
                for (k, sub) in fields.iter().rev() {
                    let mut p = path.clone();
                    p.push(k.clone());
                    match (m.get(k), node) {
                        (Some(child), _) => stack.push((p, sub, child)),
                        (None, Some(i)) => return Some(self.missing_field(e, &root, &p, m, i)),
                        (None, None) if is_server_set(&p) => {
                            return Some(self.missing_instance_metadata(e, &root, &p[1], obj))
                        }
                        (None, None) => {}
                    }
                }
            }
        }
        None
    }

    fn missing_field(
        &self,
        e: &Expr,
        root: &str,
        path: &[String],
        have: &serde_json::Map<String, Value>,
        node: usize,
    ) -> Diagnostic {
        let read = format!("{root}.{}", path.join("."));
        let last = path.last().map(String::as_str).unwrap_or("");
        let why = if is_server_set(path) {
            format!("metadata.{last} is set by the API server when it creates the object")
        } else {
            let near = crate::suggest::nearest(last, have.keys().map(String::as_str));
            let typo = match near {
                Some(n) => format!("a typo ({})", crate::suggest::did_you_mean(n)),
                None => "a typo".to_string(),
            };
            format!(
                "its template does not set it and its schema gives no default: {typo}, or a value only the cluster fills in (an operator, a controller)"
            )
        };
        let observed = self.unit.observed.is_some() && self.has_status[node];
        let (code, msg, hint) = if self.unit.observed.is_some() {
            (
                codes::NOT_OBSERVED,
                format!(
                    "expression {:?} reads {read}, which is neither in the object kiln renders for {root:?} nor in its observed state{}: {why}",
                    e.source(),
                    if observed { "" } else { " (not observed)" }
                ),
                "add the live object, with the field, to the observed state; if it is a typo, correct it",
            )
        } else {
            (
                codes::NEEDS_CLUSTER,
                format!(
                    "expression {:?} reads {read}, which is not in the object kiln renders for {root:?}: {why}",
                    e.source()
                ),
                "if the cluster fills it in, give the live object with --observed (e.g. kubectl get -o yaml output) or let kro render it (--mode kro); if it is a typo, correct it",
            )
        };
        self.diag(code, msg, e, hint)
    }

    /// A read of the instance's metadata that the API server sets (`schema.metadata.uid`, the
    /// owner reference of kro's documented idiom): the file has no such field, and observed
    /// state, if given, holds no live instance with it.
    fn missing_instance_metadata(
        &self,
        e: &Expr,
        root: &str,
        field: &str,
        instance: &Value,
    ) -> Diagnostic {
        let s = |p: &str| instance.pointer(p).and_then(Value::as_str).unwrap_or("");
        // The instance's name is the file's, of any length: a bounded prefix is said.
        let name = crate::diag::bounded(s("/metadata/name"));
        let (kind, ns) = (s("/kind"), s("/metadata/namespace"));
        let get = if ns.is_empty() {
            format!("kubectl get {kind} {name} -o yaml")
        } else {
            format!("kubectl get {kind} {name} -n {ns} -o yaml")
        };
        let read = format!("expression {:?} reads {root}.metadata.{field}, which the API server sets when it creates the instance", e.source());
        match self.unit.observed {
            None => self.diag(
                codes::NEEDS_CLUSTER,
                format!("{read}: offline the instance has none"),
                e,
                &format!("give the live instance with --observed (`{get}`), set metadata.{field} in the instance, or let kro render it (--mode kro)"),
            ),
            Some(o) => {
                let why = if o.get_like(instance).is_some() {
                    format!("its observed counterpart has no metadata.{field}")
                } else {
                    format!("the observed state does not hold {kind} {}{name}", if ns.is_empty() { String::new() } else { format!("{ns}/") })
                };
                self.diag(
                    codes::NOT_OBSERVED,
                    format!("{read}: {why}"),
                    e,
                    &format!("add the live instance to the observed state (`{get}`), or set metadata.{field} in the instance"),
                )
            }
        }
    }

    /// Expressions that read what only a cluster has (an externalRef, a created resource's
    /// status) are errors offline, unless observed state supplies it.
    fn check_offline(&self, e: &Expr) -> Result<(), Vec<Diagnostic>> {
        let g = self.unit.graph;
        for (root, fields) in &e.compiled.refs.fields {
            let Some(i) = g.node_index(root) else {
                continue;
            };
            match &self.state[i] {
                State::External => {
                    return Err(vec![self.diag(
                        codes::NEEDS_CLUSTER,
                        format!(
                            "expression {:?} reads externalRef {root:?}, which exists only in a live cluster",
                            e.source()
                        ),
                        e,
                        "give the live object with --observed (e.g. kubectl get -o yaml output), or pass the value through the instance spec",
                    )]);
                }
                State::Missing(why) => {
                    return Err(vec![self.diag(
                        codes::NOT_OBSERVED,
                        format!("expression {:?} reads {root:?}: {why}", e.source()),
                        e,
                        "add the live object to the observed state, or check its apiVersion, kind, namespace and name",
                    )]);
                }
                _ => {}
            }
            if fields.contains("status") && !self.has_status[i] {
                return Err(vec![match self.unit.observed {
                    None => self.diag(
                        codes::NEEDS_CLUSTER,
                        format!(
                            "expression {:?} reads {root}.status, which exists only once the cluster has created {root:?}",
                            e.source()
                        ),
                        e,
                        "give the live objects with --observed, or derive the value from schema or spec fields",
                    ),
                    Some(_) => self.diag(
                        codes::NOT_OBSERVED,
                        format!(
                            "expression {:?} reads {root}.status, but the observed state has no status for what {root:?} renders",
                            e.source()
                        ),
                        e,
                        "add the live object, with its status, to the observed state",
                    ),
                }]);
            }
        }
        Ok(())
    }

    /// The value of a plain field path (`schema.spec.name`, `deployment.metadata.labels`) read
    /// straight from the JSON of the variable, or `None` when the expression is anything else,
    /// the path is missing, or the variable is not one of `direct`. Evaluating such a path in CEL
    /// converts the value and converts it back; the renderer falls back to that only to report
    /// what is wrong, so results and errors are the same either way.
    fn direct<'v>(&self, e: &Expr, direct: &[(&str, &'v Value)]) -> Option<&'v Value> {
        let (root, fields) = e.compiled.field_path.as_deref()?.split_first()?;
        // The latest binding of a name is the one CEL sees.
        let mut v = direct.iter().rev().find(|(name, _)| name == root)?.1;
        for f in fields {
            v = crate::lookup::get(v.as_object()?, f)?;
        }
        Some(v)
    }

    fn to_json(&self, v: &CelValue, e: &Expr) -> Result<Value, Vec<Diagnostic>> {
        from_cel(v).map_err(|c| {
            vec![self.diag(
                codes::RESULT_TYPE,
                format!("expression {:?}: {}", e.source(), c.0),
                e,
                "convert the value, e.g. string(x) or base64.encode(x)",
            )]
        })
    }

    /// An interpolated part evaluated in CEL: its result must be a string.
    fn interpolate_cel(
        &self,
        ctx: &Context<'_, '_>,
        e: &Expr,
        direct: &[(&str, &Value)],
        s: &mut String,
    ) -> Result<(), Vec<Diagnostic>> {
        match self.eval_fallback(ctx, e, direct)? {
            CelValue::String(v) => s.push_str(&v),
            other => {
                return Err(vec![self.diag(
                    codes::RESULT_TYPE,
                    format!(
                        "${{{}}} in {:?} returns {}, but text around an expression makes a string and every part must be a string",
                        e.source(),
                        e.written,
                        type_name(&other)
                    ),
                    e,
                    "wrap it in string(...), or make the value one standalone ${...} to keep its type",
                )])
            }
        }
        Ok(())
    }

    /// Fill a template's holes, drop omitted fields, inherit the namespace.
    fn fill(
        &self,
        ctx: &Context<'_, '_>,
        t: &Template,
        namespaced: bool,
        direct: &[(&str, &Value)],
    ) -> Result<Value, Vec<Diagnostic>> {
        let mut obj = t.value.clone();
        for hole in &t.holes {
            let value = match &hole.kind {
                HoleKind::Standalone(e) => match self.direct(e, direct).and_then(as_cel_result) {
                    Some(v) => {
                        self.check_offline(e)?;
                        v
                    }
                    None => {
                        let v = self.eval_fallback(ctx, e, direct)?;
                        self.to_json(&v, e)?
                    }
                },
                HoleKind::Interpolated(parts) => {
                    let mut s = String::new();
                    for p in parts {
                        match p {
                            Part::Text(t) => s.push_str(t),
                            Part::Expr(e) => match self.direct(e, direct) {
                                Some(Value::String(v)) => {
                                    self.check_offline(e)?;
                                    s.push_str(v);
                                }
                                _ => self.interpolate_cel(ctx, e, direct, &mut s)?,
                            },
                        }
                    }
                    Value::String(s)
                }
            };
            if let Some(slot) = at_position(&mut obj, &hole.position) {
                *slot = value;
            }
        }
        // Read without building the path: this runs for every rendered object.
        let name = obj.get("metadata").and_then(|m| m.get("name"));
        if name.and_then(Value::as_str) == Some(OMIT_MARKER) {
            let name_path = FieldPath::root().key("metadata").key("name");
            let e = t
                .holes
                .iter()
                .find(|h| h.path == name_path)
                .and_then(|h| h.exprs().into_iter().next().cloned());
            if let Some(e) = e {
                return Err(vec![self.diag(
                    codes::OMIT_MISUSE,
                    format!(
                        "omit() cannot be used at path \"metadata.name\": expression {:?}",
                        e.source()
                    ),
                    &e,
                    "every object needs a name",
                )]);
            }
        }
        strip_omitted(&mut obj);
        if namespaced {
            if let (Some(ns), Some(Value::Object(md))) =
                (&self.unit.namespace, obj.get_mut("metadata"))
            {
                let empty = md
                    .get("namespace")
                    .is_none_or(|v| v.is_null() || v.as_str() == Some(""));
                if empty {
                    md.insert("namespace".into(), Value::String(ns.clone()));
                }
            }
        }
        Ok(obj)
    }

    /// Expand a forEach node into its items.
    fn expand(
        &self,
        ctx: &Context<'_, '_>,
        node: &crate::ir::Node,
        t: &Template,
        limits: &RenderLimits,
        direct: &[(&str, &Value)],
    ) -> Result<Vec<Value>, Vec<Diagnostic>> {
        let mut dims: Vec<(&str, Vec<CelValue>)> = Vec::new();
        for (it, e) in &node.for_each {
            match self.eval(ctx, e, direct)? {
                CelValue::List(items) => dims.push((it.as_str(), items.as_ref().clone())),
                CelValue::Null => {
                    return Err(vec![self.diag(
                        codes::RESULT_TYPE,
                        format!(
                            "forEach expression {:?} returned null, expected list",
                            e.source()
                        ),
                        e,
                        "give the list field a default, e.g. default=[]",
                    )])
                }
                other => {
                    return Err(vec![self.diag(
                        codes::RESULT_TYPE,
                        format!(
                            "forEach expression {:?} must return a list, got {}",
                            e.source(),
                            type_name(&other)
                        ),
                        e,
                        "iterate over a list, e.g. ${schema.spec.regions}",
                    )])
                }
            }
        }
        let total = dims
            .iter()
            .try_fold(1usize, |acc, (_, l)| acc.checked_mul(l.len()));
        let total = match total {
            Some(t) if t <= limits.max_collection_size => t,
            _ => {
                let e = &node.for_each[0].1;
                return Err(vec![self.diag(
                    codes::FOREACH_RESULT,
                    format!(
                        "collection size of {} is over the maximum collection size of {}",
                        total
                            .map(|t| t.to_string())
                            .unwrap_or_else(|| "more than 2^64".into()),
                        limits.max_collection_size
                    ),
                    e,
                    "reduce the lists, or raise the collection limit",
                )]);
            }
        };
        // The iterators hide any variable of the same name.
        let unshadowed: Vec<(&str, &Value)> = direct
            .iter()
            .filter(|(name, _)| !node.for_each.iter().any(|(it, _)| it == name))
            .copied()
            .collect();
        let mut items = Vec::with_capacity(total);
        let mut identities = BTreeSet::new();
        let mut idx = vec![0usize; dims.len()];
        for _ in 0..total {
            let mut inner = ctx.new_inner_scope();
            for (d, (it, list)) in dims.iter().enumerate() {
                inner.add_variable_from_value(it.to_string(), list[idx[d]].clone());
            }
            let obj = self.fill(&inner, t, node.namespaced, &unshadowed)?;
            let identity = identity_of(&obj);
            if !identities.insert(identity.clone()) {
                let e = &node.for_each[0].1;
                return Err(vec![self.diag(
                    codes::FOREACH_RESULT,
                    format!("resource {:?}: duplicate identity: {identity}", node.id),
                    e,
                    "every forEach item needs its own name: include every iterator in metadata.name",
                )]);
            }
            items.push(obj);
            // Odometer increment: the last dimension moves fastest, so the first is outermost.
            for d in (0..idx.len()).rev() {
                idx[d] += 1;
                if idx[d] < dims[d].1.len() {
                    break;
                }
                idx[d] = 0;
            }
        }
        Ok(items)
    }
}

fn identity_of(obj: &Value) -> String {
    let s = |p: &str| {
        FieldPath::parse(p)
            .and_then(|fp| fp.get(obj).and_then(Value::as_str).map(str::to_string))
            .unwrap_or_default()
    };
    format!(
        "{}/{}/{}/{}",
        s("apiVersion"),
        s("kind"),
        s("metadata.namespace"),
        s("metadata.name")
    )
}

/// Remove every map entry and list element whose value is the omit marker.
fn strip_omitted(v: &mut Value) {
    match v {
        Value::Object(m) => {
            let omitted: Vec<String> = m
                .iter()
                .filter(|(_, v)| v.as_str() == Some(OMIT_MARKER))
                .map(|(k, _)| k.clone())
                .collect();
            for k in omitted {
                m.shift_remove(&k);
            }
            m.values_mut().for_each(strip_omitted);
        }
        Value::Array(a) => {
            a.retain(|v| v.as_str() != Some(OMIT_MARKER));
            a.iter_mut().for_each(strip_omitted);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};
    use crate::pipeline::{render, Options};
    use serde_json::json;

    #[test]
    fn omitted_entries_and_elements_are_removed() {
        let mut v =
            json!({"a": OMIT_MARKER, "b": [1, OMIT_MARKER, {"c": OMIT_MARKER, "d": 2}], "e": {}});
        strip_omitted(&mut v);
        assert_eq!(v, json!({"b": [1, {"d": 2}], "e": {}}));
    }

    /// Expressions as deep as `expression-depth` allows at most, of every shape that deepens a
    /// tree without brackets, go through every walk (references, reads, the checker, the
    /// evaluator, drop) on a 2 MiB stack: the stack of a rayon worker in the doors, which do not
    /// enlarge it. One level over the limit is refused before any walk sees the tree.
    #[test]
    fn the_deepest_allowed_expressions_fit_a_worker_stack() {
        let n = usize::from(crate::expr::cel::MAX_DEPTH) - 10;
        let shapes = [
            format!("string({})", vec!["1"; n].join("+")),
            // kiln's value-size budget wraps each string `+` in a call: two levels a link.
            vec!["'a'"; n / 2].join("+"),
            format!("string({})", vec!["1 == 1"; n / 2].join(" && ")),
            format!("string({}true)", "!".repeat(n)),
            format!("string({}1)", "- ".repeat(n)),
            // The grammar nests a ternary chain: the parser's nesting limit stops it first.
            format!("string({} 7)", "false ? 1 : ".repeat(60)),
            format!("'A'{}", ".lowerAscii()".repeat(n)),
            format!("schema.spec.name{}", ".upperAscii()".repeat(n)),
        ];
        let mut data = String::new();
        for (i, shape) in shapes.iter().enumerate() {
            data.push_str(&format!("        k{i}: \"${{{shape}}}\"\n"));
        }
        let text = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: deep}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Deep
    spec:
      name: string
  resources:
  - id: cm
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata: {name: '${schema.spec.name}'}
      data:
DATA---
apiVersion: kro.run/v1alpha1
kind: Deep
metadata: {name: a}
spec: {name: a}
---
apiVersion: kro.run/v1alpha1
kind: Deep
metadata: {name: b}
spec: {name: b}
"#
        .replace("DATA", &data);
        let render_with = move |depth: u16, text: String| {
            std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || {
                    let docs = parse_file("t.yaml", text, &YamlLimits::default()).unwrap();
                    let mut opts = Options::default();
                    opts.expr.max_depth = depth;
                    opts.expr.max_length = 1 << 20;
                    render(&docs, &opts).map(|o| o.objects)
                })
                .unwrap()
                .join()
                .expect("rendering overflowed or panicked")
        };
        let objects = render_with(crate::expr::cel::MAX_DEPTH, text.clone()).unwrap();
        assert_eq!(objects.len(), 2);
        assert_eq!(objects[0]["data"]["k0"], json!(n.to_string()));
        assert_eq!(objects[1]["data"]["k7"], json!("B"));
        // Under the default limit the same template is refused, naming the limit.
        let errs = render_with(250, text).unwrap_err();
        assert!(!errs.0.is_empty());
        for e in &errs.0 {
            assert_eq!(e.code.id, "KLN3006", "{e:?}");
            assert!(
                e.message.contains("more than 250 levels deep"),
                "{}",
                e.message
            );
        }
    }

    fn render_str(text: &str) -> Result<Vec<Value>, crate::diag::Diagnostics> {
        let docs = parse_file("t.yaml", text.to_string(), &YamlLimits::default()).unwrap();
        render(&docs, &Options::default()).map(|o| o.objects)
    }

    const RGD: &str = r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: t}
spec:
  schema:
    apiVersion: v1alpha1
    kind: T
    spec:
      a: '[]string | default=["x", "y"]'
      b: '[]integer | default=[1, 2, 3]'
  resources:
    - id: grid
      forEach:
        - a: ${schema.spec.a}
        - b: ${schema.spec.b}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${a + '-' + string(b)}"}
"#;

    #[test]
    fn foreach_is_a_cartesian_product_first_dimension_outermost() {
        let objs = render_str(&format!("{RGD}---\napiVersion: kro.run/v1alpha1\nkind: T\nmetadata: {{name: i, namespace: n}}\n")).unwrap();
        let names: Vec<&str> = objs
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["x-1", "x-2", "x-3", "y-1", "y-2", "y-3"]);
    }

    #[test]
    fn empty_dimension_gives_no_items() {
        let objs = render_str(&format!(
            "{RGD}---\napiVersion: kro.run/v1alpha1\nkind: T\nmetadata: {{name: i, namespace: n}}\nspec: {{b: []}}\n"
        ))
        .unwrap();
        assert!(objs.is_empty());
    }

    #[test]
    fn collection_size_is_capped() {
        let big: Vec<String> = (0..40).map(|i| i.to_string()).collect();
        let text = format!(
            "{RGD}---\napiVersion: kro.run/v1alpha1\nkind: T\nmetadata: {{name: i, namespace: n}}\nspec: {{a: {}, b: {:?}}}\n",
            serde_json::to_string(&big).unwrap(),
            (0..40).collect::<Vec<_>>()
        );
        let err = render_str(&text).unwrap_err();
        assert_eq!(err.0[0].code, crate::diag::codes::FOREACH_RESULT);
        assert!(
            err.0[0].message.contains("collection size of 1600"),
            "{}",
            err.0[0].message
        );
    }

    /// Plain field paths are read straight from JSON; wrapping the same path in `[…][0]` makes
    /// CEL evaluate it. Both must give the same objects, or fail with the same code.
    #[test]
    fn direct_field_paths_match_cel() {
        let rgd = |expr: &str| {
            format!(
                r#"
apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {{name: t}}
spec:
  schema:
    apiVersion: v1alpha1
    kind: T
    spec:
      m: 'map[string]string | default={{"z": "1", "a": "2"}}'
      n: integer | default=3
      s: string | default=x
      on: boolean | default=false
      big: integer | default=9
  resources:
    - id: base
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: base, labels: {{zz: a, aa: b}}}}
        data: {{k: v}}
    - id: probe
      includeWhen: ["${{schema.spec.on || true}}"]
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {{name: probe}}
        data:
          standalone: ${{{expr}}}
          text: "pre-${{{expr}}}-post"
---
apiVersion: kro.run/v1alpha1
kind: T
metadata: {{name: i, namespace: n}}
spec: {{big: 18446744073709551615}}
"#
            )
        };
        for path in [
            "schema.spec.m",
            "schema.spec.n",
            "schema.spec.s",
            "schema.metadata.name",
            "base.metadata.labels",
            "base.data.k",
            "base.data.missing",
            "base.metadata.name.x",
            "base.status.x",
            "schema.spec.big",
            "nothing.here",
        ] {
            let direct = render_str(&rgd(path));
            let via_cel = render_str(&rgd(&format!("[{path}][0]")));
            match (direct, via_cel) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{path}"),
                (Err(a), Err(b)) => assert_eq!(
                    a.0.iter().map(|d| d.code).collect::<Vec<_>>(),
                    b.0.iter().map(|d| d.code).collect::<Vec<_>>(),
                    "{path}"
                ),
                (a, b) => panic!("{path}: direct {a:?}, CEL {b:?}"),
            }
        }
    }
}
