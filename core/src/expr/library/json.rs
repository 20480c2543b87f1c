//! kro's `json.unmarshal` and `json.marshal` (`pkg/cel/library/json.go`).
//!
//! `json.marshal` reproduces Go's `encoding/json` output for the values kro's `GoNativeType` hands it:
//! compact, map keys sorted, `<`, `>`, `&`, U+2028 and U+2029 escaped, bytes as base64, durations
//! and timestamps as their metav1 strings. `json.unmarshal` gives `int` for integral numbers that
//! fit in 64 bits, where kro (decoding into `interface{}`) gives `double`; an `int` is what a
//! manifest field expects and what `+ 1` accepts.
//!
//! Both count what they build against the evaluation budget's size limit as they build it:
//! `json.unmarshal` each value before it is made (20 million numbers are a short string), and
//! `json.marshal` the text as it is written.

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt::{self, Write as _};
use std::sync::Arc;

use cel::common::types::Kind;
use cel::objects::{Key, Map, OptionalValue};
use cel::{ExecutionError, Value};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{list_value, string_value, Call};
use crate::expr::budget::{self, admit, charge};
use crate::expr::cel::is_omit;
use crate::expr::value::from_cel;
use crate::expr::weight::Weight;

/// `json.unmarshal(string) -> dyn`.
pub(super) fn unmarshal(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [s] = call.global::<1>()?;
    let text = call.string(s)?;
    charge("json.unmarshal()", Weight::bytes(text.len()).work())?;
    let built = Built::default();
    let mut de = serde_json::Deserializer::from_str(text);
    let parsed = Node(&built)
        .deserialize(&mut de)
        .and_then(|v| de.end().map(|()| v));
    // A value over the limit stops the parse; that, not the parse error it became, is reported.
    if let Some(e) = built.refused.borrow_mut().take() {
        return Err(e);
    }
    let v = parsed.map_err(|e| call.error(format!("json.unmarshal failed to parse JSON: {e}")))?;
    admit(
        "json.unmarshal()",
        Kind::Dyn,
        built.weight.get(),
        false,
        true,
    )?;
    Ok(v)
}

/// What a parse has built so far, and why it stopped, if the budget stopped it.
#[derive(Default)]
struct Built {
    weight: std::cell::Cell<Weight>,
    refused: RefCell<Option<ExecutionError>>,
}

impl Built {
    /// Count a value about to be made: `entries` more entries and `bytes` more bytes of strings.
    fn grow<E: de::Error>(&self, entries: usize, bytes: usize) -> Result<(), E> {
        let mut w = self.weight.get();
        w.entries += entries;
        w.bytes += bytes;
        self.weight.set(w);
        if budget::metered() && w.over(budget::caps()) {
            if let Err(e) = admit("json.unmarshal()", Kind::Dyn, w, false, true) {
                *self.refused.borrow_mut() = Some(e);
                return Err(E::custom("over the evaluation budget"));
            }
        }
        Ok(())
    }
}

/// A JSON value, read straight into a CEL value.
struct Node<'a>(&'a Built);

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_i64<E: de::Error>(self, i: i64) -> Result<Value, E> {
        Ok(Value::Int(i))
    }

    fn visit_u64<E: de::Error>(self, u: u64) -> Result<Value, E> {
        // Larger integers: the double Go's decoder would have produced.
        Ok(i64::try_from(u).map_or(Value::Float(u as f64), Value::Int))
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        Ok(Value::Float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        self.0.grow(0, s.len())?;
        Ok(string_value(s))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.0.grow(1, 0)?;
            match seq.next_element_seed(Node(self.0))? {
                Some(v) => items.push(v),
                None => break,
            }
        }
        Ok(list_value(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Value, A::Error> {
        let mut entries: HashMap<Key, Value> = HashMap::new();
        while let Some(k) = m.next_key::<String>()? {
            self.0.grow(1, k.len())?;
            let v = m.next_value_seed(Node(self.0))?;
            // A repeated key keeps its last value, as serde_json's and Go's decoders do.
            entries.insert(Key::String(Arc::new(k)), v);
        }
        Ok(Value::Map(Map {
            map: Arc::new(entries),
        }))
    }
}

/// `json.marshal(dyn) -> string`.
pub(super) fn marshal(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [v] = call.global::<1>()?;
    let mut out = String::new();
    let limit = if budget::metered() {
        budget::caps().total
    } else {
        usize::MAX
    };
    match encode(v, &mut out, limit) {
        Ok(()) => Ok(string_value(out)),
        // `out` is past the limit: admitting it is refusing it.
        Err(Fail::TooLong) => Err(admit(
            "json.marshal()",
            Kind::String,
            Weight::bytes(out.len()),
            false,
            true,
        )
        .err()
        .unwrap_or_else(|| call.error("json.marshal failed: the text is too long"))),
        Err(Fail::Unsupported(e)) => Err(call.error(format!("json.marshal failed to {e}"))),
    }
}

/// Why encoding stopped.
#[derive(Debug)]
enum Fail {
    /// A value JSON cannot hold; the message reads after "failed to", as kro words it.
    Unsupported(String),
    /// The text passed the size limit.
    TooLong,
}

impl From<String> for Fail {
    fn from(e: String) -> Self {
        Fail::Unsupported(e)
    }
}

/// Appends the Go encoding of `v`, stopping once the text is longer than `limit`.
fn encode(v: &Value, out: &mut String, limit: usize) -> Result<(), Fail> {
    if out.len() > limit {
        return Err(Fail::TooLong);
    }
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(i) => {
            let _ = write!(out, "{i}");
        }
        Value::UInt(u) => {
            let _ = write!(out, "{u}");
        }
        Value::Float(f) => encode_float(*f, out)?,
        Value::String(s) => encode_string(s, out, limit)?,
        Value::Bytes(b) => {
            out.push('"');
            out.push_str(&base64(b));
            out.push('"');
        }
        Value::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode(item, out, limit)?;
            }
            out.push(']');
        }
        Value::Map(m) => {
            let mut entries = Vec::with_capacity(m.map.len());
            for (k, v) in m.map.iter() {
                match k {
                    Key::String(s) => entries.push((s.as_str(), v)),
                    other => {
                        let got = go_key_type(other);
                        return Err(Fail::Unsupported(format!(
                            "convert value: failed to convert map key: map key must be string, got {got}"
                        )));
                    }
                }
            }
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (k, v)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                encode_string(k, out, limit)?;
                out.push(':');
                encode(v, out, limit)?;
            }
            out.push('}');
        }
        Value::Duration(_) => match from_cel(v) {
            Ok(serde_json::Value::String(s)) => encode_string(&s, out, limit)?,
            _ => {
                return Err(Fail::Unsupported(
                    "convert value: unsupported type: google.protobuf.Duration".into(),
                ))
            }
        },
        Value::Timestamp(t) => {
            let utc = t.naive_utc();
            // metav1.Time renders the zero time as null, and otherwise RFC 3339 in UTC, whole seconds.
            let go_zero =
                chrono::NaiveDate::from_ymd_opt(1, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0));
            if Some(utc) == go_zero {
                out.push_str("null");
            } else {
                encode_string(&utc.format("%Y-%m-%dT%H:%M:%SZ").to_string(), out, limit)?;
            }
        }
        Value::Opaque(o) => {
            if is_omit(v) {
                // kro's omit sentinel is an empty Go struct, which encoding/json writes as {}.
                out.push_str("{}");
            } else if let Some(opt) = o.downcast_ref::<OptionalValue>() {
                match opt.value() {
                    Some(inner) => encode(inner, out, limit)?,
                    None => out.push_str("null"),
                }
            } else {
                return Err(Fail::Unsupported(format!(
                    "convert value: unsupported type: {}",
                    o.runtime_type_name()
                )));
            }
        }
        Value::Struct(_) | Value::Function(..) => {
            return Err(Fail::Unsupported(format!(
                "convert value: unsupported type: {}",
                super::type_name(v)
            )))
        }
    }
    Ok(())
}

