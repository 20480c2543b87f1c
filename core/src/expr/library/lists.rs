//! List functions: kro's pure index edits (`pkg/cel/library/lists.go`: `lists.setAtIndex`,
//! `lists.insertAtIndex`, `lists.removeAtIndex`), the Kubernetes list library
//! (`k8s.io/apiserver/pkg/cel/library/lists.go`: `sum`, `min`, `max`, `isSorted`, `indexOf`,
//! `lastIndexOf`; kro enables it at version 0, so `includes` is absent), and cel-go's lists
//! extension (`ext/lists.go`: `distinct`, `sort`, `sortBy`, `flatten`, `slice`, `reverse`).
//!
//! The extension's functions are declared ahead of the `cel` crate's ([`declare`]) so that each
//! charges the evaluation budget for what it copies and compares before doing it, and checks the
//! size of the list it builds first; they answer as the crate's do. `distinct` finds equal
//! elements through a hash of each, not by comparing every pair (which is quadratic).

use std::cmp::Ordering;
use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};

use cel::common::types::{
    CelBool, CelBytes, CelDouble, CelDuration, CelInt, CelList, CelString, CelTimestamp, CelUInt,
    Kind, Type, DYN_TYPE, LIST_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::{Env, ExecutionError, Value};

use super::{list_value, to_cow, type_name, Call};
use crate::expr::budget::{admit, charge, charge_val};
use crate::expr::weight::{self, Caps, Weight, ENTRIES_PER_UNIT};

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
    // Converted (a copy), then compared with each element.
    for v in [list, item] {
        charge_val("indexOf()", v.as_ref())?;
    }
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

/// Declares the lists extension's functions ahead of the crate's (see the module documentation).
/// The receiver is `dyn` where the crate declares the same signature on `list`.
pub(super) fn declare(env: &mut Env) {
    type F = cel::common::functions::Function;
    let members: [(&str, &str, Type, Vec<Type>, F); 6] = [
        ("distinct", "kiln.list_distinct", DYN_TYPE, vec![], distinct),
        ("sort", "kiln.list_sort", DYN_TYPE, vec![], sort),
        (
            "@sortByAssociatedKeys",
            "kiln.list_sort_by_keys",
            LIST_TYPE,
            vec![DYN_TYPE],
            sort_by_keys,
        ),
        ("flatten", "kiln.list_flatten", DYN_TYPE, vec![], flatten),
        (
            "flatten",
            "kiln.list_flatten_depth",
            LIST_TYPE,
            vec![DYN_TYPE],
            flatten,
        ),
        (
            "slice",
            "kiln.list_slice",
            LIST_TYPE,
            vec![DYN_TYPE, DYN_TYPE],
            slice,
        ),
    ];
    for (name, id, receiver, args, f) in members {
        let res = env.add_member_overload(name, id, receiver, args, f);
        debug_assert!(res.is_ok(), "{id}: {res:?}");
    }
}

fn no_member_overload(name: &str, a: &[CowVal<'_, '_>]) -> ExecutionError {
    ExecutionError::no_such_member_overload(
        name,
        a.iter().map(|x| x.get_type().name().to_string()).collect(),
    )
}

/// The receiver, when it is a list.
fn receiver<'a, 'b, 'v>(
    name: &str,
    a: &'a [CowVal<'b, 'v>],
) -> Result<&'a CowVal<'b, 'v>, ExecutionError> {
    match a.first() {
        Some(list) if list.get_type().kind() == Kind::List && list.as_iterable().is_some() => {
            Ok(list)
        }
        _ => Err(no_member_overload(name, a)),
    }
}

fn elements<'a, 'v>(list: &'a (dyn Val + 'v)) -> Vec<&'a (dyn Val + 'v)> {
    let mut out = Vec::new();
    if let Some(items) = list.as_iterable() {
        let mut it = items.iter();
        while let Some(x) = it.next() {
            out.push(x);
        }
    }
    out
}

fn owned_list<'b, 'v>(items: Vec<Box<dyn Val + 'v>>) -> CowVal<'b, 'v> {
    CowVal::owned(CelList::from(items))
}

/// A list of `w` that `name` is about to build by copying: refused over the size limit, charged.
fn building(name: &str, w: Weight) -> Result<(), ExecutionError> {
    admit(name, Kind::List, w, false, true)
}

/// Charge `n` comparisons of elements, each reading about `bytes` bytes of strings.
fn comparisons(name: &str, n: usize, bytes: usize) -> Result<(), ExecutionError> {
    let per = 1 + bytes / weight::BYTES_PER_UNIT;
    charge(name, (n / ENTRIES_PER_UNIT).saturating_mul(per) as u64)
}

