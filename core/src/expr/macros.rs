//! kiln's comprehension macros: CEL's standard ones, cel-go's two-variable forms, and `cel.bind`,
//! all metered by the evaluation budget ([`super::budget`]).
//!
//! The crate's standard macros cannot be instrumented, so kiln's environment is built without them
//! and registers these instead. They expand as the CEL specification describes (an accumulator
//! `@result` folded over the range), with `@kiln_go(cond)` around each loop condition and
//! `@kiln_size(step)` around each step. `map` and `filter` (and `transformList`) keep the shape
//! the crate's interpreter builds in place (`@result + [x]`, perhaps guarded, under a literal
//! condition): copying the accumulator on every step would make them quadratic. The meter counts
//! their iterations ([`super::meter`]) and `@kiln_size` checks their result.
//!
//! The crate's interpreter iterates one variable only, so the two-variable forms are lowered: the
//! range is bound once to a hidden variable `@tN`, iterated by index (lists) or key (maps), and the
//! second variable is bound to `@tN[i]` around each predicate and function.
//!
//! Calls whose result can be larger than their inputs (`+`, `format`, `join`, `strings.quote`,
//! `base64.encode`, `json.marshal`, `merge`, …) are rewritten as `@kiln_grow(call, "name")`, which
//! checks the result's size. The call itself is kept as written, so the type checker and the
//! reference walker see it unchanged.

use cel::common::ast::{
    CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue, MapExpr,
};
use cel::parser::{Macro, MacroExprHelper};
use cel::ParseError;

use super::budget::{GO, GROW, INSERT, INSERT_ENTRY, KEYS, SIZE};

type Helper<'a, 'b> = &'a mut MacroExprHelper<'b>;
type Expansion = Result<Option<IdedExpr>, ParseError>;

const RESULT: &str = "@result";

/// kiln's RE2 `matches` (`expr::library::regex`).
pub(crate) const MATCHES: &str = "@kiln_matches";

fn ident(h: Helper<'_, '_>, name: &str) -> IdedExpr {
    h.next_expr(Expr::Ident(name.to_string()))
}

fn call(h: Helper<'_, '_>, f: &str, args: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::Call(CallExpr {
        func_name: f.to_string(),
        target: None,
        args,
    }))
}

fn boolean(h: Helper<'_, '_>, b: bool) -> IdedExpr {
    h.next_expr(Expr::Literal(LiteralValue::Boolean(b.into())))
}

fn int(h: Helper<'_, '_>, i: i64) -> IdedExpr {
    h.next_expr(Expr::Literal(LiteralValue::Int(i.into())))
}

fn list(h: Helper<'_, '_>, items: Vec<IdedExpr>) -> IdedExpr {
    h.next_expr(Expr::List(ListExpr::new(items)))
}

fn empty_map(h: Helper<'_, '_>) -> IdedExpr {
    h.next_expr(Expr::Map(MapExpr::default()))
}

fn var_name(h: Helper<'_, '_>, e: &IdedExpr) -> Result<String, ParseError> {
    match &e.expr {
        Expr::Ident(n) => Ok(n.clone()),
        _ => Err(h.new_error(e.id, "argument must be a simple name")),
    }
}

/// A metered fold of `kind`: `range` iterated with `var`, accumulator `@result` from `init`.
fn fold(
    h: Helper<'_, '_>,
    kind: Kind,
    range: IdedExpr,
    var: String,
    (init, cond, step, result): (IdedExpr, IdedExpr, IdedExpr, IdedExpr),
) -> IdedExpr {
    let appends = matches!(kind, Kind::Map | Kind::Filter);
    let (loop_cond, loop_step) = if appends {
        (cond, step)
    } else {
        (call(h, GO, vec![cond]), call(h, SIZE, vec![step]))
    };
    let fold = h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range: range,
        iter_var: var,
        iter_var2: None,
        accu_var: RESULT.to_string(),
        accu_init: init,
        loop_cond,
        loop_step,
        result,
    })));
    if appends {
        call(h, SIZE, vec![fold])
    } else {
        fold
    }
}

