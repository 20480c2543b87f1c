//! String functions of the CEL standard library and cel-go's strings extension
//! (`github.com/google/cel-go/ext/strings.go`), declared ahead of the `cel` crate's own so that
//! each one charges the evaluation budget for the string it reads before reading it, and checks
//! the size of what it builds before building it (`crate::expr::budget`). They answer exactly as
//! the crate's do, with two exceptions:
//!
//! - `indexOf` and `lastIndexOf` search in linear time (the crate compares every window of the
//!   string with the substring, which is quadratic);
//! - with an offset at or past the end they find nothing (-1) instead of failing, and the empty
//!   string is found at the offset, clamped to the end, as in cel-go. A negative offset is an
//!   error, as there.
//!
//! Offsets, indices and sizes count code points.

use cel::common::types::{CelInt, CelString, Kind, Type, DYN_TYPE, STRING_TYPE};
use cel::common::value::CowVal;
use cel::{Env, ExecutionError, Value};

use super::to_cow;
use crate::expr::budget::{admit, charge};
use crate::expr::weight::Weight;

/// The overloads, in the order they are declared: `(name, id, receiver, arguments, function)`.
/// The receiver or an argument is `dyn` where the crate declares the same signature with
/// concrete types (a signature may be declared once); the function checks the types itself and
/// fails as the crate would.
pub(super) fn declare(env: &mut Env) {
    type F = cel::common::functions::Function;
    let members: [(&str, &str, Type, Vec<Type>, F); 15] = [
        (
            "indexOf",
            "kiln.string_index_of",
            STRING_TYPE,
            vec![DYN_TYPE],
            index_of,
        ),
        (
            "indexOf",
            "kiln.string_index_of_offset",
            STRING_TYPE,
            vec![STRING_TYPE, DYN_TYPE],
            index_of,
        ),
        (
            "lastIndexOf",
            "kiln.string_last_index_of",
            STRING_TYPE,
            vec![DYN_TYPE],
            last_index_of,
        ),
        (
            "lastIndexOf",
            "kiln.string_last_index_of_offset",
            STRING_TYPE,
            vec![STRING_TYPE, DYN_TYPE],
            last_index_of,
        ),
        (
            "charAt",
            "kiln.string_char_at",
            STRING_TYPE,
            vec![DYN_TYPE],
            char_at,
        ),
        (
            "contains",
            "kiln.string_contains",
            STRING_TYPE,
            vec![DYN_TYPE],
            contains,
        ),
        (
            "startsWith",
            "kiln.string_starts_with",
            STRING_TYPE,
            vec![DYN_TYPE],
            starts_with,
        ),
        (
            "endsWith",
            "kiln.string_ends_with",
            STRING_TYPE,
            vec![DYN_TYPE],
            ends_with,
        ),
        (
            "lowerAscii",
            "kiln.string_lower_ascii",
            DYN_TYPE,
            vec![],
            lower_ascii,
        ),
        (
            "upperAscii",
            "kiln.string_upper_ascii",
            DYN_TYPE,
            vec![],
            upper_ascii,
        ),
        ("trim", "kiln.string_trim", DYN_TYPE, vec![], trim),
        (
            "substring",
            "kiln.string_substring",
            STRING_TYPE,
            vec![DYN_TYPE],
            substring,
        ),
        (
            "substring",
            "kiln.string_substring_range",
            STRING_TYPE,
            vec![DYN_TYPE, DYN_TYPE],
            substring,
        ),
        ("reverse", "kiln.reverse", DYN_TYPE, vec![], reverse),
        ("size", "kiln.size_member", DYN_TYPE, vec![], size_member),
    ];
    for (name, id, receiver, args, f) in members {
        let res = env.add_member_overload(name, id, receiver, args, f);
        debug_assert!(res.is_ok(), "{id}: {res:?}");
    }
    let globals: [(&str, &str, Vec<Type>, F); 2] = [
        ("size", "kiln.size", vec![DYN_TYPE], size),
        ("strings.quote", "kiln.strings_quote", vec![DYN_TYPE], quote),
    ];
    for (name, id, args, f) in globals {
        let res = env.add_overload(name, id, args, f);
        debug_assert!(res.is_ok(), "{id}: {res:?}");
    }
}

