//! The evaluation budget: how much work one expression evaluation may do.
//!
//! The cel crate has no cost accounting (cel-go has `CostLimit`), so kiln meters the only
//! constructs whose work is not bounded by the expression's own length: comprehensions (`all`,
//! `exists`, `map`, `filter`, the two-variable forms, `cel.bind`). kiln's macros
//! ([`super::macros`]) expand them with two internal calls: `@kiln_go(cond)` before each
//! iteration, which counts it and stops the loop once the budget is spent, and `@kiln_size(step)`
//! on each new accumulator (and each `cel.bind` value), which refuses strings, lists and maps
//! larger than the size limit. Together they bound CPU (iterations) and memory (value growth) of
//! a hostile template; `lists.range` is capped by the crate itself.
//!
//! The meter is thread-local and reset by [`execute`] for every evaluation. Once exceeded it
//! stays exceeded until the evaluation ends, so error-absorbing operators (`||` in `exists`)
//! cannot hide it: [`execute`] reports the overrun whatever the expression made of the error.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, FunctionContext, Program, Value};

use super::library::{invoke, Call};

/// Limits of one expression evaluation. Configurable; defaults are generous for real templates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalBudget {
    /// Comprehension iterations (all comprehensions of the expression together).
    pub max_iterations: u64,
    /// Longest string (bytes) or largest list/map (entries) a comprehension or `cel.bind` may
    /// build.
    pub max_value_size: usize,
}

impl Default for EvalBudget {
    fn default() -> Self {
        Self {
            max_iterations: 1_000_000,
            max_value_size: 10 << 20,
        }
    }
}

#[derive(Debug, Default)]
struct Meter {
    budget: Option<EvalBudget>,
    used: u64,
    exceeded: Option<String>,
}

thread_local! {
    static METER: RefCell<Meter> = RefCell::new(Meter::default());
}

/// Names of the internal functions the macros call; `@` keeps them out of users' reach (the
/// parser does not accept `@` in identifiers).
pub(crate) const GO: &str = "@kiln_go";
pub(crate) const SIZE: &str = "@kiln_size";
pub(crate) const INSERT: &str = "@kiln_insert";
pub(crate) const INSERT_ENTRY: &str = "@kiln_insert_entry";
pub(crate) const KEYS: &str = "@kiln_keys";

/// Evaluate a program under a budget. An overrun is an error naming the limit, even when the
/// expression itself would have absorbed it.
pub fn execute(
    program: &Program,
    ctx: &Context<'_, '_>,
    budget: &EvalBudget,
) -> Result<Value, ExecutionError> {
    let previous = METER.with(|m| {
        std::mem::replace(
            &mut *m.borrow_mut(),
            Meter {
                budget: Some(*budget),
                used: 0,
                exceeded: None,
            },
        )
    });
    let result = program.execute(ctx);
    // Nested evaluations (none today) would restore the outer meter.
    let meter = METER.with(|m| std::mem::replace(&mut *m.borrow_mut(), previous));
    match meter.exceeded {
        Some(msg) => Err(ExecutionError::function_error(BUDGET, msg)),
        None => result,
    }
}

/// The function name budget overruns are reported under.
const BUDGET: &str = "evaluation budget";

/// The overrun message, when `err` is a budget overrun rather than an ordinary failure.
pub fn overrun(err: &ExecutionError) -> Option<&str> {
    match err {
        ExecutionError::FunctionError { function, message } if function == BUDGET => Some(message),
        _ => None,
    }
}

fn exceed(msg: String) {
    METER.with(|m| {
        let mut m = m.borrow_mut();
        if m.exceeded.is_none() {
            m.exceeded = Some(msg);
        }
    });
}

fn size_of(v: &Value) -> usize {
    match v {
        Value::String(s) => s.len(),
        Value::Bytes(b) => b.len(),
        Value::List(l) => l.len(),
        Value::Map(m) => m.map.len(),
        _ => 0,
    }
}

