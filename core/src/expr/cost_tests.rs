//! The evaluation budget bounds wall time (issue 39): every operation whose work grows with the
//! size of a value is charged in proportion to that work, so no expression within the budget
//! runs long.
//!
//! Two checks, over one table of the costliest things an expression can do — string and list
//! functions over large values, regular expressions, comparisons, copies, comprehensions:
//!
//! - without a clock: each case, run on values twice as large, is charged (nearly) twice as many
//!   units (or more, for quadratic work). A case whose work the budget does not see would be
//!   charged the same at both sizes.
//! - with a generous clock, as a second line: each case, scaled up until it spends the budget,
//!   ends (in KLN5007 or with a value) well within a bound a hang would not meet.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use cel::Value;
use serde_json::{json, Value as Json};

use super::budget::{execute_counted, overrun, EvalBudget};
use super::cel::{compile, new_context, ExprLimits};
use super::value::to_val;

/// The variables of size `n` that `src` reads: `s` and `t` equal strings of `n` bytes, `z` the
/// number 1 behind `n` zeros, `l` the ints below `n`, `ls` `n` short strings, `m` a small map,
/// `j` the JSON text of `l`, `n` itself.
fn variables(src: &str, n: usize) -> Vec<(&'static str, Json)> {
    let reads = |name: &str| {
        src.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .any(|w| w == name)
    };
    let ints = || (0..n).collect::<Vec<usize>>();
    let mut out = Vec::new();
    for name in ["s", "t", "z", "l", "ls", "m", "j", "n"] {
        if !reads(name) {
            continue;
        }
        let v = match name {
            "s" | "t" => json!("x".repeat(n)),
            "z" => json!(format!("{}1", "0".repeat(n))),
            "l" => json!(ints()),
            "ls" => json!((0..n).map(|i| format!("v{i}")).collect::<Vec<_>>()),
            "m" => Json::Object((0..16).map(|i| (format!("k{i}"), json!(i))).collect()),
            "j" => json!(serde_json::to_string(&ints()).unwrap()),
            _ => json!(n),
        };
        out.push((name, v));
    }
    out
}

/// A case: what it exercises, the expression with `LOOP` standing for the number of times it
/// repeats the operation, and the sizes it is measured at (`small`, twice that, and `large`,
/// where it is meant to spend the whole budget).
struct Case {
    what: &'static str,
    src: &'static str,
    small: usize,
    large: usize,
}

const fn case(what: &'static str, src: &'static str, small: usize, large: usize) -> Case {
    Case {
        what,
        src,
        small,
        large,
    }
}

/// Strings of 64 KiB and lists of 16 thousand at the small size; the large ones are what
/// inputs can hold (strings of several MiB, lists of a million).
const S: usize = 1 << 16;
const L: usize = 1 << 14;
const BIG_S: usize = 8 << 20;
const BIG_L: usize = 1_000_000;

