//! `${…}` templates of component types and addons: scanning, compiling once, rendering.
//!
//! OpenChoreo's scanner differs from kro's (`crate::expr::scan`), so it has its own here: braces are
//! ignored inside **single- and double-quoted** CEL strings, a `${` inside an expression (outside
//! quotes) is an error, and an unclosed `${` leaves the rest of the string literal. A string whose
//! trimmed text is exactly one `${…}` is a standalone expression and yields the expression's own
//! value (map, list, number…); this is what makes YAML block scalars (`|`), which end in a newline,
//! work. Anything else is interpolated: each expression's value is written as text.
//!
//! Map keys are rendered too (a dynamic key must yield a string). `oc_omit()` removes the map
//! entry or list element that holds it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use cel::{Context, Value as CelValue};
use serde_json::{Map, Value};

use crate::diag::{codes, Code};
use crate::expr::cel::{compile_with, CompileError, Compiled, ExecutionErrorExt, ExprLimits};
use crate::expr::value::{from_cel, OMIT_MARKER};
use crate::fieldpath::{At, FieldPath, Step};

use super::functions;

/// A string as the template engine sees it, as slices of the string: every template string of
/// every unit is scanned again when it is rendered, and copying its pieces was most of that.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tpl<'s> {
    /// No expression.
    Literal,
    /// Exactly one expression (surrounding whitespace ignored): its value, whatever its type.
    Whole(&'s str),
    /// Text and expressions.
    Parts(Vec<Piece<'s>>),
}

/// Part of an interpolated string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece<'s> {
    Text(&'s str),
    Expr(&'s str),
}

/// Scan a string for `${…}`.
pub(crate) fn classify(s: &str) -> Result<Tpl<'_>, String> {
    let b = s.as_bytes();
    let mut pieces = Vec::new();
    let mut text_start = 0;
    let mut i = 0;
    let mut n_expr = 0;
    while i + 1 < b.len() {
        if !(b[i] == b'$' && b[i + 1] == b'{') {
            i += 1;
            continue;
        }
        let start = i;
        let mut j = i + 2;
        let mut depth = 1usize;
        let mut quote: Option<u8> = None;
        let mut close = None;
        while j < b.len() {
            let c = b[j];
            if let Some(q) = quote {
                if c == b'\\' {
                    j += 2;
                    continue;
                }
                if c == q {
                    quote = None;
                }
            } else {
                match c {
                    b'\'' | b'"' => quote = Some(c),
                    b'{' => depth += 1,
                    b'}' => {
                        depth -= 1;
                        if depth == 0 {
                            close = Some(j);
                            break;
                        }
                    }
                    b'$' if b.get(j + 1) == Some(&b'{') => {
                        return Err(
                            "nested ${…} inside an expression; quote it if it is meant as text"
                                .into(),
                        )
                    }
                    _ => {}
                }
            }
            j += 1;
        }
        // All delimiters are ASCII, so these offsets are char boundaries.
        let Some(end) = close else {
            // Unclosed: the rest of the string is literal text.
            break;
        };
        if start > text_start {
            pieces.push(Piece::Text(&s[text_start..start]));
        }
        pieces.push(Piece::Expr(&s[start + 2..end]));
        n_expr += 1;
        i = end + 1;
        text_start = i;
    }
    if n_expr == 0 {
        return Ok(Tpl::Literal);
    }
    if text_start < s.len() {
        pieces.push(Piece::Text(&s[text_start..]));
    }
    if n_expr == 1 {
        let exprs: Vec<&Piece> = pieces
            .iter()
            .filter(|p| matches!(p, Piece::Expr(_)))
            .collect();
        let only_space = pieces.iter().all(|p| match p {
            Piece::Text(t) => t.trim().is_empty(),
            Piece::Expr(_) => true,
        });
        if only_space {
            if let Some(Piece::Expr(e)) = exprs.first() {
                return Ok(Tpl::Whole(e));
            }
        }
    }
    Ok(Tpl::Parts(pieces))
}

/// The one expression of a control field (`includeWhen`, `forEach`, `where`), which must be a
/// single `${…}` and nothing else.
pub(crate) fn standalone(s: &str) -> Option<String> {
    match classify(s) {
        Ok(Tpl::Whole(e)) if s.trim_start().starts_with("${") => Some(e.to_string()),
        _ => None,
    }
}

/// A problem found while compiling or rendering, located relative to the template's root.
#[derive(Debug, Clone)]
pub(crate) struct TplError {
    pub code: Code,
    pub path: FieldPath,
    pub message: String,
    pub hint: String,
}

/// Every expression of the loaded definitions, compiled once and shared by every unit.
#[derive(Debug, Default)]
pub(crate) struct Exprs {
    map: BTreeMap<String, Arc<Compiled>>,
    /// The variables any of them reads.
    reads: BTreeSet<String>,
}

impl Exprs {
    /// Compile `source` (once) and check that it reads only `allowed` variables.
    pub(crate) fn add(
        &mut self,
        source: &str,
        allowed: &[&str],
        limits: &ExprLimits,
    ) -> Result<(), (Code, String, String)> {
        let c = match self.map.get(source) {
            Some(c) => Arc::clone(c),
            None => {
                let c = Arc::new(compile_component(source, limits)?);
                self.reads.extend(c.refs.roots.iter().cloned());
                self.map.insert(source.to_string(), Arc::clone(&c));
                c
            }
        };
        let unknown: Vec<&String> = c
            .refs
            .roots
            .iter()
            .filter(|r| !allowed.contains(&r.as_str()))
            .collect();
        if let Some(u) = unknown.first() {
            return Err((
                codes::UNKNOWN_IDENTIFIER,
                format!("expression {source:?} reads {u:?}, which is not defined here"),
                format!("variables available here: {}", allowed.join(", ")),
            ));
        }
        Ok(())
    }

    /// Compile every expression in a template value, reporting each problem with its path.
    pub(crate) fn add_value(
        &mut self,
        v: &Value,
        at: &FieldPath,
        allowed: &[&str],
        limits: &ExprLimits,
        errors: &mut Vec<TplError>,
    ) {
        match v {
            Value::String(s) => self.add_string(s, at, allowed, limits, errors),
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.add_value(x, &at.index(i), allowed, limits, errors);
                }
            }
            Value::Object(m) => {
                for (k, x) in m {
                    let p = at.key(k);
                    self.add_string(k, &p, allowed, limits, errors);
                    self.add_value(x, &p, allowed, limits, errors);
                }
            }
            _ => {}
        }
    }

    /// Compile the expressions of one string.
    pub(crate) fn add_string(
        &mut self,
        s: &str,
        at: &FieldPath,
        allowed: &[&str],
        limits: &ExprLimits,
        errors: &mut Vec<TplError>,
    ) {
        let sources: Vec<&str> = match classify(s) {
            Ok(Tpl::Literal) => return,
            Ok(Tpl::Whole(e)) => vec![e],
            Ok(Tpl::Parts(p)) => p
                .into_iter()
                .filter_map(|p| match p {
                    Piece::Expr(e) => Some(e),
                    Piece::Text(_) => None,
                })
                .collect(),
            Err(m) => {
                errors.push(TplError {
                    code: codes::TEMPLATE_SYNTAX,
                    path: at.clone(),
                    message: m,
                    hint: "write one ${…} per value; quote a literal \"${\" inside a CEL string"
                        .into(),
                });
                return;
            }
        };
        for src in sources {
            if let Err((code, message, hint)) = self.add(src, allowed, limits) {
                errors.push(TplError {
                    code,
                    path: at.clone(),
                    message,
                    hint,
                });
            }
        }
    }

    /// Whether an expression may read the variable `name`: one none reads need not be
    /// converted for the context of every unit. The helper functions' own variable (upstream's
    /// derived values, which no expression names) is read by calls, so it always is.
    pub(crate) fn reads(&self, name: &str) -> bool {
        name == super::upstream::DERIVED || self.reads.contains(name)
    }

    pub(crate) fn get(&self, source: &str) -> Option<&Compiled> {
        self.map.get(source).map(|c| c.as_ref())
    }
}

