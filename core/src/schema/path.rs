//! Field paths and Go-compatible quoting for messages.
//!
//! Paths print the way kro's `fieldpath.Build` prints them: dots between keys, `[i]` for list
//! indexes, and `["key"]` (Go `%q` quoting) for keys that contain a dot or are empty, so a path can
//! be pasted back into a CEL expression.

use serde_json::Value;

/// One step of a field path. Ordering sorts keys by text and indexes numerically, so sorting
/// paths by their segments gives `ports[2]` before `ports[10]`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// A path under construction; cheap to extend because every child clones its parent once.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Path(pub(crate) Vec<Seg>);

impl Path {
    /// A path starting with the given keys (e.g. `["spec"]`).
    pub(crate) fn of(keys: &[&str]) -> Self {
        Path(keys.iter().map(|k| Seg::Key((*k).to_string())).collect())
    }

    pub(crate) fn key(&self, k: &str) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Key(k.to_string()));
        p
    }

    /// Validation builds indexes through its own trail; tests build paths directly.
    #[cfg(test)]
    pub(crate) fn index(&self, i: usize) -> Self {
        let mut p = self.clone();
        p.0.push(Seg::Index(i));
        p
    }

    pub(crate) fn is_root(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::fmt::Display for Path {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, seg) in self.0.iter().enumerate() {
            match seg {
                Seg::Index(n) => write!(f, "[{n}]")?,
                Seg::Key(k) if k.is_empty() || k.contains('.') => write!(f, "[{}]", go_quote(k))?,
                Seg::Key(k) => {
                    if i > 0 {
                        f.write_str(".")?;
                    }
                    f.write_str(k)?;
                }
            }
        }
        Ok(())
    }
}

/// Quote a string the way Go's `%q` / `strconv.Quote` does, so messages copied from kro
/// (`invalid marker key "x"`, `type nesting too deep (max 16): "…"`) read identically.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() => {
                if (c as u32) <= 0xffff {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The YAML name of a value's kind, used where kro prints Go's `%T` (`unexpected type: int`).
pub(crate) fn yaml_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "sequence",
        Value::Object(_) => "mapping",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_print_like_kro_fieldpath_build() {
        let p = Path::of(&["spec"]).key("ports").index(0).key("name");
        assert_eq!(p.to_string(), "spec.ports[0].name");
        let p = Path::of(&["spec", "labels"]).key("app.kubernetes.io/name");
        assert_eq!(p.to_string(), r#"spec.labels["app.kubernetes.io/name"]"#);
        assert_eq!(Path::of(&["spec"]).key("").to_string(), r#"spec[""]"#);
        assert_eq!(
            Path::default().key("a.b").key("c").to_string(),
            r#"["a.b"].c"#
        );
        assert_eq!(Path::default().to_string(), "");
    }

    #[test]
    fn path_order_is_numeric_for_indexes() {
        let a = Path::of(&["spec", "ports"]).index(2);
        let b = Path::of(&["spec", "ports"]).index(10);
        assert!(a < b);
    }

    #[test]
    fn go_quote_escapes_like_strconv_quote() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("x\ny\t"), r#""x\ny\t""#);
        assert_eq!(go_quote("\u{1}"), r#""\x01""#);
        assert_eq!(go_quote("héllo"), "\"héllo\"");
    }

    #[test]
    fn yaml_type_names() {
        assert_eq!(yaml_type_name(&json!(1)), "int");
        assert_eq!(yaml_type_name(&json!(1.5)), "float");
        assert_eq!(yaml_type_name(&json!(null)), "null");
        assert_eq!(yaml_type_name(&json!([1])), "sequence");
        assert_eq!(yaml_type_name(&json!(true)), "bool");
    }
}
