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

/// Budgets for reading YAML. The defaults are deliberately larger than the library's (1,024
/// documents, depth 64), which real repositories exceed: a single rendered chart can hold thousands
/// of manifests, and CRD schemas nest deeply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct YamlLimits {
    /// Largest accepted input, in bytes, per file.
    pub max_input_bytes: usize,
    /// Most documents in one stream.
    pub max_documents: usize,
    /// Deepest nesting of collections.
    pub max_depth: usize,
    /// Most nodes after alias expansion (stops billion-laughs expansion).
    pub max_nodes: usize,
    /// Most alias references.
    pub max_aliases: usize,
}

impl Default for YamlLimits {
    fn default() -> Self {
        Self {
            max_input_bytes: 64 << 20,
            max_documents: 100_000,
            max_depth: 128,
            max_nodes: 5_000_000,
            max_aliases: 10_000,
        }
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
        self.value.get("apiVersion").and_then(Value::as_str)
    }

    /// `kind` if it is a string.
    pub fn kind(&self) -> Option<&str> {
        self.value.get("kind").and_then(Value::as_str)
    }

    /// `metadata.name` if it is a string.
    pub fn name(&self) -> Option<&str> {
        self.value
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
    }

    /// A diagnostic located in this document at `path`, with its line filled in when it can be found.
    pub fn diag(&self, d: Diagnostic, path: &FieldPath) -> Diagnostic {
        let mut d = d
            .in_document(&self.source.name, self.index)
            .at(path.to_string());
        if let Some((line, col)) = locate(&self.source.text, self.index, path) {
            d = d.at_line(line, Some(col));
        }
        d
    }
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
        .with_hint("split the input or raise the input size limit"));
    }
    let mut warnings = Vec::new();
    let values = if name.ends_with(".json") {
        parse_json(name, text, limits)?
    } else {
        match parse_yaml(name, text, limits, DuplicateKeyPolicy::Error) {
            Ok(v) => v,
            Err(d) if d.message.starts_with("duplicate mapping key") => {
                // kro, Argo CD and kubectl's lenient conversion keep the last value of a repeated
                // key; do the same so such definitions still load, but say so: it is almost always
                // a mistake.
                warnings.push(
                    Diagnostic::warning(codes::YAML_DUPLICATE_KEY, d.message.clone())
                        .in_file(name)
                        .with_hint("remove one of the repeated keys; the last one wins")
                        .with_position(d.line, d.column),
                );
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
            value,
        })
        .collect();
    Ok((docs, warnings))
}

fn parse_json(name: &str, text: &str, limits: &YamlLimits) -> Result<Vec<Value>, Diagnostic> {
    // serde_json's own recursion limit (128) stops stack exhaustion; report it like any syntax error.
    let mut out = Vec::new();
    let stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    for v in stream {
        match v {
            Ok(v) => out.push(v),
            Err(e) => {
                let msg = e.to_string();
                let (code, hint) = if msg.contains("recursion limit") {
                    (
                        codes::YAML_BUDGET,
                        "the input is nested too deeply (JSON is limited to 128 levels)",
                    )
                } else {
                    (
                        codes::YAML_SYNTAX,
                        "fix the JSON at the marked position (a trailing comma or a missing quote is typical)",
                    )
                };
                return Err(Diagnostic::error(code, format!("invalid JSON: {msg}"))
                    .in_file(name)
                    .at_line(e.line(), Some(e.column()))
                    .with_hint(hint));
            }
        }
        if out.len() > limits.max_documents {
            return Err(too_many_documents(name, limits));
        }
    }
    Ok(out)
}

fn too_many_documents(name: &str, limits: &YamlLimits) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!("more than {} documents in one file", limits.max_documents),
    )
    .in_file(name)
    .with_hint("split the stream into several files or raise the document limit")
}

fn parse_yaml(
    name: &str,
    text: &str,
    limits: &YamlLimits,
    duplicate_keys: DuplicateKeyPolicy,
) -> Result<Vec<Value>, Diagnostic> {
    let options = serde_saphyr::options! {
        budget: serde_saphyr::budget! {
            max_documents: limits.max_documents,
            max_depth: limits.max_depth,
            max_nodes: limits.max_nodes,
            max_aliases: limits.max_aliases,
        },
        // Kubernetes reads YAML with go-yaml v2 (YAML 1.1): `0777` is octal 511 there.
        legacy_octal_numbers: true,
        with_snippet: false,
        duplicate_keys: duplicate_keys,
    };
    match serde_saphyr::from_multiple_with_options::<Value>(text, options) {
        Ok(docs) => Ok(docs.into_iter().filter(|d| !d.is_null()).collect()),
        Err(e) => Err(yaml_error(name, &e)),
    }
}

fn yaml_error(name: &str, e: &serde_saphyr::Error) -> Diagnostic {
    let msg = e.to_string();
    // The first line carries the message; the location, when present, is in the error itself.
    let first = msg
        .lines()
        .next()
        .unwrap_or("invalid YAML")
        .trim()
        .to_string();
    let is_budget = msg.contains("budget") || msg.contains("recursion limit");
    let code = if is_budget {
        codes::YAML_BUDGET
    } else {
        codes::YAML_SYNTAX
    };
    let mut d = Diagnostic::error(code, first).in_file(name);
    if let Some(loc) = e.location() {
        if loc.line() > 0 {
            d = d.at_line(loc.line() as usize, Some(loc.column() as usize));
        }
    }
    d.with_hint(if is_budget {
        "the input is nested too deeply, has too many documents, or expands too many aliases"
    } else {
        "fix the YAML at the marked position (quote values that contain ': ' or start with special characters)"
    })
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

/// The parser's events without the ones that are not part of the node structure (comments,
/// anchor metadata), so the walk in [`locate`] sees only nodes.
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
