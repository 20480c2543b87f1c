//! CEL parsing without the ANTLR parser's per-process warm-up, for the expressions that allow it.
//!
//! The `cel` crate's default parser is ANTLR-generated: its prediction tables start empty in every
//! process and are filled by the first parses, so the first few expressions that are not plain
//! field paths cost millions of instructions: in a small app, most of the run. The crate also ships a
//! hand-written Pratt parser (feature `parser_pratt`) that builds the same trees, ids included,
//! with no warm-up; but it cannot take an environment's macros, and kiln registers its own.
//!
//! So the Pratt parser is used only where the difference cannot show:
//!
//! - the source is ASCII, has no `+` (kiln's `_+_` macro), no backquote, and names no macro
//!   other than the size-checked receiver calls (`x.merge(…)`, `x.join(…)`, …), whose expansion
//!   `@kiln_grow(x.f(…), "f()")` is applied here with the ids the ANTLR parser gives it;
//! - its bracket nesting is well inside the nesting limit (the ANTLR parser's recursion limit
//!   counts brackets);
//! - the Pratt parser accepts it.
//!
//! Anything else, and every error, is the ANTLR parser's to judge, so diagnostics are unchanged.
//! Tests compare both parsers' trees on every expression of the golden cases and more.

use cel::common::ast::{operators, CallExpr, EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::parser::PrattParser;

use super::budget::GROW;
use super::macros::GROWING;

/// Words that make an expression the ANTLR parser's: every macro kiln registers (but the
/// size-checked receiver calls handled here), the crate's standard macros (the Pratt parser would
/// expand its own versions), and kro's `newCondition`.
const ANTLR_ONLY_WORDS: &[&str] = &[
    "has",
    "matches",
    "bind",
    "all",
    "exists",
    "exists_one",
    "existsOne",
    "map",
    "filter",
    "transformList",
    "transformMap",
    "transformMapEntry",
    "optMap",
    "optFlatMap",
    "newCondition",
    // The extensions' macros: lists' `sortBy`, math's `greatest` and `least`.
    "sortBy",
    "greatest",
    "least",
];

/// Longer sources are the ANTLR parser's: a template expression is rarely more than a line, and
/// this bounds how deep the Pratt parser recurses (a chain of `?:` is a level per branch) and
/// how deep the tree the walks here recurse over can be, whatever stack the caller is on.
const MAX_SOURCE: usize = 1024;

/// The tree kiln's environment parses `source` into, or `None` when the ANTLR parser must decide.
/// `bracket_depth` is the source's deepest bracket nesting, `max_nesting` the parser's limit.
pub(super) fn parse(source: &str, bracket_depth: usize, max_nesting: u16) -> Option<IdedExpr> {
    if source.len() > MAX_SOURCE
        || !eligible(source)
        || bracket_depth + 4 > usize::from(max_nesting)
    {
        return None;
    }
    let mut tree = PrattParser::new()
        .enable_optional_syntax(true)
        .parse(source)
        .ok()?;
    // The walks below recurse once per level: a tree deeper than a short source can make is the
    // ANTLR parser's to build and refuse (this one is dropped here, as shallow as its source).
    if super::cel::tree_depth_over(&tree, MAX_SOURCE).is_some() {
        return None;
    }
    if has_unspecified_or_optional(&tree) || !number_map_entries_as_antlr(&mut tree) {
        return None;
    }
    expand_growing(&mut tree);
    Some(tree)
}

fn eligible(source: &str) -> bool {
    // Repeated unary operators (`!!x`, `--x`): the ANTLR parser folds pairs away and numbers
    // what is left differently.
    let compact: String = source.split_ascii_whitespace().collect();
    source.is_ascii()
        && !compact.contains("!!")
        && !compact.contains("--")
        && !source.contains('`')
        && !source
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| ANTLR_ONLY_WORDS.contains(&w))
}

