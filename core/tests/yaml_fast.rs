//! The fast YAML reader (`document::fast`) against serde-saphyr, the reader it stands in for.
//!
//! The contract under test: whenever `fast::parse` answers, its documents are exactly what
//! serde-saphyr gives for the same text (`document::parse_yaml_reference`), key order and number
//! kinds included. Values are compared as JSON text because `serde_json::Value`'s equality ignores
//! the order of keys. Companion checks make sure the fast path is actually taken (the examples,
//! most of the corpus, kiln's own output, common layouts), so that it cannot decay into "always
//! not sure" unnoticed.
//!
//! Inputs: every YAML file of the repository's testdata/ and examples/, documents written by
//! kiln's own emitter, and hand-built block YAML in the layouts people write (compact and
//! same-column sequences, comments, flow lists, odd indentation, CRLF) with scalars drawn from a
//! pool of spellings that YAML readers disagree on.

use std::path::{Path, PathBuf};

use kiln_core::document::{fast, parse_yaml_reference, YamlLimits};
use kiln_core::output::to_yaml;
use proptest::prelude::*;
use serde_json::{Map, Value};

/// `Some(Ok(()))`: the fast path answered and agreed with serde-saphyr; `Some(Err(why))`: it
/// answered and disagreed, or answered where serde-saphyr fails; `None`: it declined.
fn agrees(text: &str) -> Option<Result<(), String>> {
    let limits = YamlLimits::default();
    let docs = fast::parse(text, &limits)?;
    let got = serde_json::to_string(&docs).expect("values serialise");
    Some(match parse_yaml_reference("t.yaml", text, &limits) {
        Ok(want) => {
            let want = serde_json::to_string(&want).expect("values serialise");
            if got == want {
                Ok(())
            } else {
                Err(format!(
                    "fast path: {got}\nserde-saphyr: {want}\ninput: {text:?}"
                ))
            }
        }
        Err(e) => Err(format!(
            "fast path accepted what serde-saphyr refuses ({}): {text:?}",
            e.message
        )),
    })
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            yaml_files(&p, out);
        } else if matches!(p.extension().and_then(|x| x.to_str()), Some("yaml" | "yml")) {
            out.push(p);
        }
    }
}

#[test]
fn repository_yaml_files_agree_with_serde_saphyr() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    for dir in ["testdata", "examples"] {
        yaml_files(&root.join(dir), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "only {} YAML files found", files.len());
    let mut fast_files = Vec::new();
    let mut failures = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue; // not UTF-8: refused before any parser sees it
        };
        match agrees(&text) {
            Some(Ok(())) => fast_files.push(f.strip_prefix(&root).unwrap_or(f).to_path_buf()),
            Some(Err(e)) => failures.push(format!("{}: {e}", f.display())),
            None => {}
        }
    }
    eprintln!(
        "fast path: {} of {} YAML files under testdata/ and examples/",
        fast_files.len(),
        files.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    // The fast path must stay worth having: the examples, and most of the corpus (deliberately
    // varied test inputs: block scalars, anchors, templated keys, broken files; 662 of 739
    // files took the fast path when this was written).
    for must in ["examples/webapp/instances.yaml", "examples/webapp/rgd.yaml"] {
        assert!(
            fast_files.iter().any(|f| f == Path::new(must)),
            "{must} no longer takes the fast path"
        );
    }
    assert!(
        fast_files.len() * 4 >= files.len() * 3,
        "only {} of {} files take the fast path",
        fast_files.len(),
        files.len()
    );
}

#[test]
fn a_benchmark_fleet_instance_takes_the_fast_path() {
    // The shape of `kiln-bench`'s generated instances (`bench/src/fleet.rs`).
    let text = "apiVersion: bench.kiln.dev/v1alpha1
kind: BenchApp
metadata:
  name: app-00000
  namespace: team-00
spec:
  image: ghcr.io/example/service-0
  tag: \"1.5.12\"
  replicas: 1
  port: 8005
  team: team-0
  tier: frontend
  logLevel: info
  regions: [us-east-1, eu-west-1]
  labels:
    cost-center: cc-4
  ingress:
    enabled: true
    host: app-00000.example.com
  autoscaling:
    enabled: false
    maxReplicas: 4
    cpu: 70
";
    assert_eq!(agrees(text), Some(Ok(())));
}