/// Compile with kiln's limits and the shared environment, accepting the component helper
/// functions, which live on the evaluation context rather than in the environment.
fn compile_component(
    source: &str,
    limits: &ExprLimits,
) -> Result<Compiled, (Code, String, String)> {
    match compile_with(source, limits, functions::FUNCTIONS) {
        Ok(c) => Ok(c),
        Err(CompileError::UnknownFunctions(names)) => {
            Err((
                codes::UNKNOWN_FUNCTION,
                format!(
                    "expression {source:?} calls unknown function(s): {}",
                    names.join(", ")
                ),
                "see docs/component-types.md for the helper functions (oc_merge, oc_omit, oc_generate_name, oc_dns_label, oc_hash) and docs/cel.md for the rest".into(),
            ))
        }
        Err(CompileError::Syntax { message, position }) => Err((
            codes::CEL_SYNTAX,
            match position {
                Some((l, c)) => {
                    format!("expression {source:?} does not parse at {l}:{c}: {message}")
                }
                None => format!("expression {source:?} does not parse: {message}"),
            },
            "check the CEL syntax".into(),
        )),
        Err(CompileError::Limit(m)) => Err((
            codes::EXPRESSION_LIMIT,
            format!("expression {source:?}: {m}"),
            "split the expression or simplify it".into(),
        )),
    }
}