/// A placeholder node means the parser recovered from an error: never trust such a tree. The
/// parsers also number optional selections (`a.?b`, `a[?i]`, `[?x]`, `{?k: v}`) differently, so
/// those are the ANTLR parser's too, as are messages (`T{f: v}`).
fn has_unspecified_or_optional(e: &IdedExpr) -> bool {
    let mut found = false;
    visit(e, &mut |x| {
        found |= match &x.expr {
            Expr::Unspecified => true,
            Expr::Call(c) => {
                matches!(
                    c.func_name.as_str(),
                    operators::OPT_SELECT | operators::OPT_INDEX
                )
            }
            Expr::List(l) => !l.optional_indices.is_empty(),
            Expr::Map(m) => m
                .entries
                .iter()
                .any(|en| matches!(&en.expr, EntryExpr::MapEntry(me) if me.optional)),
            // Message construction (`T{…}`) is numbered differently as well.
            Expr::Struct(_) => true,
            _ => false,
        }
    });
    found
}

fn visit(e: &IdedExpr, f: &mut impl FnMut(&IdedExpr)) {
    f(e);
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                visit(t, f);
            }
            c.args.iter().for_each(|a| visit(a, f));
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(x, f);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| visit(x, f)),
        Expr::Map(m) => m.entries.iter().for_each(|en| visit_entry(&en.expr, f)),
        Expr::Struct(s) => s.entries.iter().for_each(|en| visit_entry(&en.expr, f)),
        Expr::Select(s) => visit(&s.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn visit_entry(e: &EntryExpr, f: &mut impl FnMut(&IdedExpr)) {
    match e {
        EntryExpr::StructField(sf) => visit(&sf.value, f),
        EntryExpr::MapEntry(me) => {
            visit(&me.key, f);
            visit(&me.value, f);
        }
    }
}

/// The Pratt parser numbers a map entry after its key, the ANTLR parser before it: swap the two
/// ids when the key is one node (a literal or a name, as keys nearly always are). `false` when a
/// key is anything else; such an expression is the ANTLR parser's.
fn number_map_entries_as_antlr(e: &mut IdedExpr) -> bool {
    let mut ok = true;
    visit_mut(e, &mut |x| {
        if let Expr::Map(m) = &mut x.expr {
            for en in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    if matches!(me.key.expr, Expr::Literal(_) | Expr::Ident(_))
                        && me.key.id + 1 == en.id
                    {
                        std::mem::swap(&mut me.key.id, &mut en.id);
                    } else {
                        ok = false;
                    }
                }
            }
        }
    });
    ok
}

