//! kiln-core: offline rendering of templated Kubernetes definitions.
pub mod diag;
pub mod document;
pub mod expr;
pub mod fieldpath;
pub mod graph;
pub mod schema;
pub mod source;
