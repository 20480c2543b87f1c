//! Expressions: `${…}` scanning, the CEL environment, values and references.
pub mod scan;
