//! kro's map functions (`pkg/cel/library/maps.go`): `<map>.merge(map)` and `<dyn>.deepMerge(dyn)`.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{ExecutionError, Value};

use super::Call;

/// `<map>.merge(map) -> map`: the union of both maps; on a shared key the argument's value wins.
pub(super) fn merge(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    match (this, other) {
        (Value::Map(a), Value::Map(b)) => {
            let mut out: HashMap<Key, Value> = (*a.map).clone();
            out.extend(b.map.iter().map(|(k, v)| (k.clone(), v.clone())));
            Ok(Value::Map(Map { map: Arc::new(out) }))
        }
        _ => Err(call.no_overload()),
    }
}

/// `<dyn>.deepMerge(dyn) -> dyn`: maps merge key by key, recursively; below the top, anything
/// else (lists, scalars, a map meeting a non-map) is replaced by the argument's value. Both sides
/// must be maps: kro's `deepMergeVals` fails with "no such overload" on a non-map receiver or
/// argument.
pub(super) fn deep_merge(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [other]) = call.member::<1>()?;
    match (this, other) {
        (Value::Map(_), Value::Map(_)) => Ok(deep(this, other)),
        _ => Err(call.no_overload()),
    }
}

fn deep(a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::Map(a), Value::Map(b)) => {
            let mut out: HashMap<Key, Value> = (*a.map).clone();
            for (k, v) in b.map.iter() {
                let merged = match out.get(k) {
                    Some(existing) => deep(existing, v),
                    None => v.clone(),
                };
                out.insert(k.clone(), merged);
            }
            Value::Map(Map { map: Arc::new(out) })
        }
        _ => b.clone(),
    }
}
