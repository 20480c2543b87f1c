//! SimpleSchema → OpenAPI, defaulting and validation of instances.
//!
//! kro turns the SimpleSchema of an RGD (`spec.schema.spec` plus `spec.schema.types`) into the
//! OpenAPI schema of a generated CRD, and then relies on the API server to default and validate
//! instances against it. This module does all three offline:
//!
//! - [`simple_to_openapi`]: the SimpleSchema → structural schema conversion, matching kro's
//!   output and error texts;
//! - [`apply_defaults`]: the API server's structural defaulting;
//! - [`validate()`]: the API server's schema validation, with unknown fields reported rather than
//!   silently pruned.

mod custom_types;
mod defaults;
mod markers;
mod path;
mod simple;
mod strconv;
mod typeexpr;
mod validate;

pub use defaults::{apply_defaults, DefaultsPlan};
pub use markers::MARKER_KEYS;
pub use simple::{simple_to_openapi, SchemaError};
pub use validate::{validate, validate_at, Violation};
