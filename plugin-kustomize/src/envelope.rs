//! The envelope: reading what an orchestrator sends and answering in the same form.
//!
//! kustomize and kpt send a `ResourceList` (`config.kubernetes.io/v1`; older tools `v1beta1` or
//! `v1alpha1`), people piping files send a `List` or a plain `---` stream. kyaml's reader unwraps
//! a single `ResourceList` or `List` document only when it has `items` or `functionConfig`, and
//! does not check its apiVersion; this reader does the same, so whatever kpt would accept back
//! from us is what we accept from it. The answer uses the envelope of the question.

use kiln_core::diag::{codes, Diagnostic};
use std::ops::Range;

use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::output::to_yaml;
use serde_json::{Map, Value};

/// The form the input came in, and so the form of the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Envelope {
    /// A `kind: ResourceList` of this apiVersion.
    ResourceList(String),
    /// A `kind: List` of this apiVersion.
    List(String),
    /// Plain `---`-separated documents.
    Stream,
}

/// What the orchestrator sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The envelope to answer in.
    pub envelope: Envelope,
    /// The items, every one a mapping.
    pub items: Vec<Value>,
    /// The function's configuration, if any.
    pub function_config: Option<Value>,
    /// Where each item's own text stands in [`Request::text`] (a block sequence entry, `- ` and
    /// all), when the input could be split into items; see [`split_items`].
    pub raw: Option<Vec<Range<usize>>>,
    /// With `raw`, each item's text as a document of its own ([`item_document`]): what the item
    /// was parsed from, kept so it is not rebuilt for kiln-core.
    pub texts: Option<Vec<String>>,
    /// The input as it was read, when `raw` points into it (empty otherwise).
    pub text: String,
}

impl Request {
    /// Each item's own text as it stood in the input, when the input could be split.
    pub fn raw_items(&self) -> Option<Vec<&str>> {
        let raw = self.raw.as_ref()?;
        Some(raw.iter().map(|r| &self.text[r.clone()]).collect())
    }
}

/// An item's text as a document of its own: the entry's `- ` and its indentation removed.
pub fn item_document(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for (i, line) in raw.split_inclusive('\n').enumerate() {
        if i == 0 {
            // `- key: v` or `-` alone or `- # comment`.
            out.push_str(line.get(2..).unwrap_or(""));
        } else {
            out.push_str(
                line.strip_prefix("  ")
                    .unwrap_or(line.trim_start_matches(' ')),
            );
        }
    }
    out
}

/// Split a ResourceList's text into the lines of each item, without parsing it: the envelope
/// without its items (`items: []` in their place), and where each item's lines stand in `text`.
///
/// Why: an item kiln hands back unchanged should come back byte for byte, quoting style and
/// comments included; kpt writes what it gets into the user's files, and re-emitting a parsed
/// value would requote every string. Only the layout kpt and kustomize write is split: a
/// top-level `items:` key on its own line, followed by a block sequence at column 0. Lines of an
/// entry are its `- ` line and every following line that is blank, a comment, or indented; the
/// first other line at column 0 ends the sequence. Anything else returns `None` (the caller then
/// reads the whole text as YAML and emits items from their values).
///
/// The split cannot change what the items mean: each piece is parsed on its own by the caller,
/// and a boundary in the wrong place (inside a quoted scalar or a flow collection spanning
/// lines, an alias to another item's anchor) leaves a piece that does not parse, which sends
/// the caller back to the whole-text reading.
pub fn split_items(text: &str) -> Option<(String, Vec<Range<usize>>)> {
    let mut rest = String::with_capacity(256);
    let mut items: Vec<Range<usize>> = Vec::new();
    let mut in_items = false;
    let mut seen_items = false;
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let start = at;
        at += line.len();
        let content = line.trim_end_matches(['\n', '\r']);
        if in_items {
            let top = !content.is_empty() && !content.starts_with([' ', '#']);
            if content == "-" || content.starts_with("- ") {
                items.push(start..at);
                continue;
            }
            if !top {
                match items.last_mut() {
                    Some(last) => last.end = at,
                    // Blank lines and comments before the first entry.
                    None if content.trim_start().is_empty()
                        || content.trim_start().starts_with('#') => {}
                    None => return None,
                }
                continue;
            }
            in_items = false;
        }
        let key = content.split(" #").next().unwrap_or("").trim_end();
        if key == "items:" {
            if seen_items {
                return None;
            }
            seen_items = true;
            in_items = true;
            rest.push_str("items: []\n");
            continue;
        }
        rest.push_str(line);
    }
    if !seen_items {
        return None;
    }
    Some((rest, items))
}

