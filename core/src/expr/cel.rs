//! The CEL environment kiln evaluates templates in, and compiled expressions.
//!
//! The environment is kro's, as far as the `cel` crate allows: the standard library, the strings,
//! lists, math and encoders extensions, optional types (`.?f`, `[?i]`, `orValue`), `cel.bind`, and
//! kro's `omit()`. It is built once and shared (`Env` and `Program` are `Send + Sync`); a `Context`
//! is made per unit because it is not `Send`.
//!
//! The crate has no checker, so an unknown function would only fail when reached. [`compile`] walks
//! the AST instead and rejects calls to functions the environment does not have, before anything is
//! evaluated.

use std::collections::BTreeSet;
use std::sync::{Arc, OnceLock};

use cel::objects::Opaque;
use cel::parser::Expression;
use cel::{Context, Env, ResolveResult, Value};

use super::refs::{references, References};

/// The compile limits (defined with every other limit in [`crate::limits`]).
pub use crate::limits::{
    ExprLimits, EXPRESSION_MAX_DEPTH as MAX_DEPTH, EXPRESSION_MAX_NESTING as MAX_NESTING,
};

/// The sentinel value `omit()` returns: the field or list element holding it is removed.
#[derive(Debug, PartialEq, Eq)]
pub struct Omit;

impl Opaque for Omit {
    fn runtime_type_name(&self) -> &str {
        "kro.omit"
    }
}

/// Whether a CEL value is the omit sentinel.
pub fn is_omit(v: &Value) -> bool {
    matches!(v, Value::Opaque(o) if o.runtime_type_name() == "kro.omit")
}

/// Functions kiln adds per context (the `cel` crate registers closures on a `Context`), and the
/// names of the overloads the library adds to the environment.
fn is_context_function(name: &str) -> bool {
    name == "omit" || super::library::FUNCTIONS.contains(&name)
}

/// The shared environment.
pub fn env() -> &'static Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(build_env()))
}

fn build_env() -> Env {
    // kiln's metered functions must be declared before the crate's: the first matching overload
    // wins. They take `dyn` where the crate's take concrete types, so nothing clashes.
    let mut env = Env::default();
    super::budget::extend_env(&mut env);
    super::library::declare_first(&mut env);
    // The standard library without the crate's macros: kiln registers its own, metered ones.
    let mut env = env.with_stdlib();
    for m in super::macros::all() {
        env.add_macro(m).expect("each macro registers once");
    }
    // These registrations cannot fail on a fresh stdlib environment: the names are the
    // extensions' own and are declared once.
    for ext in [
        cel::extensions::strings as fn(&mut Env) -> _,
        cel::extensions::lists,
        cel::extensions::math,
        cel::extensions::encoders,
    ] {
        env.add_extension(ext).expect("extension registers once");
    }
    super::library::extend_env(&mut env);
    env
}

/// The shared root context: kiln's functions, registered once per process. Units evaluate in a
/// child scope of it (`root_context().new_inner_scope()`), so a unit costs a few variable inserts
/// instead of registering some sixty closures.
pub fn root_context() -> &'static Context<'static, 'static> {
    static ROOT: OnceLock<Context<'static, 'static>> = OnceLock::new();
    ROOT.get_or_init(new_context)
}

/// A fresh evaluation context with kiln's per-context functions.
pub fn new_context() -> Context<'static, 'static> {
    let mut ctx = Context::with_env(Arc::clone(env()));
    ctx.add_function("omit", || Value::Opaque(Arc::new(Omit)))
        .expect("omit is not a stdlib function");
    super::library::register(&mut ctx);
    super::budget::register(&mut ctx);
    ctx
}

/// Whether the environment knows a function of this name (global or member).
pub fn is_known_function(name: &str) -> bool {
    if is_context_function(name) {
        return true;
    }
    // The crate exposes no lookup by name; registering a function of the same name on a throwaway
    // context is refused exactly when the environment already declares one.
    let mut probe = Context::with_env(Arc::clone(env()));
    probe.add_function(name, |a: i64| a).is_err()
}

/// Turning evaluation errors into messages a template author can act on.
pub trait ExecutionErrorExt {
    /// A message naming the expression, and a hint.
    fn explain(&self, source: &str) -> (String, String);
}

