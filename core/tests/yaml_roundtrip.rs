//! YAML output round-trips through kiln's own reader (issue 7): for generated JSON-like documents,
//! `parse(yaml_stream([v])) == [v]`, strings a YAML 1.1 reader would take for something else are
//! written quoted, and emitting is deterministic.
//!
//! Kubernetes tooling (kubectl, Argo CD, Flux) reads YAML with go-yaml v2, i.e. YAML 1.1, where
//! `yes`, `on`, `y`, `0777`, `12:30` and `2001-12-14` are not strings. kiln's reader follows the
//! same rules, so "round-trips through kiln" implies "a YAML 1.1 consumer reads back the same
//! value"; the quoting checks below make the YAML 1.1 part explicit rather than relying on it.

use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::output::{direct_yaml, saphyr_yaml, to_yaml, yaml_stream};
use proptest::prelude::*;
use serde_json::{Map, Number, Value};

/// Strings that are something other than a string (or not this string) to some YAML reader, or
/// that need quoting or escaping to survive: YAML 1.1 booleans, nulls, octal/hex/binary/sexagesimal
/// numbers, floats, timestamps, merge and value keys, indicators, whitespace, control and
/// non-ASCII characters.
const SPECIAL: &[&str] = &[
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "True",
    "TRUE",
    "false",
    "False",
    "FALSE",
    "~",
    "null",
    "Null",
    "NULL",
    "0777",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1E3",
    "+1",
    "-1",
    "1.",
    ".5",
    "08",
    "1_000",
    "12:30",
    "190:20:30",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    ".NaN",
    "-.nan",
    ".nan",
    "<<",
    "=",
    "",
    " ",
    " lead",
    "trail ",
    "  both  ",
    "#",
    "# comment",
    "a #b",
    "a: b",
    ": ",
    "- ",
    "-",
    "--- ",
    "---",
    "...",
    "? x",
    "[a]",
    "{a: b}",
    "*alias",
    "&anchor",
    "!tag",
    "!!str",
    "%YAML",
    "@x",
    "`x",
    "|",
    ">",
    "'",
    "\"",
    "\\",
    "a\nb",
    "a\n",
    "\n",
    "\n\n",
    "line\n  indented",
    "\t",
    "a\tb",
    "\r",
    "a\r\nb",
    "\u{0}",
    "\u{7}",
    "\u{1b}[0m",
    "\u{7f}",
    "\u{85}",
    "\u{a0}",
    "\u{2028}",
    "\u{2029}",
    "\u{feff}",
    "\u{feff}x",
    "é",
    "日本語",
    "🦀",
    "a\u{301}",
    "${schema.spec.name}",
    "%",
    "1.0.0",
    "v1",
    "0",
    "-0",
    "0.0",
    "1e400",
    "9223372036854775808",
    "-9223372036854775809",
];

/// The subset of [`SPECIAL`] that a YAML 1.1 reader resolves to a non-string (or a different
/// string) when written plain, so it must be quoted (or block-written, for line breaks).
const MUST_QUOTE: &[&str] = &[
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "NO",
    "on",
    "On",
    "ON",
    "off",
    "Off",
    "OFF",
    "y",
    "Y",
    "n",
    "N",
    "true",
    "True",
    "TRUE",
    "false",
    "False",
    "FALSE",
    "~",
    "null",
    "Null",
    "NULL",
    "0777",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1E3",
    "+1",
    "-1",
    "1.",
    ".5",
    "08",
    "1_000",
    "12:30",
    "190:20:30",
    "2001-12-14",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    ".inf",
    "-.inf",
    "+.inf",
    ".Inf",
    ".NaN",
    "-.nan",
    ".nan",
    "<<",
    "",
    " lead",
    "trail ",
    "#",
    "a: b",
    "- ",
    "-",
    "*alias",
    "&anchor",
    "!tag",
    "'",
    "\"",
    "0",
    "-0",
    "0.0",
    "1e400",
    "9223372036854775808",
];

fn parse(text: &str) -> Vec<Value> {
    parse_file("out.yaml", text.to_string(), &YamlLimits::default())
        .unwrap_or_else(|d| panic!("kiln cannot read its own output ({d}):\n{text}"))
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn emit(v: &Value) -> String {
    yaml_stream(std::slice::from_ref(v)).expect("every JSON value can be written as YAML")
}

fn string() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => proptest::sample::select(SPECIAL).prop_map(str::to_string),
        // Any Unicode, control characters included.
        3 => any::<String>(),
        // Special words glued to ordinary text and whitespace.
        2 => (proptest::sample::select(SPECIAL), "[ a-z:#\\-\n]{0,4}", proptest::sample::select(SPECIAL))
            .prop_map(|(a, b, c)| format!("{a}{b}{c}")),
        // Long strings: one line, with spaces, and multi-line.
        1 => "[a-z ]{200,1500}",
        1 => "([a-z :#-]{0,60}\n){2,20}",
    ]
}

