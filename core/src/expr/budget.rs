//! The evaluation budget: how much work one expression evaluation may do, and how large the values
//! it builds may grow.
//!
//! The cel crate has no cost accounting (cel-go has `CostLimit`), so kiln meters everything whose
//! work or result is not bounded by the expression's own length. One unit of work is about what
//! one comprehension step costs; copying or reading a value costs a unit per 64 bytes of its
//! strings and per 4 of its entries ([`super::weight`]). What is charged, and where:
//!
//! - **Comprehensions** (`all`, `exists`, `map`, `filter`, the two-variable forms, `cel.bind`,
//!   `sortBy`). kiln's macros ([`super::macros`]) expand them with `@kiln_go(cond)` before each
//!   iteration, which counts it (more units for a large body: [`super::meter`] adds the count)
//!   and stops the loop once the budget is spent, and `@kiln_size(step)` on each new accumulator
//!   (and each `cel.bind` value), which charges copying it and refuses values larger than the
//!   size limit. Iterating copies each element of the range, charged up front (`@kiln_range`).
//! - **What the interpreter does itself**: comparisons of two values, `in`, map indexing, the
//!   copies list and map literals and optional selections make ([`super::meter`] wraps their
//!   operands in `@kiln_cost`).
//! - **Functions**: kiln declares its own overloads of the crate's string and list functions, and
//!   of its global conversions, ahead of the crate's (the first matching overload wins; see
//!   `super::library::declare_first`). Each charges what it reads before reading it and checks
//!   the size of what it builds before building it: `replace`, `split` and `join` count the
//!   result's size first, `findAll` and `json.unmarshal` count their result as it grows. kiln's
//!   own library functions are charged for the copies the crate makes of their arguments and
//!   results. Regular expressions are priced from their parsed form (`super::library::regex`).
//! - **Growing operations** (`+` on strings, bytes and lists, `format`, `strings.quote`,
//!   `base64.encode`, `json.marshal`, `merge`, `deepMerge`, `lists.insertAtIndex`/`setAtIndex`)
//!   are also wrapped by the macros in `@kiln_grow(call, "name")`, which checks the result's size
//!   (and charges copying it). Nesting such calls multiplies sizes by a bounded factor per call,
//!   so checking every result bounds them all.
//!
//! Sizes are weights: the bytes of a string, and for lists and maps their entries plus the
//! weights of what they hold (keys included), through any nesting, so a list of large strings
//! weighs what it holds.
//!
//! The meter is thread-local and reset by [`execute`] for every evaluation. Once exceeded it
//! stays exceeded until the evaluation ends, so error-absorbing operators (`||` in `exists`)
//! cannot hide it: [`execute`] reports the overrun whatever the expression made of the error.
//! Outside [`execute`] (tests, tools) nothing is metered and the functions behave as the
//! crate's.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use cel::common::types::{
    CelBool, CelInt, CelList, CelString, Kind, DYN_TYPE, INT_TYPE, LIST_TYPE, STRING_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::objects::{Key, Map};
use cel::{Context, Env, ExecutionError, FunctionContext, Value};

use super::cel::Program;
use super::weight::{self, Caps, Weight};

use super::library::{invoke, Call};

/// The evaluation limits (defined with every other limit in [`crate::limits`]).
pub use crate::limits::EvalBudget;

#[derive(Debug, Default)]
struct Meter {
    budget: Option<EvalBudget>,
    used: u64,
    exceeded: Option<String>,
    /// Regular expressions this evaluation has paid to compile (see [`first_use`]).
    patterns: HashSet<Box<str>>,
}

thread_local! {
    static METER: RefCell<Meter> = RefCell::new(Meter::default());
}

/// Names of the internal functions the macros and [`super::meter`] call; `@` keeps them out of
/// users' reach (the parser does not accept `@` in identifiers).
pub(crate) const GO: &str = "@kiln_go";
pub(crate) const SIZE: &str = "@kiln_size";
pub(crate) const GROW: &str = "@kiln_grow";
pub(crate) const COST: &str = "@kiln_cost";
pub(crate) const RANGE: &str = "@kiln_range";
pub(crate) const TICK: &str = "@kiln_tick";
pub(crate) const INSERT: &str = "@kiln_insert";
pub(crate) const INSERT_ENTRY: &str = "@kiln_insert_entry";
pub(crate) const KEYS: &str = "@kiln_keys";
pub(crate) const FORMAT_ARGS: &str = "@kiln_format_args";
/// The variable [`super::meter`] binds a `format` call's format string to.
pub(crate) const FORMAT_STRING: &str = "@kiln_fmt";

