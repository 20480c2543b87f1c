//! SimpleSchema markers: the `key=value` list after the `|` of a field string.
//!
//! The tokenizer follows kro's `ParseMarkers` character for character, quirks included, because
//! what it accepts is part of the RGD language: inside double quotes only `\"` and `\\` are
//! unescaped (`\.` stays `\.`); outside quotes `{…}` and `[…]` are bracket-counted so JSON
//! defaults may contain spaces; spaces outside quotes and brackets are dropped, so a marker
//! string that ends in whitespace (or is empty) ends "without a value". Markers are applied in
//! textual order, so `listMapKey` must follow `listType=map`.

use serde_json::{Map, Value};

use super::path::go_quote;
use super::strconv::{json_number, parse_bool, parse_float, parse_int};

/// The markers kro knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum MarkerKind {
    Required,
    Default,
    Description,
    Minimum,
    Maximum,
    Validation,
    Enum,
    Immutable,
    Pattern,
    UniqueItems,
    MinLength,
    MaxLength,
    MinItems,
    MaxItems,
    ListType,
    ListMapKey,
}

/// Every marker key, in kro's order (`pkg/simpleschema/markers.go`): what an editor offers
/// after `|`. A test holds it to [`MarkerKind::from_key`].
pub const MARKER_KEYS: &[&str] = &[
    "required",
    "default",
    "description",
    "minimum",
    "maximum",
    "validation",
    "enum",
    "immutable",
    "pattern",
    "uniqueItems",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "listType",
    "listMapKey",
];

impl MarkerKind {
    fn from_key(key: &str) -> Option<Self> {
        Some(match key {
            "required" => Self::Required,
            "default" => Self::Default,
            "description" => Self::Description,
            "minimum" => Self::Minimum,
            "maximum" => Self::Maximum,
            "validation" => Self::Validation,
            "enum" => Self::Enum,
            "immutable" => Self::Immutable,
            "pattern" => Self::Pattern,
            "uniqueItems" => Self::UniqueItems,
            "minLength" => Self::MinLength,
            "maxLength" => Self::MaxLength,
            "minItems" => Self::MinItems,
            "maxItems" => Self::MaxItems,
            "listType" => Self::ListType,
            "listMapKey" => Self::ListMapKey,
            _ => return None,
        })
    }
}

/// One parsed marker; `value` is already unquoted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Marker {
    pub(crate) kind: MarkerKind,
    pub(crate) value: String,
}

/// Tokenize a marker string (the text after the first `|`).
pub(crate) fn parse_markers(input: &str) -> Result<Vec<Marker>, String> {
    let mut out = Vec::new();
    let mut current: Option<MarkerKind> = None;
    let mut in_quotes = false;
    let mut escaped = false;
    let mut brackets: i64 = 0;
    let mut buf = String::new();

    for c in input.chars() {
        if c == '=' && current.is_none() && !in_quotes && brackets == 0 {
            let key = buf.trim();
            if key.is_empty() {
                return Err("empty marker key".to_string());
            }
            let kind = MarkerKind::from_key(key).ok_or_else(|| {
                format!(
                    "invalid marker key {}: unknown marker: {key}",
                    go_quote(key)
                )
            })?;
            current = Some(kind);
            buf.clear();
        } else if c == '"' && !escaped {
            in_quotes = !in_quotes;
            buf.push(c);
        } else if c == '\\' && in_quotes && !escaped {
            escaped = true;
            buf.push(c);
        } else if (c == '{' || c == '[') && !in_quotes {
            brackets += 1;
            buf.push(c);
        } else if (c == '}' || c == ']') && !in_quotes {
            brackets -= 1;
            buf.push(c);
            if brackets < 0 {
                return Err("unmatched closing bracket/brace".to_string());
            }
        } else if c.is_whitespace() && !in_quotes && brackets == 0 {
            if let Some(kind) = current.take() {
                out.push(Marker {
                    kind,
                    value: process_value(&buf),
                });
                buf.clear();
            }
        } else {
            if escaped && in_quotes {
                escaped = false;
            }
            buf.push(c);
        }
    }

    match current {
        Some(kind) => out.push(Marker {
            kind,
            value: process_value(&buf),
        }),
        None => return Err(format!("marker key '{buf}' without a value")),
    }
    if in_quotes {
        return Err("unclosed quote".to_string());
    }
    if brackets > 0 {
        return Err("unclosed bracket/brace".to_string());
    }
    Ok(out)
}

