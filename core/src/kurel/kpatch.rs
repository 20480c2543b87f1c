//! Patch files: the `.kpatch` text format and the YAML form, parsed into [`Op`]s.
//!
//! Parsing happens once, when the package is loaded, so syntax errors in disabled patches are
//! found too. Names, keys and selector values may hold `${…}` variables; they are kept as written
//! and resolved when the patch is applied to one instance.
//!
//! `.kpatch` grammar (one item per line; `#` starts a comment line):
//!
//! ```text
//! [kind.name]                         target the resource; key paths start at its root
//! [ns/kind.name.section.selector]     namespace filter, then a section path with shorthands
//! [configmap."name.with.dots"]        quoted names and keys
//! dotted.path: value                  set (value is YAML: 5, "5", true, [a, b], {k: v})
//! list[2]: value  list.2: value       replace item 2
//! list[k=v].field: value  list.k=v    select the item whose field k equals v
//! list[-]: value  list.-: value       append
//! list[-2]: v  list[+2]: v            insert before / after item 2
//! list[-k=v]: v  list[+k=v]: v        insert before / after the matching item
//! path[delete]:                       delete the field (or list item) named by path
//! list[delete=k=v]:  list[delete=2]:  delete a list item
//! map["key.with.dots"]: value         a key containing dots
//! ```

use std::sync::Arc;

use serde_json::Value;

use crate::diag::{codes, Code, Diagnostic, Diagnostics};
use crate::document::{locate, Document, SourceFile, YamlLimits};
use crate::fieldpath::FieldPath;