/// The error the crate reports when no overload of `name` accepts `args`.
fn no_overload(name: &str, args: &[CowVal<'_, '_>], member: bool) -> ExecutionError {
    let types = args
        .iter()
        .map(|a| a.get_type().name().to_string())
        .collect();
    if member {
        ExecutionError::no_such_member_overload(name, types)
    } else {
        ExecutionError::no_such_overload(name, types)
    }
}

fn string<'a>(v: &'a CowVal<'_, '_>) -> Option<&'a str> {
    v.downcast_ref::<CelString>().map(|s| s.inner())
}

fn int(v: &CowVal<'_, '_>) -> Option<i64> {
    v.downcast_ref::<CelInt>().map(|i| *i.inner())
}

fn string_result<'b, 'v>(s: String) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(CowVal::owned(CelString::from(s)))
}

/// Charge reading `bytes` bytes of strings.
fn read(what: &str, bytes: usize) -> Result<(), ExecutionError> {
    charge(what, Weight::bytes(bytes).work())
}

/// The code-point index of byte offset `b` of `s`.
fn char_index(s: &str, b: usize) -> usize {
    s[..b].chars().count()
}

/// The byte offset of code point `c` of `s` (its length when `c` is the number of code points).
fn byte_offset(s: &str, c: usize) -> usize {
    s.char_indices().nth(c).map_or(s.len(), |(i, _)| i)
}

/// `<string>.indexOf(string[, int]) -> int`.
fn index_of<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    search("indexOf", &a, false)
}

/// `<string>.lastIndexOf(string[, int]) -> int`.
fn last_index_of<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    search("lastIndexOf", &a, true)
}

fn search<'b, 'v>(
    name: &str,
    a: &[CowVal<'b, 'v>],
    last: bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(sub)) = (a.first().and_then(string), a.get(1).and_then(string)) else {
        return Err(no_overload(name, a, true));
    };
    let offset = match a.get(2) {
        None => None,
        Some(off) => Some(int(off).ok_or_else(|| no_overload(name, a, true))?),
    };
    // Counting code points and searching each read the string once.
    read(name, 2 * this.len() + sub.len())?;
    let found = match offset {
        None if last => this.rfind(sub).map(|b| char_index(this, b)),
        None => this.find(sub).map(|b| char_index(this, b)),
        Some(off) => {
            let Ok(off) = usize::try_from(off) else {
                return Err(ExecutionError::function_error(
                    name,
                    format!("index out of range: {off}"),
                ));
            };
            let len = this.chars().count();
            let sub_len = sub.chars().count();
            if sub.is_empty() {
                Some(off.min(len))
            } else if off >= len || sub_len > len {
                None
            } else if last {
                // A match starting at or before the offset ends within the offset plus its length.
                let end = byte_offset(this, off.min(len - sub_len) + sub_len);
                this[..end].rfind(sub).map(|b| char_index(this, b))
            } else {
                let start = byte_offset(this, off);
                this[start..]
                    .find(sub)
                    .map(|b| off + char_index(&this[start..], b))
            }
        }
    };
    to_cow(Value::Int(found.map_or(-1, |i| i as i64)))
}

/// `<string>.charAt(int) -> string`: the code point at the index; `""` at the end.
fn char_at<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(idx)) = (a.first().and_then(string), a.get(1).and_then(int)) else {
        return Err(no_overload("charAt", &a, true));
    };
    read("charAt()", this.len())?;
    let len = this.chars().count() as i64;
    if idx < 0 || idx > len {
        return Err(ExecutionError::function_error(
            "charAt",
            format!("index out of range: {idx}"),
        ));
    }
    string_result(
        this.chars()
            .nth(idx as usize)
            .map(|c| c.to_string())
            .unwrap_or_default(),
    )
}

/// `contains`, `startsWith`, `endsWith`: what the predicate reads is charged first.
fn predicate<'b, 'v>(
    name: &str,
    a: &[CowVal<'b, 'v>],
    read_bytes: fn(&str, &str) -> usize,
    test: fn(&str, &str) -> bool,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(sub)) = (a.first().and_then(string), a.get(1).and_then(string)) else {
        return Err(no_overload(name, a, true));
    };
    read(name, read_bytes(this, sub))?;
    to_cow(Value::Bool(test(this, sub)))
}

/// `<string>.contains(string) -> bool`.
fn contains<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(
        "contains",
        &a,
        |s, t| s.len() + t.len(),
        |s, t| s.contains(t),
    )
}

/// `<string>.startsWith(string) -> bool`.
fn starts_with<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(
        "startsWith",
        &a,
        |s, t| s.len().min(t.len()),
        |s, t| s.starts_with(t),
    )
}

