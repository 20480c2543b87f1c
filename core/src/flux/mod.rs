//! Flux kustomize-controller's `spec.postBuild` variable substitution, for the `kiln-flux` door.
//!
//! Flux has no render plugin: whatever kiln renders for a Flux Kustomization is then substituted
//! by kustomize-controller, object by object, on the object's YAML text (docs/flux.md). This
//! module does the same, offline, so a door can preview Flux's result, fail where Flux would
//! fail, and check that kiln's own output survives substitution:
//!
//! - [`envsubst`](crate::flux::envsubst): the `${…}` language (`fluxcd/pkg/envsubst`), bounded in output and work;
//! - [`variables`](crate::flux::variables): `substitute` and `substituteFrom` merged in Flux's order, names checked;
//! - [`postbuild`](crate::flux::postbuild): one object or many, with the opt-out, the strategy, strict mode, and YAML
//!   re-typing of substituted values;
//! - [`goyaml`](crate::flux::goyaml): an object as go-yaml v2 writes it, the text Flux substitutes;
//! - [`lint`](crate::flux::lint): the fields substitution would change, and escaping that makes it a no-op.
//!
//! ```
//! use serde_json::json;
//! use kiln_core::flux::postbuild::{apply, PostBuild};
//! use kiln_core::flux::variables::Variables;
//! use kiln_core::flux::lint::{escape, lint};
//!
//! let mut vars = Variables::new();
//! vars.insert("cluster_env", "prod");
//! let settings = PostBuild::new(vars);
//!
//! let ns = json!({"apiVersion": "v1", "kind": "Namespace",
//!                 "metadata": {"name": "apps", "labels": {"env": "${cluster_env:=dev}"}}});
//! assert_eq!(apply(ns, &settings).unwrap()["metadata"]["labels"]["env"], "prod");
//!
//! // A script that must reach the cluster as written: escape it.
//! let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "s"},
//!                 "data": {"run.sh": "echo ${HOME}"}});
//! assert_eq!(lint(&cm).len(), 1);
//! assert_eq!(apply(escape(&cm), &settings).unwrap(), cm);
//! ```

pub mod envsubst;
mod glob;
pub mod goyaml;
pub mod lint;
pub mod postbuild;
pub mod sourceignore;
pub mod variables;

/// The label or annotation that opts an object out of substitution (with value [`DISABLED`]).
pub const SUBSTITUTE_KEY: &str = "kustomize.toolkit.fluxcd.io/substitute";

/// The opt-out value of [`SUBSTITUTE_KEY`].
pub const DISABLED: &str = "disabled";
