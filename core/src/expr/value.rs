//! Conversion between JSON values (kiln's document model) and CEL values.
//!
//! Two rules matter. JSON numbers that fit become CEL `int`, never `uint`: going through serde would
//! make `3` a `uint` and `schema.spec.replicas + 1` would fail (there is no implicit int/uint
//! arithmetic in CEL). And CEL maps are hash maps, so their keys are sorted when converted back, which
//! keeps output identical from run to run.

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::types::{
    CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString, CelUInt,
};
use cel::common::value::Val;
use cel::objects::{Key, Map, OptionalValue};
use cel::Value;
use serde_json::Value as Json;

use super::cel::is_omit;

/// Marker written into a JSON tree where an expression returned `omit()`; the renderer deletes every
/// map entry and list element holding it. A NUL-delimited string cannot come from an ordinary
/// manifest, and is never printed.
pub const OMIT_MARKER: &str = "\u{0}kiln:omit\u{0}";

/// JSON → CEL.
pub fn to_cel(v: &Json) -> Value {
    match v {
        Json::Null => Value::Null,
        Json::Bool(b) => Value::Bool(*b),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Value::Int(i)
            } else if let Some(u) = n.as_u64() {
                Value::UInt(u)
            } else {
                Value::Float(n.as_f64().unwrap_or(f64::NAN))
            }
        }
        Json::String(s) => Value::String(Arc::new(s.clone())),
        Json::Array(a) => Value::List(Arc::new(a.iter().map(to_cel).collect())),
        Json::Object(m) => {
            let map: HashMap<Key, Value> = m
                .iter()
                .map(|(k, v)| (Key::String(Arc::new(k.clone())), to_cel(v)))
                .collect();
            Value::Map(Map { map: Arc::new(map) })
        }
    }
}

/// JSON → a CEL value as the interpreter holds it, for [`cel::Context::add_variable_as_val`].
///
/// The same value as [`to_cel`], built directly: `add_variable_from_value` converts a [`Value`]
/// by cloning every map and then rebuilding it, which cost more than the rest of binding a
/// unit's variables (a fifth of a web-app fleet's instructions).
pub fn to_val(v: &Json) -> Box<dyn Val> {
    match v {
        Json::Null => Box::new(CelNull),
        Json::Bool(b) => Box::new(CelBool::from(*b)),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                Box::new(CelInt::from(i))
            } else if let Some(u) = n.as_u64() {
                Box::new(CelUInt::from(u))
            } else {
                Box::new(CelDouble::from(n.as_f64().unwrap_or(f64::NAN)))
            }
        }
        Json::String(s) => Box::new(CelString::from(s.clone())),
        Json::Array(a) => Box::new(CelList::from(a.iter().map(to_val).collect::<Vec<_>>())),
        Json::Object(m) => {
            let map: HashMap<CelMapKey, Box<dyn Val>> = m
                .iter()
                .map(|(k, v)| (CelMapKey::from(k.clone()), to_val(v)))
                .collect();
            Box::new(CelMap::from(map))
        }
    }
}

/// Why a CEL result cannot become JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversionError(pub String);

/// CEL → JSON. Maps come back with sorted keys; `optional.none()` becomes null; the omit sentinel
/// becomes [`OMIT_MARKER`]. Bytes are refused, as kro does: they must be encoded explicitly.
pub fn from_cel(v: &Value) -> Result<Json, ConversionError> {
    Ok(match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::UInt(u) => {
            if *u > i64::MAX as u64 {
                return Err(ConversionError(format!(
                    "unsigned integer {u} does not fit in a signed 64-bit integer"
                )));
            }
            Json::from(*u as i64)
        }
        Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Json::Number(n),
            None => {
                return Err(ConversionError(format!(
                    "{f} cannot be represented in JSON or YAML"
                )))
            }
        },
        Value::String(s) => Json::String(s.as_str().to_string()),
        Value::Bytes(_) => return Err(ConversionError(
            "bytes value cannot be used directly; encode it explicitly, e.g. base64.encode(...)"
                .into(),
        )),
        Value::List(items) => Json::Array(items.iter().map(from_cel).collect::<Result<_, _>>()?),
        Value::Map(m) => {
            let mut entries: Vec<(String, &Value)> = Vec::with_capacity(m.map.len());
            for (k, v) in m.map.iter() {
                let key = match k {
                    Key::String(s) => s.as_str().to_string(),
                    other => {
                        return Err(ConversionError(format!(
                            "map key {other:?} is not a string; Kubernetes objects only have string keys"
                        )))
                    }
                };
                entries.push((key, v));
            }
            entries.sort_by(|a, b| a.0.cmp(&b.0));
            let mut out = serde_json::Map::with_capacity(entries.len());
            for (k, v) in entries {
                out.insert(k, from_cel(v)?);
            }
            Json::Object(out)
        }
        // metav1.Time's JSON form: UTC, whole seconds (what kro writes into objects).
        Value::Timestamp(t) => Json::String(
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string(),
        ),
        Value::Duration(d) => Json::String(go_duration(d)),
        Value::Opaque(o) => {
            if is_omit(v) {
                Json::String(OMIT_MARKER.to_string())
            } else if let Some(opt) = o.downcast_ref::<OptionalValue>() {
                match opt.value() {
                    Some(inner) => from_cel(inner)?,
                    None => Json::Null,
                }
            } else {
                return Err(ConversionError(format!(
                    "a value of type {} cannot be written into a manifest",
                    o.runtime_type_name()
                )));
            }
        }
        Value::Struct(_) | Value::Function(..) => {
            return Err(ConversionError(format!(
                "a value of type {:?} cannot be written into a manifest",
                v.type_of()
            )))
        }
    })
}

