//! An object as the text Flux substitutes: the YAML that go-yaml v2 writes for it.
//!
//! kustomize-controller substitutes each resource of the build as text (fluxcd/pkg
//! `kustomize/kustomize_varsub.go`, `SubstituteVariables`): `res.AsYAML()` — which is kustomize's
//! `MarshalJSON` followed by `sigs.k8s.io/yaml.JSONToYAML`, that is go-yaml v2's `Marshal` of the
//! JSON-decoded object — then `envsubst`, then `YAMLToJSON`. So the quotes a source file wrote
//! are gone before substitution (a quoted `"${PORT}"` is written bare and comes back a number:
//! fluxcd/flux2#1839), and what a substituted value becomes depends on how go-yaml v2 writes the
//! string around the `${…}`: plain, single-quoted, double-quoted or a literal block. This module
//! writes an object that way:
//!
//! - mappings in block style, keys in go-yaml v2's order (its natural sort: runs of digits
//!   compare as numbers), a sequence inside a mapping not indented (`- ` under the key), empty
//!   collections `{}` and `[]`;
//! - a string with a newline as a literal block (`|`, `|-`, `|+`, with an indentation indicator
//!   when it starts with a space), or double-quoted when a block cannot hold it;
//! - other strings plain when YAML 1.1 would read the plain text back as the same string and
//!   go-yaml's emitter allows it (no leading or trailing space, no `: `, ` #`, no leading
//!   indicator, only printable characters), else single-quoted, else double-quoted with go-yaml's
//!   escapes; plain and quoted scalars longer than 80 columns are folded at spaces, as go-yaml's
//!   emitter folds them;
//! - integers in decimal, floats as Go's `strconv.FormatFloat(f, 'g', -1, 64)`, `true`, `false`,
//!   `null`.
//!
//! Not reproduced: a string without `$` that go-yaml writes plain but kiln's own writer would
//! quote (`<<`) is double-quoted, so that kiln's reader reads it back as the same string
//! (substitution does not touch it, so the result is Flux's); a multi-line string holding U+2028
//! or U+2029 is double-quoted (go-yaml writes them raw in a literal block); mapping keys longer than 128 characters or holding a line break (go-yaml
//! writes them as complex keys `? …`); a string ending in two or more line breaks at the very end
//! of the object (go-yaml adds a document end marker).

use serde_json::{Map, Value};

/// go-yaml's preferred line width.
const WIDTH: usize = 80;
/// go-yaml's indentation step.
const STEP: usize = 2;

/// The object as go-yaml v2 writes it (what Flux substitutes).
pub fn marshal(v: &Value) -> String {
    let mut w = Writer {
        out: String::new(),
        column: 0,
    };
    match v {
        Value::Object(m) if !m.is_empty() => w.map(m, 0),
        Value::Array(a) if !a.is_empty() => w.seq(a, 0),
        other => w.scalar(other, 0, false),
    }
    if w.column != 0 {
        w.newline();
    }
    w.out
}

struct Writer {
    out: String,
    column: usize,
}

/// How go-yaml writes a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

