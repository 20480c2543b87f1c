//! A static type checker over the cel crate's AST.
//!
//! The cel crate parses and evaluates but does not check types; kro relies on cel-go's checker to
//! reject templates at definition time. This module infers the type of an expression from the
//! types of its variables ([`Type`], usually from OpenAPI schemas) and the signatures of the
//! functions in kiln's environment, and reports what cel-go would reject: fields a schema does not
//! have, selection on scalars, operators applied to the wrong types. It is deliberately lenient
//! where it cannot be sure (anything involving `dyn` passes), so it never rejects a template that
//! would evaluate.

use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};

use super::cel::is_known_function;
use super::library::runtime;

/// The type of kro's conditions (`runtime.newCondition`, `runtime.condition`).
const CONDITION: &str = runtime::CONDITION_TYPE;
use super::types::Type;
use crate::openapi::NodeChild;

/// Variables in scope, innermost last.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    vars: Vec<(String, Type)>,
}

impl Scope {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declare a variable (shadowing an outer one of the same name).
    pub fn declare(&mut self, name: impl Into<String>, t: Type) {
        self.vars.push((name.into(), t));
    }

    fn lookup(&self, name: &str) -> Option<&Type> {
        self.vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, t)| t)
    }

    fn is_bound(&self, name: &str) -> bool {
        self.lookup(name).is_some()
    }
}

/// The inferred type of an expression, or the first type error in it (cel-go's wording). The
/// scope is borrowed mutably for comprehension variables and left as it was found.
pub fn infer(e: &IdedExpr, scope: &mut Scope) -> Result<Type, String> {
    let n = scope.vars.len();
    let t = infer_expr(&e.expr, scope, 0);
    scope.vars.truncate(n);
    t
}

impl Scope {
    /// Number of variables declared, for [`Scope::truncate`].
    pub fn len(&self) -> usize {
        self.vars.len()
    }

    /// Whether nothing is declared.
    pub fn is_empty(&self) -> bool {
        self.vars.is_empty()
    }

    /// The variables, innermost last (the editor completes their names).
    pub fn vars(&self) -> impl Iterator<Item = (&str, &Type)> {
        self.vars.iter().map(|(n, t)| (n.as_str(), t))
    }

    /// Forget the variables declared after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        self.vars.truncate(n);
    }
}

/// Recursion bound: expressions are already limited in nesting at compile time; this guards the
/// checker against macro expansions that nest deeper than the source.
const MAX_DEPTH: usize = 256;

fn no_overload(f: &str, args: &[&Type]) -> String {
    let list: Vec<String> = args.iter().map(|t| t.to_string()).collect();
    format!(
        "found no matching overload for '{f}' applied to '({})'",
        list.join(", ")
    )
}

/// The more precise of two types for the same value (`list(dyn)` and `list(int)` → `list(int)`).
fn join(a: &Type, b: &Type) -> Type {
    match (a, b) {
        (Type::Dyn, t) | (t, Type::Dyn) => t.clone(),
        (Type::Null, t) | (t, Type::Null) => t.clone(),
        (Type::List(x), Type::List(y)) => Type::list(join(x, y)),
        (Type::Map(k1, v1), Type::Map(k2, v2)) => Type::map(join(k1, k2), join(v1, v2)),
        (Type::Optional(x), Type::Optional(y)) => Type::optional(join(x, y)),
        (x, y) if x.to_string() == y.to_string() => x.clone(),
        _ => Type::Dyn,
    }
}

fn literal(l: &LiteralValue) -> Type {
    match l {
        LiteralValue::Boolean(_) => Type::Bool,
        LiteralValue::Bytes(_) => Type::Bytes,
        LiteralValue::Double(_) => Type::Double,
        LiteralValue::Int(_) => Type::Int,
        LiteralValue::Null => Type::Null,
        LiteralValue::String(_) => Type::String,
        LiteralValue::UInt(_) => Type::Uint,
    }
}

