//! Helper functions of component templates, registered on each evaluation context.
//!
//! | function | what it does |
//! | --- | --- |
//! | `merge(a, b, …)` / `oc_merge(a, b, …)` | shallow merge of maps, later arguments win (`a.merge(b)`, kro's member form, still works) |
//! | `oc_omit()` / `omit()` | removes the map entry or list element holding it |
//! | `oc_generate_name(s, …)` / `sanitizeK8sResourceName(s, …)` | a DNS-subdomain-safe name (≤ 253 bytes) with a hash suffix |
//! | `oc_dns_label(s, …)` | the same, ≤ 63 bytes (a DNS label: Service and port names) |
//! | `oc_hash(s)` | 8 hex digits of the FNV-32a hash of a string |
//!
//! The name algorithm is OpenChoreo's (`internal/dataplane/kubernetes/name.go`) so generated names
//! match upstream byte for byte.

use std::collections::HashMap;
use std::sync::Arc;

use cel::objects::{Key, Map};
use cel::{Context, ExecutionError, FunctionContext, Value};
use sha2::{Digest, Sha256};

use crate::expr::cel::Omit;

/// Names this module adds to the shared environment, for the compile-time function check.
pub(crate) const FUNCTIONS: &[&str] = &[
    "merge",
    "oc_merge",
    "oc_omit",
    "omit",
    "oc_generate_name",
    "sanitizeK8sResourceName",
    "oc_dns_label",
    "oc_hash",
    // Upstream's helper macros on `configurations`, `dependencies` and `workload`
    // (internal/pipeline/component/context/cel_extensions.go).
    "toConfigFileList",
    "toSecretFileList",
    "toContainerEnvFrom",
    "toContainerVolumeMounts",
    "toVolumes",
    "toConfigEnvsByContainer",
    "toSecretEnvsByContainer",
    "toServicePorts",
    "toContainerEnvs",
    "toEndpointResources",
];

type Handler =
    fn(&FunctionContext<'_, '_>, Option<Value>, Vec<Value>) -> Result<Value, ExecutionError>;

/// Register the helpers on a context. `merge` replaces kro's member-only `merge` with one that
/// accepts both forms.
pub(crate) fn register(ctx: &mut Context<'_, '_>) {
    let handlers: &[(&str, Handler)] = &[
        ("merge", merge),
        ("oc_merge", merge),
        ("oc_omit", omit),
        ("oc_generate_name", generate_name),
        ("sanitizeK8sResourceName", generate_name),
        ("oc_dns_label", dns_label),
        ("oc_hash", hash),
        ("toConfigFileList", helper),
        ("toSecretFileList", helper),
        ("toContainerEnvFrom", helper),
        ("toContainerVolumeMounts", helper),
        ("toVolumes", helper),
        ("toConfigEnvsByContainer", helper),
        ("toSecretEnvsByContainer", helper),
        ("toServicePorts", helper),
        ("toContainerEnvs", helper),
        ("toEndpointResources", helper),
    ];
    for &(name, h) in handlers {
        // The names are not declared by the environment, so registration cannot be refused.
        let _ = ctx.add_function(name, move |ftx: &FunctionContext| invoke(ftx, h));
    }
}

/// A helper's call, charged to the evaluation budget as kiln's library functions are (its
/// arguments and result copied, the result within the size limit).
fn invoke(ftx: &FunctionContext<'_, '_>, h: Handler) -> Result<Value, ExecutionError> {
    crate::expr::library::charged(ftx, || call(ftx, h))
}

fn call(ftx: &FunctionContext<'_, '_>, h: Handler) -> Result<Value, ExecutionError> {
    let this = match &ftx.this {
        Some(t) => Some(Value::try_from(t.as_ref())?),
        None => None,
    };
    let args = ftx
        .args
        .iter()
        .map(|a| Value::try_from(a.as_ref()))
        .collect::<Result<Vec<_>, _>>()?;
    h(ftx, this, args)
}

fn fail(ftx: &FunctionContext<'_, '_>, msg: impl ToString) -> ExecutionError {
    ExecutionError::function_error(ftx.name, msg)
}

