//! Rendered-manifest diffs: what `kiln diff` prints.
//!
//! Two renders of one request (two revisions of a repository, or two environments) are compared
//! object by object. Objects are matched by identity — API group, kind, namespace, name — never by
//! file or position: an object that moves to another file, or to another place in the output, is
//! the same object. A map's keys are compared as a map (a field that only moves is not a change);
//! lists keep their order (in Kubernetes it means something).
//!
//! Each changed object gets a unified diff of its YAML, with the head's keys laid out in the
//! base's order so that only what changed shows. Values of Secret objects (`data`,
//! `stringData`) never appear: each is written as `[redacted]`, and as `[redacted, changed]`
//! on the head side when it differs from the base's. Every other secret the run knows of
//! ([`Secrets`]: what Secret templates read, `--secret` paths) is blanked out of the diff text as
//! in diagnostics; a line whose change blanking hid says `[redacted, changed]` on its added side. A Secret is compared as the API server stores it (`stringData` merged into
//! `data`): a key that only moves between the two is no change.
//!
//! A base that does not render is compared as empty, every object of the head added, and the
//! output says why ([`BaseFailure`]: its first errors, secrets blanked out, bounded).
//!
//! ```
//! use kiln_core::diff::{compare, Options};
//! use serde_json::json;
//!
//! let base = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "a"}, "data": {"k": "1"}})];
//! let head = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
//!     "metadata": {"name": "a"}, "data": {"k": "2"}})];
//! let d = compare(&base, &head, &Default::default(), &Options::default()).unwrap();
//! assert_eq!(d.summary().changed, 1);
//! assert!(d.objects[0].diff.as_deref().unwrap().contains("-  k: \"1\"\n+  k: \"2\"\n"));
//! ```

use std::collections::HashMap;
use std::fmt::Write as _;

use rayon::prelude::*;
use serde_json::{json, Map, Value};

use crate::diag::Diagnostic;
use crate::redact::{Secrets, REDACTED};

/// What a Secret's value is written as in a diff when it differs from the base's.
pub const REDACTED_CHANGED: &str = "[redacted, changed]";

/// How a diff is made.
#[derive(Debug, Clone)]
pub struct Options {
    /// Lines of context around each change.
    pub context: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self { context: 3 }
    }
}

/// What happened to an object between base and head.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Change {
    /// In both, different.
    Changed,
    /// Only in head.
    Added,
    /// Only in base.
    Removed,
    /// In both, equal.
    Unchanged,
}

impl Change {
    /// `changed`, `added`, `removed`, `unchanged`.
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Changed => "changed",
            Change::Added => "added",
            Change::Removed => "removed",
            Change::Unchanged => "unchanged",
        }
    }

    fn marker(self) -> char {
        match self {
            Change::Changed => '~',
            Change::Added => '+',
            Change::Removed => '-',
            Change::Unchanged => '=',
        }
    }
}

/// One object of either side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectDiff {
    /// What happened to it.
    pub change: Change,
    /// Its apiVersion (the head's, or the base's for a removed object).
    pub api_version: String,
    /// Its API group (`""` for the core group).
    pub group: String,
    /// Its kind.
    pub kind: String,
    /// Its namespace, `None` when it has none.
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// For a changed object, the unified diff of its YAML (secrets redacted).
    pub diff: Option<String>,
}

impl ObjectDiff {
    /// `Kind.group` (just `Kind` in the core group).
    pub fn kind_group(&self) -> String {
        if self.group.is_empty() {
            self.kind.clone()
        } else {
            format!("{}.{}", self.kind, self.group)
        }
    }

    /// `Kind.group namespace/name` (or `Kind.group name`).
    pub fn title(&self) -> String {
        format!("{} {}", self.kind_group(), self.at())
    }

    fn at(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{ns}/{}", self.name),
            None => self.name.clone(),
        }
    }

    /// The object's path in the diff headers: `Kind.group/namespace/name`.
    fn path(&self) -> String {
        format!("{}/{}", self.kind_group(), self.at())
    }
}

/// Counts of a [`Diff`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Objects in both sides that differ.
    pub changed: usize,
    /// Objects only in head.
    pub added: usize,
    /// Objects only in base.
    pub removed: usize,
    /// Objects in both sides, equal.
    pub unchanged: usize,
}

impl Summary {
    /// Whether anything differs.
    pub fn has_differences(&self) -> bool {
        self.changed + self.added + self.removed > 0
    }

