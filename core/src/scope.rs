//! Which kinds are namespaced and which are cluster-scoped.
//!
//! Namespace inheritance needs to know the scope of every kind a template creates. Built-in
//! Kubernetes kinds take it from the bundled schemas' index; CustomResourceDefinitions and
//! definitions found in the inputs add theirs. A kind nobody declares is taken to be namespaced, which is what almost every custom
//! resource is.

use std::collections::BTreeMap;

use crate::openapi::Schemas;

/// Cluster-scoped kinds that have no bundled schema: kro's own.
const EXTRA_CLUSTER_SCOPED: &[(&str, &str)] = &[("kro.run", "ResourceGraphDefinition")];

/// The group of an `apiVersion` (defined with the API catalogue, which scope reads).
pub use crate::openapi::group_of;

/// Scope knowledge: built-ins plus what the inputs declare.
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    declared: BTreeMap<(String, String), bool>,
}

impl Scopes {
    /// Only the built-in kinds.
    pub fn new() -> Self {
        Self::default()
    }

    /// Record that `group`/`kind` is namespaced (`true`) or cluster-scoped.
    pub fn declare(&mut self, group: &str, kind: &str, namespaced: bool) {
        self.declared
            .insert((group.to_string(), kind.to_string()), namespaced);
    }

    /// Record the scope a CustomResourceDefinition document declares, if it is one.
    pub fn declare_crd(&mut self, crd: &serde_json::Value) {
        let spec = &crd["spec"];
        if let (Some(group), Some(kind)) = (spec["group"].as_str(), spec["names"]["kind"].as_str())
        {
            let namespaced = spec["scope"].as_str() != Some("Cluster");
            self.declare(group, kind, namespaced);
        }
    }

    /// Whether objects of this apiVersion and kind are namespaced.
    pub fn is_namespaced(&self, api_version: &str, kind: &str) -> bool {
        let group = group_of(api_version);
        // Every rendered object asks: the key is built only when CRDs were declared.
        let declared = (!self.declared.is_empty())
            .then(|| self.declared.get(&(group.to_string(), kind.to_string())))
            .flatten();
        if let Some(ns) = declared {
            return *ns;
        }
        if let Some(k) = Schemas::bundled().lookup(api_version, kind) {
            return k.namespaced;
        }
        !EXTRA_CLUSTER_SCOPED.contains(&(group, kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_and_declared() {
        let mut s = Scopes::new();
        assert!(s.is_namespaced("apps/v1", "Deployment"));
        assert!(!s.is_namespaced("v1", "Namespace"));
        assert!(!s.is_namespaced("rbac.authorization.k8s.io/v1", "ClusterRole"));
        assert!(s.is_namespaced("example.com/v1", "Thing"));
        s.declare_crd(&serde_json::json!({
            "spec": {"group": "example.com", "scope": "Cluster", "names": {"kind": "Thing"}}
        }));
        assert!(!s.is_namespaced("example.com/v1", "Thing"));
    }
}