/// Which resources a patch operation applies to. Strings may hold `${…}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Kind, compared case-insensitively.
    pub kind: String,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.namespace`, when the target restricts it.
    pub namespace: Option<String>,
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(ns) = &self.namespace {
            write!(f, "{ns}/")?;
        }
        write!(f, "{}.{}", self.kind.to_lowercase(), self.name)
    }
}

/// One step of a path inside a resource.
#[derive(Debug, Clone, PartialEq)]
pub enum Seg {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
    /// The list item whose field `key` equals `value` (compared as text).
    Select {
        /// Field of the item.
        key: String,
        /// Wanted value.
        value: String,
    },
}

/// A list position for inserts.
#[derive(Debug, Clone, PartialEq)]
pub enum Pos {
    /// By index.
    Index(usize),
    /// By selector `key=value`.
    Select(String, String),
}

/// What an operation does at its path.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Set the field or replace the list item.
    Set(Value),
    /// Append to the list at the path (created when missing).
    Append(Value),
    /// Insert into the list at the path, before or after a position.
    Insert {
        /// Before (`-`) or after (`+`).
        before: bool,
        /// Where.
        at: Pos,
        /// What.
        value: Value,
    },
    /// Delete the field or list item at the path.
    Delete,
    /// Delete the list item at the path selected by a position.
    DeleteItem(Pos),
    /// RFC 7386 JSON merge patch at the path (YAML form only).
    Merge(Value),
    /// RFC 6902 JSON patch operations on the whole object (YAML form only).
    JsonPatch(Value),
}

/// One patch operation, with where it was written.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// Which resources.
    pub target: Target,
    /// Path from the resource root.
    pub path: Vec<Seg>,
    /// What to do there.
    pub action: Action,
    /// Line in the patch file, when known.
    pub line: Option<usize>,
    /// The line as written (for `-v` and messages).
    pub text: String,
}

/// KLN1005 for each operation of the patch file `file` whose path (its header's and its line's
/// together) has more segments than `max_depth`, the `yaml-depth` limit: setting a value there
/// builds a map per segment, and applying it walks them all ([`crate::fieldpath::too_deep`]).
pub fn within_depth(ops: &[Op], file: &str, max_depth: usize) -> Result<(), Diagnostics> {
    let found: Vec<Diagnostic> = ops
        .iter()
        .filter_map(|op| {
            let what = format!("the patch path of {}", crate::diag::quote(&op.text));
            let d = crate::fieldpath::too_deep(&what, op.path.len(), max_depth)?.in_file(file);
            Some(match op.line {
                Some(l) => d.at_line(l, None),
                None => d,
            })
        })
        .collect();
    if found.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(found))
    }
}

/// A problem found while parsing, before it is placed in a file.
fn perr(code: Code, file: &str, line: Option<usize>, msg: String, hint: &str) -> Diagnostic {
    let mut d = Diagnostic::error(code, msg).in_file(file).with_hint(hint);
    if let Some(l) = line {
        d = d.at_line(l, None);
    }
    d
}

/// Split on `sep` outside `${…}`, `"…"` and `[…]`.
fn split_outside(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut brace = 0usize;
    let mut bracket = 0usize;
    let mut quoted = false;
    let mut prev = '\0';
    for c in s.chars() {
        match c {
            '"' if brace == 0 => quoted = !quoted,
            '{' if prev == '$' && !quoted => brace += 1,
            '}' if brace > 0 => brace -= 1,
            '[' if brace == 0 && !quoted => bracket += 1,
            ']' if brace == 0 && !quoted && bracket > 0 => bracket -= 1,
            _ => {}
        }
        if c == sep && brace == 0 && bracket == 0 && !quoted {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
        prev = c;
    }
    out.push(cur);
    out
}

/// The final operation a key path may end in.
#[derive(Debug, Clone, PartialEq)]
enum Tail {
    None,
    Append,
    Insert(bool, Pos),
    Delete,
    DeleteItem(Pos),
}

/// A list index: ASCII digits only (`str::parse` would also take `+1`).
fn index(s: &str) -> Option<usize> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        s.parse().ok()
    } else {
        None
    }
}

fn parse_pos(s: &str) -> Result<Pos, String> {
    if let Some(n) = index(s) {
        return Ok(Pos::Index(n));
    }
    match s.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok(Pos::Select(unquote(k), unquote(v))),
        _ => Err(format!(
            "{s:?} is neither an index nor a key=value selector"
        )),
    }
}

fn unquote(s: &str) -> String {
    let t = s.trim();
    if t.len() >= 2 && t.starts_with('"') && t.ends_with('"') {
        t[1..t.len() - 1].to_string()
    } else {
        t.to_string()
    }
}

/// Parse a path (`a.b[0].c[k=v][-]`) into segments and an optional final operation.
fn parse_path(s: &str, allow_tail: bool) -> Result<(Vec<Seg>, Tail), String> {
    let mut segs = Vec::new();
    let mut tail = Tail::None;
    if s.trim().is_empty() {
        return Ok((segs, tail));
    }
    let parts = split_outside(s.trim(), '.');
    let n = parts.len();
    for (pi, part) in parts.iter().enumerate() {
        let last_part = pi + 1 == n;
        if !tail_is_none(&tail) {
            return Err("an append, insert or delete must end the path".into());
        }
        // Leading key text, then bracket groups.
        let (head, groups) = split_brackets_head(part)?;
        // A view that moves along the groups: a copy of the rest per group was quadratic.
        let mut rest = groups.as_str();
        if head.is_empty() && rest.is_empty() {
            return Err(format!("empty segment in {s:?}"));
        }
        if !head.is_empty() {
            let h = head.as_str();
            if h.starts_with('"') {
                segs.push(Seg::Key(unquote(h)));
            } else if let Some(i) = index(h) {
                segs.push(Seg::Index(i));
            } else if h == "-" {
                if !allow_tail || !last_part || !rest.is_empty() {
                    return Err("`-` (append) may only end a key path".into());
                }
                tail = Tail::Append;
            } else if let Some((k, v)) = h.split_once('=') {
                if k.is_empty() {
                    return Err(format!("selector {h:?} has no key"));
                }
                segs.push(Seg::Select {
                    key: k.to_string(),
                    value: unquote(v),
                });
            } else {
                segs.push(Seg::Key(h.to_string()));
            }
        }
        while !rest.is_empty() {
            // After a bracket group only another group may follow (found by fuzzing: a stray `]`
            // was taken for a group and sliced backwards).
            if !rest.starts_with('[') {
                return Err(format!("unexpected {rest:?} after `]` in {s:?}"));
            }
            let Some(close) = find_close(rest) else {
                return Err(format!("unclosed `[` in {s:?}"));
            };
            let inner = rest[1..close].trim().to_string();
            rest = &rest[close + 1..];
            let is_last = last_part && rest.is_empty();
            let op_tail = |t: Tail| -> Result<Tail, String> {
                if !allow_tail {
                    Err(format!(
                        "[{inner}] is an operation; operations belong in key lines, not headers"
                    ))
                } else if !is_last {
                    Err(format!("[{inner}] must end the key path"))
                } else {
                    Ok(t)
                }
            };
            if inner.starts_with('"') {
                segs.push(Seg::Key(unquote(&inner)));
            } else if let Some(i) = index(&inner) {
                segs.push(Seg::Index(i));
            } else if inner == "-" {
                tail = op_tail(Tail::Append)?;
            } else if inner == "delete" {
                tail = op_tail(Tail::Delete)?;
            } else if let Some(sel) = inner.strip_prefix("delete=") {
                tail = op_tail(Tail::DeleteItem(parse_pos(sel)?))?;
            } else if let Some(p) = inner.strip_prefix('-') {
                tail = op_tail(Tail::Insert(true, parse_pos(p)?))?;
            } else if let Some(p) = inner.strip_prefix('+') {
                tail = op_tail(Tail::Insert(false, parse_pos(p)?))?;
            } else if let Some((k, v)) = inner.split_once('=') {
                if k.is_empty() {
                    return Err(format!("selector [{inner}] has no key"));
                }
                segs.push(Seg::Select {
                    key: unquote(k),
                    value: unquote(v),
                });
            } else if inner.is_empty() {
                return Err("empty `[]`".into());
            } else {
                return Err(format!(
                    "[{inner}] is not an index, selector, \"key\", -, -N, +N, -k=v, +k=v, delete or delete=…"
                ));
            }
        }
    }
    Ok((segs, tail))
}

fn tail_is_none(t: &Tail) -> bool {
    matches!(t, Tail::None)
}

/// Split `key[..][..]` into `key` and the bracket part, honouring quotes and `${…}`.
fn split_brackets_head(part: &str) -> Result<(String, String), String> {
    let mut brace = 0usize;
    let mut quoted = false;
    let mut prev = '\0';
    for (i, c) in part.char_indices() {
        match c {
            '"' if brace == 0 => quoted = !quoted,
            '{' if prev == '$' && !quoted => brace += 1,
            '}' if brace > 0 => brace -= 1,
            '[' if brace == 0 && !quoted => {
                return Ok((part[..i].trim().to_string(), part[i..].to_string()))
            }
            _ => {}
        }
        prev = c;
    }
    if quoted {
        return Err(format!("unterminated quote in {part:?}"));
    }
    Ok((part.trim().to_string(), String::new()))
}

/// Index of the `]` closing the `[` at position 0.
fn find_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    let mut brace = 0usize;
    let mut quoted = false;
    let mut prev = '\0';
    for (i, c) in s.char_indices() {
        match c {
            '"' if brace == 0 => quoted = !quoted,
            '{' if prev == '$' && !quoted => brace += 1,
            '}' if brace > 0 => brace -= 1,
            '[' if brace == 0 && !quoted => depth += 1,
            ']' if brace == 0 && !quoted => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        prev = c;
    }
    None
}

/// Kinds whose pod template lives at `spec.template.spec`.
const POD_TEMPLATE_KINDS: &[&str] = &[
    "deployment",
    "replicaset",
    "statefulset",
    "daemonset",
    "job",
    "replicationcontroller",
];

/// Expand the prototype's section shorthands. Only the first section segment is a shorthand, so a
/// header that already spells the full path (`[deployment.x.spec.template.spec.containers.0]`)
/// is taken as written; the prototype expanded it a second time (`spec.template.spec.spec…`).
fn expand_sections(kind: &str, segs: Vec<Seg>) -> Vec<Seg> {
    let kind = kind.to_lowercase();
    let key = |s: &str| Seg::Key(s.to_string());
    let mut out: Vec<Seg> = Vec::new();
    for (i, seg) in segs.into_iter().enumerate() {
        if i == 0 {
            if let Seg::Key(k) = &seg {
                let prefix: &[&str] = match k.as_str() {
                    "containers" | "initContainers" | "volumes" => {
                        if POD_TEMPLATE_KINDS.contains(&kind.as_str()) {
                            &["spec", "template", "spec"]
                        } else if kind == "cronjob" {
                            &["spec", "jobTemplate", "spec", "template", "spec"]
                        } else {
                            &["spec"]
                        }
                    }
                    "ports" | "selector" | "type" | "tls" => &["spec"],
                    "rules" if kind != "role" && kind != "clusterrole" => &["spec"],
                    "labels" | "annotations" => &["metadata"],
                    _ => &[],
                };
                out.extend(prefix.iter().map(|p| key(p)));
                out.push(seg);
                continue;
            }
        }
        // `paths` of an Ingress rule live under `http`.
        if matches!(&seg, Seg::Key(k) if k == "paths")
            && !matches!(out.last(), Some(Seg::Key(p)) if p == "http")
            && kind == "ingress"
        {
            out.push(key("http"));
        }
        out.push(seg);
    }
    out
}

/// Parse a header `[ns/kind.name.section…]` (without the brackets). Also the editor's (`ide`).
pub(crate) fn parse_header(inner: &str) -> Result<(Target, Vec<Seg>), String> {
    let parts = split_outside(inner.trim(), '.');
    if parts.len() < 2 {
        return Err(format!(
            "[{inner}] needs at least kind.name (e.g. [deployment.web])"
        ));
    }
    let mut first = parts[0].trim().to_string();
    let mut namespace = None;
    if let Some((ns, k)) = first.split_once('/') {
        namespace = Some(ns.trim().to_string());
        first = k.trim().to_string();
    }
    if first.is_empty() || !first.chars().all(|c| c.is_ascii_alphanumeric()) {
        return Err(format!("{first:?} is not a kind"));
    }
    let (name_head, name_rest) = split_brackets_head(&parts[1])?;
    if name_head.is_empty() {
        return Err("the resource name is empty".into());
    }
    let name = unquote(&name_head);
    // A bracket group right after the name belongs to the section path (`[deployment.x[…]]` is
    // not meaningful, so treat it as an error).
    if !name_rest.is_empty() {
        return Err(format!(
            "unexpected {name_rest:?} after the resource name; put selectors after a section"
        ));
    }
    let section = parts[2..].join(".");
    let (segs, tail) = parse_path(&section, false)?;
    debug_assert!(matches!(tail, Tail::None));
    let segs = expand_sections(&first, segs);
    Ok((
        Target {
            kind: first,
            name,
            namespace,
        },
        segs,
    ))
}

/// Metadata written in a patch file's leading `# kurel:key: value` lines.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HeaderMeta {
    /// `(key, value, line)` in order.
    pub entries: Vec<(String, String, usize)>,
}