/// Field selection `t.field`.
fn select(t: &Type, field: &str) -> Result<Type, String> {
    match t {
        Type::Dyn => Ok(Type::Dyn),
        Type::Object(n) => match n.field(field) {
            NodeChild::Node(c) => Ok(Type::of_node(&c)),
            NodeChild::Anything => Ok(Type::Dyn),
            NodeChild::Missing => {
                // The nearest declared field, for the message and an editor's quick fix
                // (`suggest::suggested_in` reads it back).
                let declared = n.value().get("properties").and_then(|p| p.as_object());
                let near = declared
                    .and_then(|p| crate::suggest::nearest(field, p.keys().map(String::as_str)));
                Err(match near {
                    Some(s) => format!(
                        "undefined field '{field}' ({})",
                        crate::suggest::did_you_mean(s)
                    ),
                    None => format!("undefined field '{field}'"),
                })
            }
        },
        Type::Map(_, v) => Ok((**v).clone()),
        Type::Optional(inner) => Ok(Type::optional(select(inner, field)?)),
        // kro's conditionTypeProvider: a condition has exactly these four string fields, so a
        // misspelled one fails when the definition is built.
        Type::Opaque(n) if *n == CONDITION => {
            if runtime::CONDITION_KEYS.contains(&field) {
                Ok(Type::String)
            } else {
                Err(format!("undefined field '{field}'"))
            }
        }
        Type::Opaque(_) => Ok(Type::Dyn),
        other if other.is_concrete_scalar() || matches!(other, Type::List(_)) => {
            Err(format!("type '{other}' does not support field selection"))
        }
        _ => Ok(Type::Dyn),
    }
}

/// Indexing `t[key]`.
fn index(t: &Type, key: &Type, key_expr: &Expr) -> Result<Type, String> {
    match t {
        Type::Dyn => Ok(Type::Dyn),
        Type::List(el) => {
            if key.certainly_not(&[&Type::Int, &Type::Uint]) {
                return Err(no_overload("_[_]", &[t, key]));
            }
            Ok((**el).clone())
        }
        Type::Map(_, v) => Ok((**v).clone()),
        Type::Object(_) => match key_expr {
            Expr::Literal(LiteralValue::String(s)) => select(t, s.inner()),
            _ => Ok(Type::Dyn),
        },
        Type::Optional(inner) => Ok(Type::optional(index(inner, key, key_expr)?)),
        other if other.is_concrete_scalar() && !matches!(other, Type::Null) => {
            Err(no_overload("_[_]", &[t, key]))
        }
        _ => Ok(Type::Dyn),
    }
}

fn arithmetic(op: &str, a: &Type, b: &Type) -> Result<Type, String> {
    use Type::*;
    if a.is_dyn() || b.is_dyn() {
        // One side unknown: the result has the known side's type when the operator preserves it.
        let known = if a.is_dyn() { b } else { a };
        return Ok(match (op, known) {
            ("_+_", Int | Uint | Double | String | Bytes | List(_)) => known.clone(),
            ("_-_" | "_*_" | "_/_" | "_%_", Int | Uint | Double) => known.clone(),
            _ => Dyn,
        });
    }
    let ok = match (op, a, b) {
        (_, Int, Int) | (_, Uint, Uint) => Some(a.clone()),
        ("_+_" | "_-_" | "_*_" | "_/_", Double, Double) => Some(Double),
        ("_+_", String, String) | ("_+_", Bytes, Bytes) => Some(a.clone()),
        ("_+_", List(x), List(y)) => Some(Type::list(join(x, y))),
        ("_+_" | "_-_", Duration, Duration) => Some(Duration),
        ("_+_", Timestamp, Duration) | ("_+_", Duration, Timestamp) => Some(Timestamp),
        ("_-_", Timestamp, Duration) => Some(Timestamp),
        ("_-_", Timestamp, Timestamp) => Some(Duration),
        _ => None,
    };
    match ok {
        Some(t) => Ok(t),
        // Library objects (quantities, IPs) and int-or-string values are not ours to judge.
        None if matches!(
            a,
            Opaque(_) | IntOrString | Optional(_) | Object(_) | Map(..)
        ) || matches!(
            b,
            Opaque(_) | IntOrString | Optional(_) | Object(_) | Map(..)
        ) =>
        {
            Ok(Dyn)
        }
        None => Err(no_overload(op, &[a, b])),
    }
}