impl ExecutionErrorExt for cel::ExecutionError {
    fn explain(&self, source: &str) -> (String, String) {
        use cel::ExecutionError as E;
        // One line: some errors (the regex crate's) carry line breaks of their own.
        let detail = self
            .to_string()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        let msg = format!("expression {source:?} failed: {detail}");
        let hint = match self {
            E::NoSuchKey(_) => "the field is not set: on the instance, give the schema field a default or guard with has(x.f) or x.?f.orValue(...); on a resource, fields the cluster fills in (status, uid) do not exist offline",
            E::UndeclaredReference(_) => "the identifier is not in scope here",
            E::NoSuchOverload(_) | E::UnsupportedBinaryOperator(..) | E::ValuesNotComparable(..) => {
                "the operand types do not match; convert explicitly, e.g. string(x), int(x), double(x)"
            }
            E::IndexOutOfBounds(_) => "the list is shorter than the index; check size() first",
            E::DivisionByZero(_) | E::RemainderByZero(_) => "guard the divisor",
            E::Overflow(..) => "the result does not fit in 64 bits",
            _ => "check the expression against the values it reads",
        };
        (msg, hint.to_string())
    }
}

/// A parsed expression, macros expanded, ready to evaluate in any [`Context`] made from [`env()`].
///
/// kiln's own rather than the crate's `Program`: the crate builds a `Program` only through
/// `Env::compile`, which parses with its default limits, so honouring kiln's nesting limit meant
/// parsing every expression twice, and the parser is most of a small app's start-up.
#[derive(Debug)]
pub struct Program {
    expression: Expression,
}

impl Program {
    /// Evaluate in `ctx` (no budget: see `expr::budget::execute`).
    pub fn execute(&self, ctx: &Context) -> ResolveResult {
        Value::resolve(&self.expression, ctx)
    }

    /// The expression tree.
    pub fn expression(&self) -> &Expression {
        &self.expression
    }
}

/// A parsed expression with what it references.
#[derive(Debug)]
pub struct Compiled {
    /// The CEL source.
    pub source: String,
    /// The program, shared by every unit that evaluates it.
    pub program: Program,
    /// Variables, fields and functions the expression uses.
    pub refs: References,
    /// When the expression is a plain field path (`schema.spec.name`): the variable, then the
    /// fields. The renderer reads such a path straight from the JSON it would otherwise convert.
    pub field_path: Option<Vec<String>>,
}

/// Why an expression did not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompileError {
    /// CEL syntax error, with 1-based line and column inside the expression when known.
    Syntax {
        /// Parser message.
        message: String,
        /// (line, column) within the expression.
        position: Option<(usize, usize)>,
    },
    /// Calls to functions the environment does not have.
    UnknownFunctions(Vec<String>),
    /// Over a compile limit.
    Limit(String),
}

/// Parse an expression, check it against the limits, and extract its references.
pub fn compile(source: &str, limits: &ExprLimits) -> Result<Compiled, CompileError> {
    compile_with(source, limits, &[])
}

/// [`compile`], also accepting calls to `extra_functions`: functions a front-end registers on its
/// own evaluation contexts (the component helpers), which the shared environment does not know.
pub fn compile_with(
    source: &str,
    limits: &ExprLimits,
    extra_functions: &[&str],
) -> Result<Compiled, CompileError> {
    if source.len() > limits.max_length {
        return Err(CompileError::Limit(format!(
            "expression is {} bytes long, over the limit of {}",
            source.len(),
            limits.max_length
        )));
    }
    let parser = env().parser().max_recursion_depth(limits.max_nesting);
    let max_depth = usize::from(limits.max_depth.min(MAX_DEPTH));
    let program =
        parse_on_big_stack(parser, source, max_depth, limits.max_nesting).map_err(|e| match e {
            CompileError::Limit(m) if !m.starts_with("expression tree") => {
                CompileError::Limit(format!(
                    "expression nests deeper than the limit of {} levels",
                    limits.max_nesting.min(MAX_NESTING)
                ))
            }
            e => e,
        })?;
    let mut program = program;
    // kro's parse-time macro for runtime.newCondition: its bare-identifier keys become strings
    // before anything reads the tree (they are not variables).
    if source.contains("newCondition") {
        super::library::runtime::expand_new_condition(&mut program.expression).map_err(|m| {
            CompileError::Syntax {
                message: m,
                position: None,
            }
        })?;
    }
    // Metering wraps some operands in a call, a level more: the limit holds for the tree that
    // every later walk, and the evaluator, recurse over.
    super::meter::meter(&mut program.expression);
    if tree_depth_over(&program.expression, max_depth).is_some() {
        return Err(CompileError::Limit(too_deep(max_depth)));
    }
    let refs = references(program.expression());
    let unknown: Vec<String> = refs
        .functions
        .iter()
        .filter(|f| !is_known_function(f) && !extra_functions.contains(&f.as_str()))
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if !unknown.is_empty() {
        return Err(CompileError::UnknownFunctions(unknown));
    }
    let field_path = super::reads::field_path(program.expression());
    Ok(Compiled {
        field_path,
        source: source.to_string(),
        program,
        refs,
    })
}

