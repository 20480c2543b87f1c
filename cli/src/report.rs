//! Printing diagnostics: human text with a source snippet (miette), or JSON for machines.
//!
//! Everything printed here first goes through redaction (`kiln_core::redact`): values of Secret
//! objects, and values at the paths named with `--secret`, are replaced by `[redacted]` in
//! messages, hints, paths and snippets, whatever the format. The secrets are collected from the
//! files a run read (only when there is something to print), plus what the commands register
//! here: the `--secret` paths, rendered objects, `--set` values.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::{Arc, Mutex};

use kiln_core::diag::{Diagnostic, Severity};
use kiln_core::document::SourceFile;
use kiln_core::redact::{SecretPath, Secrets};
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, SourceCode};

/// How diagnostics are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum DiagFormat {
    /// Human-readable, with source snippets.
    #[default]
    Human,
    /// One JSON object: `{"diagnostics": [...]}`.
    Json,
}

/// What the commands told redaction about, beyond the files a run read.
#[derive(Default)]
struct Known {
    /// `--secret` paths.
    named: Vec<SecretPath>,
    /// Documents that are not files: `--set` values.
    documents: Vec<serde_json::Value>,
    /// Secrets of rendered objects (scanned when registered: the objects are not kept).
    rendered: Secrets,
}

static KNOWN: Mutex<Option<Known>> = Mutex::new(None);

fn with_known<T>(f: impl FnOnce(&mut Known) -> T) -> T {
    let mut guard = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    f(guard.get_or_insert_with(Known::default))
}

/// The paths named with `--secret`.
pub fn set_secret_paths(paths: &[SecretPath]) {
    with_known(|k| k.named = paths.to_vec());
}

/// Rendered objects: their Secrets (and values at `--secret` paths) are redacted from anything
/// printed afterwards.
pub fn note_rendered(objects: &[serde_json::Value]) {
    with_known(|k| {
        let named = k.named.clone();
        k.rendered.add_objects(objects, &named);
    });
}

/// An in-memory document whose values count like a file's (`--set` arguments).
pub fn note_document(doc: serde_json::Value) {
    with_known(|k| k.documents.push(doc));
}

/// The secrets of this run, given the files it read.
fn secrets(files: &[Arc<SourceFile>]) -> Secrets {
    with_known(|k| {
        let mut s = kiln_core::request::collect_secrets(files, &k.documents, &k.named);
        for r in k.rendered.iter() {
            s.add_value(r.value.clone());
        }
        s
    })
}

/// Log text (e.g. `-v` lines) with the run's secrets blanked out.
pub fn redact_log(text: &str, files: &[Arc<SourceFile>]) -> String {
    if text.is_empty() {
        return String::new();
    }
    secrets(files).redact(text)
}

/// Lines of context shown above and below the line a diagnostic points at (miette's default).
const CONTEXT_LINES: usize = 1;
/// At most this many bytes of a source line are shown. A longer line (a minified manifest, a
/// 100 KB expression) is shown as a window around the column, cut with `…`: a snippet is there to
/// point at the place, and a whole megabyte line buries the message.
const SNIPPET_LINE_BYTES: usize = 160;

/// The few lines of a file a diagnostic's snippet shows, each cut to [`SNIPPET_LINE_BYTES`],
/// numbered as in the file. Only this excerpt is handed to miette, not a copy of the whole file
/// per diagnostic.
struct Excerpt {
    name: String,
    text: String,
    /// 0-based line number of the excerpt's first line in the file.
    first_line: usize,
    /// 0-based line within the excerpt that the diagnostic points at, and how many bytes were
    /// cut from its start (so the header's column is the file's).
    target: Option<(usize, usize)>,
    /// The label: byte offset and length within `text`.
    label: Option<(usize, usize)>,
}