/// Return types of the environment's named functions (global or member), by name. Arguments are
/// only checked where a wrong type is certain and the function has a single meaning.
fn function(name: &str, target: Option<&Type>, args: &[Type]) -> Result<Type, std::string::String> {
    use Type::*;
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Dyn);
    let recv = target.cloned().unwrap_or_else(|| arg(0));
    let string_method = |ret: Type| -> Result<Type, std::string::String> {
        if let Some(t) = target {
            if t.certainly_not(&[&String]) {
                let mut all: Vec<&Type> = vec![t];
                all.extend(args.iter());
                return Err(no_overload(name, &all));
            }
        }
        Ok(ret)
    };
    if let Some(Opaque(r)) = target {
        if *r == runtime::RUNTIME_TYPE {
            // kro's runtime library: newCondition(map(string, string)) and condition(dyn, string).
            let ok = match name {
                "newCondition" => {
                    args.len() == 1
                        && match &args[0] {
                            Map(k, v) => {
                                !k.certainly_not(&[&String]) && !v.certainly_not(&[&String])
                            }
                            t => !t.certainly_not(&[&Map(Box::new(Dyn), Box::new(Dyn))]),
                        }
                }
                "condition" => args.len() == 2 && !args[1].certainly_not(&[&String]),
                _ => false,
            };
            if !ok {
                let mut all: Vec<&Type> = vec![target.expect("matched")];
                all.extend(args.iter());
                return Err(no_overload(name, &all));
            }
            return Ok(Opaque(CONDITION));
        }
    }
    if matches!(name, "newCondition" | "condition") {
        // Only `runtime` has these (kro's runtime library declares them as its members).
        let mut all: Vec<&Type> = target.into_iter().collect();
        all.extend(args.iter());
        return Err(no_overload(name, &all));
    }
    Ok(match name {
        "size" => {
            if recv.certainly_not(&[
                &String,
                &Bytes,
                &List(Box::new(Dyn)),
                &Map(Box::new(Dyn), Box::new(Dyn)),
            ]) && !matches!(recv, Object(_))
            {
                return Err(no_overload("size", &[&recv]));
            }
            Int
        }
        "string" => String,
        "int" => Int,
        "uint" => Uint,
        "double" => Double,
        "bool" => Bool,
        "bytes" => Bytes,
        "duration" => Duration,
        "timestamp" => Timestamp,
        "type" => TypeValue,
        "dyn" => Dyn,
        "contains" | "startsWith" | "endsWith" | "matches" => string_method(Bool)?,
        "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt" | "format" => {
            string_method(String)?
        }
        "split" => string_method(list(String))?,
        "join" => String,
        "quote" | "strings.quote" => String,
        "reverse" => match target {
            Some(t @ List(_)) => t.clone(),
            Some(String) => String,
            _ => Dyn,
        },
        "indexOf" | "lastIndexOf" => Int,
        "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate"
        | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => Int,
        "math.greatest" | "math.least" => args
            .iter()
            .fold(Dyn, |acc, t| join(&acc, &element_or_self(t))),
        "math.ceil" | "math.floor" | "math.round" | "math.trunc" | "math.sqrt" => Double,
        "math.abs" | "math.sign" => arg(0),
        "math.isNaN" | "math.isInf" | "math.isFinite" => Bool,
        "math.bitAnd" | "math.bitOr" | "math.bitXor" | "math.bitNot" | "math.bitShiftLeft"
        | "math.bitShiftRight" => arg(0),
        "base64.encode" => String,
        "base64.decode" => Bytes,
        "flatten" => match &recv {
            List(inner) => match &**inner {
                List(x) => list((**x).clone()),
                _ => list(Dyn),
            },
            _ => list(Dyn),
        },
        "distinct" | "sort" | "sortBy" | "slice" => match &recv {
            l @ List(_) => l.clone(),
            _ => list(Dyn),
        },
        "lists.range" => list(Int),
        "first" | "last" => optional(recv.element()),
        "sets.contains" | "sets.equivalent" | "sets.intersects" => Bool,
        "hash.fnv64a" | "hash.sha256" | "hash.md5" => String,
        "json.marshal" => String,
        "json.unmarshal" => Dyn,
        "random.seededString" => String,
        "random.seededInt" => Int,
        "merge" | "deepMerge" => {
            let a = recv.clone();
            let b = if target.is_some() { arg(0) } else { arg(1) };
            join(&a, &b)
        }
        "lists.setAtIndex" | "lists.insertAtIndex" | "lists.removeAtIndex" => arg(0),
        "sum" | "min" | "max" => recv.element(),
        "isSorted" => Bool,
        "find" => String,
        "findAll" => list(String),
        "url" => Opaque("net.URL"),
        "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" => String,
        "getQuery" => map(String, list(String)),
        "quantity" => Opaque("kubernetes.Quantity"),
        "add" | "sub" => Opaque("kubernetes.Quantity"),
        "compareTo" | "sign" | "asInteger" | "family" | "prefixLength" | "major" | "minor"
        | "patch" => Int,
        "asApproximateFloat" => Double,
        "ip" => Opaque("net.IP"),
        "cidr" | "masked" => Opaque("net.CIDR"),
        "semver" => Opaque("kubernetes.Semver"),
        "isURL"
        | "isQuantity"
        | "isLessThan"
        | "isGreaterThan"
        | "isInteger"
        | "isIP"
        | "ip.isCanonical"
        | "isUnspecified"
        | "isLoopback"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "isCIDR"
        | "containsIP"
        | "containsCIDR"
        | "isSemver" => Bool,
        "optional.of" | "optional.ofNonZeroValue" => optional(arg(0)),
        "optional.none" => optional(Dyn),
        "hasValue" => Bool,
        "value" => match &recv {
            Optional(t) => (**t).clone(),
            _ => Dyn,
        },
        "orValue" => match &recv {
            Optional(t) => join(t, &arg(0)),
            _ => Dyn,
        },
        "or" => match &recv {
            o @ Optional(_) => o.clone(),
            _ => Dyn,
        },
        _ => Dyn,
    })
}