// ---------------------------------------------------------------------------------------------
// Documents written by kiln's emitter

/// Spellings that are something other than a string to some YAML reader, or need quoting.
const NASTY: &[&str] = &[
    "yes",
    "Yes",
    "on",
    "OFF",
    "y",
    "n",
    "N",
    "true",
    "False",
    "~",
    "null",
    "NULL",
    "0777",
    "0o17",
    "0x1F",
    "0b101",
    "1e3",
    "1_000",
    "+1",
    "-1",
    "1.5",
    "1.",
    ".5",
    "08",
    "12:30",
    "2001-12-14",
    ".inf",
    "-.inf",
    ".nan",
    "<<",
    "=",
    "",
    " ",
    " lead",
    "trail ",
    "#",
    "# x",
    "a #b",
    "a: b",
    "a:",
    "- x",
    "-x",
    "--port=8080",
    "? x",
    "[a]",
    "{a: 1}",
    "&a",
    "*a",
    "!t",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    "\"quoted\"",
    "'it''s'",
    "it's",
    "tab\there",
    "multi\nline",
    "é",
    "日本語",
    "\u{1F600}",
    "\u{85}",
    "\u{2028}",
    "\u{feff}x",
    "\x07",
    "cc-4",
    "v1.2.3",
    "8080/TCP",
    "12hz",
];

fn nasty_string() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(NASTY).prop_map(str::to_string),
        2 => "[a-z][a-z0-9-]{0,12}",
        1 => "[ -~]{0,12}",
        1 => any::<String>().prop_map(|s| s.chars().take(8).collect()),
    ]
}

fn nasty_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        1 => Just(Value::Null),
        1 => any::<bool>().prop_map(Value::Bool),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<u64>().prop_map(Value::from),
        1 => prop_oneof![Just(0.5), Just(-1.25), Just(1e21), Just(0.1), Just(100.0)]
            .prop_map(Value::from),
        6 => nasty_string().prop_map(Value::String),
    ]
}

fn nasty_value() -> impl Strategy<Value = Value> {
    nasty_leaf().prop_recursive(5, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            proptest::collection::vec((nasty_string(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

/// What manifests are mostly made of: names, ints, booleans, nested maps and lists of them.
fn plain_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        4 => "[a-z][a-z0-9-]{0,12}".prop_map(Value::String),
        1 => any::<i64>().prop_map(Value::from),
        1 => any::<bool>().prop_map(Value::Bool),
    ];
    leaf.prop_recursive(4, 48, 5, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec(("[a-z][a-z0-9._/-]{0,12}", inner), 0..5)
                .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>())),
        ]
    })
}

