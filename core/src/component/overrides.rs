//! Environment overrides of the workload's configuration, applied to a copy of the Workload before
//! rendering (upstream `MergeWorkloadOverrides`, `internal/pipeline/component/context/workload.go`).
//!
//! `env` and `files` are merged **by key**: an override whose key the base list has replaces that
//! entry in place; the others are appended after the base entries, in override order. A
//! ReleaseBinding's `container.resources` replaces the container's `resources`.
//!
//! Upstream's Workload has one `container`. A proposal-era Workload lists `containers` (a map or a
//! list); its environment overrides were component-wide (the first implementation merged them into
//! one `configurations` list for all containers), so here they apply to every container. A
//! Workload with neither gets a `container` holding the overrides, as upstream's zero-valued
//! container would.

use serde_json::{Map, Value};

use crate::fieldpath::FieldPath;

use super::kinds::{KeyedList, WorkloadOverrides};

/// The workload spec with the overrides applied. `Err` names the malformed part of the Workload
/// (a path relative to the Workload object) and what is wrong with it.
pub(crate) fn apply(spec: &Value, ov: &WorkloadOverrides) -> Result<Value, (FieldPath, String)> {
    let spec_at = FieldPath::root().key("spec");
    let mut out = spec.clone();
    let Value::Object(m) = &mut out else {
        return Err((spec_at, "the Workload's spec is not a map".into()));
    };
    let cs_at = spec_at.key("containers");
    match m.get_mut("containers") {
        Some(Value::Object(cs)) => {
            for (name, c) in cs.iter_mut() {
                container(c, ov, &cs_at.key(name))?;
            }
            return Ok(out);
        }
        Some(Value::Array(cs)) => {
            for (i, c) in cs.iter_mut().enumerate() {
                container(c, ov, &cs_at.index(i))?;
            }
            return Ok(out);
        }
        _ => {}
    }
    let c = m
        .entry("container")
        .or_insert_with(|| Value::Object(Map::new()));
    if c.is_null() {
        *c = Value::Object(Map::new());
    }
    container(c, ov, &spec_at.key("container"))?;
    Ok(out)
}

fn container(
    c: &mut Value,
    ov: &WorkloadOverrides,
    at: &FieldPath,
) -> Result<(), (FieldPath, String)> {
    let Value::Object(m) = c else {
        return Err((at.clone(), "a container must be a map".into()));
    };
    merge_into(m, "env", &ov.env, at)?;
    // The first implementation's Workload called the list `file`; keep whichever the Workload uses.
    let files_key = if m.contains_key("file") && !m.contains_key("files") {
        "file"
    } else {
        "files"
    };
    merge_into(m, files_key, &ov.files, at)?;
    if let Some(r) = &ov.resources {
        m.insert("resources".into(), r.clone());
    }
    Ok(())
}

fn merge_into(
    m: &mut Map<String, Value>,
    key: &str,
    ov: &KeyedList,
    at: &FieldPath,
) -> Result<(), (FieldPath, String)> {
    if ov.entries.is_empty() {
        return Ok(());
    }
    let base = match m.get(key) {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => a.clone(),
        Some(_) => {
            return Err((
                at.key(key),
                format!("{key} must be a list of {{key, …}} entries"),
            ))
        }
    };
    m.insert(key.into(), Value::Array(merge_by_key(&base, ov)));
    Ok(())
}

/// Same key replaces in place; new keys are appended in override order.
pub(crate) fn merge_by_key(base: &[Value], ov: &KeyedList) -> Vec<Value> {
    let key_of = |v: &Value| v.get("key").and_then(Value::as_str).map(str::to_string);
    let mut used = vec![false; ov.entries.len()];
    let mut out: Vec<Value> = base
        .iter()
        .map(|b| {
            let found = key_of(b).and_then(|k| ov.entries.iter().position(|(ok, _)| *ok == k));
            match found {
                Some(i) => {
                    used[i] = true;
                    ov.entries[i].1.clone()
                }
                None => b.clone(),
            }
        })
        .collect();
    out.extend(
        ov.entries
            .iter()
            .zip(&used)
            .filter(|(_, u)| !**u)
            .map(|((_, e), _)| e.clone()),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(entries: &[Value]) -> KeyedList {
        KeyedList {
            entries: entries
                .iter()
                .map(|e| (e["key"].as_str().unwrap().to_string(), e.clone()))
                .collect(),
        }
    }

    #[test]
    fn same_key_in_place_new_keys_appended_in_order() {
        let base = [
            json!({"key": "A", "value": "1"}),
            json!({"key": "B", "value": "2"}),
            json!({"key": "C", "value": "3"}),
        ];
        let ov = list(&[
            json!({"key": "Z", "value": "new"}),
            json!({"key": "B", "value": "two"}),
            json!({"key": "Y", "value": "new2"}),
        ]);
        let keys: Vec<String> = merge_by_key(&base, &ov)
            .iter()
            .map(|e| {
                format!(
                    "{}={}",
                    e["key"].as_str().unwrap(),
                    e["value"].as_str().unwrap()
                )
            })
            .collect();
        assert_eq!(keys, ["A=1", "B=two", "C=3", "Z=new", "Y=new2"]);
    }

    #[test]
    fn applies_to_the_container_or_every_container() {
        let ov = WorkloadOverrides {
            env: list(&[json!({"key": "L", "value": "debug"})]),
            files: list(&[json!({"key": "f", "mountPath": "/c", "value": "x"})]),
            resources: None,
        };
        let one = apply(
            &json!({"container": {"image": "i", "env": [{"key": "L", "value": "info"}]}}),
            &ov,
        )
        .unwrap();
        assert_eq!(
            one["container"]["env"],
            json!([{"key": "L", "value": "debug"}])
        );
        assert_eq!(one["container"]["files"][0]["key"], json!("f"));
        let many = apply(
            &json!({"containers": {"a": {"image": "i"}, "b": {"image": "j", "file": []}}}),
            &ov,
        )
        .unwrap();
        assert_eq!(many["containers"]["a"]["env"][0]["value"], json!("debug"));
        assert_eq!(many["containers"]["b"]["file"][0]["key"], json!("f"));
        let none = apply(&json!({"image": "i"}), &ov).unwrap();
        assert_eq!(none["container"]["env"][0]["key"], json!("L"));
        let (at, why) = apply(&json!({"container": {"env": "x"}}), &ov).expect_err("an error");
        assert_eq!(at.to_string(), "spec.container.env");
        assert!(
            why.contains("env must be a list of {key, …} entries"),
            "{why}"
        );
    }
}
