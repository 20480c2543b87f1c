//! Documents: YAML and JSON streams parsed into `serde_json::Value`, each remembering where it came
//! from.
//!
//! Parsing goes straight to `serde_json::Value` (with `preserve_order`), the model every later stage
//! uses. Line numbers are not kept during parsing: they are needed only when something is wrong, so
//! [`locate`] finds the line of a field path by walking the parser's events again, lazily.

use std::sync::Arc;

use serde_json::Value;
use serde_saphyr::granit_parser::{Event, Parser, ScanError, Span, StrInput};
use serde_saphyr::DuplicateKeyPolicy;

use crate::diag::{codes, Diagnostic};
use crate::fieldpath::{FieldPath, Segment};
use crate::limits::Limit;
/// The reading limits (defined with every other limit in [`crate::limits`]).
pub use crate::limits::YamlLimits;

mod check;
/// The fast reader of the common block-YAML subset that [`parse_file`] tries before serde-saphyr.
/// Public for the differential tests, the fuzz target and the benchmarks.
pub mod fast;

pub use check::check_objects;

impl YamlLimits {
    /// The YAML library's budget for these limits. Its own counters are set so that kiln's limits
    /// are the ones that trip: events (about two per node, plus document and alias events) follow
    /// the node limit, scalar bytes and anchored copies the input size, and the alias/anchor
    /// ratio heuristic is off (alias expansion is bounded by `max_alias_nodes`, and a file that
    /// reuses one anchor often is legitimate). Alias replay is limited separately, by
    /// [`YamlLimits::max_replayed_events`].
    pub fn saphyr_budget(&self) -> serde_saphyr::Budget {
        let events = self
            .max_nodes
            .saturating_mul(2)
            .saturating_add(self.max_documents.saturating_mul(2))
            .saturating_add(self.max_aliases)
            .saturating_add(16);
        let mut b = serde_saphyr::Budget::default();
        b.max_events = events;
        b.max_nodes = self.max_nodes;
        b.max_documents = self.max_documents;
        b.max_depth = self.max_depth;
        // The parser's own limit on flow nesting (`[[[…]]]`) must not trip before the depth
        // budget, which names the limit.
        b.flow_nesting_limit = b.flow_nesting_limit.max(self.max_depth.saturating_add(2));
        b.max_aliases = self.max_aliases;
        b.max_anchors = self.max_nodes;
        b.max_total_scalar_bytes = self.max_input_bytes;
        b.max_recorded_anchor_events = events;
        b.max_recorded_anchor_bytes = self.max_input_bytes;
        b.max_merge_keys = self.max_nodes;
        b.enforce_alias_anchor_ratio = false;
        b
    }

    /// Parser events that expanding aliases may replay: two per node (a collection's start and
    /// end), so the limit is `max_alias_nodes` nodes.
    pub fn max_replayed_events(&self) -> usize {
        self.max_alias_nodes.saturating_mul(2)
    }
}

/// The text of one input file, shared by all documents read from it.
#[derive(Debug, PartialEq, Eq)]
pub struct SourceFile {
    /// The name shown in diagnostics: the path as the user gave it, or `<stdin>`.
    pub name: String,
    /// The whole file.
    pub text: String,
}

/// One document of an input stream.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The file it came from.
    pub source: Arc<SourceFile>,
    /// Index of the document within its file (0-based, empty documents not counted).
    pub index: usize,
    /// For an object that came from a `kind: List` document (what `kubectl get -o yaml`
    /// prints), its position in the list's `items`; its field paths are under `items[N]`.
    pub item: Option<usize>,
    /// Its content.
    pub value: Value,
}

impl Document {
    /// Display name of the file.
    pub fn file(&self) -> &str {
        &self.source.name
    }

    /// `apiVersion` if it is a string.
    pub fn api_version(&self) -> Option<&str> {
        // Asked of every document by several passes of a run: scanned, not hashed (`lookup`).
        crate::lookup::field(&self.value, "apiVersion").and_then(Value::as_str)
    }

    /// `kind` if it is a string.
    pub fn kind(&self) -> Option<&str> {
        crate::lookup::field(&self.value, "kind").and_then(Value::as_str)
    }

    /// `metadata.name` if it is a string.
    pub fn name(&self) -> Option<&str> {
        crate::lookup::field(&self.value, "metadata")
            .and_then(|m| crate::lookup::field(m, "name"))
            .and_then(Value::as_str)
    }

    /// A diagnostic located in this document at `path`, with its line filled in when it can be found.
    pub fn diag(&self, d: Diagnostic, path: &FieldPath) -> Diagnostic {
        let within;
        let path = match self.item {
            None => path,
            Some(i) => {
                within = FieldPath::root().key("items").index(i).join(path);
                &within
            }
        };
        let mut d = d
            .in_document(&self.source.name, self.index)
            .at(path.to_string());
        let text = &self.source.text;
        if let Some((line, col)) = locate(text, self.index, path) {
            d = d.at_line(line, Some(col));
            if let Some(value) = locate_value(text, self.index, path) {
                d = spanned(d, text, value);
            }
        }
        d
    }
}

/// How many `${` of one value [`named_expression`] looks at.
const NAMED_EXPRESSIONS: usize = 64;

/// `d`, located at a field whose value is `value` (bytes of `text`), given the exact span it is
/// about: the `${…}` expression of the value its message names (quoted, as every expression
/// diagnostic quotes it), else the field, from its key (where `d` starts) through its value.
fn spanned(d: Diagnostic, text: &str, value: std::ops::Range<usize>) -> Diagnostic {
    let named = named_expression(&text[value.clone()], &d.message);
    let span = match &named {
        Some(r) => value.start + r.start..value.start + r.end,
        None => value,
    };
    let (end_line, end_col) = line_column(text, span.end);
    if named.is_some() {
        let (line, col) = line_column(text, span.start);
        d.at_line(line, Some(col)).ending_at(end_line, end_col)
    } else {
        d.ending_at(end_line, end_col)
    }
}

