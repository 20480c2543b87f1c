//! kiln-core: offline rendering of templated Kubernetes definitions.
//!
//! The pipeline is `source → document → front-end → graph IR → evaluate → output`:
//! [`source`] reads files confined to a root, [`document`] parses them, a front-end ([`kro`]) lowers
//! definitions into the [`ir`], [`render`] evaluates one unit (an instance) over it, and [`output`]
//! writes the objects. [`pipeline::render`] runs the whole thing on parsed documents; the doors (the
//! `kiln` CLI and the plugins) only translate their protocol into that call.
//!
//! ```
//! use kiln_core::document::{parse_file, YamlLimits};
//! use kiln_core::pipeline::{render, Options};
//!
//! let text = r#"
//! apiVersion: kro.run/v1alpha1
//! kind: ResourceGraphDefinition
//! metadata: {name: apps}
//! spec:
//!   schema:
//!     apiVersion: v1alpha1
//!     kind: App
//!     spec:
//!       name: string | required=true
//!       replicas: integer | default=2
//!   resources:
//!     - id: config
//!       template:
//!         apiVersion: v1
//!         kind: ConfigMap
//!         metadata: {name: "${schema.spec.name}-config"}
//!         data: {replicas: "${string(schema.spec.replicas)}"}
//! ---
//! apiVersion: kro.run/v1alpha1
//! kind: App
//! metadata: {name: shop, namespace: web}
//! spec: {name: shop}
//! "#;
//! let docs = parse_file("app.yaml", text.to_string(), &YamlLimits::default()).unwrap();
//! let out = render(&docs, &Options::default()).unwrap();
//! assert_eq!(out.objects[0]["metadata"]["name"], "shop-config");
//! assert_eq!(out.objects[0]["metadata"]["namespace"], "web");
//! assert_eq!(out.objects[0]["data"]["replicas"], "2");
//! ```
#![deny(missing_docs)]
// Module docs name the private helpers they are about; developers read them with
// `cargo doc --document-private-items` (as .ci/run builds them), where those links resolve.
#![allow(rustdoc::private_intra_doc_links)]
// Diagnostics are large (file, path, hint) but only travel on the cold error path; boxing them
// everywhere would cost clarity for no measurable gain.
#![allow(clippy::result_large_err)]

pub mod base64;
pub mod component;
pub mod delimiter;
pub mod diag;
pub mod diff;
pub mod document;
pub mod expr;
pub mod fieldpath;
/// Flux postBuild variable substitution (`${var}` in rendered objects), for the Flux door.
pub mod flux;
pub mod graph;
pub mod ide;
pub mod inplace;
pub mod inventory;
pub mod ir;
pub mod kro;
pub mod kurel;
pub mod kustomize_build;
pub mod kustomize_paths;
pub mod kustomize_reach;
pub mod layout;
pub mod limits;
pub mod lookup;
pub mod names;
pub mod observed;
pub mod openapi;
pub mod output;
pub mod percent;
pub mod pipeline;
pub mod process;
pub mod provenance;
pub mod redact;
pub mod render;
pub mod request;
pub mod revision;
pub mod schema;
pub mod scope;
pub mod source;
pub mod status;
pub mod strategy;
pub mod suggest;
pub mod template;
pub mod vocabulary;
