//! cel-spec's conformance tests (`tests/simple/testdata/*.textproto` of github.com/google/cel-spec,
//! the commit named on the first line of `cel_spec/cases.jsonl`), replayed through kiln's CEL: each
//! expression is compiled with kiln's environment and evaluated under the default evaluation budget,
//! the entry point templates use, and its value compared with the one cel-spec gives.
//!
//! `cel_spec/cases.jsonl` is kiln's own form of those files, made by `cel_spec/extract.py` (run it
//! again on a newer cel-spec to refresh). Cases about features kro's environment does not have
//! (protocol buffer messages, containers, unknowns, cel.block…) carry `skip` with the reason and are
//! counted, not run. `cel_spec/known.txt` lists, with a reason, every case whose result differs
//! from cel-spec's; docs/cel.md describes them. A case listed there that starts to pass fails this
//! test too, so the list stays true.
//!
//! An expected error passes when kiln fails, at compile or evaluation: cel-go's messages are not
//! kiln's, and kiln's diagnostics carry their own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use cel::objects::Key;
use cel::Value;
use kiln_core::expr::budget::{execute, EvalBudget};
use kiln_core::expr::cel::{compile, root_context, ExprLimits};
use serde_json::Value as Json;

const CASES: &str = include_str!("cel_spec/cases.jsonl");
/// cel-go's tables for the lists, two-variable comprehensions and encoders extensions, made by
/// `cel_spec/extract_celgo.py` in the same form.
const CEL_GO_CASES: &str = include_str!("cel_spec/celgo_ext.jsonl");
const KNOWN: &str = include_str!("cel_spec/known.txt");

/// Our form of a cel-spec value (see extract.py) as a CEL value.
fn to_cel(v: &Json) -> Value {
    let (kind, x) = v
        .as_object()
        .and_then(|o| o.iter().next())
        .expect("a value is a one-key object");
    match kind.as_str() {
        "int" => Value::Int(x.as_str().unwrap().parse().unwrap()),
        "uint" => Value::UInt(x.as_str().unwrap().parse().unwrap()),
        "double" => Value::Float(match x.as_str().unwrap() {
            "NaN" => f64::NAN,
            "Infinity" => f64::INFINITY,
            "-Infinity" => f64::NEG_INFINITY,
            d => d.parse().unwrap(),
        }),
        "string" => Value::String(Arc::new(x.as_str().unwrap().to_string())),
        "bytes" => Value::Bytes(Arc::new(hex(x.as_str().unwrap()))),
        "bool" => Value::Bool(x.as_bool().unwrap()),
        "null" => Value::Null,
        "list" => Value::List(Arc::new(x.as_array().unwrap().iter().map(to_cel).collect())),
        "map" => {
            let mut m = HashMap::new();
            for e in x.as_array().unwrap() {
                let key = match to_cel(&e[0]) {
                    Value::Int(i) => Key::Int(i),
                    Value::UInt(u) => Key::Uint(u),
                    Value::Bool(b) => Key::Bool(b),
                    Value::String(s) => Key::String(s),
                    k => panic!("map key {k:?}"),
                };
                m.insert(key, to_cel(&e[1]));
            }
            Value::from(m)
        }
        k => panic!("unexpected value kind {k}"),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// Equal values of the same type: stricter than CEL's `==`, which equates `1`, `1u` and `1.0`.
/// Doubles compare by value, NaN equal to NaN (cel-spec expects NaN where a result is NaN).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => x == y,
        (Value::UInt(x), Value::UInt(y)) => x == y,
        (Value::Float(x), Value::Float(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Bytes(x), Value::Bytes(y)) => x == y,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Null, Value::Null) => true,
        (Value::List(x), Value::List(y)) => {
            x.len() == y.len() && x.iter().zip(y.iter()).all(|(a, b)| same(a, b))
        }
        (Value::Map(x), Value::Map(y)) => {
            x.map.len() == y.map.len()
                && x.map
                    .iter()
                    .all(|(k, v)| y.map.get(k).is_some_and(|w| same(v, w)))
        }
        _ => false,
    }
}