/// The byte range in `value` (a scalar as written) of the first `${ e }` whose expression `e`
/// the message quotes as `"e"`. Only the first [`NAMED_EXPRESSIONS`] `${` of a value are
/// looked at: each may be searched to the value's end, and a hostile value holds millions.
fn named_expression(value: &str, message: &str) -> Option<std::ops::Range<usize>> {
    let mut from = 0;
    for _ in 0..NAMED_EXPRESSIONS {
        let at = value[from..].find("${")?;
        let start = from + at;
        let inner = &value[start + 2..];
        let mut depth = 0usize;
        // The closing brace, skipping braces of map literals (`{'a': 1}`) inside.
        let close = inner.char_indices().find_map(|(i, c)| match c {
            '{' => {
                depth += 1;
                None
            }
            '}' if depth == 0 => Some(i),
            '}' => {
                depth -= 1;
                None
            }
            _ => None,
        });
        if let Some(close) = close {
            let e = inner[..close].trim();
            if !e.is_empty() && e.len() < message.len() && message.contains(&format!("{e:?}")) {
                return Some(start..start + 2 + close + 1);
            }
        }
        from = start + 2;
    }
    None
}

/// The 1-based line and character column of byte `offset` of `text`.
pub fn line_column(text: &str, mut offset: usize) -> (usize, usize) {
    offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

/// Parse a file's text into documents. JSON files (by extension) are read with serde_json, anything
/// else as a YAML stream. Empty documents are skipped. Any error is a single diagnostic that names the
/// file and line.
pub fn parse_file(
    name: &str,
    text: String,
    limits: &YamlLimits,
) -> Result<Vec<Document>, Diagnostic> {
    parse_source(
        &Arc::new(SourceFile {
            name: name.to_string(),
            text,
        }),
        limits,
    )
}

/// [`parse_file`] for a file already shared.
pub fn parse_source(
    source: &Arc<SourceFile>,
    limits: &YamlLimits,
) -> Result<Vec<Document>, Diagnostic> {
    parse_source_with_warnings(source, limits).map(|(docs, _)| docs)
}

/// [`parse_source`], also returning warnings (duplicate keys).
pub fn parse_source_with_warnings(
    source: &Arc<SourceFile>,
    limits: &YamlLimits,
) -> Result<(Vec<Document>, Vec<Diagnostic>), Diagnostic> {
    let name = source.name.as_str();
    let text = &source.text;
    if text.len() > limits.max_input_bytes {
        return Err(Diagnostic::error(
            codes::YAML_BUDGET,
            format!(
                "file is {} bytes, more than the limit of {} bytes",
                text.len(),
                limits.max_input_bytes
            ),
        )
        .in_file(name)
        .with_hint(Limit::InputBytes.hint("split the input")));
    }
    let mut warnings = Vec::new();
    let values = if name.ends_with(".json") {
        parse_json(name, text, limits)?
    } else {
        match parse_yaml(name, text, limits, DuplicateKeyPolicy::Error) {
            Ok(v) => v,
            Err(d) if d.code == codes::YAML_DUPLICATE_KEY => {
                // kro, Argo CD and kubectl's lenient conversion keep the last value of a repeated
                // key; do the same so such definitions still load, but say so: it is almost always
                // a mistake.
                warnings.push(Diagnostic {
                    severity: crate::diag::Severity::Warning,
                    ..d
                });
                parse_yaml(name, text, limits, DuplicateKeyPolicy::LastWins)?
            }
            Err(d) => return Err(d),
        }
    };
    let docs = values
        .into_iter()
        .enumerate()
        .map(|(index, value)| Document {
            source: Arc::clone(source),
            index,
            item: None,
            value,
        })
        .collect();
    Ok((docs, warnings))
}

/// What stands in for an object whose value has moved elsewhere: its apiVersion, kind and
/// metadata name and namespace (what classifies and names it), and with `annotations` its
/// annotations too.
pub fn identity_stub(v: &Value, annotations: bool) -> Value {
    // Made for every item of a KRM function's input: small maps are scanned, not hashed.
    use crate::lookup::field;
    let mut stub = serde_json::Map::new();
    for k in ["apiVersion", "kind"] {
        if let Some(x) = field(v, k) {
            stub.insert(k.into(), x.clone());
        }
    }
    let keys: &[&str] = if annotations {
        &["name", "namespace", "annotations"]
    } else {
        &["name", "namespace"]
    };
    let mut md = serde_json::Map::new();
    let metadata = field(v, "metadata");
    for k in keys {
        if let Some(x) = metadata.and_then(|m| field(m, k)) {
            md.insert((*k).into(), x.clone());
        }
    }
    if !md.is_empty() {
        stub.insert("metadata".into(), Value::Object(md));
    }
    Value::Object(stub)
}

/// Replace each list document by its items, the way `kubectl apply` reads a file: what
/// `kubectl get -o yaml` prints is a `v1 List` of the objects. Each item keeps its file and
/// document index, and its place in the list ([`Document::item`]) for diagnostics.
pub fn expand_lists(docs: Vec<Document>) -> Vec<Document> {
    use rayon::prelude::*;
    // Asked of every document read, on every core (at 10 000 instance files, a serial pass of
    // the main thread while the workers waited).
    if !docs.par_iter().any(|d| is_list(&d.value)) {
        return docs;
    }
    expand(docs)
}

/// [`expand_lists`] on this thread: for the documents of one file, expanded on the worker that
/// parsed it, so that no second pass over every file waits on the main thread.
pub fn expand_lists_here(docs: Vec<Document>) -> Vec<Document> {
    if !docs.iter().any(|d| is_list(&d.value)) {
        return docs;
    }
    expand(docs)
}

/// Each list document replaced by its items (the documents are known to hold a list).
fn expand(docs: Vec<Document>) -> Vec<Document> {
    let mut out = Vec::with_capacity(docs.len());
    for d in docs {
        match list_items(d.value) {
            Ok(items) => out.extend(items.into_iter().enumerate().map(|(i, value)| Document {
                source: Arc::clone(&d.source),
                index: d.index,
                item: Some(i),
                value,
            })),
            Err(value) => out.push(Document { value, ..d }),
        }
    }
    out
}

/// A list document: `v1 List`, or a built-in `…List` kind (`apps/v1 DeploymentList`), with an
/// `items` sequence and nothing but `apiVersion`, `kind`, `metadata` and `items`. Other kinds
/// ending in `List` (kpt's `ResourceList`, a CRD's) are objects like any other.
fn is_list(value: &Value) -> bool {
    // Asked of every document read: the cheap tests first, keys scanned (`lookup`).
    value.as_object().is_some_and(|m| {
        if m.len() > 4 || !crate::lookup::get(m, "items").is_some_and(Value::is_array) {
            return false;
        }
        let field = |k| {
            crate::lookup::get(m, k)
                .and_then(Value::as_str)
                .unwrap_or("")
        };
        let (api, kind) = (field("apiVersion"), field("kind"));
        ((api == "v1" && kind == "List")
            || (kind.ends_with("List") && crate::openapi::is_builtin_kind(api, kind)))
            && m.keys()
                .all(|k| matches!(k.as_str(), "apiVersion" | "kind" | "metadata" | "items"))
    })
}

/// The items of a list document ([`is_list`]); anything else is given back as it is.
fn list_items(value: Value) -> Result<Vec<Value>, Value> {
    if !is_list(&value) {
        return Err(value);
    }
    match value {
        Value::Object(mut m) => match m.remove("items") {
            Some(Value::Array(items)) => Ok(items),
            other => {
                // Not reached (checked above); give the document back whole.
                if let Some(v) = other {
                    m.insert("items".into(), v);
                }
                Err(Value::Object(m))
            }
        },
        other => Err(other),
    }
}

/// serde_json's own nesting limit, which it enforces whatever kiln's limit says.
const JSON_MAX_DEPTH: usize = 128;

fn parse_json(name: &str, text: &str, limits: &YamlLimits) -> Result<Vec<Value>, Diagnostic> {
    let budget = |msg: String, limit: Limit, line: usize, column: Option<usize>| {
        let hint = if limit == Limit::YamlDepth && limits.max_depth >= JSON_MAX_DEPTH {
            format!("JSON nests at most {JSON_MAX_DEPTH} levels here (serde_json's own limit); flatten the data or write the file as YAML")
        } else {
            limit.hint("split the input")
        };
        Diagnostic::error(codes::YAML_BUDGET, msg)
            .in_file(name)
            .at_line(line, column)
            .with_hint(hint)
    };
    let deeper = || {
        format!(
            "the input nests deeper than the limit of {} levels",
            limits.max_depth.min(JSON_MAX_DEPTH)
        )
    };
    let mut out = Vec::new();
    let mut nodes = 0usize;
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    loop {
        let start = stream.byte_offset();
        let Some(v) = stream.next() else {
            break;
        };
        match v {
            Ok(v) => {
                // The same node and depth limits as YAML (serde_json stops at 128 levels itself).
                let line = line_at(text, start);
                let depth = measure(&v, &mut nodes);
                if depth > limits.max_depth {
                    return Err(budget(deeper(), Limit::YamlDepth, line, None));
                }
                if nodes > limits.max_nodes {
                    return Err(budget(
                        format!("the file has more than {} nodes", limits.max_nodes),
                        Limit::YamlNodes,
                        line,
                        None,
                    ));
                }
                out.push(v);
            }
            Err(e) if e.to_string().contains("recursion limit") => {
                return Err(budget(
                    deeper(),
                    Limit::YamlDepth,
                    e.line(),
                    Some(e.column()),
                ));
            }
            Err(e) => {
                return Err(Diagnostic::error(codes::YAML_SYNTAX, format!("invalid JSON: {e}"))
                    .in_file(name)
                    .at_line(e.line(), Some(e.column()))
                    .with_hint(
                        "fix the JSON at the marked position (a trailing comma or a missing quote is typical)",
                    ));
            }
        }
        if out.len() > limits.max_documents {
            return Err(too_many_documents(name, limits));
        }
    }
    Ok(out)
}

/// Count the nodes of `v` into `nodes` and return its depth (collections nested; a scalar is 0).
fn measure(v: &Value, nodes: &mut usize) -> usize {
    *nodes += 1;
    let children: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(a) => Box::new(a.iter()),
        Value::Object(m) => Box::new(m.values()),
        _ => return 0,
    };
    1 + children.map(|c| measure(c, nodes)).max().unwrap_or(0)
}