impl Writer {
    fn push(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn push_char(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn newline(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// Start a line at `n` (ending the current one, if any).
    fn indent(&mut self, n: usize) {
        if self.column != 0 {
            self.newline();
        }
        while self.column < n {
            self.push_char(' ');
        }
    }

    fn map(&mut self, m: &Map<String, Value>, ind: usize) {
        let mut keys: Vec<&String> = m.keys().collect();
        keys.sort_by(|a, b| {
            if key_less(a, b) {
                std::cmp::Ordering::Less
            } else if key_less(b, a) {
                std::cmp::Ordering::Greater
            } else {
                std::cmp::Ordering::Equal
            }
        });
        for (i, k) in keys.into_iter().enumerate() {
            if i > 0 {
                self.indent(ind);
            }
            self.string(k, ind, true);
            self.push_char(':');
            self.value(&m[k.as_str()], ind, true);
        }
    }

    fn seq(&mut self, a: &[Value], ind: usize) {
        for (i, v) in a.iter().enumerate() {
            if i > 0 {
                self.indent(ind);
            }
            self.push_char('-');
            self.value(v, ind, false);
        }
    }

    /// A value after `key:` (`in_map`) or `-`, whose parent is at `ind`.
    fn value(&mut self, v: &Value, ind: usize, in_map: bool) {
        match v {
            Value::Object(c) if !c.is_empty() => {
                if in_map {
                    self.indent(ind + STEP);
                } else {
                    self.push_char(' ');
                }
                self.map(c, ind + STEP);
            }
            Value::Array(a) if !a.is_empty() => {
                if in_map {
                    // A sequence in a mapping is not indented.
                    self.indent(ind);
                    self.seq(a, ind);
                } else {
                    self.push_char(' ');
                    self.seq(a, ind + STEP);
                }
            }
            other => {
                self.push_char(' ');
                self.scalar(other, ind + STEP, false);
            }
        }
        if self.column != 0 {
            self.newline();
        }
    }

    /// A scalar whose continuation lines are indented by `ind`.
    fn scalar(&mut self, v: &Value, ind: usize, key: bool) {
        match v {
            Value::Null => self.push("null"),
            Value::Bool(b) => self.push(if *b { "true" } else { "false" }),
            Value::Number(n) => match n.as_f64() {
                Some(f) if !n.is_i64() && !n.is_u64() => self.push(&go_float(f)),
                _ => self.push(&n.to_string()),
            },
            Value::String(s) => self.string(s, ind, key),
            Value::Object(_) => self.push("{}"),
            Value::Array(_) => self.push("[]"),
        }
    }

    fn string(&mut self, s: &str, ind: usize, key: bool) {
        let ind = if key { ind + STEP } else { ind };
        let breaks = !key;
        match style(s, key) {
            Style::Plain => self.plain(s, ind, breaks),
            Style::Single => self.single(s, ind, breaks),
            Style::Double => self.double(s, ind, breaks),
            Style::Literal => self.literal(s, ind),
        }
    }

    fn fold(&mut self, ind: usize) {
        self.newline();
        while self.column < ind {
            self.push_char(' ');
        }
    }

    fn plain(&mut self, s: &str, ind: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if breaks && !spaces && self.column > WIDTH && chars.get(i + 1) != Some(&' ') {
                    self.fold(ind);
                } else {
                    self.push_char(' ');
                }
                spaces = true;
            } else {
                self.push_char(c);
                spaces = false;
            }
        }
    }

    fn single(&mut self, s: &str, ind: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push_char('\'');
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                if breaks
                    && !spaces
                    && self.column > WIDTH
                    && i > 0
                    && i + 1 < chars.len()
                    && chars.get(i + 1) != Some(&' ')
                {
                    self.fold(ind);
                } else {
                    self.push_char(' ');
                }
                spaces = true;
            } else {
                if c == '\'' {
                    self.push_char('\'');
                }
                self.push_char(c);
                spaces = false;
            }
        }
        self.push_char('\'');
    }

    fn double(&mut self, s: &str, ind: usize, breaks: bool) {
        let chars: Vec<char> = s.chars().collect();
        self.push_char('"');
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.push(&escape(c));
                spaces = false;
            } else if c == ' ' {
                if breaks && !spaces && self.column > WIDTH && i > 0 && i + 1 < chars.len() {
                    self.fold(ind);
                    if chars.get(i + 1) == Some(&' ') {
                        self.push_char('\\');
                    }
                } else {
                    self.push_char(' ');
                }
                spaces = true;
            } else {
                self.push_char(c);
                spaces = false;
            }
        }
        self.push_char('"');
    }

    fn literal(&mut self, s: &str, ind: usize) {
        self.push_char('|');
        if s.starts_with(' ') || s.starts_with(is_break) {
            self.push(&STEP.to_string());
        }
        let chars: Vec<char> = s.chars().collect();
        let n = chars.len();
        if !chars.last().copied().is_some_and(is_break) {
            self.push_char('-');
        } else if n == 1 || chars.get(n.wrapping_sub(2)).copied().is_some_and(is_break) {
            self.push_char('+');
        }
        self.newline();
        let mut at_line_start = true;
        for &c in &chars {
            if is_break(c) {
                self.newline();
                at_line_start = true;
            } else {
                if at_line_start {
                    while self.column < ind {
                        self.push_char(' ');
                    }
                    at_line_start = false;
                }
                self.push_char(c);
            }
        }
    }
}

