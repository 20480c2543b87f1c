//! `kiln-cmp`: kiln as an Argo CD config-management plugin (CMP v2, a sidecar of the
//! repo-server). See docs/argocd.md.
//!
//! Argo CD runs three commands, each in a fresh copy of the repository with the application's
//! path as working directory: `discover` (does kiln render this directory?), `parameters` (what
//! the UI offers) and `generate` (the manifests). Each is a thin translation: the documented
//! environment ([`env`](mod@env)) becomes options ([`options`]), the options one core request
//! ([`generate`]), confined to the checkout.

#![deny(missing_docs)]
// Diagnostics are large by design (file, line, path, hint), as in core.
#![allow(clippy::result_large_err)]

pub mod discover;
pub mod env;
pub mod generate;
pub mod kit;
pub mod kustomize;
pub mod options;
pub mod parameters;

/// The `plugin.yaml` kiln-cmp ships (`deploy/argocd/plugin.yaml`), as `kiln-cmp plugin-yaml`
/// prints it.
pub const PLUGIN_YAML: &str = include_str!("../../deploy/argocd/plugin.yaml");