fn list(t: Type) -> Type {
    Type::list(t)
}
fn map(k: Type, v: Type) -> Type {
    Type::map(k, v)
}
fn optional(t: Type) -> Type {
    Type::optional(t)
}

/// `math.greatest([1, 2])` and `math.greatest(1, 2)` both give an int.
fn element_or_self(t: &Type) -> Type {
    match t {
        Type::List(el) => (**el).clone(),
        t => t.clone(),
    }
}

/// Both operands of `&&`/`||` must be bools (dyn passes); the message lists them in order.
fn must_be_bools(op: &str, a: &Type, b: &Type) -> Result<(), String> {
    let bad = |t: &Type| t.certainly_not(&[&Type::Bool]) && !matches!(t, Type::Optional(_));
    if bad(a) || bad(b) {
        return Err(no_overload(op, &[a, b]));
    }
    Ok(())
}

fn infer_expr(e: &Expr, scope: &mut Scope, depth: usize) -> Result<Type, String> {
    if depth > MAX_DEPTH {
        return Ok(Type::Dyn);
    }
    let d = depth + 1;
    match e {
        Expr::Unspecified => Ok(Type::Dyn),
        Expr::Literal(l) => Ok(literal(l)),
        // Unknown identifiers are reported by the reference check, with kro's wording.
        Expr::Ident(name) => Ok(scope.lookup(name).cloned().unwrap_or(Type::Dyn)),
        Expr::Select(s) => {
            let t = infer_expr(&s.operand.expr, scope, d)?;
            let f = select(&t, &s.field)?;
            Ok(if s.test { Type::Bool } else { f })
        }
        Expr::List(l) => {
            // Elements of different types make a `dyn` list, as cel-go types heterogeneous
            // literals.
            let mut el = Type::Dyn;
            for x in &l.elements {
                el = join(&el, &infer_expr(&x.expr, scope, d)?);
            }
            Ok(Type::list(el))
        }
        Expr::Map(m) => {
            let (mut k, mut v) = (None::<Type>, None::<Type>);
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    let kt = infer_expr(&me.key.expr, scope, d)?;
                    let vt = infer_expr(&me.value.expr, scope, d)?;
                    k = Some(k.map_or(kt.clone(), |k| join(&k, &kt)));
                    v = Some(v.map_or(vt.clone(), |v| join(&v, &vt)));
                }
            }
            Ok(Type::map(k.unwrap_or(Type::Dyn), v.unwrap_or(Type::Dyn)))
        }
        Expr::Struct(_) => Ok(Type::Dyn),
        Expr::Comprehension(c) => {
            let range = infer_expr(&c.iter_range.expr, scope, d)?;
            let init = infer_expr(&c.accu_init.expr, scope, d)?;
            let n = scope.vars.len();
            match (&c.iter_var2, &range) {
                (Some(v2), Type::List(el)) => {
                    scope.declare(c.iter_var.clone(), Type::Int);
                    scope.declare(v2.clone(), (**el).clone());
                }
                (Some(v2), Type::Map(k, v)) => {
                    scope.declare(c.iter_var.clone(), (**k).clone());
                    scope.declare(v2.clone(), (**v).clone());
                }
                (Some(v2), _) => {
                    scope.declare(c.iter_var.clone(), Type::Dyn);
                    scope.declare(v2.clone(), Type::Dyn);
                }
                (None, r) => scope.declare(c.iter_var.clone(), r.element()),
            }
            scope.declare(c.accu_var.clone(), init.clone());
            let step = infer_expr(&c.loop_step.expr, scope, d);
            let cond = infer_expr(&c.loop_cond.expr, scope, d);
            let accu = match &step {
                Ok(s) => join(&init, s),
                Err(_) => init.clone(),
            };
            scope.declare(c.accu_var.clone(), accu);
            let result = infer_expr(&c.result.expr, scope, d);
            scope.vars.truncate(n);
            step?;
            cond?;
            result
        }
        Expr::Call(c) => infer_call(c, scope, d),
    }
}