/// Parse a YAML value written after `key:` in a kpatch line, under the package's reading limits
/// (a value is a small YAML document of its own: the same depth, node and alias limits apply).
fn parse_value(text: &str, limits: &YamlLimits) -> Result<Value, String> {
    match crate::document::parse_file("value", text.to_string(), limits) {
        Ok(docs) => match docs.as_slice() {
            [] => Ok(Value::Null),
            [d] => Ok(d.value.clone()),
            _ => Err("the value holds several YAML documents".into()),
        },
        Err(d) => Err(d.message),
    }
}

/// Parse a `.kpatch` file into operations and header metadata, values under the default reading
/// limits. All syntax errors are reported.
pub fn parse_kpatch(file: &Arc<SourceFile>) -> Result<(Vec<Op>, HeaderMeta), Diagnostics> {
    parse_kpatch_with_limits(file, &YamlLimits::default())
}

/// [`parse_kpatch`] with the package's reading limits for the values.
pub fn parse_kpatch_with_limits(
    file: &Arc<SourceFile>,
    limits: &YamlLimits,
) -> Result<(Vec<Op>, HeaderMeta), Diagnostics> {
    let name = file.name.as_str();
    let mut diags = Diagnostics::new();
    let mut ops = Vec::new();
    let mut meta = HeaderMeta::default();
    let mut current: Option<(Target, Vec<Seg>)> = None;
    let mut in_leading_comments = true;
    for (i, raw) in file.text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        if let Some(c) = line.strip_prefix('#') {
            if let Some(kv) = c.trim_start().strip_prefix("kurel:") {
                if !in_leading_comments {
                    diags.push(perr(
                        codes::KUREL_PATCH_METADATA,
                        name,
                        Some(line_no),
                        "`# kurel:` metadata lines must come before the first header or key line"
                            .into(),
                        "move the line to the top of the file",
                    ));
                    continue;
                }
                match kv.split_once(':') {
                    Some((k, v)) if !k.trim().is_empty() => {
                        meta.entries
                            .push((k.trim().to_string(), v.trim().to_string(), line_no))
                    }
                    _ => diags.push(perr(
                        codes::KUREL_PATCH_METADATA,
                        name,
                        Some(line_no),
                        format!("`#{c}` is not `# kurel:key: value`"),
                        "write e.g. `# kurel:enabled: ${monitoring.enabled}`",
                    )),
                }
            }
            continue;
        }
        in_leading_comments = false;
        // `[-]: value` (a key line whose path starts with a bracket) is not a header.
        if line.starts_with('[') && (line.ends_with(']') || split_key_line(line).is_none()) {
            if !line.ends_with(']') {
                diags.push(perr(
                    codes::KUREL_KPATCH_SYNTAX,
                    name,
                    Some(line_no),
                    format!("header {line:?} does not end with `]`"),
                    "write headers as [kind.name] or [kind.name.section.selector]",
                ));
                current = None;
                continue;
            }
            match parse_header(&line[1..line.len() - 1]) {
                Ok(h) => current = Some(h),
                Err(e) => {
                    diags.push(perr(
                        codes::KUREL_KPATCH_SYNTAX,
                        name,
                        Some(line_no),
                        format!("invalid header {line}: {e}"),
                        "write headers as [kind.name] or [kind.name.section.selector]",
                    ));
                    // Keep going without a target so the next lines are not reported again.
                    current = Some((
                        Target {
                            kind: String::new(),
                            name: String::new(),
                            namespace: None,
                        },
                        Vec::new(),
                    ));
                }
            }
            continue;
        }
        let Some((target, prefix)) = &current else {
            diags.push(perr(
                codes::KUREL_KPATCH_SYNTAX,
                name,
                Some(line_no),
                format!("{line:?} comes before any [kind.name] header"),
                "start the patch with a header naming the resource, e.g. [deployment.web]",
            ));
            continue;
        };
        if target.kind.is_empty() {
            continue;
        }
        let Some((key, value_text)) = split_key_line(line) else {
            let hint = if line.contains('=') {
                "kpatch lines are `key: value` (the `key = value` form is not supported)"
            } else {
                "write `dotted.path: value`"
            };
            diags.push(perr(
                codes::KUREL_KPATCH_SYNTAX,
                name,
                Some(line_no),
                format!("{line:?} is not a `key: value` line"),
                hint,
            ));
            continue;
        };
        match parse_key_line(key, value_text, limits) {
            Ok((segs, action)) => {
                let mut path = prefix.clone();
                path.extend(segs);
                ops.push(Op {
                    target: target.clone(),
                    path,
                    action,
                    line: Some(line_no),
                    text: line.to_string(),
                })
            }
            Err(e) => diags.push(perr(
                codes::KUREL_KPATCH_SYNTAX,
                name,
                Some(line_no),
                format!("invalid line {line:?}: {e}"),
                "see docs/kurel.md for the kpatch grammar; quote values that YAML cannot read",
            )),
        }
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok((ops, meta))
    }
}