/// What running one case gave, in words for the failure report.
fn run(expr: &str, bindings: Option<&Json>) -> Result<Value, String> {
    let compiled = compile(expr, &ExprLimits::default()).map_err(|e| format!("compile: {e:?}"))?;
    let mut ctx = root_context().new_inner_scope();
    if let Some(b) = bindings.and_then(Json::as_object) {
        for (name, v) in b {
            ctx.add_variable_from_value(name.clone(), to_cel(v));
        }
    }
    execute(&compiled.program, &ctx, &EvalBudget::default()).map_err(|e| e.to_string())
}

#[derive(Default, Debug)]
struct Counts {
    run: usize,
    passed: usize,
    known: usize,
    skipped: BTreeMap<String, usize>,
}

#[test]
fn cel_spec_and_cel_go_tables() {
    let known: BTreeMap<&str, &str> = KNOWN
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (id, why) = l.split_once('\t').expect("known.txt: id<TAB>reason");
            assert!(
                !why.trim().is_empty(),
                "{id}: a known difference needs a reason"
            );
            (id, why)
        })
        .collect();
    let mut counts = Counts::default();
    let mut seen = Vec::new();
    let mut failures = Vec::new();
    let mut sources = Vec::new();
    let mut lines = Vec::new();
    for file in [CASES, CEL_GO_CASES] {
        let mut it = file.lines();
        let header: Json = serde_json::from_str(it.next().unwrap()).unwrap();
        assert!(header["commit"].as_str().is_some_and(|c| c.len() == 40));
        sources.push(format!("{} {}", header["source"], header["commit"]));
        lines.extend(it);
    }
    for line in lines {
        let case: Json = serde_json::from_str(line).unwrap();
        let id = case["id"].as_str().unwrap();
        if let Some(why) = case["skip"].as_str() {
            assert!(
                !known.contains_key(id),
                "{id} is skipped and listed as known"
            );
            *counts.skipped.entry(why.to_string()).or_default() += 1;
            continue;
        }
        counts.run += 1;
        seen.push(id.to_string());
        let expr = case["expr"].as_str().unwrap();
        // A panic in the crate is reported as this case's failure, not as the whole test's.
        let got = std::panic::catch_unwind(|| run(expr, case.get("bindings")))
            .unwrap_or_else(|_| Err("panicked".to_string()));
        let verdict: Result<(), String> = if let Some(msg) = case["error"].as_str() {
            match &got {
                Err(_) => Ok(()),
                Ok(v) => Err(format!("expected an error ({msg}), got {v:?}")),
            }
        } else if let Some(t) = case["value"].get("type") {
            // A type value: the crate turns types into their names on the way out, so ask CEL.
            let t = t.as_str().unwrap();
            match run(&format!("({expr}) == {t}"), case.get("bindings")) {
                Ok(Value::Bool(true)) => Ok(()),
                other => Err(format!("expected type {t}: ({expr}) == {t} gave {other:?}")),
            }
        } else {
            let want = to_cel(&case["value"]);
            match &got {
                Ok(v) if same(v, &want) => Ok(()),
                other => Err(format!("expected {want:?}, got {other:?}")),
            }
        };
        match (verdict, known.contains_key(id)) {
            (Ok(()), false) => counts.passed += 1,
            (Err(_), true) => counts.known += 1,
            (Ok(()), true) => failures.push(format!(
                "{id}: passes now; remove it from known.txt (and docs/cel.md)"
            )),
            (Err(e), false) => failures.push(format!("{id}: {expr}\n    {e}")),
        }
    }
    for id in known.keys() {
        assert!(
            seen.iter().any(|s| s == id),
            "known.txt names {id}, which is not a case that runs"
        );
    }
    eprintln!(
        "{}: {} run, {} as expected, {} known differences, {} skipped",
        sources.join(" + "),
        counts.run,
        counts.passed,
        counts.known,
        counts.skipped.values().sum::<usize>()
    );
    for (why, n) in &counts.skipped {
        eprintln!("  skipped {n:4}: {why}");
    }
    assert!(
        failures.is_empty(),
        "{} cases differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