fn merge(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    let all: Vec<Value> = this.into_iter().chain(args).collect();
    if all.len() < 2 {
        return Err(fail(ftx, format!("{} requires at least 2 maps", ftx.name)));
    }
    let mut out: HashMap<Key, Value> = HashMap::new();
    for v in all {
        match v {
            Value::Map(m) => out.extend(m.map.iter().map(|(k, v)| (k.clone(), v.clone()))),
            other => {
                return Err(fail(
                    ftx,
                    format!("{} merges maps, got {:?}", ftx.name, other.type_of()),
                ))
            }
        }
    }
    Ok(Value::Map(Map { map: Arc::new(out) }))
}

fn omit(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    if this.is_some() || !args.is_empty() {
        return Err(fail(ftx, "oc_omit() takes no arguments"));
    }
    Ok(Value::Opaque(Arc::new(Omit)))
}

/// Which precomputed view a helper returns, by the variable it is called on. Upstream expands
/// these macros only on the bare identifiers `configurations`, `dependencies` and `workload`; the
/// receiver is recognised here by its shape (the three variables have disjoint keys).
fn helper_view(name: &str, receiver: &Map) -> Option<&'static str> {
    let has = |k: &str| {
        receiver
            .map
            .contains_key(&Key::String(Arc::new(k.to_string())))
    };
    let configurations = has("configs") && has("secrets");
    let dependencies = has("envVars") && has("items");
    let workload = has("container") && has("endpoints");
    Some(match name {
        "toConfigFileList" if configurations => "configFileList",
        "toSecretFileList" if configurations => "secretFileList",
        "toContainerEnvFrom" if configurations => "containerEnvFrom",
        "toContainerVolumeMounts" if configurations => "configVolumeMounts",
        "toContainerVolumeMounts" if dependencies => "dependencyVolumeMounts",
        "toVolumes" if configurations => "configVolumes",
        "toVolumes" if dependencies => "dependencyVolumes",
        "toConfigEnvsByContainer" if configurations => "configEnvs",
        "toSecretEnvsByContainer" if configurations => "secretEnvs",
        "toServicePorts" if workload => "servicePorts",
        "toContainerEnvs" if dependencies => "dependencyEnvVars",
        _ => return None,
    })
}

fn helper(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    let receiver = match &this {
        Some(Value::Map(m)) => m,
        _ => {
            return Err(fail(
                ftx,
                format!(
                    "{} is called on configurations, dependencies or workload, e.g. configurations.{}()",
                    ftx.name, ftx.name
                ),
            ))
        }
    };
    if ftx.name == "toEndpointResources" {
        return endpoint_resources(ftx, receiver, &args);
    }
    if !args.is_empty() {
        return Err(fail(ftx, format!("{}() takes no arguments", ftx.name)));
    }
    let Some(view) = helper_view(ftx.name, receiver) else {
        return Err(fail(
            ftx,
            format!(
                "{} is not defined on this value (see docs/component-types.md, helper functions)",
                ftx.name
            ),
        ));
    };
    let derived = ftx
        .ptx
        .get_variable(super::upstream::DERIVED)
        .map(|v| Value::try_from(v.as_ref()))
        .transpose()?;
    match derived {
        Some(Value::Map(d)) => d
            .map
            .get(&Key::String(Arc::new(view.to_string())))
            .cloned()
            .ok_or_else(|| fail(ftx, format!("{} has no value (a bug in kiln)", ftx.name))),
        _ => Err(fail(
            ftx,
            format!(
                "{}() exists in the context of upstream kinds (ComponentType, ClusterComponentType, Trait, ClusterTrait) only",
                ftx.name
            ),
        )),
    }
}