/// The ANTLR parser recurses about 21 frames per nesting level; parse on a thread with a stack
/// large enough for the nesting limit whatever thread the caller is on (rayon workers have 2 MiB).
///
/// A tree deeper than `max_depth` is refused here, and dropped on the stack it was built on:
/// nothing that recurses over it (reference extraction, the checker, the evaluator, `Drop`)
/// ever sees it.
fn parse_on_big_stack(
    parser: cel::parser::Parser,
    source: &str,
    max_depth: usize,
    max_nesting: u16,
) -> Result<Program, CompileError> {
    // A field path is as deep as it has segments; a longer one goes to the parser's thread,
    // which measures and refuses it there.
    if source.bytes().filter(|b| *b == b'.').count() < max_depth {
        if let Some(expression) = select_chain(source) {
            return Ok(Program { expression });
        }
    }
    let parse = move |parser: cel::parser::Parser, src: &str| -> Result<Expression, CompileError> {
        let expression = parser.parse(src).map_err(syntax_error)?;
        match tree_depth_over(&expression, max_depth) {
            None => Ok(expression),
            Some(_) => Err(CompileError::Limit(too_deep(max_depth))),
        }
    };
    // Shallow expressions (nearly all) parse on the caller's stack: a thread per expression costs
    // more than the parse, and on a busy machine its scheduling dominates start-up.
    let bracket_depth = max_bracket_depth(source);
    let res = if bracket_depth <= INLINE_PARSE_DEPTH {
        // Without the ANTLR parser's warm-up where the tree is provably the same (see
        // `super::pratt`); a tree too deep goes to the ANTLR parser, which refuses it.
        match super::pratt::parse(source, bracket_depth, max_nesting.min(MAX_NESTING)) {
            Some(tree) if tree_depth_over(&tree, max_depth).is_none() => Ok(tree),
            _ => parse(parser, source),
        }
    } else {
        let src = source.to_string();
        let handle = std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(move || parse(parser, &src));
        match handle {
            Ok(h) => h
                .join()
                .map_err(|_| CompileError::Limit("expression is too deeply nested".into()))?,
            Err(_) => {
                return Err(CompileError::Limit(
                    "expression is too deeply nested to parse here (no thread for its stack)"
                        .into(),
                ))
            }
        }
    };
    res.map(|expression| Program { expression })
}

fn too_deep(max_depth: usize) -> String {
    format!(
        "expression tree is more than {max_depth} levels deep, over the limit (each operator, \
         call, selection and index is a level: a chain of 1,000 `+` is 1,000 levels)"
    )
}

/// `Some(depth)` when the tree is deeper than `max` (the depth reached when the walk stopped,
/// `max + 1`), `None` when it is within. Iterative: it must not recurse over the very trees it
/// exists to refuse.
pub(crate) fn tree_depth_over(root: &Expression, max: usize) -> Option<usize> {
    use cel::common::ast::{EntryExpr, Expr};
    let mut stack: Vec<(&Expression, usize)> = vec![(root, 1)];
    while let Some((e, depth)) = stack.pop() {
        if depth > max {
            return Some(depth);
        }
        let below = depth + 1;
        match &e.expr {
            Expr::Call(c) => {
                stack.extend(c.target.iter().map(|t| (&**t, below)));
                stack.extend(c.args.iter().map(|a| (a, below)));
            }
            Expr::Comprehension(c) => stack.extend(
                [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ]
                .map(|x| (x, below)),
            ),
            Expr::List(l) => stack.extend(l.elements.iter().map(|x| (x, below))),
            Expr::Map(m) => {
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        stack.push((&me.key, below));
                        stack.push((&me.value, below));
                    }
                }
            }
            Expr::Struct(st) => {
                for entry in &st.entries {
                    match &entry.expr {
                        EntryExpr::StructField(f) => stack.push((&f.value, below)),
                        EntryExpr::MapEntry(me) => {
                            stack.push((&me.key, below));
                            stack.push((&me.value, below));
                        }
                    }
                }
            }
            Expr::Select(sel) => stack.push((&sel.operand, below)),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    None
}

