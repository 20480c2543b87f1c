//! Metering of what the interpreter does without calling a function: a pass over the parsed tree
//! (whichever parser built it) that wraps each operation whose work grows with the size of a value
//! in a call charging it to the evaluation budget ([`super::budget`]).
//!
//! Functions are metered where they are declared (kiln's overloads come before the crate's); the
//! interpreter handles these itself:
//!
//! - **comparisons** (`==`, `!=`, `<`, `<=`, `>`, `>=`) of two values, neither a literal: comparing
//!   two long strings or lists reads both. Against a literal the work is bounded by the literal.
//! - **`in`** on a container that is not a literal scans it, and on a map hashes the element;
//!   **indexing** a map hashes the key.
//! - **copies**: a list or map literal copies each element that is not a fresh value
//!   (`[s, s, s]` holds three copies of `s`), an optional selection (`x.?f`, `m[?k]`) copies what
//!   it selects, `optional.of(x)` copies `x`, `s.format(list)` reads all of `list`, and a
//!   comprehension copies its initial accumulator.
//! - **comprehensions**: each iteration copies one element of the range (`@kiln_range` charges
//!   them all up front), and costs more the larger its body: `@kiln_go(cond)`, which kiln's macros
//!   put in each loop condition, gets the units an iteration costs. A comprehension made by the
//!   crate's own macros (the `map` in `sortBy`) gets the same count, in its loop condition, or in
//!   the element it appends, so that the interpreter still builds its result in place.
//!
//! The wrappers (`@kiln_cost`, `@kiln_range`, `@kiln_tick`) pass their value through; the checker
//! and the read analysis look through them. They add a level to the tree where they are put, so
//! the depth limit is checked again after this pass.

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue,
};

use super::budget::{COST, FORMAT_ARGS, FORMAT_STRING, GO, GROW, KEYS, RANGE, SIZE, TICK};

/// Nodes of a comprehension's body evaluated per unit of work, beyond the unit every iteration
/// costs: the interpreter spends about as long on a handful of nodes as on the loop's own step.
const NODES_PER_UNIT: usize = 8;

/// Wrap the metered operations of `root` (see the module documentation).
pub(crate) fn meter(root: &mut IdedExpr) {
    // A field path or a constant: nothing to meter (most template expressions).
    if plain_path(root) || matches!(root.expr, Expr::Literal(_)) {
        return;
    }
    let mut ids = Ids(max_id(root));
    walk(root, &mut ids);
}

/// Whether `e` is a chain of names and field selections.
fn plain_path(e: &IdedExpr) -> bool {
    let mut e = e;
    loop {
        match &e.expr {
            Expr::Ident(_) => return true,
            Expr::Select(s) => e = &s.operand,
            _ => return false,
        }
    }
}

/// Fresh node ids, above every id the parser gave.
struct Ids(u64);

impl Ids {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        self.0
    }
}

fn max_id(root: &IdedExpr) -> u64 {
    let mut max = 0;
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        max = max.max(e.id);
        children(e, &mut |c| stack.push(c), &mut |id| max = max.max(id));
    }
    max
}

/// Calls `f` on each direct child of `e`, and `entry_id` on the ids of map and struct entries.
fn children<'a>(e: &'a IdedExpr, f: &mut impl FnMut(&'a IdedExpr), entry_id: &mut impl FnMut(u64)) {
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                f(t);
            }
            c.args.iter().for_each(&mut *f);
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                f(x);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(&mut *f),
        Expr::Map(m) => {
            for en in &m.entries {
                entry_id(en.id);
                entry_values(&en.expr, f);
            }
        }
        Expr::Struct(s) => {
            for en in &s.entries {
                entry_id(en.id);
                entry_values(&en.expr, f);
            }
        }
        Expr::Select(s) => f(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry_values<'a>(e: &'a EntryExpr, f: &mut impl FnMut(&'a IdedExpr)) {
    match e {
        EntryExpr::StructField(sf) => f(&sf.value),
        EntryExpr::MapEntry(me) => {
            f(&me.key);
            f(&me.value);
        }
    }
}

/// Nodes in `e`'s subtree. Iterative: bodies can be as wide as an expression is long.
fn nodes(e: &IdedExpr) -> usize {
    let mut n = 0;
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        n += 1;
        children(e, &mut |c| stack.push(c), &mut |_| n += 1);
    }
    n
}