/// A fresh evaluation context with the component helpers.
pub(crate) fn new_context() -> Context<'static, 'static> {
    let mut ctx = crate::expr::cel::new_context();
    functions::register(&mut ctx);
    ctx
}

/// The shared root context with the component helpers, registered once per process; releases
/// evaluate in child scopes of it (as kro units do with `expr::cel::root_context`).
pub(crate) fn root_context() -> &'static Context<'static, 'static> {
    static ROOT: std::sync::OnceLock<Context<'static, 'static>> = std::sync::OnceLock::new();
    ROOT.get_or_init(new_context)
}

/// Evaluates templates against a context.
pub(crate) struct Renderer<'e> {
    pub exprs: &'e Exprs,
    /// Work one expression evaluation may do.
    pub budget: crate::expr::budget::EvalBudget,
}

/// A problem of one evaluation, before it is given the path it is reported at: the walk over a
/// plan builds the path only for a problem.
struct Fail {
    code: Code,
    message: String,
    hint: String,
}

impl Fail {
    fn at(self, path: FieldPath) -> TplError {
        TplError {
            code: self.code,
            path,
            message: self.message,
            hint: self.hint,
        }
    }
}

/// The value of a plain field path (`parameters.port`, `metadata.name`, a forEach variable)
/// read from the variable's maps, or `None` for anything but a path of map keys that are all
/// there. CEL's interpreter gives the same value, but first tries every prefix of the path as a
/// qualified name in every scope (`a.b.c`, `a.b`, `a`), at every evaluation of every unit;
/// whatever this does not read (a missing key, a field of a non-map, a name that is not a
/// variable) goes to the interpreter, which reports it. Kiln's variables are plain identifiers
/// without dots, so the innermost scope holding the root is the one CEL would pick.
fn selected(ctx: &Context<'_, '_>, path: &[String]) -> Option<CelValue> {
    fn walk(v: &dyn cel::common::value::Val, fields: &[String]) -> Option<CelValue> {
        match fields.split_first() {
            None => CelValue::try_from(v).ok(),
            Some((f, rest)) => {
                if v.get_type().kind() != cel::common::types::Kind::Map {
                    return None;
                }
                let key = cel::common::types::CelString::from(f.as_str());
                let next = v.as_indexer()?.get(&key).ok()?;
                walk(next.as_ref(), rest)
            }
        }
    }
    let (root, fields) = path.split_first()?;
    let v = ctx.get_variable(root)?;
    walk(v.as_ref(), fields)
}