fn visit_mut(e: &mut IdedExpr, f: &mut impl FnMut(&mut IdedExpr)) {
    f(e);
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                visit_mut(t, f);
            }
            c.args.iter_mut().for_each(|a| visit_mut(a, f));
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                visit_mut(x, f);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(|x| visit_mut(x, f)),
        Expr::Map(m) => m
            .entries
            .iter_mut()
            .for_each(|en| entry_values_mut(&mut en.expr, &mut |x| visit_mut(x, f))),
        Expr::Struct(s) => s
            .entries
            .iter_mut()
            .for_each(|en| entry_values_mut(&mut en.expr, &mut |x| visit_mut(x, f))),
        Expr::Select(s) => visit_mut(&mut s.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The label of kiln's size check when its macros expand the call `c`, or `None` when they
/// leave it as it is: `target.f(…)` with `f` in [`GROWING`], and `a + b` unless an operand is a
/// number, bool or null literal or both are literals (`super::macros::plus`).
fn expansion_label(c: &CallExpr) -> Option<String> {
    if c.func_name == operators::ADD {
        if c.target.is_some() || c.args.len() != 2 {
            return None;
        }
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
        if c.args.iter().any(scalar) || c.args.iter().all(literal) {
            return None;
        }
        return Some("`+`".to_string());
    }
    let target = c.target.as_deref()?;
    if !GROWING.contains(&c.func_name.as_str()) {
        return None;
    }
    let name = &c.func_name;
    Some(match &target.expr {
        Expr::Ident(ns) if matches!(ns.as_str(), "strings" | "base64" | "json" | "lists") => {
            format!("{ns}.{name}()")
        }
        _ => format!("{name}()"),
    })
}

/// Apply kiln's size-check macros (see [`expansion_label`]), numbering the tree as the ANTLR
/// parser does when it expands them.
///
/// Parsers number nodes in the order they create them. A macro is expanded right after its call's
/// arguments are parsed (the call's own id, taken before the arguments, is then unused) and
/// creates three nodes: the call kept as written, the label, and the `@kiln_grow` call around
/// them. So an expansion whose arguments end at id `e` (the largest id of the call's subtree) moves
/// every later node up by three, and the `r`-th expansion in creation order (by `e`, inner before
/// outer on a tie) numbers its nodes from `e + 3r + 1`.
fn expand_growing(tree: &mut IdedExpr) {
    let mut ends = Vec::new();
    collect_ends(tree, &mut ends);
    if ends.is_empty() {
        return;
    }
    // (end, post-order index): post order puts an inner call before the outer one it ends with.
    let mut order: Vec<(u64, usize)> = ends.iter().copied().zip(0..).collect();
    order.sort();
    let sorted_ends: Vec<u64> = order.iter().map(|(e, _)| *e).collect();
    let mut next_post = 0;
    renumber(tree, &order, &sorted_ends, &mut next_post);
}

/// The largest id in `e`'s subtree; pushes the end of each growing call, in post order.
fn collect_ends(e: &IdedExpr, ends: &mut Vec<u64>) -> u64 {
    let mut max = e.id;
    let mut kids: Vec<&IdedExpr> = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            kids.extend(c.target.as_deref());
            kids.extend(c.args.iter());
        }
        Expr::Comprehension(c) => kids.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::List(l) => kids.extend(l.elements.iter()),
        Expr::Map(m) => m.entries.iter().for_each(|en| {
            max = max.max(en.id);
            entry_values(&en.expr, &mut |x| kids.push(x));
        }),
        Expr::Struct(s) => s.entries.iter().for_each(|en| {
            max = max.max(en.id);
            entry_values(&en.expr, &mut |x| kids.push(x));
        }),
        Expr::Select(s) => kids.push(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    for k in kids {
        max = max.max(collect_ends(k, ends));
    }
    if matches!(&e.expr, Expr::Call(c) if expansion_label(c).is_some()) {
        ends.push(max);
    }
    max
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

fn entry_values_mut(e: &mut EntryExpr, f: &mut impl FnMut(&mut IdedExpr)) {
    match e {
        EntryExpr::StructField(sf) => f(&mut sf.value),
        EntryExpr::MapEntry(me) => {
            f(&mut me.key);
            f(&mut me.value);
        }
    }
}

/// A node's id once the expansions are in: three more for each expansion that ended before it.
fn shifted(id: u64, sorted_ends: &[u64]) -> u64 {
    id + 3 * sorted_ends.partition_point(|e| *e < id) as u64
}

/// Renumber `e`'s subtree and expand its growing calls; returns the subtree's largest id before
/// renumbering (as [`collect_ends`] computed it, in the same traversal order).
fn renumber(
    e: &mut IdedExpr,
    order: &[(u64, usize)],
    sorted_ends: &[u64],
    next_post: &mut usize,
) -> u64 {
    let mut max = e.id;
    let mut go = |x: &mut IdedExpr| renumber(x, order, sorted_ends, next_post);
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                max = max.max(go(t));
            }
            for a in &mut c.args {
                max = max.max(go(a));
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
                max = max.max(go(x));
            }
        }
        Expr::List(l) => {
            for x in &mut l.elements {
                max = max.max(go(x));
            }
        }
        Expr::Map(m) => {
            for en in &mut m.entries {
                max = max.max(en.id);
                en.id = shifted(en.id, sorted_ends);
                entry_values_mut(&mut en.expr, &mut |x| max = max.max(go(x)));
            }
        }
        Expr::Struct(s) => {
            for en in &mut s.entries {
                max = max.max(en.id);
                en.id = shifted(en.id, sorted_ends);
                entry_values_mut(&mut en.expr, &mut |x| max = max.max(go(x)));
            }
        }
        Expr::Select(s) => max = max.max(go(&mut s.operand)),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
    let label = match &e.expr {
        Expr::Call(c) => expansion_label(c),
        _ => None,
    };
    let Some(label) = label else {
        e.id = shifted(e.id, sorted_ends);
        return max;
    };
    let post = *next_post;
    *next_post += 1;
    let rank = order
        .iter()
        .position(|&(end, p)| end == max && p == post)
        .expect("every growing call was collected in the same order");
    let base = max + 3 * rank as u64 + 1;
    let Expr::Call(call) = std::mem::take(&mut e.expr) else {
        unreachable!("checked above")
    };
    *e = IdedExpr {
        id: base + 2,
        expr: Expr::Call(CallExpr {
            func_name: GROW.to_string(),
            target: None,
            args: vec![
                IdedExpr {
                    id: base,
                    expr: Expr::Call(call),
                },
                IdedExpr {
                    id: base + 1,
                    expr: Expr::Literal(LiteralValue::String(label.into())),
                },
            ],
        }),
    };
    max
}