/// The 1-based line of the first non-blank character at or after byte `offset`.
fn line_at(text: &str, offset: usize) -> usize {
    let offset = offset.min(text.len());
    let skipped = text[offset..]
        .find(|c: char| !c.is_whitespace())
        .map_or(0, |i| i);
    text.as_bytes()[..offset + skipped]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn too_many_documents(name: &str, limits: &YamlLimits) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!("the file has more than {} documents", limits.max_documents),
    )
    .in_file(name)
    .with_hint(Limit::Documents.hint("split the stream into several files"))
}

fn parse_yaml(
    name: &str,
    text: &str,
    limits: &YamlLimits,
    duplicate_keys: DuplicateKeyPolicy,
) -> Result<Vec<Value>, Diagnostic> {
    // Most files are plain block YAML, which the fast reader handles in a fraction of the time;
    // it answers only when sure of serde-saphyr's answer, which is the reference for everything.
    if let Some(docs) = fast::parse(text, limits) {
        return Ok(docs);
    }
    parse_yaml_saphyr(name, text, limits, duplicate_keys)
}

/// A YAML stream read by serde-saphyr alone, as [`parse_file`] reads it when the fast reader is
/// not sure (duplicate keys are an error): what [`fast::parse`] must always equal. Null
/// documents are dropped. For tests, the fuzz target and the benchmarks.
pub fn parse_yaml_reference(
    name: &str,
    text: &str,
    limits: &YamlLimits,
) -> Result<Vec<Value>, Diagnostic> {
    parse_yaml_saphyr(name, text, limits, DuplicateKeyPolicy::Error)
}