impl Renderer<'_> {
    /// Evaluate one expression to a CEL value.
    pub(crate) fn eval(
        &self,
        ctx: &Context<'_, '_>,
        source: &str,
        at: &FieldPath,
    ) -> Result<CelValue, TplError> {
        let Some(c) = self.exprs.get(source) else {
            return Err(TplError {
                code: codes::INTERNAL,
                path: at.clone(),
                message: format!("expression {source:?} was not compiled"),
                hint: "this is a bug in kiln; please report it".into(),
            });
        };
        self.eval_compiled(ctx, c, source)
            .map_err(|f| f.at(at.clone()))
    }

    /// [`Renderer::eval`] of the field `key` of the entry at `at`, whose path is built only for
    /// a problem.
    pub(crate) fn eval_field(
        &self,
        ctx: &Context<'_, '_>,
        source: &str,
        (at, key): (&FieldPath, &str),
    ) -> Result<CelValue, TplError> {
        match self.exprs.get(source) {
            Some(c) => self
                .eval_compiled(ctx, c, source)
                .map_err(|f| f.at(at.key(key))),
            None => self.eval(ctx, source, &at.key(key)),
        }
    }

    fn eval_compiled(
        &self,
        ctx: &Context<'_, '_>,
        c: &Compiled,
        source: &str,
    ) -> Result<CelValue, Fail> {
        if let Some(v) = c.field_path.as_deref().and_then(|p| selected(ctx, p)) {
            return Ok(v);
        }
        crate::expr::budget::execute(&c.program, ctx, &self.budget).map_err(|e| {
            if let Some(msg) = crate::expr::budget::overrun(&e) {
                return Fail {
                    code: codes::EVAL_BUDGET,
                    message: format!("expression {source:?} stopped: {msg}"),
                    hint: "iterate over less data (see docs/cel.md, evaluation limits)".into(),
                };
            }
            let (message, hint) = e.explain(source);
            Fail {
                code: codes::EVALUATION,
                message,
                hint,
            }
        })
    }

    /// Evaluate one expression to JSON.
    pub(crate) fn eval_json(
        &self,
        ctx: &Context<'_, '_>,
        source: &str,
        at: &FieldPath,
    ) -> Result<Value, TplError> {
        let v = self.eval(ctx, source, at)?;
        json_of(&v, source).map_err(|f| f.at(at.clone()))
    }

    /// Render a template value once; omitted entries are removed.
    #[cfg(test)]
    pub(crate) fn render(
        &self,
        ctx: &Context<'_, '_>,
        v: &Value,
        at: &FieldPath,
    ) -> Result<Value, TplError> {
        self.render_plan(ctx, &Plan::default(), v, at, Vec::new())
    }

    /// What `Renderer::render` (tests only) does, for a template rendered again and again (a
    /// definition's, once per unit), the field `key` of the entry at `at`: the template is
    /// compiled into `plan` the first time, and the plan is rendered. The path is built only for
    /// a problem.
    pub(crate) fn render_planned(
        &self,
        ctx: &Context<'_, '_>,
        plan: &Plan,
        v: &Value,
        (at, key): (&FieldPath, &str),
    ) -> Result<Value, TplError> {
        self.render_plan(ctx, plan, v, at, vec![Step::Key(key)])
    }

    fn render_plan<'p>(
        &self,
        ctx: &Context<'_, '_>,
        plan: &'p Plan,
        v: &Value,
        base: &FieldPath,
        mut steps: Vec<Step<'p>>,
    ) -> Result<Value, TplError> {
        let node = plan.0.get_or_init(|| Node::of(v, self.exprs));
        let out = self.node(ctx, node, base, &mut steps)?;
        Ok(if is_omitted(&out) { Value::Null } else { out })
    }

    /// [`Renderer::render_string`] of a string rendered again and again, as
    /// [`Renderer::render_planned`].
    pub(crate) fn render_string_planned(
        &self,
        ctx: &Context<'_, '_>,
        plan: &Plan,
        s: &str,
        (at, key): (&FieldPath, &str),
    ) -> Result<Value, TplError> {
        let node = plan.0.get_or_init(|| Node::of_str(s, self.exprs));
        match node {
            Node::Lit(v) => Ok(v.clone()),
            Node::Str(p) => self.string(ctx, p).map_err(|f| f.at(at.key(key))),
            _ => self.render_string(ctx, s, &at.key(key)),
        }
    }

    /// Render a plan node at `base` + `steps`. The omit marker is removed from every map and
    /// list below (a literal subtree had it removed when it was planned); the node's own value
    /// may be it, for its parent to remove.
    fn node<'p>(
        &self,
        ctx: &Context<'_, '_>,
        n: &'p Node,
        base: &FieldPath,
        steps: &mut Vec<Step<'p>>,
    ) -> Result<Value, TplError> {
        match n {
            Node::Lit(v) => Ok(v.clone()),
            Node::Str(p) => {
                let mut v = self
                    .string(ctx, p)
                    .map_err(|f| f.at(At(steps).under(base)))?;
                strip_omitted_within(&mut v);
                Ok(v)
            }
            Node::Dyn(s) => {
                let mut v = self.render_string(ctx, s, &At(steps).under(base))?;
                strip_omitted_within(&mut v);
                Ok(v)
            }
            Node::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, x) in items.iter().enumerate() {
                    steps.push(Step::Index(i));
                    let item = self.node(ctx, x, base, steps);
                    steps.pop();
                    out.push(item?);
                }
                out.retain(|x| !is_omitted(x));
                Ok(Value::Array(out))
            }
            Node::Fields {
                skeleton,
                values,
                omits,
            } => {
                let mut out = skeleton.clone();
                let mut omitted = *omits;
                for ((k, n), slot) in values.iter().zip(out.values_mut()) {
                    let Some(n) = n else { continue };
                    steps.push(Step::Key(k));
                    let value = self.node(ctx, n, base, steps);
                    steps.pop();
                    let value = value?;
                    omitted |= is_omitted(&value);
                    *slot = value;
                }
                if omitted {
                    out.retain(|_, x| !is_omitted(x));
                }
                Ok(Value::Object(out))
            }
            Node::Object(entries) => {
                let mut out = Map::with_capacity(entries.len());
                // Entries are inserted even when omitted and removed at the end, as `render`
                // does: an omitted entry whose rendered key repeats an earlier one removes it.
                let mut omitted = false;
                for (k, x) in entries {
                    steps.push(Step::Key(k.text()));
                    let entry = self.entry(ctx, k, x, base, steps);
                    steps.pop();
                    let (key, value) = entry?;
                    omitted |= is_omitted(&value);
                    out.insert(key, value);
                }
                if omitted {
                    out.retain(|_, x| !is_omitted(x));
                }
                Ok(Value::Object(out))
            }
        }
    }

    /// One entry of a planned map; `steps` ends with its key.
    fn entry<'p>(
        &self,
        ctx: &Context<'_, '_>,
        k: &'p Key,
        x: &'p Node,
        base: &FieldPath,
        steps: &mut Vec<Step<'p>>,
    ) -> Result<(String, Value), TplError> {
        let key = match k {
            Key::Lit(k) => k.clone(),
            Key::Str(k, p) => {
                let v = self
                    .string(ctx, p)
                    .map_err(|f| f.at(At(steps).under(base)))?;
                key_string(k, v).map_err(|f| f.at(At(steps).under(base)))?
            }
            Key::Dyn(k) => {
                let at = At(steps).under(base);
                let v = self.render_string(ctx, k, &at)?;
                key_string(k, v).map_err(|f| f.at(at))?
            }
        };
        Ok((key, self.node(ctx, x, base, steps)?))
    }

    /// A planned string: a whole expression's value, or the text of the pieces.
    fn string(&self, ctx: &Context<'_, '_>, p: &StrPlan) -> Result<Value, Fail> {
        match p {
            StrPlan::Whole(e) => {
                let v = self.eval_compiled(ctx, &e.compiled, &e.source)?;
                json_of(&v, &e.source)
            }
            StrPlan::Parts(parts) => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        PiecePlan::Text(t) => out.push_str(t),
                        PiecePlan::Expr(e) => {
                            let v = self.eval_compiled(ctx, &e.compiled, &e.source)?;
                            push_text(&mut out, &v, &e.source)?;
                        }
                    }
                }
                Ok(Value::String(out))
            }
        }
    }

    /// Render a string: standalone expressions keep their type, others become text.
    pub(crate) fn render_string(
        &self,
        ctx: &Context<'_, '_>,
        s: &str,
        at: &FieldPath,
    ) -> Result<Value, TplError> {
        let tpl = classify(s).map_err(|m| TplError {
            code: codes::TEMPLATE_SYNTAX,
            path: at.clone(),
            message: m,
            hint: "write one ${…} per value".into(),
        })?;
        match tpl {
            Tpl::Literal => Ok(Value::String(s.to_string())),
            Tpl::Whole(e) => self.eval_json(ctx, e, at),
            Tpl::Parts(parts) => {
                let mut out = String::new();
                for p in parts {
                    match p {
                        Piece::Text(t) => out.push_str(t),
                        Piece::Expr(e) => {
                            let v = self.eval(ctx, e, at)?;
                            push_text(&mut out, &v, e).map_err(|f| f.at(at.clone()))?;
                        }
                    }
                }
                Ok(Value::String(out))
            }
        }
    }
}