/// The name diagnostics give the input.
pub const STDIN: &str = "<stdin>";

/// Read an input text. Every problem is a diagnostic; nothing is guessed.
pub fn read(name: &str, text: String, limits: &YamlLimits) -> Result<Request, Diagnostic> {
    let text = match read_split(name, text, limits) {
        Ok(r) => return Ok(r),
        Err(text) => text,
    };
    read_whole(name, text, limits)
}

/// The fast and faithful reading: the envelope without its items, then each item's text on its
/// own, on every core. The text back whenever anything does not fit; the whole-text reading then
/// decides.
fn read_split(name: &str, text: String, limits: &YamlLimits) -> Result<Request, String> {
    use rayon::prelude::*;
    let Some((rest, pieces)) = split_items(&text) else {
        return Err(text);
    };
    let Ok(mut r) = read_whole(name, rest, limits) else {
        return Err(text);
    };
    if r.envelope == Envelope::Stream || !r.items.is_empty() || pieces.len() > limits.max_documents
    {
        return Err(text);
    }
    // Each item: its document text, parsed, and the text taken back from the document (its
    // only holder), uncopied.
    let parsed: Option<Vec<(Value, String)>> = pieces
        .par_iter()
        .map(|p| {
            let docs = parse_file(name, item_document(&text[p.clone()]), limits).ok()?;
            match <[_; 1]>::try_from(docs) {
                Ok([d]) if d.value.is_object() => {
                    let source = std::sync::Arc::try_unwrap(d.source).ok()?;
                    Some((d.value, source.text))
                }
                _ => None,
            }
        })
        .collect();
    let Some(parsed) = parsed else {
        return Err(text);
    };
    let (items, texts) = parsed.into_iter().unzip();
    r.items = items;
    r.raw = Some(pieces);
    r.texts = Some(texts);
    r.text = text;
    Ok(r)
}

/// Read the whole text as YAML (the reading [`read`] falls back to; the fuzz target holds the
/// split reading to it).
pub fn read_whole(name: &str, text: String, limits: &YamlLimits) -> Result<Request, Diagnostic> {
    let docs = parse_file(name, text, limits)?;
    if let [only] = docs.as_slice() {
        if let Some(envelope) = envelope_of(&only.value) {
            let map = only.value.as_object().expect("an envelope is a mapping");
            let items = match map.get("items") {
                None | Some(Value::Null) => Vec::new(),
                Some(Value::Array(items)) => items.clone(),
                Some(_) => {
                    return Err(malformed(name, "items", "items must be a list of objects"));
                }
            };
            for (i, item) in items.iter().enumerate() {
                if !item.is_object() {
                    return Err(malformed(
                        name,
                        &format!("items[{i}]"),
                        &format!("items[{i}] is {}, not an object", describe(item)),
                    ));
                }
            }
            let function_config = match map.get("functionConfig") {
                None | Some(Value::Null) => None,
                Some(v @ Value::Object(_)) => Some(v.clone()),
                Some(v) => {
                    return Err(malformed(
                        name,
                        "functionConfig",
                        &format!("functionConfig is {}, not an object", describe(v)),
                    ));
                }
            };
            return Ok(Request {
                envelope,
                items,
                function_config,
                raw: None,
                texts: None,
                text: String::new(),
            });
        }
    }
    let mut items = Vec::with_capacity(docs.len());
    for d in docs {
        if !d.value.is_object() {
            return Err(Diagnostic::error(
                codes::NOT_AN_OBJECT,
                format!(
                    "document {} of the input is {}, not an object",
                    d.index,
                    describe(&d.value)
                ),
            )
            .in_document(name, d.index)
            .with_hint("send a ResourceList, a List or a stream of Kubernetes objects"));
        }
        items.push(d.value);
    }
    Ok(Request {
        envelope: Envelope::Stream,
        items,
        function_config: None,
        raw: None,
        texts: None,
        text: String::new(),
    })
}

