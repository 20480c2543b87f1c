//! Completion inside `${…}` (fields, resource ids, CEL functions, context variables, kurel
//! values) and of SimpleSchema markers after `|`.

use super::{Completion, Texts};

/// The completions at `offset` of `file`.
pub fn complete(_texts: &Texts, _file: &str, _offset: usize) -> Vec<Completion> {
    Vec::new()
}