/// Evaluate a program under a budget. An overrun is an error naming the limit, even when the
/// expression itself would have absorbed it.
pub fn execute(
    program: &Program,
    ctx: &Context<'_, '_>,
    budget: &EvalBudget,
) -> Result<Value, ExecutionError> {
    execute_counted(program, ctx, budget).0
}

/// [`execute`], and the units of work the evaluation was charged.
pub(crate) fn execute_counted(
    program: &Program,
    ctx: &Context<'_, '_>,
    budget: &EvalBudget,
) -> (Result<Value, ExecutionError>, u64) {
    let previous = METER.with(|m| {
        std::mem::replace(
            &mut *m.borrow_mut(),
            Meter {
                budget: Some(*budget),
                ..Meter::default()
            },
        )
    });
    let result = program.execute(ctx);
    // Nested evaluations (none today) would restore the outer meter.
    let meter = METER.with(|m| std::mem::replace(&mut *m.borrow_mut(), previous));
    let result = match meter.exceeded {
        Some(msg) => Err(ExecutionError::function_error(BUDGET, msg)),
        None => result,
    };
    (result, meter.used)
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

/// The budget of the evaluation running on this thread, if any.
fn active() -> Option<EvalBudget> {
    METER.with(|m| m.borrow().budget)
}

/// How far a weighing needs to go: past the size limit, or past the work left, the answer is
/// known. Unmetered evaluations weigh nothing ([`Caps`] of zero stop at once).
pub(crate) fn caps() -> Caps {
    METER.with(|m| {
        let m = m.borrow();
        match m.budget {
            Some(b) => Caps {
                total: b.max_value_size,
                work: b.max_iterations.saturating_sub(m.used),
            },
            None => Caps { total: 0, work: 0 },
        }
    })
}

/// Whether an evaluation on this thread is metered (inside [`execute`]).
pub(crate) fn metered() -> bool {
    active().is_some()
}

/// Charge `units` of work done by `what` (a function or operation, for the message); an error,
/// and the meter marked exceeded, once the budget is spent.
pub(crate) fn charge(what: &str, units: u64) -> Result<(), ExecutionError> {
    charge_or(what, units, |max| {
        // A function's bare name reads as a call.
        let call = if what.chars().all(|c| c.is_alphanumeric() || c == '.') {
            "()"
        } else {
            ""
        };
        format!(
            "more than {max} units of evaluation work, the last of them in {what}{call}: comprehension steps, copies of large values, and what string, list and regex functions read and build (the evaluation budget)"
        )
    })
}

/// [`charge`], with the message of an overrun made by `message` from the budget's size.
fn charge_or(
    what: &str,
    units: u64,
    message: impl FnOnce(u64) -> String,
) -> Result<(), ExecutionError> {
    let over = METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(b) = m.budget else {
            return false;
        };
        m.used = m.used.saturating_add(units);
        if m.used > b.max_iterations {
            if m.exceeded.is_none() {
                m.exceeded = Some(message(b.max_iterations));
            }
            return true;
        }
        false
    });
    if over {
        return Err(ExecutionError::function_error(
            what,
            "evaluation budget exceeded",
        ));
    }
    Ok(())
}

/// How far a weighing for a work charge needs to go: past the work left, the budget is spent.
fn work_caps() -> Caps {
    Caps {
        total: usize::MAX,
        work: caps().work,
    }
}

/// Charge the work of copying or traversing `v` once; its weight, as far as it was measured
/// (all of it, unless the budget is spent).
pub(crate) fn charge_val(what: &str, v: &dyn Val) -> Result<Weight, ExecutionError> {
    if !metered() {
        return Ok(Weight::default());
    }
    let w = weight::of_val(v, work_caps());
    charge(what, w.work())?;
    Ok(w)
}

/// [`admit`] a value a function built and hands back: its copy charged, refused over the size
/// limit.
pub(crate) fn admit_value(what: &str, v: &Value) -> Result<(), ExecutionError> {
    let Some(b) = active() else {
        return Ok(());
    };
    let caps = Caps {
        total: b.max_value_size,
        work: work_caps().work,
    };
    let w = weight::of_value(v, caps);
    let kind = match v {
        Value::String(_) => Kind::String,
        Value::Bytes(_) => Kind::Bytes,
        Value::List(_) => Kind::List,
        Value::Map(_) => Kind::Map,
        _ => Kind::Dyn,
    };
    admit(
        what,
        kind,
        w,
        matches!(kind, Kind::String | Kind::Bytes),
        false,
    )
}