const CASES: &[Case] = &[
    // Strings: reading, searching, building.
    case("size", "lists.range(LOOP).all(i, size(s) > 0)", S, BIG_S),
    case("contains", "lists.range(LOOP).all(i, !s.contains('y'))", S, BIG_S),
    case("startsWith", "lists.range(LOOP).all(i, s.startsWith(t))", S, BIG_S),
    case("endsWith", "lists.range(LOOP).all(i, s.endsWith(t))", S, BIG_S),
    case("indexOf", "cel.bind(u, t + 'y', lists.range(LOOP).all(i, s.indexOf(u) < 0))", S, BIG_S),
    case("lastIndexOf", "cel.bind(u, 'y' + t, lists.range(LOOP).all(i, s.lastIndexOf(u, 3) < 0))", S, BIG_S),
    case("charAt", "lists.range(LOOP).all(i, s.charAt(size(s) - 1) == 'x')", S, BIG_S),
    case("substring", "lists.range(LOOP).all(i, s.substring(1) != '')", S, BIG_S),
    case("lowerAscii", "lists.range(LOOP).all(i, s.lowerAscii() != '')", S, BIG_S),
    case("upperAscii", "lists.range(LOOP).all(i, s.upperAscii() != '')", S, BIG_S),
    case("trim", "lists.range(LOOP).all(i, s.trim() != '')", S, BIG_S),
    case("reverse", "lists.range(LOOP).all(i, s.reverse() != '')", S, BIG_S),
    case("strings.quote", "lists.range(LOOP).all(i, strings.quote(s) != '')", S, BIG_S),
    case("replace", "lists.range(LOOP).all(i, s.replace('y', 'z') != '')", S, BIG_S),
    case("split", "lists.range(LOOP).all(i, s.split('').size() > 0)", S, BIG_S),
    case("join", "lists.range(LOOP).all(i, ls.join(',') != '')", L, BIG_L),
    case("format", "lists.range(LOOP).all(i, '%s'.format([s]) != '')", S, BIG_S),
    case("format, unused arguments", "lists.range(LOOP).all(i, 'x'.format(l) == 'x')", L, BIG_L),
    case("int", "lists.range(LOOP).all(i, int(z) == 1)", S, BIG_S),
    case("bytes", "lists.range(LOOP).all(i, size(bytes(s)) > 0)", S, BIG_S),
    case("base64", "lists.range(LOOP).all(i, base64.encode(b'') == '' && size(base64.encode(bytes(s))) > 0)", S, BIG_S),
    case("hash", "lists.range(LOOP).all(i, hash.sha256(s) != '')", S, BIG_S),
    // Regular expressions.
    case("matches", "lists.range(LOOP).all(i, !s.matches('y'))", S, BIG_S),
    case("matches, large automaton", "lists.range(LOOP).all(i, !s.matches('(x|z)*y(x|z){20}'))", S, BIG_S),
    case("find", "lists.range(LOOP).all(i, s.find('y') == '')", S, BIG_S),
    case("findAll", "lists.range(LOOP).all(i, s.findAll('x').size() > 0)", S, BIG_S),
    case("findAll, empty", "lists.range(LOOP).all(i, s.findAll('').size() > 0)", S, BIG_S),
    // Comparisons, indexing and copies the interpreter does itself.
    case("==", "lists.range(LOOP).all(i, s == t)", S, BIG_S),
    case("<", "lists.range(LOOP).all(i, !(s < t))", S, BIG_S),
    case("in a list", "lists.range(LOOP).all(i, !(-1 in l))", L, BIG_L),
    case("in a map", "lists.range(LOOP).all(i, !(s in m))", S, BIG_S),
    case("map index", "lists.range(LOOP).all(i, !m[?s].hasValue())", S, BIG_S),
    case("list literal", "lists.range(LOOP).all(i, [s, t].size() == 2)", S, BIG_S),
    case("map literal", "lists.range(LOOP).all(i, {'a': s}.size() == 1)", S, BIG_S),
    case("optional.of", "lists.range(LOOP).all(i, optional.of(s).hasValue())", S, BIG_S),
    case("optional select", "cel.bind(o, {'a': s}, lists.range(LOOP).all(i, o.?a.hasValue()))", S, BIG_S),
    // Lists.
    case("distinct", "lists.range(LOOP).all(i, l.distinct().size() > 0)", L, BIG_L),
    case("sort", "lists.range(LOOP).all(i, l.sort().size() > 0)", L / 4, BIG_L),
    case("sortBy", "lists.range(LOOP).all(i, l.sortBy(x, -x).size() > 0)", L / 4, BIG_L),
    case("flatten", "lists.range(LOOP).all(i, [l, l].flatten().size() > 0)", L, BIG_L),
    case("slice", "lists.range(LOOP).all(i, l.slice(1, size(l)).size() > 0)", L, BIG_L),
    case("list reverse", "lists.range(LOOP).all(i, l.reverse().size() > 0)", L, BIG_L),
    case("lists.range", "lists.range(LOOP).all(i, lists.range(n).size() > 0)", L, BIG_L),
    case("math.greatest", "lists.range(LOOP).all(i, math.greatest(l) > 0)", L, BIG_L),
    case("sum", "lists.range(LOOP).all(i, l.sum() > 0)", L, BIG_L),
    case("list indexOf", "lists.range(LOOP).all(i, l.indexOf(-1) < 0)", L, BIG_L),
    case("isSorted", "lists.range(LOOP).all(i, l.isSorted())", L, BIG_L),
    case("json.marshal", "lists.range(LOOP).all(i, json.marshal(l) != '')", L, BIG_L),
    case("json.unmarshal", "lists.range(LOOP).all(i, size(json.unmarshal(j)) > 0)", L, BIG_L),
    // Comprehensions, nested ones, and a wide body.
    case("all", "lists.range(LOOP).all(i, l.all(x, x >= 0))", L, BIG_L),
    case("all over strings", "lists.range(LOOP).all(i, ls.all(x, x != ''))", L, BIG_L),
    case("exists", "lists.range(LOOP).all(i, !l.exists(x, x < 0))", L, BIG_L),
    case("map", "lists.range(LOOP).all(i, l.map(x, x).size() > 0)", 256, BIG_L),
    case("filter", "lists.range(LOOP).all(i, l.filter(x, true).size() > 0)", 256, BIG_L),
    case("transformList", "lists.range(LOOP).all(i, l.transformList(k, v, v).size() > 0)", 256, BIG_L),
    case("nested", "lists.range(LOOP).all(i, l.all(x, l.all(y, true)))", 64, BIG_L),
    case(
        "wide body",
        "lists.range(LOOP).all(i, l.all(x, [x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x].size() > 0))",
        L / 16,
        BIG_L,
    ),
];