/// The tree of a plain field path such as `schema.spec.name`, built without the parser.
///
/// Most template expressions are such paths, and the ANTLR parser costs tens of microseconds
/// each at start-up (it builds its prediction tables as it goes), which was most of a small
/// app's latency. The tree is exactly the parser's, node ids included (a test compares them), so
/// nothing downstream can tell. Anything else (whitespace inside, `?.`, indexing, calls, a
/// reserved word, a non-ASCII name) returns `None` and goes to the parser.
fn select_chain(source: &str) -> Option<Expression> {
    use cel::common::ast::{Expr, SelectExpr};
    let source = source.trim_matches([' ', '\t', '\n', '\r']);
    let mut segments = source.split('.');
    let first = segments.next().filter(|s| is_plain_identifier(s))?;
    let mut expr = Expression {
        id: 1,
        expr: Expr::Ident(first.to_string()),
    };
    for (field, id) in segments.zip(2..) {
        if !is_plain_identifier(field) {
            return None;
        }
        expr = Expression {
            id,
            expr: Expr::Select(SelectExpr {
                operand: Box::new(expr),
                field: field.to_string(),
                test: false,
            }),
        };
    }
    Some(expr)
}

/// Whether `source` takes the field-path fast path (for other fast paths' tests).
#[cfg(test)]
pub(crate) fn select_chain_for_tests(source: &str) -> bool {
    select_chain(source).is_some()
}

/// `[A-Za-z_][A-Za-z0-9_]*` and not a CEL keyword or reserved word.
fn is_plain_identifier(s: &str) -> bool {
    const RESERVED: &[&str] = &[
        "as",
        "break",
        "const",
        "continue",
        "else",
        "false",
        "for",
        "function",
        "if",
        "import",
        "in",
        "let",
        "loop",
        "package",
        "namespace",
        "null",
        "return",
        "true",
        "var",
        "void",
        "while",
    ];
    let mut bytes = s.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !RESERVED.contains(&s)
}

/// Nesting up to this depth parses on the caller's thread (any thread kiln runs on has at least
/// 2 MiB of stack; the parser needs about 21 frames per level).
const INLINE_PARSE_DEPTH: usize = 8;

/// The deepest bracket nesting outside string literals: a cheap upper bound on what the parser
/// will recurse into (operators add a little; the margin in [`INLINE_PARSE_DEPTH`] covers it).
pub(super) fn max_bracket_depth(src: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    let mut quote: Option<char> = None;
    let mut chars = src.chars();
    while let Some(c) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, '(' | '[' | '{') => {
                depth += 1;
                max = max.max(depth);
            }
            (None, ')' | ']' | '}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    // Long operator chains (`a + b + c ...`) recurse too; count them as depth.
    max + src.len() / 64
}