/// A duration in Go's `time.Duration.String()` form (`1h2m3.5s`, `0s`), which is what Kubernetes
/// tooling writes.
fn go_duration(d: &chrono::Duration) -> String {
    let total_nanos = d.num_nanoseconds().unwrap_or(i64::MAX);
    if total_nanos == 0 {
        return "0s".into();
    }
    let neg = total_nanos < 0;
    let mut n = total_nanos.unsigned_abs();
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    if n < 1_000_000_000 {
        // Sub-second: Go uses the largest unit that keeps the value >= 1.
        let (unit, div) = if n < 1_000 {
            ("ns", 1)
        } else if n < 1_000_000 {
            ("µs", 1_000)
        } else {
            ("ms", 1_000_000)
        };
        out.push_str(&trim_fraction(n / div, n % div, div));
        out.push_str(unit);
        return out;
    }
    let h = n / 3_600_000_000_000;
    n %= 3_600_000_000_000;
    let m = n / 60_000_000_000;
    n %= 60_000_000_000;
    if h > 0 {
        out.push_str(&format!("{h}h"));
    }
    if h > 0 || m > 0 {
        out.push_str(&format!("{m}m"));
    }
    out.push_str(&trim_fraction(
        n / 1_000_000_000,
        n % 1_000_000_000,
        1_000_000_000,
    ));
    out.push('s');
    out
}

fn trim_fraction(whole: u64, frac: u64, div: u64) -> String {
    if frac == 0 {
        return whole.to_string();
    }
    let width = (div as f64).log10().round() as usize;
    let s = format!("{frac:0width$}");
    format!("{whole}.{}", s.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::cel::{compile, new_context, ExprLimits};
    use serde_json::json;

    fn eval_with(src: &str, var: &Json) -> Json {
        let c = compile(src, &ExprLimits::default()).unwrap();
        let mut ctx = new_context();
        ctx.add_variable_from_value("x", to_cel(var));
        from_cel(&c.program.execute(&ctx).unwrap()).unwrap()
    }

    #[test]
    fn json_numbers_are_ints() {
        assert_eq!(
            eval_with("x.replicas + 1", &json!({"replicas": 3})),
            json!(4)
        );
        assert_eq!(eval_with("x.f * 2.0", &json!({"f": 1.5})), json!(3.0));
    }

    #[test]
    fn maps_come_back_sorted() {
        let out = eval_with("{'b': 1, 'a': 2, 'c': x}", &json!(3));
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"a":2,"b":1,"c":3}"#
        );
    }

    #[test]
    fn to_val_is_to_cel_built_directly() {
        for v in [
            json!(null),
            json!({"a": [1, "two", null, true, {"z": 1.5, "y": []}], "b": {}}),
            json!([u64::MAX, i64::MIN, -0.0, 1e300, ""]),
            json!({"nested": {"deeper": {"list": [[1], [2, {"k": "v"}]]}}}),
        ] {
            let direct = Value::try_from(to_val(&v).as_ref()).unwrap();
            assert_eq!(direct, to_cel(&v), "{v}");
            // And it evaluates the same once bound.
            let c = compile("x", &ExprLimits::default()).unwrap();
            let mut ctx = new_context();
            ctx.add_variable_as_val("x", to_val(&v));
            assert_eq!(c.program.execute(&ctx).unwrap(), to_cel(&v), "{v}");
        }
    }

    #[test]
    fn round_trip_is_identity_modulo_key_order() {
        let v = json!({"a": [1, "two", null, true, {"z": 1.5, "y": []}], "b": {}});
        assert_eq!(from_cel(&to_cel(&v)).unwrap(), v);
    }

    #[test]
    fn bytes_and_bad_keys_are_refused() {
        let refused = from_cel(&Value::Bytes(Arc::new(vec![1]))).expect_err("an error");
        assert!(
            refused.0.contains("bytes value cannot be used directly"),
            "{}",
            refused.0
        );
        let c = compile("{1: 'a'}", &ExprLimits::default()).unwrap();
        let v = c.program.execute(&new_context()).unwrap();
        let refused = from_cel(&v).expect_err("an error");
        assert!(
            refused.0.contains("map key Int(1) is not a string"),
            "{}",
            refused.0
        );
    }

    #[test]
    fn optionals_unwrap() {
        assert_eq!(eval_with("x.?a", &json!({"a": 1})), json!(1));
        assert_eq!(eval_with("x.?b", &json!({"a": 1})), json!(null));
    }

    #[test]
    fn timestamps_print_like_metav1_time() {
        assert_eq!(
            eval_with("timestamp('2024-03-01T10:20:30.5+02:00')", &json!(0)),
            json!("2024-03-01T08:20:30Z")
        );
    }

    #[test]
    fn durations_print_like_go() {
        assert_eq!(eval_with("duration('90m')", &json!(0)), json!("1h30m0s"));
        assert_eq!(eval_with("duration('1.5s')", &json!(0)), json!("1.5s"));
        assert_eq!(eval_with("duration('0s')", &json!(0)), json!("0s"));
        assert_eq!(eval_with("duration('250ms')", &json!(0)), json!("250ms"));
    }
}