    /// `N changed, N added, N removed, N unchanged`.
    pub fn line(&self) -> String {
        format!(
            "{} changed, {} added, {} removed, {} unchanged",
            self.changed, self.added, self.removed, self.unchanged
        )
    }
}

/// The comparison of two renders.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// What the base side is (`HEAD`, `main (1a2b3c4)`, with its environment).
    pub base: String,
    /// What the head side is (`working tree`, a revision).
    pub head: String,
    /// Every object of either side that was compared, sorted by kind, group, namespace and name
    /// (unchanged ones too, without a diff).
    pub objects: Vec<ObjectDiff>,
    /// Objects both sides hold by construction, not compared (units rendered once for both
    /// sides: [`Unit::shared`]): counted unchanged, not listed in `objects`.
    pub shared: usize,
    /// Set when the base did not render and the head did: the diff is then against an empty base
    /// (every object of the head is added), and every format says so.
    pub base_failure: Option<BaseFailure>,
}

/// Why the base side did not render: how many errors, and the first few of them, each made safe
/// to print in a pull-request comment (secrets blanked out, then cut to a bounded length).
#[derive(Debug, Clone, PartialEq)]
pub struct BaseFailure {
    /// How many errors the base's render reported.
    pub errors: usize,
    /// The first [`BaseFailure::SHOWN`] of them: secrets blanked out, message and field path cut
    /// to [`BaseFailure::TEXT_BYTES`], no hint (the log has each whole).
    pub shown: Vec<Diagnostic>,
}

impl BaseFailure {
    /// Errors shown; the rest are counted.
    pub const SHOWN: usize = 5;
    /// Longest message or field path shown, in bytes.
    pub const TEXT_BYTES: usize = 300;

    /// The summary of a base's failed render. Secrets are blanked out before anything is cut, so
    /// a cut never leaves part of a secret that redaction would no longer recognise.
    pub fn of(diagnostics: &[Diagnostic], secrets: &Secrets) -> BaseFailure {
        let errors: Vec<&Diagnostic> = diagnostics.iter().filter(|d| d.is_error()).collect();
        let shown = errors
            .iter()
            .take(Self::SHOWN)
            .map(|d| {
                let mut d = secrets.redact_diagnostic(d);
                d.message = one_line(&d.message, Self::TEXT_BYTES);
                d.path = d.path.map(|p| one_line(&p, Self::TEXT_BYTES));
                d.hint = None;
                d
            })
            .collect();
        BaseFailure {
            errors: errors.len(),
            shown,
        }
    }

    /// What is left out: `… and N more error(s)`, or nothing.
    fn more(&self) -> Option<String> {
        let more = self.errors.saturating_sub(self.shown.len());
        (more > 0).then(|| format!("… and {more} more error(s); the log shows each"))
    }
}

/// `text` on one line (line breaks as spaces), at most `max` bytes (cut on a character, `…`).
fn one_line(text: &str, max: usize) -> String {
    let flat = text.replace(['\n', '\r'], " ");
    if flat.len() <= max {
        return flat;
    }
    let mut end = max;
    while !flat.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &flat[..end])
}

/// An object's identity: API group, kind, namespace, name.
type Identity = (String, String, String, String);

fn identity(o: &Value) -> Identity {
    let s = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or("").to_string();
    let api = s(o.get("apiVersion"));
    let meta = o.get("metadata");
    (
        crate::scope::group_of(&api).to_string(),
        s(o.get("kind")),
        s(meta.and_then(|m| m.get("namespace"))),
        s(meta.and_then(|m| m.get("name"))),
    )
}

/// One rendered object as the comparison keeps it: its identity and its JSON as rendered (what a
/// diff shows, keys in the template's order). Made on the worker that rendered the object, so a
/// side of ten thousand instances is held as one text per object rather than as values (a tenth
/// of the memory, and no page faults to fill it).
///
/// Equality is decided on the values, a map compared as a map ([`Entry::same`]): equal texts are
/// equal values, and only texts that differ are read back and compared. An unchanged object (nearly
/// all of them, in a pull request) costs one string comparison; a JSON with sorted keys per object,
/// made before for every object, cost as much as rendering it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    identity: Identity,
    api_version: String,
    json: String,
}

impl Entry {
    /// The entry of one object (a Secret as the API server stores it: [`as_stored`]).
    pub fn of(o: &Value) -> Entry {
        let stored = as_stored(o);
        let o = stored.as_ref().unwrap_or(o);
        Entry {
            identity: identity(o),
            api_version: o
                .get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
            json: serde_json::to_string(o).unwrap_or_default(),
        }
    }