/// go-yaml v2's `is_printable` (with its emitter's `unicode` on): tab, CR and characters beyond
/// the Basic Multilingual Plane are not.
fn printable(c: char) -> bool {
    let u = c as u32;
    u == 0x0A
        || (0x20..=0x7E).contains(&u)
        || (0xA0..=0xD7FF).contains(&u)
        || (0xE000..=0xFFFD).contains(&u) && u != 0xFEFF
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn escape(c: char) -> String {
    match c {
        '\0' => "\\0".into(),
        '\u{7}' => "\\a".into(),
        '\u{8}' => "\\b".into(),
        '\t' => "\\t".into(),
        '\n' => "\\n".into(),
        '\u{B}' => "\\v".into(),
        '\u{C}' => "\\f".into(),
        '\r' => "\\r".into(),
        '\u{1B}' => "\\e".into(),
        '"' => "\\\"".into(),
        '\\' => "\\\\".into(),
        '\u{85}' => "\\N".into(),
        '\u{A0}' => "\\_".into(),
        '\u{2028}' => "\\L".into(),
        '\u{2029}' => "\\P".into(),
        c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
        c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
        c => format!("\\U{:08X}", c as u32),
    }
}

/// What go-yaml's emitter's analysis of a scalar allows.
struct Analysis {
    block_plain: bool,
    single: bool,
    block: bool,
}

/// go-yaml v2's `yaml_emitter_analyze_scalar`, for block context.
fn analyze(s: &str) -> Analysis {
    let chars: Vec<char> = s.chars().collect();
    if chars.is_empty() {
        return Analysis {
            block_plain: true,
            single: true,
            block: false,
        };
    }
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break, mut previous_space, mut previous_break) =
        (false, false, false, false);
    let (mut line_breaks, mut special) = (false, false);
    let mut preceded_by_whitespace = true;
    let blankz = |c: Option<&char>| match c {
        None => true,
        Some(&c) => c == ' ' || c == '\t' || c == '\0' || is_break(c),
    };
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = blankz(chars.get(i + 1));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !printable(c) {
            special = true;
        }
        if c == ' ' {
            if i == 0 {
                leading_space = true;
            }
            if i + 1 == chars.len() {
                trailing_space = true;
            }
            if previous_break {
                break_space = true;
            }
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            if i == 0 {
                leading_break = true;
            }
            if i + 1 == chars.len() {
                trailing_break = true;
            }
            if previous_space {
                space_break = true;
            }
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = blankz(Some(&c));
    }
    let mut a = Analysis {
        block_plain: true,
        single: true,
        block: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        a.block_plain = false;
    }
    if trailing_space {
        a.block = false;
    }
    if break_space {
        a.block_plain = false;
        a.single = false;
    }
    if space_break || special {
        a.block_plain = false;
        a.single = false;
        a.block = false;
    }
    if line_breaks {
        a.block_plain = false;
    }
    if block_indicators {
        a.block_plain = false;
    }
    a
}

/// The style go-yaml v2 writes a string in: its encoder's choice (`stringv`), then its
/// emitter's (`yaml_emitter_select_scalar_style`).
fn style(s: &str, key: bool) -> Style {
    let a = analyze(s);
    let mut st = if s.contains('\n') {
        Style::Literal
    } else if plain_is_string(s) {
        Style::Plain
    } else {
        Style::Double
    };
    if st == Style::Plain && (!a.block_plain || (s.is_empty() && key)) {
        st = Style::Single;
    }
    if st == Style::Single && !a.single {
        st = Style::Double;
    }
    // (go-yaml writes U+2028 and U+2029 raw in a literal block; kiln double-quotes them, so
    // that they read back as written.)
    if st == Style::Literal && (!a.block || key || s.contains(['\u{2028}', '\u{2029}'])) {
        st = Style::Double;
    }
    // A plain text without `$` is not changed by substitution, so it must read back as the
    // same string: when kiln's reader might not agree that it is one (`<<`), it is quoted. Its
    // quoting cannot change what substitution gives.
    if st == Style::Plain && !s.contains('$') && !crate::output::writes_plain(s, key) {
        st = Style::Double;
    }
    st
}

