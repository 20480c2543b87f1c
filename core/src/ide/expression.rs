//! The `${…}` under the cursor and the part of its CEL expression there.
//!
//! Found on the text as written, the way the scanner kro follows finds it
//! ([`crate::expr::scan::find_close`]), within the scalar the cursor is in, or within its line
//! when the YAML around it does not parse (an unclosed quote while typing).

use std::ops::Range;

use crate::expr::scan::find_close;

/// An expression of a text around an offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hole {
    /// The whole `${…}` (to the end of its region when it is not closed yet).
    pub range: Range<usize>,
    /// The CEL source between the delimiters.
    pub source: Range<usize>,
}

/// The line of `text` around `offset` (without its line break).
pub fn line_around(text: &str, offset: usize) -> Range<usize> {
    let offset = offset.min(text.len());
    let start = text[..floor(text, offset)].rfind('\n').map_or(0, |i| i + 1);
    let end = text[start..].find('\n').map_or(text.len(), |i| start + i);
    start..end
}

/// The largest char boundary at or before `offset`.
pub fn floor(text: &str, offset: usize) -> usize {
    let mut o = offset.min(text.len());
    while !text.is_char_boundary(o) {
        o -= 1;
    }
    o
}

/// The innermost `${…}` of `region` of `text` holding `offset` (after its `${`, up to its `}`).
pub fn hole_at(text: &str, region: Range<usize>, offset: usize) -> Option<Hole> {
    let region = floor(text, region.start)..floor(text, region.end);
    let bytes = &text.as_bytes()[region.clone()];
    let local = offset.checked_sub(region.start)?;
    if local > bytes.len() {
        return None;
    }
    let mut best = None;
    let mut i = 0;
    while i + 1 < bytes.len() && i < local {
        if bytes[i] == b'$' && bytes[i + 1] == b'{' && i + 2 <= local {
            let close = match find_close(bytes, i) {
                Ok(Some(c)) => Some(c),
                Ok(None) => None,
                // A nested `${` ends this one where it starts.
                Err(e) => Some(e.offset),
            };
            let end = close.unwrap_or(bytes.len());
            if local <= end {
                let source = region.start + i + 2..region.start + end;
                let range_end = close.map_or(region.start + end, |c| {
                    region.start + (c + 1).min(bytes.len())
                });
                best = Some(Hole {
                    range: region.start + i..range_end,
                    source,
                });
            }
        }
        i += 1;
    }
    best
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The word of identifier characters around `offset` of `src` (empty when there is none).
pub fn word_at(src: &str, offset: usize) -> Range<usize> {
    let b = src.as_bytes();
    let offset = floor(src, offset);
    let mut s = offset;
    while s > 0 && is_ident(b[s - 1]) {
        s -= 1;
    }
    let mut e = offset;
    while e < b.len() && is_ident(b[e]) {
        e += 1;
    }
    s..e
}

/// Where the chain of selections ending at `end` of `src` starts: `a.b[0].c` from `c`, walking
/// back over identifiers, dots, `?` and bracketed groups.
pub fn chain_start(src: &str, end: usize) -> usize {
    let b = src.as_bytes();
    let mut i = floor(src, end);
    loop {
        if i == 0 {
            return 0;
        }
        let c = b[i - 1];
        if is_ident(c) || c == b'.' || c == b'?' {
            i -= 1;
        } else if c == b']' || c == b')' {
            let open = if c == b']' { b'[' } else { b'(' };
            let mut depth = 0usize;
            let mut j = i;
            loop {
                if j == 0 {
                    return i;
                }
                j -= 1;
                if b[j] == c {
                    depth += 1;
                } else if b[j] == open {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            i = j;
        } else {
            return i;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hole_under_the_cursor_is_found_closed_or_not() {
        let text = "image: ${schema.spec.image}:${tag}";
        let at = text.find("spec").unwrap();
        let h = hole_at(text, 0..text.len(), at).unwrap();
        assert_eq!(&text[h.range.clone()], "${schema.spec.image}");
        assert_eq!(&text[h.source.clone()], "schema.spec.image");
        let h = hole_at(text, 0..text.len(), text.len() - 1).unwrap();
        assert_eq!(&text[h.source], "tag");
        // Before the `${` or on the `:` between: no hole.
        assert_eq!(hole_at(text, 0..text.len(), 2), None);
        assert_eq!(
            hole_at(text, 0..text.len(), text.find(":$").unwrap() + 1),
            None
        );
        let open = "x: ${schema.sp";
        let h = hole_at(open, 0..open.len(), open.len()).unwrap();
        assert_eq!(&open[h.source], "schema.sp");
    }

    #[test]
    fn chains_and_words() {
        let s = "a.b[x.y].c + d";
        assert_eq!(chain_start(s, 10), 0);
        assert_eq!(&s[word_at(s, 9)], "c");
        assert_eq!(chain_start(s, s.len()), s.len() - 1);
        assert_eq!(chain_start(")]x", 3), 2);
    }
}
