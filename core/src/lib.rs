//! kiln-core: offline rendering of templated Kubernetes definitions.
pub mod expr;
pub mod graph;
pub mod schema;
