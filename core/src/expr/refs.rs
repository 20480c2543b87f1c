//! What an expression refers to: root variables, the first field read from each, and the functions
//! it calls.
//!
//! The dependency graph is built from these: a template expression that names another resource's id
//! depends on it. Comprehension variables (`x` in `items.all(x, x.ready)`, and the accumulator) are
//! bound locally and are not references. Namespaced calls such as `base64.encode(x)` parse as a member
//! call on an identifier `base64`; when the environment knows `base64.encode` that identifier is a
//! namespace, not a variable.

use std::collections::{BTreeMap, BTreeSet};

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::cel::is_known_function;

/// References found in one expression.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    /// Free identifiers (variables) the expression reads.
    pub roots: BTreeSet<String>,
    /// For each root, the first field selected from it when that is a literal field name
    /// (`deployment.status.x` gives `deployment` → `{status}`). A root read whole maps to an empty set.
    pub fields: BTreeMap<String, BTreeSet<String>>,
    /// Functions called by name (global `f(x)`, member `x.f()`, or namespaced `ns.f(x)`), excluding
    /// operators.
    pub functions: BTreeSet<String>,
}

/// Whether the environment has a type of this name (`int`, `list`, `net.IP`, ...).
pub fn is_type_name(name: &str) -> bool {
    super::cel::env().types().find_type(name).is_some()
}

/// Whether a chain of selections on an identifier names a type (`net.CIDR`,
/// `google.protobuf.Duration`). Only the namespaces of the environment's qualified type names are
/// looked at, so ordinary field paths cost one comparison.
fn is_qualified_type(e: &Expr, bound: &[String]) -> bool {
    let mut fields = Vec::new();
    let mut cur = e;
    let root = loop {
        match cur {
            Expr::Select(s) if !s.test => {
                fields.push(s.field.as_str());
                cur = &s.operand.expr;
            }
            Expr::Ident(n) => break n,
            _ => return false,
        }
    };
    if !matches!(root.as_str(), "net" | "kubernetes" | "google") || bound.iter().any(|b| b == root)
    {
        return false;
    }
    let mut name = root.clone();
    for f in fields.iter().rev() {
        name.push('.');
        name.push_str(f);
    }
    is_type_name(&name)
}

/// Walk an expression's AST.
pub fn references(expr: &IdedExpr) -> References {
    let mut refs = References::default();
    let mut bound = Vec::new();
    walk(&expr.expr, &mut bound, &mut refs);
    refs
}

fn is_operator(name: &str) -> bool {
    !name.starts_with(|c: char| c.is_ascii_alphabetic())
}