/// `cel.bind(var, init, body)` as a comprehension over nothing; the bound value is size-checked.
fn bind(h: Helper<'_, '_>, var: String, init: IdedExpr, body: IdedExpr) -> IdedExpr {
    let iter_range = list(h, Vec::new());
    let loop_cond = boolean(h, false);
    let loop_step = ident(h, &var);
    let accu_init = call(h, SIZE, vec![init]);
    h.next_expr(Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range,
        iter_var: "#unused".into(),
        iter_var2: None,
        accu_var: var,
        accu_init,
        loop_cond,
        loop_step,
        result: body,
    })))
}

/// What a fold computes, given its predicate/function arguments.
#[derive(Clone, Copy)]
enum Kind {
    All,
    Exists,
    ExistsOne,
    /// `map(x, f)` / `transformList(i, v, f)`; with a filter when it has one more argument.
    Map,
    Filter,
    /// `transformMap(k, v, f)`.
    TransformMap,
    /// `transformMapEntry(k, v, f)`.
    TransformMapEntry,
}

/// The init, condition, step and result of a fold of `kind`; `args` are the predicate and/or
/// function, `var` the (first) iteration variable.
fn parts(
    h: Helper<'_, '_>,
    kind: Kind,
    mut args: Vec<IdedExpr>,
    var: &str,
) -> (IdedExpr, IdedExpr, IdedExpr, IdedExpr) {
    let accu = |h: Helper<'_, '_>| ident(h, RESULT);
    let f = args.pop().unwrap_or_else(|| boolean(h, true));
    let filter = args.pop();
    match kind {
        Kind::All => {
            let init = boolean(h, true);
            let a = accu(h);
            let cond = call(h, "@not_strictly_false", vec![a]);
            let a = accu(h);
            let step = call(h, "_&&_", vec![a, f]);
            (init, cond, step, accu(h))
        }
        Kind::Exists => {
            let init = boolean(h, false);
            let a = accu(h);
            let not = call(h, "!_", vec![a]);
            let cond = call(h, "@not_strictly_false", vec![not]);
            let a = accu(h);
            let step = call(h, "_||_", vec![a, f]);
            (init, cond, step, accu(h))
        }
        Kind::ExistsOne => {
            let init = int(h, 0);
            let cond = boolean(h, true);
            let a = accu(h);
            let one = int(h, 1);
            let plus = call(h, "_+_", vec![a, one]);
            let a = accu(h);
            let step = call(h, "_?_:_", vec![f, plus, a]);
            let a = accu(h);
            let one = int(h, 1);
            let result = call(h, "_==_", vec![a, one]);
            (init, cond, step, result)
        }
        Kind::Map | Kind::Filter => {
            let init = list(h, Vec::new());
            let cond = boolean(h, true);
            let (item, pred) = match kind {
                Kind::Filter => (ident(h, var), Some(f)),
                _ => (f, filter),
            };
            let a = accu(h);
            let one = list(h, vec![item]);
            let add = call(h, "_+_", vec![a, one]);
            let step = match pred {
                Some(p) => {
                    let a = accu(h);
                    call(h, "_?_:_", vec![p, add, a])
                }
                None => add,
            };
            (init, cond, step, accu(h))
        }
        Kind::TransformMap | Kind::TransformMapEntry => {
            let init = empty_map(h);
            let cond = boolean(h, true);
            let a = accu(h);
            let add = match kind {
                Kind::TransformMap => {
                    let k = ident(h, var);
                    call(h, INSERT, vec![a, k, f])
                }
                _ => call(h, INSERT_ENTRY, vec![a, f]),
            };
            let step = match filter {
                Some(p) => {
                    let a = accu(h);
                    call(h, "_?_:_", vec![p, add, a])
                }
                None => add,
            };
            (init, cond, step, accu(h))
        }
    }
}

