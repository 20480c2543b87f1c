//! Applying patch operations to the rendered resources.
//!
//! Every operation must do something: a target that matches no resource, a selector that matches
//! no list item (or several), an index out of range, a path through a scalar are errors, never
//! silent skips. Variables in names, keys, selectors and values are resolved first.
//!
//! A dotted key continues into a string map: `metadata.annotations.prometheus.io/scrape: "true"`
//! sets the annotation `prometheus.io/scrape`, because annotations (like labels, `data`,
//! `nodeSelector`) are maps of strings in the kind's schema and cannot hold nested maps. Without a
//! schema (custom resources) the rule applies to `metadata.labels` and `metadata.annotations`.

use serde_json::{Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::fieldpath::FieldPath;
use crate::openapi::{FieldRef, Schemas};

use super::kpatch::{Action, Pos, Seg, Target};
use super::package::PatchFile;
use super::variables::{Resolver, VarError};

/// A concrete path step after variable resolution.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    Select(String, String),
}

fn show(path: &[Step]) -> String {
    let mut s = String::new();
    for st in path {
        match st {
            Step::Key(k) if k.contains('.') || k.is_empty() => s.push_str(&format!("[{k:?}]")),
            Step::Key(k) => {
                if !s.is_empty() {
                    s.push('.');
                }
                s.push_str(k);
            }
            Step::Index(i) => s.push_str(&format!("[{i}]")),
            Step::Select(k, v) => s.push_str(&format!("[{k}={v}]")),
        }
    }
    s
}

/// An operation failure, placed by the caller.
struct OpError {
    code: crate::diag::Code,
    message: String,
    hint: String,
}

impl OpError {
    fn op(message: String, hint: &str) -> Self {
        Self {
            code: codes::KUREL_PATCH_OP,
            message,
            hint: hint.into(),
        }
    }
}

impl From<VarError> for OpError {
    fn from(e: VarError) -> Self {
        Self {
            code: e.code,
            message: e.message,
            hint: e.hint,
        }
    }
}

fn item_matches(item: &Value, key: &str, want: &str) -> bool {
    match item.get(key) {
        Some(Value::String(s)) => s == want,
        Some(Value::Number(n)) => n.to_string() == want,
        Some(Value::Bool(b)) => b.to_string() == want,
        _ => false,
    }
}

fn select_index(list: &[Value], key: &str, want: &str, at: &str) -> Result<usize, OpError> {
    let hits: Vec<usize> = list
        .iter()
        .enumerate()
        .filter(|(_, it)| item_matches(it, key, want))
        .map(|(i, _)| i)
        .collect();
    match hits.as_slice() {
        [one] => Ok(*one),
        [] => {
            let have: Vec<String> = list
                .iter()
                .filter_map(|it| it.get(key))
                .map(|v| {
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string())
                })
                .collect();
            Err(OpError::op(
                format!("no item of {at} has {key}={want}"),
                &if have.is_empty() {
                    format!(
                        "the list has {} item(s), none with a {key} field",
                        list.len()
                    )
                } else {
                    format!("{key} values in the list: {}", have.join(", "))
                },
            ))
        }
        many => Err(OpError::op(
            format!("{} items of {at} have {key}={want}", many.len()),
            "use a selector that matches exactly one item, or an index",
        )),
    }
}

fn pos_index(list: &[Value], pos: &Pos, at: &str) -> Result<usize, OpError> {
    match pos {
        Pos::Index(i) if *i < list.len() => Ok(*i),
        Pos::Index(i) => Err(OpError::op(
            format!("index {i} is out of range: {at} has {} item(s)", list.len()),
            "indexes start at 0; use [-] to append",
        )),
        Pos::Select(k, v) => select_index(list, k, v, at),
    }
}