/// Whether go-yaml v2's encoder writes `s` plain (its resolver reads it back as that string):
/// not a null, boolean, number or timestamp, and not a base-60 float. (`<<` is written plain.)
fn plain_is_string(s: &str) -> bool {
    if s.is_empty() {
        return false;
    }
    const SPECIAL: &[&str] = &[
        "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO",
        "true", "True", "TRUE", "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    let first = s.as_bytes()[0];
    if !(first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.')) {
        return true;
    }
    !(is_int(s) || is_float(s) || is_base60(s) || is_timestamp(s))
}

/// Go's `strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 0, 64)` (or ParseUint), and v2's
/// binary forms.
fn is_int(s: &str) -> bool {
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    let body = plain
        .strip_prefix('-')
        .or_else(|| plain.strip_prefix('+'))
        .unwrap_or(&plain);
    let lower = body.to_ascii_lowercase();
    let (digits, radix) = if let Some(r) = lower.strip_prefix("0x") {
        (r.to_string(), 16)
    } else if let Some(r) = lower.strip_prefix("0b") {
        (r.to_string(), 2)
    } else if let Some(r) = lower.strip_prefix("0o") {
        (r.to_string(), 8)
    } else if lower.len() > 1 && lower.starts_with('0') {
        (lower[1..].to_string(), 8)
    } else {
        (lower.clone(), 10)
    };
    !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix))
}

