//! Diagnostics as KRM `results` (the functions spec's `Result`), and the exit code they mean.
//!
//! kpt prints each result as `[severity] apiVersion/kind/name field: message` and stores it in
//! `--results-dir`; kustomize keeps them but decides pass or fail from the exit code alone. So
//! the message carries the code and the hint (nothing else of a result is shown to everyone), and
//! the exit code is 1 whenever any result is an error, as kyaml's framework does.

use kiln_core::diag::{Diagnostic, Severity};
use kiln_core::vocabulary::Vocabulary;
use serde_json::{Map, Value};

/// Where a diagnostic points in the orchestrator's terms.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Location {
    /// The file (slash path relative to the package) and the document index in it.
    pub file: Option<(String, usize)>,
    /// The object it is about: `{apiVersion, kind, name, namespace?}`.
    pub resource: Option<Value>,
}

/// The `resourceRef` of an object, when it has the three required fields.
pub fn resource_ref(obj: &Value) -> Option<Value> {
    fn s(v: Option<&Value>) -> Option<&str> {
        v.and_then(Value::as_str).filter(|s| !s.is_empty())
    }
    let meta = obj.get("metadata");
    let mut r = Map::new();
    r.insert("apiVersion".into(), s(obj.get("apiVersion"))?.into());
    r.insert("kind".into(), s(obj.get("kind"))?.into());
    r.insert("name".into(), s(meta.and_then(|m| m.get("name")))?.into());
    if let Some(ns) = s(meta.and_then(|m| m.get("namespace"))) {
        r.insert("namespace".into(), ns.into());
    }
    Some(Value::Object(r))
}

/// kiln-core's hints name the `kiln` CLI's flags; a kiln-krm user writes Render spec fields (or
/// the same keys in kpt's ConfigMap): `--pass-through acme.io` is `passThrough: [acme.io]`,
/// `--env NAME` `environment: NAME`, `(--allow-empty)` `(allowEmpty: true)`. Flags with no
/// counterpart here stay as they are; `--limit` is kiln-krm's own flag too.
pub fn vocabulary() -> Vocabulary {
    Vocabulary::forms([
        ("--pass-through", "passThrough", "passThrough: [{}]"),
        ("--env", "environment", "environment: {}"),
        ("--namespace", "namespace", "namespace: {}"),
        ("--observed", "observed", "observed: [{}]"),
        ("--mode", "mode", "mode: {}"),
        ("--values", "values", "values: [{}]"),
        ("--set", "set", "set: {{key}: {value}}"),
        ("--crds", "paths", "paths: [{}]"),
    ])
    .and(Vocabulary::new([
        ("--allow-empty", "allowEmpty: true"),
        ("--strict", "strict: true"),
    ]))
}

/// One diagnostic as a result.
pub fn from_diagnostic(d: &Diagnostic, at: &Location) -> Value {
    let mut r = Map::new();
    let words = vocabulary();
    let mut message = format!("{}: {}", d.code.id, words.text(&d.message));
    if let Some(h) = &d.hint {
        message.push_str(&format!(" (hint: {})", words.text(h)));
    }
    r.insert("message".into(), message.into());
    let severity = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    r.insert("severity".into(), severity.into());
    if let Some(res) = &at.resource {
        r.insert("resourceRef".into(), res.clone());
        // The spec allows a field only with a resourceRef.
        if let Some(p) = d.path.as_deref().filter(|p| !p.is_empty()) {
            let mut f = Map::new();
            f.insert("path".into(), p.into());
            r.insert("field".into(), Value::Object(f));
        }
    }
    if let Some((path, index)) = &at.file {
        let mut f = Map::new();
        f.insert("path".into(), path.as_str().into());
        if *index > 0 {
            f.insert("index".into(), (*index).into());
        }
        r.insert("file".into(), Value::Object(f));
    }
    let mut tags = Map::new();
    tags.insert("code".into(), d.code.id.into());
    tags.insert("slug".into(), d.code.slug.into());
    r.insert("tags".into(), Value::Object(tags));
    Value::Object(r)
}

/// A line for people (a kurel patch enabled on its own) as an `info` result.
pub fn info(message: &str) -> Value {
    let mut r = Map::new();
    r.insert("message".into(), message.into());
    r.insert("severity".into(), "info".into());
    Value::Object(r)
}

/// 1 when any result is an error, else 0.
pub fn exit_code(results: &[Value]) -> u8 {
    let error = results
        .iter()
        .any(|r| r.get("severity").and_then(Value::as_str) == Some("error"));
    u8::from(error)
}