/// Walk to the node at `path`, creating missing maps when `create` is set.
fn walk<'a>(root: &'a mut Value, path: &[Step], create: bool) -> Result<&'a mut Value, OpError> {
    let mut cur = root;
    for (i, st) in path.iter().enumerate() {
        let here = show(&path[..i]);
        let here = if here.is_empty() {
            "the resource".to_string()
        } else {
            here
        };
        match st {
            Step::Key(k) => {
                if cur.is_null() && create {
                    *cur = Value::Object(Map::new());
                }
                let Value::Object(m) = cur else {
                    return Err(OpError::op(
                        format!("{here} is {}, so it has no field {k:?}", kind(cur)),
                        "check the path: it goes through a value that is not a map",
                    ));
                };
                if !m.contains_key(k) {
                    if !create {
                        return Err(OpError::op(
                            format!("{} does not exist", show(&path[..=i])),
                            "nothing to change there; check the path",
                        ));
                    }
                    m.insert(k.clone(), Value::Null);
                }
                cur = m
                    .get_mut(k)
                    .ok_or_else(|| OpError::op("internal".into(), "report a bug"))?;
            }
            Step::Index(n) => {
                let Value::Array(a) = cur else {
                    return Err(OpError::op(
                        format!("{here} is {}, not a list", kind(cur)),
                        "index only into lists",
                    ));
                };
                let len = a.len();
                cur = a.get_mut(*n).ok_or_else(|| {
                    OpError::op(
                        format!("index {n} is out of range: {here} has {len} item(s)"),
                        "indexes start at 0; use [-] to append",
                    )
                })?;
            }
            Step::Select(k, v) => {
                let Value::Array(a) = cur else {
                    return Err(OpError::op(
                        format!(
                            "{here} is {}, not a list, so [{k}={v}] selects nothing",
                            kind(cur)
                        ),
                        "selectors pick an item of a list",
                    ));
                };
                let idx = select_index(a, k, v, &here)?;
                cur = &mut a[idx];
            }
        }
    }
    Ok(cur)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "missing (null)",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

/// Apply one action at a path of one object.
fn act(obj: &mut Value, path: &[Step], action: &Action) -> Result<(), OpError> {
    match action {
        Action::Set(v) => {
            let Some((last, parent)) = path.split_last() else {
                return Err(OpError::op("the path is empty".into(), "name a field"));
            };
            let at = show(parent);
            let p = walk(obj, parent, true)?;
            match last {
                Step::Key(k) => {
                    if p.is_null() {
                        *p = Value::Object(Map::new());
                    }
                    match p {
                        Value::Object(m) => {
                            m.insert(k.clone(), v.clone());
                        }
                        other => {
                            return Err(OpError::op(
                                format!("{at} is {}, so it has no field {k:?}", kind(other)),
                                "check the path",
                            ))
                        }
                    }
                }
                Step::Index(_) | Step::Select(..) => {
                    let Value::Array(a) = p else {
                        return Err(OpError::op(
                            format!("{at} is {}, not a list", kind(p)),
                            "check the path",
                        ));
                    };
                    let i = match last {
                        Step::Index(i) => pos_index(a, &Pos::Index(*i), &at)?,
                        Step::Select(k, val) => select_index(a, k, val, &at)?,
                        Step::Key(_) => unreachable!("handled above"),
                    };
                    a[i] = v.clone();
                }
            }
            Ok(())
        }
        Action::Append(v) | Action::Insert { value: v, .. } => {
            let at = show(path);
            let l = walk(obj, path, true)?;
            if l.is_null() {
                *l = Value::Array(Vec::new());
            }
            let Value::Array(a) = l else {
                return Err(OpError::op(
                    format!("{at} is {}, not a list", kind(l)),
                    "append and insert work on lists",
                ));
            };
            match action {
                Action::Insert {
                    before, at: pos, ..
                } => {
                    let i = pos_index(a, pos, &at)?;
                    a.insert(if *before { i } else { i + 1 }, v.clone());
                }
                _ => a.push(v.clone()),
            }
            Ok(())
        }
        Action::Delete => {
            let Some((last, parent)) = path.split_last() else {
                return Err(OpError::op("the path is empty".into(), "name a field"));
            };
            let at = show(parent);
            let p = walk(obj, parent, false)?;
            match (p, last) {
                (Value::Object(m), Step::Key(k)) => {
                    if m.shift_remove(k).is_none() {
                        return Err(OpError::op(
                            format!("{} does not exist, so it cannot be deleted", show(path)),
                            "remove the delete line, or fix the path",
                        ));
                    }
                }
                (Value::Array(a), Step::Index(i)) => {
                    let i = pos_index(a, &Pos::Index(*i), &at)?;
                    a.remove(i);
                }
                (Value::Array(a), Step::Select(k, v)) => {
                    let i = select_index(a, k, v, &at)?;
                    a.remove(i);
                }
                (other, _) => {
                    return Err(OpError::op(
                        format!("{} cannot be deleted: {at} is {}", show(path), kind(other)),
                        "check the path",
                    ))
                }
            }
            Ok(())
        }
        Action::DeleteItem(pos) => {
            let at = show(path);
            let l = walk(obj, path, false)?;
            let Value::Array(a) = l else {
                return Err(OpError::op(
                    format!("{at} is {}, not a list", kind(l)),
                    "delete=… removes a list item",
                ));
            };
            let i = pos_index(a, pos, &at)?;
            a.remove(i);
            Ok(())
        }
        Action::Merge(v) => {
            let at = show(path);
            let t = walk(obj, path, true)?;
            if !t.is_object() && !t.is_null() {
                return Err(OpError::op(
                    format!("{at} is {}, not a map", kind(t)),
                    "merge into a map",
                ));
            }
            json_patch::merge(t, v);
            Ok(())
        }
        Action::JsonPatch(v) => {
            let ops: json_patch::Patch = serde_json::from_value(v.clone()).map_err(|e| {
                OpError::op(
                    format!("invalid JSON patch: {e}"),
                    "write RFC 6902 operations",
                )
            })?;
            // Atomic: a failed operation leaves the object unchanged.
            json_patch::patch(obj, &ops).map_err(|e| {
                OpError::op(
                    format!("JSON patch failed: {e}"),
                    "check the operation's path and value",
                )
            })
        }
    }
}