/// A rendered map key: it must be a string.
fn key_string(k: &str, v: Value) -> Result<String, Fail> {
    match v {
        Value::String(s) => Ok(s),
        other => Err(Fail {
            code: codes::RESULT_TYPE,
            message: format!("dynamic map key {k:?} must evaluate to a string, got {other}"),
            hint: "convert it with string(...)".into(),
        }),
    }
}

/// An expression's value as JSON.
fn json_of(v: &CelValue, source: &str) -> Result<Value, Fail> {
    from_cel(v).map_err(|e| Fail {
        code: codes::RESULT_TYPE,
        message: format!("expression {source:?}: {}", e.0),
        hint: "convert the value explicitly, e.g. string(x) or base64.encode(x)".into(),
    })
}

/// How an interpolated value is written: strings as they are, numbers as Go's `%d`/`%g`,
/// anything else as JSON.
fn push_text(out: &mut String, v: &CelValue, source: &str) -> Result<(), Fail> {
    use std::fmt::Write;
    match v {
        CelValue::String(s) => out.push_str(s),
        CelValue::Int(i) => {
            let _ = write!(out, "{i}");
        }
        CelValue::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        CelValue::Float(f) => out.push_str(&go_g(*f)),
        CelValue::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        other => {
            let j = from_cel(other).map_err(|e| Fail {
                code: codes::RESULT_TYPE,
                message: format!("expression {source:?}: {}", e.0),
                hint: "convert the value explicitly".into(),
            })?;
            if is_omitted(&j) {
                return Err(Fail {
                    code: codes::OMIT_MISUSE,
                    message: format!(
                        "expression {source:?} returns oc_omit() inside a larger string"
                    ),
                    hint: "oc_omit() must be the whole value, e.g. ${cond ? x : oc_omit()}".into(),
                });
            }
            let _ = write!(out, "{j}");
        }
    }
    Ok(())
}

/// A template compiled for rendering, made the first time it is rendered and kept with the
/// definition, so every unit renders the same plan: literal subtrees ready to copy, strings
/// already split into text and compiled expressions, nothing looked up by its source text.
/// A copy of a definition plans its templates anew (the plan belongs to the [`Exprs`] that
/// made it).
#[derive(Debug, Default)]
pub(crate) struct Plan(OnceLock<Node>);

impl Plan {
    /// Whether the template, once planned, has no expression.
    pub(crate) fn is_literal(&self) -> bool {
        matches!(self.0.get(), Some(Node::Lit(_)))
    }
}