    /// Whether the two objects are equal as values: maps compared as maps (a key that only moves
    /// is no change; serde_json's map equality ignores order), lists in order.
    fn same(&self, other: &Entry) -> bool {
        if self.json == other.json {
            return true;
        }
        match (
            serde_json::from_str::<Value>(&self.json),
            serde_json::from_str::<Value>(&other.json),
        ) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// What a diff keeps of one rendered unit (a kro instance, a document, a release): the
/// comparison entries of its objects, made on the worker that rendered them, or, for a unit both
/// sides hold by construction (rendered once for both: `request::render_pair` with `shared`),
/// only how many objects it has: those are unchanged, and comparing them would only find so.
#[derive(Debug, Clone, PartialEq)]
pub struct Unit {
    /// The entries of its objects ([`Entry::of`]); none for a shared unit.
    pub entries: Vec<Entry>,
    /// For a shared unit, its number of objects.
    pub shared: usize,
    /// The objects the caller keeps of it (what redaction needs).
    pub kept: Vec<Value>,
}

impl Unit {
    /// A unit whose objects are compared.
    pub fn compared(objects: &[Value], kept: Vec<Value>) -> Unit {
        Unit {
            entries: objects.iter().map(Entry::of).collect(),
            shared: 0,
            kept,
        }
    }

    /// A unit both sides hold: its objects are counted, not compared.
    pub fn shared(objects: &[Value], kept: Vec<Value>) -> Unit {
        Unit {
            entries: Vec::new(),
            shared: objects.len(),
            kept,
        }
    }
}

/// [`compare_entries`] of the units of two renders: the entries of both sides compared, and the
/// objects of the units the head took from the base counted unchanged ([`Diff::shared`]).
pub fn compare_units(
    base: &[Unit],
    head: &[Unit],
    secrets: &Secrets,
    options: &Options,
) -> Result<Diff, Diagnostic> {
    let b = index(base.iter().flat_map(|u| u.entries.iter()), count(base));
    let h = index(head.iter().flat_map(|u| u.entries.iter()), count(head));
    let mut d = compare_indexed(b, h, secrets, options)?;
    d.shared = head.iter().map(|u| u.shared).sum();
    Ok(d)
}

fn count(units: &[Unit]) -> usize {
    units.iter().map(|u| u.entries.len()).sum()
}

/// Index the entries of one side by identity. Identities are unique in a render that succeeded
/// (KLN1012); should one repeat, the later object gets a `#N` suffix so nothing is dropped.
fn index<'a>(entries: impl Iterator<Item = &'a Entry>, n: usize) -> HashMap<Identity, &'a Entry> {
    let mut out: HashMap<Identity, &Entry> = HashMap::with_capacity(n);
    for e in entries {
        let mut id = e.identity.clone();
        if out.contains_key(&id) {
            let name = id.3.clone();
            let mut n = 2;
            while out.contains_key(&id) {
                id.3 = format!("{name}#{n}");
                n += 1;
            }
        }
        out.insert(id, e);
    }
    out
}

/// Compare the objects of two renders. `secrets` are blanked out of every diff (Secret objects'
/// values are never written at all).
pub fn compare(
    base: &[Value],
    head: &[Value],
    secrets: &Secrets,
    options: &Options,
) -> Result<Diff, Diagnostic> {
    let b: Vec<Entry> = base.iter().map(Entry::of).collect();
    let h: Vec<Entry> = head.iter().map(Entry::of).collect();
    compare_entries(&b, &h, secrets, options)
}

/// [`compare`] of entries made where the objects were rendered ([`Entry::of`]).
pub fn compare_entries(
    base: &[Entry],
    head: &[Entry],
    secrets: &Secrets,
    options: &Options,
) -> Result<Diff, Diagnostic> {
    compare_indexed(
        index(base.iter(), base.len()),
        index(head.iter(), head.len()),
        secrets,
        options,
    )
}

