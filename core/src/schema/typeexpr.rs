//! The type half of a SimpleSchema field string (`[]map[string]Person | required=true`).
//!
//! Mirrors kro's `parse.go`: the field is split on the first `|`, the type is trimmed, and
//! `[]T` / `map[string]T` nest at most 16 levels. Any identifier that is not a keyword is a
//! reference to a custom type; whether it exists is only known when the schema is built.

use std::collections::BTreeSet;

use super::path::go_quote;

/// kro's `maxTypeNestingDepth`: guards against `[][][]…` blowing the stack.
const MAX_TYPE_NESTING_DEPTH: usize = 16;

/// A parsed SimpleSchema type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum TypeExpr {
    /// `string`, `integer`, `boolean`, or `float`; holds the OpenAPI `type` (`float` → `number`).
    Atomic(&'static str),
    /// `object`: a free-form object whose unknown fields are preserved.
    Object,
    /// `[]T`.
    Slice(Box<TypeExpr>),
    /// `map[string]T`.
    Map(Box<TypeExpr>),
    /// A name to resolve against `spec.schema.types`.
    Custom(String),
}

impl TypeExpr {
    /// The custom type names this type refers to, for ordering `types` by dependency.
    pub(crate) fn deps(&self, out: &mut BTreeSet<String>) {
        match self {
            TypeExpr::Atomic(_) | TypeExpr::Object => {}
            TypeExpr::Slice(t) | TypeExpr::Map(t) => t.deps(out),
            TypeExpr::Custom(name) => {
                out.insert(name.clone());
            }
        }
    }
}

/// Split a field string into its type part and (when there is a `|`) its marker part.
pub(crate) fn split_field(field: &str) -> (&str, Option<&str>) {
    match field.split_once('|') {
        Some((ty, markers)) => (ty, Some(markers)),
        None => (field, None),
    }
}

/// Parse the type portion of a field string (everything before the first `|`).
pub(crate) fn parse_type_string(field: &str) -> Result<TypeExpr, String> {
    let (ty, _) = split_field(field);
    let ty = ty.trim();
    if ty.is_empty() {
        return Err("empty type".to_string());
    }
    parse_type(ty, 0)
}

