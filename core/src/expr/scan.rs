//! `${…}` scanner (kro semantics).
//!
//! This reproduces kro v0.9.x `pkg/graph/parser/cel.go` (`extractExpressions` /
//! `isStandaloneExpression`) byte for byte, including its quirks, because kiln must accept and
//! reject exactly the strings kro accepts and rejects:
//!
//! * Only double-quoted CEL literals are tracked. Single quotes are ordinary characters, so
//!   `${'}'}` ends at the first `}` and `${'${x}'}` is a nested-expression error.
//! * Inside a double-quoted literal a backslash skips the next byte.
//! * A `${` inside an expression and outside a double-quoted literal is an error, except when
//!   the byte right before it is `"` (kro checks the previous byte, not the literal state), so
//!   `${"a"${b}}` scans as the expression `"a"${b}` and only fails later as CEL.
//! * An unterminated `${` is not an error: scanning resumes one byte later and the text stays
//!   literal.
//!
//! Later upstream revisions (after v0.9.3) track single quotes, reject unterminated `${` and add
//! `$${…}` deferral; none of that is v0.9.x behaviour, so none of it is reproduced here.
//!
//! All delimiters are ASCII, so every offset the scanner produces or slices at is a UTF-8 char
//! boundary: multi-byte characters only ever contain bytes `>= 0x80`, which never compare equal
//! to a delimiter.

use std::fmt;

/// Opening delimiter of an embedded expression.
const OPEN: &str = "${";

pub use crate::delimiter::has_open;

/// Error text used by kro (`parser.ErrNestedExpression`); kept verbatim so messages match.
pub const NESTED_EXPRESSION: &str =
    "nested expressions are not allowed unless inside string literals";

/// One `${…}` occurrence: `expr` is the text between `${` and the matching `}`; start/end are
/// byte offsets of `${` and one past `}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// CEL source between the delimiters, verbatim (no trimming).
    pub expr: String,
    /// Byte offset of the `$` of `${`.
    pub start: usize,
    /// Byte offset one past the closing `}`.
    pub end: usize,
}

/// A string that kro would reject while looking for expressions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanError {
    /// Human-readable reason, e.g. [`NESTED_EXPRESSION`].
    pub message: String,
    /// Byte offset of the offending `${`.
    pub offset: usize,
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // kro prints the bare message; the offset is extra context callers may add themselves.
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScanError {}

/// All `${…}` matches in `s`, in order of appearance.
///
/// Errors only on a nested `${` outside a double-quoted literal; unterminated `${` are skipped.
pub fn scan(s: &str) -> Result<Vec<Match>, ScanError> {
    let bytes = s.as_bytes();
    let mut matches = Vec::new();
    let mut from = 0;
    while from < bytes.len() {
        // `from` is always 0, one past an ASCII `}` or one past an ASCII `$`: a char boundary.
        let Some(rel) = s[from..].find(OPEN) else {
            break;
        };
        let start = from + rel;
        match find_close(bytes, start)? {
            Some(close) => {
                matches.push(Match {
                    expr: s[start + OPEN.len()..close].to_string(),
                    start,
                    end: close + 1,
                });
                from = close + 1;
            }
            // kro advances its search start by one byte and searches again; resuming right after
            // this `$` is equivalent because re-scanning from the same `${` gives the same result.
            None => from = start + 1,
        }
    }
    Ok(matches)
}

/// Index of the `}` closing the expression whose `${` is at `start`, `None` if it never closes.
/// Public for the editor (`ide`), which finds the expression under the cursor the same way.
pub fn find_close(bytes: &[u8], start: usize) -> Result<Option<usize>, ScanError> {
    let mut depth = 1usize;
    let mut in_string = false;
    let mut escape_next = false;
    let mut i = start + OPEN.len();
    while i < bytes.len() {
        let c = bytes[i];
        if escape_next {
            escape_next = false;
        } else if in_string && c == b'\\' {
            escape_next = true;
        } else if c == b'"' {
            in_string = !in_string;
        } else if !in_string {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(Some(i));
                    }
                }
                // `i >= start + 2`, so `i - 1` is in range. kro only exempts a `${` that directly
                // follows a `"`; that quirk is kept (see the module docs).
                b'$' if bytes.get(i + 1) == Some(&b'{') && bytes[i - 1] != b'"' => {
                    return Err(ScanError {
                        message: NESTED_EXPRESSION.to_string(),
                        offset: i,
                    });
                }
                _ => {}
            }
        }
        i += 1;
    }
    Ok(None)
}

