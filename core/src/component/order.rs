//! Output order of a Release: a stable sort by kind, apiVersion, namespace, name (byte-wise), as
//! upstream's renderer sorts. Resources equal on all four keep their rendering order (they are
//! rejected as duplicates anyway).

use serde_json::Value;

/// (kind, apiVersion, namespace, name); missing parts are empty.
pub(crate) fn key(v: &Value) -> (String, String, String, String) {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    // Small maps, read for every rendered object: scanned, not hashed (`crate::lookup`).
    let field = crate::lookup::field;
    let md = field(v, "metadata");
    (
        s(field(v, "kind")),
        s(field(v, "apiVersion")),
        s(md.and_then(|m| field(m, "namespace"))),
        s(md.and_then(|m| field(m, "name"))),
    )
}

/// Sort in place (stable).
pub(crate) fn sort(resources: &mut [Value]) {
    resources.sort_by_cached_key(key);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_by_kind_then_version_namespace_name() {
        let mut v = vec![
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "b"}}),
            json!({"kind": "Deployment", "apiVersion": "apps/v1", "metadata": {"name": "z"}}),
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "a"}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a", "namespace": "x"}}),
        ];
        sort(&mut v);
        let names: Vec<String> = v
            .iter()
            .map(|r| format!("{}/{}", key(r).0, key(r).3))
            .collect();
        assert_eq!(
            names,
            ["ConfigMap/a", "Deployment/z", "Service/a", "Service/b"]
        );
    }
}
