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
use miette::{GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteDiagnostic, NamedSource};

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

/// Byte offset of a 1-based line and column in a text.
fn offset_of(text: &str, line: usize, column: Option<usize>) -> Option<usize> {
    let mut off = 0;
    for (i, l) in text.split_inclusive('\n').enumerate() {
        if i + 1 == line {
            let col = column.unwrap_or(1).saturating_sub(1);
            let within = l.char_indices().nth(col).map(|(b, _)| b).unwrap_or(0);
            return Some(off + within);
        }
        off += l.len();
    }
    None
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
            if let Some(off) = offset_of(&src.text, line, d.column) {
                let len = src.text[off..]
                    .find('\n')
                    .unwrap_or(src.text.len() - off)
                    .max(1);
                md = md.with_label(LabeledSpan::at(off..off + len, "here"));
            }
            let report = miette::Report::new(md)
                .with_source_code(NamedSource::new(src.name.clone(), src.text.clone()));
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

    #[test]
    fn offsets() {
        let t = "ab\ncdé\nf";
        assert_eq!(offset_of(t, 1, Some(1)), Some(0));
        assert_eq!(offset_of(t, 2, Some(3)), Some(5));
        assert_eq!(offset_of(t, 3, None), Some(8));
        assert_eq!(offset_of(t, 9, None), None);
    }
}