impl Clone for Plan {
    fn clone(&self) -> Self {
        Plan::default()
    }
}

#[derive(Debug)]
enum Node {
    /// No expression anywhere below (omit markers inside removed).
    Lit(Value),
    /// A string with expressions, every one compiled.
    Str(StrPlan),
    /// A string that does not scan, or with an expression that was not compiled: rendered by
    /// [`Renderer::render_string`], which reports it.
    Dyn(String),
    Array(Vec<Node>),
    /// A map with a `${…}` key.
    Object(Vec<(Key, Node)>),
    /// A map whose keys are all literal: a copy of `skeleton` (which holds the literal values,
    /// and null where a value is rendered) has the rendered values set in place, rather than
    /// every key hashed again into a new map.
    Fields {
        skeleton: Map<String, Value>,
        /// Per entry of `skeleton`, in order: its key, and how its value is rendered (`None`:
        /// it is literal).
        values: Vec<(String, Option<Node>)>,
        /// Whether a literal value is the omit marker.
        omits: bool,
    },
}

#[derive(Debug)]
enum Key {
    Lit(String),
    Str(String, StrPlan),
    Dyn(String),
}

impl Key {
    fn text(&self) -> &str {
        match self {
            Key::Lit(k) | Key::Str(k, _) | Key::Dyn(k) => k,
        }
    }
}

#[derive(Debug)]
enum StrPlan {
    Whole(PlannedExpr),
    Parts(Vec<PiecePlan>),
}

#[derive(Debug)]
enum PiecePlan {
    Text(String),
    Expr(PlannedExpr),
}

#[derive(Debug)]
struct PlannedExpr {
    source: String,
    compiled: Arc<Compiled>,
}

/// How a string is planned: literal, compiled, or left to [`Renderer::render_string`].
enum Planned {
    Lit,
    Str(StrPlan),
    Dyn,
}

fn plan_str(s: &str, exprs: &Exprs) -> Planned {
    let expr = |e: &str| {
        exprs.map.get(e).map(|c| PlannedExpr {
            source: e.to_string(),
            compiled: Arc::clone(c),
        })
    };
    match classify(s) {
        Ok(Tpl::Literal) => Planned::Lit,
        Ok(Tpl::Whole(e)) => match expr(e) {
            Some(e) => Planned::Str(StrPlan::Whole(e)),
            None => Planned::Dyn,
        },
        Ok(Tpl::Parts(parts)) => {
            let mut out = Vec::with_capacity(parts.len());
            for p in parts {
                out.push(match p {
                    Piece::Text(t) => PiecePlan::Text(t.to_string()),
                    Piece::Expr(e) => match expr(e) {
                        Some(e) => PiecePlan::Expr(e),
                        None => return Planned::Dyn,
                    },
                });
            }
            Planned::Str(StrPlan::Parts(out))
        }
        Err(_) => Planned::Dyn,
    }
}

impl Node {
    fn of(v: &Value, exprs: &Exprs) -> Node {
        match v {
            Value::String(s) => Node::of_str(s, exprs),
            Value::Array(a) => {
                let items: Vec<Node> = a.iter().map(|x| Node::of(x, exprs)).collect();
                if items.iter().all(|n| matches!(n, Node::Lit(_))) {
                    Node::lit(v)
                } else {
                    Node::Array(items)
                }
            }
            Value::Object(m) => {
                let entries: Vec<(Key, Node)> = m
                    .iter()
                    .map(|(k, x)| {
                        let key = match plan_str(k, exprs) {
                            Planned::Lit => Key::Lit(k.clone()),
                            Planned::Str(p) => Key::Str(k.clone(), p),
                            Planned::Dyn => Key::Dyn(k.clone()),
                        };
                        (key, Node::of(x, exprs))
                    })
                    .collect();
                let literal = entries
                    .iter()
                    .all(|(k, n)| matches!((k, n), (Key::Lit(_), Node::Lit(_))));
                if literal {
                    return Node::lit(v);
                }
                if !entries.iter().all(|(k, _)| matches!(k, Key::Lit(_))) {
                    return Node::Object(entries);
                }
                let mut skeleton = Map::with_capacity(entries.len());
                let mut values = Vec::with_capacity(entries.len());
                let mut omits = false;
                for (k, n) in entries {
                    let k = k.text().to_string();
                    match n {
                        Node::Lit(x) => {
                            omits |= is_omitted(&x);
                            skeleton.insert(k.clone(), x);
                            values.push((k, None));
                        }
                        n => {
                            skeleton.insert(k.clone(), Value::Null);
                            values.push((k, Some(n)));
                        }
                    }
                }
                Node::Fields {
                    skeleton,
                    values,
                    omits,
                }
            }
            other => Node::Lit(other.clone()),
        }
    }