/// A literal, or a list or map literal: a value whose size the expression's own length bounds,
/// or whose elements were charged as they were copied in.
fn bounded(e: &IdedExpr) -> bool {
    matches!(e.expr, Expr::Literal(_) | Expr::List(_) | Expr::Map(_))
}

/// A value the interpreter builds afresh (so placing it in a list moves it), or one already
/// charged.
fn fresh(e: &IdedExpr) -> bool {
    match &e.expr {
        Expr::Literal(_) | Expr::List(_) | Expr::Map(_) | Expr::Comprehension(_) => true,
        Expr::Call(c) => {
            c.target.is_none() && [GROW, SIZE, COST, RANGE, TICK].contains(&c.func_name.as_str())
        }
        _ => false,
    }
}

fn is_call(e: &IdedExpr, name: &str) -> bool {
    matches!(&e.expr, Expr::Call(c) if c.func_name == name && c.target.is_none())
}

fn wrap(e: &mut IdedExpr, name: &str, extra: Option<IdedExpr>, ids: &mut Ids) {
    let inner = std::mem::take(e);
    let mut args = vec![inner];
    args.extend(extra);
    *e = IdedExpr {
        id: ids.next(),
        expr: Expr::Call(CallExpr {
            func_name: name.to_string(),
            target: None,
            args,
        }),
    };
}

/// `s.format(list)` → `cel.bind(@kiln_fmt, s, @kiln_fmt.format(@kiln_format_args(@kiln_fmt, list)))`:
/// what the call will write is estimated and admitted before the crate's `format` builds it
/// ([`super::format_size`]), from the format string evaluated once.
fn bind_format(e: &mut IdedExpr, ids: &mut Ids) {
    let Expr::Call(c) = &mut e.expr else {
        return;
    };
    let bound = matches!(c.target.as_deref(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == FORMAT_STRING);
    if c.func_name != "format" || c.args.len() != 1 || bound {
        return;
    }
    let Some(format) = c.target.take() else {
        return;
    };
    let ident = |ids: &mut Ids| IdedExpr {
        id: ids.next(),
        expr: Expr::Ident(FORMAT_STRING.to_string()),
    };
    let list = std::mem::take(&mut c.args[0]);
    c.args[0] = IdedExpr {
        id: ids.next(),
        expr: Expr::Call(CallExpr {
            func_name: FORMAT_ARGS.to_string(),
            target: None,
            args: vec![ident(ids), list],
        }),
    };
    c.target = Some(Box::new(ident(ids)));
    let call = std::mem::take(e);
    *e = IdedExpr {
        id: ids.next(),
        expr: Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: IdedExpr {
                id: ids.next(),
                expr: Expr::List(ListExpr::new(Vec::new())),
            },
            iter_var: "#unused".into(),
            iter_var2: None,
            accu_var: FORMAT_STRING.to_string(),
            accu_init: *format,
            loop_cond: IdedExpr {
                id: ids.next(),
                expr: Expr::Literal(LiteralValue::Boolean(false.into())),
            },
            loop_step: ident(ids),
            result: call,
        })),
    };
}

fn int(n: usize, ids: &mut Ids) -> IdedExpr {
    IdedExpr {
        id: ids.next(),
        expr: Expr::Literal(LiteralValue::Int(
            i64::try_from(n).unwrap_or(i64::MAX).into(),
        )),
    }
}