/// `@kiln_go(cond)`: count one iteration; `false` once the budget is spent.
fn go(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [cond] = call.global::<1>()?;
    let over = METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(b) = m.budget else {
            // Evaluated outside `execute` (tests, tools): unmetered.
            return false;
        };
        if m.exceeded.is_some() {
            return true;
        }
        m.used += 1;
        if m.used > b.max_iterations {
            m.exceeded = Some(format!(
                "more than {} comprehension iterations (the evaluation budget)",
                b.max_iterations
            ));
            return true;
        }
        false
    });
    if over {
        return Ok(Value::Bool(false));
    }
    Ok(cond.clone())
}

/// `@kiln_size(v)`: `v`, unless it is larger than the size limit.
fn size(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [v] = call.global::<1>()?;
    let limit = METER.with(|m| m.borrow().budget.map(|b| b.max_value_size));
    if let Some(limit) = limit {
        let n = size_of(v);
        // Each step builds a new accumulator (`@result + [x]` copies the list), so a fold's real
        // work grows with the square of its length: charge the copy to the iteration budget.
        let charge = (n / 4) as u64;
        let over = METER.with(|m| {
            let mut m = m.borrow_mut();
            m.used = m.used.saturating_add(charge);
            match m.budget {
                Some(b) if m.used > b.max_iterations && m.exceeded.is_none() => {
                    m.exceeded = Some(format!(
                        "more than {} units of comprehension work (iterations plus accumulator copies; the evaluation budget)",
                        b.max_iterations
                    ));
                    true
                }
                _ => false,
            }
        });
        if over {
            return Err(call.error("evaluation budget exceeded"));
        }
        if n > limit {
            let msg = format!(
                "a comprehension or cel.bind built a value of size {n}, over the limit of {limit} (the evaluation budget)"
            );
            exceed(msg.clone());
            return Err(call.error(msg));
        }
    }
    Ok(v.clone())
}