/// Whether this evaluation meets the regular expression `pattern` for the first time: it pays
/// to compile it once, whether or not a cache already holds it, so what it is charged does not
/// depend on what other evaluations ran before on this thread.
pub(crate) fn first_use(pattern: &str) -> bool {
    METER.with(|m| {
        let mut m = m.borrow_mut();
        if m.budget.is_none() || m.patterns.contains(pattern) {
            return false;
        }
        m.patterns.insert(pattern.into());
        true
    })
}

/// What a weight measures, for messages.
fn unit_of(kind: Kind) -> &'static str {
    match kind {
        Kind::String => "a string of",
        Kind::Bytes => "a byte string of",
        Kind::List => "a list weighing",
        Kind::Map => "a map weighing",
        _ => "a value weighing",
    }
}

/// Admit a value of `weight` that `function` built (or, `before`, is about to build): charge
/// copying it, and refuse it when it is over the size limit. `exact` says whether `weight` is the
/// exact size (strings) or not: a lower bound (a weighing stops past the limit), or for a string
/// an estimate (`format`).
pub(crate) fn admit(
    function: &str,
    kind: Kind,
    weight: Weight,
    exact: bool,
    before: bool,
) -> Result<(), ExecutionError> {
    let Some(b) = active() else {
        return Ok(());
    };
    let size = weight.total();
    if size > b.max_value_size {
        let verb = if before { "would build" } else { "built" };
        let limit = b.max_value_size;
        let msg = if exact {
            format!(
                "{function} {verb} {} {size} bytes, over the limit of {limit} bytes (the evaluation budget)",
                unit_of(kind)
            )
        } else if matches!(kind, Kind::String | Kind::Bytes) {
            // An estimate of a text's length (`format`'s clauses).
            format!(
                "{function} {verb} {} about {size} bytes, over the limit of {limit} bytes (the evaluation budget)",
                unit_of(kind)
            )
        } else {
            format!(
                "{function} {verb} {} more than the limit of {limit} (entries plus the bytes of the strings they hold; the evaluation budget)",
                unit_of(kind)
            )
        };
        exceed(msg.clone());
        return Err(ExecutionError::function_error(function, msg));
    }
    if !before {
        return charge(function, weight.work());
    }
    // Refused before it is built: say so, and what it would have been.
    charge_or(function, weight.work(), |max| {
        let what = if exact {
            format!("{} {size} bytes", unit_of(kind))
        } else {
            format!("{} at least {size}", unit_of(kind))
        };
        format!(
            "{function} would build {what}: more work than is left of {max} units (the evaluation budget)"
        )
    })
}

/// The one argument of an internal overload, or the crate's error.
fn one<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 1 {
        return Err(ExecutionError::invalid_argument_count(1, args.len()));
    }
    Ok(args.pop().expect("one argument"))
}

/// `@kiln_go(cond, units)`: count one iteration, `units` of work for its body (see
/// [`super::meter`]); `false` once the budget is spent.
fn go<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let units = match args.len() {
        1 => 1,
        2 => {
            let n = args.pop().expect("two arguments");
            n.downcast_ref::<CelInt>()
                .map_or(1, |n| u64::try_from(*n.inner()).unwrap_or(1))
        }
        n => return Err(ExecutionError::invalid_argument_count(2, n)),
    };
    let cond = one(args)?;
    let over = METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(b) = m.budget else {
            // Evaluated outside `execute` (tests, tools): unmetered.
            return false;
        };
        if m.exceeded.is_some() {
            return true;
        }
        m.used = m.used.saturating_add(units);
        if m.used > b.max_iterations {
            m.exceeded = Some(format!(
                "more than {} units of evaluation work in comprehension iterations, one a step and more for a large body (the evaluation budget)",
                b.max_iterations
            ));
            return true;
        }
        false
    });
    if over {
        return Ok(CowVal::owned(CelBool::from(false)));
    }
    Ok(cond)
}