/// Split `key: value` at the first `:` outside quotes, brackets and `${…}`.
fn split_key_line(line: &str) -> Option<(&str, &str)> {
    let mut brace = 0usize;
    let mut bracket = 0usize;
    let mut quoted = false;
    let mut prev = '\0';
    for (i, c) in line.char_indices() {
        match c {
            '"' if brace == 0 => quoted = !quoted,
            '{' if prev == '$' && !quoted => brace += 1,
            '}' if brace > 0 => brace -= 1,
            '[' if brace == 0 && !quoted => bracket += 1,
            ']' if brace == 0 && !quoted && bracket > 0 => bracket -= 1,
            ':' if brace == 0 && bracket == 0 && !quoted => {
                let key = line[..i].trim();
                if key.is_empty() {
                    return None;
                }
                return Some((key, line[i + 1..].trim()));
            }
            _ => {}
        }
        prev = c;
    }
    None
}

/// Parse the key path and value of one line into path segments and an action.
pub(crate) fn parse_key_line(
    key: &str,
    value_text: &str,
    limits: &YamlLimits,
) -> Result<(Vec<Seg>, Action), String> {
    let (segs, tail) = parse_path(key, true)?;
    let value = || -> Result<Value, String> {
        if value_text.is_empty() {
            return Err("the value is missing (write `null` to set null, or use [delete])".into());
        }
        parse_value(value_text, limits)
            .map_err(|e| format!("the value does not parse as YAML ({e})"))
    };
    let no_value = |what: &str| -> Result<(), String> {
        if value_text.is_empty() || value_text == "true" {
            Ok(())
        } else {
            Err(format!("{what} takes no value (leave it empty)"))
        }
    };
    let action = match tail {
        Tail::None => {
            if segs.is_empty() {
                return Err("the key path is empty".into());
            }
            Action::Set(value()?)
        }
        Tail::Append => Action::Append(value()?),
        Tail::Insert(before, at) => Action::Insert {
            before,
            at,
            value: value()?,
        },
        Tail::Delete => {
            no_value("[delete]")?;
            if segs.is_empty() {
                return Err("[delete] needs a path naming what to delete".into());
            }
            Action::Delete
        }
        Tail::DeleteItem(p) => {
            no_value("[delete=…]")?;
            Action::DeleteItem(p)
        }
    };
    Ok((segs, action))
}