fn parse_yaml_saphyr(
    name: &str,
    text: &str,
    limits: &YamlLimits,
    duplicate_keys: DuplicateKeyPolicy,
) -> Result<Vec<Value>, Diagnostic> {
    // Count what the aliases expand to before the reader replays them: merge keys (`<<: [*a,
    // *a, …]`) replay far more slowly than plain aliases, so a merge bomb took 15 s and 600 MB
    // to reach the replay limit.
    if text.contains('*') {
        if let Some(line) = alias_expansion_over(text, limits.max_alias_nodes) {
            return Err(Diagnostic::error(
                codes::YAML_BUDGET,
                format!(
                    "aliases expand to more than {} nodes (the alias expansion limit)",
                    limits.max_alias_nodes
                ),
            )
            .in_file(name)
            .at_line(line, None)
            .with_hint(
                Limit::AliasNodes.hint("split the input, avoid alias chains that multiply"),
            ));
        }
    }
    let budget = limits.saphyr_budget();
    let replayed = limits.max_replayed_events();
    let options = serde_saphyr::options! {
        budget: Some(budget),
        alias_limits: serde_saphyr::alias_limits! {
            max_total_replayed_events: replayed,
            max_replay_stack_depth: limits.max_depth,
        },
        // Kubernetes reads YAML with go-yaml v2 (YAML 1.1): `0777` is octal 511 there.
        legacy_octal_numbers: true,
        with_snippet: false,
        duplicate_keys: duplicate_keys,
    };
    match serde_saphyr::from_multiple_with_options::<Value>(text, options) {
        Ok(docs) => Ok(docs.into_iter().filter(|d| !d.is_null()).collect()),
        Err(e) => Err(yaml_error(name, &e, limits)),
    }
}

/// The innermost error: the library wraps errors met while replaying an alias, and ones that
/// carry a snippet.
fn original(mut e: &serde_saphyr::Error) -> &serde_saphyr::Error {
    use serde_saphyr::Error as E;
    while let E::AliasError { error, .. } | E::WithSnippet { error, .. } = e {
        e = error;
    }
    e
}

/// kiln's wording for a breached reading limit, and the limit, or `None` when `e` is not one.
fn budget_message(e: &serde_saphyr::Error, limits: &YamlLimits) -> Option<(String, Limit)> {
    use serde_saphyr::budget::BudgetBreach as B;
    use serde_saphyr::Error as E;
    let too_many = |what: &str, limit: usize| format!("the file has more than {limit} {what}");
    Some(match original(e) {
        E::Budget { breach, .. } => match breach {
            B::Depth { .. } => (
                format!(
                    "the input nests deeper than the limit of {} levels",
                    limits.max_depth
                ),
                Limit::YamlDepth,
            ),
            B::Documents { .. } => (
                too_many("documents", limits.max_documents),
                Limit::Documents,
            ),
            B::Nodes { .. } => (
                too_many("nodes (after expanding aliases)", limits.max_nodes),
                Limit::YamlNodes,
            ),
            B::Events { .. } => (
                format!(
                    "the file is larger than the node limit allows ({} nodes, after expanding aliases)",
                    limits.max_nodes
                ),
                Limit::YamlNodes,
            ),
            B::Aliases { .. } => (too_many("aliases", limits.max_aliases), Limit::Aliases),
            B::Anchors { .. } => (too_many("anchors", limits.max_nodes), Limit::YamlNodes),
            B::MergeKeys { .. } => (
                too_many("merge keys (`<<`)", limits.max_nodes),
                Limit::YamlNodes,
            ),
            B::ScalarBytes { .. } | B::RecordedAnchorBytes { .. } => (
                format!(
                    "the file holds more than {} bytes of text after expanding aliases (the input size limit)",
                    limits.max_input_bytes
                ),
                Limit::InputBytes,
            ),
            B::RecordedAnchorEvents { .. } => (
                format!(
                    "anchored content is larger than the node limit allows ({} nodes)",
                    limits.max_nodes
                ),
                Limit::YamlNodes,
            ),
            B::InputBytes { .. } => (
                format!(
                    "the file is larger than the limit of {} bytes",
                    limits.max_input_bytes
                ),
                Limit::InputBytes,
            ),
            _ => (
                "the input exceeds a YAML reading limit".to_string(),
                Limit::YamlNodes,
            ),
        },
        E::AliasReplayLimitExceeded { .. } | E::AliasExpansionLimitExceeded { .. } => (
            format!(
                "aliases expand to more than {} nodes (the alias expansion limit)",
                limits.max_alias_nodes
            ),
            Limit::AliasNodes,
        ),
        E::AliasReplayStackDepthExceeded { .. } => (
            format!(
                "aliases nest deeper than the limit of {} levels",
                limits.max_depth
            ),
            Limit::YamlDepth,
        ),
        // The parser's recursion guard (deep flow collections in a value it parses on its own).
        other if other.to_string().contains("recursion limit") => (
            format!(
                "the input nests deeper than the limit of {} levels",
                limits.max_depth
            ),
            Limit::YamlDepth,
        ),
        _ => return None,
    })
}