/// `@kiln_tick(x, units)`: `x`, after counting one iteration of a comprehension whose loop the
/// interpreter runs itself (the crate's `map` in `sortBy`), `units` of work for its body, and
/// copying `x` into the result.
fn tick<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 2 {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    }
    let units = args
        .pop()
        .and_then(|n| n.downcast_ref::<CelInt>().map(|n| *n.inner()))
        .map_or(1, |n| u64::try_from(n).unwrap_or(1));
    let x = one(args)?;
    if metered() {
        charge("a comprehension step", units)?;
        charge_val("a comprehension step", x.as_ref())?;
    }
    Ok(x)
}

/// `@kiln_size(v)`: `v`, unless it is larger than the size limit. Each step of a fold builds a
/// new accumulator (`@result + [x]` copies the list), and `cel.bind` copies its value, so the copy
/// is charged too: a fold's work grows with the square of its length.
fn size<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let v = one(args)?;
    let Some(b) = active() else {
        return Ok(v);
    };
    let w = weight::of_val(v.as_ref(), caps());
    if w.total() > b.max_value_size {
        let msg = match v.get_type().kind() {
            Kind::String | Kind::Bytes => format!(
                "a comprehension or cel.bind built a value of size {}, over the limit of {} (the evaluation budget)",
                w.total(),
                b.max_value_size
            ),
            _ => format!(
                "a comprehension or cel.bind built a value weighing more than the limit of {} (entries plus the bytes of the strings they hold; the evaluation budget)",
                b.max_value_size
            ),
        };
        exceed(msg.clone());
        return Err(ExecutionError::function_error(SIZE, msg));
    }
    charge("a comprehension or cel.bind", w.work())?;
    Ok(v)
}

/// `@kiln_grow(value, "function")`: `value`, unless it is larger than the size limit; copying it
/// is charged to the work budget. An environment overload (not a context function) so the value
/// is checked where it lies, without a conversion.
fn grow<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 2 {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    }
    let name = args.pop().expect("two arguments");
    let value = args.pop().expect("two arguments");
    if metered() {
        let function = name
            .downcast_ref::<CelString>()
            .map(|s| s.inner().to_string())
            .unwrap_or_default();
        let kind = value.get_type().kind();
        let w = weight::of_val(value.as_ref(), caps());
        admit(
            &function,
            kind,
            w,
            matches!(kind, Kind::String | Kind::Bytes),
            false,
        )?;
    }
    Ok(value)
}

/// `@kiln_format_args(format, list)`: `list`, once what `format.format(list)` will write
/// ([`super::format_size`]) is admitted: refused before the call builds it when over the size
/// limit, its copying charged. Reading `list` is charged where the meter wraps it.
fn format_args<'b, 'v>(mut args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    if args.len() != 2 {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    }
    let list = args.pop().expect("two arguments");
    let format = args.pop().expect("two arguments");
    if !metered() {
        return Ok(list);
    }
    // Anything but a string and a list fails in the crate's `format`, as written.
    let (Some(format), Some(items)) = (string_arg(&format), list.as_iterable()) else {
        return Ok(list);
    };
    charge("format()", Weight::bytes(format.len()).work())?;
    let size = {
        let mut values: Vec<&dyn Val> = Vec::new();
        let mut it = items.iter();
        while let Some(item) = it.next() {
            values.push(item);
        }
        super::format_size::estimate(format, &values)
    };
    let (size, exact) = size;
    admit("format()", Kind::String, Weight::bytes(size), exact, true)?;
    Ok(list)
}

/// `@kiln_cost(x)`: `x`, after charging the work of copying or comparing it (see
/// [`super::meter`]: operands the interpreter compares, hashes or copies).
fn cost<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let x = one(args)?;
    charge_val("a comparison, index or copy", x.as_ref())?;
    Ok(x)
}

/// `@kiln_range(x)`: `x`, after charging what iterating it copies beyond one value a step (each
/// step pays for itself in `@kiln_go`).
fn range<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let x = one(args)?;
    if metered() {
        let w = weight::of_elements(x.as_ref(), work_caps());
        charge("the range of a comprehension", w.work())?;
    }
    Ok(x)
}

fn string_arg<'a>(v: &'a CowVal<'_, '_>) -> Option<&'a str> {
    v.downcast_ref::<CelString>().map(|s| s.inner())
}

/// The error the crate reports when no overload of a member function matches.
fn no_member_overload(function: &str, args: &[CowVal<'_, '_>]) -> ExecutionError {
    ExecutionError::no_such_member_overload(
        function,
        args.iter()
            .map(|a| a.get_type().name().to_string())
            .collect(),
    )
}

