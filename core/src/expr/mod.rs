//! Expressions: `${…}` scanning, the CEL environment, values and references.
pub mod budget;
pub mod cel;
pub mod check;
#[cfg(test)]
mod cost_tests;
mod format_size;
pub mod library;
mod macros;
mod meter;
mod pratt;
pub mod reads;
pub mod refs;
pub mod scan;
pub mod types;
pub mod value;
mod weight;