/// The Go type name of a non-string map key, for the error kro reports.
fn go_key_type(k: &Key) -> &'static str {
    match k {
        Key::Int(_) => "int64",
        Key::Uint(_) => "uint64",
        Key::Bool(_) => "bool",
        Key::String(_) => "string",
    }
}

/// Go's float encoding: shortest round-trip digits, exponent form outside [1e-6, 1e21).
fn encode_float(f: f64, out: &mut String) -> Result<(), String> {
    if !f.is_finite() {
        let name = if f.is_nan() {
            "NaN"
        } else if f > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(format!("encode value: json: unsupported value: {name}"));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        // Rust writes `1.5e-7` and `1e21`; Go writes `1.5e-07` (trimmed to `1.5e-7` by encoding/json)
        // and `1e+21`.
        let s = format!("{f:e}");
        match s.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => {
                let _ = write!(out, "{mantissa}e+{exp:0>2}");
            }
            _ => out.push_str(&s),
        }
    } else {
        let _ = write!(out, "{f}");
    }
    Ok(())
}

/// A JSON string as Go's encoding/json writes it (HTML-safe escaping on), stopping once the text
/// is longer than `limit`.
fn encode_string(s: &str, out: &mut String, limit: usize) -> Result<(), Fail> {
    out.push('"');
    for c in s.chars() {
        if out.len() > limit {
            return Err(Fail::TooLong);
        }
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    Ok(())
}

/// Standard base64 with padding, as encoding/json writes `[]byte`.
pub(crate) fn base64(data: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 0x3f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn marshal_str(v: &Value) -> Result<String, String> {
        let mut out = String::new();
        match encode(v, &mut out, usize::MAX) {
            Ok(()) => Ok(out),
            Err(Fail::Unsupported(e)) => Err(e),
            Err(Fail::TooLong) => Err("too long".into()),
        }
    }

    #[test]
    fn floats_like_go() {
        let f = |x: f64| marshal_str(&Value::Float(x)).unwrap();
        assert_eq!(f(1.0), "1");
        assert_eq!(f(1.5), "1.5");
        assert_eq!(f(-0.0), "-0");
        assert_eq!(f(0.000001), "0.000001");
        assert_eq!(f(0.00000015), "1.5e-7");
        assert_eq!(f(1e20), "100000000000000000000");
        assert_eq!(f(1e21), "1e+21");
        assert_eq!(f(1.2345e100), "1.2345e+100");
        assert_eq!(f(5e-324), "5e-324");
        let refused = marshal_str(&Value::Float(f64::NAN)).expect_err("an error");
        assert!(
            refused.to_string().contains("json: unsupported value: NaN"),
            "{refused}"
        );
    }

    #[test]
    fn strings_like_go() {
        let s = |x: &str| marshal_str(&string_value(x)).unwrap();
        assert_eq!(s("a<b>&c"), r#""a\u003cb\u003e\u0026c""#);
        assert_eq!(
            s("q\"\\\n\t\u{1}\u{7f}é"),
            "\"q\\\"\\\\\\n\\t\\u0001\u{7f}é\""
        );
        assert_eq!(s("\u{2028}"), r#""\u2028""#);
    }

    #[test]
    fn base64_padding() {
        assert_eq!(base64(b""), "");
        assert_eq!(base64(b"h"), "aA==");
        assert_eq!(base64(b"hi"), "aGk=");
        assert_eq!(base64(b"hello"), "aGVsbG8=");
    }
}