/// `s.replace(from, to[, n])`, the strings extension's, with the result's size checked first:
/// replacing in a loop of nested calls squares the length each time.
fn replace<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(from), Some(to)) = (
        args.first().and_then(string_arg),
        args.get(1).and_then(string_arg),
        args.get(2).and_then(string_arg),
    ) else {
        return Err(no_member_overload("replace", &args));
    };
    let limit = match args.get(3) {
        None => None,
        Some(n) => match n.downcast_ref::<CelInt>() {
            Some(n) => usize::try_from(*n.inner()).ok(),
            None => return Err(no_member_overload("replace", &args)),
        },
    };
    // Counting the matches, then replacing them, reads the string twice.
    charge("replace()", 2 * Weight::bytes(this.len()).work())?;
    let mut count = if from.is_empty() {
        this.chars().count() + 1
    } else {
        this.matches(from).count()
    };
    if let Some(n) = limit {
        count = count.min(n);
    }
    let size = (this.len() as u128 + count as u128 * to.len() as u128)
        .saturating_sub(count as u128 * from.len() as u128);
    admit(
        "replace()",
        Kind::String,
        Weight::bytes(usize::try_from(size).unwrap_or(usize::MAX)),
        true,
        true,
    )?;
    let out = match limit {
        Some(n) => this.replacen(from, to, n),
        None => this.replace(from, to),
    };
    Ok(CowVal::owned(CelString::from(out)))
}

/// `s.split(sep[, n])`, the strings extension's, with the size of the list checked first (an
/// empty separator makes one entry per character).
fn split<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(sep)) = (
        args.first().and_then(string_arg),
        args.get(1).and_then(string_arg),
    ) else {
        return Err(no_member_overload("split", &args));
    };
    let n = match args.get(2) {
        None => -1,
        Some(n) => match n.downcast_ref::<CelInt>() {
            Some(n) => *n.inner(),
            None => return Err(no_member_overload("split", &args)),
        },
    };
    charge("split()", 2 * Weight::bytes(this.len()).work())?;
    let mut parts = if sep.is_empty() {
        this.chars().count()
    } else {
        this.matches(sep).count() + 1
    };
    if let Ok(n) = usize::try_from(n) {
        parts = parts.min(n);
    }
    admit(
        "split()",
        Kind::List,
        Weight {
            bytes: this.len(),
            entries: parts,
        },
        false,
        true,
    )?;
    // What the extension does, to the letter: at most `n` parts, the last holding the rest;
    // none when `n` is zero; an empty separator splits between code points.
    let pieces: Vec<&str> = match (usize::try_from(n), sep.is_empty()) {
        (Ok(0), _) => Vec::new(),
        (Ok(n), true) => {
            let mut pieces: Vec<&str> = Vec::new();
            let mut rest: &str = this;
            while let Some(c) = rest.chars().next() {
                if pieces.len() + 1 == n {
                    break;
                }
                let (head, tail) = rest.split_at(c.len_utf8());
                pieces.push(head);
                rest = tail;
            }
            if !rest.is_empty() {
                pieces.push(rest);
            }
            pieces
        }
        (Ok(n), false) => this.splitn(n, sep).collect(),
        (Err(_), true) => this
            .char_indices()
            .map(|(i, c)| &this[i..i + c.len_utf8()])
            .collect(),
        (Err(_), false) => this.split(sep).collect(),
    };
    let list: Vec<Box<dyn Val + 'v>> = pieces
        .into_iter()
        .map(|s| Box::new(CelString::from(s.to_owned())) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(list)))
}

/// `list.join([sep])`, the strings extension's, with the result's size checked first: it holds
/// one copy of `sep` per item.
fn join<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let sep = match args.get(1) {
        None => Some(""),
        Some(sep) => string_arg(sep),
    };
    let (Some(list), Some(sep)) = (args.first(), sep) else {
        return Err(no_member_overload("join", &args));
    };
    let (Kind::List, Some(items)) = (list.get_type().kind(), list.as_iterable()) else {
        return Err(no_member_overload("join", &args));
    };
    charge_val("join()", list.as_ref())?;
    let mut parts: Vec<&str> = Vec::new();
    let mut it = items.iter();
    while let Some(item) = it.next() {
        match item.downcast_ref::<CelString>() {
            Some(s) => parts.push(s.inner()),
            None => {
                return Err(ExecutionError::UnexpectedType {
                    got: item.get_type().name().to_owned(),
                    want: STRING_TYPE.name().to_owned(),
                })
            }
        }
    }
    let size = parts.iter().map(|p| p.len() as u128).sum::<u128>()
        + parts.len().saturating_sub(1) as u128 * sep.len() as u128;
    admit(
        "join()",
        Kind::String,
        Weight::bytes(usize::try_from(size).unwrap_or(usize::MAX)),
        true,
        true,
    )?;
    Ok(CowVal::owned(CelString::from(parts.join(sep))))
}

