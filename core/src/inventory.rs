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

    /// Whether an RGD or a CRD of the run defines exactly this apiVersion and kind.
    fn defines(&self, api_version: &str, kind: &str) -> bool {
        let (group, version) = split_api_version(api_version);
        let gvk = (group.to_string(), version.to_string(), kind.to_string());
        self.crd_kinds.contains(&gvk) || self.rgd_kinds.contains(&gvk)
    }
}

/// `(group, version)` of an apiVersion (`v1` is the core group's).
fn split_api_version(api_version: &str) -> (&str, &str) {
    (
        group_of(api_version),
        api_version.rsplit_once('/').map_or(api_version, |(_, v)| v),
    )
}

/// The problem with the kind of a resource template (or externalRef) that no schema of the run
/// describes, when the run can tell what it should be: a built-in kind mistyped, a kind an RGD
/// of the run defines under another group or version, a nearly-spelt kind in an RGD's group, a
/// CRD's kind at a version it does not serve. kro resolves every template's kind against the
/// cluster when the RGD is applied and refuses one it does not serve (kro `pkg/graph/builder.go`,
/// `buildResourceNode`). A kind the run knows nothing of is not judged here (the caller warns that
/// it went unchecked): the cluster may well serve it. Unlike an input document, an RGD's kind
/// spelt nearly but in another group is not taken for a slip: only the same name is.
pub fn check_template_kind(api_version: &str, kind: &str, known: &Known) -> Option<Diagnostic> {
    if openapi::is_builtin_group(group_of(api_version)) {
        return check_builtin(api_version, kind);
    }
    if known.defines(api_version, kind) {
        return None;
    }
    let d = rgd_near_miss(api_version, kind, known, false)
        .or_else(|| crd_version_miss(api_version, kind, known))?;
    let hint = d.hint.clone().unwrap_or_default();
    Some(d.with_hint(format!(
        "{hint} (or, if {api_version} {kind} is another kind the cluster serves, give its CustomResourceDefinition among the inputs or with --crds FILE)"
    )))
}

/// A near miss of a kind the run's RGDs define: the kind at another version of its group, a
/// nearly-spelt kind in an RGD's group, or an RGD's kind in another group (the same name, or
/// with `loose` also a nearly-spelt one).
fn rgd_near_miss(api_version: &str, kind: &str, known: &Known, loose: bool) -> Option<Diagnostic> {
    let group = group_of(api_version);
    let in_group: Vec<&(String, String, String)> = known
        .rgd_kinds
        .iter()
        .filter(|(g, ..)| g == group)
        .collect();
    let same_kind = in_group.iter().find(|(_, _, k)| k == kind).copied();
    let near_kind = || {
        let n = nearest(kind, in_group.iter().map(|(_, _, k)| k.as_str()))?;
        in_group.iter().find(|(_, _, k)| k == n).copied()
    };
    if let Some((g, v, k)) = same_kind.or_else(near_kind) {
        return Some(
            in_group_miss(api_version, kind).with_hint(did_you_mean(&format!("{g}/{v} {k}"))),
        );
    }
    // Another group, but the kind of an RGD (or nearly): an instance with the wrong group.
    let close = known
        .rgd_kinds
        .iter()
        .find(|(_, _, k)| k.eq_ignore_ascii_case(kind))
        .map(|(_, _, k)| k.as_str())
        .or_else(|| {
            loose
                .then(|| nearest(kind, known.rgd_kinds.iter().map(|(_, _, k)| k.as_str())))
                .flatten()
        })?;
    let (g, v, k) = known.rgd_kinds.iter().find(|(_, _, x)| x == close)?;
    Some(
        Diagnostic::error(
            codes::UNKNOWN_KIND,
            format!("{api_version} {kind} is not defined, but {g}/{v} {k} is"),
        )
        .with_hint(did_you_mean(&format!("{g}/{v} {k}"))),
    )
}

/// The error for a kind no RGD defines in a group RGDs of the run define kinds in (the caller
/// gives the hint).
fn in_group_miss(api_version: &str, kind: &str) -> Diagnostic {
    Diagnostic::error(
        codes::UNKNOWN_KIND,
        format!(
            "no ResourceGraphDefinition defines {api_version} {kind}, though group {} is one of theirs",
            group_of(api_version)
        ),
    )
}

/// A kind a CRD of the run serves, named at a version the CRD does not serve.
fn crd_version_miss(api_version: &str, kind: &str, known: &Known) -> Option<Diagnostic> {
    let (group, version) = split_api_version(api_version);
    let (g, v, k) = known
        .crd_kinds
        .iter()
        .find(|(g, _, k)| g == group && k == kind)?;
    Some(
        Diagnostic::error(
            codes::UNKNOWN_KIND,
            format!("{api_version} {kind}: its CustomResourceDefinition does not serve version {version}"),
        )
        .with_hint(did_you_mean(&format!("{g}/{v} {k}"))),
    )
}

