//! Code actions: the mechanical fixes diagnostics already name ("did you mean …?").

use std::ops::Range;

use super::{Action, Edit, Location, Texts};
use crate::diag::Diagnostic;

/// How far past its position a diagnostic's misspelt word is looked for: the rest of its entry
/// (a block scalar's lines included), bounded.
const MAX_LOOK: usize = 4096;

/// The fixes for the diagnostics of `file` that touch `range`.
pub fn actions(
    texts: &Texts,
    file: &str,
    range: Range<usize>,
    diagnostics: &[Diagnostic],
) -> Vec<Action> {
    let Some(text) = texts.get(file) else {
        return Vec::new();
    };
    diagnostics
        .iter()
        .filter(|d| d.file.as_deref() == Some(file))
        .filter_map(|d| {
            let with = d.suggestion.as_deref()?;
            let at = offset_of(text, d.line?, d.column.unwrap_or(1))?;
            let word = misspelt(text, at, with)?;
            // The fix applies where the editor asks: a range touching the word or the
            // diagnostic's position.
            let touches = |r: &Range<usize>| range.start <= r.end && r.start <= range.end;
            if !touches(&word) && !touches(&(at..at)) {
                return None;
            }
            Some(Action {
                title: format!("Replace with `{with}`"),
                code: Some(d.code.id.to_string()),
                edits: vec![Edit {
                    location: Location {
                        file: file.to_string(),
                        range: word,
                    },
                    text: with.to_string(),
                }],
            })
        })
        .collect()
}

/// The byte offset of a 1-based line and column (in characters), `None` past the text.
fn offset_of(text: &str, line: usize, column: usize) -> Option<usize> {
    let start = if line <= 1 {
        0
    } else {
        text.match_indices('\n').nth(line - 2)?.0 + 1
    };
    let rest = &text[start..];
    let end = rest.find('\n').unwrap_or(rest.len());
    let col = rest[..end]
        .char_indices()
        .nth(column.saturating_sub(1))
        .map_or(end, |(b, _)| b);
    Some(start + col)
}

/// The first word from `at` on, within the entry the diagnostic points at, that `with` is a
/// near miss of (by [`crate::suggest::nearest`], the rule that suggested it).
fn misspelt(text: &str, at: usize, with: &str) -> Option<Range<usize>> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let first_indent = indent(&text[line_start..]);
    let mut end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    // Lines indented deeper than the entry's belong to it.
    while end < text.len() && end - at < MAX_LOOK {
        let next = &text[end + 1..];
        let line = &next[..next.find('\n').unwrap_or(next.len())];
        if line.trim().is_empty() || indent(line) <= first_indent {
            break;
        }
        end += 1 + line.len();
    }
    let b = text.as_bytes();
    let mut i = at;
    while i < end {
        if b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-' {
            let s = i;
            while i < end && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'-') {
                i += 1;
            }
            let word = &text[s..i];
            if word != with && crate::suggest::nearest(word, [with]).is_some() {
                return Some(s..i);
            }
        } else {
            i += 1;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::codes;

    fn diag(line: usize, col: usize, with: &str) -> Diagnostic {
        crate::suggest::suggesting(
            Diagnostic::error(codes::UNKNOWN_IDENTIFIER, "x")
                .in_file("a.yaml")
                .at_line(line, Some(col)),
            Some(with),
        )
    }

    #[test]
    fn a_suggestion_replaces_the_misspelt_word_at_the_diagnostic() {
        let text = "spec:\n  name: ${deploymnet.metadata.name}\n";
        let texts = Texts::from([("a.yaml".to_string(), text.to_string())]);
        let got = actions(&texts, "a.yaml", 0..text.len(), &[diag(2, 3, "deployment")]);
        assert_eq!(got.len(), 1);
        let e = &got[0].edits[0];
        assert_eq!(&text[e.location.range.clone()], "deploymnet");
        assert_eq!(e.text, "deployment");
        assert_eq!(got[0].title, "Replace with `deployment`");
        assert_eq!(got[0].code.as_deref(), Some("KLN3003"));
        // No suggestion, no action; a range elsewhere, no action.
        let mut plain = diag(2, 3, "deployment");
        plain.suggestion = None;
        assert!(actions(&texts, "a.yaml", 0..text.len(), &[plain]).is_empty());
        assert!(actions(&texts, "a.yaml", 0..1, &[diag(2, 3, "deployment")]).is_empty());
    }

    #[test]
    fn the_word_is_found_in_a_block_below_its_key_and_not_past_the_entry() {
        let text = "a:\n  b: |\n    ${foo.x} ${deploymnet.y}\n  c: deploymnet\n";
        let texts = Texts::from([("a.yaml".to_string(), text.to_string())]);
        let got = actions(&texts, "a.yaml", 0..text.len(), &[diag(2, 3, "deployment")]);
        assert_eq!(
            got[0].edits[0].location.range.start,
            text.find("deploymnet").unwrap()
        );
        // Positions past the text, or a line with no near word, give nothing.
        assert!(actions(
            &texts,
            "a.yaml",
            0..text.len(),
            &[diag(99, 1, "deployment")]
        )
        .is_empty());
        assert!(actions(&texts, "a.yaml", 0..text.len(), &[diag(1, 1, "zzzzzz")]).is_empty());
    }
}