fn plain_object() -> impl Strategy<Value = Value> {
    proptest::collection::vec(("[a-z][a-z0-9._/-]{0,12}", plain_value()), 1..8)
        .prop_map(|kv| Value::Object(kv.into_iter().collect::<Map<_, _>>()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn emitted_documents_agree(v in nasty_value()) {
        let text = to_yaml(&v).unwrap();
        if let Some(Err(e)) = agrees(&text) {
            prop_assert!(false, "{}", e);
        }
    }

    #[test]
    fn emitted_plain_objects_take_the_fast_path(v in plain_object()) {
        let text = to_yaml(&v).unwrap();
        match agrees(&text) {
            Some(Ok(())) => {}
            Some(Err(e)) => prop_assert!(false, "{}", e),
            None => prop_assert!(false, "fast path declined kiln's own output:\n{}", text),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Hand-built block YAML

/// Scalars as written in the text (already quoted where quoted), plain ones included whatever
/// they look like: the fast path must type them as serde-saphyr does or decline. The common ones
/// are each within the subset (so that whole documents of them are too, often enough to test
/// the combinations); the rare ones each make the fast path decline, or make the text invalid.
const WRITTEN_COMMON: &[&str] = &[
    "yes",
    "on",
    "Off",
    "y",
    "N",
    "true",
    "FALSE",
    "0777",
    "00",
    "~",
    "null",
    "Null",
    "-1",
    "0",
    "42",
    "1.5",
    "-2.25",
    "00.5",
    "18446744073709551615",
    "-9223372036854775808",
    "2001-12-14",
    "1.0.0",
    "1e",
    "\"quoted\"",
    "'it''s'",
    "''",
    "\"\"",
    "\"a\\tb\\u00e9\\x41\\\\\"",
    "'#not a comment'",
    "-x",
    "--port=8080",
    "a b",
    "${x}",
    "x#y",
    "x #y",
    "[a, b]",
    "[]",
    "{}",
    "{a: 1}",
    "[a, [b, {c: d}]]",
    "é",
    "日本",
    "cc-4",
    "v1",
    "12hz",
    "8080/TCP",
    "inf",
    "-inf",
    "~x",
    ".foo",
    "'a' # c",
    "a]",
    "b}",
    "f,g",
    "\"tab\tinside\"",
    "_1",
    "=x",
    "http://a:1/b",
];

const WRITTEN_RARE: &[&str] = &[
    "1e3",
    "-0",
    "+1",
    "1.",
    ".5",
    ".inf",
    "-.inf",
    ".nan",
    "0x1F",
    "1_000",
    "18446744073709551616",
    "-9223372036854775809",
    "12:30",
    "\"\\ud83d\\ude00\"",
    "a: b",
    "#x",
    "- x",
    "",
    "[a,]",
    "{a: b, a: c}",
    "=",
    "<<",
    "&a x",
    "*a",
    "!t x",
    "|",
    ">",
    "@x",
    "%x",
    "?x",
    ":x",
    "x:",
    "\"unclosed",
    "'unclosed",
    "a\tb",
    "\"a\"#c",
    "x: y: z",
    "[a: b]",
    "{a}",
    "{a:b}",
];

/// Keys as written, the same way.
const KEYS_COMMON: &[&str] = &[
    "a",
    "b",
    "name",
    "app.kubernetes.io/name",
    "k_8",
    "x.y",
    "1",
    "42",
    "true",
    "on",
    "y",
    "\"q\"",
    "'s'",
    "\"\"",
    "\"1.5\"",
    "cost-center",
    "$ref",
    "1.0.0",
    "\"a b\"",
];

const KEYS_RARE: &[&str] = &[
    "0777", "1.5", "null", "~", "\"a\"", "a b", "-a", "<<", "\"1\"", "é", "? a", "[a]", "a:b",
];

fn written() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        12 => proptest::sample::select(WRITTEN_COMMON),
        1 => proptest::sample::select(WRITTEN_RARE),
    ]
}

fn key() -> impl Strategy<Value = &'static str> {
    prop_oneof![
        12 => proptest::sample::select(KEYS_COMMON),
        1 => proptest::sample::select(KEYS_RARE),
    ]
}

#[derive(Debug, Clone)]
enum Node {
    Scalar(&'static str),
    Map(Vec<(&'static str, Node)>),
    Seq(Vec<Node>),
}

fn node() -> impl Strategy<Value = Node> {
    let leaf = written().prop_map(Node::Scalar);
    leaf.prop_recursive(4, 40, 4, |inner| {
        prop_oneof![
            proptest::collection::vec((key(), inner.clone()), 1..5).prop_map(Node::Map),
            proptest::collection::vec(inner, 1..5).prop_map(Node::Seq),
        ]
    })
}

/// Layout decisions, drawn from a seed so that a failing case shrinks along with its tree.
struct Layout {
    state: u64,
    crlf: bool,
    /// Write any scalar list in flow style, even ones whose items make it a nested or broken
    /// flow collection (the fast path must decline those); otherwise only lists of flow-safe
    /// items.
    any_flow: bool,
}

impl Layout {
    fn new(seed: u64) -> Self {
        let mut l = Layout {
            state: seed | 1,
            crlf: false,
            any_flow: true,
        };
        l.crlf = l.one_in(8);
        l
    }

    fn next(&mut self) -> u64 {
        // xorshift64
        let mut x = self.state;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.state = x;
        x
    }

    fn one_in(&mut self, n: u64) -> bool {
        self.next() % n == 0
    }

    fn step(&mut self) -> usize {
        [2, 2, 2, 4, 1, 3][(self.next() % 6) as usize]
    }

    fn nl(&self, out: &mut String) {
        out.push_str(if self.crlf { "\r\n" } else { "\n" });
    }

    /// A trailing comment, sometimes, then the end of the line.
    fn end_line(&mut self, out: &mut String) {
        if self.one_in(6) {
            out.push_str(" # trailing");
        }
        self.nl(out);
        self.between(out);
    }

    /// Sometimes a blank or comment line (at any column: comments need not be indented).
    fn between(&mut self, out: &mut String) {
        if self.one_in(8) {
            let col = (self.next() % 6) as usize;
            out.push_str(&" ".repeat(col));
            out.push_str("# comment");
            self.nl(out);
        }
        if self.one_in(10) {
            self.nl(out);
        }
    }

    fn sep(&mut self) -> &'static str {
        if self.one_in(10) {
            "  "
        } else {
            " "
        }
    }
}

/// Items that stay scalars inside `[...]`.
fn flow_safe(s: &str) -> bool {
    !s.contains(['[', ']', '{', '}', ',', '#'])
}

fn scalars_only(items: &[Node]) -> Option<Vec<&'static str>> {
    items
        .iter()
        .map(|n| match n {
            Node::Scalar(s) => Some(*s),
            _ => None,
        })
        .collect()
}

/// Write `node` as the value of a `key:` (`after_key`) or of a `-`, whose line is already
/// written up to the indicator; `col` is the column of the key or dash.
fn write_value(node: &Node, col: usize, after_key: bool, l: &mut Layout, out: &mut String) {
    match node {
        Node::Scalar(s) => {
            out.push_str(l.sep());
            out.push_str(s);
            l.end_line(out);
        }
        Node::Seq(items)
            if scalars_only(items)
                .is_some_and(|s| l.any_flow || s.iter().all(|i| flow_safe(i)))
                && l.one_in(3) =>
        {
            let items = scalars_only(items).unwrap_or_default();
            out.push_str(l.sep());
            out.push('[');
            out.push_str(&items.join(", "));
            out.push(']');
            l.end_line(out);
        }
        Node::Seq(items) => {
            l.end_line(out);
            // Under a key, a sequence may sit in the key's own column.
            let inner = if after_key && l.one_in(2) {
                col
            } else {
                col + l.step()
            };
            write_seq(items, inner, l, out);
        }
        Node::Map(entries) => {
            l.end_line(out);
            let inner = col + l.step();
            write_map(entries, inner, None, l, out);
        }
    }
}

/// Write a mapping whose keys are in column `col`; `first_on_line`: the first key continues a
/// line already written (a compact `- key: value`).
fn write_map(
    entries: &[(&'static str, Node)],
    col: usize,
    first_on_line: Option<()>,
    l: &mut Layout,
    out: &mut String,
) {
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 || first_on_line.is_none() {
            out.push_str(&" ".repeat(col));
        }
        out.push_str(k);
        out.push(':');
        write_value(v, col, true, l, out);
    }
}

fn write_seq(items: &[Node], col: usize, l: &mut Layout, out: &mut String) {
    for item in items {
        out.push_str(&" ".repeat(col));
        out.push('-');
        match item {
            Node::Map(entries) if l.one_in(4) => {
                // `-` alone, the mapping below it.
                l.end_line(out);
                write_map(entries, col + l.step(), None, l, out);
            }
            Node::Map(entries) => {
                let gap = if l.one_in(6) { 3 } else { 1 };
                out.push_str(&" ".repeat(gap));
                write_map(entries, col + 1 + gap, Some(()), l, out);
            }
            other => write_value(other, col, false, l, out),
        }
    }
}

/// A stream of documents in the layout the seed picks.
fn write_stream(docs: &[Node], seed: u64, any_flow: bool) -> String {
    let mut l = Layout::new(seed);
    l.any_flow = any_flow;
    let mut out = String::new();
    for (i, d) in docs.iter().enumerate() {
        if i > 0 || l.one_in(3) {
            out.push_str(if l.one_in(4) { "--- # doc" } else { "---" });
            l.nl(&mut out);
        }
        l.between(&mut out);
        let col = if l.one_in(10) { 2 } else { 0 };
        match d {
            Node::Map(entries) => write_map(entries, col, None, &mut l, &mut out),
            Node::Seq(items) => write_seq(items, col, &mut l, &mut out),
            Node::Scalar(s) => {
                out.push_str(s);
                l.nl(&mut out);
            }
        }
    }
    out
}

fn documents() -> impl Strategy<Value = Vec<Node>> {
    proptest::collection::vec(
        prop_oneof![
            4 => proptest::collection::vec((key(), node()), 1..6)
                .prop_map(Node::Map),
            1 => proptest::collection::vec(node(), 1..4).prop_map(Node::Seq),
        ],
        1..3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn hand_written_layouts_agree(docs in documents(), seed in any::<u64>()) {
        let text = write_stream(&docs, seed, true);
        if let Some(Err(e)) = agrees(&text) {
            prop_assert!(false, "{}", e);
        }
    }
}

/// The generator above must reach the fast path often enough to test it: with keys and scalars
/// restricted to the well-behaved part of the pools, most streams are in the subset.
#[test]
fn hand_written_layouts_mostly_take_the_fast_path() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::{Config, TestRunner};
    let tame_keys: Vec<&'static str> = KEYS_COMMON.to_vec();
    let tame_scalars = [
        "true",
        "on",
        "y",
        "~",
        "null",
        "-1",
        "42",
        "1.5",
        "'it''s'",
        "\"quoted\"",
        "cc-4",
        "v1",
        "é",
        "${x}",
        "[]",
        "{}",
        "[a, b]",
        "--port=8080",
        "x#y",
        "0777",
        "1.0.0",
    ];
    let leaf = proptest::sample::select(tame_scalars.to_vec()).prop_map(Node::Scalar);
    let keys = proptest::sample::select(tame_keys);
    let keys2 = keys.clone();
    let tree = leaf.prop_recursive(4, 40, 4, move |inner| {
        prop_oneof![
            proptest::collection::vec((keys.clone(), inner.clone()), 1..5)
                .prop_map(|kv| Node::Map(dedup(kv))),
            proptest::collection::vec(inner, 1..5).prop_map(Node::Seq),
        ]
    });
    let doc = proptest::collection::vec((keys2, tree), 1..6).prop_map(|kv| Node::Map(dedup(kv)));
    let mut runner = TestRunner::new(Config::default());
    let (mut fast_path, mut total) = (0, 0);
    for seed in 0..1000u64 {
        let d = doc
            .new_tree(&mut runner)
            .expect("a tree generates")
            .current();
        let text = write_stream(&[d], seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), false);
        total += 1;
        match agrees(&text) {
            Some(Ok(())) => fast_path += 1,
            Some(Err(e)) => panic!("{e}"),
            None => {}
        }
    }
    eprintln!("hand-written layouts: {fast_path} of {total} took the fast path");
    assert!(fast_path * 10 >= total * 8, "{fast_path} of {total}");
}

fn dedup(kv: Vec<(&'static str, Node)>) -> Vec<(&'static str, Node)> {
    let mut seen = Vec::new();
    kv.into_iter()
        .filter(|(k, _)| {
            let new = !seen.contains(k);
            seen.push(*k);
            new
        })
        .collect()
}
