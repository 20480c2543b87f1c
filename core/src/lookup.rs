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
    }
}