fn infer_call(c: &cel::common::ast::CallExpr, scope: &mut Scope, d: usize) -> Result<Type, String> {
    let name = c.func_name.as_str();
    // Namespaced functions (`base64.encode(x)`) parse as a call on an identifier.
    let mut target: Option<Type> = None;
    let mut qualified = None;
    if let Some(t) = &c.target {
        if let Expr::Ident(ns) = &t.expr {
            let q = format!("{ns}.{name}");
            if !scope.is_bound(ns) && is_known_function(&q) {
                qualified = Some(q);
            }
        }
        if qualified.is_none() {
            target = Some(infer_expr(&t.expr, scope, d)?);
        }
    }
    let mut args = Vec::with_capacity(c.args.len());
    for a in &c.args {
        args.push(infer_expr(&a.expr, scope, d)?);
    }
    let arg = |i: usize| args.get(i).cloned().unwrap_or(Type::Dyn);
    match name {
        "_&&_" | "_||_" => {
            must_be_bools(name, &arg(0), &arg(1))?;
            Ok(Type::Bool)
        }
        "!_" => {
            if arg(0).certainly_not(&[&Type::Bool]) {
                return Err(no_overload(name, &[&arg(0)]));
            }
            Ok(Type::Bool)
        }
        "@not_strictly_false" | "@in" | "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
            Ok(Type::Bool)
        }
        "-_" => {
            let t = arg(0);
            if t.certainly_not(&[&Type::Int, &Type::Double, &Type::Duration]) {
                return Err(no_overload(name, &[&t]));
            }
            Ok(t)
        }
        "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => arithmetic(name, &arg(0), &arg(1)),
        "_?_:_" => {
            let cond = arg(0);
            if cond.certainly_not(&[&Type::Bool]) {
                return Err(format!(
                    "found no matching overload for '_?_:_' applied to '({cond}, {}, {})'",
                    arg(1),
                    arg(2)
                ));
            }
            Ok(join(&arg(1), &arg(2)))
        }
        "_[_]" => index(&arg(0), &arg(1), &c.args[1].expr),
        "_[?_]" => Ok(Type::optional(index(&arg(0), &arg(1), &c.args[1].expr)?)),
        "_?._" => match c.args.get(1).map(|a| &a.expr) {
            Some(Expr::Literal(LiteralValue::String(f))) => {
                let inner = match arg(0) {
                    Type::Optional(t) => *t,
                    t => t,
                };
                Ok(Type::optional(select(&inner, f.inner())?))
            }
            _ => Ok(Type::optional(Type::Dyn)),
        },
        // kiln's metering and two-variable helpers (see expr::macros): they pass values through.
        "@kiln_go" | "@kiln_size" | "@kiln_grow" | "@kiln_cost" | "@kiln_range" | "@kiln_tick" => {
            Ok(arg(0))
        }
        // `s.matches(re)` after kiln's macros (RE2 syntax): checked as what was written.
        "@kiln_matches" => function("matches", Some(&arg(0)), &args[1.min(args.len())..]),
        "@kiln_format_args" => Ok(arg(1)),
        "@kiln_insert" => Ok(join(&arg(0), &Type::map(arg(1), arg(2)))),
        "@kiln_insert_entry" => Ok(join(&arg(0), &arg(1))),
        "@kiln_keys" => Ok(match arg(0) {
            Type::List(_) => Type::list(Type::Int),
            Type::Map(k, _) => Type::list(*k),
            Type::Object(_) => Type::list(Type::String),
            _ => Type::list(Type::Dyn),
        }),
        _ => {
            let fname = qualified.as_deref().unwrap_or(name);
            function(fname, target.as_ref(), &args)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::{compile, ExprLimits};
    use super::*;
    use crate::openapi::Schemas;

    fn check(src: &str, scope: &Scope) -> Result<String, String> {
        let c = compile(src, &ExprLimits::default()).unwrap();
        infer(c.program.expression(), &mut scope.clone()).map(|t| t.to_string())
    }

    fn deployment_scope() -> Scope {
        let schemas = Schemas::bundled();
        let d = schemas.lookup("apps/v1", "Deployment").unwrap();
        let mut s = Scope::new();
        s.declare("deployment", Type::Object(d.node()));
        let spec = serde_json::json!({
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {
                "name": {"type": "string"},
                "replicas": {"type": "integer"},
                "regions": {"type": "array", "items": {"type": "string"}},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
            }}}
        });
        s.declare("schema", Type::Object(schemas.node_of(&spec, true)));
        s
    }

    #[test]
    fn literals_and_operators() {
        let s = Scope::new();
        assert_eq!(check("1 + 2", &s).unwrap(), "int");
        assert_eq!(check("'a' + 'b'", &s).unwrap(), "string");
        assert_eq!(check("[1, 2] + [3]", &s).unwrap(), "list(int)");
        assert_eq!(check("{'a': 1}", &s).unwrap(), "map(string, int)");
        assert_eq!(check("1 < 2 && true", &s).unwrap(), "bool");
        assert_eq!(
            check("1 + 'a'", &s).unwrap_err(),
            "found no matching overload for '_+_' applied to '(int, string)'"
        );
        assert_eq!(
            check("1 + 1.5", &s).unwrap_err(),
            "found no matching overload for '_+_' applied to '(int, double)'"
        );
        let refused = check("1 && true", &s).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("found no matching overload for '_&&_' applied to '(int, bool)'"),
            "{refused}"
        );
    }

    #[test]
    fn schema_fields() {
        let s = deployment_scope();
        assert_eq!(check("schema.spec.replicas", &s).unwrap(), "int");
        assert_eq!(check("schema.spec.name + '-x'", &s).unwrap(), "string");
        assert_eq!(check("schema.spec.regions", &s).unwrap(), "list(string)");
        assert_eq!(check("schema.spec.labels.app", &s).unwrap(), "string");
        assert_eq!(check("schema.spec.free.any.thing", &s).unwrap(), "dyn");
        assert_eq!(check("schema.metadata.name", &s).unwrap(), "string");
        assert_eq!(
            check("schema.spec.nope", &s).unwrap_err(),
            "undefined field 'nope'"
        );
        assert_eq!(
            check("schema.spec.name.x", &s).unwrap_err(),
            "type 'string' does not support field selection"
        );
    }

    #[test]
    fn resource_fields() {
        let s = deployment_scope();
        assert_eq!(check("deployment.spec.replicas", &s).unwrap(), "int");
        assert_eq!(
            check("deployment.status.availableReplicas", &s).unwrap(),
            "int"
        );
        assert_eq!(
            check("deployment.spec.template.spec.containers[0].image", &s).unwrap(),
            "string"
        );
        // The nearest declared field is named; a field near none is named alone.
        assert_eq!(
            check("deployment.spec.replica", &s).unwrap_err(),
            "undefined field 'replica' (did you mean \"replicas\"?)"
        );
        assert_eq!(
            check("deployment.spec.zzz", &s).unwrap_err(),
            "undefined field 'zzz'"
        );
        assert_eq!(check("has(deployment.spec.replicas)", &s).unwrap(), "bool");
        assert_eq!(
            check("deployment.?status.?readyReplicas.orValue(0)", &s).unwrap(),
            "int"
        );
    }

    #[test]
    fn runtime_conditions_are_typed() {
        // kro pkg/cel/library/runtime.go: newCondition and condition are members of `runtime`
        // returning kro.run.Condition, whose four fields are strings (conditionTypeProvider);
        // runtime_test.go TestRuntimeFunctionsRequireRuntimeReceiver.
        let mut scope = Scope::new();
        scope.declare("runtime", Type::Opaque(runtime::RUNTIME_TYPE));
        scope.declare("schema", Type::Dyn);
        let c = "runtime.newCondition({type: 'A', status: 'True'})";
        assert_eq!(check(c, &scope).unwrap(), "kro.run.Condition");
        assert_eq!(check(&format!("{c}.reason"), &scope).unwrap(), "string");
        assert_eq!(
            check(&format!("[{c}]"), &scope).unwrap(),
            "list(kro.run.Condition)"
        );
        assert_eq!(
            check("runtime.condition(schema, 'Ready').status", &scope).unwrap(),
            "string"
        );
        assert!(check(&format!("{c}.stauts"), &scope)
            .unwrap_err()
            .contains("undefined field 'stauts'"));
        assert!(check("runtime.condition(schema, 1)", &scope)
            .unwrap_err()
            .contains("no matching overload"));
        assert!(check("newCondition({type: 'A', status: 'True'})", &scope)
            .unwrap_err()
            .contains("no matching overload"));
        assert!(check("condition(schema, 'X')", &scope)
            .unwrap_err()
            .contains("no matching overload"));
    }

    #[test]
    fn macros_and_functions() {
        let s = deployment_scope();
        assert_eq!(
            check("schema.spec.regions.map(r, r + '-x')", &s).unwrap(),
            "list(string)"
        );
        assert_eq!(
            check("schema.spec.regions.filter(r, r != 'a')", &s).unwrap(),
            "list(string)"
        );
        assert_eq!(
            check("schema.spec.regions.all(r, r.startsWith('e'))", &s).unwrap(),
            "bool"
        );
        assert_eq!(check("size(schema.spec.regions)", &s).unwrap(), "int");
        assert_eq!(check("cel.bind(x, 2, x * 3)", &s).unwrap(), "int");
        assert_eq!(check("base64.encode(b'x')", &s).unwrap(), "string");
        assert_eq!(
            check("schema.spec.labels.map(k, schema.spec.labels[k] + 'x')", &s).unwrap(),
            "list(string)"
        );
        assert_eq!(
            check("schema.spec.labels.transformMap(k, v, v + 'x')", &s).unwrap(),
            "map(string, string)"
        );
        assert_eq!(
            check("schema.spec.regions.transformList(i, r, i)", &s).unwrap(),
            "list(int)"
        );
        let refused = check("schema.spec.regions.all(i, r, r + 1 > 0)", &s).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("found no matching overload for '_+_' applied to '(string, int)'"),
            "{refused}"
        );
        assert_eq!(
            check("schema.spec.regions.all(i, r, size(r) > i)", &s).unwrap(),
            "bool"
        );
        // `matches` reaches the checker as kiln's RE2 `@kiln_matches` and is checked as written.
        assert_eq!(
            check("schema.spec.regions.all(r, r.matches('^e'))", &s).unwrap(),
            "bool"
        );
        assert_eq!(
            check("matches(schema.spec.regions[0], '^e')", &s).unwrap(),
            "bool"
        );
        let refused = check("schema.spec.replicas.matches('a')", &s).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("found no matching overload for 'matches' applied to '(int, string)'"),
            "{refused}"
        );
        let refused = check("schema.spec.replicas.startsWith('a')", &s).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("found no matching overload for 'startsWith' applied to '(int, string)'"),
            "{refused}"
        );
        assert_eq!(check("json.unmarshal('{}')", &s).unwrap(), "dyn");
    }
}
