//! Addon patch operations on one resource: `add`, `replace`, `remove` (delegated to the `json-patch`
//! crate once the path is a plain pointer) and `mergeShallow` (OpenChoreo's own).
//!
//! - `add` creates missing parent maps first (and an empty list when the next token is `-`), as
//!   upstream does; a list index under a missing parent is an error.
//! - `remove` of a map key that is not there is a no-op; any other missing segment is an error.
//! - `mergeShallow` overlays the top-level keys of a map value onto the target map (nested maps are
//!   replaced, not merged); a missing, null or non-map target is replaced by the value.

use json_patch::jsonptr::PointerBuf;
use json_patch::{AddOperation, PatchOperation, RemoveOperation, ReplaceOperation};
use serde_json::{Map, Value};

use super::kinds::Op;

/// Apply one operation at a concrete pointer (unescaped tokens).
pub(crate) fn apply(
    doc: &mut Value,
    op: Op,
    tokens: &[String],
    value: Option<&Value>,
) -> Result<(), String> {
    let ptr = PointerBuf::from_tokens(tokens.iter().map(String::as_str));
    let value = || value.cloned().unwrap_or(Value::Null);
    let patch_op = match op {
        Op::Add => {
            ensure_parents(doc, tokens)?;
            match add_in_place(doc, tokens, value()) {
                Ok(()) => return Ok(()),
                Err(value) => PatchOperation::Add(AddOperation { path: ptr, value }),
            }
        }
        Op::Replace => {
            if tokens.last().map(String::as_str) == Some("-") {
                return Err("replace cannot target \"-\" (the end of a list)".into());
            }
            PatchOperation::Replace(ReplaceOperation {
                path: ptr,
                value: value(),
            })
        }
        Op::Remove => {
            if let Some((last, parents)) = tokens.split_last() {
                match lookup(doc, parents) {
                    Some(Value::Object(m)) if !m.contains_key(last) => return Ok(()),
                    Some(_) => {}
                    None => return Err(format!("path does not exist at /{}", parents.join("/"))),
                }
            }
            PatchOperation::Remove(RemoveOperation { path: ptr })
        }
        Op::MergeShallow => return merge_shallow(doc, tokens, value()),
    };
    json_patch::patch(doc, &[patch_op]).map_err(|e| describe(&e))
}

fn describe(e: &json_patch::PatchError) -> String {
    use json_patch::PatchErrorKind as K;
    match &e.kind {
        K::InvalidPointer => format!(
            "path {} does not exist (a missing parent, or an index out of range)",
            if e.path.as_str().is_empty() {
                "\"\""
            } else {
                e.path.as_str()
            }
        ),
        other => format!("{other} at {}", e.path),
    }
}