/// `<string>.endsWith(string) -> bool`.
fn ends_with<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    predicate(
        "endsWith",
        &a,
        |s, t| s.len().min(t.len()),
        |s, t| s.ends_with(t),
    )
}

/// The receiver of a member function without arguments, if it is a string.
fn only_string<'a>(name: &str, a: &'a [CowVal<'_, '_>]) -> Result<&'a str, ExecutionError> {
    match a {
        [this] => string(this).ok_or_else(|| no_overload(name, a, true)),
        _ => Err(no_overload(name, a, true)),
    }
}

/// A string of `len` bytes `name` is about to build: refused over the size limit, charged.
fn building(name: &str, len: usize) -> Result<(), ExecutionError> {
    admit(name, Kind::String, Weight::bytes(len), true, true)
}

/// `<string>.lowerAscii() -> string`.
fn lower_ascii<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let this = only_string("lowerAscii", &a)?;
    building("lowerAscii()", this.len())?;
    string_result(this.to_ascii_lowercase())
}

/// `<string>.upperAscii() -> string`.
fn upper_ascii<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let this = only_string("upperAscii", &a)?;
    building("upperAscii()", this.len())?;
    string_result(this.to_ascii_uppercase())
}

/// `<string>.trim() -> string`: without leading and trailing Unicode white space.
fn trim<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let this = only_string("trim", &a)?;
    read("trim()", this.len())?;
    let trimmed = this.trim();
    building("trim()", trimmed.len())?;
    string_result(trimmed.to_owned())
}

/// `<string>.substring(start[, end]) -> string`.
fn substring<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(this), Some(start)) = (a.first().and_then(string), a.get(1).and_then(int)) else {
        return Err(no_overload("substring", &a, true));
    };
    let end = match a.get(2) {
        None => None,
        Some(e) => Some(int(e).ok_or_else(|| no_overload("substring", &a, true))?),
    };
    read("substring()", 2 * this.len())?;
    let len = this.chars().count() as i64;
    let out_of_range =
        |i: i64| ExecutionError::function_error("substring", format!("index out of range: {i}"));
    let end = match end {
        Some(end) => {
            if start > end {
                return Err(ExecutionError::function_error(
                    "substring",
                    format!("invalid substring range. start: {start}, end: {end}"),
                ));
            }
            end
        }
        None => len,
    };
    if start < 0 || start > len {
        return Err(out_of_range(start));
    }
    if end > len {
        return Err(out_of_range(end));
    }
    let from = byte_offset(this, start as usize);
    let to = from + byte_offset(&this[from..], (end - start) as usize);
    building("substring()", to - from)?;
    string_result(this[from..to].to_owned())
}

/// `<string>.reverse() -> string`, and `<list>.reverse() -> list`.
fn reverse<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    match a.as_slice() {
        [this] if this.get_type().kind() == Kind::List => super::lists::reverse(a),
        [this] => match string(this) {
            Some(s) => {
                building("reverse()", s.len())?;
                string_result(s.chars().rev().collect())
            }
            None => Err(no_overload("reverse", &a, true)),
        },
        _ => Err(no_overload("reverse", &a, true)),
    }
}

/// `size(x)`: code points of a string, bytes of a byte string, elements of a list, entries of
/// a map.
fn size<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    size_of(&a, false)
}

/// `x.size()`, the same.
fn size_member<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    size_of(&a, true)
}

fn size_of<'b, 'v>(a: &[CowVal<'b, 'v>], member: bool) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [x] = a else {
        return Err(no_overload("size", a, member));
    };
    let n = match x.get_type().kind() {
        Kind::String => {
            let s = string(x).unwrap_or_default();
            read("size()", s.len())?;
            s.chars().count()
        }
        Kind::Bytes | Kind::List | Kind::Map => match x.as_sizer() {
            Some(s) => usize::try_from(*s.size().inner()).unwrap_or(0),
            None => return Err(no_overload("size", a, member)),
        },
        _ => return Err(no_overload("size", a, member)),
    };
    to_cow(Value::Int(n as i64))
}

