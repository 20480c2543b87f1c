//! JSON Pointer paths extended with array filters, expanded into plain pointers.
//!
//! A patch path is a JSON Pointer (`/spec/template/spec/volumes/-`) whose segments may also be
//! `[?(@.field=='value')]` (every list element whose `field`, a dotted path, equals the text), `[*]`
//! (every element), `[N]`, `[-]`, or a key followed by such brackets
//! (`containers[?(@.name=='app')]`). Segments are RFC 6901-unescaped first (`~1` → `/`, `~0` → `~`),
//! so a `/` inside a filter value is written `~1`. Expansion walks the resource and yields one
//! concrete pointer per match, in list order; the standard operations are then handed to the
//! `json-patch` crate.
//!
//! A path with a filter or wildcard that matches nothing is an error; a filter applied to something
//! that is not a list is an error. Missing map keys may be traversed (so `add` can create them).

use serde_json::Value;

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    /// A map key, or a list index when it is a number and the value is a list (or `-`).
    Key(String),
    /// `[N]`.
    Index(usize),
    /// `[-]`.
    Append,
    /// `[*]`.
    All,
    /// `[?(@.a.b=='v')]`.
    Filter { field: Vec<String>, value: String },
}

/// Most pointers one path may expand to.
const MAX_EXPANSION: usize = 65_536;

/// Parse a path.
pub(crate) fn parse(path: &str) -> Result<Vec<Step>, String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Err(if path.is_empty() {
            "the root path \"\" cannot be patched".into()
        } else {
            format!("path {path:?} must start with /")
        });
    };
    let mut steps = Vec::new();
    for raw in rest.split('/') {
        // Most segments have no escape: not copied twice to find that out.
        if raw.contains('~') {
            let seg = raw.replace("~1", "/").replace("~0", "~");
            parse_segment(&seg, &mut steps)?;
        } else {
            parse_segment(raw, &mut steps)?;
        }
    }
    Ok(steps)
}

fn parse_segment(seg: &str, steps: &mut Vec<Step>) -> Result<(), String> {
    let Some(open) = seg.find('[') else {
        steps.push(Step::Key(seg.to_string()));
        return Ok(());
    };
    if !seg.ends_with(']') {
        // Not a bracket form: a key that happens to contain '['.
        steps.push(Step::Key(seg.to_string()));
        return Ok(());
    }
    if open > 0 {
        steps.push(Step::Key(seg[..open].to_string()));
    }
    let mut rest = &seg[open..];
    while !rest.is_empty() {
        let Some(body) = rest.strip_prefix('[') else {
            return Err(format!("malformed segment {seg:?}"));
        };
        let (inner, after) = if body.starts_with("?(") {
            let end = body
                .find(")]")
                .ok_or_else(|| format!("unterminated filter in segment {seg:?}"))?;
            (&body[..end + 1], &body[end + 2..])
        } else {
            let end = body
                .find(']')
                .ok_or_else(|| format!("unterminated [ in segment {seg:?}"))?;
            (&body[..end], &body[end + 1..])
        };
        steps.push(parse_bracket(inner, seg)?);
        rest = after;
    }
    Ok(())
}

fn parse_bracket(inner: &str, seg: &str) -> Result<Step, String> {
    let inner = inner.trim();
    if inner == "-" {
        return Ok(Step::Append);
    }
    if inner == "*" {
        return Ok(Step::All);
    }
    if let Ok(i) = inner.parse::<usize>() {
        return Ok(Step::Index(i));
    }
    let Some(cond) = inner.strip_prefix("?(").and_then(|c| c.strip_suffix(')')) else {
        return Err(format!(
            "unsupported segment {seg:?}; use [N], [-], [*] or [?(@.field=='value')]"
        ));
    };
    let bad = || {
        format!(
            "unsupported filter {cond:?} in {seg:?}; only @.field=='value' (equality) is supported"
        )
    };
    let cond = cond.trim();
    let lhs_rhs = cond.strip_prefix("@.").ok_or_else(bad)?;
    let (lhs, rhs) = lhs_rhs.split_once("==").ok_or_else(bad)?;
    let lhs = lhs.trim();
    if lhs.is_empty()
        || !lhs
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
    {
        return Err(bad());
    }
    let rhs = rhs.trim();
    let value = if rhs.len() >= 2
        && ((rhs.starts_with('\'') && rhs.ends_with('\''))
            || (rhs.starts_with('"') && rhs.ends_with('"')))
    {
        rhs[1..rhs.len() - 1].to_string()
    } else {
        return Err(bad());
    };
    Ok(Step::Filter {
        field: lhs.split('.').map(str::to_string).collect(),
        value,
    })
}

/// Whether the path fans out (filters or wildcards).
pub(crate) fn fans_out(steps: &[Step]) -> bool {
    steps
        .iter()
        .any(|s| matches!(s, Step::All | Step::Filter { .. }))
}

/// Expand a path against a document into concrete pointers (unescaped tokens).
pub(crate) fn expand(doc: &Value, steps: &[Step]) -> Result<Vec<Vec<String>>, String> {
    let mut out = Vec::new();
    walk(Some(doc), steps, &mut Vec::new(), &mut out)?;
    if out.is_empty() && fans_out(steps) {
        return Err("contains a filter or wildcard but matched 0 elements".into());
    }
    Ok(out)
}