#[cfg(test)]
mod tests {
    use super::super::cel::env;
    use super::*;

    /// The ANTLR parser with kiln's macros: the tree every fast path must equal.
    fn antlr(src: &str) -> Result<IdedExpr, String> {
        env()
            .parser()
            .max_recursion_depth(64)
            .parse(src)
            .map_err(|e| format!("{e:?}"))
    }

    fn fast(src: &str) -> Option<IdedExpr> {
        parse(src, super::super::cel::max_bracket_depth(src), 64)
    }

    /// Both parsers agree wherever the fast path answers; returns whether it did.
    fn agrees(src: &str) -> bool {
        match fast(src) {
            None => false,
            Some(t) => {
                assert_eq!(Ok(t), antlr(src), "{src}");
                true
            }
        }
    }

    #[test]
    fn growing_calls_are_numbered_as_the_antlr_parser_numbers_them() {
        for src in [
            "schema.spec.regions.join(\",\")",
            "schema.spec.labels.merge({\"app.kubernetes.io/name\": schema.metadata.name, \"team\": schema.spec.team})",
            "a.merge(b.merge(c))",
            "a.merge(b).merge(c)",
            "a.merge(b.merge(c.merge(d)), e.join(\"-\")) == x.y",
            "strings.quote(a.b)",
            "base64.encode(b'x')",
            "json.marshal(a)",
            "lists.setAtIndex(a, 0, 1)",
            "a.join() != '' ? a.join(',') : 'none'",
            "[a.join(','), {k: v.merge(w)}][0]",
            "f(a.format([1, 2]), g.deepMerge(h))",
            "a.insertAtIndex(0, b).size() > 2 && c.join(d.join('x')) == 'y'",
            "schema.metadata.name + \"-\" + region",
            "a + b",
            "a + b + c + d",
            "(a + b) * 2 + c.join(d + e)",
            "[a] + [b, c.merge(d)] + e",
            "a + (b + (c + d))",
            "f(a + b, x.y + 'z') == 'q' + r",
        ] {
            assert!(agrees(src), "{src}: not on the fast path");
        }
    }

    #[test]
    fn other_expressions_build_the_antlr_parsers_tree() {
        for src in [
            "schema.spec.tier == \"frontend\" ? \"100m\" : \"250m\"",
            "string(schema.spec.port)",
            "int(a) * 2 - b / 3 % 4",
            "!a || b && c",
            "-a < 1 || a >= -1.5e3 || a <= 0x10 || a > 3u",
            "a in [1, 2, 3]",
            "{'a': 1, 'b': [true, false, null]}",
            "size(a) == 0 ? omit() : a",
            "type(a) == string",
            "r'raw\\d' == \"x\\ty\"",
            "b\"bytes\" == bytes(a)",
            "timestamp('2020-01-01T00:00:00Z') < now",
            "duration('1h')",
            "a.b.c(d)",
            ".a.b",
            "((a))",
            "a ? b : c ? d : e",
            "'multi' == '''tri'''",
            "1 - (-1)",
            "!a && -b < 0",
            "'a' + 'b'",
            "a + 1",
            "1.5 + a + 'x'",
            "null + a",
            "a + true",
            "1e+5 + 2",
        ] {
            assert!(agrees(src), "{src}: not on the fast path");
        }
    }

