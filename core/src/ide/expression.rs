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

/// The content of a one-line double-quoted YAML scalar (`raw` from its opening quote), decoded
/// by YAML's escapes, with the offset in `raw` of each decoded byte and one past the last:
/// kro's scanner reads the decoded value, where `\"` is a quote. `None` for an escape YAML
/// does not have, or a scalar over several lines (folded), which are left to the plain text.
pub fn unquote(raw: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::new();
    let mut map = Vec::new();
    let mut chars = raw.char_indices();
    chars.next()?;
    let mut end = raw.len();
    while let Some((i, c)) = chars.next() {
        let decoded = match c {
            '"' => {
                end = i;
                break;
            }
            '\n' => return None,
            '\\' => {
                let (_, e) = chars.next()?;
                let hex = |n: usize, chars: &mut std::str::CharIndices<'_>| {
                    let digits: String = (0..n)
                        .filter_map(|_| chars.next().map(|(_, c)| c))
                        .collect();
                    u32::from_str_radix(&digits, 16).ok()
                };
                match e {
                    '"' | '\\' | '/' | ' ' => e,
                    'n' => '\n',
                    't' | '\t' => '\t',
                    'r' => '\r',
                    '0' => '\0',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    'e' => '\u{1b}',
                    'f' => '\u{c}',
                    'v' => '\u{b}',
                    'N' => '\u{85}',
                    '_' => '\u{a0}',
                    'L' => '\u{2028}',
                    'P' => '\u{2029}',
                    'x' => char::from_u32(hex(2, &mut chars)?)?,
                    'u' => {
                        let n = hex(4, &mut chars)?;
                        // A UTF-16 surrogate pair, as the reader combines it.
                        if (0xD800..0xDC00).contains(&n) {
                            let (Some((_, '\\')), Some((_, 'u'))) = (chars.next(), chars.next())
                            else {
                                return None;
                            };
                            let low = hex(4, &mut chars)?.checked_sub(0xDC00)?;
                            char::from_u32(0x10000 + ((n - 0xD800) << 10) + low)?
                        } else {
                            char::from_u32(n)?
                        }
                    }
                    'U' => char::from_u32(hex(8, &mut chars)?)?,
                    _ => return None,
                }
            }
            c => c,
        };
        out.push(decoded);
        // Every byte of the decoded character is where its escape (or itself) is written.
        map.extend(std::iter::repeat_n(i, decoded.len_utf8()));
    }
    map.push(end);
    Some((out, map))
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
    fn a_double_quoted_scalar_is_scanned_decoded() {
        let raw = r#""${a + \"}\" + b}" tail"#;
        let (dec, map) = unquote(raw).unwrap();
        assert_eq!(dec, r#"${a + "}" + b}"#);
        let h = hole_at(&dec, 0..dec.len(), dec.find('b').unwrap()).unwrap();
        assert_eq!(&dec[h.source.clone()], r#"a + "}" + b"#);
        // Back in the written text: from after `${` to before the closing `}`.
        assert_eq!(
            &raw[map[h.source.start]..map[h.source.end]],
            r#"a + \"}\" + b"#
        );
        assert_eq!(unquote("\"a\\qb\""), None);
        assert_eq!(unquote("\"a\nb\""), None);
        assert_eq!(
            unquote(r#""\u00e9\x41""#).map(|(d, m)| (d, m.len())),
            Some(("éA".into(), 4))
        );
        assert_eq!(
            unquote(r#""\ud83d\ude00""#).map(|(d, _)| d),
            Some("😀".into())
        );
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