/// `strings.quote(string) -> string`: a double-quoted CEL string literal, the characters CEL
/// escapes escaped. Its size is counted before it is built.
fn quote<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [this] = a.as_slice() else {
        return Err(no_overload("strings.quote", &a, false));
    };
    let Some(s) = string(this) else {
        return Err(no_overload("strings.quote", &a, false));
    };
    read("strings.quote()", s.len())?;
    let escaped = s
        .bytes()
        .filter(|b| escape(char::from(*b)).is_some())
        .count();
    building("strings.quote()", s.len() + escaped + 2)?;
    let mut quoted = String::with_capacity(s.len() + escaped + 2);
    quoted.push('"');
    for c in s.chars() {
        match escape(c) {
            Some(e) => quoted.push_str(e),
            None => quoted.push(c),
        }
    }
    quoted.push('"');
    string_result(quoted)
}

/// The escape of a character CEL escapes in a quoted string (all are ASCII, one byte, so each
/// adds one byte to the string).
fn escape(c: char) -> Option<&'static str> {
    Some(match c {
        '\x07' => "\\a",
        '\x08' => "\\b",
        '\x0c' => "\\f",
        '\n' => "\\n",
        '\r' => "\\r",
        '\t' => "\\t",
        '\x0b' => "\\v",
        '\\' => "\\\\",
        '"' => "\\\"",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(f: cel::common::functions::Function, args: &[Value]) -> Value {
        let args: Vec<CowVal> = args
            .iter()
            .map(|v| CowVal::Owned(v.clone().try_into().unwrap()))
            .collect();
        Value::try_from(f(args).unwrap().as_ref()).unwrap()
    }

    fn s(x: &str) -> Value {
        Value::from(x)
    }

    #[test]
    fn searches_agree_with_a_window_by_window_search() {
        // The crate's (and cel-go's) definition, compared on every offset.
        fn windows(this: &str, sub: &str, off: usize, last: bool) -> i64 {
            let r: Vec<char> = this.chars().collect();
            let n: Vec<char> = sub.chars().collect();
            if n.is_empty() {
                return off.min(r.len()) as i64;
            }
            if off >= r.len() || n.len() > r.len() {
                return -1;
            }
            let at = |i: usize| r[i..i + n.len()] == n[..];
            let found = if last {
                (0..=off.min(r.len() - n.len())).rev().find(|&i| at(i))
            } else {
                (off..=r.len() - n.len()).find(|&i| at(i))
            };
            found.map_or(-1, |i| i as i64)
        }
        for this in ["", "a", "héllo wörld héllo", "aaaa", "ab€ab€"] {
            for sub in ["", "l", "héllo", "aa", "€a", "b€", "x"] {
                for off in 0..this.chars().count() + 2 {
                    for last in [false, true] {
                        let f = if last { last_index_of } else { index_of };
                        let got = run(f, &[s(this), s(sub), Value::Int(off as i64)]);
                        assert_eq!(
                            got,
                            Value::Int(windows(this, sub, off, last)),
                            "{this:?} {sub:?} {off} last={last}"
                        );
                    }
                }
            }
        }
        assert_eq!(run(index_of, &[s("héllo"), s("l")]), Value::Int(2));
        assert_eq!(run(last_index_of, &[s("héllo"), s("l")]), Value::Int(3));
        assert_eq!(run(last_index_of, &[s("héllo"), s("")]), Value::Int(5));
        assert_eq!(run(index_of, &[s("héllo"), s("")]), Value::Int(0));
    }

    #[test]
    fn a_long_search_is_linear() {
        // A window-by-window search of this takes about 10^12 comparisons.
        let hay = "a".repeat(2_000_000);
        let needle = format!("{}b", "a".repeat(1_000_000));
        let start = std::time::Instant::now();
        assert_eq!(run(index_of, &[s(&hay), s(&needle)]), Value::Int(-1));
        assert_eq!(run(last_index_of, &[s(&hay), s(&needle)]), Value::Int(-1));
        // Not a timing assertion on the happy path: the quadratic search takes hours.
        assert!(start.elapsed() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn quote_and_substring_as_the_extension() {
        assert_eq!(run(quote, &[s("a\"b\\c\n€")]), s("\"a\\\"b\\\\c\\n€\""));
        assert_eq!(
            run(substring, &[s("héllo"), Value::Int(1), Value::Int(3)]),
            s("él")
        );
        assert_eq!(run(substring, &[s("héllo"), Value::Int(5)]), s(""));
        assert_eq!(run(char_at, &[s("héllo"), Value::Int(1)]), s("é"));
        assert_eq!(run(char_at, &[s("héllo"), Value::Int(5)]), s(""));
    }
}