fn parse_type(s: &str, depth: usize) -> Result<TypeExpr, String> {
    // kro checks the depth before trimming, so the quoted remainder keeps its spaces.
    if depth > MAX_TYPE_NESTING_DEPTH {
        return Err(format!(
            "type nesting too deep (max {MAX_TYPE_NESTING_DEPTH}): {}",
            go_quote(s)
        ));
    }
    let s = s.trim();
    match s {
        "string" => return Ok(TypeExpr::Atomic("string")),
        "integer" => return Ok(TypeExpr::Atomic("integer")),
        "boolean" => return Ok(TypeExpr::Atomic("boolean")),
        "float" => return Ok(TypeExpr::Atomic("number")),
        "object" => return Ok(TypeExpr::Object),
        _ => {}
    }
    if let Some(elem) = s.strip_prefix("[]") {
        if elem.is_empty() {
            return Err("empty slice element type".to_string());
        }
        return Ok(TypeExpr::Slice(Box::new(parse_type(elem, depth + 1)?)));
    }
    if s.starts_with("map[") {
        let Some(rest) = s.strip_prefix("map[string]") else {
            return Err("map key must be string".to_string());
        };
        let rest = rest.trim();
        if rest.is_empty() {
            return Err("map value type is required".to_string());
        }
        return Ok(TypeExpr::Map(Box::new(parse_type(rest, depth + 1)?)));
    }
    Ok(TypeExpr::Custom(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use TypeExpr::*;

    fn slice(t: TypeExpr) -> TypeExpr {
        Slice(Box::new(t))
    }
    fn map(t: TypeExpr) -> TypeExpr {
        Map(Box::new(t))
    }

    #[test]
    fn atomic_and_object_keywords() {
        assert_eq!(parse_type_string("string"), Ok(Atomic("string")));
        assert_eq!(parse_type_string("integer"), Ok(Atomic("integer")));
        assert_eq!(parse_type_string("boolean"), Ok(Atomic("boolean")));
        assert_eq!(parse_type_string("float"), Ok(Atomic("number")));
        assert_eq!(parse_type_string("object"), Ok(Object));
    }

    #[test]
    fn number_is_not_a_keyword() {
        // kro treats `number` as a custom type name; it fails later as `unknown type: number`.
        assert_eq!(parse_type_string("number"), Ok(Custom("number".into())));
    }

    #[test]
    fn collections_nest() {
        assert_eq!(parse_type_string("[]string"), Ok(slice(Atomic("string"))));
        assert_eq!(
            parse_type_string("[][][]integer"),
            Ok(slice(slice(slice(Atomic("integer")))))
        );
        assert_eq!(
            parse_type_string("map[string]map[string]string"),
            Ok(map(map(Atomic("string"))))
        );
        assert_eq!(
            parse_type_string("[]map[string]Person"),
            Ok(slice(map(Custom("Person".into()))))
        );
        assert_eq!(
            parse_type_string("map[string][]integer"),
            Ok(map(slice(Atomic("integer"))))
        );
        assert_eq!(
            parse_type_string("map[string]  float"),
            Ok(map(Atomic("number")))
        );
    }

    #[test]
    fn type_is_cut_at_first_pipe_and_trimmed() {
        assert_eq!(
            parse_type_string("  []string | required=true | x"),
            Ok(slice(Atomic("string")))
        );
        assert_eq!(split_field("a | b | c"), ("a ", Some(" b | c")));
        assert_eq!(split_field("a"), ("a", None));
    }

    #[test]
    fn grammar_errors_use_kro_text() {
        assert_eq!(parse_type_string(""), Err("empty type".into()));
        assert_eq!(parse_type_string("   "), Err("empty type".into()));
        assert_eq!(
            parse_type_string("| required=true"),
            Err("empty type".into())
        );
        assert_eq!(
            parse_type_string("[]"),
            Err("empty slice element type".into())
        );
        assert_eq!(
            parse_type_string("[][]"),
            Err("empty slice element type".into())
        );
        assert_eq!(
            parse_type_string("map[integer]string"),
            Err("map key must be string".into())
        );
        assert_eq!(
            parse_type_string("map[stringPerson"),
            Err("map key must be string".into())
        );
        assert_eq!(
            parse_type_string("map[string]"),
            Err("map value type is required".into())
        );
        assert_eq!(
            parse_type_string("map[string] "),
            Err("map value type is required".into())
        );
        assert_eq!(
            parse_type_string("map[string][]"),
            Err("empty slice element type".into())
        );
    }

    #[test]
    fn nesting_depth_limit_is_sixteen() {
        let ok = format!("{}string", "[]".repeat(16));
        assert!(parse_type_string(&ok).is_ok());
        let too_deep = format!("{}string", "[]".repeat(17));
        assert_eq!(
            parse_type_string(&too_deep),
            Err("type nesting too deep (max 16): \"string\"".into())
        );
        let maps = format!("{}string", "map[string]".repeat(17));
        assert!(parse_type_string(&maps)
            .unwrap_err()
            .starts_with("type nesting too deep (max 16)"));
    }

    #[test]
    fn deps_collects_custom_names() {
        let mut out = BTreeSet::new();
        parse_type_string("map[string][]Person")
            .unwrap()
            .deps(&mut out);
        parse_type_string("Address").unwrap().deps(&mut out);
        parse_type_string("[]string").unwrap().deps(&mut out);
        assert_eq!(
            out.into_iter().collect::<Vec<_>>(),
            vec!["Address".to_string(), "Person".to_string()]
        );
    }
}
