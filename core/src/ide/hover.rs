//! Hover: the CEL type of a `${…}` expression or part of it, a `schema.spec.*` field's
//! SimpleSchema declaration, a resource id's kind and dependencies, a component type's
//! parameter schema, a kurel value's declaration.

use super::{Hover, Texts};

/// What to show at `offset` of `file`, if anything.
pub fn hover(_texts: &Texts, _file: &str, _offset: usize) -> Option<Hover> {
    None
}