    fn of_str(s: &str, exprs: &Exprs) -> Node {
        match plan_str(s, exprs) {
            Planned::Lit => Node::Lit(Value::String(s.to_string())),
            Planned::Str(p) => Node::Str(p),
            Planned::Dyn => Node::Dyn(s.to_string()),
        }
    }

    /// A literal subtree as it renders: itself, omit markers below removed.
    fn lit(v: &Value) -> Node {
        let mut v = v.clone();
        strip_omitted_within(&mut v);
        Node::Lit(v)
    }
}

fn is_omitted(v: &Value) -> bool {
    matches!(v, Value::String(s) if s == OMIT_MARKER)
}

/// Remove omitted items and fields in place: rebuilding every map would hash every key again.
fn strip_omitted_within(v: &mut Value) {
    match v {
        Value::Array(a) => {
            a.retain(|x| !is_omitted(x));
            a.iter_mut().for_each(strip_omitted_within);
        }
        Value::Object(m) => {
            m.retain(|_, x| !is_omitted(x));
            m.values_mut().for_each(strip_omitted_within);
        }
        _ => {}
    }
}

/// Go's `%g` for a float64 (shortest representation; exponent form below 1e-4 and from 1e6), so
/// interpolated doubles read as they do upstream.
pub(crate) fn go_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn renderer_for(tpl: &Value) -> Exprs {
        let mut ex = Exprs::default();
        let mut errs = Vec::new();
        ex.add_value(
            tpl,
            &FieldPath::root(),
            &["x"],
            &ExprLimits::default(),
            &mut errs,
        );
        assert!(errs.is_empty(), "{errs:?}");
        ex
    }

    /// The marker is removed at every depth whether a literal subtree holds it (removed when
    /// planned) or an expression returns it (removed when rendered).
    #[test]
    fn omitted_entries_are_removed_at_every_depth_keeping_order() {
        let o = OMIT_MARKER;
        let written = serde_json::json!({
            "z": 1, "gone": o, "a": [o, {"k": o, "m": [1, o, 2]}, 3], "b": {"x": o}, "c": "keep"
        });
        let om = "${oc_omit()}";
        let computed = serde_json::json!({
            "z": 1, "gone": om, "a": [om, {"k": om, "m": [1, om, 2]}, 3], "b": {"x": om},
            "c": "${'keep'}"
        });
        // Literal markers beside rendered values: the map is rendered, its literal entries kept
        // as planned.
        let mixed = serde_json::json!({
            "z": 1, "gone": o, "a": [o, {"k": om, "m": [1, o, 2]}, 3], "b": {"x": o},
            "c": "${'keep'}"
        });
        for tpl in [written, computed, mixed] {
            let ex = renderer_for(&tpl);
            let r = Renderer {
                exprs: &ex,
                budget: Default::default(),
            };
            let out = r.render(&new_context(), &tpl, &FieldPath::root()).unwrap();
            assert_eq!(
                serde_json::to_string(&out).unwrap(),
                r#"{"z":1,"a":[{"m":[1,2]},3],"b":{},"c":"keep"}"#,
                "{tpl}"
            );
        }
        let r = Renderer {
            exprs: &Exprs::default(),
            budget: Default::default(),
        };
        let whole = r.render(&new_context(), &Value::String(o.into()), &FieldPath::root());
        assert_eq!(whole.unwrap(), Value::Null);
    }

    /// An omitted entry whose rendered key repeats an earlier key removes the earlier entry
    /// too (the map holds one entry per key, and it is the omitted one), as before plans.
    #[test]
    fn an_omitted_entry_with_a_repeated_key_removes_it() {
        let tpl = serde_json::json!({"a": 1, "${'a'}": "${oc_omit()}", "b": 2});
        let ex = renderer_for(&tpl);
        let r = Renderer {
            exprs: &ex,
            budget: Default::default(),
        };
        let out = r.render(&new_context(), &tpl, &FieldPath::root()).unwrap();
        assert_eq!(out, serde_json::json!({"b": 2}));
    }

    /// A plan is made once and rendered for each context; a problem is reported at its path
    /// under the template's, built only then.
    #[test]
    fn a_plan_renders_each_context_and_locates_problems() {
        let tpl = serde_json::json!({
            "lit": {"k": [1, "two"]},
            "spec": {"items": [1, "n-${x.n}"], "${x.k}": "${x.v}"}
        });
        let ex = renderer_for(&tpl);
        let r = Renderer {
            exprs: &ex,
            budget: Default::default(),
        };
        let plan = Plan::default();
        let base = FieldPath::root();
        let render = |x: Value| {
            let mut ctx = new_context();
            ctx.add_variable_as_val("x", crate::expr::value::to_val(&x));
            r.render_planned(&ctx, &plan, &tpl, (&base, "template"))
        };
        let one = render(serde_json::json!({"n": 1, "k": "a", "v": [1]})).unwrap();
        assert_eq!(
            one,
            serde_json::json!({"lit": {"k": [1, "two"]}, "spec": {"items": [1, "n-1"], "a": [1]}})
        );
        let two = render(serde_json::json!({"n": 2.5, "k": "b", "v": true})).unwrap();
        assert_eq!(
            two,
            serde_json::json!({"lit": {"k": [1, "two"]}, "spec": {"items": [1, "n-2.5"], "b": true}})
        );
        let e = render(serde_json::json!({"n": 1, "k": 7, "v": 1})).unwrap_err();
        assert_eq!(e.code, codes::RESULT_TYPE);
        assert_eq!(e.path.to_string(), "template.spec[\"${x.k}\"]");
        let e = render(serde_json::json!({"k": "a", "v": 1})).unwrap_err();
        assert_eq!(e.code, codes::EVALUATION);
        assert_eq!(e.path.to_string(), "template.spec.items[1]");
    }

    #[test]
    fn scanner_tracks_both_quotes() {
        assert_eq!(classify("${'}'}").unwrap(), Tpl::Whole("'}'"));
        assert_eq!(classify("${\"}\"}").unwrap(), Tpl::Whole("\"}\""));
        assert_eq!(
            classify("  ${a}\n").unwrap(),
            Tpl::Whole("a"),
            "block scalars end in a newline"
        );
        assert_eq!(
            classify("x-${a}").unwrap(),
            Tpl::Parts(vec![Piece::Text("x-"), Piece::Expr("a")])
        );
        assert_eq!(classify("${a").unwrap(), Tpl::Literal);
        let refused = classify("${a + ${b}}").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("nested ${…} inside an expression"),
            "{refused}"
        );
        assert_eq!(classify("${{'a': 1}}").unwrap(), Tpl::Whole("{'a': 1}"));
        assert_eq!(
            classify("[?(@.name=='${p.c}')]").unwrap(),
            Tpl::Parts(vec![
                Piece::Text("[?(@.name=='"),
                Piece::Expr("p.c"),
                Piece::Text("')]")
            ])
        );
    }

    #[test]
    fn go_g_matches_go() {
        assert_eq!(go_g(1234567.0), "1.234567e+06");
        assert_eq!(go_g(100000.0), "100000");
        assert_eq!(go_g(0.5), "0.5");
        assert_eq!(go_g(0.0001), "0.0001");
        assert_eq!(go_g(0.00001), "1e-05");
        assert_eq!(go_g(3.0), "3");
        assert_eq!(go_g(-2.5), "-2.5");
    }

    #[test]
    fn render_types_and_omit() {
        let mut ex = Exprs::default();
        let mut errs = Vec::new();
        let tpl = serde_json::json!({
            "a": "${1 + 1}", "b": "n-${2}", "c": "${oc_merge({'x': 1}, {'y': 2})}",
            "d": "${oc_omit()}", "${'k' + 'ey'}": [1, "${oc_omit()}", 2], "f": "${0.5}"
        });
        ex.add_value(
            &tpl,
            &FieldPath::root(),
            &[],
            &ExprLimits::default(),
            &mut errs,
        );
        assert!(errs.is_empty(), "{errs:?}");
        let r = Renderer {
            exprs: &ex,
            budget: Default::default(),
        };
        let ctx = new_context();
        let out = r.render(&ctx, &tpl, &FieldPath::root()).unwrap();
        assert_eq!(
            out,
            serde_json::json!({"a": 2, "b": "n-2", "c": {"x": 1, "y": 2}, "key": [1, 2], "f": 0.5})
        );
    }

    /// The variables read are those of every compiled expression, comprehension variables and
    /// type names left out.
    #[test]
    fn reads_are_the_roots_of_every_expression() {
        let mut ex = Exprs::default();
        let l = ExprLimits::default();
        let vars = ["parameters", "metadata", "workload", "build"];
        ex.add("parameters.a + metadata.name", &vars, &l).unwrap();
        ex.add("build.list.map(workload, int(workload))", &vars, &l)
            .unwrap();
        let read: Vec<&str> = vars.into_iter().filter(|v| ex.reads(v)).collect();
        assert_eq!(read, ["parameters", "metadata", "build"]);
    }

    #[test]
    fn unknown_identifiers_and_functions() {
        let mut ex = Exprs::default();
        assert_eq!(
            ex.add("foo.bar", &["parameters"], &ExprLimits::default())
                .unwrap_err()
                .0,
            codes::UNKNOWN_IDENTIFIER
        );
        assert_eq!(
            ex.add("nope(1)", &[], &ExprLimits::default())
                .unwrap_err()
                .0,
            codes::UNKNOWN_FUNCTION
        );
    }
}