fn compare_indexed(
    b: HashMap<Identity, &Entry>,
    h: HashMap<Identity, &Entry>,
    secrets: &Secrets,
    options: &Options,
) -> Result<Diff, Diagnostic> {
    let mut ids: Vec<&Identity> = b
        .keys()
        .chain(h.keys().filter(|k| !b.contains_key(*k)))
        .collect();
    // Sorted and compared on every core: a fleet's diff has an identity per object, and the
    // sort (its strings compared again and again) and the comparisons were serial steps of the
    // main thread. Identities are distinct, so an unstable sort gives the one order.
    ids.par_sort_unstable_by(|x, y| (&x.1, &x.0, &x.2, &x.3).cmp(&(&y.1, &y.0, &y.2, &y.3)));
    let compared: Vec<Result<ObjectDiff, Diagnostic>> = ids
        .par_iter()
        .map(|&id| {
            let (bo, ho) = (b.get(id).copied(), h.get(id).copied());
            let change = match (bo, ho) {
                (Some(x), Some(y)) if x.same(y) => Change::Unchanged,
                (Some(_), Some(_)) => Change::Changed,
                (None, Some(_)) => Change::Added,
                _ => Change::Removed,
            };
            let shown = ho.or(bo).expect("an identity comes from one side");
            let (group, kind, ns, name) = id.clone();
            let mut od = ObjectDiff {
                change,
                api_version: shown.api_version.clone(),
                group,
                kind,
                namespace: (!ns.is_empty()).then_some(ns),
                name,
                diff: None,
            };
            if let (Change::Changed, Some(x), Some(y)) = (change, bo, ho) {
                let parse = |e: &Entry| {
                    serde_json::from_str::<Value>(&e.json).map_err(|err| {
                        Diagnostic::error(
                            crate::diag::codes::INTERNAL,
                            format!("a rendered object does not read back: {err}"),
                        )
                    })
                };
                od.diff = Some(unified(&parse(x)?, &parse(y)?, &od, secrets, options)?);
            }
            Ok(od)
        })
        .collect();
    // The first failure in the objects' order, whichever core met it first.
    let objects = compared.into_iter().collect::<Result<Vec<_>, _>>()?;
    Ok(Diff {
        base: String::new(),
        head: String::new(),
        objects,
        shared: 0,
        base_failure: None,
    })
}

/// The unified diff of one changed object's YAML.
fn unified(
    base: &Value,
    head: &Value,
    od: &ObjectDiff,
    secrets: &Secrets,
    options: &Options,
) -> Result<String, Diagnostic> {
    let mut b = base.clone();
    let mut h = head.clone();
    mask_secret_values(&mut b, &mut h);
    align(&b, &mut h);
    let bt = crate::output::to_yaml(&b)?;
    let ht = crate::output::to_yaml(&h)?;
    let path = od.path();
    let text = similar::TextDiff::from_lines(&bt, &ht)
        .unified_diff()
        .context_radius(options.context)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string();
    let mut text = mark_hidden_changes(&secrets.redact(&text));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(text)
}

/// A line removed and added again that redaction made identical (`-  password: [redacted]`,
/// `+  password: [redacted]`) hid a change of a secret value: the added line then says
/// `[redacted, changed]`, so the diff shows that the value changed without showing any of it.
/// (A line is only removed and added when it differed before redaction.)
fn mark_hidden_changes(text: &str) -> String {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < lines.len() {
        let is_removed = |l: &str| l.starts_with('-') && !l.starts_with("--- ");
        let is_added = |l: &str| l.starts_with('+') && !l.starts_with("+++ ");
        if !is_removed(lines[i]) {
            out.push_str(lines[i]);
            i += 1;
            continue;
        }
        let start = i;
        while i < lines.len() && is_removed(lines[i]) {
            i += 1;
        }
        let removed: Vec<&str> = lines[start..i].iter().map(|l| &l[1..]).collect();
        for l in &lines[start..i] {
            out.push_str(l);
        }
        while i < lines.len() && is_added(lines[i]) {
            let body = &lines[i][1..];
            if body.contains(REDACTED) && removed.contains(&body) {
                out.push('+');
                out.push_str(&body.replace(REDACTED, REDACTED_CHANGED));
            } else {
                out.push_str(lines[i]);
            }
            i += 1;
        }
    }
    out
}

fn is_secret(o: &Value) -> bool {
    o.get("kind").and_then(Value::as_str) == Some("Secret")
        && o.get("apiVersion").and_then(Value::as_str) == Some("v1")
}

