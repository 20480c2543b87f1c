//! List functions: kro's pure index edits (`pkg/cel/library/lists.go`: `lists.setAtIndex`,
//! `lists.insertAtIndex`, `lists.removeAtIndex`) and the Kubernetes list library
//! (`k8s.io/apiserver/pkg/cel/library/lists.go`: `sum`, `min`, `max`, `isSorted`, `indexOf`,
//! `lastIndexOf`). kro enables the Kubernetes library at version 0, so `includes` is absent.

use std::cmp::Ordering;

use cel::common::value::CowVal;
use cel::{ExecutionError, Value};

use super::{list_value, to_cow, type_name, Call};

/// `lists.setAtIndex(list, int, value) -> list`: index in `[0, size)`.
pub(super) fn set_at_index(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [list, idx, value] = call.global::<3>()?;
    let (list, idx) = (call.list(list)?, call.int(idx)?);
    let size = list.len() as i64;
    if idx < 0 || idx >= size {
        return Err(call.error(format!(
            "lists.setAtIndex: index {idx} out of bounds [0, {size})"
        )));
    }
    let mut out = (**list).clone();
    out[idx as usize] = value.clone();
    Ok(list_value(out))
}

/// `lists.insertAtIndex(list, int, value) -> list`: index in `[0, size]`; `size` appends.
pub(super) fn insert_at_index(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [list, idx, value] = call.global::<3>()?;
    let (list, idx) = (call.list(list)?, call.int(idx)?);
    let size = list.len() as i64;
    if idx < 0 || idx > size {
        return Err(call.error(format!(
            "lists.insertAtIndex: index {idx} out of bounds [0, {size}]"
        )));
    }
    let mut out = (**list).clone();
    out.insert(idx as usize, value.clone());
    Ok(list_value(out))
}

/// `lists.removeAtIndex(list, int) -> list`: index in `[0, size)`.
pub(super) fn remove_at_index(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let [list, idx] = call.global::<2>()?;
    let (list, idx) = (call.list(list)?, call.int(idx)?);
    let size = list.len() as i64;
    if idx < 0 || idx >= size {
        return Err(call.error(format!(
            "lists.removeAtIndex: index {idx} out of bounds [0, {size})"
        )));
    }
    let mut out = (**list).clone();
    out.remove(idx as usize);
    Ok(list_value(out))
}

/// `<list>.sum()`: of ints, uints, doubles or durations. An empty list sums to `0`: without a
/// checker the element type of an empty list is unknown, and cel-go's typed zero would be `0` for
/// the common case of ints.
pub(super) fn sum(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, []) = call.member::<0>()?;
    let list = call.list(this)?;
    let mut items = list.iter();
    let Some(first) = items.next() else {
        return Ok(Value::Int(0));
    };
    if !matches!(
        first,
        Value::Int(_) | Value::UInt(_) | Value::Float(_) | Value::Duration(_)
    ) {
        return Err(call.no_overload());
    }
    let mut acc = first.clone();
    for item in items {
        acc = match (&acc, item) {
            (Value::Int(a), Value::Int(b)) => a
                .checked_add(*b)
                .map(Value::Int)
                .ok_or_else(|| ExecutionError::Overflow("add", acc.clone(), item.clone()))?,
            (Value::UInt(a), Value::UInt(b)) => a
                .checked_add(*b)
                .map(Value::UInt)
                .ok_or_else(|| ExecutionError::Overflow("add", acc.clone(), item.clone()))?,
            (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
            (Value::Duration(a), Value::Duration(b)) => a
                .checked_add(b)
                .map(Value::Duration)
                .ok_or_else(|| ExecutionError::Overflow("add", acc.clone(), item.clone()))?,
            _ => {
                return Err(ExecutionError::no_such_overload(
                    "_+_",
                    vec![type_name(&acc), type_name(item)],
                ))
            }
        };
    }
    Ok(acc)
}

/// `<list>.min()`: the smallest element; an error on an empty list.
pub(super) fn min(call: &Call<'_>) -> Result<Value, ExecutionError> {
    extreme(call, Ordering::Less)
}

/// `<list>.max()`: the largest element; an error on an empty list.
pub(super) fn max(call: &Call<'_>) -> Result<Value, ExecutionError> {
    extreme(call, Ordering::Greater)
}

/// The first element no other element is `prefer` than.
fn extreme(call: &Call<'_>, prefer: Ordering) -> Result<Value, ExecutionError> {
    let (this, []) = call.member::<0>()?;
    let list = call.list(this)?;
    let mut items = list.iter();
    let Some(mut best) = items.next() else {
        return Err(call.error(format!("{} called on empty list", call.name)));
    };
    check_comparable(best)?;
    for item in items {
        if compare(item, best)? == prefer {
            best = item;
        }
    }
    Ok(best.clone())
}

/// `<list>.isSorted()`: whether no element is greater than the next.
pub(super) fn is_sorted(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, []) = call.member::<0>()?;
    let list = call.list(this)?;
    if let Some(first) = list.first() {
        check_comparable(first)?;
    }
    for pair in list.windows(2) {
        if compare(&pair[0], &pair[1])? == Ordering::Greater {
            return Ok(Value::Bool(false));
        }
    }
    Ok(Value::Bool(true))
}

/// Kubernetes' comparable element types: numbers, bool, string, bytes, duration, timestamp.
fn check_comparable(v: &Value) -> Result<(), ExecutionError> {
    match v {
        Value::Int(_)
        | Value::UInt(_)
        | Value::Float(_)
        | Value::Bool(_)
        | Value::String(_)
        | Value::Bytes(_)
        | Value::Duration(_)
        | Value::Timestamp(_) => Ok(()),
        _ => Err(ExecutionError::no_such_overload("_<_", vec![type_name(v)])),
    }
}

/// cel-go's ordering: within a type, and across int, uint and double by numeric value.
fn compare(a: &Value, b: &Value) -> Result<Ordering, ExecutionError> {
    let ord = match (a, b) {
        (Value::Bytes(x), Value::Bytes(y)) => Some(x.cmp(y)),
        _ => a.partial_cmp(b),
    };
    ord.ok_or_else(|| ExecutionError::no_such_overload("_<_", vec![type_name(a), type_name(b)]))
}

/// `<list>.indexOf(x)`, a typed overload: the first index of an element equal to `x`, or -1.
pub(super) fn index_of_overload<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, item) = overload_args(&args)?;
    let idx = list
        .iter()
        .position(|v| *v == item)
        .map_or(-1, |i| i as i64);
    to_cow(Value::Int(idx))
}

/// `<list>.lastIndexOf(x)`, a typed overload: the last index of an element equal to `x`, or -1.
pub(super) fn last_index_of_overload<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (list, item) = overload_args(&args)?;
    let idx = list
        .iter()
        .rposition(|v| *v == item)
        .map_or(-1, |i| i as i64);
    to_cow(Value::Int(idx))
}

fn overload_args(args: &[CowVal<'_, '_>]) -> Result<(Vec<Value>, Value), ExecutionError> {
    let [list, item] = args else {
        return Err(ExecutionError::invalid_argument_count(2, args.len()));
    };
    let list = match Value::try_from(list.as_ref())? {
        Value::List(l) => (*l).clone(),
        other => {
            return Err(ExecutionError::no_such_member_overload(
                "indexOf",
                vec![type_name(&other)],
            ))
        }
    };
    Ok((list, Value::try_from(item.as_ref())?))
}