/// `n·log2(n)`, what sorting `n` elements compares.
fn n_log_n(n: usize) -> usize {
    n.saturating_mul((usize::BITS - n.leading_zeros()) as usize)
}

/// `<list>.distinct() -> list`: the first of each set of equal elements, in order. Equality is
/// CEL's (`1`, `1u` and `1.0` are one element).
pub(super) fn distinct<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver("distinct", &a)?;
    if a.len() != 1 {
        return Err(no_member_overload("distinct", &a));
    }
    // Hashing reads every element once. An element that meets others under its hash is compared
    // with each (equal ones, and unequal ones that hash alike: opaque values all do), which
    // reads it again each time.
    charge_val("distinct()", list.as_ref())?;
    let mut buckets: HashMap<u64, Vec<usize>> = HashMap::new();
    let mut unique: Vec<&dyn Val> = Vec::new();
    for item in elements(list.as_ref()) {
        let bucket = buckets.entry(hash_of(item)).or_default();
        if !bucket.is_empty() {
            let w = weight::of_val(item, Caps::NONE);
            comparisons("distinct()", bucket.len() * ENTRIES_PER_UNIT, w.bytes)?;
        }
        if bucket.iter().any(|&i| item.equals(unique[i])) {
            continue;
        }
        bucket.push(unique.len());
        unique.push(item);
    }
    let mut kept = Weight::default();
    for x in &unique {
        let w = weight::of_val(*x, Caps::NONE);
        kept.bytes += w.bytes;
        kept.entries += w.entries + 1;
    }
    building("distinct()", kept)?;
    Ok(owned_list(
        unique.into_iter().map(|x| x.clone_as_boxed()).collect(),
    ))
}

/// A hash under which equal CEL values (by [`Val::equals`]) hash alike: numbers by their value
/// as a double (so `1`, `1u` and `1.0` meet), lists element by element, maps whatever the order
/// of their entries. Values of other types hash by kind alone and are told apart by comparing.
fn hash_of(v: &dyn Val) -> u64 {
    let mut h = DefaultHasher::new();
    hash_into(v, &mut h);
    h.finish()
}

fn hash_into(v: &dyn Val, h: &mut DefaultHasher) {
    let number = |h: &mut DefaultHasher, f: f64| {
        0u8.hash(h);
        // -0.0 == 0.0; NaN equals nothing, so its hash does not matter.
        (if f == 0.0 { 0.0f64 } else { f }).to_bits().hash(h);
    };
    match v.get_type().kind() {
        Kind::Int => match v.downcast_ref::<CelInt>() {
            Some(i) => number(h, *i.inner() as f64),
            None => 9u8.hash(h),
        },
        Kind::UInt => match v.downcast_ref::<CelUInt>() {
            Some(u) => number(h, *u.inner() as f64),
            None => 9u8.hash(h),
        },
        Kind::Double => match v.downcast_ref::<CelDouble>() {
            Some(d) => number(h, *d.inner()),
            None => 9u8.hash(h),
        },
        Kind::String => {
            1u8.hash(h);
            if let Some(s) = v.downcast_ref::<CelString>() {
                s.inner().hash(h);
            }
        }
        Kind::Bytes => {
            2u8.hash(h);
            if let Some(b) = v.downcast_ref::<CelBytes>() {
                b.inner().hash(h);
            }
        }
        Kind::Boolean => {
            3u8.hash(h);
            if let Some(b) = v.downcast_ref::<CelBool>() {
                b.inner().hash(h);
            }
        }
        Kind::Duration => {
            4u8.hash(h);
            if let Some(d) = v.downcast_ref::<CelDuration>() {
                d.inner().hash(h);
            }
        }
        Kind::Timestamp => {
            5u8.hash(h);
            if let Some(t) = v.downcast_ref::<CelTimestamp>() {
                // Equal instants in different offsets are equal timestamps.
                t.inner().timestamp().hash(h);
                t.inner().timestamp_subsec_nanos().hash(h);
            }
        }
        Kind::List => {
            6u8.hash(h);
            for x in elements(v) {
                hash_into(x, h);
            }
        }
        Kind::Map => {
            7u8.hash(h);
            let (Some(keys), Some(index)) = (v.as_iterable(), v.as_indexer()) else {
                return;
            };
            let mut sum = 0u64;
            let mut it = keys.iter();
            while let Some(k) = it.next() {
                let mut e = DefaultHasher::new();
                hash_into(k, &mut e);
                if let Ok(x) = index.get(k) {
                    hash_into(x.as_ref(), &mut e);
                }
                sum = sum.wrapping_add(e.finish());
            }
            sum.hash(h);
        }
        kind => format!("{kind:?}").hash(h),
    }
}

