//! kro's `runtime` library (`pkg/cel/library/runtime.go`): the `runtime` variable of custom status
//! conditions (`spec.schema.status.conditions`), with
//!
//! - `runtime.newCondition({type: 'X', status: 'True', reason: '…', message: '…'})`: a condition.
//!   The argument is a map literal with bare identifier keys; [`expand_new_condition`] checks and
//!   rewrites the keys at compile time, as kro's parse-time macro does;
//! - `runtime.condition(obj, 'X')`: the condition of that type among `obj.status.conditions`, or an
//!   empty condition when there is none.
//!
//! A condition is a map with exactly the string keys `type`, `status`, `reason` and `message`, so
//! field access works as in kro (the static checker types it as `kro.run.Condition`, which has only
//! those four fields).

use std::collections::HashMap;
use std::sync::Arc;

use cel::common::ast::{EntryExpr, Expr, LiteralValue};
use cel::objects::{Key, Map, Opaque};
use cel::parser::Expression;
use cel::{ExecutionError, Value};

use super::Call;

/// The name kro binds the runtime value to.
pub const VAR: &str = "runtime";
/// The CEL type name of the runtime value.
pub const RUNTIME_TYPE: &str = "kro.run.Runtime";
/// The CEL type name of conditions.
pub const CONDITION_TYPE: &str = "kro.run.Condition";
/// The fields of a condition, in output order.
pub const CONDITION_KEYS: [&str; 4] = ["type", "status", "reason", "message"];
/// The statuses a condition may have (metav1.ConditionStatus).
pub const STATUSES: [&str; 3] = ["True", "False", "Unknown"];

/// The stateless value of the `runtime` variable.
#[derive(Debug, PartialEq, Eq)]
pub struct Runtime;

impl Opaque for Runtime {
    fn runtime_type_name(&self) -> &str {
        RUNTIME_TYPE
    }
}

/// The `runtime` value to bind in a condition evaluation.
pub fn value() -> Value {
    Value::Opaque(Arc::new(Runtime))
}

fn condition(fields: [&str; 4]) -> Value {
    let map: HashMap<Key, Value> = CONDITION_KEYS
        .iter()
        .zip(fields)
        .map(|(k, v)| (Key::String(Arc::new((*k).to_string())), Value::from(v)))
        .collect();
    Value::Map(Map { map: Arc::new(map) })
}

fn is_runtime(v: &Value) -> bool {
    matches!(v, Value::Opaque(o) if o.runtime_type_name() == RUNTIME_TYPE)
}

fn type_name(v: &Value) -> String {
    super::type_name(v)
}

/// `runtime.newCondition(map(string, string)) -> Condition`: the values are checked here (the keys
/// were checked at compile time); a computed type or status is checked only now, as in kro.
pub(super) fn new_condition(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [arg]) = call.member::<1>()?;
    if !is_runtime(this) {
        return Err(call.no_overload());
    }
    let Value::Map(m) = arg else {
        return Err(call.error(format!(
            "runtime.newCondition: argument must be a map, got {}",
            type_name(arg)
        )));
    };
    let mut fields = [""; 4];
    for (i, key) in CONDITION_KEYS.iter().enumerate() {
        let Some(v) = m.map.get(&Key::String(Arc::new((*key).to_string()))) else {
            continue;
        };
        let Value::String(s) = v else {
            return Err(call.error(format!(
                "runtime.newCondition: {key} must be a string, got {}",
                type_name(v)
            )));
        };
        fields[i] = s.as_str();
    }
    if fields[0].is_empty() {
        return Err(call.error("runtime.newCondition: type must not be empty"));
    }
    if !STATUSES.contains(&fields[1]) {
        return Err(call.error(format!(
            "runtime.newCondition: status must be one of True, False, Unknown (got {:?})",
            fields[1]
        )));
    }
    Ok(condition(fields))
}