/// Parse a target written as `kind.name`, `namespace/kind.name`, or `kind/name`.
fn parse_target_text(s: &str) -> Result<Target, String> {
    let s = s.trim();
    let (ns, rest) = match split_outside(s, '/').as_slice() {
        [a, b, c] => (Some(a.clone()), format!("{b}.{c}")),
        [a, b] if !a.contains('.') && b.contains('.') => (Some(a.clone()), b.clone()),
        [a, b] => (None, format!("{a}.{b}")),
        _ => (None, s.to_string()),
    };
    let parts = split_outside(&rest, '.');
    if parts.len() < 2 || parts[0].is_empty() || parts[1].is_empty() {
        return Err(format!(
            "target {s:?} is not kind.name or namespace/kind.name"
        ));
    }
    Ok(Target {
        kind: parts[0].trim().to_string(),
        name: unquote(&parts[1..].join(".")),
        namespace: ns.map(|n| n.trim().to_string()),
    })
}

/// Metadata keys allowed at the top of a YAML patch (and in sidecar files).
pub const META_KEYS: &[&str] = &["enabled", "description", "requires", "conflicts"];

/// Parse a YAML patch document into operations. Accepted shapes:
///
/// - a mapping with optional metadata keys and `patches:`, a list of
///   `{target, set: {path: value}, merge: {…}, jsonPatch: [...]}`;
/// - the prototype's list `- target: kind.name` + `patch: {path: value}`;
/// - the prototype's flat mapping `kind.name.path: value`.
pub fn parse_yaml_patch(doc: &Document) -> Result<Vec<Op>, Diagnostics> {
    let mut diags = Diagnostics::new();
    let mut ops = Vec::new();
    let at = |p: &FieldPath| locate(&doc.source.text, doc.index, p).map(|(l, _)| l);
    let err = |p: &FieldPath, msg: String, hint: &str| {
        doc.diag(
            Diagnostic::error(codes::KUREL_PATCH_YAML, msg).with_hint(hint),
            p,
        )
    };
    match &doc.value {
        Value::Array(entries) => {
            for (i, e) in entries.iter().enumerate() {
                entry(doc, e, &FieldPath::root().index(i), &mut ops, &mut diags);
            }
        }
        Value::Object(m) => {
            for (k, v) in m {
                let p = FieldPath::root().key(k);
                if META_KEYS.contains(&k.as_str()) {
                    continue;
                }
                if k == "patches" {
                    match v {
                        Value::Array(entries) => {
                            for (i, e) in entries.iter().enumerate() {
                                entry(doc, e, &p.index(i), &mut ops, &mut diags);
                            }
                        }
                        _ => diags.push(err(
                            &p,
                            "patches must be a list".into(),
                            "write patches: [- target: kind.name, set: {path: value}]",
                        )),
                    }
                    continue;
                }
                // Flat form: the first two dot segments name the target.
                let parts = split_outside(k, '.');
                if parts.len() < 3 {
                    diags.push(err(
                        &p,
                        format!("{k:?} is not kind.name.path (and not enabled, description, requires, conflicts or patches)"),
                        "prefix the field path with the resource, e.g. deployment.web.spec.replicas",
                    ));
                    continue;
                }
                let target = Target {
                    kind: parts[0].trim().to_string(),
                    name: unquote(&parts[1]),
                    namespace: None,
                };
                match parse_path(&parts[2..].join("."), true) {
                    Ok((segs, Tail::None)) => ops.push(Op {
                        target,
                        path: segs,
                        action: Action::Set(v.clone()),
                        line: at(&p),
                        text: format!("{k}: …"),
                    }),
                    Ok(_) => diags.push(err(
                        &p,
                        format!("{k:?}: list operations are not supported in the flat form"),
                        "use a patches: list with set:, or a .kpatch file",
                    )),
                    Err(e) => diags.push(err(&p, format!("{k:?}: {e}"), "fix the field path")),
                }
            }
        }
        _ => diags.push(err(
            &FieldPath::root(),
            "a YAML patch must be a mapping or a list".into(),
            "see docs/kurel.md for the YAML patch form",
        )),
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(ops)
    }
}