/// The problem with a document that would pass through, if there is one. The diagnostic names
/// no file: the caller places it on the document.
pub fn check_passthrough(api_version: &str, kind: &str, known: &Known) -> Option<Diagnostic> {
    let group = group_of(api_version);
    if openapi::is_builtin_group(group) {
        return check_builtin(api_version, kind);
    }
    if known.defines(api_version, kind) {
        return None;
    }
    if let Some(d) = rgd_near_miss(api_version, kind, known, true) {
        return Some(d);
    }
    // A group an RGD defines: any other kind in it is the RGD's to define.
    let in_group: Vec<String> = known
        .rgd_kinds
        .iter()
        .filter(|(g, ..)| g == group)
        .map(|(g, v, k)| format!("{g}/{v} {k}"))
        .collect();
    if !in_group.is_empty() {
        return Some(in_group_miss(api_version, kind).with_hint(format!(
            "the ResourceGraphDefinitions of group {group} define: {}",
            in_group.join(", ")
        )));
    }
    if known.passes(group) {
        return None;
    }
    if let Some(d) = crd_version_miss(api_version, kind, known) {
        return Some(d);
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
        // Every rendered object is asked: scanned, not hashed (`crate::lookup`).
        let (Some(api), Some(kind)) = (
            crate::lookup::field(o, "apiVersion").and_then(Value::as_str),
            crate::lookup::field(o, "kind").and_then(Value::as_str),
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

/// A document that passes through is applied as it is, so it must fit its kind's schema as a
/// rendered object must: `data: {mode: 0755}` in a ConfigMap reads as the number 493, which
/// the API server refuses at sync time. Checked here, in CI, with the value's place in the file.
/// Kinds without a schema (custom resources whose CRD is not in the run) are not checked.
pub fn check_passthrough_schema(
    doc: &crate::document::Document,
    value: &Value,
    schemas: &openapi::Schemas,
) -> Vec<Diagnostic> {
    let (Some(api), Some(kind)) = (
        value.get("apiVersion").and_then(Value::as_str),
        value.get("kind").and_then(Value::as_str),
    ) else {
        return Vec::new();
    };
    let Some(ks) = schemas.lookup(api, kind) else {
        return Vec::new();
    };
    ks.check_rendered(value)
        .into_iter()
        .map(|(path, msg)| {
            let hint = if openapi::is_builtin_kind(api, kind) {
                format!(
                    "the API server rejects it (Kubernetes {} {kind} schema); quote a value that \
                     must stay a string (\"0755\", \"yes\", \"5\")",
                    openapi::Schemas::kubernetes_version()
                )
            } else {
                format!(
                    "the API server rejects it (the {kind} CustomResourceDefinition of this run)"
                )
            };
            doc.diag(
                Diagnostic::error(codes::PASSTHROUGH_SCHEMA, msg).with_hint(hint),
                &path,
            )
        })
        .collect()
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

    /// A template's kind that the run defines elsewhere is refused as kro refuses the RGD
    /// (kro `pkg/graph/builder.go`: every template's kind is resolved against the cluster when
    /// the RGD is applied); a kind the run knows nothing of is not judged.
    #[test]
    fn template_kinds_the_run_defines_elsewhere_are_near_misses() {
        let mut k = known();
        k.rgd_kinds
            .insert(("kro.run".into(), "v1alpha1".into(), "Parent".into()));
        for (api, kind, want) in [
            ("kro.run/v1alpha1", "WebApp", "example.com/v1alpha1 WebApp"),
            (
                "example.com/v1beta1",
                "WebApp",
                "example.com/v1alpha1 WebApp",
            ),
            (
                "example.com/v1alpha1",
                "Webap",
                "example.com/v1alpha1 WebApp",
            ),
            (
                "cert-manager.io/v1alpha2",
                "Certificate",
                "cert-manager.io/v1 Certificate",
            ),
            ("apps/v1", "Deploymnet", "apps/v1 Deployment"),
        ] {
            let d = check_template_kind(api, kind, &k).unwrap_or_else(|| panic!("{api} {kind}"));
            assert_eq!(d.code, codes::UNKNOWN_KIND);
            let hint = d.hint.unwrap_or_default();
            assert!(hint.contains(want), "{api} {kind}: {hint}");
        }
        for (api, kind) in [
            ("example.com/v1alpha1", "WebApp"),
            ("cert-manager.io/v1", "Certificate"),
            ("apps/v1", "Deployment"),
            // Nothing of the run defines these: the cluster may serve them.
            ("acme.io/v1", "Widget"),
            ("kro.run/v1alpha1", "ResourceGraphDefinition"),
            // Spelt nearly like an RGD's kind, in a group of its own: another kind, not a slip.
            ("acme.io/v1", "WebApps"),
        ] {
            assert!(check_template_kind(api, kind, &k).is_none(), "{api} {kind}");
        }
        // An input document of that last kind is refused all the same, as the RGD's near miss.
        assert!(hint(check_passthrough("acme.io/v1", "WebApps", &k)).contains("WebApp"));
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
