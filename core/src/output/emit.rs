//! A direct YAML emitter for the common shape of Kubernetes objects.
//!
//! serde-saphyr decides how every scalar is written (plain, quoted, block) and that decision is
//! what keeps `"on"` and `"0777"` strings; its general serializer, though, costs more than
//! rendering the objects. This emitter writes the block structure itself, byte for byte as
//! serde-saphyr lays it out, and asks serde-saphyr only how to write each distinct key and each
//! string that is not obviously plain, remembering the answers per thread. Anything outside that
//! common shape (floats, multi-line strings, an empty or non-mapping document) makes [`emit`]
//! return `None`, and the caller serialises the object with serde-saphyr as a whole. The property
//! tests in `output.rs` check that whatever this emitter writes equals serde-saphyr's output.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

/// How many distinct scalars each thread remembers before starting over.
const CACHE_LIMIT: usize = 16_384;
/// Longer strings are asked about every time rather than remembered.
const CACHE_MAX_LEN: usize = 128;

/// How each remembered text is written. foldhash rather than the standard SipHash: the lookup
/// runs for most keys and values of every object, and the keys are kiln's own strings.
type Cache = HashMap<String, Option<String>, foldhash::fast::FixedState>;

thread_local! {
    static KEYS: RefCell<Cache> = RefCell::new(Cache::default());
    static VALUES: RefCell<Cache> = RefCell::new(Cache::default());
}

/// The object as a YAML document, or `None` when it is not in the shape this emitter handles.
pub(crate) fn emit(v: &Value) -> Option<String> {
    let mut out = String::with_capacity(1024);
    emit_into(&mut out, v).then_some(out)
}

/// [`emit`] appended to `out`; `false` (and `out` as it was) when the object is not in the shape
/// this emitter handles. A stream is written into one buffer this way, without a string per
/// object copied into it.
pub(crate) fn emit_into(out: &mut String, v: &Value) -> bool {
    let Value::Object(m) = v else {
        return false;
    };
    if m.is_empty() {
        return false;
    }
    let start = out.len();
    if map(out, m, 0, false).is_some() {
        return true;
    }
    out.truncate(start);
    false
}

fn indent(out: &mut String, n: usize) {
    // Copied from a run of spaces: extending by `char`s pushed every space on its own, once per
    // line of the output.
    const SPACES: &str = "                                                                ";
    let mut left = n;
    while left > 0 {
        let k = left.min(SPACES.len());
        out.push_str(&SPACES[..k]);
        left -= k;
    }
}