/// `runtime.condition(dyn, string) -> Condition`: the first condition of that type in
/// `obj.status.conditions`, or an empty condition (every field `""`) when there is none.
pub(super) fn lookup_condition(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [obj, wanted]) = call.member::<2>()?;
    if !is_runtime(this) {
        return Err(call.no_overload());
    }
    let Value::String(wanted) = wanted else {
        return Err(call.error(format!(
            "runtime.condition: type must be a string, got {}",
            type_name(wanted)
        )));
    };
    let key = |k: &str| Key::String(Arc::new(k.to_string()));
    let Value::Map(obj) = obj else {
        return Err(call.error(format!(
            "runtime.condition: obj must be an object, got {}",
            type_name(obj)
        )));
    };
    let empty = || condition([""; 4]);
    let Some(status) = obj.map.get(&key("status")) else {
        return Ok(empty());
    };
    let Value::Map(status) = status else {
        return Err(call.error("runtime.condition: obj.status must be an object"));
    };
    let Some(conditions) = status.map.get(&key("conditions")) else {
        return Ok(empty());
    };
    let Value::List(conditions) = conditions else {
        return Err(call.error("runtime.condition: obj.status.conditions must be a list"));
    };
    for c in conditions.iter() {
        let Value::Map(c) = c else {
            return Err(call.error(format!(
                "runtime.condition: unexpected condition element type {}",
                type_name(c)
            )));
        };
        // A field that is missing or not a string reads as "" (kro's conditionFromMap).
        let read = |k: &str| match c.map.get(&key(k)) {
            Some(Value::String(s)) => s.as_str().to_string(),
            _ => String::new(),
        };
        if read("type") == wanted.as_str() {
            let f = CONDITION_KEYS.map(read);
            return Ok(condition([&f[0], &f[1], &f[2], &f[3]]));
        }
    }
    Ok(empty())
}

/// Whether a value is a condition as this library makes them.
pub fn is_condition(v: &serde_json::Value) -> bool {
    v.as_object().is_some_and(|m| {
        m.len() == CONDITION_KEYS.len()
            && CONDITION_KEYS
                .iter()
                .all(|k| m.get(*k).is_some_and(serde_json::Value::is_string))
    })
}

/// kro's parse-time macro for `runtime.newCondition` (`newConditionMacro`): the argument must be a
/// map literal whose keys are bare identifiers among `type`, `status`, `reason` and `message`,
/// each at most once, with `type` and `status` present. The keys are rewritten into string
/// literals. A call whose receiver is not the identifier `runtime` is left alone.
///
/// Iterative: it runs on trees the depth limit has already accepted, but must not add a recursion
/// of its own.
pub fn expand_new_condition(root: &mut Expression) -> Result<(), String> {
    let mut stack: Vec<&mut Expression> = vec![root];
    while let Some(e) = stack.pop() {
        if let Expr::Call(c) = &mut e.expr {
            let on_runtime = c.func_name == "newCondition"
                && c.args.len() == 1
                && matches!(c.target.as_deref(), Some(t) if matches!(&t.expr, Expr::Ident(n) if n == VAR));
            if on_runtime {
                rewrite_keys(&mut c.args[0])?;
            }
        }
        match &mut e.expr {
            Expr::Call(c) => {
                if let Some(t) = c.target.as_deref_mut() {
                    stack.push(t);
                }
                stack.extend(c.args.iter_mut());
            }
            Expr::Comprehension(c) => {
                let c = &mut **c;
                stack.extend([
                    &mut c.iter_range,
                    &mut c.accu_init,
                    &mut c.loop_cond,
                    &mut c.loop_step,
                    &mut c.result,
                ]);
            }
            Expr::List(l) => stack.extend(l.elements.iter_mut()),
            Expr::Map(m) => {
                for entry in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut entry.expr {
                        stack.push(&mut me.key);
                        stack.push(&mut me.value);
                    }
                }
            }
            Expr::Struct(st) => {
                for entry in &mut st.entries {
                    match &mut entry.expr {
                        EntryExpr::StructField(f) => stack.push(&mut f.value),
                        EntryExpr::MapEntry(me) => {
                            stack.push(&mut me.key);
                            stack.push(&mut me.value);
                        }
                    }
                }
            }
            Expr::Select(s) => stack.push(&mut s.operand),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }
    Ok(())
}

fn rewrite_keys(arg: &mut Expression) -> Result<(), String> {
    let Expr::Map(m) = &mut arg.expr else {
        return Err("runtime.newCondition: argument must be a map literal".into());
    };
    let mut seen: Vec<String> = Vec::new();
    for entry in &mut m.entries {
        let EntryExpr::MapEntry(me) = &mut entry.expr else {
            continue;
        };
        let Expr::Ident(name) = &me.key.expr else {
            return Err("runtime.newCondition: keys must be bare identifiers (type, status, reason, message); quoted or computed keys are not allowed".into());
        };
        let name = name.clone();
        if !CONDITION_KEYS.contains(&name.as_str()) {
            return Err(format!(
                "runtime.newCondition: unknown key {name:?} (allowed: type, status, reason, message)"
            ));
        }
        if seen.contains(&name) {
            return Err(format!("runtime.newCondition: duplicate key {name:?}"));
        }
        me.key.expr = Expr::Literal(LiteralValue::String(name.clone().into()));
        seen.push(name);
    }
    for required in ["type", "status"] {
        if !seen.iter().any(|s| s == required) {
            return Err(format!("runtime.newCondition: '{required}' is required"));
        }
    }
    Ok(())
}