fn yaml_error(name: &str, e: &serde_saphyr::Error, limits: &YamlLimits) -> Diagnostic {
    let (code, message, hint) = if let Some((msg, limit)) = budget_message(e, limits) {
        (
            codes::YAML_BUDGET,
            msg,
            limit.hint("split the input, avoid alias chains that multiply"),
        )
    } else if let serde_saphyr::Error::DuplicateMappingKey { key, .. } = original(e) {
        (
            codes::YAML_DUPLICATE_KEY,
            match key {
                Some(k) => format!("duplicate key {k:?} in a mapping"),
                None => "duplicate key in a mapping".to_string(),
            },
            "remove one of the repeated keys; the last one wins".to_string(),
        )
    } else {
        let msg = e.to_string();
        // The first line carries the message; the location, when present, is in the error itself.
        let first = msg
            .lines()
            .next()
            .unwrap_or("invalid YAML")
            .trim()
            .to_string();
        (
            codes::YAML_SYNTAX,
            first,
            "fix the YAML at the marked position (quote values that contain ': ' or start with special characters)".to_string(),
        )
    };
    let mut d = Diagnostic::error(code, message).in_file(name);
    if let Some(loc) = e.location() {
        if loc.line() > 0 {
            d = d.at_line(loc.line() as usize, Some(loc.column() as usize));
        }
    }
    d.with_hint(hint)
}

/// Find the 1-based (line, column) of the node at `path` in document `doc` of a YAML text, by
/// replaying the parser's events. Returns the deepest node on the path that exists, so a path to a
/// missing field points at its parent. `None` if the text does not parse that far.
pub fn locate(text: &str, doc: usize, path: &FieldPath) -> Option<(usize, usize)> {
    let mut parser = Events(Parser::new_from_str(text));
    let mut doc_index: isize = -1;
    // Skip to the start of the wanted document's root node.
    let (root_event, root_span) = loop {
        let (ev, span) = parser.next()?.ok()?;
        match ev {
            Event::StreamStart | Event::DocumentStart(..) => {}
            Event::StreamEnd => return None,
            Event::Scalar(ref s, ..) if s.is_empty() => {} // empty document: not counted
            Event::DocumentEnd => {}
            _ => {
                doc_index += 1;
                if doc_index as usize == doc {
                    break (ev, span);
                }
                skip_node(&mut parser, &ev)?;
            }
        }
    };
    let mut best = (root_span.start.line(), root_span.start.col() + 1);
    let mut current = root_event;
    for seg in &path.0 {
        match (seg, &current) {
            (Segment::Key(k), Event::MappingStart(..)) => {
                let mut found = None;
                loop {
                    let (key, kspan) = parser.next()?.ok()?;
                    match key {
                        Event::MappingEnd => break,
                        Event::Scalar(ref s, ..) if s.as_ref() == k.as_str() => {
                            let (val, vspan) = parser.next()?.ok()?;
                            best = (kspan.start.line(), kspan.start.col() + 1);
                            let _ = vspan;
                            found = Some(val);
                            break;
                        }
                        other => {
                            skip_node(&mut parser, &other)?;
                            let (val, _) = parser.next()?.ok()?;
                            skip_node(&mut parser, &val)?;
                        }
                    }
                }
                match found {
                    Some(v) => current = v,
                    None => return Some(best),
                }
            }
            (Segment::Index(i), Event::SequenceStart(..)) => {
                let mut n = 0;
                let mut found = None;
                loop {
                    let (item, ispan) = parser.next()?.ok()?;
                    if matches!(item, Event::SequenceEnd) {
                        break;
                    }
                    if n == *i {
                        best = (ispan.start.line(), ispan.start.col() + 1);
                        found = Some(item);
                        break;
                    }
                    skip_node(&mut parser, &item)?;
                    n += 1;
                }
                match found {
                    Some(v) => current = v,
                    None => return Some(best),
                }
            }
            _ => break,
        }
    }
    Some(best)
}