/// `workload.toEndpointResources(name)`: upstream's macro is an optional index into the routes
/// extracted from the endpoints' API schemas (`derived.endpointResources[?name]`): the endpoint's
/// routes, or `optional.none()` for an endpoint without any (no schema, or one that does not
/// parse, or an endpoint name the workload does not have).
fn endpoint_resources(
    ftx: &FunctionContext<'_, '_>,
    receiver: &Map,
    args: &[Value],
) -> Result<Value, ExecutionError> {
    let is_workload = helper_view("toServicePorts", receiver).is_some();
    let [Value::String(name)] = args else {
        return Err(fail(
            ftx,
            "workload.toEndpointResources takes one endpoint name",
        ));
    };
    if !is_workload {
        return Err(fail(ftx, "toEndpointResources is called on workload"));
    }
    let routes = ftx
        .ptx
        .get_variable(super::upstream::DERIVED)
        .map(|v| Value::try_from(v.as_ref()))
        .transpose()?
        .and_then(|d| match d {
            Value::Map(m) => m
                .map
                .get(&Key::String(Arc::new("endpointResources".into())))
                .cloned(),
            _ => None,
        })
        .and_then(|r| match r {
            Value::Map(m) => m.map.get(&Key::String(name.clone())).cloned(),
            _ => None,
        });
    Ok(Value::Opaque(Arc::new(match routes {
        Some(r) => cel::objects::OptionalValue::of(r),
        None => cel::objects::OptionalValue::none(),
    })))
}