/// One-variable form: `range.kind(x, args...)`.
fn one_var(
    kind: Kind,
) -> impl Fn(Helper<'_, '_>, &mut Option<IdedExpr>, &mut Vec<IdedExpr>) -> Expansion {
    move |h, target, args| {
        let Some(range) = target.take() else {
            return Ok(None);
        };
        let mut rest = std::mem::take(args);
        let var = var_name(h, &rest[0])?;
        rest.remove(0);
        let parts = parts(h, kind, rest, &var);
        Ok(Some(fold(h, kind, range, var, parts)))
    }
}

/// Two-variable form: `range.kind(k, v, args...)`, lowered to one variable (see the module docs).
fn two_var(
    kind: Kind,
) -> impl Fn(Helper<'_, '_>, &mut Option<IdedExpr>, &mut Vec<IdedExpr>) -> Expansion {
    move |h, target, args| {
        let Some(range) = target.take() else {
            return Ok(None);
        };
        let mut rest = std::mem::take(args);
        let k = var_name(h, &rest[0])?;
        let v = var_name(h, &rest[1])?;
        if k == v {
            return Err(h.new_error(rest[1].id, "the two iteration variables must differ"));
        }
        rest.drain(..2);
        let hidden = format!("@t{}", range.id);
        // Lists are iterated by index, maps by key; which one is known only at run time.
        let t = ident(h, &hidden);
        let iter = call(h, KEYS, vec![t]);
        // The second variable is bound around each predicate and function, not around the
        // step, so that a `transformList` keeps the shape built in place.
        let rest = rest
            .into_iter()
            .map(|arg| {
                let t = ident(h, &hidden);
                let key = ident(h, &k);
                let value = call(h, "_[_]", vec![t, key]);
                bind(h, v.clone(), value, arg)
            })
            .collect();
        let parts = parts(h, kind, rest, &k);
        let body = fold(h, kind, iter, k, parts);
        Ok(Some(bind(h, hidden, range, body)))
    }
}

/// `has(a.b)`: a presence test on the selected field.
fn has(h: Helper<'_, '_>, _target: &mut Option<IdedExpr>, args: &mut Vec<IdedExpr>) -> Expansion {
    let arg = args.remove(0);
    match arg.expr {
        Expr::Select(mut s) => {
            s.test = true;
            Ok(Some(h.next_expr(Expr::Select(s))))
        }
        _ => Err(h.new_error(arg.id, "invalid argument to has() macro")),
    }
}

/// `cel.bind(name, init, body)`.
fn cel_bind(
    h: Helper<'_, '_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Expansion {
    match target {
        Some(IdedExpr {
            expr: Expr::Ident(n),
            ..
        }) if n == "cel" => {}
        _ => return Ok(None),
    }
    let var = match &args[0].expr {
        Expr::Ident(n) => n.clone(),
        _ => {
            return Err(h.new_error(
                args[0].id,
                "cel.bind() variable name must be a simple identifier",
            ))
        }
    };
    target.take();
    let body = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    Ok(Some(bind(h, var, init, body)))
}

/// Member and namespaced functions (`ns.f(x)` parses as a member call on `ns`) whose result can
/// outgrow their inputs; `replace`, `split` and `join(sep)` are also checked before they build
/// anything (see [`super::budget`]).
pub(super) const GROWING: &[&str] = &[
    "format",
    "join",
    "quote",
    "encode",
    "marshal",
    "merge",
    "deepMerge",
    "insertAtIndex",
    "setAtIndex",
];

/// `target.f(args…)` → `@kiln_grow(target.f(args…), "f")`.
fn grow_checked(
    name: &'static str,
) -> impl Fn(Helper<'_, '_>, &mut Option<IdedExpr>, &mut Vec<IdedExpr>) -> Expansion {
    move |h, target, args| {
        let label = match target.as_ref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if matches!(ns.as_str(), "strings" | "base64" | "json" | "lists") =>
            {
                format!("{ns}.{name}()")
            }
            _ => format!("{name}()"),
        };
        let inner = h.next_expr(Expr::Call(CallExpr {
            func_name: name.to_string(),
            target: target.take().map(Box::new),
            args: std::mem::take(args),
        }));
        Ok(Some(checked(h, inner, label)))
    }
}