/// The byte range of the value at `path` in document `doc` of a YAML text (a scalar as written,
/// quotes and block-scalar lines included; a collection from its first to its last character),
/// by replaying the parser's events. `None` unless the whole path exists.
pub fn locate_value(text: &str, doc: usize, path: &FieldPath) -> Option<std::ops::Range<usize>> {
    let mut parser = Events(Parser::new_from_str(text));
    let mut doc_index: isize = -1;
    let (mut current, mut span) = loop {
        let (ev, span) = parser.next()?.ok()?;
        match ev {
            Event::StreamStart | Event::DocumentStart(..) | Event::DocumentEnd => {}
            Event::StreamEnd => return None,
            Event::Scalar(ref s, ..) if s.is_empty() => {}
            _ => {
                doc_index += 1;
                if doc_index as usize == doc {
                    break (ev, span);
                }
                skip_node(&mut parser, &ev)?;
            }
        }
    };
    for seg in &path.0 {
        let found = match (seg, &current) {
            (Segment::Key(k), Event::MappingStart(..)) => loop {
                let (key, _) = parser.next()?.ok()?;
                match key {
                    Event::MappingEnd => return None,
                    Event::Scalar(ref s, ..) if s.as_ref() == k.as_str() => {
                        break parser.next()?.ok()?;
                    }
                    other => {
                        skip_node(&mut parser, &other)?;
                        let (val, _) = parser.next()?.ok()?;
                        skip_node(&mut parser, &val)?;
                    }
                }
            },
            (Segment::Index(i), Event::SequenceStart(..)) => {
                let mut n = 0;
                loop {
                    let (item, ispan) = parser.next()?.ok()?;
                    if matches!(item, Event::SequenceEnd) {
                        return None;
                    }
                    if n == *i {
                        break (item, ispan);
                    }
                    skip_node(&mut parser, &item)?;
                    n += 1;
                }
            }
            _ => return None,
        };
        (current, span) = found;
    }
    let offset = |m: &serde_saphyr::granit_parser::Marker| {
        m.byte_offset().or_else(|| {
            // Character index to byte offset.
            text.char_indices()
                .nth(m.index())
                .map(|(b, _)| b)
                .or(Some(text.len()))
        })
    };
    let start = offset(&span.start)?;
    let end = match current {
        Event::MappingStart(..) | Event::SequenceStart(..) => {
            let mut depth = 1usize;
            let mut last = span;
            while depth > 0 {
                let (ev, s) = parser.next()?.ok()?;
                match ev {
                    Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
                    Event::MappingEnd | Event::SequenceEnd => depth -= 1,
                    _ => {}
                }
                last = s;
            }
            offset(&last.end)?
        }
        _ => offset(&span.end)?,
    };
    (start <= end && end <= text.len()).then_some(start..end)
}

/// The byte ranges of the scalars (keys and values, of every document) whose value, as the
/// reader decodes it, `keep` accepts, in one pass over the parser's events: what a scalar means
/// whatever its quoting or escapes (`"\x41"` is `A`). Scalars after a syntax error are not seen.
pub fn scalar_spans(text: &str, mut keep: impl FnMut(&str) -> bool) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    for item in Events(Parser::new_from_str(text)) {
        let Ok((Event::Scalar(value, ..), span)) = item else {
            if item.is_err() {
                break;
            }
            continue;
        };
        if let (Some(start), Some(end)) = (span.start.byte_offset(), span.end.byte_offset()) {
            if start < end && end <= text.len() && keep(&value) {
                out.push(start..end);
            }
        }
    }
    out
}

/// The parser's events without the ones that are not part of the node structure (comments,
/// anchor metadata), so the walk in [`locate`] sees only nodes.
/// The line of the first alias at which expanding the text's aliases would produce more than
/// `max` nodes, counted in one pass over the parser's events: each anchored node's size (its
/// aliases expanded) is remembered, so an alias costs one lookup however much it expands to,
/// and a chain of aliases or of merge keys (which merge aliases) is counted without replaying
/// it. `None` when the expansion stays within `max`, or when the text does not parse (the
/// reader reports that).
fn alias_expansion_over(text: &str, max: usize) -> Option<usize> {
    let mut sizes: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    // Per open collection: its anchor (0: none) and its size so far.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut total = 0usize;
    for item in Events(Parser::new_from_str(text)) {
        let (event, span) = item.ok()?;
        let done = match event {
            Event::Scalar(_, _, anchor, _) => Some((anchor, 1)),
            Event::Alias(id) => {
                let n = sizes.get(&id).copied().unwrap_or(1);
                total = total.saturating_add(n);
                if total > max {
                    return Some(span.start.line());
                }
                Some((0, n))
            }
            Event::SequenceStart(_, anchor, _) | Event::MappingStart(_, anchor, _) => {
                open.push((anchor, 1));
                None
            }
            Event::SequenceEnd | Event::MappingEnd => open.pop(),
            _ => None,
        };
        if let Some((anchor, n)) = done {
            if anchor != 0 {
                sizes.insert(anchor, n);
            }
            if let Some(parent) = open.last_mut() {
                parent.1 = parent.1.saturating_add(n);
            }
        }
    }
    None
}

struct Events<'a>(Parser<'a, StrInput<'a>>);

impl<'a> Iterator for Events<'a> {
    type Item = Result<(Event<'a>, Span), ScanError>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let item = self.0.next()?;
            match &item {
                Ok((
                    Event::StreamStart
                    | Event::StreamEnd
                    | Event::DocumentStart(..)
                    | Event::DocumentEnd
                    | Event::Alias(_)
                    | Event::Scalar(..)
                    | Event::SequenceStart(..)
                    | Event::SequenceEnd
                    | Event::MappingStart(..)
                    | Event::MappingEnd,
                    _,
                ))
                | Err(_) => return Some(item),
                Ok(_) => continue,
            }
        }
    }
}