impl Excerpt {
    fn around(name: &str, text: &str, line: usize, column: Option<usize>) -> Excerpt {
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut excerpt = Excerpt {
            name: name.to_string(),
            text: String::new(),
            first_line: 0,
            target: None,
            label: None,
        };
        if line == 0 || line > lines.len() {
            return excerpt;
        }
        let idx = line - 1;
        let first = idx.saturating_sub(CONTEXT_LINES);
        let last = (idx + CONTEXT_LINES).min(lines.len() - 1);
        excerpt.first_line = first;
        for (i, l) in lines.iter().enumerate().take(last + 1).skip(first) {
            let body = l.trim_end_matches(['\n', '\r']);
            if i != idx {
                excerpt.text.push_str(&window(body, 0).0);
                excerpt.text.push('\n');
                continue;
            }
            let col = column.unwrap_or(1).saturating_sub(1);
            let at = body.char_indices().nth(col).map(|(b, _)| b).unwrap_or(0);
            let (shown, cut, at_in_shown) = window(body, at);
            let start = excerpt.text.len();
            let len = shown.len().saturating_sub(at_in_shown).max(1);
            excerpt.label = Some((start + at_in_shown, len));
            excerpt.target = Some((i - first, cut));
            excerpt.text.push_str(&shown);
            excerpt.text.push('\n');
        }
        excerpt
    }
}

/// A line cut to [`SNIPPET_LINE_BYTES`] around byte `at`: the text shown, how many bytes of the
/// line were cut before it, and where `at` lands in the text shown.
fn window(line: &str, at: usize) -> (String, usize, usize) {
    if line.len() <= SNIPPET_LINE_BYTES {
        return (line.to_string(), 0, at);
    }
    let floor = |mut b: usize| {
        while !line.is_char_boundary(b) {
            b -= 1;
        }
        b
    };
    let start = floor(at.saturating_sub(SNIPPET_LINE_BYTES / 3).min(line.len()));
    let end = floor((start + SNIPPET_LINE_BYTES).min(line.len()));
    let mut shown = String::new();
    let mut at_in_shown = at - start;
    if start > 0 {
        shown.push('…');
        at_in_shown += '…'.len_utf8();
    }
    shown.push_str(&line[start..end]);
    if end < line.len() {
        shown.push('…');
    }
    let cut = start.saturating_sub(if start > 0 { '…'.len_utf8() } else { 0 });
    (shown, cut, at_in_shown)
}

impl SourceCode for Excerpt {
    fn read_span<'a>(
        &'a self,
        span: &miette::SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn miette::SpanContents<'a> + 'a>, miette::MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        let column = match self.target {
            Some((line, cut)) if inner.line() == line => inner.column() + cut,
            _ => inner.column(),
        };
        Ok(Box::new(miette::MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            inner.line_count(),
        )))
    }
}

fn render_human(
    d: &Diagnostic,
    files: &HashMap<String, Arc<SourceFile>>,
    handler: &GraphicalReportHandler,
) -> String {
    let mut msg = String::new();
    if let Some(p) = &d.path {
        msg.push_str(p);
        msg.push_str(": ");
    }
    msg.push_str(&d.message);
    let mut md = MietteDiagnostic::new(msg)
        .with_code(format!("{}::{}", d.code.id, d.code.slug))
        .with_severity(match d.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        });
    if let Some(h) = &d.hint {
        md = md.with_help(h.clone());
    }
    let source = d.file.as_ref().and_then(|f| files.get(f));
    let mut out = String::new();
    match (source, d.line) {
        (Some(src), Some(line)) => {
            let excerpt = Excerpt::around(&src.name, &src.text, line, d.column);
            if let Some((off, len)) = excerpt.label {
                md = md.with_label(LabeledSpan::at(off..off + len, "here"));
            }
            let report = miette::Report::new(md).with_source_code(excerpt);
            let _ = handler.render_report(&mut out, report.as_ref());
        }
        _ => {
            if let Some(f) = &d.file {
                let loc = match d.line {
                    Some(l) => format!("{f}:{l}"),
                    None => f.clone(),
                };
                md = MietteDiagnostic {
                    message: format!("{loc}: {}", md.message),
                    ..md
                };
            }
            let report = miette::Report::new(md);
            let _ = handler.render_report(&mut out, report.as_ref());
        }
    }
    out
}

