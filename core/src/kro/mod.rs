//! The kro front-end: ResourceGraphDefinitions and their instances.
//!
//! [`rgd::load`] lowers a ResourceGraphDefinition into the graph IR with kro's checks;
//! [`instance::prepare`] defaults and validates an instance of the kind it defines, which the
//! evaluator then renders.

mod conditions;
pub mod crd;
pub mod definitions;
pub mod instance;
pub mod nesting;
mod plural;
pub mod rgd;
pub(crate) mod typecheck;

pub use rgd::{is_rgd, load, Rgd};
