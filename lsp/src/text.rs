//! Positions: the protocol counts lines and UTF-16 code units, kiln-core counts bytes of UTF-8
//! (and its diagnostics 1-based lines and characters). Every conversion is here, and each one is
//! total: a position past the end of a line or of the text is clamped, never a panic, since it
//! comes from a client that may hold a different text than the server.

use lsp_types::{Position, Range, TextDocumentContentChangeEvent};

/// The byte offset of `pos` in `text`: clamped to the end of its line (before the line break)
/// or of the text; a position inside a surrogate pair is its character's start.
pub fn offset(text: &str, pos: Position) -> usize {
    let Some(start) = line_start(text, pos.line as usize) else {
        return text.len();
    };
    let line = line_text(&text[start..]);
    let mut units = 0u32;
    for (i, c) in line.char_indices() {
        let next = units + c.len_utf16() as u32;
        if next > pos.character {
            return start + i;
        }
        units = next;
    }
    start + line.len()
}

/// The protocol's position of byte `offset` of `text` (clamped to the text, and to the start
/// of a character it falls inside).
pub fn position(text: &str, offset: usize) -> Position {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    Position {
        line: before.matches('\n').count() as u32,
        character: before[line_start..].encode_utf16().count() as u32,
    }
}

/// The protocol's range of bytes `range` of `text`.
pub fn range(text: &str, range: std::ops::Range<usize>) -> Range {
    Range {
        start: position(text, range.start),
        end: position(text, range.end),
    }
}

/// The byte range of the protocol's `range` of `text` (start and end in order).
pub fn byte_range(text: &str, range: Range) -> std::ops::Range<usize> {
    let (a, b) = (offset(text, range.start), offset(text, range.end));
    a.min(b)..a.max(b)
}

/// The protocol's position of a 1-based line and character column (a diagnostic's), clamped
/// to the text.
pub fn from_line_column(text: &str, line: usize, column: usize) -> Position {
    let Some(start) = line_start(text, line.saturating_sub(1)) else {
        return position(text, text.len());
    };
    let line_text = line_text(&text[start..]);
    let chars = column.saturating_sub(1);
    let end = line_text
        .char_indices()
        .nth(chars)
        .map_or(line_text.len(), |(i, _)| i);
    position(text, start + end)
}

/// The end of the 1-based `line` (before its line break), clamped to the text.
pub fn end_of_line(text: &str, line: usize) -> Position {
    match line_start(text, line.saturating_sub(1)) {
        Some(start) => position(text, start + line_text(&text[start..]).len()),
        None => position(text, text.len()),
    }
}

/// Apply one change of `textDocument/didChange`: a range replaced, or the whole text.
pub fn apply(text: &mut String, change: TextDocumentContentChangeEvent) {
    match change.range {
        None => *text = change.text,
        Some(r) => {
            let r = byte_range(text, r);
            text.replace_range(r, &change.text);
        }
    }
}

/// The byte offset where 0-based line `n` starts, if the text has it.
fn line_start(text: &str, n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    text.match_indices('\n').nth(n - 1).map(|(i, _)| i + 1)
}

/// A line's text without its line break (`\n` or `\r\n`).
fn line_text(from_line_start: &str) -> &str {
    let line = from_line_start.split('\n').next().unwrap_or("");
    line.strip_suffix('\r').unwrap_or(line)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: u32, character: u32) -> Position {
        Position { line, character }
    }

    // `é` is 2 bytes and 1 UTF-16 unit; `😀` is 4 bytes and 2 units (a surrogate pair).
    const TEXT: &str = "aé😀b\r\nxyz\n";

    #[test]
    fn utf16_positions_and_bytes_round_trip() {
        for (pos, byte) in [
            (p(0, 0), 0),
            (p(0, 1), 1),
            (p(0, 2), 3),
            (p(0, 4), 7),
            (p(0, 5), 8),
            (p(1, 0), 10),
            (p(1, 3), 13),
            (p(2, 0), 14),
        ] {
            assert_eq!(offset(TEXT, pos), byte, "{pos:?}");
            assert_eq!(position(TEXT, byte), pos, "{byte}");
        }
    }

    #[test]
    fn out_of_range_positions_are_clamped_never_a_panic() {
        // Inside the surrogate pair: the emoji's start.
        assert_eq!(offset(TEXT, p(0, 3)), 3);
        // Past a line's end: before its line break (`\r\n`).
        assert_eq!(offset(TEXT, p(0, 99)), 8);
        assert_eq!(offset(TEXT, p(99, 0)), TEXT.len());
        assert_eq!(position(TEXT, 4), p(0, 2), "inside a character");
        assert_eq!(position(TEXT, 999), p(2, 0));
        assert_eq!(offset("", p(5, 5)), 0);
    }

    #[test]
    fn diagnostic_columns_are_characters() {
        assert_eq!(from_line_column(TEXT, 1, 4), p(0, 4), "past é and 😀");
        assert_eq!(from_line_column(TEXT, 1, 99), p(0, 5));
        assert_eq!(from_line_column(TEXT, 9, 1), p(2, 0));
        assert_eq!(end_of_line(TEXT, 1), p(0, 5));
        assert_eq!(end_of_line(TEXT, 2), p(1, 3));
    }

    #[test]
    fn changes_apply_by_utf16_ranges() {
        let mut t = TEXT.to_string();
        apply(
            &mut t,
            TextDocumentContentChangeEvent {
                range: Some(Range {
                    start: p(0, 2),
                    end: p(0, 4),
                }),
                range_length: None,
                text: "${".into(),
            },
        );
        assert_eq!(t, "aé${b\r\nxyz\n");
        // A reversed or out-of-range change is clamped, not a panic.
        apply(
            &mut t,
            TextDocumentContentChangeEvent {
                range: Some(Range {
                    start: p(9, 9),
                    end: p(0, 1),
                }),
                range_length: None,
                text: "!".into(),
            },
        );
        assert_eq!(t, "a!");
        apply(
            &mut t,
            TextDocumentContentChangeEvent {
                range: None,
                range_length: None,
                text: "new".into(),
            },
        );
        assert_eq!(t, "new");
    }
}