fn entry(doc: &Document, e: &Value, p: &FieldPath, ops: &mut Vec<Op>, diags: &mut Diagnostics) {
    let at = |p: &FieldPath| locate(&doc.source.text, doc.index, p).map(|(l, _)| l);
    let err = |p: &FieldPath, msg: String, hint: &str| {
        doc.diag(
            Diagnostic::error(codes::KUREL_PATCH_YAML, msg).with_hint(hint),
            p,
        )
    };
    let Some(m) = e.as_object() else {
        diags.push(err(
            p,
            "a patch entry must be a mapping".into(),
            "write {target: kind.name, set: {path: value}}",
        ));
        return;
    };
    let target = match m.get("target") {
        Some(Value::String(s)) => match parse_target_text(s) {
            Ok(t) => t,
            Err(e) => {
                diags.push(err(&p.key("target"), e, "write target: kind.name"));
                return;
            }
        },
        Some(Value::Object(t)) => {
            let s = |k: &str| t.get(k).and_then(Value::as_str).map(str::to_string);
            match (s("kind"), s("name")) {
                (Some(kind), Some(name)) => Target {
                    kind,
                    name,
                    namespace: s("namespace"),
                },
                _ => {
                    diags.push(err(
                        &p.key("target"),
                        "target needs string kind and name".into(),
                        "write target: {kind: Deployment, name: web}",
                    ));
                    return;
                }
            }
        }
        _ => {
            diags.push(err(
                p,
                "a patch entry needs a target".into(),
                "write target: kind.name (or namespace/kind.name)",
            ));
            return;
        }
    };
    let mut any = false;
    for (k, v) in m {
        let kp = p.key(k);
        match k.as_str() {
            "target" => {}
            "type" => {
                if v.as_str() != Some("set") && v.as_str() != Some("merge") {
                    diags.push(err(
                        &kp,
                        format!("patch type {v} is not supported"),
                        "strategic merge patches are not supported: use merge: (RFC 7386) or set: with list selectors",
                    ));
                }
            }
            "set" | "patch" => {
                any = true;
                let Some(fields) = v.as_object() else {
                    diags.push(err(
                        &kp,
                        format!("{k} must be a mapping of path: value"),
                        "write set: {spec.replicas: 3}",
                    ));
                    continue;
                };
                let merge_type = m.get("type").and_then(Value::as_str) == Some("merge");
                if merge_type {
                    ops.push(Op {
                        target: target.clone(),
                        path: Vec::new(),
                        action: Action::Merge(v.clone()),
                        line: at(&kp),
                        text: format!("{target} merge"),
                    });
                    continue;
                }
                for (path, value) in fields {
                    let fp = kp.key(path);
                    match parse_path(path, true) {
                        Ok((segs, tail)) => {
                            let action = match tail {
                                Tail::None if !segs.is_empty() => Action::Set(value.clone()),
                                Tail::None => {
                                    diags.push(err(&fp, "empty path".into(), "name a field"));
                                    continue;
                                }
                                Tail::Append => Action::Append(value.clone()),
                                Tail::Insert(before, at) => Action::Insert {
                                    before,
                                    at,
                                    value: value.clone(),
                                },
                                Tail::Delete => Action::Delete,
                                Tail::DeleteItem(pos) => Action::DeleteItem(pos),
                            };
                            ops.push(Op {
                                target: target.clone(),
                                path: segs,
                                action,
                                line: at(&fp),
                                text: format!("{path}: …"),
                            });
                        }
                        Err(e) => {
                            diags.push(err(&fp, format!("{path:?}: {e}"), "fix the field path"))
                        }
                    }
                }
            }
            "merge" => {
                any = true;
                if !v.is_object() {
                    diags.push(err(
                        &kp,
                        "merge must be a mapping".into(),
                        "write merge: {spec: {replicas: 3}}",
                    ));
                    continue;
                }
                ops.push(Op {
                    target: target.clone(),
                    path: Vec::new(),
                    action: Action::Merge(v.clone()),
                    line: at(&kp),
                    text: format!("{target} merge"),
                });
            }
            "jsonPatch" => {
                any = true;
                if let Err(e) = serde_json::from_value::<json_patch::Patch>(v.clone()) {
                    // Check the shape now (with variables still in place) so mistakes show at load.
                    diags.push(err(&kp, format!("invalid JSON patch: {e}"), "write RFC 6902 operations: [{op: replace, path: /spec/replicas, value: 3}]"));
                    continue;
                }
                ops.push(Op {
                    target: target.clone(),
                    path: Vec::new(),
                    action: Action::JsonPatch(v.clone()),
                    line: at(&kp),
                    text: format!("{target} jsonPatch"),
                });
            }
            other => diags.push(err(
                &kp,
                format!("unknown key {other:?} in a patch entry"),
                "a patch entry has target and one or more of set, merge, jsonPatch",
            )),
        }
    }
    if !any {
        diags.push(err(
            p,
            format!("patch entry for {target} does nothing"),
            "add set:, merge: or jsonPatch:",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kp(text: &str) -> Result<(Vec<Op>, HeaderMeta), Diagnostics> {
        parse_kpatch(&Arc::new(SourceFile {
            name: "t.kpatch".into(),
            text: text.into(),
        }))
    }

    fn key(s: &str) -> Seg {
        Seg::Key(s.into())
    }

    #[test]
    fn values_follow_the_packages_reading_limits() {
        // 70 levels: within kiln's default depth (128), beyond the YAML library's own (64).
        let deep = format!("[a.b]\nspec.v: {}1{}\n", "[".repeat(70), "]".repeat(70));
        assert!(kp(&deep).is_ok());
        let file = Arc::new(SourceFile {
            name: "t.kpatch".into(),
            text: deep,
        });
        let tight = YamlLimits {
            max_depth: 50,
            ..YamlLimits::default()
        };
        let e = parse_kpatch_with_limits(&file, &tight).unwrap_err();
        assert!(
            e.0[0]
                .message
                .contains("deeper than the limit of 50 levels"),
            "{:?}",
            e.0
        );
    }

    #[test]
    fn headers_and_shorthands() {
        let (ops, _) = kp("[deployment.web.containers.name=main]\nimage: nginx:1.2\n").unwrap();
        assert_eq!(ops[0].target.kind, "deployment");
        assert_eq!(
            ops[0].path,
            vec![
                key("spec"),
                key("template"),
                key("spec"),
                key("containers"),
                Seg::Select {
                    key: "name".into(),
                    value: "main".into()
                },
                key("image")
            ]
        );
        assert_eq!(ops[0].action, Action::Set(json!("nginx:1.2")));
        // A full path is not expanded again (the prototype's double expansion).
        let (ops, _) = kp("[deployment.x.spec.template.spec.containers.0]\nimage: a\n").unwrap();
        assert_eq!(
            ops[0].path,
            vec![
                key("spec"),
                key("template"),
                key("spec"),
                key("containers"),
                Seg::Index(0),
                key("image")
            ]
        );
        let (ops, _) = kp("[ingress.w.rules.0.paths.0]\npath: /x\n").unwrap();
        assert_eq!(
            ops[0].path,
            vec![
                key("spec"),
                key("rules"),
                Seg::Index(0),
                key("http"),
                key("paths"),
                Seg::Index(0),
                key("path")
            ]
        );
        let (ops, _) = kp("[cronjob.c.containers.0]\nimage: a\n").unwrap();
        assert_eq!(ops[0].path[1], key("jobTemplate"));
    }

    #[test]
    fn list_operations() {
        let text = "[deployment.web]\n\
                    a[-]: 1\n\
                    a.-: 2\n\
                    a[-0]: 3\n\
                    a[+1]: 4\n\
                    a[-name=x]: {name: new}\n\
                    a[+name=x]: 5\n\
                    a[delete]:\n\
                    a[delete=name=x]:\n\
                    a[delete=2]:\n\
                    m[\"x.y/z\"]: \"v\"\n";
        let (ops, _) = kp(text).unwrap();
        let actions: Vec<_> = ops.iter().map(|o| o.action.clone()).collect();
        assert_eq!(actions[0], Action::Append(json!(1)));
        assert_eq!(actions[1], Action::Append(json!(2)));
        assert_eq!(
            actions[2],
            Action::Insert {
                before: true,
                at: Pos::Index(0),
                value: json!(3)
            }
        );
        assert_eq!(
            actions[4],
            Action::Insert {
                before: true,
                at: Pos::Select("name".into(), "x".into()),
                value: json!({"name": "new"})
            }
        );
        assert_eq!(actions[6], Action::Delete);
        assert_eq!(
            actions[7],
            Action::DeleteItem(Pos::Select("name".into(), "x".into()))
        );
        assert_eq!(actions[8], Action::DeleteItem(Pos::Index(2)));
        assert_eq!(ops[9].path, vec![key("m"), key("x.y/z")]);
    }

    #[test]
    fn variables_survive_splitting() {
        let (ops, _) =
            kp("[deployment.${app.name}.containers.name=${app.name}]\nimage: ${img.a}:${img.b}\n")
                .unwrap();
        assert_eq!(ops[0].target.name, "${app.name}");
        assert_eq!(
            ops[0].path[4],
            Seg::Select {
                key: "name".into(),
                value: "${app.name}".into()
            }
        );
        assert_eq!(ops[0].action, Action::Set(json!("${img.a}:${img.b}")));
    }

    /// A patch's path (header and line together) is bounded by `yaml-depth` (issue 39), in
    /// both forms; the line is quoted short.
    #[test]
    fn patch_paths_are_bounded_by_the_depth_limit() {
        let (ops, _) = kp(&format!(
            "[d.w.spec]\n{}: 1\nok: 2\n",
            vec!["a"; 100].join(".")
        ))
        .unwrap();
        assert!(within_depth(&ops, "p.kpatch", 101).is_ok());
        let e = within_depth(&ops, "p.kpatch", 100).unwrap_err();
        assert_eq!(e.0.len(), 1, "{e:?}");
        assert_eq!(e.0[0].code, codes::YAML_BUDGET);
        assert_eq!(e.0[0].line, Some(2));
        assert!(
            e.0[0]
                .message
                .contains("101 segments, more than the limit of 100"),
            "{}",
            e.0[0].message
        );
        let f = Arc::new(SourceFile {
            name: "p.yaml".into(),
            text: format!("d.w.{}: 1\n", vec!["a"; 200].join(".")),
        });
        let doc = crate::document::parse_source(&f, &YamlLimits::default())
            .unwrap()
            .remove(0);
        let ops = parse_yaml_patch(&doc).unwrap();
        assert_eq!(
            within_depth(&ops, "p.yaml", 128).unwrap_err().0[0].code,
            codes::YAML_BUDGET
        );
    }

    #[test]
    fn header_metadata_and_errors() {
        let (_, meta) = kp(
            "# kurel:enabled: ${m.on}\n# kurel:requires: a b\n[service.s]\nspec.type: NodePort\n",
        )
        .unwrap();
        assert_eq!(meta.entries[0].0, "enabled");
        assert_eq!(meta.entries[1].1, "a b");
        let e = kp("spec: 1\n[x]\n[deployment.a]\nfoo = bar\nb[oops]: 1\nc: *alias\n").unwrap_err();
        let lines: Vec<_> = e.iter().map(|d| d.line.unwrap()).collect();
        assert_eq!(lines, vec![1, 2, 4, 5, 6]);
        assert!(e.0[2].hint.as_deref().unwrap().contains("key = value"));
    }

    #[test]
    fn yaml_forms() {
        let doc = |t: &str| {
            crate::document::parse_file("p.yaml", t.into(), &YamlLimits::default())
                .unwrap()
                .remove(0)
        };
        let ops = parse_yaml_patch(&doc(
            "enabled: true\npatches:\n- target: apps/deployment.web\n  set:\n    spec.replicas: 3\n    spec.x[-]: 1\n  merge: {metadata: {labels: {a: b}}}\n",
        ))
        .unwrap();
        assert_eq!(ops.len(), 3);
        assert_eq!(ops[0].target.namespace.as_deref(), Some("apps"));
        assert_eq!(ops[0].line, Some(5));
        let ops = parse_yaml_patch(&doc(
            "- target: deployment.web\n  patch:\n    spec.replicas: 2\n",
        ))
        .unwrap();
        assert_eq!(ops[0].action, Action::Set(json!(2)));
        let ops = parse_yaml_patch(&doc("deployment.${app.name}.spec.replicas: 1\n")).unwrap();
        assert_eq!(ops[0].target.name, "${app.name}");
        let e = parse_yaml_patch(&doc("- target: d.w\n  type: strategic\n  patch: {a: 1}\n"))
            .unwrap_err();
        assert!(e.0[0].hint.as_deref().unwrap().contains("strategic"));
        let e = parse_yaml_patch(&doc("replicas: 3\n")).unwrap_err();
        assert_eq!(e.0[0].code, codes::KUREL_PATCH_YAML, "{e:?}");
    }
}