fn number() -> impl Strategy<Value = Value> {
    prop_oneof![
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        Just(Value::from(i64::MIN)),
        Just(Value::from(u64::MAX)),
        // Finite floats only: JSON (and so a Kubernetes object) has no NaN or infinity.
        any::<f64>()
            .prop_filter_map("finite", Number::from_f64)
            .prop_map(Value::Number),
        prop_oneof![
            Just(0.0),
            Just(-0.0),
            Just(1.0),
            Just(1e21),
            Just(1e-7),
            Just(0.1)
        ]
        .prop_filter_map("finite", Number::from_f64)
        .prop_map(Value::Number),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => number(),
        6 => string().prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
            proptest::collection::vec((string(), inner), 0..8)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// A document: a mapping, as every Kubernetes object is, or a bare non-null value (kiln skips
/// null documents when reading a stream, so a lone `null` cannot come back as one document).
fn document() -> impl Strategy<Value = Value> {
    prop_oneof![
        4 => proptest::collection::vec((string(), value()), 0..8)
            .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        1 => value().prop_filter("a null document is skipped", |v| !v.is_null()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn documents_round_trip(v in document()) {
        let text = emit(&v);
        prop_assert_eq!(parse(&text), vec![v], "emitted:\n{}", text);
    }

    #[test]
    fn streams_round_trip(docs in proptest::collection::vec(document(), 1..4)) {
        let text = yaml_stream(&docs).unwrap();
        prop_assert_eq!(parse(&text), docs, "emitted:\n{}", text);
    }

    #[test]
    fn emitting_is_deterministic(v in document()) {
        prop_assert_eq!(emit(&v), emit(&v));
    }
}

// The direct emitter must write exactly what serde-saphyr writes, whenever it writes anything.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn direct_emitter_equals_serde_saphyr(v in document()) {
        prop_assert_eq!(to_yaml(&v).unwrap(), saphyr_yaml(&v).unwrap());
    }

    #[test]
    fn direct_emitter_equals_serde_saphyr_on_kubernetes_shapes(v in k8s_object()) {
        let direct = direct_yaml(&v);
        prop_assert!(direct.is_some(), "the common shape must take the direct path: {v}");
        prop_assert_eq!(direct.unwrap(), saphyr_yaml(&v).unwrap());
    }
}

/// Strings as they appear in manifests: names, labels, images, quantities, ports, plus the
/// special words (all single-line, so the direct path applies).
fn k8s_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z][a-z0-9-]{0,20}",
        2 => "[a-zA-Z0-9./:_-]{1,30}",
        1 => "[0-9]{1,5}(m|Mi|Gi)?",
        1 => proptest::sample::select(SPECIAL)
            .prop_filter("one line", |s| !s.contains(['\n', '\r']))
            .prop_map(str::to_string),
        1 => "[ -~]{0,40}",
    ]
}

fn k8s_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        2 => any::<i64>().prop_map(Value::from),
        6 => k8s_string().prop_map(Value::String),
    ]
}

fn k8s_value() -> impl Strategy<Value = Value> {
    k8s_leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((k8s_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn k8s_object() -> impl Strategy<Value = Value> {
    proptest::collection::vec((k8s_string(), k8s_value()), 1..8)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

/// The scalar text written for `k: s`, i.e. whatever follows `k: ` on the first line.
fn written_scalar(s: &str) -> String {
    let text = emit(&serde_json::json!({ "k": s }));
    text.strip_prefix("k:")
        .unwrap_or_else(|| panic!("unexpected output for {s:?}: {text}"))
        .trim_start_matches(' ')
        .lines()
        .next()
        .unwrap_or("")
        .to_string()
}

#[test]
fn yaml_1_1_look_alikes_are_quoted() {
    let mut unquoted = Vec::new();
    for s in MUST_QUOTE {
        let w = written_scalar(s);
        let quoted = w.starts_with('"') || w.starts_with('\'');
        // A literal or folded block is a string in every YAML version too.
        let block = w.starts_with('|') || w.starts_with('>');
        if !(quoted || block) {
            unquoted.push(format!("{s:?} written as {w:?}"));
        }
    }
    assert!(
        unquoted.is_empty(),
        "written plain:\n{}",
        unquoted.join("\n")
    );
}

#[test]
fn every_special_string_round_trips_as_value_and_key() {
    for s in SPECIAL {
        for v in [
            serde_json::json!({ "k": s }),
            serde_json::json!({ *s: "v" }),
            serde_json::json!({ "list": [s, s] }),
            serde_json::json!({ "nested": { *s: { "k": s } } }),
        ] {
            let text = emit(&v);
            assert_eq!(parse(&text), vec![v.clone()], "emitted:\n{text}");
        }
    }
}

#[test]
fn very_long_strings_round_trip() {
    for s in [
        "x".repeat(1 << 20),
        "word ".repeat(50_000),
        "line\n".repeat(20_000),
    ] {
        let v = serde_json::json!({ "data": { "big": s } });
        let text = emit(&v);
        assert_eq!(parse(&text), vec![v]);
    }
}

#[test]
fn emitting_twice_gives_identical_bytes() {
    let v = serde_json::json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x", "labels": {"z": "yes", "a": "0777"}},
        "data": {"multi": "a\nb\n", "n": "1e3", "empty": "", "u": "日本語"},
        "list": [1, 2.5, -3, true, null, {"k": "~"}],
    });
    let first = emit(&v);
    for _ in 0..10 {
        assert_eq!(emit(&v), first);
    }
}
