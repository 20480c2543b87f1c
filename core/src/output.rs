//! Output: rendered objects as a YAML stream or a JSON `List`.
//!
//! YAML is written with serde-saphyr, whose emitter quotes every string a YAML 1.1 reader (which is
//! what Kubernetes tooling uses) would take for a boolean, number or null: `"on"`, `"yes"`, `"0777"`.
//! Long strings stay on one line (no folding), multi-line strings use literal blocks, and documents
//! are separated by `---` as `kustomize build` does.

mod emit;
mod stdout;
pub(crate) use emit::writes_plain;
pub use stdout::{cannot_write, write_pieces, write_stdout, Outcome};

/// The exit status of every kiln executable whose stdout reader went away before the end
/// (`kiln render | head`): what a shell reports for a process SIGPIPE ended (`yes | head` gives
/// 141). The output is incomplete, so it is not success; the reader left, so there is no message.
pub const EXIT_BROKEN_PIPE: u8 = 128 + 13;

use serde_json::{json, Value};

use crate::diag::{codes, Diagnostic};

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// `---`-separated YAML documents.
    #[default]
    Yaml,
    /// One JSON `v1/List` object.
    Json,
}

fn yaml_options() -> serde_saphyr::SerializerOptions {
    let mut o = serde_saphyr::SerializerOptions::default();
    // Folding long strings is valid YAML but unlike kubectl; keep them on one line.
    o.folded_wrap_chars = usize::MAX;
    o
}

/// One object as a YAML document (ends with a newline).
pub fn to_yaml(v: &Value) -> Result<String, Diagnostic> {
    // Most objects take the direct emitter; it writes exactly what serde-saphyr would.
    if let Some(text) = emit::emit(v) {
        return Ok(text);
    }
    saphyr_yaml(v)
}

/// The direct emitter alone: `None` when the object needs serde-saphyr (a float, a multi-line
/// string, a document that is not a non-empty mapping). For tests and benchmarks.
pub fn direct_yaml(v: &Value) -> Option<String> {
    emit::emit(v)
}

/// One object written by serde-saphyr alone (what [`to_yaml`] must always equal).
pub fn saphyr_yaml(v: &Value) -> Result<String, Diagnostic> {
    serde_saphyr::to_string_with_options(v, yaml_options()).map_err(|e| {
        Diagnostic::error(codes::INTERNAL, format!("cannot write YAML: {e}"))
            .with_hint("this is a bug in kiln; please report it")
    })
}

/// Objects as a YAML stream.
///
/// The documents are written straight into one buffer (no string per object), and the buffer
/// gives back its unused capacity at the end: `kiln render` keeps every unit's stream until it
/// writes them in order, and the slack of doubling growth was a fifth of its peak memory at
/// 10 000 instances.
pub fn yaml_stream(objects: &[Value]) -> Result<String, Diagnostic> {
    let mut out = String::with_capacity(1024 * objects.len().min(64));
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let start = out.len();
        if !emit::emit_into(&mut out, o) {
            out.push_str(&saphyr_yaml(o)?);
        }
        // As a document written on its own would end: an empty one too gets its newline.
        if out.len() == start || !out.ends_with('\n') {
            out.push('\n');
        }
    }
    out.shrink_to_fit();
    Ok(out)
}

/// Join YAML streams (each from [`yaml_stream`], possibly empty) into one, as if the objects had
/// been written by one call.
pub fn join_yaml(streams: &[String]) -> String {
    let mut out = String::with_capacity(streams.iter().map(|s| s.len() + 4).sum());
    out.extend(yaml_pieces(streams));
    out
}

/// The pieces of [`join_yaml`]'s text, in order, without building it: a caller writing tens of
/// megabytes to stdout need not copy them into one buffer first.
pub fn yaml_pieces(streams: &[String]) -> impl Iterator<Item = &str> {
    streams
        .iter()
        .filter(|s| !s.is_empty())
        .enumerate()
        .flat_map(|(i, s)| [if i > 0 { "---\n" } else { "" }, s.as_str()])
}

/// Objects as a pretty-printed JSON `List`.
pub fn json_list(objects: &[Value]) -> String {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": objects});
    let mut s = serde_json::to_string_pretty(&list).expect("JSON values always serialise");
    s.push('\n');
    s
}

/// Render objects in a format.
pub fn write(objects: &[Value], format: Format) -> Result<String, Diagnostic> {
    match format {
        Format::Yaml => yaml_stream(objects),
        Format::Json => Ok(json_list(objects)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::document::{parse_file, YamlLimits};

    #[test]
    fn ambiguous_strings_are_quoted_and_round_trip() {
        let words = [
            "yes",
            "no",
            "on",
            "off",
            "y",
            "n",
            "Y",
            "NO",
            "true",
            "True",
            "1.0",
            "0777",
            "012",
            "0x1F",
            "1e3",
            "+1",
            "08",
            "1_000",
            "1:30",
            "2024-01-01",
            "~",
            "null",
            "",
            "-",
            ".inf",
            "#x",
            "*ref",
            "a: b",
            " lead",
            "multi\nline",
            "1.0.0",
            "v1",
        ];
        let obj = Value::Object(
            words
                .iter()
                .enumerate()
                .map(|(i, w)| (format!("k{i}"), Value::String(w.to_string())))
                .collect(),
        );
        let text = to_yaml(&obj).unwrap();
        let back = parse_file("t.yaml", text.clone(), &YamlLimits::default()).unwrap();
        assert_eq!(back[0].value, obj, "{text}");
        // The YAML 1.1 booleans must not appear as plain scalars.
        for line in text.lines() {
            for w in ["yes", "no", "on", "off", "y", "n"] {
                assert!(!line.ends_with(&format!(": {w}")), "unquoted {w}: {line}");
            }
        }
    }

    #[test]
    fn stream_and_list() {
        let objs = vec![json!({"a": 1}), json!({"b": "x"})];
        assert_eq!(yaml_stream(&objs).unwrap(), "a: 1\n---\nb: x\n");
        assert!(json_list(&objs).contains("\"kind\": \"List\""));
        assert_eq!(yaml_stream(&[]).unwrap(), "");
        let all = vec![json!({"a": 1}), json!({"b": 2}), json!({"c": 3})];
        let parts = [
            yaml_stream(&all[..1]).unwrap(),
            String::new(),
            yaml_stream(&all[1..]).unwrap(),
            String::new(),
        ];
        assert_eq!(join_yaml(&parts), yaml_stream(&all).unwrap());
        assert_eq!(join_yaml(&[String::new()]), "");
        assert_eq!(yaml_pieces(&parts).collect::<String>(), join_yaml(&parts));
    }

    #[test]
    fn long_strings_stay_on_one_line() {
        let long = "word ".repeat(40);
        let text = to_yaml(&json!({"s": long.trim()})).unwrap();
        assert_eq!(text.lines().count(), 1, "{text}");
    }
}
