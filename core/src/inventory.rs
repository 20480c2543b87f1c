//! The inventory check: a renderer in front of `kubectl apply` refuses to guess.
//!
//! After classification, every document that would pass through unchanged is checked against
//! what the run knows: the kinds its ResourceGraphDefinitions define, the kinds its CRDs (inputs
//! and `--crds`) declare, and the groups the user declared foreign (`--pass-through GROUP`). A
//! near miss of a defined kind (`Webapp`, `example.org/v1alpha1 WebApp`, a version the RGD does
//! not define) is an error naming the nearest match, and so is a kind nobody defines: an instance
//! whose RGD was forgotten would otherwise be printed raw and applied as such.
//!
//! Every rendered object whose group is a built-in Kubernetes group is checked against the
//! bundled kinds, whatever front-end produced it: `apps/v1 Deploymnet`, `v1 service` and the
//! removed `networking.k8s.io/v1beta1 Ingress` are errors, as the API server would make them.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::openapi;
use crate::scope::group_of;
use crate::suggest::{did_you_mean, nearest};

/// What a run knows about kinds besides the built-in ones.
#[derive(Debug, Clone, Default)]
pub struct Known {
    /// `(group, version, kind)` of every kind an RGD of the inputs defines.
    pub rgd_kinds: BTreeSet<(String, String, String)>,
    /// `(group, version, kind)` of every kind a CRD (inputs or `--crds`) serves.
    pub crd_kinds: BTreeSet<(String, String, String)>,
    /// Groups whose unknown kinds pass through (`*`: every group).
    pub pass_through: Vec<String>,
}

impl Known {
    fn passes(&self, group: &str) -> bool {
        self.pass_through.iter().any(|g| g == "*" || g == group)
    }
}