/// v2's float pattern `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`, matched
/// (as v2 matches it) with the underscores removed.
fn is_float(s: &str) -> bool {
    let plain: String = s.chars().filter(|&c| c != '_').collect();
    let b = plain.as_bytes();
    let mut i = usize::from(matches!(b.first(), Some(b'-' | b'+')));
    let digits = |i: &mut usize| {
        let start = *i;
        while b.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        *i - start
    };
    if b.get(i) == Some(&b'.') {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    } else {
        if digits(&mut i) == 0 {
            return false;
        }
        if b.get(i) == Some(&b'.') {
            i += 1;
            digits(&mut i);
        }
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'-' | b'+')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// v2's `^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$`.
fn is_base60(s: &str) -> bool {
    let body = s.strip_prefix(['-', '+']).unwrap_or(s);
    let (main, frac) = match body.split_once('.') {
        Some((m, f)) => (m, Some(f)),
        None => (body, None),
    };
    if frac.is_some_and(|f| !f.chars().all(|c| c.is_ascii_digit() || c == '_')) {
        return false;
    }
    let mut parts = main.split(':');
    let head = parts.next().unwrap_or("");
    if !head.starts_with(|c: char| c.is_ascii_digit())
        || !head.chars().all(|c| c.is_ascii_digit() || c == '_')
    {
        return false;
    }
    let rest: Vec<&str> = parts.collect();
    !rest.is_empty()
        && rest.iter().all(|p| {
            let b = p.as_bytes();
            match b.len() {
                1 => b[0].is_ascii_digit(),
                2 => (b'0'..=b'5').contains(&b[0]) && b[1].is_ascii_digit(),
                _ => false,
            }
        })
}

/// v2's timestamps: `2006-1-2`, optionally followed by `T`/`t`/space and a time.
fn is_timestamp(s: &str) -> bool {
    let date_len = {
        let mut parts = 0;
        let mut len = 0;
        for (i, seg) in s
            .split(['T', 't', ' '])
            .next()
            .unwrap_or("")
            .split('-')
            .enumerate()
        {
            let ok = match i {
                0 => seg.len() == 4,
                1 | 2 => (1..=2).contains(&seg.len()),
                _ => false,
            } && seg.chars().all(|c| c.is_ascii_digit());
            if !ok {
                return false;
            }
            parts += 1;
            len += seg.len() + usize::from(i > 0);
        }
        if parts != 3 {
            return false;
        }
        len
    };
    if date_len == s.len() {
        return true;
    }
    // A date and a time: hour:minute:second, fraction, zone (parsed by Go's time layouts).
    let time = &s[date_len + 1..];
    let mut hms = time.splitn(3, ':');
    let (Some(h), Some(m), Some(rest)) = (hms.next(), hms.next(), hms.next()) else {
        return false;
    };
    let num = |x: &str| (1..=2).contains(&x.len()) && x.chars().all(|c| c.is_ascii_digit());
    if !num(h) || !num(m) {
        return false;
    }
    let sec_len = rest.chars().take_while(|c| c.is_ascii_digit()).count();
    (1..=2).contains(&sec_len)
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 64)`, with go-yaml's `.inf`, `-.inf`, `.nan`.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.into();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // Shortest digits and exponent, from Rust's shortest round-trip formatting.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    // Go: %e when the exponent is below -4 or at least the precision, 6 for the shortest form.
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{frac}e{es}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let point = exp as usize + 1;
    if digits.len() <= point {
        format!("{sign}{digits}{}", "0".repeat(point - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..point], &digits[point..])
    }
}

/// go-yaml v2's order of mapping keys (`keyList.Less` for strings): letters by code point,
/// runs of digits by their numeric value, and a letter after a digit run after a digit.
fn key_less(a: &str, b: &str) -> bool {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let mut digits = false;
    let mut i = 0;
    while i < ar.len() && i < br.len() {
        if ar[i] == br[i] {
            digits = ar[i].is_ascii_digit();
            i += 1;
            continue;
        }
        let al = ar[i].is_alphabetic();
        let bl = br[i].is_alphabetic();
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return if digits { al } else { bl };
        }
        let (mut an, mut bn): (i64, i64) = (0, 0);
        if ar[i] == '0' || br[i] == '0' {
            let mut j = i;
            while j > 0 && ar[j - 1].is_ascii_digit() {
                j -= 1;
                if ar[j] != '0' {
                    an = 1;
                    bn = 1;
                    break;
                }
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn layout_is_go_yamls() {
        let v = json!({"b": [1, {"x": "y", "a": []}], "a": {}, "c": {"d": null, "e": 1.5}});
        assert_eq!(
            marshal(&v),
            "a: {}\nb:\n- 1\n- a: []\n  x: \"y\"\nc:\n  d: null\n  e: 1.5\n"
        );
    }

    #[test]
    fn floats_as_go_formats_them() {
        for (f, s) in [
            (1.0, "1"),
            (1.5, "1.5"),
            (1e6, "1e+06"),
            (123456.0, "123456"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1e21, "1e+21"),
        ] {
            assert_eq!(go_float(f), s, "{f}");
        }
    }

    #[test]
    fn string_styles() {
        let cases = [
            ("${db_password}", "${db_password}"),
            ("${a}:${b}", "${a}:${b}"),
            ("${a}: x", "'${a}: x'"),
            ("it's ${a}", "it's ${a}"),
            ("a #b", "'a #b'"),
            ("- x", "'- x'"),
            ("", "\"\""),
            ("8080", "\"8080\""),
            ("yes", "\"yes\""),
            ("1:30", "\"1:30\""),
            ("2001-12-14", "\"2001-12-14\""),
            ("1_000.5", "\"1_000.5\""),
            ("a\tb", "\"a\\tb\""),
            ("😀", "\"\\U0001F600\""),
            (" lead", "' lead'"),
            ("l1\nl2", "|-\n  l1\n  l2"),
            ("l1\n", "|\n  l1"),
            (" x\ny", "|2-\n   x\n  y"),
        ];
        for (s, want) in cases {
            let got = marshal(&json!({ "k": s }));
            assert_eq!(got, format!("k: {want}\n"), "{s:?}");
        }
        assert_eq!(marshal(&json!({"n": 1})), "\"n\": 1\n");
    }

    proptest::proptest! {
        /// What substitution does not touch reads back as it was: strings of any characters
        /// (but `$`), as keys and values, at any depth.
        #[test]
        fn untouched_objects_read_back(
            a in "[ -#%-~\t\n\u{85}\u{a0}\u{2028}é😀]{0,40}",
            b in "[ -#%-~]{0,120}",
            n in proptest::num::i64::ANY,
        ) {
            let v = json!({"k": a.clone(), "list": [a.clone(), b.clone(), n, null, true], "m": {b.clone(): {"x": a.clone()}}, "e": {}, "s": []});
            let text = marshal(&v);
            let back = crate::document::parse_file("t", text.clone(), &crate::document::YamlLimits::default())
                .map_err(|d| d.to_string());
            proptest::prop_assert!(back.is_ok(), "{:?}: {}", back, text);
            let back = back.unwrap();
            proptest::prop_assert_eq!(&back[0].value, &v, "{}", text);
        }
    }

    #[test]
    fn key_order_is_natural() {
        let v = json!({"a10": 1, "a9": 1, "B": 1, "a": 1, "_x": 1, "1": 1});
        let text = marshal(&v);
        let keys: Vec<&str> = text.lines().map(|l| l.split(':').next().unwrap()).collect();
        // As kubectl's `-o yaml` (sigs.k8s.io/yaml, go-yaml v2) orders them.
        assert_eq!(keys, ["_x", "\"1\"", "B", "a", "a9", "a10"]);
    }
}