/// The human form for stderr: kiln's one-line diagnostic, with the orchestrator's file when the
/// diagnostic names a file kiln made up for an item.
pub fn human(d: &Diagnostic, at: &Location) -> String {
    let mut d = d.clone();
    let words = vocabulary();
    d.message = words.text(&d.message);
    d.hint = d.hint.as_deref().map(|h| words.text(h));
    if let Some((path, index)) = &at.file {
        d.file = Some(if *index > 0 {
            format!("{path} (document {index})")
        } else {
            path.clone()
        });
        // Lines would be those of kiln's copy of the item, not of the user's file.
        d.line = None;
        d.column = None;
    }
    d.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kiln_core::diag::codes;
    use serde_json::json;

    #[test]
    fn result_shape() {
        let d = Diagnostic::error(codes::REQUEST_INVALID, "bad thing")
            .at("spec.replicas")
            .with_hint("fix it");
        let at = Location {
            file: Some(("apps/app.yaml".into(), 1)),
            resource: resource_ref(
                &json!({"apiVersion": "kro.run/v1alpha1", "kind": "App", "metadata": {"name": "shop", "namespace": "web"}}),
            ),
        };
        let r = from_diagnostic(&d, &at);
        assert_eq!(
            r,
            json!({
                "message": "KLN1010: bad thing (hint: fix it)",
                "severity": "error",
                "resourceRef": {"apiVersion": "kro.run/v1alpha1", "kind": "App", "name": "shop", "namespace": "web"},
                "field": {"path": "spec.replicas"},
                "file": {"path": "apps/app.yaml", "index": 1},
                "tags": {"code": "KLN1010", "slug": "request-invalid"}
            })
        );
        assert_eq!(exit_code(&[r]), 1);
    }

    #[test]
    fn no_field_without_a_resource_and_warnings_pass() {
        let d = Diagnostic::warning(codes::REQUEST_INVALID, "careful").at("spec.x");
        let r = from_diagnostic(&d, &Location::default());
        assert!(
            r.get("field").is_none() && r.get("resourceRef").is_none() && r.get("file").is_none()
        );
        assert_eq!(r["severity"], "warning");
        assert_eq!(exit_code(&[r, info("note")]), 0);
        assert_eq!(exit_code(&[]), 0);
    }

    #[test]
    fn resource_ref_needs_name_kind_and_version() {
        assert!(resource_ref(&json!({"apiVersion": "v1", "kind": "X", "metadata": {}})).is_none());
        assert_eq!(
            resource_ref(&json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "a"}}))
                .unwrap(),
            json!({"apiVersion": "v1", "kind": "X", "name": "a"})
        );
    }

    #[test]
    fn hints_name_render_fields_not_cli_flags() {
        for (cli, door) in [
            (
                "say so with --pass-through acme.io",
                "say so with passThrough: [acme.io]",
            ),
            (
                "pass --env NAME or add a ReleaseBinding",
                "pass environment: NAME or add a ReleaseBinding",
            ),
            (
                "add mode kro (--mode kro), or drop them",
                "add mode kro (mode: kro), or drop them",
            ),
            (
                "accepted only when asked for (--allow-empty)",
                "accepted only when asked for (allowEmpty: true)",
            ),
            (
                "give the live objects with --observed, or derive",
                "give the live objects with observed, or derive",
            ),
            (
                "give it with --observed (e.g. kubectl get)",
                "give it with observed (e.g. kubectl get)",
            ),
            (
                "set metadata.namespace or pass --namespace",
                "set metadata.namespace or pass namespace",
            ),
            ("write --set app.replicas=3", "write set: {app.replicas: 3}"),
            ("--set \"x=1\": not declared", "set \"x=1\": not declared"),
            (
                "to the inputs (or --crds); say so",
                "to the inputs (or paths); say so",
            ),
            (
                "raise the limit: --limit input-bytes=SIZE",
                "raise the limit: --limit input-bytes=SIZE",
            ),
            (
                "--settings and --env-file and a -- b",
                "--settings and --env-file and a -- b",
            ),
        ] {
            assert_eq!(vocabulary().text(cli), door, "{cli}");
        }
    }

    #[test]
    fn human_text_names_the_users_file() {
        let d = Diagnostic::error(codes::REQUEST_INVALID, "bad")
            .in_file("item-3")
            .at_line(4, Some(2));
        let at = Location {
            file: Some(("apps/app.yaml".into(), 2)),
            resource: None,
        };
        let h = human(&d, &at);
        assert!(
            h.starts_with("error[KLN1010]: apps/app.yaml (document 2): bad"),
            "{h}"
        );
    }
}
