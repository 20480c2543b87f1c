//! kiln-bench: the benchmark harness of issue 6 (see bench/README.md).
//!
//! [`fleet`] generates synthetic fleets (and [`kustomize`] their kustomize equivalent, both from
//! the instance attributes in [`apps`]), [`suite`] measures them with [`measure`], and [`report`]
//! prints the table, the goals and the JSON. The binary (`src/main.rs`) only parses flags and
//! wires these together; the criterion benches in `benches/` reuse [`fleet`] for their inputs.

pub mod apps;
pub mod doors;
pub mod fleet;
pub mod instructions;
pub mod kcl;
pub mod kustomize;
pub mod lsp;
pub mod measure;
pub mod report;
pub mod suite;
