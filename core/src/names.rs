//! Kubernetes' rules for names, as the API server checks them, with its messages.
//!
//! A namespace is a DNS-1123 label (`ValidateNamespaceName`, k8s.io/apimachinery
//! `pkg/api/validation/generic.go`, checked on every object's `metadata.namespace` by
//! `ValidateObjectMeta`, `objectmeta.go`): at most 63 bytes of `[a-z0-9-]`, starting and ending
//! with a letter or digit. The messages are `IsDNS1123Label`'s (`pkg/util/validation/
//! validation.go`), printed as `field.Invalid` prints them (`Invalid value: "x": …`), the value
//! quoted short ([`crate::diag::quote`]): a hostile one may be megabytes.

use serde_json::Value;

use crate::diag::{codes, quote, Diagnostic};

/// The longest DNS-1123 label, in bytes (`DNS1123LabelMaxLength`).
pub const DNS1123_LABEL_MAX: usize = 63;

/// `IsDNS1123Label`'s message for a value its regular expression refuses.
const LABEL_MESSAGE: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric \
     characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  \
     or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

/// What a namespace is, for hints.
pub const NAMESPACE_RULE: &str = "a namespace is a DNS-1123 label: at most 63 lower-case letters, \
     digits and '-', starting and ending with a letter or digit";

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, whatever the length.
fn label_shaped(s: &str) -> bool {
    let b = s.as_bytes();
    let inner = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-';
    let end = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    b.first().is_some_and(end) && b.last().is_some_and(end) && b.iter().all(inner)
}

/// Whether `s` is a DNS-1123 label.
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= DNS1123_LABEL_MAX && label_shaped(s)
}

/// `IsDNS1123Label`'s messages for `value`, in its order; none when it is a label.
pub fn dns1123_label_problems(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    if value.len() > DNS1123_LABEL_MAX {
        out.push(format!(
            "must be no more than {DNS1123_LABEL_MAX} characters"
        ));
    }
    if !label_shaped(value) {
        // A valid subdomain that is not a label can only be one with dots (the length was
        // checked above).
        if !value.is_empty() && value.split('.').all(label_shaped) {
            out.push("must not contain dots".to_string());
        } else {
            out.push(LABEL_MESSAGE.to_string());
        }
    }
    out
}

/// The API server's words for `value` as a namespace, `None` when it is a valid one:
/// `Invalid value: "../../etc": a lowercase RFC 1123 label must …` (one error per message,
/// joined by `; `). A caller names the field before it.
pub fn namespace_problem(value: &str) -> Option<String> {
    let problems = dns1123_label_problems(value);
    if problems.is_empty() {
        return None;
    }
    let shown = quote(value);
    Some(
        problems
            .iter()
            .map(|p| format!("Invalid value: {shown}: {p}"))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// KLN5006 for each object whose `metadata.namespace` the API server would refuse: the last
/// check of every unit a run renders (or passes through), whatever wrote the namespace.
pub fn check_namespaces(objects: &[Value]) -> Vec<Diagnostic> {
    objects
        .iter()
        .filter_map(|o| {
            // Every rendered object is asked: its small maps are scanned, not hashed, and no
            // pointer string is split and unescaped.
            let meta = crate::lookup::field(o, "metadata");
            let ns = crate::lookup::field(meta?, "namespace")?.as_str()?;
            let problem = namespace_problem(ns).filter(|_| !ns.is_empty())?;
            let field = |k: &str| o.get(k).and_then(Value::as_str).unwrap_or("");
            let name = meta
                .and_then(|m| m.get("name"))
                .and_then(Value::as_str)
                .unwrap_or("");
            Some(
                Diagnostic::error(
                    codes::NAMESPACE,
                    format!(
                        "object {}/{}: metadata.namespace: {problem}",
                        field("kind"),
                        quote(name).trim_matches('"')
                    ),
                )
                .with_hint(format!(
                    "{NAMESPACE_RULE}; the API server refuses any other"
                )),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cases and messages of `IsDNS1123Label` (k8s.io/apimachinery
    /// `pkg/util/validation/validation_test.go`, `TestIsDNS1123Label`, and the messages of
    /// `validation.go`).
    #[test]
    fn labels_as_the_api_server_checks_them() {
        for good in [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "0-1",
            "1-0",
            "a".repeat(63).as_str(),
        ] {
            assert!(is_dns1123_label(good), "{good}");
            assert!(namespace_problem(good).is_none(), "{good}");
        }
        for bad in [
            "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
            "_a", "a_b", "1_", "_1", "1_2", "*", "a*", "*a", "a*b", "1*", "*1", "1*2", "a.", ".a",
            "a.b", "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2",
        ] {
            assert!(!is_dns1123_label(bad), "{bad:?}");
        }
        assert!(!is_dns1123_label(&"a".repeat(64)));
        let msg = namespace_problem("../../etc").unwrap();
        assert_eq!(
            msg,
            "Invalid value: \"../../etc\": a lowercase RFC 1123 label must consist of lower case \
             alphanumeric characters or '-', and must start and end with an alphanumeric character \
             (e.g. 'my-name',  or '123-abc', regex used for validation is \
             '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        );
        assert_eq!(
            namespace_problem("a.b").unwrap(),
            "Invalid value: \"a.b\": must not contain dots"
        );
        // A million characters: the length message only (it is label-shaped), quoted short.
        let long = "a".repeat(1_000_000);
        let msg = namespace_problem(&long).unwrap();
        assert!(
            msg.ends_with(": must be no more than 63 characters"),
            "{msg}"
        );
        assert!(msg.len() < 200, "{msg}");
        // Both, when both apply.
        let msg = namespace_problem(&"A".repeat(64)).unwrap();
        assert_eq!(msg.matches("Invalid value").count(), 2, "{msg}");
    }

    #[test]
    fn objects_with_an_invalid_namespace_are_named() {
        let objs = [
            serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "a", "namespace": "web"}}),
            serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "b", "namespace": "../../etc"}}),
            serde_json::json!({"kind": "Namespace", "metadata": {"name": "c"}}),
            serde_json::json!({"kind": "ConfigMap", "metadata": {"name": "d", "namespace": ""}}),
        ];
        let found = check_namespaces(&objs);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].code, codes::NAMESPACE);
        assert!(
            found[0].message.starts_with(
                "object ConfigMap/b: metadata.namespace: Invalid value: \"../../etc\""
            ),
            "{}",
            found[0].message
        );
    }
}