/// The problem with a document that would pass through, if there is one. The diagnostic names
/// no file: the caller places it on the document.
pub fn check_passthrough(api_version: &str, kind: &str, known: &Known) -> Option<Diagnostic> {
    let group = group_of(api_version);
    let version = api_version.rsplit_once('/').map_or(api_version, |(_, v)| v);
    if openapi::is_builtin_group(group) {
        return check_builtin(api_version, kind);
    }
    let gvk = (group.to_string(), version.to_string(), kind.to_string());
    if known.crd_kinds.contains(&gvk) || known.rgd_kinds.contains(&gvk) {
        return None;
    }
    // A group an RGD defines: any other kind or version in it is a near miss of the RGD's.
    let in_group: Vec<&(String, String, String)> = known
        .rgd_kinds
        .iter()
        .filter(|(g, ..)| g == group)
        .collect();
    if !in_group.is_empty() {
        let kinds: Vec<&str> = in_group.iter().map(|(_, _, k)| k.as_str()).collect();
        let best = in_group
            .iter()
            .find(|(_, _, k)| k == kind)
            .or_else(|| {
                let n = nearest(kind, kinds.iter().copied())?;
                in_group.iter().find(|(_, _, k)| k == n)
            })
            .copied();
        let hint = match best {
            Some((g, v, k)) => did_you_mean(&format!("{g}/{v} {k}")),
            None => format!(
                "the ResourceGraphDefinitions of group {group} define: {}",
                in_group
                    .iter()
                    .map(|(g, v, k)| format!("{g}/{v} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        return Some(
            Diagnostic::error(
                codes::UNKNOWN_KIND,
                format!(
                    "no ResourceGraphDefinition defines {api_version} {kind}, though group {group} is one of theirs"
                ),
            )
            .with_hint(hint),
        );
    }
    // Another group, but the kind of an RGD (or nearly): an instance with the wrong group.
    let rgd_kinds: Vec<&str> = known.rgd_kinds.iter().map(|(_, _, k)| k.as_str()).collect();
    let close = known
        .rgd_kinds
        .iter()
        .find(|(_, _, k)| k.eq_ignore_ascii_case(kind))
        .map(|(_, _, k)| k.as_str())
        .or_else(|| nearest(kind, rgd_kinds.iter().copied()));
    if let Some(k) = close {
        if let Some((g, v, k)) = known.rgd_kinds.iter().find(|(_, _, x)| x == k) {
            return Some(
                Diagnostic::error(
                    codes::UNKNOWN_KIND,
                    format!("{api_version} {kind} is not defined, but {g}/{v} {k} is"),
                )
                .with_hint(did_you_mean(&format!("{g}/{v} {k}"))),
            );
        }
    }
    if known.passes(group) {
        return None;
    }
    // A CRD of the group serves the kind at another version.
    if let Some((g, v, k)) = known
        .crd_kinds
        .iter()
        .find(|(g, _, k)| g == group && k == kind)
    {
        return Some(
            Diagnostic::error(
                codes::UNKNOWN_KIND,
                format!("{api_version} {kind}: its CustomResourceDefinition does not serve version {version}"),
            )
            .with_hint(did_you_mean(&format!("{g}/{v} {k}"))),
        );
    }
    // kiln's own function configuration listed among the objects: passing it through would
    // apply it to the cluster; the fix is where it is listed.
    if group == KILN_FUNCTION_GROUP {
        return Some(
            Diagnostic::error(
                codes::UNKNOWN_KIND,
                format!("{api_version} {kind} is kiln's own function configuration, read here as an object to render or pass through"),
            )
            .with_hint("name it where kustomize runs functions (the kustomization's `generators` or `transformers`), or in a Kptfile's pipeline as the function's configPath, not among `resources` or the inputs"),
        );
    }
    Some(
        Diagnostic::error(
            codes::UNKNOWN_KIND,
            format!("no definition of {api_version} {kind}: not a built-in kind, and no ResourceGraphDefinition or CustomResourceDefinition of the run defines it"),
        )
        .with_hint(format!(
            "add its ResourceGraphDefinition or CRD to the inputs (or --crds); if it is meant to pass through unrendered, say so with --pass-through {}",
            if group.is_empty() { "GROUP" } else { group }
        )),
    )
}

/// The group of kiln's KRM function configuration (`Render`).
pub const KILN_FUNCTION_GROUP: &str = "fn.kiln.dev";

/// The problem with an object of a built-in group whose kind the bundled Kubernetes version
/// does not serve at that apiVersion, if there is one.
pub fn check_builtin(api_version: &str, kind: &str) -> Option<Diagnostic> {
    let group = group_of(api_version);
    // The common case, every object of a healthy render: a served kind, or a foreign group.
    if openapi::is_builtin_kind(api_version, kind) || !openapi::is_builtin_group(group) {
        return None;
    }
    let mut same_group: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (api, k) in openapi::builtin_kinds() {
        if group_of(api) == group && !k.ends_with("List") {
            same_group.entry(k).or_default().push(api);
        }
    }
    if same_group.is_empty() {
        return None;
    }
    let version = crate::openapi::Schemas::kubernetes_version();
    if let Some(apis) = same_group.get(kind) {
        return Some(
            Diagnostic::error(
                codes::UNKNOWN_KIND,
                format!("{kind} is not served at {api_version} in Kubernetes {version} (removed, or never served there)"),
            )
            .with_hint(format!("use apiVersion: {}", apis.last().copied().unwrap_or(""))),
        );
    }
    let shown = if group.is_empty() { "core" } else { group };
    let hint = match nearest(kind, same_group.keys().copied()) {
        Some(k) => {
            let apis = &same_group[k];
            let api = if apis.contains(&api_version) {
                api_version
            } else {
                apis.last().copied().unwrap_or(api_version)
            };
            did_you_mean(&format!("{api} {k}"))
        }
        None => format!(
            "the {shown} group has no such kind in Kubernetes {version}; a CRD cannot add kinds to a built-in group"
        ),
    };
    Some(
        Diagnostic::error(
            codes::UNKNOWN_KIND,
            format!("unknown kind {kind} in the built-in {shown} group ({api_version})"),
        )
        .with_hint(hint),
    )
}

/// The built-in problem of each rendered object, naming it (`kind/name`).
pub fn check_rendered(objects: &[Value]) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    for o in objects {
        let (Some(api), Some(kind)) = (
            o.get("apiVersion").and_then(Value::as_str),
            o.get("kind").and_then(Value::as_str),
        ) else {
            continue;
        };
        if let Some(mut d) = check_builtin(api, kind) {
            let name = o
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("");
            d.message = format!("rendered object {kind}/{name}: {}", d.message);
            out.push(d);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn known() -> Known {
        let mut k = Known::default();
        k.rgd_kinds
            .insert(("example.com".into(), "v1alpha1".into(), "WebApp".into()));
        k.crd_kinds
            .insert(("cert-manager.io".into(), "v1".into(), "Certificate".into()));
        k
    }

    fn hint(d: Option<Diagnostic>) -> String {
        d.expect("a problem").hint.unwrap_or_default()
    }

    #[test]
    fn near_misses_of_rgd_kinds_name_the_kind() {
        let k = known();
        for (api, kind) in [
            ("example.com/v1alpha1", "Webapp"),
            ("example.com/v1alpha2", "WebApp"),
            ("example.org/v1alpha1", "WebApp"),
        ] {
            assert!(
                hint(check_passthrough(api, kind, &k)).contains("example.com/v1alpha1 WebApp"),
                "{api} {kind}"
            );
        }
    }

    #[test]
    fn built_in_typos_and_removed_versions_are_errors() {
        assert!(hint(check_builtin("apps/v1", "Deploymnet")).contains("apps/v1 Deployment"));
        assert!(hint(check_builtin("v1", "service")).contains("v1 Service"));
        assert!(hint(check_builtin("networking.k8s.io/v1beta1", "Ingress"))
            .contains("networking.k8s.io/v1"));
        assert!(check_builtin("apps/v1", "Deployment").is_none());
        assert!(check_builtin("v1", "ConfigMap").is_none());
    }

    #[test]
    fn foreign_kinds_need_a_definition_or_a_declaration() {
        let mut k = known();
        assert!(check_passthrough("cert-manager.io/v1", "Certificate", &k).is_none());
        assert!(hint(check_passthrough(
            "cert-manager.io/v1beta1",
            "Certificate",
            &k
        ))
        .contains("cert-manager.io/v1 Certificate"));
        let d = check_passthrough("acme.io/v1", "Widget", &k).expect("unknown");
        assert_eq!(d.code, codes::UNKNOWN_KIND);
        assert!(d.hint.unwrap().contains("--pass-through acme.io"));
        // kiln's own configuration is named as such, with where it belongs.
        let d = check_passthrough("fn.kiln.dev/v1alpha1", "Render", &k).unwrap();
        assert!(
            d.message.contains("kiln's own function configuration"),
            "{d:?}"
        );
        assert!(
            d.hint
                .as_deref()
                .unwrap()
                .contains("`generators` or `transformers`"),
            "{d:?}"
        );
        assert!(
            !d.hint.as_deref().unwrap().contains("pass-through"),
            "{d:?}"
        );
        k.pass_through = vec!["acme.io".into()];
        assert!(check_passthrough("acme.io/v1", "Widget", &k).is_none());
        k.pass_through = vec!["*".into()];
        assert!(check_passthrough("other.io/v1", "Thing", &k).is_none());
        // Declaring a group foreign does not hide a near miss of an RGD kind.
        assert!(check_passthrough("example.com/v1alpha1", "Webapp", &k).is_some());
    }
}