fn walk(
    cur: Option<&Value>,
    steps: &[Step],
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> Result<(), String> {
    let Some((step, rest)) = steps.split_first() else {
        if out.len() >= MAX_EXPANSION {
            return Err(format!("expands to more than {MAX_EXPANSION} pointers"));
        }
        out.push(prefix.clone());
        return Ok(());
    };
    // Where the walk is, for an error; built only when one is reported.
    let at = |prefix: &[String]| format!("/{}", prefix.join("/"));
    let mut descend = |token: String, next: Option<&Value>, out: &mut Vec<Vec<String>>| {
        prefix.push(token);
        let r = walk(next, rest, prefix, out);
        prefix.pop();
        r
    };
    match step {
        Step::Key(k) => match cur {
            Some(Value::Array(a)) => {
                if k == "-" {
                    descend(k.clone(), None, out)
                } else if let Ok(i) = k.parse::<usize>() {
                    descend(k.clone(), a.get(i), out)
                } else {
                    Err(format!(
                        "segment {k:?} is not an index, but {} is a list",
                        at(prefix)
                    ))
                }
            }
            Some(Value::Object(m)) => descend(k.clone(), m.get(k), out),
            None | Some(Value::Null) => descend(k.clone(), None, out),
            Some(_) => Err(format!(
                "{} is a scalar; cannot descend into {k:?}",
                at(prefix)
            )),
        },
        Step::Index(i) => match cur {
            Some(Value::Array(a)) => descend(i.to_string(), a.get(*i), out),
            _ => Err(format!("[{i}] needs a list at {}", at(prefix))),
        },
        Step::Append => match cur {
            Some(Value::Array(_)) | None | Some(Value::Null) => descend("-".into(), None, out),
            _ => Err(format!("[-] needs a list at {}", at(prefix))),
        },
        Step::All => match cur {
            Some(Value::Array(a)) => {
                for (i, x) in a.iter().enumerate() {
                    descend(i.to_string(), Some(x), out)?;
                }
                Ok(())
            }
            _ => Err(format!("[*] needs a list at {}", at(prefix))),
        },
        Step::Filter { field, value } => match cur {
            Some(Value::Array(a)) => {
                for (i, x) in a.iter().enumerate() {
                    if matches(x, field, value) {
                        descend(i.to_string(), Some(x), out)?;
                    }
                }
                Ok(())
            }
            _ => Err(format!("a filter needs a list at {}", at(prefix))),
        },
    }
}

/// Upstream compares `fmt.Sprintf("%v", field)` with the literal: numbers and booleans compare as
/// text, a null field matches `''`, a missing field matches nothing.
fn matches(elem: &Value, field: &[String], want: &str) -> bool {
    let mut cur = elem;
    for f in field {
        match cur.get(f) {
            Some(v) => cur = v,
            None => return false,
        }
    }
    match cur {
        Value::String(s) => s == want,
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.to_string() == want,
            (None, Some(f)) => super::template::go_g(f) == want,
            _ => false,
        },
        Value::Bool(b) => b.to_string() == want,
        Value::Null => want.is_empty(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pointers(doc: &Value, path: &str) -> Result<Vec<String>, String> {
        let steps = parse(path)?;
        Ok(expand(doc, &steps)?
            .into_iter()
            .map(|t| format!("/{}", t.join("/")))
            .collect())
    }

    #[test]
    fn filters_expand_in_order() {
        let d = json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}, {"name": "a"}]}});
        assert_eq!(
            pointers(&d, "/spec/containers/[?(@.name=='a')]/env/-").unwrap(),
            ["/spec/containers/0/env/-", "/spec/containers/2/env/-"]
        );
        assert_eq!(
            pointers(&d, "/spec/containers[?(@.name==\"b\")]/image").unwrap(),
            ["/spec/containers/1/image"]
        );
        assert_eq!(pointers(&d, "/spec/containers/[*]/x").unwrap().len(), 3);
        assert_eq!(
            pointers(&d, "/spec/containers[1]").unwrap(),
            ["/spec/containers/1"]
        );
    }

    #[test]
    fn zero_matches_and_bad_targets_are_errors() {
        let d = json!({"spec": {"containers": [{"name": "a"}], "x": 1}});
        assert!(pointers(&d, "/spec/containers/[?(@.name=='zz')]/env/-")
            .unwrap_err()
            .contains("matched 0"));
        let refused = pointers(&d, "/spec/x/[?(@.name=='a')]").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("a filter needs a list at /spec/x"),
            "{refused}"
        );
        let refused = pointers(&d, "spec").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("path \"spec\" must start with /"),
            "{refused}"
        );
        let refused = pointers(&d, "").expect_err("an error");
        assert!(
            refused
                .to_string()
                .contains("the root path \"\" cannot be patched"),
            "{refused}"
        );
        let refused = parse("/a/[?(@.name!='a')]").expect_err("an error");
        assert!(
            refused.to_string().contains("unsupported filter"),
            "{refused}"
        );
    }

    #[test]
    fn missing_keys_can_be_traversed() {
        let d = json!({"spec": {}});
        assert_eq!(
            pointers(&d, "/spec/template/metadata/annotations").unwrap(),
            ["/spec/template/metadata/annotations"]
        );
    }

    #[test]
    fn escapes_and_nested_fields() {
        let d = json!({"l": [{"m": {"k": "a/b"}}, {"m": {"k": 8080}}]});
        assert_eq!(pointers(&d, "/l/[?(@.m.k=='a~1b')]").unwrap(), ["/l/0"]);
        assert_eq!(pointers(&d, "/l/[?(@.m.k=='8080')]").unwrap(), ["/l/1"]);
    }
}