/// Print diagnostics to stderr, secrets redacted.
pub fn print(diags: &[Diagnostic], files: &[Arc<SourceFile>], format: DiagFormat) {
    let secrets = if diags.is_empty() {
        Secrets::default()
    } else {
        secrets(files)
    };
    let diags: Vec<Diagnostic> = if secrets.is_empty() {
        diags.to_vec()
    } else {
        diags.iter().map(|d| secrets.redact_diagnostic(d)).collect()
    };
    match format {
        DiagFormat::Json => {
            let v = serde_json::json!({ "diagnostics": diags });
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&v).expect("diagnostics serialise")
            );
        }
        DiagFormat::Human => {
            // Only the files a snippet is shown from, each redacted once.
            let mut by_name: HashMap<String, Arc<SourceFile>> = HashMap::new();
            for f in files {
                if by_name.contains_key(&f.name)
                    || !diags
                        .iter()
                        .any(|d| d.file.as_deref() == Some(f.name.as_str()))
                {
                    continue;
                }
                let shown = if secrets.is_empty() {
                    Arc::clone(f)
                } else {
                    Arc::new(SourceFile {
                        name: f.name.clone(),
                        text: secrets.redact_source(f),
                    })
                };
                by_name.insert(f.name.clone(), shown);
            }
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let theme = if color {
                GraphicalTheme::unicode()
            } else {
                GraphicalTheme::unicode_nocolor()
            };
            let handler = GraphicalReportHandler::new_themed(theme);
            let mut text = String::new();
            for d in &diags {
                text.push_str(&render_human(d, &by_name, &handler));
            }
            let errors = diags.iter().filter(|d| d.is_error()).count();
            let warnings = diags.len() - errors;
            if errors > 0 || warnings > 0 {
                text.push_str(&format!("{errors} error(s), {warnings} warning(s)\n"));
            }
            eprint!("{text}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(text: &str, line: usize, column: Option<usize>) -> String {
        let handler = GraphicalReportHandler::new_themed(GraphicalTheme::unicode_nocolor());
        let ex = Excerpt::around("f.yaml", text, line, column);
        let (off, len) = ex.label.expect("a label");
        let md = MietteDiagnostic::new("m").with_label(LabeledSpan::at(off..off + len, "here"));
        let mut out = String::new();
        handler
            .render_report(
                &mut out,
                miette::Report::new(md).with_source_code(ex).as_ref(),
            )
            .unwrap();
        out
    }

    #[test]
    fn a_snippet_is_numbered_and_placed_as_in_the_file() {
        let out = shown("a: 1\nb: x\nc: 3\nd: 4\n", 3, Some(4));
        assert!(out.contains("[f.yaml:3:4]"), "{out}");
        assert!(out.contains("2 │ b: x") && out.contains("3 │ c: 3") && out.contains("4 │ d: 4"));
        assert!(!out.contains("a: 1"), "one line of context: {out}");
    }

    #[test]
    fn a_long_line_is_shown_as_a_window_around_the_column() {
        // A 100 KB expression on one line: the snippet shows the place, not the line.
        let long = format!("x: \"${{{}+ oops}}\"\n", "a + ".repeat(25_000));
        let text = format!("k: v\n{long}z: 1\n");
        let col = long.find("oops").unwrap() + 1;
        let out = shown(&text, 2, Some(col));
        assert!(out.len() < 2_000, "{} bytes", out.len());
        assert!(out.contains(&format!("[f.yaml:2:{col}]")), "{out}");
        assert!(out.contains("oops") && out.contains('…'), "{out}");
        // A long context line is cut too.
        let out = shown(&format!("k: v\n{long}z: 1\n"), 3, Some(1));
        assert!(out.len() < 2_000 && out.contains("z: 1"), "{out}");
    }

    #[test]
    fn windows_cut_at_character_boundaries() {
        let line = "é".repeat(500);
        for at in [0, 2, 300, 998] {
            let (shown, cut, at_in) = window(&line, at);
            assert!(shown.len() <= SNIPPET_LINE_BYTES + 2 * '…'.len_utf8());
            assert!(shown.is_char_boundary(at_in));
            assert!(cut <= at);
        }
    }
}
