//! Which parts of each variable an expression can read, so a unit binds only those.
//!
//! Binding a variable converts its JSON into CEL values: every map is rebuilt as a hash map. A
//! web-app unit binds the instance and every rendered object another resource reads, whole, yet
//! its expressions read a handful of fields (`deployment.metadata.labels`, `schema.spec.port`).
//! Converting only what can be read took a fifth of the instructions off a fleet.
//!
//! The analysis is deliberately simple, so that it is obviously sound: only a chain of field
//! selections from a free variable (`a.b.c`, `has(a.b.c)`, `a.?b`) narrows what is read. Any other
//! use of a value (a call on it, an index into it, comparing it, iterating it, returning it) reads
//! it whole. An expression that reads a field through such a chain reads exactly that field: CEL
//! cannot observe the sibling fields through it, and a missing field is missing in the pruned
//! value too, so results and error messages are the same.

use std::collections::BTreeMap;

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use cel::common::types::{CelMap, CelMapKey};
use cel::common::value::Val;
use serde_json::Value as Json;

use super::value::to_val;

/// What of one value can be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reads {
    /// All of it.
    Whole,
    /// Only these fields of it (a map), each read as far as its own [`Reads`] says.
    Fields(BTreeMap<String, Reads>),
}

impl Reads {
    /// Nothing (no field of the value is read).
    pub fn nothing() -> Self {
        Reads::Fields(BTreeMap::new())
    }

    /// What either `self` or `other` reads.
    pub fn merge(&mut self, other: Reads) {
        match (&mut *self, other) {
            (Reads::Whole, _) => {}
            (me, Reads::Whole) => *me = Reads::Whole,
            (Reads::Fields(mine), Reads::Fields(theirs)) => {
                for (k, r) in theirs {
                    match mine.get_mut(&k) {
                        Some(m) => m.merge(r),
                        None => {
                            mine.insert(k, r);
                        }
                    }
                }
            }
        }
    }

    /// Mark a field path (relative to this value) as read whole.
    fn insert(&mut self, path: &[&str]) {
        let Some((first, rest)) = path.split_first() else {
            *self = Reads::Whole;
            return;
        };
        match self {
            Reads::Whole => {}
            Reads::Fields(fields) => fields
                .entry((*first).to_string())
                .or_insert_with(Reads::nothing)
                .insert(rest),
        }
    }

    /// `v` as a CEL value, holding only what can be read. A value that is not a map where fields
    /// are read is converted whole, so that selecting from it fails exactly as it would have.
    pub fn to_val(&self, v: &Json) -> Box<dyn Val> {
        match (self, v) {
            (Reads::Fields(fields), Json::Object(m)) => {
                let map: std::collections::HashMap<CelMapKey, Box<dyn Val>> = fields
                    .iter()
                    .filter_map(|(k, r)| {
                        m.get(k).map(|v| (CelMapKey::from(k.clone()), r.to_val(v)))
                    })
                    .collect();
                Box::new(CelMap::from(map))
            }
            _ => to_val(v),
        }
    }
}

/// The variable and fields of an expression that is nothing but a chain of field selections
/// (`a.b.c` → `[a, b, c]`; not `has()`, not optional selection).
pub fn field_path(expr: &IdedExpr) -> Option<Vec<String>> {
    match &expr.expr {
        Expr::Ident(name) => Some(vec![name.clone()]),
        Expr::Select(s) if !s.test => {
            let mut path = field_path(&s.operand)?;
            path.push(s.field.clone());
            Some(path)
        }
        _ => None,
    }
}

/// What an expression reads of each free variable.
pub fn reads(expr: &IdedExpr) -> BTreeMap<String, Reads> {
    let mut out = BTreeMap::new();
    walk(expr, &mut Vec::new(), &mut out);
    out
}

fn record(out: &mut BTreeMap<String, Reads>, root: &str, path: &[&str]) {
    out.entry(root.to_string())
        .or_insert_with(Reads::nothing)
        .insert(path);
}

/// The free variable and field path of a selection chain (`a.b.c` → `a`, `[b, c]`), if `e` is one.
/// `a.?b` is the optional-select operator with the field as a string literal.
fn chain<'e>(e: &'e IdedExpr, bound: &[String], path: &mut Vec<&'e str>) -> Option<&'e str> {
    match &e.expr {
        Expr::Ident(name) if !bound.iter().any(|b| b == name) => Some(name),
        Expr::Select(s) => {
            let root = chain(&s.operand, bound, path)?;
            path.push(&s.field);
            Some(root)
        }
        // The evaluation budget's charge passes its value through (`super::meter`).
        Expr::Call(c)
            if c.func_name == super::budget::COST && c.args.len() == 1 && c.target.is_none() =>
        {
            chain(&c.args[0], bound, path)
        }
        Expr::Call(c) if c.func_name == "_?._" && c.args.len() == 2 && c.target.is_none() => {
            let Expr::Literal(LiteralValue::String(f)) = &c.args[1].expr else {
                return None;
            };
            let root = chain(&c.args[0], bound, path)?;
            path.push(f.inner());
            Some(root)
        }
        _ => None,
    }
}