/// A Secret as the API server stores it, or `None` when `o` is not a Secret, has neither `data`
/// nor `stringData`, or holds a value the API server would refuse (not a string, `data` that is
/// not base64): that one is compared as written. The API server merges `stringData` into `data`,
/// a key in both taking `stringData`'s value, and keeps `data` as bytes; so here every value is
/// written in `data` as the base64 of its bytes, in one spelling. A key moved from one field to
/// the other with the same value is then no change, and a value that differs still is.
fn as_stored(o: &Value) -> Option<Value> {
    if !is_secret(o) || (o.get("data").is_none() && o.get("stringData").is_none()) {
        return None;
    }
    let encode = |bytes: &[u8]| Value::String(crate::expr::library::base64(bytes));
    let empty = Map::new();
    let field = |f: &str| o.get(f).map_or(Some(&empty), Value::as_object);
    let mut data = Map::new();
    for (k, v) in field("data")? {
        data.insert(k.clone(), encode(&crate::base64::decode(v.as_str()?)?));
    }
    // Then `stringData`, over `data` key by key.
    for (k, v) in field("stringData")? {
        data.insert(k.clone(), encode(v.as_str()?.as_bytes()));
    }
    // `data` where it was (or where `stringData` was); none made up for an empty `stringData`.
    let keep = o.get("data").is_some() || !data.is_empty();
    let mut data = Some(Value::Object(data)).filter(|_| keep);
    let mut out = Map::new();
    for (k, v) in o.as_object()? {
        match k.as_str() {
            "data" | "stringData" => {
                if let Some(d) = data.take() {
                    out.insert("data".into(), d);
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Some(Value::Object(out))
}

/// Replace the values of a Secret's `data` and `stringData` on both sides: `[redacted]`, and
/// `[redacted, changed]` on the head side where the base holds another value (or none).
fn mask_secret_values(base: &mut Value, head: &mut Value) {
    for field in ["data", "stringData"] {
        let old: Map<String, Value> = if is_secret(base) {
            base.get(field)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        } else {
            Map::new()
        };
        if is_secret(head) {
            if let Some(m) = head.get_mut(field).and_then(Value::as_object_mut) {
                for (k, v) in m.iter_mut() {
                    let same = old.get(k) == Some(v);
                    *v = Value::String(if same { REDACTED } else { REDACTED_CHANGED }.into());
                }
            }
        }
        if is_secret(base) {
            if let Some(m) = base.get_mut(field).and_then(Value::as_object_mut) {
                for v in m.values_mut() {
                    *v = Value::String(REDACTED.into());
                }
            }
        }
    }
}

/// Mask every Secret value of an object (for objects shown whole).
pub fn mask_secret(o: &mut Value) {
    if !is_secret(o) {
        return;
    }
    for field in ["data", "stringData"] {
        if let Some(m) = o.get_mut(field).and_then(Value::as_object_mut) {
            for v in m.values_mut() {
                *v = Value::String(REDACTED.into());
            }
        }
    }
}

/// Lay out `head`'s map keys in `base`'s order (keys new in head after them, in their order),
/// recursively, so that a field that only moved does not show in the text.
fn align(base: &Value, head: &mut Value) {
    match (base, head) {
        (Value::Object(b), Value::Object(h)) => {
            let mut old = std::mem::take(h);
            for (k, bv) in b {
                if let Some(mut hv) = old.shift_remove(k) {
                    align(bv, &mut hv);
                    h.insert(k.clone(), hv);
                }
            }
            for (k, v) in old {
                h.insert(k, v);
            }
        }
        (Value::Array(b), Value::Array(h)) => {
            for (bv, hv) in b.iter().zip(h.iter_mut()) {
                align(bv, hv);
            }
        }
        _ => {}
    }
}

impl Diff {
    /// The counts.
    pub fn summary(&self) -> Summary {
        let mut s = Summary {
            unchanged: self.shared,
            ..Summary::default()
        };
        for o in &self.objects {
            match o.change {
                Change::Changed => s.changed += 1,
                Change::Added => s.added += 1,
                Change::Removed => s.removed += 1,
                Change::Unchanged => s.unchanged += 1,
            }
        }
        s
    }

    fn differing(&self) -> impl Iterator<Item = &ObjectDiff> {
        self.objects
            .iter()
            .filter(|o| o.change != Change::Unchanged)
    }

    /// Text for a terminal or a log: each changed object with its diff, each added and removed
    /// object on a line, then the summary line. `color` adds ANSI colours.
    pub fn text(&self, color: bool) -> String {
        let paint = |code: &str, s: &str| {
            if color {
                format!("\x1b[{code}m{s}\x1b[0m")
            } else {
                s.to_string()
            }
        };
        let mut out = String::new();
        if let Some(f) = &self.base_failure {
            out.push_str(&paint(
                "1;33",
                &format!(
                    "! the base, {}, does not render ({} error(s)): every object of the head \
                     is shown as added",
                    self.base, f.errors
                ),
            ));
            out.push('\n');
            for d in &f.shown {
                let _ = writeln!(out, "  {d}");
            }
            if let Some(more) = f.more() {
                let _ = writeln!(out, "  {more}");
            }
        }
        for o in self.differing() {
            let title = format!("{} {} {}", o.change.marker(), o.change.as_str(), o.title());
            let code = match o.change {
                Change::Added => "1;32",
                Change::Removed => "1;31",
                _ => "1",
            };
            out.push_str(&paint(code, &title));
            out.push('\n');
            if let Some(d) = &o.diff {
                for line in d.lines() {
                    let code = if line.starts_with("+++") || line.starts_with("---") {
                        "1"
                    } else if line.starts_with('+') {
                        "32"
                    } else if line.starts_with('-') {
                        "31"
                    } else if line.starts_with("@@") {
                        "36"
                    } else {
                        ""
                    };
                    if code.is_empty() {
                        out.push_str(line);
                    } else {
                        out.push_str(&paint(code, line));
                    }
                    out.push('\n');
                }
            }
        }
        out.push_str(&self.summary().line());
        out.push('\n');
        out
    }

    /// Markdown for a pull-request comment: a summary, a table of changes by kind, and a
    /// collapsible section per changed object (added and removed objects listed). Past `limit`
    /// bytes the remaining objects are counted, not shown: an object is never cut in the middle.
    pub fn markdown(&self, limit: usize) -> String {
        let s = self.summary();
        let mut out = String::new();
        let _ = writeln!(
            out,
            "### kiln diff: {} → {}\n\n**{}**\n",
            inline_code(&self.base),
            inline_code(&self.head),
            s.line()
        );
        if let Some(f) = &self.base_failure {
            let _ = writeln!(
                out,
                "> [!WARNING]\n> **The base does not render** ({} error(s)): every object of the \
                 head is shown as added.",
                f.errors
            );
            for d in &f.shown {
                let _ = writeln!(out, "> - {}", inline_code(&d.to_string()));
            }
            if let Some(more) = f.more() {
                let _ = writeln!(out, "> - {more}");
            }
            out.push('\n');
        }
        if !s.has_differences() {
            out.push_str("No rendered object changes.\n");
            return out;
        }
        let mut kinds: Vec<(String, [usize; 3])> = Vec::new();
        for o in self.differing() {
            let kg = o.kind_group();
            let i = match kinds.iter().position(|(k, _)| *k == kg) {
                Some(i) => i,
                None => {
                    kinds.push((kg, [0; 3]));
                    kinds.len() - 1
                }
            };
            let col = match o.change {
                Change::Changed => 0,
                Change::Added => 1,
                _ => 2,
            };
            kinds[i].1[col] += 1;
        }
        out.push_str("| kind | changed | added | removed |\n| --- | ---: | ---: | ---: |\n");
        for (k, [c, a, r]) in &kinds {
            let _ = writeln!(out, "| {} | {c} | {a} | {r} |", escape_cell(k));
        }
        out.push('\n');
        // Room kept for the closing note.
        let reserve = 200;
        let mut left_out = 0usize;
        // Changed objects first (each a collapsible diff), then the list of added and removed.
        let changed = self.differing().filter(|o| o.diff.is_some());
        let listed = self.differing().filter(|o| o.diff.is_none());
        let mut list_started = false;
        for o in changed.chain(listed) {
            let section = match &o.diff {
                Some(d) => {
                    let fence = fence_for(d);
                    format!(
                        "<details><summary>{} {}</summary>\n\n{fence}diff\n{d}{fence}\n\n</details>\n\n",
                        o.change.as_str(),
                        html_escape(&o.title())
                    )
                }
                None => format!(
                    "{}- {} {}\n",
                    if list_started { "" } else { "\n" },
                    o.change.as_str(),
                    inline_code(&o.title())
                ),
            };
            if left_out > 0 || out.len() + section.len() + reserve > limit {
                left_out += 1;
                continue;
            }
            list_started |= o.diff.is_none();
            out.push_str(&section);
        }
        if left_out > 0 {
            let _ = writeln!(
                out,
                "\n_{left_out} more object(s) not shown: this comment is limited to {limit} bytes. Run `kiln diff` locally to see them all._"
            );
        }
        out
    }

    /// `{"base","head","summary":{…},"objects":[{"change","apiVersion","kind","namespace","name","diff"}]}`,
    /// objects that differ only.
    pub fn json(&self) -> Value {
        let s = self.summary();
        let objects: Vec<Value> = self
            .differing()
            .map(|o| {
                json!({
                    "change": o.change.as_str(),
                    "apiVersion": o.api_version,
                    "kind": o.kind,
                    "namespace": o.namespace,
                    "name": o.name,
                    "diff": o.diff,
                })
            })
            .collect();
        let base_error = self.base_failure.as_ref().map(|f| {
            json!({
                "errors": f.errors,
                "diagnostics": f.shown,
            })
        });
        json!({
            "base": self.base,
            "baseError": base_error,
            "head": self.head,
            "summary": {
                "added": s.added,
                "removed": s.removed,
                "changed": s.changed,
                "unchanged": s.unchanged,
            },
            "objects": objects,
        })
    }
}

/// The longest run of backticks in `text`.
fn backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// A code fence longer than any run of backticks in `text`.
fn fence_for(text: &str) -> String {
    "`".repeat((backtick_run(text) + 1).max(3))
}

/// `s` as a Markdown code span, fenced with more backticks than any run in it.
fn inline_code(s: &str) -> String {
    let fence = "`".repeat(backtick_run(s) + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

fn escape_cell(s: &str) -> String {
    s.replace('|', "\\|")
}

fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cm(name: &str, data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "n"}, "data": data})
    }

    /// Objects come out by kind, group, namespace and name, whatever order either side
    /// rendered them in and however many there are (the comparison runs on every core).
    #[test]
    fn objects_come_out_in_identity_order() {
        let obj = |api: &str, kind: &str, ns: &str, name: &str, v: &str| {
            json!({"apiVersion": api, "kind": kind,
                "metadata": {"name": name, "namespace": ns}, "data": {"v": v}})
        };
        let mut base = Vec::new();
        let mut head = Vec::new();
        for i in (0..300).rev() {
            let ns = format!("ns-{}", i % 7);
            let name = format!("n-{i:03}");
            base.push(obj("v1", "Service", &ns, &name, "1"));
            base.push(obj("apps/v1", "Deployment", &ns, &name, "1"));
            head.push(obj(
                "apps/v1",
                "Deployment",
                &ns,
                &name,
                if i == 5 { "2" } else { "1" },
            ));
            head.push(obj("v1", "ConfigMap", &ns, &name, "1"));
        }
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        let keys: Vec<(String, String, String, String)> = d
            .objects
            .iter()
            .map(|o| {
                let ns = o.namespace.clone().unwrap_or_default();
                (o.kind.clone(), o.group.clone(), ns, o.name.clone())
            })
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted);
        assert_eq!(keys.len(), 900);
        let s = d.summary();
        assert_eq!((s.changed, s.added, s.removed), (1, 300, 300));
    }

    #[test]
    fn objects_match_by_identity_not_position() {
        let base = vec![cm("a", json!({"x": "1"})), cm("b", json!({"y": "2"}))];
        let head = vec![cm("b", json!({"y": "2"})), cm("a", json!({"x": "1"}))];
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        assert_eq!(d.summary().unchanged, 2);
        assert!(!d.summary().has_differences());
    }

    #[test]
    fn an_object_whose_keys_only_move_is_unchanged_and_a_reordered_list_is_a_change() {
        // Different texts, equal values: the entries are read back and compared as maps, at
        // every depth.
        let base = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "labels": {"p": "1", "q": "2"}}, "data": {"x": "1", "y": "2"}})];
        let head = vec![json!({"kind": "ConfigMap", "data": {"y": "2", "x": "1"},
            "metadata": {"labels": {"q": "2", "p": "1"}, "name": "a"}, "apiVersion": "v1"})];
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        assert_eq!(d.summary().unchanged, 1, "{:?}", d.objects);
        assert_eq!(d.summary().changed, 0);
        // A list keeps its order: the same items in another order are a change.
        let base = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "list": ["1", "2"]})];
        let head = vec![json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a"}, "list": ["2", "1"]})];
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        assert_eq!(d.summary().changed, 1);
    }

    #[test]
    fn moved_fields_are_not_changes_and_do_not_show() {
        let base = vec![
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"x": "1", "y": "2"}}),
        ];
        let head = vec![
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"y": "2", "x": "9"}, "metadata": {"name": "a"}}),
        ];
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        assert_eq!(d.summary().changed, 1);
        let text = d.objects[0].diff.clone().unwrap();
        assert_eq!(
            text,
            "--- a/ConfigMap/a\n+++ b/ConfigMap/a\n@@ -3,5 +3,5 @@\n metadata:\n   name: a\n data:\n-  x: \"1\"\n+  x: \"9\"\n   \"y\": \"2\"\n"
        );
    }

    #[test]
    fn secret_values_never_show() {
        let s = |v: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": v, "user": "admin-user"}});
        let d = compare(
            &[s("hunter2-old")],
            &[s("hunter2-new")],
            &Secrets::default(),
            &Options::default(),
        )
        .unwrap();
        let text = d.objects[0].diff.clone().unwrap();
        assert!(!text.contains("hunter2"), "{text}");
        assert!(!text.contains("admin-user"), "{text}");
        assert!(
            text.contains("-  password: \"[redacted]\"\n+  password: \"[redacted, changed]\"\n"),
            "{text}"
        );
        assert!(text.contains("   user: \"[redacted]\"\n"), "{text}");
    }

    #[test]
    fn a_secret_is_compared_as_stored_unless_the_api_server_would_refuse_it() {
        let secret = |fields: Value| {
            let mut o = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
            o.as_object_mut()
                .unwrap()
                .extend(fields.as_object().unwrap().clone());
            o
        };
        let same = |a: Value, b: Value| {
            let d = compare(
                &[secret(a)],
                &[secret(b)],
                &Secrets::default(),
                &Options::default(),
            )
            .unwrap();
            !d.summary().has_differences()
        };
        assert!(same(
            json!({"data": {"k": "aGk="}}),
            json!({"stringData": {"k": "hi"}})
        ));
        assert!(same(
            json!({"data": {"k": "aGk"}}),
            json!({"data": {"k": "aGk="}})
        ));
        // An empty stringData makes no data.
        assert!(same(json!({"stringData": {}}), json!({})));
        // Not base64, not a string: compared as written.
        assert!(!same(
            json!({"data": {"k": "hi!"}}),
            json!({"stringData": {"k": "hi!"}})
        ));
        assert!(!same(
            json!({"stringData": {"k": 1}}),
            json!({"data": {"k": "MQ=="}})
        ));
        // A ConfigMap is not a Secret.
        let cm = |f: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, f: {"k": "aGk="}});
        let d = compare(
            &[cm("data")],
            &[cm("stringData")],
            &Secrets::default(),
            &Options::default(),
        )
        .unwrap();
        assert_eq!(d.summary().changed, 1);
    }

    #[test]
    fn a_base_failure_is_redacted_then_cut_on_one_line() {
        use crate::diag::codes;
        let mut secrets = Secrets::default();
        secrets.add_value("hunter2-secret-value");
        // The secret straddles the cut: blanked out first, none of it is left.
        let straddling = format!("{}hunter2-secret-value and more", "x".repeat(290));
        let multibyte = format!("line one\nline two {}", "é".repeat(400));
        let mut ds: Vec<Diagnostic> = vec![
            Diagnostic::error(codes::INTERNAL, straddling)
                .in_file("HEAD:a.yaml")
                .with_hint("hunter2-secret-value"),
            Diagnostic::error(codes::INTERNAL, multibyte).at("spec.x"),
            Diagnostic::warning(codes::INTERNAL, "a warning is not an error"),
        ];
        ds.extend((0..6).map(|i| Diagnostic::error(codes::INTERNAL, format!("error {i}"))));
        let f = BaseFailure::of(&ds, &secrets);
        assert_eq!(f.errors, 8);
        assert_eq!(f.shown.len(), BaseFailure::SHOWN);
        assert_eq!(
            f.more().unwrap(),
            "… and 3 more error(s); the log shows each"
        );
        let first = &f.shown[0];
        assert!(!first.message.contains("hunter"), "{}", first.message);
        assert!(first.message.ends_with("[redacted]…"), "{}", first.message);
        assert_eq!(first.hint, None);
        let second = &f.shown[1].message;
        assert!(second.starts_with("line one line two é"), "{second}");
        assert!(
            second.len() <= BaseFailure::TEXT_BYTES + '…'.len_utf8(),
            "{}",
            second.len()
        );
        assert!(second.ends_with('…'));
    }

    #[test]
    fn markdown_is_never_cut_mid_object() {
        let base: Vec<Value> = (0..50)
            .map(|i| cm(&format!("c{i}"), json!({"k": "old"})))
            .collect();
        let head: Vec<Value> = (0..50)
            .map(|i| cm(&format!("c{i}"), json!({"k": "new"})))
            .collect();
        let d = compare(&base, &head, &Secrets::default(), &Options::default()).unwrap();
        let md = d.markdown(3000);
        assert!(md.len() <= 3000, "{}", md.len());
        assert_eq!(
            md.matches("<details>").count(),
            md.matches("</details>").count()
        );
        assert!(md.contains("more object(s) not shown"), "{md}");
    }
}
