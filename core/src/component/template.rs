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

use std::collections::BTreeMap;
use std::sync::Arc;

use cel::{Context, Value as CelValue};
use serde_json::{Map, Value};

use crate::diag::{codes, Code};
use crate::expr::cel::{compile_with, CompileError, Compiled, ExecutionErrorExt, ExprLimits};
use crate::expr::value::{from_cel, OMIT_MARKER};
use crate::fieldpath::{FieldPath, Segment};

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
        crate::expr::budget::execute(&c.program, ctx, &self.budget).map_err(|e| {
            if let Some(msg) = crate::expr::budget::overrun(&e) {
                return TplError {
                    code: codes::EVAL_BUDGET,
                    path: at.clone(),
                    message: format!("expression {source:?} stopped: {msg}"),
                    hint: "iterate over less data (see docs/cel.md, evaluation limits)".into(),
                };
            }
            let (message, hint) = e.explain(source);
            TplError {
                code: codes::EVALUATION,
                path: at.clone(),
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
        from_cel(&v).map_err(|e| TplError {
            code: codes::RESULT_TYPE,
            path: at.clone(),
            message: format!("expression {source:?}: {}", e.0),
            hint: "convert the value explicitly, e.g. string(x) or base64.encode(x)".into(),
        })
    }

    /// Render a template value; omitted entries are removed.
    pub(crate) fn render(
        &self,
        ctx: &Context<'_, '_>,
        v: &Value,
        at: &FieldPath,
    ) -> Result<Value, TplError> {
        let out = self.render_inner(ctx, v, &mut at.clone())?;
        Ok(strip_omitted(out).unwrap_or(Value::Null))
    }

    /// `at` is the path of `v`, extended and restored around each child rather than copied per
    /// node (copying it was a tenth of a component's rendering); errors take a copy.
    fn render_inner(
        &self,
        ctx: &Context<'_, '_>,
        v: &Value,
        at: &mut FieldPath,
    ) -> Result<Value, TplError> {
        match v {
            Value::String(s) => self.render_string(ctx, s, at),
            Value::Array(a) => {
                let mut out = Vec::with_capacity(a.len());
                for (i, x) in a.iter().enumerate() {
                    at.0.push(Segment::Index(i));
                    let item = self.render_inner(ctx, x, at);
                    at.0.pop();
                    out.push(item?);
                }
                Ok(Value::Array(out))
            }
            Value::Object(m) => {
                let mut out = Map::with_capacity(m.len());
                for (k, x) in m {
                    at.0.push(Segment::Key(k.clone()));
                    let entry = self.render_entry(ctx, k, x, at);
                    at.0.pop();
                    let (key, value) = entry?;
                    out.insert(key, value);
                }
                Ok(Value::Object(out))
            }
            other => Ok(other.clone()),
        }
    }

    /// One entry of a map at `at` (its own path): the key rendered as a string, and the value.
    fn render_entry(
        &self,
        ctx: &Context<'_, '_>,
        k: &str,
        x: &Value,
        at: &mut FieldPath,
    ) -> Result<(String, Value), TplError> {
        let key = match self.render_string(ctx, k, at)? {
            Value::String(s) => s,
            other => {
                return Err(TplError {
                    code: codes::RESULT_TYPE,
                    path: at.clone(),
                    message: format!(
                        "dynamic map key {k:?} must evaluate to a string, got {other}"
                    ),
                    hint: "convert it with string(...)".into(),
                })
            }
        };
        Ok((key, self.render_inner(ctx, x, at)?))
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
                            out.push_str(&self.as_text(&v, e, at)?);
                        }
                    }
                }
                Ok(Value::String(out))
            }
        }
    }

    /// How an interpolated value is written: strings as they are, numbers as Go's `%d`/`%g`,
    /// anything else as JSON.
    fn as_text(&self, v: &CelValue, source: &str, at: &FieldPath) -> Result<String, TplError> {
        Ok(match v {
            CelValue::String(s) => s.to_string(),
            CelValue::Int(i) => i.to_string(),
            CelValue::UInt(u) => u.to_string(),
            CelValue::Float(f) => go_g(*f),
            CelValue::Bool(b) => b.to_string(),
            other => {
                let j = from_cel(other).map_err(|e| TplError {
                    code: codes::RESULT_TYPE,
                    path: at.clone(),
                    message: format!("expression {source:?}: {}", e.0),
                    hint: "convert the value explicitly".into(),
                })?;
                if j == Value::String(OMIT_MARKER.to_string()) {
                    return Err(TplError {
                        code: codes::OMIT_MISUSE,
                        path: at.clone(),
                        message: format!(
                            "expression {source:?} returns oc_omit() inside a larger string"
                        ),
                        hint: "oc_omit() must be the whole value, e.g. ${cond ? x : oc_omit()}"
                            .into(),
                    });
                }
                j.to_string()
            }
        })
    }
}

/// Remove map entries and list elements that hold the omit marker. `None` if `v` itself is one.
pub(crate) fn strip_omitted(mut v: Value) -> Option<Value> {
    if is_omitted(&v) {
        return None;
    }
    strip_omitted_within(&mut v);
    Some(v)
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

    #[test]
    fn omitted_entries_are_removed_at_every_depth_keeping_order() {
        let o = OMIT_MARKER;
        let v = serde_json::json!({
            "z": 1, "gone": o, "a": [o, {"k": o, "m": [1, o, 2]}, 3], "b": {"x": o}, "c": "keep"
        });
        let out = strip_omitted(v).unwrap();
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"z":1,"a":[{"m":[1,2]},3],"b":{},"c":"keep"}"#
        );
        assert_eq!(strip_omitted(Value::String(o.into())), None);
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