/// Entries of a non-empty mapping at `ind`; with `inline`, the first key continues the current
/// line (after a sequence's `- `).
fn map(out: &mut String, m: &Map<String, Value>, ind: usize, inline: bool) -> Option<()> {
    for (i, (k, v)) in m.iter().enumerate() {
        if i > 0 || !inline {
            indent(out, ind);
        }
        key(out, k)?;
        out.push(':');
        match v {
            Value::Object(c) if !c.is_empty() => {
                out.push('\n');
                map(out, c, ind + 2, false)?;
            }
            Value::Array(c) if !c.is_empty() => {
                out.push('\n');
                seq(out, c, ind, false)?;
            }
            _ => {
                out.push(' ');
                scalar(out, v)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

/// Items of a non-empty sequence at `ind`; with `inline`, the first item continues the current
/// line.
fn seq(out: &mut String, items: &[Value], ind: usize, inline: bool) -> Option<()> {
    for (i, v) in items.iter().enumerate() {
        if i > 0 || !inline {
            indent(out, ind);
        }
        out.push_str("- ");
        match v {
            Value::Object(c) if !c.is_empty() => map(out, c, ind + 2, true)?,
            Value::Array(c) if !c.is_empty() => seq(out, c, ind + 2, true)?,
            _ => {
                scalar(out, v)?;
                out.push('\n');
            }
        }
    }
    Some(())
}

/// A scalar or an empty collection, without the line end.
fn scalar(out: &mut String, v: &Value) -> Option<()> {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(n) if n.is_i64() || n.is_u64() => {
            use std::fmt::Write;
            let _ = write!(out, "{n}");
        }
        // Floats: serde-saphyr has its own shortest-form formatting.
        Value::Number(_) => return None,
        Value::String(s) => string(out, s)?,
        Value::Object(m) if m.is_empty() => out.push_str("{}"),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        _ => return None,
    }
    Some(())
}

/// A string value: plain when it obviously is, else as serde-saphyr writes it.
fn string(out: &mut String, s: &str) -> Option<()> {
    if obviously_plain(s) {
        out.push_str(s);
        return Some(());
    }
    remembered(&VALUES, s, value_repr, out)
}

fn key(out: &mut String, k: &str) -> Option<()> {
    // serde-saphyr writes such keys plain too (the round-trip property tests compare).
    if obviously_plain(k) {
        out.push_str(k);
        return Some(());
    }
    remembered(&KEYS, k, key_repr, out)
}

/// Strings no YAML reader can take for anything but a string, written plain by serde-saphyr:
/// a letter, then letters, digits and `-._/`, and not one of the words YAML 1.1 reads as a
/// boolean, null or special float.
fn obviously_plain(s: &str) -> bool {
    let b = s.as_bytes();
    if b.is_empty() || !b[0].is_ascii_alphabetic() || b.len() > 256 {
        return false;
    }
    // Every key and string value of the output passes here: one table lookup per byte.
    if !b.iter().all(|&c| PLAIN_BYTE[usize::from(c)]) {
        return false;
    }
    const WORDS: [&str; 11] = [
        "y", "n", "yes", "no", "on", "off", "true", "false", "null", "nan", "inf",
    ];
    b.len() > 5 || !WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

/// The bytes [`obviously_plain`] allows after the first: ASCII letters, digits and `-._/`.
static PLAIN_BYTE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'/');
        c += 1;
    }
    t
};

/// Write how a scalar is written, looked up (or computed and remembered); `None` if it is not
/// one line.
fn remembered(
    cache: &'static std::thread::LocalKey<RefCell<Cache>>,
    s: &str,
    compute: fn(&str) -> Option<String>,
    out: &mut String,
) -> Option<()> {
    if s.len() > CACHE_MAX_LEN {
        out.push_str(&compute(s)?);
        return Some(());
    }
    cache.with(|c| {
        let mut c = c.borrow_mut();
        // Written straight from the cache: texts repeat in every object, so no copy per use.
        if let Some(repr) = c.get(s) {
            out.push_str(repr.as_deref()?);
            return Some(());
        }
        if c.len() >= CACHE_LIMIT {
            c.clear();
        }
        let repr = compute(s);
        let written = repr.as_deref().map(|r| out.push_str(r));
        c.insert(s.to_string(), repr);
        written
    })
}

fn saphyr(v: &Value) -> Option<String> {
    serde_saphyr::to_string_with_options(v, super::yaml_options()).ok()
}

/// Whether kiln's writer writes `s` plain, as a mapping key (`key`) or value: then kiln's
/// reader reads the plain text back as that same string.
pub(crate) fn writes_plain(s: &str, key: bool) -> bool {
    if obviously_plain(s) {
        return true;
    }
    let repr = if key { key_repr(s) } else { value_repr(s) };
    repr.as_deref() == Some(s)
}

/// serde-saphyr's rendering of `s` as a mapping value, if it is one line.
fn value_repr(s: &str) -> Option<String> {
    let mut m = Map::new();
    m.insert("k".into(), Value::String(s.to_string()));
    let text = saphyr(&Value::Object(m))?;
    let repr = text.strip_prefix("k: ")?.strip_suffix('\n')?;
    (!repr.contains('\n')).then(|| repr.to_string())
}

/// serde-saphyr's rendering of `k` as a mapping key, if it is one line.
fn key_repr(k: &str) -> Option<String> {
    let mut m = Map::new();
    m.insert(k.to_string(), Value::Bool(true));
    let text = saphyr(&Value::Object(m))?;
    let repr = text.strip_suffix(": true\n")?;
    (!repr.contains('\n')).then(|| repr.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// What the emitter writes plain without asking, serde-saphyr writes plain too, as a key
        /// and as a value.
        #[test]
        fn obviously_plain_is_what_saphyr_writes_plain(
            s in "(y|n|yes|no|on|off|true|false|null|nan|inf|Yes|ON|[a-zA-Z])[a-zA-Z0-9._/-]{0,40}"
        ) {
            if obviously_plain(&s) {
                proptest::prop_assert_eq!(key_repr(&s), Some(s.clone()));
                proptest::prop_assert_eq!(value_repr(&s), Some(s.clone()));
            }
        }
    }

    /// Indentation past the run of spaces `indent` copies from is written in pieces, as deep
    /// as the nesting goes: the same text as serde-saphyr's.
    #[test]
    fn deep_nesting_is_indented_like_saphyr() {
        let mut v = serde_json::json!({"leaf": ["a", {"b": 1}]});
        for i in 0..80 {
            v = if i % 3 == 0 {
                serde_json::json!([v, "x"])
            } else {
                serde_json::json!({"k": v, "z": true})
            };
        }
        let ours = emit(&v).expect("emitted");
        assert!(ours.lines().any(|l| l.starts_with(&" ".repeat(100))));
        assert_eq!(Some(ours), saphyr(&v));
    }

    #[test]
    fn special_words_are_not_obviously_plain() {
        for w in [
            "yes", "No", "ON", "off", "y", "N", "true", "False", "null", "NaN", "inf",
        ] {
            assert!(!obviously_plain(w), "{w}");
        }
        assert!(obviously_plain("app.kubernetes.io/name"));
        for c in 0..=255u8 {
            let s = format!("a{}", c as char);
            let allowed = c.is_ascii_alphanumeric() || b"-._/".contains(&c);
            assert_eq!(obviously_plain(&s), allowed, "{s:?}");
        }
    }
}