fn lookup<'v>(doc: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get(t)?,
            Value::Array(a) => a.get(t.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Create missing (or null) parent maps of the final token; a `-` after a missing parent makes it
/// an empty list.
fn ensure_parents(doc: &mut Value, tokens: &[String]) -> Result<(), String> {
    let Some((_, parents)) = tokens.split_last() else {
        return Ok(());
    };
    let mut cur = doc;
    for (i, t) in parents.iter().enumerate() {
        let next_is_append = tokens.get(i + 1).map(String::as_str) == Some("-");
        let next_is_index = tokens
            .get(i + 1)
            .is_some_and(|n| n.parse::<usize>().is_ok());
        let fresh = || {
            if next_is_append {
                Value::Array(Vec::new())
            } else {
                Value::Object(Map::new())
            }
        };
        cur = match cur {
            Value::Object(m) => {
                let missing = crate::lookup::get(m, t).is_none_or(Value::is_null);
                if missing {
                    if next_is_index {
                        return Err(format!(
                            "cannot index into /{}: it does not exist",
                            tokens[..=i].join("/")
                        ));
                    }
                    m.insert(t.clone(), fresh());
                }
                match crate::lookup::get_mut(m, t) {
                    Some(v) => v,
                    None => return Err(format!("cannot create /{}", tokens[..=i].join("/"))),
                }
            }
            Value::Array(a) => {
                let idx = t.parse::<usize>().map_err(|_| {
                    format!(
                        "{t:?} is not an index of the list at /{}",
                        tokens[..i].join("/")
                    )
                })?;
                let len = a.len();
                a.get_mut(idx).ok_or_else(|| {
                    format!(
                        "index {idx} is out of range at /{} (length {len})",
                        tokens[..i].join("/")
                    )
                })?
            }
            _ => {
                return Err(format!(
                    "/{} is a scalar; cannot descend into it",
                    tokens[..i].join("/")
                ))
            }
        };
    }
    Ok(())
}

fn merge_shallow(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), String> {
    let Value::Object(overlay) = value else {
        return Err("mergeShallow needs a map value".into());
    };
    match lookup_mut(doc, tokens) {
        Some(Value::Object(target)) => {
            for (k, v) in overlay {
                target.insert(k, v);
            }
            Ok(())
        }
        _ => {
            ensure_parents(doc, tokens)?;
            let value = match add_in_place(doc, tokens, Value::Object(overlay)) {
                Ok(()) => return Ok(()),
                Err(value) => value,
            };
            let ptr = PointerBuf::from_tokens(tokens.iter().map(String::as_str));
            json_patch::patch(
                doc,
                &[PatchOperation::Add(AddOperation { path: ptr, value })],
            )
            .map_err(|e| describe(&e))
        }
    }
}

/// RFC 6902's `add` (json_patch's) where its outcome is sure: every parent exists, and the last
/// token is a key of a map, or `-` or an index at most the length of a list. Every patch of every
/// unit adds: json_patch finds the parent by a pointer string whose every token it unescapes
/// into a fresh string and hashes, and copies the value once more. Anything else (a missing
/// parent, an index out of range or spelled `01`, a scalar) gets the value back, for json_patch
/// to answer with its own error.
fn add_in_place(doc: &mut Value, tokens: &[String], value: Value) -> Result<(), Value> {
    let Some((last, parents)) = tokens.split_last() else {
        return Err(value);
    };
    let mut cur = doc;
    for t in parents {
        let next = match cur {
            Value::Object(m) => crate::lookup::get_mut(m, t),
            Value::Array(a) => plain_index(t).and_then(|i| a.get_mut(i)),
            _ => None,
        };
        match next {
            Some(n) => cur = n,
            None => return Err(value),
        }
    }
    match cur {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let at = match last.as_str() {
                "-" => Some(a.len()),
                i => plain_index(i).filter(|i| *i <= a.len()),
            };
            match at {
                Some(i) => {
                    a.insert(i, value);
                    Ok(())
                }
                None => Err(value),
            }
        }
        _ => Err(value),
    }
}

/// A list index as JSON Pointer spells it: digits, no sign, no leading zero.
fn plain_index(t: &str) -> Option<usize> {
    let digits = !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits || (t.len() > 1 && t.starts_with('0')) {
        return None;
    }
    t.parse().ok()
}