/// Declares the internal metering functions and kiln's checked `replace`, `split` and `join` on
/// the environment. Must run before the strings extension is added: a call resolves to the first
/// declared overload that accepts its arguments, and kiln's take `dyn` where the extension's take
/// `string` or `list`, so they are distinct declarations and kiln's come first.
pub(crate) fn extend_env(env: &mut Env) {
    let results = [
        env.add_overload(GO, "kiln.go", vec![DYN_TYPE], go),
        env.add_overload(GO, "kiln.go_units", vec![DYN_TYPE, DYN_TYPE], go),
        env.add_overload(SIZE, "kiln.size", vec![DYN_TYPE], size),
        env.add_overload(GROW, "kiln.grow", vec![DYN_TYPE, STRING_TYPE], grow),
        env.add_overload(
            FORMAT_ARGS,
            "kiln.format_args",
            vec![DYN_TYPE, DYN_TYPE],
            format_args,
        ),
        env.add_overload(COST, "kiln.cost", vec![DYN_TYPE], cost),
        env.add_overload(RANGE, "kiln.range", vec![DYN_TYPE], range),
        env.add_overload(TICK, "kiln.tick", vec![DYN_TYPE, DYN_TYPE], tick),
        env.add_member_overload(
            "replace",
            "kiln.string_replace",
            STRING_TYPE,
            vec![STRING_TYPE, DYN_TYPE],
            replace,
        ),
        env.add_member_overload(
            "replace",
            "kiln.string_replace_n",
            STRING_TYPE,
            vec![STRING_TYPE, DYN_TYPE, INT_TYPE],
            replace,
        ),
        env.add_member_overload(
            "split",
            "kiln.string_split",
            STRING_TYPE,
            vec![DYN_TYPE],
            split,
        ),
        env.add_member_overload(
            "split",
            "kiln.string_split_n",
            STRING_TYPE,
            vec![DYN_TYPE, INT_TYPE],
            split,
        ),
        env.add_member_overload("join", "kiln.list_join", LIST_TYPE, vec![DYN_TYPE], join),
        // `dyn`, as the extension declares `join()` on `list`.
        env.add_member_overload("join", "kiln.list_join_all", DYN_TYPE, vec![], join),
    ];
    for res in results {
        debug_assert!(res.is_ok(), "{res:?}");
    }
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
    let handlers: [(&str, super::library::Handler); 3] =
        [(INSERT, insert), (INSERT_ENTRY, insert_entry), (KEYS, keys)];
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
        let refused = run(
            "{'a': 1, 'b': 1}.transformMapEntry(k, v, {v: k})",
            &EvalBudget::default(),
        )
        .expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("insert failed: key Int(1) already exists"),
            "{refused}"
        );
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
                .contains("more than 1000 units of evaluation work in comprehension iterations"),
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
                .contains("`+` built a string of 40 bytes, over the limit of 30 bytes"),
            "{err}"
        );
        // The same through a comprehension's accumulator.
        let err = run(
            "['xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'].map(s, s)",
            &small,
        )
        .unwrap_err();
        assert!(
            overrun(&err)
                .unwrap()
                .contains("a comprehension or cel.bind built a value"),
            "{err}"
        );
        let err = run("lists.range(31).map(i, i)", &small).unwrap_err();
        assert!(overrun(&err).is_some(), "{err}");
        assert!(run("lists.range(30).map(i, i)", &small).is_ok());
    }

    #[test]
    fn string_growth_outside_comprehensions_is_bounded() {
        let small = EvalBudget {
            max_value_size: 1000,
            ..EvalBudget::default()
        };
        // `+` doubling, nested replace(), join and split with huge separators or results.
        let cases = [
            ("'xxxxxxxxxx' + 'xxxxxxxxxx'", None),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', s.replace('x', s).replace('x', s))",
                Some("replace() would build a string of 1600 bytes"),
            ),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', size(s.replace('x', s).replace('x', s.replace('x', s))))",
                Some("replace() would build a string of 1024"),
            ),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', s.split('').join(s + s))",
                Some("join() would build a string of 2016 bytes"),
            ),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', [s, s, s, s, s, s, s, s] + [s, s, s, s, s, s, s, s] + [s, s, s, s, s, s, s, s] + [s, s, s, s, s, s, s, s])",
                Some("`+` built a list weighing more than the limit of 1000"),
            ),
            (
                r#"cel.bind(s, '\\\\\\\\\\\\\\\\', strings.quote(strings.quote(strings.quote(strings.quote(strings.quote(strings.quote(strings.quote(s))))))))"#,
                Some("strings.quote() would build a string of"),
            ),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', '%s%s%s%s'.format([s, s, s, s]).replace('x', s))",
                Some("replace() would build a string of 4096 bytes"),
            ),
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', cel.bind(t, s + s + s + s + s, '%s%s%s%s%s'.format([t, t, t, t, t])))",
                // Refused before it is built: the format string and arguments say its size.
                Some("format() would build a string of 1250 bytes"),
            ),
            // Clauses that write more than their argument weighs: hex doubles a string, a
            // precision writes digits a single number does not hold.
            (
                "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', '%x %x %x %x %x %x'.format([s, s, s, s, s, s]))",
                Some("format() would build a string of 1205 bytes"),
            ),
            (
                "'%.100f%.100f%.100f%.100f%.100f%.100f%.100f%.100f%.100f%.100f'.format([1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5])",
                Some("format() would build a string of about 1040 bytes"),
            ),
        ];
        for (src, want) in cases {
            match (run(src, &small), want) {
                (Ok(_), None) => {}
                (Err(e), Some(w)) => {
                    let msg = overrun(&e).unwrap_or_else(|| panic!("{src}: {e}"));
                    assert!(msg.contains(w), "{src}: {msg}");
                    assert!(msg.contains("limit of 1000"), "{src}: {msg}");
                }
                (r, w) => panic!("{src}: {r:?}, wanted {w:?}"),
            }
        }
        // An overrun inside `||` is reported anyway.
        let err = run(
            "cel.bind(s, 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx', s.replace('x', s) == '' || true)",
            &small,
        )
        .unwrap_err();
        assert!(overrun(&err).is_some(), "{err}");
    }

    #[test]
    fn checked_functions_behave_as_the_extension() {
        let cases = [
            ("'a-b-c'.replace('-', '+')", "a+b+c"),
            ("'a-b-c'.replace('-', '+', 1)", "a+b-c"),
            ("'a-b-c'.replace('-', '+', -1)", "a+b+c"),
            ("'abc'.replace('', '.')", ".a.b.c."),
            ("'a,b,c'.split(',').join('/')", "a/b/c"),
            ("'a,b,c'.split(',', 2).join('/')", "a/b,c"),
            ("'a,b,c'.split(',', 0).join('/')", ""),
            ("'héllo'.split('').join(' ')", "h é l l o"),
            ("'héllo'.split('', 3).join(' ')", "h é llo"),
            ("['a', 'b'].join()", "ab"),
            ("'%s-%d'.format(['a', 1])", "a-1"),
            ("base64.encode(b'hi') + strings.quote('q')", "aGk=\"q\""),
        ];
        for (src, want) in cases {
            for budget in [None, Some(EvalBudget::default())] {
                let c = compile(src, &ExprLimits::default()).unwrap();
                let got = match &budget {
                    Some(b) => execute(&c.program, &new_context(), b),
                    None => c.program.execute(&new_context()),
                };
                assert_eq!(got, Ok(Value::from(want)), "{src}");
            }
        }
        // Wrong argument types fail as the extension's overloads would.
        let err = ok_err("'abc'.replace('a', 1)");
        assert!(
            err.contains("found no matching overload for 'replace'"),
            "{err}"
        );
        let err = ok_err("[1, 2].join(',')");
        assert!(err.contains("string"), "{err}");
        // Type checking still sees the calls as written.
        let c = compile("'a' + 'b'.replace('b', 'c')", &ExprLimits::default()).unwrap();
        assert!(c.refs.functions.contains("replace"));
    }

    fn ok_err(src: &str) -> String {
        run(src, &EvalBudget::default()).unwrap_err().to_string()
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