/// Rewrites `e`'s subtree, children first. Recursive: the tree's depth was checked against the
/// depth limit before this pass.
fn walk(e: &mut IdedExpr, ids: &mut Ids) {
    bind_format(e, ids);
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                walk(t, ids);
            }
            for a in &mut c.args {
                walk(a, ids);
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                walk(x, ids);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(|x| walk(x, ids)),
        Expr::Map(m) => {
            for en in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    walk(&mut me.key, ids);
                    walk(&mut me.value, ids);
                }
            }
        }
        Expr::Struct(s) => {
            for en in &mut s.entries {
                match &mut en.expr {
                    EntryExpr::StructField(f) => walk(&mut f.value, ids),
                    EntryExpr::MapEntry(me) => {
                        walk(&mut me.key, ids);
                        walk(&mut me.value, ids);
                    }
                }
            }
        }
        Expr::Select(s) => walk(&mut s.operand, ids),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    let copies_result = match &mut e.expr {
        Expr::Call(c) if c.target.is_none() => call(c, ids),
        Expr::Call(c) => {
            // `optional.of(x)` copies `x`; the crate declares it on `dyn`, so kiln cannot declare
            // a metered one ahead of it. `s.format(list)` reads every element of the list, even
            // those no clause uses (what it writes is checked by `@kiln_grow`).
            let on_optional = matches!(c.target.as_deref(), Some(t) if matches!(&t.expr, Expr::Ident(n) if n == "optional"));
            let reads_args = (on_optional
                && matches!(c.func_name.as_str(), "of" | "ofNonZeroValue"))
                || c.func_name == "format";
            if reads_args {
                for x in &mut c.args {
                    if !fresh(x) {
                        wrap(x, COST, None, ids);
                    }
                }
            }
            false
        }
        Expr::List(l) => {
            for x in &mut l.elements {
                if !fresh(x) {
                    wrap(x, COST, None, ids);
                }
            }
            false
        }
        Expr::Map(m) => {
            for en in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    for x in [&mut me.key, &mut me.value] {
                        if !fresh(x) {
                            wrap(x, COST, None, ids);
                        }
                    }
                }
            }
            false
        }
        Expr::Comprehension(c) => {
            comprehension(c, ids);
            false
        }
        _ => false,
    };
    if copies_result {
        wrap(e, COST, None, ids);
    }
}

/// Meters an operator call; `true` when its result is a copy to charge.
fn call(c: &mut CallExpr, ids: &mut Ids) -> bool {
    match (c.func_name.as_str(), c.args.as_mut_slice()) {
        (
            operators::EQUALS
            | operators::NOT_EQUALS
            | operators::LESS
            | operators::LESS_EQUALS
            | operators::GREATER
            | operators::GREATER_EQUALS,
            [a, b],
        ) => {
            if !bounded(a) && !bounded(b) {
                wrap(a, COST, None, ids);
                wrap(b, COST, None, ids);
            }
            false
        }
        (operators::IN, [elem, container]) => {
            // A map hashes the element; a list compares it with each of its own.
            if !bounded(container) {
                wrap(container, COST, None, ids);
            }
            if !bounded(elem) {
                wrap(elem, COST, None, ids);
            }
            false
        }
        (operators::INDEX, [_, key]) => {
            if !bounded(key) {
                wrap(key, COST, None, ids);
            }
            false
        }
        (operators::OPT_INDEX, [_, key]) => {
            if !bounded(key) {
                wrap(key, COST, None, ids);
            }
            true
        }
        (operators::OPT_SELECT, [_, _]) => true,
        _ => false,
    }
}

fn comprehension(c: &mut cel::common::ast::ComprehensionExpr, ids: &mut Ids) {
    let range_is_bounded =
        matches!(&c.iter_range.expr, Expr::List(l) if l.elements.iter().all(bounded));
    if !range_is_bounded && !is_call(&c.iter_range, KEYS) && !is_call(&c.iter_range, RANGE) {
        wrap(&mut c.iter_range, RANGE, None, ids);
    }
    if !fresh(&c.accu_init) {
        wrap(&mut c.accu_init, COST, None, ids);
    }
    let units = 1 + (nodes(&c.loop_cond) + nodes(&c.loop_step)) / NODES_PER_UNIT;
    // kiln's macros: `@kiln_go(cond)` learns what an iteration costs.
    if let Expr::Call(go) = &mut c.loop_cond.expr {
        if go.func_name == GO && go.target.is_none() && go.args.len() == 1 {
            go.args.push(int(units, ids));
            return;
        }
    }
    // `cel.bind` and the like: a loop that never runs.
    if matches!(
        &c.loop_cond.expr,
        Expr::Literal(LiteralValue::Boolean(b)) if !*b.inner()
    ) {
        return;
    }
    if let Some((guard, item)) = appended_item(c) {
        let n = int(units, ids);
        match guard {
            // Every iteration evaluates the guard; the item is copied for those that pass.
            Some(guard) => {
                wrap(guard, TICK, Some(n), ids);
                if !fresh(item) {
                    wrap(item, COST, None, ids);
                }
            }
            None => wrap(item, TICK, Some(n), ids),
        }
        return;
    }
    let n = int(units, ids);
    wrap(&mut c.loop_cond, GO, Some(n), ids);
}

