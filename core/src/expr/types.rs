//! CEL types as the static checker infers them, and kro's rules for when an expression's type fits
//! the field it is written into.
//!
//! Object types come from OpenAPI schemas and are resolved lazily ([`SchemaNode`]): a Deployment's
//! type is its schema, and `deployment.spec.replicas` is found by walking it. Wherever the checker
//! cannot know a type it says `dyn`, which fits everything: the checker must never reject a valid
//! template, so it only reports what is certainly wrong.

use std::fmt;

use crate::openapi::{NodeChild, SchemaNode};

/// A CEL type.
#[derive(Debug, Clone)]
pub enum Type {
    /// Unknown or deliberately dynamic: fits everything.
    Dyn,
    /// `null_type`.
    Null,
    /// `bool`.
    Bool,
    /// `int`.
    Int,
    /// `uint`.
    Uint,
    /// `double`.
    Double,
    /// `string`.
    String,
    /// `bytes`.
    Bytes,
    /// `google.protobuf.Duration`.
    Duration,
    /// `google.protobuf.Timestamp`.
    Timestamp,
    /// `list(T)`.
    List(Box<Type>),
    /// `map(K, V)`.
    Map(Box<Type>, Box<Type>),
    /// `optional_type(T)`.
    Optional(Box<Type>),
    /// An object described by an OpenAPI schema with named fields.
    Object(SchemaNode),
    /// Kubernetes' int-or-string.
    IntOrString,
    /// A type value (`type(x)`).
    TypeValue,
    /// A library object such as `net.IP` or `kubernetes.Quantity`.
    Opaque(&'static str),
}

impl Type {
    /// `list(t)`.
    pub fn list(t: Type) -> Type {
        Type::List(Box::new(t))
    }

    /// `map(k, v)`.
    pub fn map(k: Type, v: Type) -> Type {
        Type::Map(Box::new(k), Box::new(v))
    }

    /// `optional_type(t)`.
    pub fn optional(t: Type) -> Type {
        Type::Optional(Box::new(t))
    }

    /// Whether this is `dyn`.
    pub fn is_dyn(&self) -> bool {
        matches!(self, Type::Dyn)
    }

    /// The type of values described by a schema node.
    pub fn of_node(node: &SchemaNode) -> Type {
        if node.preserves_unknown() {
            return Type::Dyn;
        }
        if node.int_or_string() {
            return Type::IntOrString;
        }
        let types = node.expected_types();
        if types.len() != 1 {
            // oneOf/anyOf of several types (quantities), or none: nothing certain.
            return Type::Dyn;
        }
        match types[0].as_str() {
            "boolean" => Type::Bool,
            "integer" => Type::Int,
            "number" => Type::Double,
            "string" => Type::String,
            "array" => match node.items() {
                NodeChild::Node(n) => Type::list(Type::of_node(&n)),
                _ => Type::list(Type::Dyn),
            },
            "object" => {
                if node.has_fields() {
                    Type::Object(node.clone())
                } else {
                    match node.map_values() {
                        Some(NodeChild::Node(n)) => Type::map(Type::String, Type::of_node(&n)),
                        _ => Type::Dyn,
                    }
                }
            }
            _ => Type::Dyn,
        }
    }

    /// The type of a child reached through a schema lookup.
    pub fn of_child(c: &NodeChild) -> Option<Type> {
        match c {
            NodeChild::Node(n) => Some(Type::of_node(n)),
            NodeChild::Anything => Some(Type::Dyn),
            NodeChild::Missing => None,
        }
    }

    /// The element type when iterating (`list(T)` → T, `map(K, V)` → K).
    pub fn element(&self) -> Type {
        match self {
            Type::List(t) => (**t).clone(),
            Type::Map(k, _) => (**k).clone(),
            Type::Object(_) => Type::String,
            _ => Type::Dyn,
        }
    }

    /// Whether the type is one of the scalar types that a wrong operand certainly is.
    pub fn is_concrete_scalar(&self) -> bool {
        matches!(
            self,
            Type::Null
                | Type::Bool
                | Type::Int
                | Type::Uint
                | Type::Double
                | Type::String
                | Type::Bytes
                | Type::Duration
                | Type::Timestamp
        )
    }

    /// Whether the type is certainly not a `T` for the given scalar check (dyn and unions pass).
    pub fn certainly_not(&self, ok: &[&Type]) -> bool {
        if matches!(self, Type::Dyn) || ok.iter().any(|t| t.same_kind(self)) {
            return false;
        }
        match self {
            Type::IntOrString => !ok
                .iter()
                .any(|t| matches!(t, Type::Int | Type::String | Type::IntOrString)),
            Type::Optional(_) => false,
            _ => true,
        }
    }