/// `@kiln_insert(map, key, value)`: the map with one more entry (two-variable `transformMap`).
fn insert(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [m, k, v] = call.global::<3>()?;
    let Value::Map(m) = m else {
        return Err(call.no_overload());
    };
    let key: Key = k.clone().try_into().map_err(|_| call.no_overload())?;
    let mut out: HashMap<Key, Value> = (*m.map).clone();
    out.insert(key, v.clone());
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

/// `@kiln_insert_entry(map, entry)`: the map with the entries of `entry` (a map, the result of a
/// `transformMapEntry` function) added; a key already present is an error, as in cel-go.
fn insert_entry(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [m, e] = call.global::<2>()?;
    let (Value::Map(m), Value::Map(e)) = (m, e) else {
        return Err(call.no_overload());
    };
    let mut out: HashMap<Key, Value> = (*m.map).clone();
    for (k, v) in e.map.iter() {
        if out.contains_key(k) {
            return Err(call.error(format!(
                "transformMapEntry: insert failed: key {k:?} already exists"
            )));
        }
        out.insert(k.clone(), v.clone());
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

/// `@kiln_keys(x)`: the indices of a list or the keys of a map, what the first variable of a
/// two-variable comprehension ranges over. Keys come sorted, so iteration order is stable.
fn keys(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [x] = call.global::<1>()?;
    match x {
        Value::List(l) => Ok(Value::List(Arc::new(
            (0..l.len() as i64).map(Value::Int).collect(),
        ))),
        Value::Map(m) => {
            let mut ks: Vec<Value> = m.map.keys().map(|k| Value::from(k.clone())).collect();
            ks.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
            Ok(Value::List(Arc::new(ks)))
        }
        _ => Err(call.no_overload()),
    }
}

/// Registers the internal functions on a context.
pub(crate) fn register(ctx: &mut Context<'_, '_>) {
    let handlers: [(&str, super::library::Handler); 5] = [
        (GO, go),
        (SIZE, size),
        (INSERT, insert),
        (INSERT_ENTRY, insert_entry),
        (KEYS, keys),
    ];
    for (name, handler) in handlers {
        let res = ctx.add_function(name, move |ftx: &FunctionContext| invoke(ftx, handler));
        debug_assert!(res.is_ok(), "{name}: {res:?}");
    }
}

#[cfg(test)]
mod tests {
    use super::super::cel::{compile, new_context, ExprLimits};
    use super::*;

    fn run(src: &str, budget: &EvalBudget) -> Result<Value, ExecutionError> {
        let c = compile(src, &ExprLimits::default()).unwrap();
        execute(&c.program, &new_context(), budget)
    }

    fn ok(src: &str) -> Value {
        run(src, &EvalBudget::default()).unwrap()
    }

    #[test]
    fn two_variable_comprehensions() {
        assert_eq!(
            ok("{'a': 1, 'b': 2}.transformMap(k, v, v * 10) == {'a': 10, 'b': 20}"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("{'a': 1, 'b': 2}.transformMap(k, v, v > 1, k + 'x') == {'b': 'bx'}"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[5, 6].transformList(i, v, i + v) == [5, 7]"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[5, 6, 7].transformList(i, v, i > 0, v) == [6, 7]"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("{'a': 1}.transformMapEntry(k, v, {v: k}) == {1: 'a'}"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("{'a': 1, 'b': 2}.all(k, v, v > 0 && k != '')"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[1, 2].exists(i, v, v == 2 && i == 1)"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("{'a': 1, 'b': 2}.existsOne(k, v, v == 2)"),
            Value::Bool(true)
        );
        // Nested forms each get their own hidden binding.
        assert_eq!(
            ok("{'a': [1, 2]}.transformMap(k, l, l.transformList(i, v, v * 2)) == {'a': [2, 4]}"),
            Value::Bool(true)
        );
        assert!(run(
            "{'a': 1, 'b': 1}.transformMapEntry(k, v, {v: k})",
            &EvalBudget::default()
        )
        .is_err());
    }

    #[test]
    fn standard_macros_still_work() {
        assert_eq!(
            ok("[1, 2, 3].map(x, x * 2) == [2, 4, 6]"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[1, 2, 3].map(x, x > 1, x) == [2, 3]"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[1, 2, 3].filter(x, x != 2) == [1, 3]"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[1, 2, 3].all(x, x > 0) && [1, 2].exists(x, x == 2)"),
            Value::Bool(true)
        );
        assert_eq!(
            ok("[1, 2, 3].exists_one(x, x == 2) && [1].existsOne(x, x == 1)"),
            Value::Bool(true)
        );
        assert_eq!(ok("has({'a': 1}.a) && !has({'a': 1}.b)"), Value::Bool(true));
        assert_eq!(ok("cel.bind(x, 2, x * x)"), Value::Int(4));
        assert_eq!(
            ok("[3, 1, 2].sortBy(x, -x) == [3, 2, 1]"),
            Value::Bool(true)
        );
    }

    #[test]
    fn iterations_are_bounded() {
        let small = EvalBudget {
            max_iterations: 1_000,
            ..EvalBudget::default()
        };
        assert!(run("lists.range(100).all(i, true)", &small).is_ok());
        let err = run(
            "lists.range(100).all(i, lists.range(100).all(j, true))",
            &small,
        )
        .unwrap_err();
        assert!(
            overrun(&err)
                .unwrap()
                .contains("more than 1000 comprehension iterations"),
            "{err}"
        );
        // `||` absorbs errors in exists(); the overrun is reported anyway.
        let err = run(
            "lists.range(100).exists(i, lists.range(100).map(j, j).size() > 1000)",
            &small,
        )
        .unwrap_err();
        assert!(overrun(&err).is_some(), "{err}");
    }

    #[test]
    fn value_growth_is_bounded() {
        let small = EvalBudget {
            max_value_size: 30,
            ..EvalBudget::default()
        };
        let err = run(
            "cel.bind(a, 'xxxxxxxxxx', cel.bind(b, a + a, cel.bind(c, b + b, c)))",
            &small,
        )
        .unwrap_err();
        assert!(
            overrun(&err)
                .unwrap()
                .contains("size 40, over the limit of 30"),
            "{err}"
        );
        let err = run("lists.range(31).map(i, i)", &small).unwrap_err();
        assert!(overrun(&err).is_some(), "{err}");
        assert!(run("lists.range(30).map(i, i)", &small).is_ok());
    }

    #[test]
    fn the_default_budget_stops_a_hostile_expression_quickly() {
        let start = std::time::Instant::now();
        let err = run(
            "lists.range(1000).all(a, lists.range(1000).all(b, lists.range(1000).all(c, true)))",
            &EvalBudget::default(),
        )
        .unwrap_err();
        assert!(overrun(&err).is_some());
        // Not a timing assertion on the happy path: a billion iterations would take minutes.
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
    }
}