fn walk(e: &Expr, bound: &mut Vec<String>, refs: &mut References) {
    match e {
        Expr::Unspecified | Expr::Literal(_) => {}
        // A type identifier (`int`, `net.CIDR`, `google.protobuf.Duration`) is not a variable.
        Expr::Ident(name) if is_type_name(name) && !bound.iter().any(|b| b == name) => {}
        Expr::Select(_) if is_qualified_type(e, bound) => {}
        Expr::Ident(name) => {
            if !bound.iter().any(|b| b == name) {
                refs.roots.insert(name.clone());
                refs.fields.entry(name.clone()).or_default();
            }
        }
        Expr::Select(s) => {
            if let Expr::Ident(root) = &s.operand.expr {
                if !bound.iter().any(|b| b == root) {
                    refs.roots.insert(root.clone());
                    refs.fields
                        .entry(root.clone())
                        .or_default()
                        .insert(s.field.clone());
                    return;
                }
            }
            walk(&s.operand.expr, bound, refs);
        }
        Expr::Call(c) => {
            // `a.?b` is a call of the optional-select operator with the field as a string literal.
            if c.func_name == "_?._" && c.args.len() == 2 {
                if let (Expr::Ident(root), Expr::Literal(LiteralValue::String(f))) =
                    (&c.args[0].expr, &c.args[1].expr)
                {
                    if !bound.iter().any(|b| b == root) {
                        refs.roots.insert(root.clone());
                        refs.fields
                            .entry(root.clone())
                            .or_default()
                            .insert(f.inner().to_string());
                        return;
                    }
                }
            }
            let mut target_is_namespace = false;
            if !is_operator(&c.func_name) {
                if let Some(t) = &c.target {
                    if let Expr::Ident(ns) = &t.expr {
                        let qualified = format!("{ns}.{}", c.func_name);
                        if !bound.iter().any(|b| b == ns) && is_known_function(&qualified) {
                            target_is_namespace = true;
                            refs.functions.insert(qualified);
                        }
                    }
                }
                if !target_is_namespace {
                    refs.functions.insert(c.func_name.clone());
                }
            }
            if let Some(t) = &c.target {
                if !target_is_namespace {
                    walk(&t.expr, bound, refs);
                }
            }
            for a in &c.args {
                walk(&a.expr, bound, refs);
            }
        }
        Expr::List(l) => {
            for el in &l.elements {
                walk(&el.expr, bound, refs);
            }
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    walk(&me.key.expr, bound, refs);
                    walk(&me.value.expr, bound, refs);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                match &entry.expr {
                    EntryExpr::StructField(f) => walk(&f.value.expr, bound, refs),
                    EntryExpr::MapEntry(me) => {
                        walk(&me.key.expr, bound, refs);
                        walk(&me.value.expr, bound, refs);
                    }
                }
            }
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range.expr, bound, refs);
            walk(&c.accu_init.expr, bound, refs);
            let n = bound.len();
            bound.push(c.iter_var.clone());
            if let Some(v2) = &c.iter_var2 {
                bound.push(v2.clone());
            }
            bound.push(c.accu_var.clone());
            walk(&c.loop_cond.expr, bound, refs);
            walk(&c.loop_step.expr, bound, refs);
            walk(&c.result.expr, bound, refs);
            bound.truncate(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::{compile, ExprLimits};
    use super::*;

    fn refs(src: &str) -> References {
        compile(src, &ExprLimits::default()).unwrap().refs
    }

    fn set(xs: &[&str]) -> BTreeSet<String> {
        xs.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn type_identifiers_are_not_variables() {
        // cel-go resolves `int` and `net.CIDR` as types (Kubernetes cidr_test.go "type of CIDR").
        let r = refs(
            "type(x) == int && type(cidr(s)) == net.CIDR && type(d) == google.protobuf.Duration",
        );
        assert_eq!(r.roots, set(&["d", "s", "x"]));
        // A field path whose root happens to be a namespace stays a variable.
        assert_eq!(refs("net.status.ready").roots, set(&["net"]));
    }

    #[test]
    fn roots_and_first_fields() {
        let r = refs("deployment.spec.replicas + svc.?status.orValue(0) + schema.spec.x");
        assert_eq!(r.roots, set(&["deployment", "schema", "svc"]));
        assert_eq!(r.fields["deployment"], set(&["spec"]));
        assert_eq!(r.fields["svc"], set(&["status"]));
    }

    #[test]
    fn comprehension_variables_are_not_references() {
        let r = refs("items.all(i, i.ready) && items.map(x, x.name).exists(y, y == other)");
        assert_eq!(r.roots, set(&["items", "other"]));
        let r = refs("cel.bind(v, schema.spec.a, v + v)");
        assert_eq!(r.roots, set(&["schema"]));
    }

    #[test]
    fn namespaced_functions_are_not_variables() {
        let r = refs("base64.encode(bytes(schema.spec.x))");
        assert_eq!(r.roots, set(&["schema"]));
        assert!(r.functions.contains("base64.encode"));
    }

    #[test]
    fn has_and_index_count_as_reads() {
        let r = refs("has(a.b) ? c[0].d : e['f']");
        assert_eq!(r.roots, set(&["a", "c", "e"]));
        assert_eq!(r.fields["a"], set(&["b"]));
        assert!(r.fields["c"].is_empty());
    }
}
