//! Output order of a Release: a stable sort by kind, apiVersion, namespace, name (byte-wise), as
//! upstream's renderer sorts. Resources equal on all four keep their rendering order (they are
//! rejected as duplicates anyway).

use serde_json::Value;

/// (kind, apiVersion, namespace, name); missing parts are empty.
pub(crate) fn key(v: &Value) -> (&str, &str, &str, &str) {
    fn s(v: Option<&Value>) -> &str {
        v.and_then(Value::as_str).unwrap_or("")
    }
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

/// Sort in place (stable): the order is found on keys borrowed from the resources, which are
/// then moved into it, rather than copying four strings of every resource to sort by.
pub(crate) fn sort(resources: &mut Vec<Value>) {
    let order = {
        let keys: Vec<_> = resources.iter().map(key).collect();
        let mut order: Vec<usize> = (0..keys.len()).collect();
        order.sort_by(|&a, &b| keys[a].cmp(&keys[b]));
        order
    };
    if order.iter().enumerate().all(|(at, &i)| at == i) {
        return;
    }
    let mut slots: Vec<Option<Value>> = resources.drain(..).map(Some).collect();
    resources.extend(order.iter().filter_map(|&i| slots[i].take()));
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

    /// Resources equal on all four keys keep the order they were rendered in.
    #[test]
    fn equal_keys_keep_their_order() {
        let mut v = vec![
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "a"}, "n": 1}),
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}}),
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "a"}, "n": 2}),
            json!({"kind": "Service", "apiVersion": "v1", "metadata": {"name": "a"}, "n": 3}),
        ];
        sort(&mut v);
        let n: Vec<Option<i64>> = v.iter().map(|r| r["n"].as_i64()).collect();
        assert_eq!(n, [None, Some(1), Some(2), Some(3)]);
    }
}
