//! kro's build-time rules for custom status conditions (`spec.schema.status.conditions`), from
//! kro's `pkg/graph/conditions.go` (`validateConditionExpressions`) and `pkg/graph/builder.go`
//! (`extractConditionExpressions`, `buildConditions`):
//!
//! - `runtime.condition(schema, 'X')` with a literal `X` must name one of kro's built-in
//!   conditions; an author-declared type there is a self-reference, anything else unknown. Lookups
//!   on other objects, and computed types, are not restricted;
//! - a literal `status` of `runtime.newCondition` is True, False or Unknown, a literal `type` is not
//!   empty (computed values are checked when evaluated);
//! - no two entries declare the same literal type (one entry may repeat it, in ternary branches).
//!
//! The keys of `runtime.newCondition` were checked and rewritten when the expression compiled
//! ([`crate::expr::library::runtime::expand_new_condition`]).

use std::collections::BTreeSet;

use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::parser::Expression;

use crate::expr::library::runtime::{STATUSES, VAR};
use crate::ir::Expr as IrExpr;

/// kro's built-in instance conditions (`KROBuiltinConditionTypes`).
pub const BUILTIN: [&str; 4] = [
    "InstanceManaged",
    "GraphResolved",
    "ResourcesReady",
    "Ready",
];

/// The problems of the conditions, each with the index of the entry it is in: every type declared
/// twice, and the first problem of each entry (kro stops at its first; kiln reports them all).
pub(crate) fn validate(exprs: &[IrExpr]) -> Vec<(usize, String)> {
    let mut problems = Vec::new();
    let mut declared = BTreeSet::new();
    for (i, e) in exprs.iter().enumerate() {
        // Types an entry declares, once per entry: one entry may repeat a type.
        let mut own = BTreeSet::new();
        visit(e.compiled.program.expression(), &mut |x| {
            if let Some(arg) = runtime_call(x, "newCondition", 1) {
                if let Some(t) = map_string(&arg[0], "type") {
                    own.insert(t.to_string());
                }
            }
        });
        for t in own {
            if !declared.insert(t.clone()) {
                problems.push((
                    i,
                    format!("condition type {t:?} is declared by more than one conditions entry"),
                ));
            }
        }
    }
    for (i, e) in exprs.iter().enumerate() {
        let mut first = None;
        let text = e.source();
        visit(e.compiled.program.expression(), &mut |x| {
            if first.is_some() {
                return;
            }
            if let Some(args) = runtime_call(x, "condition", 2) {
                first = lookup_rule(args, &declared, text);
            } else if let Some(args) = runtime_call(x, "newCondition", 1) {
                first = literal_rule(&args[0], text);
            }
        });
        if let Some(m) = first {
            problems.push((i, m));
        }
    }
    problems.sort_by_key(|(i, _)| *i);
    problems
}

fn lookup_rule(args: &[Expression], declared: &BTreeSet<String>, text: &str) -> Option<String> {
    if !matches!(&args[0].expr, Expr::Ident(n) if n == "schema") {
        return None;
    }
    let t = literal_string(&args[1])?;
    if BUILTIN.contains(&t) {
        None
    } else if declared.contains(t) {
        Some(format!("runtime.condition(schema, {t:?}): custom conditions cannot reference each other in expression {text:?}"))
    } else {
        Some(format!("runtime.condition(schema, {t:?}): unknown condition type; only kro's built-in types (InstanceManaged, GraphResolved, ResourcesReady, Ready) can be read from schema in expression {text:?}"))
    }
}

fn literal_rule(arg: &Expression, text: &str) -> Option<String> {
    if let Some(s) = map_string(arg, "status") {
        if !STATUSES.contains(&s) {
            return Some(format!("runtime.newCondition: status must be one of True, False, Unknown (got {s:?}) in expression {text:?}"));
        }
    }
    if map_string(arg, "type") == Some("") {
        return Some(format!(
            "runtime.newCondition: type must not be empty in expression {text:?}"
        ));
    }
    None
}

/// The arguments of `runtime.NAME(…)` with `n` arguments.
fn runtime_call<'a>(e: &'a Expression, name: &str, n: usize) -> Option<&'a [Expression]> {
    let Expr::Call(c) = &e.expr else { return None };
    let on_runtime =
        matches!(c.target.as_deref(), Some(t) if matches!(&t.expr, Expr::Ident(v) if v == VAR));
    (on_runtime && c.func_name == name && c.args.len() == n).then_some(c.args.as_slice())
}

fn literal_string(e: &Expression) -> Option<&str> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

/// The literal string value of `key` in a map literal.
fn map_string<'a>(e: &'a Expression, key: &str) -> Option<&'a str> {
    let Expr::Map(m) = &e.expr else { return None };
    m.entries.iter().find_map(|entry| match &entry.expr {
        EntryExpr::MapEntry(me) if literal_string(&me.key) == Some(key) => {
            literal_string(&me.value)
        }
        _ => None,
    })
}

/// Every node of the tree, parents first (iterative, like every walk over user trees).
fn visit<'a>(root: &'a Expression, f: &mut dyn FnMut(&'a Expression)) {
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        f(e);
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.args.iter().rev());
                stack.extend(c.target.as_deref());
            }
            Expr::Comprehension(c) => stack.extend([
                &c.result,
                &c.loop_step,
                &c.loop_cond,
                &c.accu_init,
                &c.iter_range,
            ]),
            Expr::List(l) => stack.extend(l.elements.iter().rev()),
            Expr::Map(m) => {
                for entry in m.entries.iter().rev() {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        stack.push(&me.value);
                        stack.push(&me.key);
                    }
                }
            }
            Expr::Struct(st) => {
                for entry in st.entries.iter().rev() {
                    match &entry.expr {
                        EntryExpr::StructField(f) => stack.push(&f.value),
                        EntryExpr::MapEntry(me) => {
                            stack.push(&me.value);
                            stack.push(&me.key);
                        }
                    }
                }
            }
            Expr::Select(s) => stack.push(&s.operand),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
}
