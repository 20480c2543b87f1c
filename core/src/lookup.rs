//! Key lookup in small JSON maps.
//!
//! `serde_json::Map` (an `IndexMap` with the standard SipHash) hashes the key for every lookup.
//! Kubernetes objects are mostly small maps (`metadata`, `spec`, a container: two to ten keys),
//! where comparing the keys in order costs a fraction of hashing one. Rendering reads the same
//! few paths (`schema.spec.port`, `metadata.name`) in every unit, so this is a hot path.

use serde_json::{Map, Value};

/// Up to this many entries a map is scanned; larger maps use their hash index.
const SCAN_LIMIT: usize = 8;

/// `map.get(key)`, scanning small maps instead of hashing the key.
pub fn get<'a>(map: &'a Map<String, Value>, key: &str) -> Option<&'a Value> {
    if map.len() <= SCAN_LIMIT {
        map.iter().find(|(k, _)| k.as_str() == key).map(|(_, v)| v)
    } else {
        map.get(key)
    }
}

/// `value.get(key)` for a map `value`: [`get`] on it; `None` for anything else.
pub fn field<'a>(value: &'a Value, key: &str) -> Option<&'a Value> {
    get(value.as_object()?, key)
}

/// `map.get_mut(key)`, scanning small maps instead of hashing the key.
pub fn get_mut<'a>(map: &'a mut Map<String, Value>, key: &str) -> Option<&'a mut Value> {
    if map.len() <= SCAN_LIMIT {
        map.iter_mut()
            .find(|(k, _)| k.as_str() == key)
            .map(|(_, v)| v)
    } else {
        map.get_mut(key)
    }
}

/// `value.pointer(path)` (a JSON Pointer, RFC 6901), walking small maps with [`get`] and
/// without the copy of every token `Value::pointer` makes; a path with an escape (`~`) is left
/// to it.
pub fn pointer<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    if path.contains('~') {
        return value.pointer(path);
    }
    if path.is_empty() {
        return Some(value);
    }
    path.strip_prefix('/')?
        .split('/')
        .try_fold(value, |v, token| match v {
            Value::Object(m) => get(m, token),
            Value::Array(items) => {
                // As serde_json reads an index: no sign, no leading zero.
                if token.starts_with('+') || (token.starts_with('0') && token.len() != 1) {
                    return None;
                }
                items.get(token.parse::<usize>().ok()?)
            }
            _ => None,
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Same answers as the map's own lookups, for small and large maps, present and absent keys.
        #[test]
        fn lookups_agree_with_the_map(
            keys in prop::collection::vec("[a-d]{0,3}", 0..20),
            probe in "[a-d]{0,3}",
        ) {
            let mut m: Map<String, Value> = keys
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), Value::from(i)))
                .collect();
            prop_assert_eq!(get(&m, &probe), m.get(&probe));
            let v = Value::Object(m.clone());
            prop_assert_eq!(field(&v, &probe), v.get(&probe));
            let scalar = Value::from(1);
            prop_assert_eq!(field(&scalar, &probe), None);
            let expected = m.get(&probe).cloned();
            prop_assert_eq!(get_mut(&mut m, &probe).map(|v| v.clone()), expected);
        }

        /// Same answers as `Value::pointer`, through maps and lists, with escapes, indexes
        /// written every way and paths that do not start at the root.
        #[test]
        fn pointers_agree_with_serde_json(
            path in "(/([a-c~01+]{0,3}|[0-9]{1,2}|-)){0,4}|[a-c]{0,2}",
        ) {
            let doc = pointer_doc();
            prop_assert_eq!(pointer(&doc, &path), doc.pointer(&path));
        }
    }

    fn pointer_doc() -> Value {
        serde_json::json!({
            "a": {"b": [1, {"c": 2, "0": 3}], "~": 4, "a/b": 5, "": 6},
            "0": ["x", ["y", "z"]],
            "c": null,
            "b~1": 7,
        })
    }

    /// The spellings an index can be refused for, and escapes, each checked.
    #[test]
    fn pointer_edge_cases_agree_with_serde_json() {
        let doc = pointer_doc();
        for path in [
            "",
            "/",
            "a",
            "/a/",
            "/0/1",
            "/0/01",
            "/0/+1",
            "/0/1/1",
            "/0/-",
            "/a/b/1/0",
            "/a/~0",
            "/a/a~1b",
            "/b~01",
            "/a/b/1/c",
            "/c/x",
            "/0/18446744073709551616",
        ] {
            assert_eq!(pointer(&doc, path), doc.pointer(path), "{path:?}");
        }
    }
}