fn lookup_mut<'v>(doc: &'v mut Value, tokens: &[String]) -> Option<&'v mut Value> {
    let mut cur = doc;
    for t in tokens {
        cur = match cur {
            Value::Object(m) => m.get_mut(t)?,
            Value::Array(a) => a.get_mut(t.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(p: &str) -> Vec<String> {
        p.trim_start_matches('/')
            .split('/')
            .map(str::to_string)
            .collect()
    }

    /// Where `add_in_place` adds, json_patch adds the same, and where it does not, json_patch is
    /// asked: the same documents either way.
    #[test]
    fn adds_in_place_as_json_patch_adds() {
        let docs = [
            json!({"a": {"b": 1, "-": 2}, "l": [1, 2, {"k": []}], "s": "x"}),
            json!([]),
        ];
        let paths = [
            "/a/c", "/a/b", "/a/-", "/l/-", "/l/0", "/l/2", "/l/3", "/l/01", "/l/+1", "/l/x",
            "/l/2/k/-", "/l/2/k/0", "/l/2/k/1", "/l/9/k", "/s/x", "/m/n", "/-", "/0", "/1",
            "/a/b/c",
        ];
        for d in &docs {
            for p in paths {
                let tokens = t(p);
                let mut fast = d.clone();
                let done = add_in_place(&mut fast, &tokens, json!("v")).is_ok();
                let mut slow = d.clone();
                let ptr = PointerBuf::from_tokens(tokens.iter().map(String::as_str));
                let patched = json_patch::patch(
                    &mut slow,
                    &[PatchOperation::Add(AddOperation {
                        path: ptr,
                        value: json!("v"),
                    })],
                );
                if done {
                    assert!(patched.is_ok(), "{d} {p}: json_patch refuses");
                    assert_eq!(fast, slow, "{d} {p}");
                } else {
                    assert_eq!(&fast, d, "{d} {p}: left as it was");
                }
            }
        }
        let mut d = json!({"l": [1]});
        assert!(add_in_place(&mut d, &t("/l/1"), json!(2)).is_ok());
        assert!(add_in_place(&mut d, &t("/l/0"), json!(0)).is_ok());
        assert!(add_in_place(&mut d, &t("/n"), json!(3)).is_ok());
        assert_eq!(d, json!({"l": [0, 1, 2], "n": 3}));
    }

    #[test]
    fn add_creates_parents_and_appends() {
        let mut d = json!({"spec": {}});
        apply(
            &mut d,
            Op::Add,
            &t("/spec/volumes/-"),
            Some(&json!({"name": "v"})),
        )
        .unwrap();
        apply(
            &mut d,
            Op::Add,
            &t("/spec/volumes/-"),
            Some(&json!({"name": "w"})),
        )
        .unwrap();
        apply(&mut d, Op::Add, &t("/spec/a/b"), Some(&json!(1))).unwrap();
        assert_eq!(
            d,
            json!({"spec": {"volumes": [{"name": "v"}, {"name": "w"}], "a": {"b": 1}}})
        );
        let refused =
            apply(&mut d, Op::Add, &t("/spec/missing/0"), Some(&json!(1))).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("cannot index into /spec/missing: it does not exist"),
            "{refused}"
        );
        apply(
            &mut d,
            Op::Add,
            &t("/spec/volumes/0"),
            Some(&json!("first")),
        )
        .unwrap();
        assert_eq!(d["spec"]["volumes"][0], json!("first"));
    }

    #[test]
    fn replace_and_remove() {
        let mut d = json!({"a": {"b": 1}, "l": [1, 2]});
        apply(&mut d, Op::Replace, &t("/a/b"), Some(&json!(2))).unwrap();
        let refused =
            apply(&mut d, Op::Replace, &t("/a/c"), Some(&json!(2))).expect_err("an error");
        assert!(
            refused.to_string().contains("path /a/c does not exist"),
            "{refused}"
        );
        apply(&mut d, Op::Remove, &t("/a/zz"), None).unwrap();
        let refused = apply(&mut d, Op::Remove, &t("/x/y"), None).expect_err("an error");
        assert!(
            refused.to_string().contains("path does not exist at /x"),
            "{refused}"
        );
        let refused = apply(&mut d, Op::Remove, &t("/l/5"), None).expect_err("an error");
        assert!(
            refused.to_string().contains("path /l/5 does not exist"),
            "{refused}"
        );
        apply(&mut d, Op::Remove, &t("/l/0"), None).unwrap();
        assert_eq!(d, json!({"a": {"b": 2}, "l": [2]}));
        // A key that is there is removed (a mutant that made every map removal a no-op survived).
        apply(&mut d, Op::Remove, &t("/a/b"), None).unwrap();
        assert_eq!(d, json!({"a": {}, "l": [2]}));
    }

    #[test]
    fn merge_shallow_overlays() {
        let mut d = json!({"m": {"a": {"x": 1}, "b": 2}});
        apply(
            &mut d,
            Op::MergeShallow,
            &t("/m"),
            Some(&json!({"a": {"y": 1}, "c": 3})),
        )
        .unwrap();
        assert_eq!(d, json!({"m": {"a": {"y": 1}, "b": 2, "c": 3}}));
        apply(&mut d, Op::MergeShallow, &t("/n/o"), Some(&json!({"k": 1}))).unwrap();
        assert_eq!(d["n"], json!({"o": {"k": 1}}));
        // A map inside a list (a container) is overlaid too, not replaced (a mutant that could not
        // look through lists survived).
        let mut c = json!({"containers": [{"name": "main", "env": []}]});
        apply(
            &mut c,
            Op::MergeShallow,
            &t("/containers/0"),
            Some(&json!({"image": "x"})),
        )
        .unwrap();
        assert_eq!(
            c,
            json!({"containers": [{"name": "main", "env": [], "image": "x"}]})
        );
        let refused =
            apply(&mut d, Op::MergeShallow, &t("/m"), Some(&json!(1))).expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("mergeShallow needs a map value"),
            "{refused}"
        );
    }
}
