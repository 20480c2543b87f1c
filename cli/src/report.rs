//! Printing diagnostics: human text with a source snippet (miette), or JSON for machines.

use std::collections::HashMap;
use std::io::IsTerminal;
use std::sync::Arc;

use kiln_core::diag::{Diagnostic, Severity};
use kiln_core::document::SourceFile;
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

/// Print diagnostics to stderr.
pub fn print(diags: &[Diagnostic], files: &[Arc<SourceFile>], format: DiagFormat) {
    match format {
        DiagFormat::Json => {
            let v = serde_json::json!({ "diagnostics": diags });
            eprintln!(
                "{}",
                serde_json::to_string_pretty(&v).expect("diagnostics serialise")
            );
        }
        DiagFormat::Human => {
            let by_name: HashMap<String, Arc<SourceFile>> = files
                .iter()
                .map(|f| (f.name.clone(), Arc::clone(f)))
                .collect();
            let color = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none();
            let theme = if color {
                GraphicalTheme::unicode()
            } else {
                GraphicalTheme::unicode_nocolor()
            };
            let handler = GraphicalReportHandler::new_themed(theme);
            let mut text = String::new();
            for d in diags {
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