/// How kro uses a string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Template {
    /// No `${…}`: the string is used as is.
    Literal,
    /// The whole string is exactly one `${expr}`: the value is the expression's result, of any
    /// type. Holds the CEL source.
    Standalone(String),
    /// Text and expressions mixed (or several expressions): kro concatenates the parts, each of
    /// which must evaluate to a string.
    Interpolated(Vec<Part>),
}

/// One piece of an [`Template::Interpolated`] string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// Literal text, verbatim (including any unterminated `${`). Never empty.
    Text(String),
    /// CEL source of one `${…}`.
    Expr(String),
}

/// Classify `s` as kro does: literal, standalone expression or interpolated template.
///
/// Standalone means exactly one match spanning the whole string, so surrounding whitespace
/// (e.g. a trailing newline from a YAML `|` block) makes it a template. `${"${X}"}` is
/// standalone with CEL source `"${X}"`, the documented way to produce a literal `${X}`.
pub fn classify(s: &str) -> Result<Template, ScanError> {
    let matches = scan(s)?;
    if matches.is_empty() {
        return Ok(Template::Literal);
    }
    if let [only] = matches.as_slice() {
        if only.start == 0 && only.end == s.len() {
            return Ok(Template::Standalone(only.expr.clone()));
        }
    }
    let mut parts = Vec::with_capacity(matches.len() * 2 + 1);
    let mut pos = 0;
    for m in matches {
        // Empty text between adjacent expressions adds nothing to the concatenation.
        if m.start > pos {
            parts.push(Part::Text(s[pos..m.start].to_string()));
        }
        pos = m.end;
        parts.push(Part::Expr(m.expr));
    }
    if pos < s.len() {
        parts.push(Part::Text(s[pos..].to_string()));
    }
    Ok(Template::Interpolated(parts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(expr: &str, start: usize, end: usize) -> Match {
        Match {
            expr: expr.to_string(),
            start,
            end,
        }
    }

    /// `has_open` answers as `contains("${")` does, at every position and around `$$` and
    /// multi-byte characters.
    #[test]
    fn has_open_agrees_with_contains() {
        for s in [
            "", "$", "{", "${", "$${", "$ {", "a$", "a${b}", "ab$", "$$", "$a${", "é${", "${é",
            "$é{", "x$}{", "}${",
        ] {
            assert_eq!(has_open(s), s.contains("${"), "{s:?}");
        }
    }

    fn ok(s: &str) -> Vec<Match> {
        scan(s).unwrap_or_else(|e| panic!("scan({s:?}) failed: {e:?}"))
    }

    fn exprs(s: &str) -> Vec<String> {
        ok(s).into_iter().map(|m| m.expr).collect()
    }

    fn nested_at(s: &str) -> usize {
        match scan(s) {
            Err(e) => {
                assert_eq!(e.message, NESTED_EXPRESSION, "{s:?}");
                e.offset
            }
            Ok(v) => panic!("scan({s:?}) should fail, got {v:?}"),
        }
    }

    fn text(s: &str) -> Part {
        Part::Text(s.to_string())
    }

    fn expr(s: &str) -> Part {
        Part::Expr(s.to_string())
    }

    // ---- kro cel_test.go TestExtractExpressions (positions), v0.9.x expectations ----

    #[test]
    fn kro_simple_and_positions() {
        assert_eq!(ok("${resource.field}"), vec![m("resource.field", 0, 17)]);
        assert_eq!(
            ok("${length(resource.list)}"),
            vec![m("length(resource.list)", 0, 24)]
        );
        assert_eq!(
            ok("prefix-${resource.field}"),
            vec![m("resource.field", 7, 24)]
        );
        assert_eq!(
            ok("${resource.field}-suffix"),
            vec![m("resource.field", 0, 17)]
        );
        assert_eq!(
            ok("${resource1.field}-middle-${resource2.field}"),
            vec![m("resource1.field", 0, 18), m("resource2.field", 26, 44)]
        );
        assert_eq!(
            ok("${resource.map['key']}"),
            vec![m("resource.map['key']", 0, 22)]
        );
        assert_eq!(
            ok("${resource.list[0]}"),
            vec![m("resource.list[0]", 0, 19)]
        );
        assert_eq!(
            ok("${resource.field == 'value' && resource.number > 5}"),
            vec![m("resource.field == 'value' && resource.number > 5", 0, 51)]
        );
        assert_eq!(
            ok("  ${resource1.field}  ${resource2.field}  "),
            vec![m("resource1.field", 2, 20), m("resource2.field", 22, 40)]
        );
        assert_eq!(
            ok("${resource.list.map(\n  x,\n  x * 2\n)}"),
            vec![m("resource.list.map(\n  x,\n  x * 2\n)", 0, 36)]
        );
    }

    #[test]
    fn kro_no_expressions() {
        assert_eq!(ok("plain string"), vec![]);
        assert_eq!(ok(""), vec![]);
    }

    #[test]
    fn kro_double_quoted_literals() {
        assert_eq!(
            ok(r#"${resource.field == "escaped\"quote"}"#),
            vec![m(r#"resource.field == "escaped\"quote""#, 0, 37)]
        );
        assert_eq!(
            ok(r#"${outer("${inner}")}"#),
            vec![m(r#"outer("${inner}")"#, 0, 20)]
        );
        assert_eq!(
            ok(r#"${"text with }} inside"}"#),
            vec![m(r#""text with }} inside""#, 0, 24)]
        );
        assert_eq!(
            ok(r#"${"text with { inside"}"#),
            vec![m(r#""text with { inside""#, 0, 23)]
        );
    }

    #[test]
    fn kro_map_literals_and_ternaries() {
        assert_eq!(
            ok("${true ? {'key': 'value'} : {'key': 'value2'}}"),
            vec![m("true ? {'key': 'value'} : {'key': 'value2'}", 0, 46)]
        );
        assert_eq!(
            ok("${true ? {'key': 'value'} : {'key': 'value2'}} somewhat ${resource.field} then ${false ? {'key': {'nestedKey':'value'}} : {'key': 'value2'}}"),
            vec![
                m("true ? {'key': 'value'} : {'key': 'value2'}", 0, 46),
                m("resource.field", 56, 73),
                m("false ? {'key': {'nestedKey':'value'}} : {'key': 'value2'}", 79, 140),
            ]
        );
        assert_eq!(
            ok("${condition ? value : {}}"),
            vec![m("condition ? value : {}", 0, 25)]
        );
        assert_eq!(
            ok("${condition ? {} : {}}"),
            vec![m("condition ? {} : {}", 0, 22)]
        );
        assert_eq!(
            ok("${schema.spec.deployment.includeAnnotations ? schema.spec.deployment.annotations : {}}"),
            vec![m(
                "schema.spec.deployment.includeAnnotations ? schema.spec.deployment.annotations : {}",
                0,
                86
            )]
        );
        assert_eq!(
            ok("${has(schema.annotations) && includeAnnotations ? schema.annotations : {}}"),
            vec![m(
                "has(schema.annotations) && includeAnnotations ? schema.annotations : {}",
                0,
                74
            )]
        );
    }

    #[test]
    fn kro_nested_errors() {
        assert_eq!(nested_at("${outer(${inner})} ${outer}"), 8);
        assert_eq!(nested_at("${outer(${inner})}"), 8);
        assert_eq!(nested_at("${incomplete1 ${incomplete2"), 14);
        assert_eq!(nested_at("${incomplete ${complete}"), 13);
        assert_eq!(nested_at("${${inner}outer}"), 2);
        // The error wins even after earlier good matches.
        assert_eq!(nested_at("${ok} ${a(${b})}"), 10);
    }

    #[test]
    fn unterminated_is_skipped_not_an_error() {
        // kro v0.9.x: skipped and left as literal text (later upstream turned these into errors).
        assert_eq!(ok("${incomplete"), vec![]);
        assert_eq!(
            ok("${complete} ${complete2} ${incomplete"),
            vec![m("complete", 0, 11), m("complete2", 12, 24)]
        );
        // An unclosed double-quoted literal swallows the rest, so the `${` never closes.
        assert_eq!(ok(r#"${"abc}"#), vec![]);
        assert_eq!(ok("${"), vec![]);
        assert_eq!(ok("$"), vec![]);
        assert_eq!(ok("${{}"), vec![]);
        // Scanning resumes one byte after the unterminated `${` and may find a later match that
        // sat inside the first candidate's string literal.
        assert_eq!(ok(r#"${a "${b}"#), vec![m("b", 5, 9)]);
        assert_eq!(classify("${incomplete").unwrap(), Template::Literal);
        assert_eq!(
            classify("${x} ${y").unwrap(),
            Template::Interpolated(vec![expr("x"), text(" ${y")])
        );
    }

    // ---- single quotes are not tracked (kro v0.9.x) ----

    #[test]
    fn single_quotes_are_not_tracked() {
        // `}` inside single quotes closes the expression.
        assert_eq!(ok("${'}'}"), vec![m("'", 0, 4)]);
        assert_eq!(
            classify("${'}'}").unwrap(),
            Template::Interpolated(vec![expr("'"), text("'}")])
        );
        assert_eq!(ok("${'text with } inside'}"), vec![m("'text with ", 0, 14)]);
        // `${` inside single quotes is a nested expression.
        assert_eq!(nested_at("${resource.field == '${literal}'}"), 21);
        assert_eq!(nested_at("${outer('${inner}')}"), 9);
        assert_eq!(nested_at(r#"${outer('${inner}")}"#), 9);
        // A backslash outside a double-quoted literal is an ordinary byte.
        assert_eq!(
            ok(r"${resource.field == 'escaped\'quote'}"),
            vec![m(r"resource.field == 'escaped\'quote'", 0, 37)]
        );
        // A `"` inside single quotes opens a double-quoted literal that never closes.
        assert_eq!(ok(r#"${'a " b'}"#), vec![]);
        assert_eq!(classify(r#"${'a " b'}"#).unwrap(), Template::Literal);
        // `"${inner}'` : the `${` is inside the double-quoted literal, which never closes.
        assert_eq!(ok(r#"${outer("${inner}')}"#), vec![m("inner", 9, 17)]);
    }

    // ---- further cases (re-derived for v0.9.x from later upstream test tables) ----

    #[test]
    fn literal_edge_cases() {
        assert_eq!(
            ok(r#"${outer("test\"${inner}")}"#),
            vec![m(r#"outer("test\"${inner}")"#, 0, 26)]
        );
        assert_eq!(exprs("${a}${b}"), vec!["a", "b"]);
        assert_eq!(ok("x${a}y${b}z"), vec![m("a", 1, 5), m("b", 6, 10)]);
        assert_eq!(
            exprs("${   resource.field   }"),
            vec!["   resource.field   "]
        );
        assert_eq!(
            exprs(r#"${"not a { real brace } here"}"#),
            vec![r#""not a { real brace } here""#]
        );
        assert_eq!(
            exprs(r#"${"path\\\\to\\\\file"}"#),
            vec![r#""path\\\\to\\\\file""#]
        );
        assert_eq!(
            exprs(r#"${outer("x\"${inner}")}"#),
            vec![r#"outer("x\"${inner}")"#]
        );
        assert_eq!(
            exprs(r#"${outer("text ${ inner}")}"#),
            vec![r#"outer("text ${ inner}")"#]
        );
        assert_eq!(
            exprs(r#"${outer("text \\${ inner}")}"#),
            vec![r#"outer("text \\${ inner}")"#]
        );
        assert_eq!(exprs("${a}${b}${c}${d}"), vec!["a", "b", "c", "d"]);
        assert_eq!(ok(r#"${"a}b"} more text"#), vec![m(r#""a}b""#, 0, 8)]);
        assert_eq!(ok(r#"${"a{b"} more text"#), vec![m(r#""a{b""#, 0, 8)]);
        assert_eq!(exprs(r#"${"a{b" + "c}d"}"#), vec![r#""a{b" + "c}d""#]);
        assert_eq!(exprs(r#"${"abc\\\\\"def"}"#), vec![r#""abc\\\\\"def""#]);
        assert_eq!(
            exprs(r#"${[1, 2, 3, {"a":1}]}"#),
            vec![r#"[1, 2, 3, {"a":1}]"#]
        );
        assert_eq!(
            exprs(r#"${{"a": {"b": "{\"c\": \"d\"}"}}}"#),
            vec![r#"{"a": {"b": "{\"c\": \"d\"}"}}"#]
        );
        assert_eq!(ok("${}"), vec![m("", 0, 3)]);
        assert_eq!(exprs("$${x}"), vec!["x"]);
        assert_eq!(ok("$ ${x}"), vec![m("x", 2, 6)]);
    }

    #[test]
    fn nested_directly_after_a_quote_is_let_through() {
        // kro v0.9.x checks the byte before `${`, not whether a literal is open; CEL rejects the
        // result later. Kept so kiln fails where kro fails, with kro's message.
        assert_eq!(ok(r#"${"a"${b}}"#), vec![m(r#""a"${b}"#, 0, 10)]);
        assert_eq!(ok(r#"${""${inner}}"#), vec![m(r#"""${inner}"#, 0, 13)]);
        assert_eq!(
            ok(r#"${outer("x"${inner})}"#),
            vec![m(r#"outer("x"${inner})"#, 0, 21)]
        );
    }

    #[test]
    fn brief_cases() {
        assert_eq!(nested_at(r#""${a ${b}""#), 5);
        assert_eq!(
            classify(r#"${"${X}"}"#).unwrap(),
            Template::Standalone(r#""${X}""#.to_string())
        );
        assert_eq!(
            classify(r#"${outer("${inner}")}"#).unwrap(),
            Template::Standalone(r#"outer("${inner}")"#.to_string())
        );
        let refused = classify("${outer(${inner})}").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("nested expressions are not allowed unless inside string literals"),
            "{refused}"
        );
    }

    // ---- kro cel_test.go TestIsOneShotExpression ----

    fn standalone(s: &str) -> Result<bool, ScanError> {
        classify(s).map(|t| matches!(t, Template::Standalone(_)))
    }

    #[test]
    fn kro_standalone_table() {
        let cases: &[(&str, Option<bool>)] = &[
            ("${resource.field}", Some(true)),
            ("${length(resource.list)}", Some(true)),
            ("prefix-${resource.field}", Some(false)),
            ("${resource.field}-suffix", Some(false)),
            ("${resource1.field}${resource2.field}", Some(false)),
            ("plain string", Some(false)),
            ("", Some(false)),
            ("${incomplete", Some(false)),
            ("${resource.map['key']}", Some(true)),
            ("${resource.list[0]}", Some(true)),
            (r#"${resource.field == "escaped\"quote"}"#, Some(true)),
            ("${resource.list.map(\n  x,\n  x * 2\n)}", Some(true)),
            (
                "${resource.list.map(x, x.field).filter(y, y > 5)}",
                Some(true),
            ),
            ("${outer(${inner})}", None),
            (r#"${outer("${inner}")}"#, Some(true)),
            (r#"${"text with }} inside"}"#, Some(true)),
            (r#"${"text with { inside"}"#, Some(true)),
            // Surrounding whitespace (e.g. a YAML `|` block's trailing newline) breaks it.
            (" ${a}", Some(false)),
            ("${a}\n", Some(false)),
            ("${a} ", Some(false)),
        ];
        for (input, want) in cases {
            match (standalone(input), want) {
                (Ok(got), Some(want)) => assert_eq!(got, *want, "{input:?}"),
                (Err(_), None) => {}
                (got, want) => panic!("{input:?}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn classify_shapes() {
        assert_eq!(classify("").unwrap(), Template::Literal);
        assert_eq!(classify("plain").unwrap(), Template::Literal);
        assert_eq!(
            classify("${a.b}").unwrap(),
            Template::Standalone("a.b".to_string())
        );
        assert_eq!(
            classify("${a}${b}").unwrap(),
            Template::Interpolated(vec![expr("a"), expr("b")])
        );
        assert_eq!(
            classify("pre-${a}-mid-${b}-post").unwrap(),
            Template::Interpolated(vec![
                text("pre-"),
                expr("a"),
                text("-mid-"),
                expr("b"),
                text("-post"),
            ])
        );
        // Text parts are verbatim: whitespace, newlines, stray `$`/`}` are kept.
        assert_eq!(
            classify("  $x} ${a}\n").unwrap(),
            Template::Interpolated(vec![text("  $x} "), expr("a"), text("\n")])
        );
        assert_eq!(
            classify("${a}\n").unwrap(),
            Template::Interpolated(vec![expr("a"), text("\n")])
        );
    }

    #[test]
    fn utf8_offsets_are_bytes_and_boundaries() {
        let s = "héllo ${wörld} ✓ ${\"🦀}\"} fin";
        let got = ok(s);
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].expr, "wörld");
        assert_eq!(got[0].start, "héllo ".len());
        assert_eq!(&s[got[0].start..got[0].end], "${wörld}");
        assert_eq!(got[1].expr, "\"🦀}\"");
        assert_eq!(&s[got[1].start..got[1].end], "${\"🦀}\"}");
        // A backslash escaping the first byte of a multi-byte char must not break slicing.
        assert_eq!(exprs("${\"\\é\"}"), vec!["\"\\é\""]);
        assert_eq!(exprs("${\"\\🦀}\"}"), vec!["\"\\🦀}\""]);
        assert_eq!(
            classify("ä${x}ö").unwrap(),
            Template::Interpolated(vec![text("ä"), expr("x"), text("ö")])
        );
        assert_eq!(ok("€${"), vec![]);
        assert_eq!(nested_at("é${é${x}}"), "é${é".len());
    }

    #[test]
    fn error_display_is_kros_message() {
        let e = scan("${a(${b})}").unwrap_err();
        assert_eq!(e.to_string(), NESTED_EXPRESSION);
        assert_eq!(e.offset, 4);
    }

    /// Checks every invariant that must hold for any input, whatever the outcome.
    fn check_invariants(s: &str) {
        let scanned = scan(s);
        let classified = classify(s);
        match (&scanned, &classified) {
            (Err(a), Err(b)) => {
                assert_eq!(a, b, "{s:?}");
                assert_eq!(a.message, NESTED_EXPRESSION);
                assert!(s.is_char_boundary(a.offset), "{s:?}");
                assert!(s[a.offset..].starts_with("${"), "{s:?}");
            }
            (Ok(matches), Ok(template)) => {
                let mut prev_end = 0;
                for mt in matches {
                    assert!(mt.start >= prev_end && mt.start < mt.end, "{s:?}");
                    assert_eq!(s[mt.start..mt.end], format!("${{{}}}", mt.expr), "{s:?}");
                    prev_end = mt.end;
                }
                let rebuilt = match template {
                    Template::Literal => {
                        assert!(matches.is_empty(), "{s:?}");
                        s.to_string()
                    }
                    Template::Standalone(e) => {
                        assert_eq!(matches.len(), 1, "{s:?}");
                        format!("${{{e}}}")
                    }
                    Template::Interpolated(parts) => {
                        let mut out = String::new();
                        let mut n_expr = 0;
                        for p in parts {
                            match p {
                                Part::Text(t) => {
                                    assert!(!t.is_empty(), "{s:?}");
                                    out.push_str(t);
                                }
                                Part::Expr(e) => {
                                    n_expr += 1;
                                    out.push_str(&format!("${{{e}}}"));
                                }
                            }
                        }
                        assert_eq!(n_expr, matches.len(), "{s:?}");
                        out
                    }
                };
                assert_eq!(rebuilt, s, "{s:?}");
            }
            _ => panic!("scan and classify disagree on {s:?}"),
        }
    }

    #[test]
    fn exhaustive_short_strings_never_panic() {
        // Every string of up to 6 symbols over the characters that matter to the scanner.
        const ALPHABET: [&str; 8] = ["$", "{", "}", "\"", "\\", "'", "a", "é"];
        let mut current = vec![String::new()];
        for _ in 0..6 {
            let mut next = Vec::with_capacity(current.len() * ALPHABET.len());
            for prefix in &current {
                for sym in ALPHABET {
                    let s = format!("{prefix}{sym}");
                    check_invariants(&s);
                    next.push(s);
                }
            }
            current = next;
        }
    }

    #[test]
    fn pseudo_random_strings_never_panic() {
        const TOKENS: [&str; 16] = [
            "${", "}", "{", "$", "\"", "\\", "'", "\\\"", "x", " ", "\n", "é", "🦀", "✓", "${\"",
            "\"}",
        ];
        // xorshift64*: deterministic, dependency-free.
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            state.wrapping_mul(0x2545_F491_4F6C_DD1D)
        };
        for _ in 0..20_000 {
            let len = (next() % 24) as usize;
            let s: String = (0..len)
                .map(|_| TOKENS[(next() % TOKENS.len() as u64) as usize])
                .collect();
            check_invariants(&s);
        }
    }
}