    /// Same type constructor (element types not compared).
    pub fn same_kind(&self, other: &Type) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
            || (matches!(self, Type::Object(_)) && matches!(other, Type::Map(..)))
            || (matches!(self, Type::Map(..)) && matches!(other, Type::Object(_)))
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Dyn => f.write_str("dyn"),
            Type::Null => f.write_str("null_type"),
            Type::Bool => f.write_str("bool"),
            Type::Int => f.write_str("int"),
            Type::Uint => f.write_str("uint"),
            Type::Double => f.write_str("double"),
            Type::String => f.write_str("string"),
            Type::Bytes => f.write_str("bytes"),
            Type::Duration => f.write_str("google.protobuf.Duration"),
            Type::Timestamp => f.write_str("google.protobuf.Timestamp"),
            Type::List(t) => write!(f, "list({t})"),
            Type::Map(k, v) => write!(f, "map({k}, {v})"),
            Type::Optional(t) => write!(f, "optional_type({t})"),
            Type::Object(_) => f.write_str("object"),
            Type::IntOrString => f.write_str("int-or-string"),
            Type::TypeValue => f.write_str("type"),
            Type::Opaque(n) => f.write_str(n),
        }
    }
}

/// Why an expression's type does not fit a field.
pub type Mismatch = String;

/// kro's compatibility rule (`pkg/cel/compatibility.go`): CEL assignability first, then structural:
/// `dyn` matches anything, optionals are unwrapped, lists and maps compare element types, an object
/// produced by an expression must only have fields the target declares, and maps and objects fit
/// each other when their contents do.
pub fn compatible(got: &Type, want: &Type) -> Result<(), Mismatch> {
    compatible_at(got, want, 0)
}

/// Deep object comparisons stop here; below, anything is accepted.
const MAX_DEPTH: usize = 8;

fn compatible_at(got: &Type, want: &Type, depth: usize) -> Result<(), Mismatch> {
    if depth > MAX_DEPTH {
        return Ok(());
    }
    let kind = || {
        Err(format!(
            "type kind mismatch: got {}, expected {}",
            got, want
        ))
    };
    match (got, want) {
        (Type::Dyn, _) | (_, Type::Dyn) => Ok(()),
        (Type::Optional(g), w) => compatible_at(g, w, depth),
        (g, Type::Optional(w)) => compatible_at(g, w, depth),
        // A null leaves the field unset (kro drops it), which every field allows.
        (Type::Null, _) => Ok(()),
        (Type::Int | Type::String | Type::IntOrString, Type::IntOrString) => Ok(()),
        (Type::IntOrString, Type::Int | Type::String) => Ok(()),
        (Type::List(g), Type::List(w)) => compatible_at(g, w, depth + 1),
        (Type::Map(_, g), Type::Map(_, w)) => compatible_at(g, w, depth + 1),
        // Maps and objects fit each other (kro: map↔struct when compatible). Which keys a map
        // holds is not known statically, so nothing here is certainly wrong.
        (Type::Map(..), Type::Object(_)) | (Type::Object(_), Type::Map(..)) => Ok(()),
        (Type::Object(g), Type::Object(w)) => {
            // Every field the expression's object has must exist in the target.
            let Some(props) = g.value().get("properties").and_then(|p| p.as_object()) else {
                return Ok(());
            };
            for name in props.keys() {
                match w.field(name) {
                    NodeChild::Missing => {
                        return Err(format!(
                            "field {name:?} exists in output but not in expected type"
                        ))
                    }
                    NodeChild::Anything => {}
                    NodeChild::Node(wn) => {
                        if let NodeChild::Node(gn) = g.field(name) {
                            compatible_at(&Type::of_node(&gn), &Type::of_node(&wn), depth + 1)?;
                        }
                    }
                }
            }
            Ok(())
        }
        (g, w) if g.same_kind(w) => Ok(()),
        _ => kind(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dyn_and_optionals_fit() {
        assert!(compatible(&Type::Dyn, &Type::Int).is_ok());
        assert!(compatible(&Type::Int, &Type::Dyn).is_ok());
        assert!(compatible(&Type::optional(Type::Int), &Type::Int).is_ok());
        assert!(compatible(&Type::Int, &Type::IntOrString).is_ok());
        assert!(compatible(&Type::String, &Type::IntOrString).is_ok());
    }

    #[test]
    fn kinds_must_agree() {
        assert_eq!(
            compatible(&Type::String, &Type::Int).unwrap_err(),
            "type kind mismatch: got string, expected int"
        );
        // CEL has no implicit int → double conversion.
        let refused = compatible(&Type::Int, &Type::Double).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("type kind mismatch: got int, expected double"),
            "{refused}"
        );
        assert!(compatible(&Type::list(Type::String), &Type::list(Type::String)).is_ok());
        let refused =
            compatible(&Type::list(Type::Int), &Type::list(Type::String)).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("type kind mismatch: got int, expected string"),
            "{refused}"
        );
        let refused = compatible(&Type::map(Type::String, Type::Int), &Type::list(Type::Int))
            .expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("type kind mismatch: got map(string, int), expected list(int)"),
            "{refused}"
        );
    }

    #[test]
    fn display_uses_cel_names() {
        assert_eq!(
            Type::map(Type::String, Type::list(Type::Int)).to_string(),
            "map(string, list(int))"
        );
        assert_eq!(
            Type::optional(Type::Bool).to_string(),
            "optional_type(bool)"
        );
    }
}