fn walk(e: &IdedExpr, bound: &mut Vec<String>, out: &mut BTreeMap<String, Reads>) {
    let mut path = Vec::new();
    if let Some(root) = chain(e, bound, &mut path) {
        record(out, root, &path);
        return;
    }
    match &e.expr {
        Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => {}
        Expr::Select(s) => walk(&s.operand, bound, out),
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                walk(t, bound, out);
            }
            for a in &c.args {
                walk(a, bound, out);
            }
        }
        Expr::List(l) => {
            for el in &l.elements {
                walk(el, bound, out);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    walk(&me.key, bound, out);
                    walk(&me.value, bound, out);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => walk(&f.value, bound, out),
                    EntryExpr::MapEntry(me) => {
                        walk(&me.key, bound, out);
                        walk(&me.value, bound, out);
                    }
                }
            }
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range, bound, out);
            walk(&c.accu_init, bound, out);
            let n = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2.clone());
            }
            bound.push(c.accu_var.clone());
            walk(&c.loop_cond, bound, out);
            walk(&c.loop_step, bound, out);
            walk(&c.result, bound, out);
            bound.truncate(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::cel::{compile, new_context, ExprLimits};
    use crate::expr::value::{from_cel, to_cel};
    use serde_json::json;

    fn reads_of(src: &str) -> BTreeMap<String, Reads> {
        reads(
            compile(src, &ExprLimits::default())
                .unwrap()
                .program
                .expression(),
        )
    }

    fn fields(entries: &[(&str, Reads)]) -> Reads {
        Reads::Fields(
            entries
                .iter()
                .map(|(k, r)| (k.to_string(), r.clone()))
                .collect(),
        )
    }

    #[test]
    fn selection_chains_narrow_everything_else_reads_whole() {
        let r = reads_of("schema.spec.name + '-' + d.metadata.name");
        assert_eq!(
            r["schema"],
            fields(&[("spec", fields(&[("name", Reads::Whole)]))])
        );
        assert_eq!(
            r["d"],
            fields(&[("metadata", fields(&[("name", Reads::Whole)]))])
        );
        let r = reads_of("schema.spec.labels.merge({'a': schema.metadata.name})");
        assert_eq!(
            r["schema"],
            fields(&[
                ("metadata", fields(&[("name", Reads::Whole)])),
                ("spec", fields(&[("labels", Reads::Whole)])),
            ])
        );
        assert_eq!(reads_of("schema")["schema"], Reads::Whole);
        assert_eq!(
            reads_of("size(schema.spec)")["schema"],
            fields(&[("spec", Reads::Whole)])
        );
        assert_eq!(
            reads_of("schema.spec['x']")["schema"],
            fields(&[("spec", Reads::Whole)])
        );
        assert_eq!(
            reads_of("schema.?spec.x")["schema"],
            fields(&[("spec", fields(&[("x", Reads::Whole)]))])
        );
        // A whole read absorbs field reads of the same value.
        assert_eq!(
            reads_of("schema.spec.a == schema.spec")["schema"],
            fields(&[("spec", Reads::Whole)])
        );
        // Comprehension variables are not the free variable they shadow.
        let r = reads_of("schema.spec.items.map(schema, schema.name)");
        assert_eq!(
            r["schema"],
            fields(&[("spec", fields(&[("items", Reads::Whole)]))])
        );
        assert_eq!(r.len(), 1);
    }

    /// Evaluating with the pruned variable gives the same result, or the same error, as with the
    /// whole variable.
    #[test]
    fn pruned_values_evaluate_the_same() {
        let x = json!({
            "spec": {"name": "web", "port": 80, "labels": {"a": "1"}, "list": [1, 2], "s": "str",
                     "nested": {"deep": {"k": "v", "other": [1]}, "sibling": true}},
            "metadata": {"name": "n", "annotations": {"z": "y"}}
        });
        for src in [
            "x.spec.name",
            "x.spec.port + 1",
            "x.spec.labels",
            "has(x.spec.missing)",
            "has(x.spec.nested.deep.k)",
            "x.spec.missing",
            "x.spec.s.field",
            "x.spec.list.field",
            "x.spec.nested.deep.k + x.metadata.name",
            "x.spec.?nested.?deep.?k.orValue('none')",
            "x.spec.?gone.orValue('none')",
            "size(x.spec.nested)",
            "x.spec.nested.exists(k, k == 'sibling')",
            "x.metadata.annotations == {'z': 'y'}",
            "x.spec.labels.merge({'b': x.spec.name})",
            "cel.bind(s, x.spec, s.name + s.s)",
        ] {
            let c = compile(src, &ExprLimits::default()).unwrap();
            let reads = reads(c.program.expression());
            let r = reads.get("x").cloned().unwrap_or_else(Reads::nothing);
            let mut whole = new_context();
            whole.add_variable_from_value("x", to_cel(&x));
            let mut pruned = new_context();
            pruned.add_variable_as_val("x", r.to_val(&x));
            let a = c.program.execute(&whole).map(|v| from_cel(&v));
            let b = c.program.execute(&pruned).map(|v| from_cel(&v));
            assert_eq!(a, b, "{src}");
        }
    }
}