fn syntax_error(errs: cel::ParseErrors) -> CompileError {
    let first = errs.errors.first();
    // The parser reports its own nesting limit as a syntax error; it is kiln's limit (KLN3006).
    if first.is_some_and(|e| e.msg.contains("Recursion limit")) {
        return CompileError::Limit("expression nests deeper than the nesting limit".into());
    }
    CompileError::Syntax {
        message: first
            .map(|e| e.msg.clone())
            .unwrap_or_else(|| "invalid expression".into()),
        position: first
            .and_then(|e| (e.pos.0 > 0).then(|| (e.pos.0 as usize, (e.pos.1.max(0) as usize) + 1))),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn field_paths_build_the_parsers_tree() {
        let parse = |src: &str| env().parser().parse(src);
        for src in [
            "a",
            "schema",
            "schema.spec.name",
            " schema.metadata.name ",
            "_x.y_1.Z9",
            "service.status.loadBalancer.ingress",
            "a.b.c.d.e.f.g.h.i.j.k",
        ] {
            let fast = super::select_chain(src).unwrap_or_else(|| panic!("{src}: no fast path"));
            assert_eq!(fast, parse(src).unwrap(), "{src}");
        }
        // Everything else is the parser's to judge, including its errors.
        for src in [
            "", "a.", ".a", "a..b", "a.in", "null", "true.x", "a . b", "a.?b", "a[0]", "a.b()",
            "1a", "a-b", "é", "a.b\n.c", "a.b + c", "has(a.b)",
        ] {
            assert!(
                super::select_chain(src).is_none(),
                "{src:?} took the fast path"
            );
        }
    }

    proptest::proptest! {
        #[test]
        fn any_field_path_builds_the_parsers_tree(
            segments in proptest::collection::vec("(in|as|null|true|[a-zA-Z_][a-zA-Z0-9_]{0,5})", 1..8)
        ) {
            let src = segments.join(".");
            match super::select_chain(&src) {
                Some(fast) => proptest::prop_assert_eq!(fast, env().parser().parse(&src).unwrap()),
                // Only a reserved word keeps a path of identifiers from the fast path.
                None => proptest::prop_assert!(segments.iter().any(|s| ["in", "as", "null", "true"].contains(&s.as_str()))),
            }
        }
    }

    use super::*;

    fn eval(src: &str) -> Result<Value, cel::ExecutionError> {
        let c = compile(src, &ExprLimits::default()).unwrap();
        c.program.execute(&new_context())
    }

    #[test]
    fn extensions_are_enabled() {
        assert_eq!(
            eval("'A,B'.lowerAscii().split(',')").unwrap(),
            Value::List(Arc::new(vec!["a".into(), "b".into()]))
        );
        assert_eq!(eval("math.greatest(1, 5, 3)").unwrap(), Value::Int(5));
        assert_eq!(eval("base64.encode(b'hi')").unwrap(), Value::from("aGk="));
        assert_eq!(
            eval("[3, 1, 2].sort()").unwrap(),
            Value::List(Arc::new(vec![1.into(), 2.into(), 3.into()]))
        );
        assert_eq!(eval("{'a': 1}.?b.orValue(7)").unwrap(), Value::Int(7));
    }

    #[test]
    fn cel_bind_works() {
        assert_eq!(eval("cel.bind(x, 20, x * x + 1)").unwrap(), Value::Int(401));
        assert_eq!(
            eval("cel.bind(a, 'x', cel.bind(b, a + 'y', b + a))").unwrap(),
            Value::from("xyx")
        );
    }

    #[test]
    fn omit_returns_the_sentinel() {
        assert!(is_omit(&eval("false ? 1 : omit()").unwrap()));
    }

    #[test]
    fn unknown_functions_are_rejected_at_compile_time() {
        let e = compile("foo(1) + 'x'.bar()", &ExprLimits::default()).unwrap_err();
        assert_eq!(
            e,
            CompileError::UnknownFunctions(vec!["bar".into(), "foo".into()])
        );
        assert!(compile("size('x') + int('1')", &ExprLimits::default()).is_ok());
    }

    #[test]
    fn syntax_errors_have_positions() {
        match compile("a +", &ExprLimits::default()).unwrap_err() {
            CompileError::Syntax { position, .. } => assert!(position.is_some()),
            e => panic!("{e:?}"),
        }
    }

    #[test]
    fn deep_nesting_is_a_limit_not_a_crash() {
        let src = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(matches!(
            compile(&src, &ExprLimits::default()),
            Err(CompileError::Limit(m)) if m.contains("limit of 64 levels")
        ));
        let src = format!("{}1{}", "(".repeat(30), ")".repeat(30));
        assert!(compile(&src, &ExprLimits::default()).is_ok());
    }

    #[test]
    fn length_limit() {
        let src = "1 + ".repeat(10) + "1";
        let e = compile(
            &src,
            &ExprLimits {
                max_length: 5,
                ..ExprLimits::default()
            },
        )
        .unwrap_err();
        assert!(matches!(e, CompileError::Limit(_)));
    }
}