fn resolve_target(t: &Target, r: &Resolver) -> Result<Target, VarError> {
    Ok(Target {
        kind: r.resolve_text(&t.kind)?,
        name: r.resolve_text(&t.name)?,
        namespace: t
            .namespace
            .as_deref()
            .map(|n| r.resolve_text(n))
            .transpose()?,
    })
}

fn resolve_path(path: &[Seg], r: &Resolver) -> Result<Vec<Step>, VarError> {
    path.iter()
        .map(|s| {
            Ok(match s {
                Seg::Key(k) => Step::Key(r.resolve_text(k)?),
                Seg::Index(i) => Step::Index(*i),
                Seg::Select { key, value } => {
                    Step::Select(r.resolve_text(key)?, r.resolve_text(value)?)
                }
            })
        })
        .collect()
}

/// The schema path of a patch path (selectors stand for "some item").
fn schema_path(path: &[Step]) -> FieldPath {
    FieldPath(
        path.iter()
            .map(|s| match s {
                Step::Key(k) => crate::fieldpath::Segment::Key(k.clone()),
                Step::Index(i) => crate::fieldpath::Segment::Index(*i),
                Step::Select(..) => crate::fieldpath::Segment::Index(0),
            })
            .collect(),
    )
}

fn resolve_action(
    a: &Action,
    r: &Resolver,
    base: &FieldPath,
    wants_string: &dyn Fn(&FieldPath) -> bool,
) -> Result<Action, VarError> {
    // Appended and inserted values land inside the list, not at it.
    let item = base.index(0);
    let at = match a {
        Action::Append(_) | Action::Insert { .. } => &item,
        _ => base,
    };
    let v = |x: &Value| -> Result<Value, VarError> {
        let mut errs = Vec::new();
        let out = r.resolve_tree_typed(x, at, wants_string, &mut errs);
        match errs.into_iter().next() {
            Some((_, e)) => Err(e),
            None => Ok(out),
        }
    };
    let pos = |p: &Pos| -> Result<Pos, VarError> {
        Ok(match p {
            Pos::Index(i) => Pos::Index(*i),
            Pos::Select(k, val) => Pos::Select(r.resolve_text(k)?, r.resolve_text(val)?),
        })
    };
    Ok(match a {
        Action::Set(x) => Action::Set(v(x)?),
        Action::Append(x) => Action::Append(v(x)?),
        Action::Insert { before, at, value } => Action::Insert {
            before: *before,
            at: pos(at)?,
            value: v(value)?,
        },
        Action::Delete => Action::Delete,
        Action::DeleteItem(p) => Action::DeleteItem(pos(p)?),
        Action::Merge(x) => Action::Merge(v(x)?),
        Action::JsonPatch(x) => Action::JsonPatch(v(x)?),
    })
}