/// The elements of `list`, copied: what the crate's `sort`, `flatten` and `reverse` start from.
fn copies<'v>(list: &(dyn Val + 'v)) -> Vec<Box<dyn Val + 'v>> {
    elements(list)
        .into_iter()
        .map(|x| x.clone_as_boxed())
        .collect()
}

/// `<list>.sort() -> list`: ascending; the elements must all be of one comparable type
/// (`[1, 1u].sort()` is an error, as in cel-go).
pub(super) fn sort<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver("sort", &a)?;
    if a.len() != 1 {
        return Err(no_member_overload("sort", &a));
    }
    let w = charge_val("sort()", list.as_ref())?;
    let n = elements(list.as_ref()).len();
    comparisons("sort()", n_log_n(n), w.bytes / n.max(1))?;
    building("sort()", w)?;
    let mut items = copies(list.as_ref());
    sort_by_key(&mut items, |x| x.as_ref(), "sort")?;
    Ok(owned_list(items))
}

/// `@sortByAssociatedKeys(keys)`, the expansion of `sortBy`: the elements in the ascending order
/// of their keys, the key of each at its index; equal keys keep their order.
fn sort_by_keys<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let name = "@sortByAssociatedKeys";
    let (Some(list), Some(keys)) = (a.first(), a.get(1)) else {
        return Err(no_member_overload(name, &a));
    };
    if keys.get_type().kind() != Kind::List {
        return Err(no_member_overload(name, &a));
    }
    let w = charge_val("sortBy()", list.as_ref())?;
    let kw = charge_val("sortBy()", keys.as_ref())?;
    let keys = elements(keys.as_ref());
    comparisons(
        "sortBy()",
        n_log_n(keys.len()),
        kw.bytes / keys.len().max(1),
    )?;
    building("sortBy()", w)?;
    let items = copies(list.as_ref());
    if keys.len() != items.len() {
        return Err(ExecutionError::function_error(
            "sortBy",
            format!(
                "{name}() expected a list of the same size as the associated keys list, \
                 but got {} and {} elements respectively.",
                items.len(),
                keys.len()
            ),
        ));
    }
    let mut keyed: Vec<_> = keys.into_iter().zip(items).collect();
    sort_by_key(&mut keyed, |(k, _)| *k, "sortBy")?;
    Ok(owned_list(keyed.into_iter().map(|(_, x)| x).collect()))
}

/// Sorts `items` by their keys, which must all be of one type, and comparable; errors are
/// reported as `function`'s. Each key is compared with the first one up front, which rules out
/// mixed types and a NaN (which compares to nothing), where the sort could panic.
fn sort_by_key<T>(
    items: &mut [T],
    key: impl Fn(&T) -> &dyn Val,
    function: &str,
) -> Result<(), ExecutionError> {
    if let Some(first) = items.first().map(&key) {
        for item in items.iter() {
            if key(item).get_type() != first.get_type() {
                return Err(ExecutionError::function_error(
                    function,
                    "list elements must have the same type",
                ));
            }
            compare_vals(first, key(item), function)?;
        }
    }
    let mut error = None;
    items.sort_by(|a, b| {
        compare_vals(key(a), key(b), function).unwrap_or_else(|e| {
            error.get_or_insert(e);
            Ordering::Equal
        })
    });
    error.map_or(Ok(()), Err)
}

fn compare_vals(a: &dyn Val, b: &dyn Val, function: &str) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| {
            ExecutionError::function_error(function, "list elements must be comparable")
        })?
        .compare(b)
}

/// `<list>.flatten([depth]) -> list`: the elements of nested lists spliced in, `depth` levels
/// deep (one by default). Maps are kept whole.
pub(super) fn flatten<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver("flatten", &a)?;
    let depth = match a.get(1) {
        None => 1,
        Some(d) => match d.downcast_ref::<CelInt>() {
            Some(d) => *d.inner(),
            None => return Err(no_member_overload("flatten", &a)),
        },
    };
    let depth = u64::try_from(depth)
        .map_err(|_| ExecutionError::function_error("flatten", "level must be non-negative"))?;
    // The flat list holds copies of what the nested ones held: no more than they weigh.
    let w = charge_val("flatten()", list.as_ref())?;
    building("flatten()", w)?;
    let mut flat = Vec::new();
    flatten_into(elements(list.as_ref()), depth, &mut flat);
    Ok(owned_list(flat))
}