/// The envelope a lone document stands for, as kyaml decides it.
fn envelope_of(doc: &Value) -> Option<Envelope> {
    let map = doc.as_object()?;
    if !map.contains_key("items") && !map.contains_key("functionConfig") {
        return None;
    }
    let api_version = map
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    match map.get("kind").and_then(Value::as_str) {
        Some("ResourceList") => Some(Envelope::ResourceList(api_version)),
        Some("List") => Some(Envelope::List(api_version)),
        _ => None,
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

fn malformed(name: &str, path: &str, message: &str) -> Diagnostic {
    Diagnostic::error(codes::NOT_AN_OBJECT, format!("malformed ResourceList: {message}"))
        .in_document(name, 0)
        .at(path)
        .with_hint("a ResourceList holds `items` (a list of Kubernetes objects) and an optional `functionConfig` object")
}

/// An item of the answer: an object to write, or an input item's own text (see [`split_items`]).
#[derive(Debug, Clone, Copy)]
pub enum Out<'a> {
    /// Written from its value.
    Value(&'a Value),
    /// Written as it was received (a block sequence entry).
    Raw(&'a str),
}

/// Write the answer in `envelope`. A `ResourceList` always has `items:` (kpt rejects a list
/// without it) and `results:` when there are any; a `List` or a stream cannot carry results.
pub fn write(
    envelope: &Envelope,
    items: &[Value],
    results: &[Value],
) -> Result<String, Diagnostic> {
    let outs: Vec<Out<'_>> = items.iter().map(Out::Value).collect();
    write_out(envelope, &outs, results)
}

/// [`write()`] for items some of which are raw text.
pub fn write_out(
    envelope: &Envelope,
    items: &[Out<'_>],
    results: &[Value],
) -> Result<String, Diagnostic> {
    // Sized for what is known: raw entries are copied whole (a large pass-through's answer is
    // mostly those, and growing the string copied it twice more into fresh memory).
    let known: usize = items
        .iter()
        .map(|o| match o {
            Out::Raw(r) => r.len() + 1,
            Out::Value(_) => 512,
        })
        .sum();
    let mut out = String::with_capacity(known + 256);
    let (api_version, kind) = match envelope {
        Envelope::Stream => {
            let mut s = String::new();
            for (i, o) in items.iter().enumerate() {
                if i > 0 {
                    s.push_str("---\n");
                }
                match o {
                    Out::Value(v) => s.push_str(&to_yaml(v)?),
                    Out::Raw(r) => s.push_str(&item_document(r)),
                }
                if !s.ends_with('\n') {
                    s.push('\n');
                }
            }
            return Ok(s);
        }
        Envelope::ResourceList(v) => (v.as_str(), "ResourceList"),
        Envelope::List(v) => (v.as_str(), "List"),
    };
    let api_version = match (api_version, kind) {
        ("", "ResourceList") => "config.kubernetes.io/v1",
        ("", _) => "v1",
        (v, _) => v,
    };
    // The header goes through the emitter too, so an odd apiVersion comes back quoted as needed.
    let mut header = Map::new();
    header.insert("apiVersion".into(), Value::String(api_version.into()));
    header.insert("kind".into(), Value::String(kind.into()));
    out.push_str(&to_yaml(&Value::Object(header))?);
    write_sequence(&mut out, "items", items)?;
    if kind == "ResourceList" && !results.is_empty() {
        let rs: Vec<Out<'_>> = results.iter().map(Out::Value).collect();
        write_sequence(&mut out, "results", &rs)?;
    }
    Ok(out)
}

/// `key:` and the objects as a block sequence: each object's YAML indented under `- `. Block YAML
/// stays valid when every line is indented alike (block scalars' indentation is relative), and
/// blank lines stay blank so literal text is not changed.
fn write_sequence(out: &mut String, key: &str, objects: &[Out<'_>]) -> Result<(), Diagnostic> {
    if objects.is_empty() {
        out.push_str(key);
        out.push_str(": []\n");
        return Ok(());
    }
    out.push_str(key);
    out.push_str(":\n");
    for o in objects {
        let o = match o {
            Out::Raw(r) => {
                out.push_str(r);
                if !r.ends_with('\n') {
                    out.push('\n');
                }
                continue;
            }
            Out::Value(v) => v,
        };
        let text = to_yaml(o)?;
        for (i, line) in text.lines().enumerate() {
            if i == 0 {
                out.push_str("- ");
            } else if !line.is_empty() {
                out.push_str("  ");
            }
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read_str(text: &str) -> Result<Request, Diagnostic> {
        read(STDIN, text.to_string(), &YamlLimits::default())
    }

    #[test]
    fn resource_list_of_any_version_is_unwrapped() {
        for v in [
            "config.kubernetes.io/v1",
            "config.kubernetes.io/v1beta1",
            "config.kubernetes.io/v1alpha1",
        ] {
            let r = read_str(&format!(
                "apiVersion: {v}\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: a}}\nfunctionConfig:\n  apiVersion: v1\n  kind: ConfigMap\n  data: {{k: v}}\n"
            ))
            .unwrap();
            assert_eq!(r.envelope, Envelope::ResourceList(v.into()));
            assert_eq!(r.items.len(), 1);
            assert_eq!(r.function_config.unwrap()["data"]["k"], "v");
        }
    }

    #[test]
    fn list_and_stream() {
        let r = read_str("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n").unwrap();
        assert_eq!(r.envelope, Envelope::List("v1".into()));
        assert_eq!(r.items.len(), 1);
        let r = read_str("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n").unwrap();
        assert_eq!(r.envelope, Envelope::Stream);
        assert_eq!(r.items.len(), 2);
        // Empty input (a legacy generator's stdin) is an empty stream.
        let r = read_str("").unwrap();
        assert_eq!(r.envelope, Envelope::Stream);
        assert!(r.items.is_empty());
    }

    #[test]
    fn a_resource_list_without_items_or_config_is_a_resource() {
        // As kyaml reads it: then it is an item of a plain stream.
        let r = read_str(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nmetadata: {name: x}\n",
        )
        .unwrap();
        assert_eq!(r.envelope, Envelope::Stream);
        assert_eq!(r.items.len(), 1);
    }

    #[test]
    fn malformed_input_is_a_diagnostic() {
        let e = read_str("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: 3\n")
            .unwrap_err();
        assert_eq!(e.code, codes::NOT_AN_OBJECT);
        assert_eq!(e.path.as_deref(), Some("items"));
        let e = read_str(
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- 1\n- [a]\n",
        )
        .unwrap_err();
        assert_eq!(e.path.as_deref(), Some("items[0]"));
        assert!(e.message.contains("a number"), "{}", e.message);
        let e = read_str("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\nfunctionConfig: [1]\n").unwrap_err();
        assert_eq!(e.path.as_deref(), Some("functionConfig"));
        let e = read_str("a: [\n").unwrap_err();
        assert_eq!(e.code, codes::YAML_SYNTAX);
        let e = read_str("- a\n- b\n").unwrap_err();
        assert_eq!(e.code, codes::NOT_AN_OBJECT);
    }

    #[test]
    fn answer_in_the_same_envelope_and_always_with_items() {
        let items = [
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"s": "line1\n\nline3\n"}}),
        ];
        let out = write(
            &Envelope::ResourceList("config.kubernetes.io/v1alpha1".into()),
            &items,
            &[json!({"message": "m", "severity": "info"})],
        )
        .unwrap();
        assert!(out.starts_with("apiVersion: config.kubernetes.io/v1alpha1\nkind: ResourceList\nitems:\n- apiVersion: v1\n"), "{out}");
        let back = read_str(&out).unwrap();
        assert_eq!(back.items, items);
        assert!(out.contains("results:\n- message: m\n"), "{out}");

        let empty = write(
            &Envelope::ResourceList("config.kubernetes.io/v1".into()),
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(
            empty,
            "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems: []\n"
        );

        let list = write(
            &Envelope::List("v1".into()),
            &items,
            &[json!({"message": "dropped"})],
        )
        .unwrap();
        assert!(list.starts_with("apiVersion: v1\nkind: List\nitems:\n"));
        assert!(!list.contains("results"));
        let stream = write(&Envelope::Stream, &items, &[]).unwrap();
        assert!(stream.starts_with("apiVersion: v1\nkind: ConfigMap\n"));
    }
}