/// Whether the node at `path` of an object of this kind is a map of strings (labels, annotations,
/// data, nodeSelector…), into which a dotted key continues as one key.
fn is_string_map(schemas: &Schemas, obj: &Value, path: &[Step]) -> bool {
    let fp = schema_path(path);
    let api = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let in_metadata = matches!(path, [Step::Key(m), Step::Key(l)] if m == "metadata" && (l == "labels" || l == "annotations"));
    let Some(ks) = schemas.lookup(api, kind) else {
        return in_metadata;
    };
    ks.field_with(&fp, |f| match f {
        FieldRef::Schema(node) => {
            node.get("properties").is_none()
                && matches!(node.get("additionalProperties"), Some(ap) if ap.get("type").and_then(Value::as_str) == Some("string")
                    || ap.get("type").and_then(Value::as_array).is_some_and(|a| a.iter().any(|t| t == "string")))
        }
        _ => in_metadata,
    })
}

/// Join the tail of a path into one key where it enters a string map.
fn join_string_map_keys(
    schemas: &Schemas,
    obj: &Value,
    path: Vec<Step>,
    action: &Action,
) -> Vec<Step> {
    // Only plain keys can be joined; list operations keep their structure.
    if !matches!(action, Action::Set(_) | Action::Delete) {
        return path;
    }
    for i in 1..path.len().saturating_sub(1) {
        let rest = &path[i..];
        if rest.len() >= 2
            && rest.iter().all(|s| matches!(s, Step::Key(_)))
            && is_string_map(schemas, obj, &path[..i])
        {
            let joined = rest
                .iter()
                .filter_map(|s| match s {
                    Step::Key(k) => Some(k.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join(".");
            let mut out = path[..i].to_vec();
            out.push(Step::Key(joined));
            return out;
        }
    }
    path
}

fn matches_target(obj: &Value, t: &Target) -> bool {
    // Direct lookups: `Value::pointer` allocates per token, and this runs per operation and
    // resource of every instance; the maps are small, so scanned rather than hashed.
    let field = crate::lookup::field;
    let kind = field(obj, "kind").and_then(Value::as_str).unwrap_or("");
    let meta = |k: &str| {
        field(obj, "metadata")
            .and_then(|m| field(m, k))
            .and_then(Value::as_str)
    };
    let name = meta("name").unwrap_or("");
    let ns = meta("namespace");
    kind.eq_ignore_ascii_case(&t.kind)
        && name == t.name
        && t.namespace.as_deref().is_none_or(|want| ns == Some(want))
}

/// Apply one patch file's operations. Returns verbose detail lines (with `details`; none
/// without); errors are collected, and a failing operation leaves its object as it was (the next
/// operations see it unchanged).
pub fn apply_patch(
    objects: &mut [Value],
    patch: &PatchFile,
    resolver: &Resolver,
    schemas: &Schemas,
    errors: &mut Vec<Diagnostic>,
    details: bool,
) -> Vec<String> {
    apply(objects, patch, resolver, schemas, errors, true, details).unwrap_or_default()
}

/// [`apply_patch`] changing each object in place, without the copy that keeps a failing
/// operation from leaving it half changed: `None` as soon as an operation fails, the objects
/// then in no state to go on from. Operations rarely fail (and a failure fails the render), so
/// a caller applies in place, and applies again with [`apply_patch`] from the start when it
/// gets `None`, for the diagnostics of every operation.
pub fn apply_patch_in_place(
    objects: &mut [Value],
    patch: &PatchFile,
    resolver: &Resolver,
    schemas: &Schemas,
    errors: &mut Vec<Diagnostic>,
    details: bool,
) -> Option<Vec<String>> {
    apply(objects, patch, resolver, schemas, errors, false, details)
}

fn apply(
    objects: &mut [Value],
    patch: &PatchFile,
    resolver: &Resolver,
    schemas: &Schemas,
    errors: &mut Vec<Diagnostic>,
    careful: bool,
    keep_details: bool,
) -> Option<Vec<String>> {
    let mut details = Vec::new();
    for op in &patch.ops {
        let place = |code, message: String, hint: String| {
            let mut d = Diagnostic::error(code, message)
                .in_file(&patch.file)
                .with_hint(hint);
            if let Some(l) = op.line {
                d = d.at_line(l, None);
            }
            d
        };
        let resolved = (|| -> Result<(Target, Vec<Step>, Action), VarError> {
            let target = resolve_target(&op.target, resolver)?;
            let path = resolve_path(&op.path, resolver)?;
            // The kind's schema, taken from a resource the target names, decides where a number
            // must be written as a string.
            let kind_of = objects
                .iter()
                .find(|o| matches_target(o, &target))
                .map(|o| {
                    (
                        o.get("apiVersion")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                        o.get("kind")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string(),
                    )
                });
            let wants = |p: &FieldPath| match &kind_of {
                Some((api, kind)) => super::validate::wants_string(schemas, api, kind, p),
                None => false,
            };
            let action = resolve_action(&op.action, resolver, &schema_path(&path), &wants)?;
            Ok((target, path, action))
        })();
        let (target, path, action) = match resolved {
            Ok(x) => x,
            Err(e) => {
                errors.push(place(e.code, e.message, e.hint));
                continue;
            }
        };
        let hits: Vec<usize> = objects
            .iter()
            .enumerate()
            .filter(|(_, o)| matches_target(o, &target))
            .map(|(i, _)| i)
            .collect();
        if hits.is_empty() {
            let same_kind: Vec<String> = objects
                .iter()
                .filter(|o| {
                    o.get("kind")
                        .and_then(Value::as_str)
                        .is_some_and(|k| k.eq_ignore_ascii_case(&target.kind))
                })
                .filter_map(|o| {
                    o.pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .collect();
            let hint = if same_kind.is_empty() {
                format!("the package has no {} resource; patches can only change resources under resources/", target.kind)
            } else {
                format!(
                    "{} resources in the package: {}",
                    target.kind.to_lowercase(),
                    same_kind.join(", ")
                )
            };
            errors.push(place(
                codes::KUREL_PATCH_TARGET,
                format!(
                    "patch {} targets {target}, which matches no resource",
                    patch.id
                ),
                hint,
            ));
            continue;
        }
        for i in hits {
            let obj = &mut objects[i];
            let path = join_string_map_keys(schemas, obj, path.clone(), &action);
            let done = if careful {
                // Work on a copy so a failing operation leaves the object as it was.
                let mut work = obj.clone();
                act(&mut work, &path, &action).map(|()| *obj = work)
            } else {
                act(obj, &path, &action)
            };
            match done {
                // Formatted only when kept: a fleet's instances apply thousands of operations.
                Ok(()) if !keep_details => {}
                Ok(()) => {
                    details.push(format!(
                        "  {}:{}: {target}: {}",
                        patch.file,
                        op.line.map(|l| l.to_string()).unwrap_or_else(|| "-".into()),
                        op.text
                    ));
                }
                Err(_) if !careful => return None,
                Err(e) => errors.push(place(
                    e.code,
                    format!("patch {} on {target}: {}", patch.id, e.message),
                    e.hint,
                )),
            }
        }
    }
    Some(details)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(obj: Value, path: Vec<Step>, action: Action) -> Result<Value, String> {
        let mut o = obj;
        act(&mut o, &path, &action)
            .map(|_| o)
            .map_err(|e| e.message)
    }

    fn k(s: &str) -> Step {
        Step::Key(s.into())
    }

    #[test]
    fn set_creates_maps_and_selects_items() {
        let o = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}]}});
        let out = run(
            o.clone(),
            vec![
                k("spec"),
                k("containers"),
                Step::Select("name".into(), "b".into()),
                k("resources"),
                k("limits"),
                k("cpu"),
            ],
            Action::Set(json!("1")),
        )
        .unwrap();
        assert_eq!(
            out["spec"]["containers"][1]["resources"]["limits"]["cpu"],
            "1"
        );
        let e = run(
            o.clone(),
            vec![
                k("spec"),
                k("containers"),
                Step::Select("name".into(), "z".into()),
                k("x"),
            ],
            Action::Set(json!(1)),
        )
        .unwrap_err();
        assert!(e.contains("no item"), "{e}");
        let e = run(
            o,
            vec![k("spec"), k("containers"), Step::Index(5)],
            Action::Set(json!(1)),
        )
        .unwrap_err();
        assert!(e.contains("out of range"), "{e}");
    }

    #[test]
    fn list_operations() {
        let o = json!({"l": [{"n": "a"}, {"n": "b"}]});
        let ins = |before, at| Action::Insert {
            before,
            at,
            value: json!({"n": "x"}),
        };
        let names = |v: Value| {
            v["l"]
                .as_array()
                .unwrap()
                .iter()
                .map(|i| i["n"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join("")
        };
        assert_eq!(
            names(run(o.clone(), vec![k("l")], Action::Append(json!({"n": "c"}))).unwrap()),
            "abc"
        );
        assert_eq!(
            names(run(o.clone(), vec![k("l")], ins(true, Pos::Index(0))).unwrap()),
            "xab"
        );
        assert_eq!(
            names(run(o.clone(), vec![k("l")], ins(false, Pos::Index(0))).unwrap()),
            "axb"
        );
        assert_eq!(
            names(
                run(
                    o.clone(),
                    vec![k("l")],
                    ins(true, Pos::Select("n".into(), "b".into()))
                )
                .unwrap()
            ),
            "axb"
        );
        assert_eq!(
            names(
                run(
                    o.clone(),
                    vec![k("l")],
                    ins(false, Pos::Select("n".into(), "b".into()))
                )
                .unwrap()
            ),
            "abx"
        );
        assert_eq!(
            names(
                run(
                    o.clone(),
                    vec![k("l")],
                    Action::DeleteItem(Pos::Select("n".into(), "a".into()))
                )
                .unwrap()
            ),
            "b"
        );
        assert_eq!(
            names(run(o.clone(), vec![k("l"), Step::Index(1)], Action::Delete).unwrap()),
            "a"
        );
        let refused = run(o.clone(), vec![k("missing")], Action::Delete).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("missing does not exist, so it cannot be deleted"),
            "{refused}"
        );
        let out = run(o, vec![k("new")], Action::Append(json!(1))).unwrap();
        assert_eq!(out["new"], json!([1]));
    }

    #[test]
    fn dotted_keys_continue_into_string_maps() {
        let schemas = Schemas::bundled();
        let obj = json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}});
        let path = vec![
            k("metadata"),
            k("annotations"),
            k("prometheus"),
            k("io/scrape"),
        ];
        let joined =
            join_string_map_keys(&schemas, &obj, path.clone(), &Action::Set(json!("true")));
        assert_eq!(
            joined,
            vec![k("metadata"), k("annotations"), k("prometheus.io/scrape")]
        );
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        let joined = join_string_map_keys(
            &schemas,
            &cm,
            vec![k("data"), k("app"), k("conf")],
            &Action::Set(json!("x")),
        );
        assert_eq!(joined, vec![k("data"), k("app.conf")]);
        // Not a string map: the path is kept.
        let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}});
        let p = vec![k("spec"), k("template"), k("spec")];
        assert_eq!(
            join_string_map_keys(&schemas, &d, p.clone(), &Action::Set(json!(1))),
            p
        );
    }
}