/// The condition and the element of a `map` or `filter` that appends on each step
/// (`@result + [x]`, perhaps behind a condition: the crate's own, in `sortBy`, and kiln's), which
/// the interpreter evaluates in place of the step: metering them there keeps that optimisation.
/// `None` for any other loop.
fn appended_item(
    c: &mut cel::common::ast::ComprehensionExpr,
) -> Option<(Option<&mut IdedExpr>, &mut IdedExpr)> {
    let accu = c.accu_var.clone();
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if *n == accu);
    if !is_accu(&c.result) || !matches!(c.loop_cond.expr, Expr::Literal(_)) {
        return None;
    }
    let guarded = matches!(&c.loop_step.expr, Expr::Call(k)
        if k.func_name == operators::CONDITIONAL
            && k.target.is_none()
            && k.args.len() == 3
            && is_accu(&k.args[2]));
    let (guard, step) = if guarded {
        match &mut c.loop_step.expr {
            Expr::Call(k) => {
                let [guard, step, _] = k.args.as_mut_slice() else {
                    return None;
                };
                (Some(guard), step)
            }
            _ => return None,
        }
    } else {
        (None, &mut c.loop_step)
    };
    let Expr::Call(add) = &mut step.expr else {
        return None;
    };
    if add.func_name != operators::ADD || add.target.is_some() || add.args.len() != 2 {
        return None;
    }
    if !is_accu(&add.args[0]) {
        return None;
    }
    match &mut add.args[1].expr {
        Expr::List(l) if l.elements.len() == 1 => l.elements.first_mut().map(|x| (guard, x)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::{compile, ExprLimits};
    use super::*;

    /// The calls in a compiled expression's tree, by name, in any order.
    fn calls(src: &str) -> Vec<String> {
        let c = compile(src, &ExprLimits::default()).unwrap();
        let mut out = Vec::new();
        let mut stack = vec![c.program.expression()];
        while let Some(e) = stack.pop() {
            if let Expr::Call(c) = &e.expr {
                out.push(c.func_name.clone());
            }
            children(e, &mut |c| stack.push(c), &mut |_| {});
        }
        out
    }

    fn count(src: &str, name: &str) -> usize {
        calls(src).iter().filter(|c| *c == name).count()
    }

    #[test]
    fn operators_on_two_values_are_metered() {
        assert_eq!(count("a == b", COST), 2);
        assert_eq!(count("a < b.c", COST), 2);
        // A literal bounds the comparison.
        assert_eq!(count("a == 'x'", COST), 0);
        assert_eq!(count("[1, 2] == a", COST), 0);
        assert_eq!(count("x in l", COST), 2);
        assert_eq!(count("x in ['a', 'b']", COST), 1);
        assert_eq!(count("'x' in {'a': 1}", COST), 0);
        assert_eq!(count("'a' in l", COST), 1);
        assert_eq!(count("m[k]", COST), 1);
        assert_eq!(count("m['k'] + l[0]", COST), 0);
    }

    #[test]
    fn copies_are_metered() {
        assert_eq!(count("[s, s, 'x', [t]]", COST), 3);
        assert_eq!(count("{'k': v, k2: 'v'}", COST), 2);
        assert_eq!(count("a.?b.?c", COST), 2);
        assert_eq!(count("m[?k]", COST), 2);
        // Field paths and constants compile to themselves.
        assert_eq!(calls("schema.spec.name"), Vec::<String>::new());
    }

    #[test]
    fn comprehensions_learn_what_an_iteration_costs() {
        let c = compile("l.all(x, x > 0)", &ExprLimits::default()).unwrap();
        let text = format!("{:?}", c.program.expression());
        assert!(text.contains(RANGE), "{text}");
        assert_eq!(count("l.all(x, x > 0)", GO), 1);
        // A wide body costs more units per iteration.
        let wide = format!("l.all(x, [{}].size() > 0)", vec!["x"; 80].join(", "));
        let c = compile(&wide, &ExprLimits::default()).unwrap();
        let text = format!("{:?}", c.program.expression());
        assert!(
            text.contains("Int(21)") || text.contains("Int(22)"),
            "{text}"
        );
        // The crate's `map` inside `sortBy` is metered through the element it appends.
        assert_eq!(count("l.sortBy(x, -x)", TICK), 1);
        assert_eq!(count("l.sortBy(x, -x)", GO), 0);
        // Nothing for a range the expression spells out.
        assert_eq!(count("[1, 2].all(x, x > 0)", RANGE), 0);
    }
}