/// Recursion as deep as the value nests (bounded where the value was made) and `depth` allows.
fn flatten_into<'v>(items: Vec<&(dyn Val + 'v)>, depth: u64, flat: &mut Vec<Box<dyn Val + 'v>>) {
    for x in items {
        if depth > 0 && x.get_type().kind() == Kind::List {
            flatten_into(elements(x), depth - 1, flat);
        } else {
            flat.push(x.clone_as_boxed());
        }
    }
}

/// `<list>.slice(start, end) -> list`: the elements from `start` up to, not including, `end`.
fn slice<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (Some(list), Some(start), Some(end)) = (
        a.first(),
        a.get(1).and_then(|x| x.downcast_ref::<CelInt>()),
        a.get(2).and_then(|x| x.downcast_ref::<CelInt>()),
    ) else {
        return Err(no_member_overload("slice", &a));
    };
    let (start, end) = (*start.inner(), *end.inner());
    let invalid = |reason: String| {
        ExecutionError::function_error("slice", format!("cannot slice({start}, {end}), {reason}"))
    };
    if start < 0 || end < 0 {
        return Err(invalid("negative indexes not supported".to_owned()));
    }
    if start > end {
        return Err(invalid(
            "start index must be less than or equal to end index".to_owned(),
        ));
    }
    let items = elements(list.as_ref());
    charge("slice()", (items.len() / ENTRIES_PER_UNIT) as u64)?;
    if (items.len() as i64) < end {
        return Err(invalid(format!("list is length {}", items.len())));
    }
    let kept = &items[start as usize..end as usize];
    let mut w = Weight::default();
    for x in kept {
        let xw = weight::of_val(*x, Caps::NONE);
        w.bytes += xw.bytes;
        w.entries += xw.entries + 1;
    }
    building("slice()", w)?;
    Ok(owned_list(
        kept.iter().map(|x| x.clone_as_boxed()).collect(),
    ))
}

/// `<list>.reverse() -> list` (the string form is `super::strings`').
pub(super) fn reverse<'b, 'v>(a: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let list = receiver("reverse", &a)?;
    let w = charge_val("reverse()", list.as_ref())?;
    building("reverse()", w)?;
    let mut items = copies(list.as_ref());
    items.reverse();
    Ok(owned_list(items))
}

#[cfg(test)]
mod extension_tests {
    use super::*;

    fn val(j: serde_json::Value) -> CowVal<'static, 'static> {
        CowVal::Owned(crate::expr::value::to_val(&j))
    }

    #[test]
    fn equal_values_hash_alike() {
        let pairs = [
            (Value::Int(1), Value::UInt(1)),
            (Value::Int(1), Value::Float(1.0)),
            (Value::Float(-0.0), Value::Int(0)),
            (
                Value::from(vec![Value::Int(1), Value::from("a")]),
                Value::from(vec![Value::Float(1.0), Value::from("a")]),
            ),
        ];
        for (x, y) in pairs {
            let (x, y): (Box<dyn Val>, Box<dyn Val>) =
                (x.try_into().unwrap(), y.try_into().unwrap());
            assert!(x.equals(y.as_ref()));
            assert_eq!(hash_of(x.as_ref()), hash_of(y.as_ref()));
        }
        let m1 = val(serde_json::json!({"a": 1, "b": [2, 3]}));
        let m2 = val(serde_json::json!({"b": [2, 3], "a": 1}));
        assert_eq!(hash_of(m1.as_ref()), hash_of(m2.as_ref()));
    }

    #[test]
    fn distinct_keeps_the_first_of_equal_elements() {
        let l: Box<dyn Val> = Value::from(vec![
            Value::Int(1),
            Value::UInt(1),
            Value::Float(2.0),
            Value::Int(2),
            Value::from("x"),
            Value::Float(f64::NAN),
            Value::Float(f64::NAN),
        ])
        .try_into()
        .unwrap();
        let out = distinct(vec![CowVal::Owned(l)]).unwrap();
        let out = Value::try_from(out.as_ref()).unwrap();
        let Value::List(items) = out else { panic!() };
        assert_eq!(items.len(), 5, "{items:?}");
        assert_eq!(items[0], Value::Int(1));
        assert_eq!(items[1], Value::Float(2.0));
    }
}