/// Consume the events of the node that `start` began.
fn skip_node(parser: &mut Events<'_>, start: &Event<'_>) -> Option<()> {
    let mut depth = match start {
        Event::MappingStart(..) | Event::SequenceStart(..) => 1usize,
        _ => return Some(()),
    };
    while depth > 0 {
        let (ev, _) = parser.next()?.ok()?;
        match ev {
            Event::MappingStart(..) | Event::SequenceStart(..) => depth += 1,
            Event::MappingEnd | Event::SequenceEnd => depth -= 1,
            _ => {}
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(text: &str) -> Result<Vec<Document>, Diagnostic> {
        parse_file("t.yaml", text.to_string(), &YamlLimits::default())
    }

    #[test]
    fn multi_document_streams_skip_empty_documents() {
        let docs = parse("---\na: 1\n---\n---\nb: [1, 2]\n").unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].value, json!({"a": 1}));
        assert_eq!(docs[1].value, json!({"b": [1, 2]}));
        assert_eq!(docs[1].index, 1);
    }

    #[test]
    fn kubernetes_scalar_rules() {
        let docs = parse("a: on\nb: '0777'\nc: 0777\nd: 1.0\ne: ~\n").unwrap();
        assert_eq!(
            docs[0].value,
            json!({"a": true, "b": "0777", "c": 511, "d": 1.0, "e": null})
        );
    }

    #[test]
    fn key_order_is_preserved() {
        let docs = parse("z: 1\na: 2\nm: 3\n").unwrap();
        let keys: Vec<_> = docs[0].value.as_object().unwrap().keys().cloned().collect();
        assert_eq!(keys, ["z", "a", "m"]);
    }

    #[test]
    fn duplicate_keys_warn_and_last_wins() {
        let f = Arc::new(SourceFile {
            name: "d.yaml".into(),
            text: "a: 1\nb: 2\na: 3\n".into(),
        });
        let (docs, warnings) = parse_source_with_warnings(&f, &YamlLimits::default()).unwrap();
        assert_eq!(docs[0].value["a"], json!(3));
        assert_eq!(warnings.len(), 1);
        assert_eq!(warnings[0].code, codes::YAML_DUPLICATE_KEY);
        assert_eq!(warnings[0].line, Some(3));
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let e = parse("a: 1\nb: [1, 2\n").unwrap_err();
        assert_eq!(e.code, codes::YAML_SYNTAX);
        assert!(e.line.is_some(), "{e:?}");
    }

    #[test]
    fn alias_bombs_hit_the_budget() {
        let mut text = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
        for (i, n) in ["b", "c", "d", "e", "f", "g", "h"].iter().enumerate() {
            let prev = ["a", "b", "c", "d", "e", "f", "g"][i];
            text.push_str(&format!(
                "{n}: &{n} [*{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}, *{prev}]\n"
            ));
        }
        let e = parse(&text).unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET, "{e:?}");
    }

    #[test]
    fn deep_nesting_is_a_budget_error_not_a_crash() {
        let text = format!("a: {}{}\n", "[".repeat(10_000), "]".repeat(10_000));
        let e = parse(&text).unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET, "{e:?}");
    }

    #[test]
    fn a_large_generated_list_is_within_the_default_limits() {
        // 1.1 million items: more events than the YAML library's own default budget (1,000,000)
        // allows, well within kiln's node limit.
        let budget = YamlLimits::default().saphyr_budget();
        assert!(budget.max_events > 2 * 1_100_000);
        // The same proportions at a size a debug build parses quickly: events follow nodes.
        let limits = YamlLimits {
            max_nodes: 12_000,
            ..YamlLimits::default()
        };
        let text = format!("items:\n{}", "- 1\n".repeat(11_000));
        let docs = parse_file("t.yaml", text, &limits).unwrap();
        assert_eq!(docs[0].value["items"].as_array().unwrap().len(), 11_000);
        // One anchor used many times is legitimate (no alias/anchor ratio heuristic).
        let text = format!("a: &x {{k: v}}\nb: [{}]\n", vec!["*x"; 500].join(", "));
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn every_limit_is_kilns_and_says_so() {
        let limits = YamlLimits {
            max_input_bytes: 1000,
            max_documents: 3,
            max_depth: 4,
            max_nodes: 50,
            max_alias_nodes: 20,
            max_aliases: 5,
        };
        let run = |text: &str| match parse_file("t.yaml", text.to_string(), &limits) {
            Ok(_) => panic!("{text} parsed"),
            Err(d) => d,
        };
        let cases = [
            ("a: [[[[1]]]]\n", "nests deeper than the limit of 4 levels"),
            (
                "a: 1\n---\nb: 1\n---\nc: 1\n---\nd: 1\n",
                "more than 3 documents",
            ),
            (
                &format!("a: [{}]\n", vec!["1"; 60].join(", ")),
                "more than 50 nodes",
            ),
            (
                "a: &a [1, 2, 3, 4, 5, 6, 7, 8]\nb: [*a, *a, *a, *a, *a]\n",
                "aliases expand to more than 20 nodes",
            ),
            (
                "a: &a 1\nb: [*a, *a, *a, *a, *a, *a]\n",
                "more than 5 aliases",
            ),
            (&format!("a: {}\n", "x".repeat(2000)), "bytes"),
        ];
        for (text, want) in cases {
            let d = run(text);
            assert_eq!(d.code, codes::YAML_BUDGET, "{text}: {d:?}");
            assert!(d.message.contains(want), "{text}: {}", d.message);
            assert!(
                !d.message.contains("breach"),
                "library wording: {}",
                d.message
            );
            assert!(d.line.is_some() || d.message.contains("bytes"), "{d:?}");
        }
        // JSON files have the same limits.
        let d = parse_file("t.json", "[[[[[1]]]]]".into(), &limits).unwrap_err();
        assert!(d.message.contains("deeper than the limit of 4"), "{d:?}");
        let d =
            parse_file("t.json", format!("[{}]", vec!["1"; 60].join(",")), &limits).unwrap_err();
        assert!(d.message.contains("more than 50 nodes"), "{d:?}");
    }

    #[test]
    fn duplicate_keys_are_worded_by_kiln() {
        let f = Arc::new(SourceFile {
            name: "d.yaml".into(),
            text: "a: 1\na: 2\n".into(),
        });
        let (_, warnings) = parse_source_with_warnings(&f, &YamlLimits::default()).unwrap();
        assert_eq!(warnings[0].message, "duplicate key \"a\" in a mapping");
        assert_eq!(warnings[0].line, Some(2));
        assert_eq!(warnings[0].severity, crate::diag::Severity::Warning);
    }

    #[test]
    fn json_files_use_the_json_parser() {
        let docs = parse_file(
            "x.json",
            r#"{"a": 18446744073709551615}"#.into(),
            &YamlLimits::default(),
        )
        .unwrap();
        assert_eq!(docs[0].value["a"], json!(18446744073709551615u64));
    }

    #[test]
    fn locate_skips_comments() {
        let text =
            "# leading comment\napiVersion: v1 # trailing\n# between\nspec:\n  # inside\n  a: 1\n";
        assert_eq!(
            locate(text, 0, &FieldPath::parse("spec.a").unwrap()),
            Some((6, 3))
        );
    }

    #[test]
    fn diagnostics_span_the_named_expression_or_the_field() {
        let text =
            "a: 1\n---\nspec:\n  é: \"${x} ${ schema.spec.nme }\"\n  n: |\n    two\n    lines\n";
        let source = Arc::new(SourceFile {
            name: "f.yaml".into(),
            text: text.into(),
        });
        let doc = parse_source(&source, &YamlLimits::default())
            .unwrap()
            .remove(1);
        let at = |p: &str, message: &str| {
            let d = doc.diag(
                Diagnostic::error(codes::YAML_SYNTAX, message),
                &FieldPath::parse(p).unwrap(),
            );
            (d.line, d.column, d.end_line, d.end_column)
        };
        // The expression the message quotes, columns in characters (`é` is one).
        let named = at("spec.é", "\"schema.spec.nme\": undefined field 'nme'");
        assert_eq!(named, (Some(4), Some(12), Some(4), Some(32)));
        // No expression named: the field, key through value.
        assert_eq!(at("spec.é", "bad"), (Some(4), Some(3), Some(4), Some(33)));
        // A block scalar ends past its last line's text.
        assert_eq!(at("spec.n", "bad"), (Some(5), Some(3), Some(8), Some(1)));
        // A missing field: its parent's position, and no end.
        assert_eq!(at("spec.zz", "bad"), (Some(3), Some(1), None, None));
        // A hostile value: a million unclosed `${`, looked at within the bound.
        let many = "${".repeat(1 << 20);
        assert_eq!(named_expression(&many, "\"x\""), None);
        let late = format!("{}${{x}}", "${} ".repeat(NAMED_EXPRESSIONS));
        assert_eq!(named_expression(&late, "\"x\""), None, "past the bound");
        assert_eq!(named_expression("${ x } ${x}", "\"x\""), Some(0..6));
        assert_eq!(line_column("aé\nb", 3), (1, 3));
        assert_eq!(
            line_column("aé\nb", 2),
            (1, 2),
            "inside a character: its start"
        );
        assert_eq!(line_column("aé\nb", 99), (2, 2));
    }

    #[test]
    fn locate_value_spans_the_value() {
        let text = "a: 1\n---\nkind: Secret\nstringData:\n  password: \"hunter2\"\n  key: |\n    line1\n    line2\n  list: [x, y]\n";
        let at = |p: &str| locate_value(text, 1, &FieldPath::parse(p).unwrap()).map(|r| &text[r]);
        assert_eq!(at("stringData.password"), Some("\"hunter2\""));
        assert!(at("stringData.key").unwrap().contains("line1\n    line2"));
        assert_eq!(at("stringData.list"), Some("[x, y]"));
        assert_eq!(at("stringData.missing"), None);
        assert_eq!(at("kind"), Some("Secret"));
    }

    #[test]
    fn locate_finds_fields_lists_and_documents() {
        let text = "a: 1\n---\nspec:\n  resources:\n    - id: x\n    - id: y\n      template:\n        kind: Pod\n";
        let p = FieldPath::parse("spec.resources[1].template.kind").unwrap();
        assert_eq!(locate(text, 1, &p), Some((8, 9)));
        let p = FieldPath::parse("spec.resources[1]").unwrap();
        assert_eq!(locate(text, 1, &p), Some((6, 7)));
        // A missing leaf points at the deepest existing parent.
        let p = FieldPath::parse("spec.resources[0].template").unwrap();
        assert_eq!(locate(text, 1, &p), Some((5, 7)));
        assert_eq!(
            locate(text, 0, &FieldPath::parse("a").unwrap()),
            Some((1, 1))
        );
    }
}