    #[test]
    fn macros_plus_and_non_ascii_go_to_the_antlr_parser() {
        for src in [
            "has(a.b)",
            "a.map(x, x * 2)",
            "a.all(x, x > 0)",
            "a.exists_one(x, x)",
            "a.filter(x, x)",
            "cel.bind(x, 1, x)",
            "a.matches('x')",
            "a.transformList(i, v, v)",
            "'é' == a",
            "a.`b-c`",
            "runtime.newCondition(a, b)",
            "[2, 1].sortBy(x, x)",
            "math.greatest(1, 2)",
            "math.least([1, 2])",
            "optional.of(1).optMap(x, x)",
            "{a.b: 1}",
            "!!a",
            "!! !a",
            "- -a",
            "x.?y.join(',')",
            "a.?b + c",
            "a[0].b['c'][?d]",
            "a.?b.orValue(c)",
            "{?'k': v}",
            "[?a, b]",
            "google.protobuf.Value{}",
            "T{a: 1}.a",
        ] {
            assert_eq!(fast(src), None, "{src}");
        }
        // Deep nesting is the ANTLR parser's, close to the limit, and so are long sources.
        assert_eq!(parse("((((a))))", 61, 64), None);
        let long = vec!["a"; 300].join(" * ");
        assert!(antlr(&long).is_ok());
        assert_eq!(fast(&long), None);
    }

    #[test]
    fn errors_are_the_antlr_parsers() {
        for src in [
            "",
            "a +",
            "a.",
            "(a",
            "a)",
            "[1,",
            "{1: }",
            "a ? b",
            "1a",
            "'unterminated",
            "a..b",
            "a.in",
            "null.x",
            "a = b",
            "a ! b",
            "{a b}",
            "f(,)",
            "a[",
            "a.b(",
            "?",
            "a ?? b",
            "1.2.3",
            "0x",
            "in",
            "a ? b ? c : d : e",
            "a.if",
            "\"\\q\"",
            "1e",
            "a.?",
            "3 4",
        ] {
            if antlr(src).is_err() {
                assert_eq!(
                    fast(src),
                    None,
                    "{src:?}: the fast path accepted what ANTLR refuses"
                );
            }
        }
    }

    /// Every `${…}` expression of the golden cases, examples and bench-like inputs: where the fast
    /// path answers, it is the ANTLR parser's tree.
    #[test]
    fn every_expression_of_the_repository_agrees() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let mut stack = vec![root.join("testdata"), root.join("examples")];
        let (mut fast_path, mut total) = (0, 0);
        while let Some(dir) = stack.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let Ok(text) = std::fs::read_to_string(&p) else {
                    continue;
                };
                let Ok(found) = super::super::scan::scan(&text) else {
                    continue;
                };
                for m in found {
                    total += 1;
                    if super::super::cel::select_chain_for_tests(&m.expr) {
                        continue;
                    }
                    match fast(&m.expr) {
                        None => {}
                        Some(t) => {
                            fast_path += 1;
                            assert_eq!(Ok(t), antlr(&m.expr), "{}: {}", p.display(), m.expr);
                        }
                    }
                }
            }
        }
        assert!(total > 1000, "{total} expressions found");
        assert!(
            fast_path > 200,
            "only {fast_path} of {total} took the fast path"
        );
    }

    /// The cel-spec and cel-go conformance inputs (core/tests/cel_spec, about 2,500 expressions
    /// of every syntax CEL has, errors included): wherever the fast path answers, the ANTLR parser
    /// builds the same tree; wherever the ANTLR parser refuses, the fast path does not answer.
    #[test]
    fn the_conformance_expressions_agree() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cel_spec");
        let (mut fast_path, mut total) = (0, 0);
        for file in ["cases.jsonl", "celgo_ext.jsonl"] {
            let text = std::fs::read_to_string(dir.join(file)).expect("conformance cases");
            for line in text.lines() {
                let case: serde_json::Value = serde_json::from_str(line).expect("JSON line");
                let Some(src) = case.get("expr").and_then(|e| e.as_str()) else {
                    continue;
                };
                // The conformance suite's deepest cases are the big-stack path's, not this one's.
                if super::super::cel::max_bracket_depth(src) > 8 {
                    continue;
                }
                total += 1;
                match (fast(src), antlr(src)) {
                    (None, _) => {}
                    (Some(t), Ok(a)) => {
                        fast_path += 1;
                        assert_eq!(t, a, "{src}");
                    }
                    (Some(_), Err(e)) => {
                        panic!("{src}: the fast path accepted what ANTLR refuses: {e}")
                    }
                }
            }
        }
        assert!(total > 2000, "{total} expressions found");
        assert!(
            fast_path > 1000,
            "only {fast_path} of {total} took the fast path"
        );
    }
}