fn checked(h: Helper<'_, '_>, inner: IdedExpr, label: String) -> IdedExpr {
    let label = h.next_expr(Expr::Literal(LiteralValue::String(label.into())));
    call(h, GROW, vec![inner, label])
}

/// `a + b` → `@kiln_grow(a + b, "`+`")`, unless an operand is a number, bool or null literal (the sum
/// is then no string or list) or both are literals (the sum is as long as the source).
fn plus(h: Helper<'_, '_>, _target: &mut Option<IdedExpr>, args: &mut Vec<IdedExpr>) -> Expansion {
    let scalar = |e: &IdedExpr| {
        matches!(
            &e.expr,
            Expr::Literal(
                LiteralValue::Int(_)
                    | LiteralValue::UInt(_)
                    | LiteralValue::Double(_)
                    | LiteralValue::Boolean(_)
                    | LiteralValue::Null
            )
        )
    };
    let literal = |e: &IdedExpr| matches!(&e.expr, Expr::Literal(_));
    if args.iter().any(scalar) || args.iter().all(literal) {
        return Ok(None);
    }
    let inner = call(h, "_+_", std::mem::take(args));
    Ok(Some(checked(h, inner, "`+`".into())))
}

/// `s.matches(re)` and `matches(s, re)` → `@kiln_matches(s, re)`: kiln's `matches` reads the
/// pattern as RE2 (Go's `regexp`), as cel-go does; the crate's reads it as the `regex` crate's
/// syntax, where `\d` and `\w` are Unicode and `x**` is accepted.
fn matches(
    h: Helper<'_, '_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Expansion {
    let mut all: Vec<IdedExpr> = target.take().into_iter().collect();
    all.append(args);
    Ok(Some(call(h, MATCHES, all)))
}

/// Every macro kiln's environment expands.
pub(crate) fn all() -> Vec<Macro> {
    let mut macros = vec![Macro::global("_+_", 2, plus)];
    for &name in GROWING {
        macros.push(Macro::receiver_var_arg(name, grow_checked(name)));
    }
    macros.extend([
        Macro::global("has", 1, has),
        Macro::receiver("matches", 1, matches),
        Macro::global("matches", 2, matches),
        Macro::receiver("bind", 3, cel_bind),
        Macro::receiver("all", 2, one_var(Kind::All)),
        Macro::receiver("exists", 2, one_var(Kind::Exists)),
        Macro::receiver("exists_one", 2, one_var(Kind::ExistsOne)),
        Macro::receiver("existsOne", 2, one_var(Kind::ExistsOne)),
        Macro::receiver("map", 2, one_var(Kind::Map)),
        Macro::receiver("map", 3, one_var(Kind::Map)),
        Macro::receiver("filter", 2, one_var(Kind::Filter)),
        Macro::receiver("all", 3, two_var(Kind::All)),
        Macro::receiver("exists", 3, two_var(Kind::Exists)),
        Macro::receiver("existsOne", 3, two_var(Kind::ExistsOne)),
        // cel-go's ext/comprehensions.go also takes the standard spelling with two variables.
        Macro::receiver("exists_one", 3, two_var(Kind::ExistsOne)),
        Macro::receiver("transformList", 3, two_var(Kind::Map)),
        Macro::receiver("transformList", 4, two_var(Kind::Map)),
        Macro::receiver("transformMap", 3, two_var(Kind::TransformMap)),
        Macro::receiver("transformMap", 4, two_var(Kind::TransformMap)),
        Macro::receiver("transformMapEntry", 3, two_var(Kind::TransformMapEntry)),
        Macro::receiver("transformMapEntry", 4, two_var(Kind::TransformMapEntry)),
    ]);
    macros
}