/// How many times the small sizes repeat the operation.
const LOOP: usize = 8;

/// Compile `src` with `LOOP` replaced, bind the variables of size `n`, evaluate under `budget`:
/// the result and the units charged.
fn run(src: &str, loops: usize, n: usize, budget: &EvalBudget) -> (Result<Value, String>, u64) {
    let src = src.replace("LOOP", &loops.to_string());
    let limits = ExprLimits::default();
    let c = compile(&src, &limits).unwrap_or_else(|e| panic!("{src}: {e:?}"));
    let mut ctx = new_context();
    for (name, v) in variables(&src, n) {
        ctx.add_variable_as_val(name, to_val(&v));
    }
    let (r, units) = execute_counted(&c.program, &ctx, budget);
    let r = r.map_err(|e| match overrun(&e) {
        Some(m) => format!("KLN5007 {m}"),
        None => e.to_string(),
    });
    (r, units)
}

#[test]
fn work_that_grows_with_a_value_is_charged_in_proportion() {
    let budget = EvalBudget::default();
    let mut problems = Vec::new();
    for c in CASES {
        let (r1, u1) = run(c.src, LOOP, c.small, &budget);
        let (r2, u2) = run(c.src, LOOP, 2 * c.small, &budget);
        if !matches!((&r1, &r2), (Ok(Value::Bool(true)), Ok(Value::Bool(true)))) {
            problems.push(format!("{}: {r1:?} / {r2:?}", c.what));
            continue;
        }
        // Each repetition of the operation is charged for the size it handles: doubling the
        // size nearly doubles the charge.
        if u1 < 200 * LOOP as u64 || (u2 as f64) < 1.6 * u1 as f64 {
            problems.push(format!(
                "{}: {u1} units at size {}, {u2} at twice that",
                c.what, c.small
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Run `f` on a thread; `None` if it has not finished after `limit` (the thread is left behind,
/// and the test fails).
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(16 << 20)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    rx.recv_timeout(limit).ok()
}

#[test]
fn the_budget_bounds_wall_time() {
    // A fifth of the default budget: time grows with the units charged, and a case that does
    // work the budget does not see runs for minutes at these sizes, whatever the budget.
    let budget = EvalBudget {
        max_iterations: EvalBudget::default().max_iterations / 5,
        ..EvalBudget::default()
    };
    ends_in_time(CASES.iter().map(|c| (c.what, c.src, c.large)), budget);
}

#[test]
fn the_slowest_work_per_unit_ends_in_time_at_the_default_budget() {
    // What costs the most time per unit charged: many small steps (the interpreter's own work
    // between two charges), in loops, on many short values. About a second of a release build.
    let slowest = ["all over strings", "wide body", "in a list", "nested"];
    let cases = CASES.iter().filter(|c| slowest.contains(&c.what));
    ends_in_time(
        cases.map(|c| (c.what, c.src, c.large)),
        EvalBudget::default(),
    );
}

/// Each case, at its large size, ends (in KLN5007, or with a value after charging at least a
/// tenth of the budget) within a bound generous for a debug build on a busy machine.
fn ends_in_time(
    cases: impl Iterator<Item = (&'static str, &'static str, usize)>,
    budget: EvalBudget,
) {
    let limit = Duration::from_secs(120);
    let mut problems = Vec::new();
    for (what, src, large) in cases {
        let start = Instant::now();
        let outcome = within(limit, move || run(src, 1_000, large, &budget));
        match outcome {
            None => problems.push(format!("{what}: still running after {limit:?}")),
            Some((Ok(v), units)) => {
                // Finishing is fine too, if the work was charged.
                if units < budget.max_iterations / 10 {
                    problems.push(format!("{what}: finished with {v:?} after {units} units"));
                }
            }
            Some((Err(e), _)) if e.starts_with("KLN5007") => {}
            Some((Err(e), _)) => problems.push(format!("{what}: {e}")),
        }
        let took = start.elapsed();
        if took > limit {
            problems.push(format!("{what}: took {took:?}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn what_grows_is_refused_before_it_is_built() {
    let small = EvalBudget {
        max_value_size: 1000,
        ..EvalBudget::default()
    };
    // 2,001 matches, 2,000 numbers, 2,000 numbers written: each counted as it is found, read or
    // written, and refused at the limit.
    for (src, want) in [
        (
            "s.findAll('').size()",
            "findAll() would build a list weighing more than the limit of 1000",
        ),
        (
            "size(json.unmarshal(j))",
            "json.unmarshal() would build a value weighing more than the limit of 1000",
        ),
        (
            "json.marshal(l)",
            "json.marshal() would build a string of about 10",
        ),
    ] {
        let (r, _) = run(src, 1, 2000, &small);
        let e = r.expect_err(src);
        assert!(e.contains(want), "{src}: {e}");
    }
}

#[test]
fn a_regex_is_charged_for_compiling_once_per_evaluation_cached_or_not() {
    let same = "lists.range(LOOP).all(i, s.matches('^x+$') && s.matches('^x+$'))";
    let two = "lists.range(LOOP).all(i, s.matches('^x+$') && s.matches('^y+$') == false)";
    let budget = EvalBudget::default();
    let (r, first) = run(same, 100, 64, &budget);
    assert_eq!(r, Ok(Value::Bool(true)));
    // The same evaluation again, on this thread (the pattern is cached now) and on another
    // (where it is not): the same charge.
    assert_eq!(run(same, 100, 64, &budget).1, first);
    let elsewhere = std::thread::spawn(move || run(same, 100, 64, &budget).1);
    assert_eq!(elsewhere.join().unwrap(), first);
    // A second pattern costs one compilation more, however often it is used.
    let extra = |loops| run(two, loops, 64, &budget).1 - run(same, loops, 64, &budget).1;
    assert!(extra(1) > 0);
    assert_eq!(extra(1), extra(100));
}

#[test]
fn distinct_is_not_quadratic() {
    // Comparing every pair of 300,000 elements takes hours; hashing them, seconds.
    let outcome = within(Duration::from_secs(120), || {
        run(
            "lists.range(300000).distinct().size()",
            1,
            0,
            &EvalBudget::default(),
        )
        .0
    });
    assert_eq!(outcome, Some(Ok(Value::Int(300_000))));
}

/// `map`, `filter` and `transformList` build their result in place (the crate's append shape):
/// their work, and what they are charged, is linear in the list, so a list of ten thousand
/// elements maps well within the default budget (it was charged quadratically, and failed).
#[test]
fn map_and_filter_are_linear() {
    let budget = EvalBudget::default();
    for src in [
        "l.map(x, x).size() > 0",
        "l.map(x, x > 1, x).size() > 0",
        "l.filter(x, x % 2 == 0).size() > 0",
        "l.transformList(i, v, v).size() > 0",
        "l.transformList(i, v, i > 1, v).size() > 0",
    ] {
        let (r1, u1) = run(src, 1, 10_000, &budget);
        let (r2, u2) = run(src, 1, 20_000, &budget);
        assert_eq!(r1, Ok(Value::Bool(true)), "{src}");
        assert_eq!(r2, Ok(Value::Bool(true)), "{src}");
        assert!(
            u1 >= 10_000 && (u2 as f64) < 2.2 * u1 as f64,
            "{src}: {u1} units for 10,000 elements, {u2} for 20,000"
        );
    }
}