/// A fully quoted value loses its quotes and is unescaped; anything else is only trimmed.
fn process_value(value: &str) -> String {
    // The length guard keeps a lone `"` (an unclosed quote, reported afterwards) from being
    // sliced; kro would index out of range there.
    if value.len() >= 2 && value.starts_with('"') && value.ends_with('"') {
        return unescape(&value[1..value.len() - 1]);
    }
    value.trim().to_string()
}

/// Only `\"` and `\\` are escapes; any other backslash pair is kept verbatim, and a trailing
/// lone backslash is dropped (as kro does).
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            if c != '"' && c != '\\' {
                out.push('\\');
            }
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn schema_type(schema: &Map<String, Value>) -> String {
    schema
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn push_validation(schema: &mut Map<String, Value>, rule: &str, message: &str) {
    let entry = serde_json::json!({ "rule": rule, "message": message });
    match schema.get_mut("x-kubernetes-validations") {
        Some(Value::Array(rules)) => rules.push(entry),
        _ => {
            schema.insert("x-kubernetes-validations".into(), Value::Array(vec![entry]));
        }
    }
}

fn require_type(schema: &Map<String, Value>, want: &str, marker: &str) -> Result<(), String> {
    let ty = schema_type(schema);
    if ty == want {
        Ok(())
    } else {
        Err(format!(
            "{marker} marker is only valid for {want} types, got type: {ty}"
        ))
    }
}

/// Apply one marker to the field schema `schema` of field `key`; `required` is the parent
/// object's required list.
pub(crate) fn apply_marker(
    schema: &mut Map<String, Value>,
    marker: &Marker,
    key: &str,
    required: &mut Vec<String>,
) -> Result<(), String> {
    let v = marker.value.as_str();
    match marker.kind {
        MarkerKind::Required => {
            let on =
                parse_bool(v).map_err(|e| format!("failed to parse required marker value: {e}"))?;
            if on {
                required.push(key.to_string());
            }
        }
        MarkerKind::Default => {
            let value = parse_default(&schema_type(schema), v)?;
            schema.insert("default".into(), value);
        }
        MarkerKind::Description => {
            schema.insert("description".into(), Value::String(v.to_string()));
        }
        MarkerKind::Minimum | MarkerKind::Maximum => {
            let name = if marker.kind == MarkerKind::Minimum {
                "minimum"
            } else {
                "maximum"
            };
            // "enum value" is kro's wording (sic).
            let f =
                parse_float(v).map_err(|e| format!("failed to parse {name} enum value: {e}"))?;
            schema.insert(name.into(), json_number(f));
        }
        MarkerKind::Validation => {
            if v.trim().is_empty() {
                return Err("validation failed".to_string());
            }
            push_validation(schema, v, "validation failed");
        }
        MarkerKind::Immutable => {
            let on = parse_bool(v)
                .map_err(|e| format!("failed to parse immutable marker value: {e}"))?;
            if on {
                push_validation(schema, "self == oldSelf", "field is immutable");
            }
        }
        MarkerKind::Enum => {
            let ty = schema_type(schema);
            let mut values = Vec::new();
            for item in v.split(',') {
                let item = item.trim();
                if item.is_empty() {
                    return Err("empty enum values are not allowed".to_string());
                }
                match ty.as_str() {
                    "string" => values.push(Value::String(item.to_string())),
                    "integer" => {
                        let n = parse_int(item)
                            .map_err(|e| format!("failed to parse integer enum value: {e}"))?;
                        values.push(Value::from(n));
                    }
                    _ => {
                        return Err(format!(
                        "enum values only supported for string and integer types, got type: {ty}"
                    ))
                    }
                }
            }
            schema.insert("enum".into(), Value::Array(values));
        }
        MarkerKind::Pattern => {
            if v.is_empty() {
                return Err("pattern marker value cannot be empty".to_string());
            }
            require_type(schema, "string", "pattern")?;
            if let Err(e) = regex::Regex::new(v) {
                return Err(format!("invalid pattern regex: {}", regex_error_text(&e)));
            }
            schema.insert("pattern".into(), Value::String(v.to_string()));
        }
        MarkerKind::MinLength | MarkerKind::MaxLength => {
            let name = if marker.kind == MarkerKind::MinLength {
                "minLength"
            } else {
                "maxLength"
            };
            require_type(schema, "string", name)?;
            let n = parse_int(v).map_err(|e| format!("failed to parse {name} value: {e}"))?;
            schema.insert(name.into(), Value::from(n));
        }
        MarkerKind::MinItems | MarkerKind::MaxItems => {
            let name = if marker.kind == MarkerKind::MinItems {
                "minItems"
            } else {
                "maxItems"
            };
            require_type(schema, "array", name)?;
            let n = parse_int(v).map_err(|e| format!("failed to parse {name} value: {e}"))?;
            schema.insert(name.into(), Value::from(n));
        }
        MarkerKind::UniqueItems => {
            let on = parse_bool(v)
                .map_err(|e| format!("failed to parse uniqueItems marker value: {e}"))?;
            require_type(schema, "array", "uniqueItems")?;
            if on {
                if list_type(schema).as_deref() == Some("map") {
                    return Err("cannot set unique when listType is set to map".to_string());
                }
                // kro expresses uniqueness as a set list; structural schemas forbid
                // `uniqueItems: true`, so that keyword is never written.
                schema.insert("x-kubernetes-list-type".into(), Value::String("set".into()));
            }
        }
        MarkerKind::ListType => {
            require_type(schema, "array", "listType")?;
            if !matches!(v, "atomic" | "set" | "map") {
                return Err(format!(
                    "unsupported value for listType: {}, must be one of atomic, set, map",
                    go_quote(v)
                ));
            }
            if list_type(schema).as_deref() == Some("set") && v != "set" {
                return Err(format!(
                    "listType attempting to overwrite set type of uniqueItems=true with {}",
                    go_quote(v)
                ));
            }
            schema.insert(
                "x-kubernetes-list-type".into(),
                Value::String(v.to_string()),
            );
        }
        MarkerKind::ListMapKey => {
            require_type(schema, "array", "listMapKey")?;
            match list_type(schema) {
                None => {
                    return Err(
                        "listMapKey set while listType is unset, listType must be set to map"
                            .to_string(),
                    )
                }
                Some(t) if t != "map" => {
                    return Err(format!(
                        "listMapKey set while listType is set to {t}, listType must be set to map"
                    ))
                }
                Some(_) => {}
            }
            if v.is_empty() {
                return Err("listMapKey marker value cannot be empty".to_string());
            }
            let keys = schema
                .entry("x-kubernetes-list-map-keys")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(keys) = keys {
                if keys.iter().any(|k| k.as_str() == Some(v)) {
                    return Err(format!("duplicate listMapKey {}", go_quote(v)));
                }
                keys.push(Value::String(v.to_string()));
            }
        }
    }
    Ok(())
}

fn list_type(schema: &Map<String, Value>) -> Option<String> {
    schema
        .get("x-kubernetes-list-type")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// kro's per-type default parsing. Strings are wrapped in quotes without JSON escaping (so
/// `\n` in the marker becomes a newline, as the API server decodes it); a value that is not a
/// JSON string once quoted would make kro emit an invalid CRD, so it is an error here.
fn parse_default(ty: &str, v: &str) -> Result<Value, String> {
    match ty {
        "string" => match serde_json::from_str::<Value>(&format!("\"{v}\"")) {
            Ok(s @ Value::String(_)) => Ok(s),
            _ => Err(format!(
                "default value must be a valid string (it is quoted without escaping), got: {v}"
            )),
        },
        "integer" => parse_int(v)
            .map(Value::from)
            .map_err(|_| format!("default value must be a valid integer, got: {v}")),
        "number" => parse_float(v)
            .map(json_number)
            .map_err(|_| format!("default value must be a valid number, got: {v}")),
        "boolean" => parse_bool(v)
            .map(Value::Bool)
            .map_err(|_| format!("default value must be a valid boolean, got: {v}")),
        _ => serde_json::from_str::<Value>(v)
            .map_err(|_| format!("default value must be valid JSON, got: {v}")),
    }
}

/// The Rust regex error on one line (its Display spans several lines with a caret diagram).
fn regex_error_text(e: &regex::Error) -> String {
    let text = e.to_string();
    text.lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("error: ").map(str::to_string))
        .unwrap_or_else(|| text.lines().map(str::trim).collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use MarkerKind::*;

    #[test]
    fn every_marker_key_is_one_the_parser_knows() {
        for k in MARKER_KEYS {
            assert!(MarkerKind::from_key(k).is_some(), "{k}");
        }
        // Sixteen variants, sixteen keys: none is left out of the list.
        assert_eq!(MARKER_KEYS.len(), 16);
    }

    fn m(kind: MarkerKind, value: &str) -> Marker {
        Marker {
            kind,
            value: value.to_string(),
        }
    }

    /// Apply a marker string to a fresh schema of type `ty`; returns the schema and required list.
    fn apply(ty: &str, markers: &str) -> Result<(Value, Vec<String>), String> {
        let mut schema = Map::new();
        schema.insert("type".into(), json!(ty));
        let mut required = Vec::new();
        for marker in parse_markers(markers)? {
            apply_marker(&mut schema, &marker, "field", &mut required)?;
        }
        Ok((Value::Object(schema), required))
    }

    #[test]
    fn tokenizes_simple_and_quoted_markers() {
        assert_eq!(
            parse_markers(r#"required=true description="This is a description""#),
            Ok(vec![
                m(Required, "true"),
                m(Description, "This is a description")
            ])
        );
        assert_eq!(
            parse_markers("  minimum=0.1   maximum=1.5"),
            Ok(vec![m(Minimum, "0.1"), m(Maximum, "1.5")])
        );
        assert_eq!(
            parse_markers(r#"validation="oldself=self" required=true"#),
            Ok(vec![m(Validation, "oldself=self"), m(Required, "true")])
        );
        assert_eq!(
            parse_markers("required =true"),
            Ok(vec![m(Required, "true")])
        );
    }

    #[test]
    fn brackets_and_braces_keep_spaces() {
        assert_eq!(
            parse_markers(
                r#"default={"key": "value"} description="A complex \"description\"" required=true"#
            ),
            Ok(vec![
                m(Default, r#"{"key": "value"}"#),
                m(Description, r#"A complex "description""#),
                m(Required, "true"),
            ])
        );
        assert_eq!(
            parse_markers("default=[1, 2, [3]] required=true"),
            Ok(vec![m(Default, "[1, 2, [3]]"), m(Required, "true")])
        );
    }

    #[test]
    fn only_quote_and_backslash_are_unescaped() {
        assert_eq!(
            parse_markers(
                r#"description="This has \"quotes\" and a \n newline" default="\"quoted\"""#
            ),
            Ok(vec![
                m(Description, r#"This has "quotes" and a \n newline"#),
                m(Default, r#""quoted""#),
            ])
        );
        assert_eq!(
            parse_markers(r#"pattern="^a\.b\\c$""#),
            Ok(vec![m(Pattern, r"^a\.b\c$")])
        );
    }

    #[test]
    fn partially_quoted_value_is_kept_verbatim() {
        assert_eq!(
            parse_markers(r#"description=a"b c"d"#),
            Ok(vec![m(Description, r#"a"b c"d"#)])
        );
    }

    #[test]
    fn tokenizer_errors_use_kro_text() {
        assert_eq!(parse_markers("=value"), Err("empty marker key".into()));
        assert_eq!(
            parse_markers("foo=bar"),
            Err(r#"invalid marker key "foo": unknown marker: foo"#.into())
        );
        assert_eq!(
            parse_markers("required"),
            Err("marker key 'required' without a value".into())
        );
        assert_eq!(
            parse_markers("required=true optional"),
            Err("marker key 'optional' without a value".into())
        );
        assert_eq!(
            parse_markers(r#"description="Unclosed quote"#),
            Err("unclosed quote".into())
        );
        assert_eq!(
            parse_markers(r#"default={"unclosed": "brace""#),
            Err("unclosed bracket/brace".into())
        );
        assert_eq!(
            parse_markers("default=1]"),
            Err("unmatched closing bracket/brace".into())
        );
        assert_eq!(
            parse_markers(r#"description=""#),
            Err("unclosed quote".into())
        );
    }

    #[test]
    fn trailing_or_empty_marker_text_has_no_value_like_kro() {
        // kro flushes a marker on whitespace, so trailing whitespace leaves an empty key behind.
        assert_eq!(
            parse_markers("required=true "),
            Err("marker key '' without a value".into())
        );
        assert_eq!(
            parse_markers(""),
            Err("marker key '' without a value".into())
        );
        // A space right after `=` ends the marker with an empty value.
        assert_eq!(
            parse_markers("default= 5"),
            Err("marker key '5' without a value".into())
        );
    }

    #[test]
    fn required_marker() {
        assert_eq!(apply("string", "required=true").unwrap().1, vec!["field"]);
        assert!(apply("string", "required=false").unwrap().1.is_empty());
        assert_eq!(
            apply("string", "required=yes").unwrap_err(),
            "failed to parse required marker value: strconv.ParseBool: parsing \"yes\": invalid syntax"
        );
    }

    #[test]
    fn default_marker_parses_per_type() {
        assert_eq!(
            apply("string", "default=foo").unwrap().0["default"],
            json!("foo")
        );
        assert_eq!(
            apply("string", r#"default="a b""#).unwrap().0["default"],
            json!("a b")
        );
        // No JSON escaping: the API server decodes `\n` inside the quoted raw value.
        assert_eq!(
            apply("string", r"default=a\nb").unwrap().0["default"],
            json!("a\nb")
        );
        assert_eq!(
            apply("integer", "default=10").unwrap().0["default"],
            json!(10)
        );
        assert_eq!(
            apply("number", "default=0.5").unwrap().0["default"],
            json!(0.5)
        );
        assert_eq!(apply("number", "default=2").unwrap().0["default"], json!(2));
        assert_eq!(
            apply("boolean", "default=true").unwrap().0["default"],
            json!(true)
        );
        assert_eq!(
            apply("array", r#"default=["a", "b"]"#).unwrap().0["default"],
            json!(["a", "b"])
        );
        assert_eq!(
            apply("object", r#"default={"a": {"b": 1}}"#).unwrap().0["default"],
            json!({"a": {"b": 1}})
        );
    }

    #[test]
    fn default_marker_errors() {
        assert_eq!(
            apply("integer", "default=abc").unwrap_err(),
            "default value must be a valid integer, got: abc"
        );
        assert_eq!(
            apply("integer", "default=1.5").unwrap_err(),
            "default value must be a valid integer, got: 1.5"
        );
        assert_eq!(
            apply("number", "default=x").unwrap_err(),
            "default value must be a valid number, got: x"
        );
        assert_eq!(
            apply("boolean", "default=yes").unwrap_err(),
            "default value must be a valid boolean, got: yes"
        );
        assert_eq!(
            apply("array", "default=[1,").unwrap_err(),
            "unclosed bracket/brace"
        );
        assert_eq!(
            apply("object", "default={a}").unwrap_err(),
            "default value must be valid JSON, got: {a}"
        );
        assert!(apply("string", r#"default="\"quoted\"""#)
            .unwrap_err()
            .starts_with("default value must be a valid string"));
    }

    #[test]
    fn description_minimum_maximum() {
        let (s, _) = apply(
            "integer",
            r#"description="Replica count" minimum=1 maximum=10.5"#,
        )
        .unwrap();
        assert_eq!(
            s,
            json!({"type": "integer", "description": "Replica count", "minimum": 1, "maximum": 10.5})
        );
        // Bounds are not type-checked by kro.
        assert!(apply("string", "minimum=0").is_ok());
        assert_eq!(
            apply("integer", "minimum=low").unwrap_err(),
            "failed to parse minimum enum value: strconv.ParseFloat: parsing \"low\": invalid syntax"
        );
        assert_eq!(
            apply("integer", "maximum=high").unwrap_err(),
            "failed to parse maximum enum value: strconv.ParseFloat: parsing \"high\": invalid syntax"
        );
    }

    #[test]
    fn enum_marker() {
        assert_eq!(
            apply("string", r#"enum="debug, info,warn""#).unwrap().0["enum"],
            json!(["debug", "info", "warn"])
        );
        assert_eq!(
            apply("integer", "enum=1,2,3").unwrap().0["enum"],
            json!([1, 2, 3])
        );
        assert_eq!(
            apply("string", r#"enum="a,,b""#).unwrap_err(),
            "empty enum values are not allowed"
        );
        assert_eq!(
            apply("boolean", "enum=true,false").unwrap_err(),
            "enum values only supported for string and integer types, got type: boolean"
        );
        assert_eq!(
            apply("number", "enum=1").unwrap_err(),
            "enum values only supported for string and integer types, got type: number"
        );
        assert_eq!(
            apply("integer", "enum=1,x").unwrap_err(),
            "failed to parse integer enum value: strconv.ParseInt: parsing \"x\": invalid syntax"
        );
    }

    #[test]
    fn pattern_marker() {
        assert_eq!(
            apply("string", r#"pattern="^[a-z]+\.io$""#).unwrap().0["pattern"],
            json!(r"^[a-z]+\.io$")
        );
        assert_eq!(
            apply("string", r#"pattern="""#).unwrap_err(),
            "pattern marker value cannot be empty"
        );
        assert_eq!(
            apply("integer", "pattern=^a$").unwrap_err(),
            "pattern marker is only valid for string types, got type: integer"
        );
        assert!(apply("string", r#"pattern="(abc""#)
            .unwrap_err()
            .starts_with("invalid pattern regex: "));
    }

    #[test]
    fn length_and_item_count_markers() {
        let (s, _) = apply("string", "minLength=1 maxLength=63").unwrap();
        assert_eq!(
            (s["minLength"].clone(), s["maxLength"].clone()),
            (json!(1), json!(63))
        );
        let (s, _) = apply("array", "minItems=1 maxItems=5").unwrap();
        assert_eq!(
            (s["minItems"].clone(), s["maxItems"].clone()),
            (json!(1), json!(5))
        );
        assert_eq!(
            apply("integer", "minLength=1").unwrap_err(),
            "minLength marker is only valid for string types, got type: integer"
        );
        assert_eq!(
            apply("array", "maxLength=1").unwrap_err(),
            "maxLength marker is only valid for string types, got type: array"
        );
        assert_eq!(
            apply("string", "minItems=1").unwrap_err(),
            "minItems marker is only valid for array types, got type: string"
        );
        assert_eq!(
            apply("object", "maxItems=1").unwrap_err(),
            "maxItems marker is only valid for array types, got type: object"
        );
        assert_eq!(
            apply("string", "minLength=x").unwrap_err(),
            "failed to parse minLength value: strconv.ParseInt: parsing \"x\": invalid syntax"
        );
    }

    #[test]
    fn unique_items_becomes_a_set_list() {
        let (s, _) = apply("array", "uniqueItems=true").unwrap();
        assert_eq!(s, json!({"type": "array", "x-kubernetes-list-type": "set"}));
        let (s, _) = apply("array", "uniqueItems=false").unwrap();
        assert_eq!(s, json!({"type": "array"}));
        assert_eq!(
            apply("string", "uniqueItems=true").unwrap_err(),
            "uniqueItems marker is only valid for array types, got type: string"
        );
        assert_eq!(
            apply("array", "listType=map uniqueItems=true").unwrap_err(),
            "cannot set unique when listType is set to map"
        );
    }

    #[test]
    fn list_type_and_map_keys() {
        let (s, _) = apply("array", "listType=map listMapKey=name listMapKey=port").unwrap();
        assert_eq!(
            s,
            json!({"type": "array", "x-kubernetes-list-type": "map",
                   "x-kubernetes-list-map-keys": ["name", "port"]})
        );
        assert_eq!(
            apply("array", "listType=atomic").unwrap().0["x-kubernetes-list-type"],
            "atomic"
        );
        assert!(apply("array", "uniqueItems=true listType=set").is_ok());
        assert!(apply("array", "listType=bag")
            .unwrap_err()
            .starts_with("unsupported value for listType"));
        assert!(apply("array", "uniqueItems=true listType=map")
            .unwrap_err()
            .starts_with("listType attempting to overwrite set type of"));
        assert_eq!(
            apply("string", "listType=set").unwrap_err(),
            "listType marker is only valid for array types, got type: string"
        );
        assert_eq!(
            apply("array", "listMapKey=name").unwrap_err(),
            "listMapKey set while listType is unset, listType must be set to map"
        );
        assert_eq!(
            apply("array", "listType=set listMapKey=name").unwrap_err(),
            "listMapKey set while listType is set to set, listType must be set to map"
        );
        assert_eq!(
            apply("array", "listType=map listMapKey=name listMapKey=name").unwrap_err(),
            "duplicate listMapKey \"name\""
        );
    }

    #[test]
    fn immutable_and_validation_append_rules_in_order() {
        let (s, _) = apply("string", r#"immutable=true validation="self.size() > 2""#).unwrap();
        assert_eq!(
            s["x-kubernetes-validations"],
            json!([
                {"rule": "self == oldSelf", "message": "field is immutable"},
                {"rule": "self.size() > 2", "message": "validation failed"}
            ])
        );
        let (s, _) = apply("string", "immutable=false").unwrap();
        assert!(s.get("x-kubernetes-validations").is_none());
        assert_eq!(
            apply("string", r#"validation="  ""#).unwrap_err(),
            "validation failed"
        );
        assert!(apply("string", "immutable=maybe")
            .unwrap_err()
            .starts_with("failed to parse immutable marker value: "));
    }
}