fn name_parts(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Vec<String>, ExecutionError> {
    if this.is_some() {
        return Err(fail(ftx, format!("{} is a global function", ftx.name)));
    }
    let mut parts = Vec::new();
    match args.as_slice() {
        [Value::List(items)] => {
            // Non-string list items are ignored, as upstream does.
            for i in items.iter() {
                if let Value::String(s) = i {
                    parts.push(s.to_string());
                }
            }
        }
        _ => {
            for a in &args {
                match a {
                    Value::String(s) => parts.push(s.to_string()),
                    other => {
                        return Err(fail(
                            ftx,
                            format!("{} takes strings, got {:?}", ftx.name, other.type_of()),
                        ))
                    }
                }
            }
        }
    }
    if parts.is_empty() {
        return Err(fail(ftx, format!("{} needs at least one string", ftx.name)));
    }
    Ok(parts)
}

fn generate_name(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    let parts = name_parts(ftx, this, args)?;
    Ok(Value::String(Arc::new(safe_name(&parts, 253))))
}

fn dns_label(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    let parts = name_parts(ftx, this, args)?;
    Ok(Value::String(Arc::new(safe_name(&parts, 63))))
}

fn hash(
    ftx: &FunctionContext<'_, '_>,
    this: Option<Value>,
    args: Vec<Value>,
) -> Result<Value, ExecutionError> {
    match (this, args.as_slice()) {
        (None, [Value::String(s)]) => Ok(Value::String(Arc::new(format!(
            "{:08x}",
            fnv32a(s.as_bytes())
        )))),
        _ => Err(fail(ftx, "oc_hash takes one string")),
    }
}

/// FNV-1a, 32 bits.
pub(crate) fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// OpenChoreo's name algorithm: sanitise each part, give each an equal share of the length left
/// after the hash and separators (the remainder to the first parts), join with `-`, append `-` and
/// 8 hex digits of SHA-256 over the original parts joined by `-`, trim non-alphanumerics at both
/// ends.
pub(crate) fn safe_name(parts: &[String], limit: usize) -> String {
    safe_name_with(parts, limit, "")
}

/// [`safe_name`] with `extra` appended (after a `-`) to the hashed text only, when not empty:
/// upstream's `GenerateK8sNameWithExtraHashInput`, which lets a secret's remote reference change
/// a name without appearing in it.
pub(crate) fn safe_name_with(parts: &[String], limit: usize, extra_hash: &str) -> String {
    let n = parts.len().max(1);
    let budget_total = limit.saturating_sub(8 + n);
    let base = budget_total / n;
    let extra = budget_total % n;
    let mut pieces = Vec::with_capacity(n);
    for (i, p) in parts.iter().enumerate() {
        let budget = base + usize::from(i < extra);
        pieces.push(truncate(&sanitize(p), budget));
    }
    let mut hashed = parts.join("-");
    if !extra_hash.is_empty() {
        hashed.push('-');
        hashed.push_str(extra_hash);
    }
    let digest = Sha256::digest(hashed.as_bytes());
    let hex: String = digest.iter().take(4).map(|b| format!("{b:02x}")).collect();
    let joined = format!("{}-{hex}", pieces.join("-"));
    joined
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_string()
}

fn sanitize(s: &str) -> String {
    let lower = s.to_lowercase();
    let mapped: String = lower
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect();
    mapped.trim_matches(|c| c == '-' || c == '.').to_string()
}

/// At most `max` bytes, cut at a character boundary.
fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    // Expectations from OpenChoreo's internal/template/engine_test.go.
    #[test]
    fn upstream_name_vectors() {
        assert_eq!(
            safe_name(&p(&["Hello World!"]), 253),
            "hello-world-7f83b165"
        );
        assert_eq!(
            safe_name(&p(&["my-app", "v1.2.3"]), 253),
            "my-app-v1.2.3-4f878dd8"
        );
        assert_eq!(
            safe_name(
                &p(&["front", "-", "end", "-", "prod", "-", "us-west", "-", "99"]),
                253
            ),
            "front--end--prod--us-west--99-d5cf2aae"
        );
        assert_eq!(
            safe_name(&p(&["payment-service", "-", "v2.0"]), 253),
            "payment-service--v2.0-38fcb255"
        );
        assert_eq!(
            safe_name(
                &p(&[
                    "very-long-endpoint-name",
                    "very-long-component-name",
                    "very-long-env-name"
                ]),
                63
            ),
            "very-long-endpoint-very-long-compone-very-long-env-nam-23ab5d45"
        );
        assert_eq!(
            safe_name(&p(&["http", "my-service", "prod", "default"]), 63),
            "http-my-service-prod-default-800d0dd2"
        );
        assert_eq!(safe_name(&p(&["My App!"]), 63), "my-app-6e06c02a");
    }

    /// The helpers are charged to the evaluation budget as kiln's library functions are
    /// (issue 39): their work grows with what they read, and `merge` cannot build a map over the
    /// size limit.
    #[test]
    fn helpers_are_metered() {
        use crate::expr::budget::{execute_counted, overrun};
        use crate::expr::cel::{compile_with, new_context, ExprLimits};
        use crate::limits::EvalBudget;
        use serde_json::json;

        let run = |src: &str, n: usize, budget: &EvalBudget| {
            let c = compile_with(src, &ExprLimits::default(), FUNCTIONS).unwrap();
            let mut ctx = new_context();
            register(&mut ctx);
            let m: serde_json::Map<String, serde_json::Value> =
                (0..n).map(|i| (format!("k{i}"), json!(i))).collect();
            let ls: Vec<String> = (0..n).map(|i| format!("v{i}")).collect();
            ctx.add_variable_as_val("s", crate::expr::value::to_val(&json!("x".repeat(n))));
            ctx.add_variable_as_val("ls", crate::expr::value::to_val(&json!(ls)));
            ctx.add_variable_as_val("m", crate::expr::value::to_val(&json!(m)));
            execute_counted(&c.program, &ctx, budget)
        };
        let budget = EvalBudget::default();
        for src in [
            "lists.range(8).all(i, merge(m, m).size() > 0)",
            "lists.range(8).all(i, oc_merge(m, {'a': 1}).size() > 0)",
            "lists.range(8).all(i, oc_hash(s) != '')",
            "lists.range(8).all(i, oc_generate_name(s, s) != '')",
            "lists.range(8).all(i, oc_dns_label(ls) != '')",
        ] {
            let (r1, u1) = run(src, 1 << 14, &budget);
            let (r2, u2) = run(src, 1 << 15, &budget);
            assert_eq!(r1.unwrap(), Value::Bool(true), "{src}");
            assert_eq!(r2.unwrap(), Value::Bool(true), "{src}");
            assert!(
                u1 >= 1000 && u2 as f64 >= 1.6 * u1 as f64,
                "{src}: {u1} units at the small size, {u2} at twice that"
            );
        }
        let small = EvalBudget {
            max_value_size: 1000,
            ..EvalBudget::default()
        };
        let (r, _) = run("merge(m, {'extra': 'x'}).size()", 600, &small);
        let err = r.unwrap_err();
        let msg = overrun(&err).unwrap_or_else(|| panic!("{err}"));
        assert!(msg.contains("merge built a map"), "{msg}");
    }

    #[test]
    fn fnv_vectors() {
        assert_eq!(format!("{:08x}", fnv32a(b"hello world")), "d58b3fa7");
        assert_eq!(format!("{:08x}", fnv32a(b"test data")), "578fbe87");
    }
}
