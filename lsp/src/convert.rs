//! kiln-core's answers in the protocol's types: byte ranges become UTF-16 positions
//! ([`crate::text`]), files become URIs ([`crate::uri`]), diagnostics gain their code's link
//! into docs/errors.md.

use kiln_core::diag::{Diagnostic, Severity};
use kiln_core::ide;
use lsp_types as lsp;

use crate::text;

/// Where a code's entry of docs/errors.md is: the document's URL and the anchor of its heading
/// (`## KLN3008 type-check` → `#kln3008-type-check`, as GitHub and most Markdown viewers name
/// headings).
pub fn code_href(errors_doc: &str, code: &kiln_core::diag::Code) -> String {
    format!("{errors_doc}#{}-{}", code.id.to_lowercase(), code.slug)
}

/// The range a diagnostic marks in `text`: from its line and column to its end; without an
/// end, to the end of its line; without a line, the file's start.
pub fn diagnostic_range(d: &Diagnostic, text: &str) -> lsp::Range {
    let Some(line) = d.line else {
        return lsp::Range::default();
    };
    let start = text::from_line_column(text, line, d.column.unwrap_or(1));
    let end = match (d.end_line, d.end_column) {
        (Some(l), Some(c)) => text::from_line_column(text, l, c),
        _ => text::end_of_line(text, line),
    };
    lsp::Range {
        start,
        end: end.max(start),
    }
}

/// The message an editor shows: kiln's message, then its hint.
pub fn diagnostic_message(d: &Diagnostic) -> String {
    match &d.hint {
        Some(h) => format!("{}\nhint: {h}", d.message),
        None => d.message.clone(),
    }
}

/// One diagnostic in the protocol's form, located in `text` (its file's).
pub fn diagnostic(d: &Diagnostic, text: &str, errors_doc: &str) -> lsp::Diagnostic {
    lsp::Diagnostic {
        range: diagnostic_range(d, text),
        severity: Some(match d.severity {
            Severity::Error => lsp::DiagnosticSeverity::ERROR,
            Severity::Warning => lsp::DiagnosticSeverity::WARNING,
        }),
        code: Some(lsp::NumberOrString::String(d.code.id.to_string())),
        code_description: code_href(errors_doc, &d.code)
            .parse()
            .ok()
            .map(|href| lsp::CodeDescription { href }),
        source: Some("kiln".to_string()),
        message: diagnostic_message(d),
        related_information: None,
        tags: None,
        data: None,
    }
}

/// A hover in `text`.
pub fn hover(h: ide::Hover, text: &str) -> lsp::Hover {
    lsp::Hover {
        contents: lsp::HoverContents::Markup(lsp::MarkupContent {
            kind: lsp::MarkupKind::Markdown,
            value: h.markdown,
        }),
        range: Some(text::range(text, h.range)),
    }
}

/// A completion in `text`.
pub fn completion(c: ide::Completion, text: &str) -> lsp::CompletionItem {
    lsp::CompletionItem {
        label: c.label,
        kind: Some(match c.kind {
            ide::CompletionKind::Field => lsp::CompletionItemKind::FIELD,
            ide::CompletionKind::Resource => lsp::CompletionItemKind::CLASS,
            ide::CompletionKind::Function => lsp::CompletionItemKind::FUNCTION,
            ide::CompletionKind::Variable => lsp::CompletionItemKind::VARIABLE,
            ide::CompletionKind::Marker => lsp::CompletionItemKind::KEYWORD,
        }),
        detail: c.detail,
        text_edit: Some(lsp::CompletionTextEdit::Edit(lsp::TextEdit {
            range: text::range(text, c.replace),
            new_text: c.insert,
        })),
        ..lsp::CompletionItem::default()
    }
}

/// A document symbol (and its children) in `text`.
pub fn symbol(s: ide::Symbol, text: &str) -> lsp::DocumentSymbol {
    #[allow(deprecated)] // `deprecated` is a field the type still has; `tags` replaces it.
    lsp::DocumentSymbol {
        name: s.name,
        detail: s.detail,
        kind: match s.kind {
            ide::SymbolKind::Definition => lsp::SymbolKind::CLASS,
            ide::SymbolKind::Resource => lsp::SymbolKind::OBJECT,
            ide::SymbolKind::Trait => lsp::SymbolKind::INTERFACE,
            ide::SymbolKind::Patch => lsp::SymbolKind::EVENT,
            ide::SymbolKind::Parameter => lsp::SymbolKind::FIELD,
        },
        tags: None,
        deprecated: None,
        range: text::range(text, s.range),
        selection_range: text::range(text, s.selection),
        children: Some(s.children.into_iter().map(|c| symbol(c, text)).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::diag::codes;

    #[test]
    fn diagnostics_carry_range_code_link_source_and_hint() {
        let text = "a:\n  é: ${schema.spec.replica}\n";
        let d = Diagnostic::error(codes::TYPE_CHECK, "undefined field")
            .in_file("/r.yaml")
            .at_line(2, Some(6))
            .ending_at(2, 28)
            .with_hint("check the spelling");
        let l = diagnostic(&d, text, "file:///k/docs/errors.md");
        let pos = |line, character| lsp::Position { line, character };
        assert_eq!(l.range.start, pos(1, 5));
        assert_eq!(l.range.end, pos(1, 27));
        assert_eq!(l.code, Some(lsp::NumberOrString::String("KLN3008".into())));
        assert_eq!(
            l.code_description.unwrap().href.as_str(),
            "file:///k/docs/errors.md#kln3008-type-check"
        );
        assert_eq!(l.source.as_deref(), Some("kiln"));
        assert_eq!(l.message, "undefined field\nhint: check the spelling");
        assert_eq!(l.severity, Some(lsp::DiagnosticSeverity::ERROR));
        // No end: the rest of the line. No line: the file's start.
        let d = Diagnostic::warning(codes::TYPE_CHECK, "m").at_line(2, None);
        let r = diagnostic_range(&d, text);
        assert_eq!((r.start, r.end), (pos(1, 0), pos(1, 27)));
        let d = Diagnostic::warning(codes::TYPE_CHECK, "m");
        assert_eq!(diagnostic_range(&d, text), lsp::Range::default());
    }
}