#[cfg(test)]
mod list_tests {
    use super::*;

    fn docs(text: &str) -> Vec<Document> {
        let source = Arc::new(SourceFile {
            name: "l.yaml".into(),
            text: text.into(),
        });
        expand_lists(parse_source(&source, &YamlLimits::default()).unwrap())
    }

    #[test]
    fn lists_become_their_items_and_other_lists_stay() {
        let d = docs("apiVersion: v1\nkind: List\nmetadata: {resourceVersion: \"\"}\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n---\napiVersion: apps/v1\nkind: DeploymentList\nitems: [{apiVersion: apps/v1, kind: Deployment, metadata: {name: c}}]\n");
        let names: Vec<_> = d
            .iter()
            .map(|d| (d.name().unwrap(), d.index, d.item))
            .collect();
        assert_eq!(
            names,
            [("a", 0, Some(0)), ("b", 0, Some(1)), ("c", 1, Some(0))]
        );
        let diag = d[1].diag(
            Diagnostic::error(codes::NOT_AN_OBJECT, "x"),
            &FieldPath::root().key("metadata"),
        );
        assert_eq!(diag.path.as_deref(), Some("items[1].metadata"));
        assert_eq!(diag.line, Some(6));
        // kpt's ResourceList, a CRD's …List, a List with other fields: objects like any other.
        for text in [
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n",
            "apiVersion: example.com/v1\nkind: ShoppingList\nitems: []\n",
            "apiVersion: v1\nkind: List\nitems: []\nspec: {}\n",
        ] {
            assert_eq!(docs(text).len(), 1, "{text}");
        }
    }
}
