//! Redaction: values of Secret objects, and values the user names as secret, never appear in
//! diagnostics or logs.
//!
//! kiln reports problems with the text around them: a message may quote a value (`"hunter2" does
//! not match the pattern`), a CEL error may show an operand, and the CLI prints a snippet of the
//! file. [`Secrets`] is the plain list of values that must not be shown, each with where it sits
//! in the inputs when it came from a file, and the functions that blank them out of a diagnostic
//! ([`Secrets::redact_diagnostic`]), a file's text ([`Secrets::redact_source`]) or any other text
//! ([`Secrets::redact`]), writing [`REDACTED`] instead. The doors collect them
//! (`request::collect_secrets`, which calls [`Secrets::collect`] with the readers of every
//! front-end's own file format) and apply them at the last moment, just before printing.
//!
//! What counts as secret:
//!
//! - every value under `data` and `stringData` of an object of `kind: Secret`, wherever it sits:
//!   an input document, a template inside a ResourceGraphDefinition, component type or addon, a
//!   rendered object, a kurel patch line targeting a Secret's data (`data` values also in their
//!   base64-decoded form);
//! - what a Secret template reads: a `${…}` in a Secret's data that reads `schema.spec.x` (kro)
//!   makes the instances' `spec.x` secret, one reading `parameters.x` (component types) the
//!   components' parameter `x`, and a kurel variable `${a.b}` the package parameter `a.b`;
//! - component-type and addon parameters whose shorthand carries the `oc:sensitive` marker;
//! - values at the paths the user names ([`SecretPath`], `kiln --secret PATH`).
//!
//! A value is searched for in every form a printer may have written it ([`forms_of`]): as is,
//! escaped inside a quoted string (kiln's YAML writer turns a control character into `\x01` and
//! U+2028 into `\L`; JSON, Rust's `{:?}` and Go's `%q` have their own escapes), such an escaped
//! text escaped again as JSON, and base64 (what a `data` field holds). A file's snippet is also
//! masked by meaning: a scalar whose decoded value holds a secret is blanked whatever its
//! spelling.
//!
//! Template text holding `${…}` is not itself a secret (it is an expression), what it reads is.
//! A value shorter than [`MIN_LEN`] is blanked only where it sits (its own lines in a snippet, and
//! diagnostics about its own field): searched for everywhere, a value such as `1` or `yes` would
//! blank out unrelated words.

use std::collections::BTreeSet;
use std::fmt;
use std::ops::Range;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::diag::{quote, Diagnostic};
use crate::document::{locate_value, parse_source, scalar_spans, Document, SourceFile, YamlLimits};
use crate::fieldpath::{FieldPath, Segment};

/// How a front-end finds the secret values in a file of its own format (kurel's patches):
/// `(line, values)` of the lines that write a Secret's data, or `None` for a file it does not
/// read. Redaction itself reads YAML and JSON documents; the layer that knows every front-end
/// passes the others in ([`Secrets::collect`]), so this module imports none of them.
pub type FileSecrets = fn(&SourceFile) -> Option<Vec<(usize, Vec<String>)>>;

/// What a secret is replaced with.
pub const REDACTED: &str = "[redacted]";

/// Shortest value searched for in all text; shorter ones are blanked only where they sit.
pub const MIN_LEN: usize = 4;

/// Longest form of a secret searched for through the one regular expression; longer ones (a
/// file of megabytes named a secret) are searched for by text.
const LONG_FORM: usize = 16 << 10;

/// Nesting followed when looking for Secret objects inside documents.
const MAX_SCAN_DEPTH: usize = 64;

/// One step of a [`SecretPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Pat {
    Key(String),
    Index(usize),
    /// `*` or `[*]`: any key or index.
    Any,
}

/// A path naming secret values, as given to `--secret`: kro-style segments (`spec.db.password`,
/// `items[0].token`, `labels["a.b"]`) where `*` or `[*]` stands for any key or index
/// (`spec.users[*].password`).
///
/// It is looked up from the root of every input document and from its `spec` (so
/// `spec.password` and `password` both name an instance's `spec.password`), in kurel parameter
/// and values files (`db.password`), and, when it starts with `parameters.`, in component
/// parameters wherever they are written: a Component's `spec.parameters`, a ComponentDeployment's
/// `spec.overrides`, a ReleaseBinding's `spec.componentTypeEnvironmentConfigs`, a snapshot's
/// component. A map or list found there is secret as a whole (every value in it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretPath(Vec<Pat>);

impl SecretPath {
    /// Parse a path; `Err` says what is wrong with it.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut pats = Vec::new();
        let mut rest = s.trim();
        if rest.is_empty() {
            return Err("the path is empty".into());
        }
        let mut expect_key = true;
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('[') {
                let end = if let Some(q) = r.strip_prefix('"') {
                    q.find('"').map(|i| i + 2)
                } else {
                    r.find(']')
                }
                .ok_or_else(|| format!("{}: unclosed [", quote(s)))?;
                let inner = &r[..end];
                if !r[end..].starts_with(']') {
                    return Err(format!("{}: expected ] after {}", quote(s), quote(inner)));
                }
                pats.push(match inner {
                    "*" => Pat::Any,
                    q if q.starts_with('"') => Pat::Key(
                        serde_json::from_str::<String>(q)
                            .map_err(|e| format!("{}: {e}", quote(s)))?,
                    ),
                    n => Pat::Index(n.parse().map_err(|_| {
                        format!(
                            "{}: {} is not an index, \"key\" or *",
                            quote(s),
                            quote(&format!("[{n}]"))
                        )
                    })?),
                });
                rest = &r[end + 1..];
                expect_key = false;
                continue;
            }
            if let Some(r) = rest.strip_prefix('.') {
                if expect_key {
                    return Err(format!("{}: empty segment", quote(s)));
                }
                rest = r;
                expect_key = true;
                continue;
            }
            if !expect_key {
                return Err(format!(
                    "{}: expected . or [ before {}",
                    quote(s),
                    quote(rest)
                ));
            }
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            let key = &rest[..end];
            pats.push(if key == "*" {
                Pat::Any
            } else {
                Pat::Key(key.to_string())
            });
            rest = &rest[end..];
            expect_key = false;
        }
        if expect_key {
            return Err(format!("{}: ends with .", quote(s)));
        }
        // Parsed before the run's limits are known: the highest `yaml-depth` bounds it.
        let deepest = crate::limits::Limit::YamlDepth.max();
        if pats.len() as u64 > deepest {
            return Err(format!(
                "the path has {} segments, more than any document kiln reads can nest ({deepest}, the highest yaml-depth)",
                pats.len()
            ));
        }
        Ok(Self(pats))
    }

    fn starts_with_key(&self, k: &str) -> Option<SecretPath> {
        match self.0.first() {
            Some(Pat::Key(first)) if first == k && self.0.len() > 1 => {
                Some(SecretPath(self.0[1..].to_vec()))
            }
            _ => None,
        }
    }
}

impl FromStr for SecretPath {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl fmt::Display for SecretPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.0.iter().enumerate() {
            match p {
                Pat::Key(k) if k.contains(['.', '[', ']', '"']) || k.is_empty() => {
                    write!(f, "[{}]", serde_json::to_string(k).map_err(|_| fmt::Error)?)?
                }
                Pat::Key(k) if i == 0 => write!(f, "{k}")?,
                Pat::Key(k) => write!(f, ".{k}")?,
                Pat::Index(n) => write!(f, "[{n}]")?,
                Pat::Any => write!(f, "[*]")?,
            }
        }
        Ok(())
    }
}

/// Where a secret sits in an input file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A node of a YAML or JSON document.
    Node {
        /// Document index within the file (as [`Document::index`]).
        document: usize,
        /// Field path of the value.
        path: FieldPath,
    },
    /// The value part (after the first `:`) of these lines, 1-based and inclusive: a kpatch line,
    /// or a Secret's data lines in a file that did not parse.
    Lines {
        /// First line.
        first: usize,
        /// Last line.
        last: usize,
    },
}

/// One secret value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    /// The value as text.
    pub value: String,
    /// The file it was read from (its display name), when it came from one.
    pub file: Option<String>,
    /// Where in that file.
    pub place: Option<Place>,
}

/// The secret values of a run.
#[derive(Debug, Clone, Default)]
pub struct Secrets {
    secrets: Vec<Secret>,
    /// The texts searched for everywhere, longest first, built on first use.
    searched: OnceLock<Searched>,
}

#[derive(Debug, Clone)]
struct Searched {
    /// The forms of every secret ([`forms_of`]) up to [`LONG_FORM`] bytes, as one regular
    /// expression (one pass over a text); `None` when there are none, or too many to compile.
    regex: Option<regex::Regex>,
    /// The longer forms (and every form, when the expression could not be built), searched
    /// one by one: a form of megabytes would make the expression slow to build.
    long: Vec<String>,
}

impl PartialEq for Secrets {
    fn eq(&self, other: &Self) -> bool {
        self.secrets == other.secrets
    }
}

/// How a rule finds values in a document.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Scope {
    /// From the document's root and from its `spec`.
    Root,
    /// A component parameter, wherever a component model document writes parameters.
    Parameters,
    /// An addon (trait) parameter, in every addon instance's config.
    AddonParameters,
}

/// Where component-model documents write parameters.
const PARAMETER_ROOTS: &[&str] = &[
    "spec.parameters",
    "spec.overrides",
    "spec.componentTypeEnvironmentConfigs",
    "spec.environmentConfigs",
    "spec.component.spec.parameters",
];

/// Where component-model documents write addon (trait) parameters.
const ADDON_ROOTS: &[&str] = &[
    "spec.addons[*].config",
    "spec.addons[*].parameters",
    "spec.traits[*].parameters",
    "spec.addonOverrides.*",
    "spec.traitEnvironmentConfigs.*",
    "spec.component.spec.addons[*].config",
    "spec.component.spec.traits[*].parameters",
];

#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    scope: Scope,
    path: SecretPath,
}

/// A file as collection sees it.
enum Parsed {
    Docs(Vec<Document>),
    /// A file in a front-end's own format (a kurel patch): `(line, secret values)`.
    Lines(Vec<(usize, Vec<String>)>),
    /// Did not parse: the lines of Secret data found by indentation.
    Unparsed(Vec<(usize, usize)>),
}

impl Secrets {
    /// Nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// The secrets found, in the order found.
    pub fn iter(&self) -> impl Iterator<Item = &Secret> {
        self.secrets.iter()
    }

    /// Add a value to search for everywhere (not located in a file).
    pub fn add_value(&mut self, value: impl Into<String>) {
        self.push(Secret {
            value: value.into(),
            file: None,
            place: None,
        });
    }

    /// Add the secrets of in-memory objects (rendered output, values given on the command line):
    /// Secret objects' data and values at the named paths.
    pub fn add_objects(&mut self, objects: &[Value], named: &[SecretPath]) {
        let mut rules: Vec<Rule> = named.iter().flat_map(rules_of).collect();
        let mut found = Vec::new();
        for o in objects {
            scan(o, &FieldPath::root(), 0, &mut found, &mut rules);
        }
        for o in objects {
            apply(o, &rules, &mut found);
        }
        for (_, value) in found {
            self.add_value(value);
        }
    }

    fn push(&mut self, s: Secret) {
        if s.value.trim().is_empty() || self.secrets.contains(&s) {
            return;
        }
        self.secrets.push(s);
        self.searched = OnceLock::new();
    }

    /// Collect the secrets of the files a run read, of in-memory objects (rendered output), and at
    /// the paths the user named. Files are parsed again (only when they may hold a secret, or when
    /// there are paths to look up), so this costs nothing on a run with nothing to print. A file
    /// one of `formats` reads (a front-end's own format) is read by it; every other file as YAML.
    /// `request::collect_secrets` passes the formats of every front-end.
    pub fn collect(
        files: &[Arc<SourceFile>],
        objects: &[Value],
        named: &[SecretPath],
        formats: &[FileSecrets],
    ) -> Secrets {
        let mut out = Secrets::default();
        let mut rules: Vec<Rule> = named.iter().flat_map(rules_of).collect();
        let mut parsed: Vec<Option<Parsed>> = files.iter().map(|_| None).collect();
        // Phase 1: Secret objects, kpatch lines and oc:sensitive markers, which also say what
        // else is secret (rules).
        for (i, f) in files.iter().enumerate() {
            if may_hold_secrets(&f.text) {
                parsed[i] = Some(parse(f, formats));
            }
            let Some(p) = &parsed[i] else {
                continue;
            };
            match p {
                Parsed::Docs(docs) => {
                    for d in docs {
                        let mut found = Vec::new();
                        scan(&d.value, &FieldPath::root(), 0, &mut found, &mut rules);
                        out.add_found(f, d.index, found);
                    }
                }
                Parsed::Lines(lines) => {
                    for (line, values) in lines {
                        for v in values {
                            out.push(Secret {
                                value: v.clone(),
                                file: Some(f.name.clone()),
                                place: Some(Place::Lines {
                                    first: *line,
                                    last: *line,
                                }),
                            });
                        }
                    }
                }
                Parsed::Unparsed(ranges) => {
                    for &(first, last) in ranges {
                        for line in f.text.lines().skip(first - 1).take(last + 1 - first) {
                            if let Some((_, v)) = line.split_once(':') {
                                let v = v.trim().trim_matches(['"', '\'']);
                                if !v.is_empty() {
                                    out.push(Secret {
                                        value: v.to_string(),
                                        file: Some(f.name.clone()),
                                        place: Some(Place::Lines { first, last }),
                                    });
                                }
                            }
                        }
                    }
                }
            }
        }
        out.add_objects(objects, named);
        // Phase 2: the rules, in every document.
        if !rules.is_empty() {
            for (i, f) in files.iter().enumerate() {
                let p = parsed[i].get_or_insert_with(|| parse(f, formats));
                if let Parsed::Docs(docs) = p {
                    for d in docs {
                        let mut found = Vec::new();
                        apply(&d.value, &rules, &mut found);
                        out.add_found(f, d.index, found);
                    }
                }
            }
            let mut found = Vec::new();
            for o in objects {
                apply(o, &rules, &mut found);
            }
            for (_, v) in found {
                out.add_value(v);
            }
        }
        out
    }

    fn add_found(&mut self, f: &SourceFile, document: usize, found: Vec<(FieldPath, String)>) {
        for (path, value) in found {
            self.push(Secret {
                value,
                file: Some(f.name.clone()),
                place: Some(Place::Node { document, path }),
            });
        }
    }

    fn searched(&self) -> &Searched {
        self.searched.get_or_init(|| {
            let mut forms: BTreeSet<String> = BTreeSet::new();
            for s in &self.secrets {
                if s.value.chars().count() >= MIN_LEN {
                    forms.extend(forms_of(&s.value));
                }
            }
            let (mut long, mut short): (Vec<String>, Vec<String>) =
                forms.into_iter().partition(|f| f.len() > LONG_FORM);
            // Longest first, so a secret containing another is blanked whole.
            short.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
            let regex = (!short.is_empty())
                .then(|| {
                    let alt: Vec<String> = short.iter().map(|f| regex::escape(f)).collect();
                    regex::RegexBuilder::new(&alt.join("|"))
                        .size_limit(256 << 20)
                        .build()
                        .ok()
                })
                .flatten();
            if regex.is_none() {
                long.extend(short);
            }
            Searched { long, regex }
        })
    }

    /// `text` with every secret (of at least [`MIN_LEN`] characters) replaced by [`REDACTED`],
    /// in every form a printer may have written it ([`forms_of`]): as is, escaped inside a quoted
    /// string (YAML, JSON, Rust's `{:?}`, Go's `%q`, and such an escaped text escaped again as
    /// JSON), each long line of a multi-line value, and its base64 (as a `data` field holds it).
    pub fn redact(&self, text: &str) -> String {
        let s = self.searched();
        let mut spans: Vec<Range<usize>> = s
            .long
            .iter()
            .flat_map(|f| text.match_indices(f.as_str()).map(|(i, m)| i..i + m.len()))
            .collect();
        match &s.regex {
            // One pass, so a replacement is never searched again.
            Some(re) if spans.is_empty() => return re.replace_all(text, REDACTED).into_owned(),
            Some(re) => spans.extend(re.find_iter(text).map(|m| m.range())),
            None if spans.is_empty() => return text.to_string(),
            None => {}
        }
        // Every place found in the text as it was, overlapping places blanked as one.
        spans.sort_by_key(|r| (r.start, std::cmp::Reverse(r.end)));
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for r in spans {
            if r.end <= at {
                continue;
            }
            if r.start >= at {
                out.push_str(&text[at..r.start]);
                out.push_str(REDACTED);
            }
            at = r.end;
        }
        out.push_str(&text[at..]);
        out
    }

    /// Whether `text` holds a secret of at least [`MIN_LEN`] characters, in any form
    /// [`Secrets::redact`] blanks.
    fn holds_secret(&self, text: &str) -> bool {
        let s = self.searched();
        s.regex.as_ref().is_some_and(|re| re.is_match(text))
            || s.long.iter().any(|f| text.contains(f.as_str()))
    }

    /// A diagnostic with the secrets blanked out of its message, hint and path. A short secret is
    /// blanked too when the diagnostic is about its own field (same file and document, one path
    /// within the other).
    pub fn redact_diagnostic(&self, d: &Diagnostic) -> Diagnostic {
        let mut out = d.clone();
        out.message = self.redact(&d.message);
        out.hint = d.hint.as_deref().map(|h| self.redact(h));
        out.path = d.path.as_deref().map(|p| self.redact(p));
        let dpath = d.path.as_deref().and_then(FieldPath::parse);
        for s in &self.secrets {
            if s.value.chars().count() >= MIN_LEN || s.file.is_none() || s.file != d.file {
                continue;
            }
            let about = match &s.place {
                Some(Place::Node { document, path }) => {
                    d.document.is_none_or(|x| x == *document)
                        && dpath.as_ref().is_some_and(|p| related(p, path))
                }
                Some(Place::Lines { first, last }) => {
                    d.line.is_some_and(|l| (*first..=*last).contains(&l))
                }
                None => false,
            };
            if about {
                for f in forms_of(&s.value) {
                    out.message = out.message.replace(&f, REDACTED);
                    out.hint = out.hint.map(|h| h.replace(&f, REDACTED));
                }
            }
        }
        out
    }

    /// A file's text with its secrets blanked, line structure kept (a snippet's line numbers stay
    /// right): the values located in this file wherever they sit, then every secret by text.
    pub fn redact_source(&self, file: &SourceFile) -> String {
        let text = file.text.as_str();
        let mut ranges: Vec<Range<usize>> = Vec::new();
        for s in &self.secrets {
            if s.file.as_deref() != Some(file.name.as_str()) {
                continue;
            }
            match &s.place {
                Some(Place::Node { document, path }) => {
                    if let Some(r) = locate_value(text, *document, path) {
                        ranges.push(r);
                    }
                }
                Some(Place::Lines { first, last }) => {
                    ranges.extend(value_parts(text, *first, *last));
                }
                None => {}
            }
        }
        // A scalar holding a secret in a form no pattern knows (an escape of a printable
        // character, a double-quoted value folded over lines) is found by what it means.
        if self.searched().regex.is_some() || !self.searched().long.is_empty() {
            ranges.extend(scalar_spans(text, |v| self.holds_secret(v)));
        }
        let masked = if ranges.is_empty() {
            text.to_string()
        } else {
            mask(text, ranges)
        };
        self.redact(&masked)
    }
}

/// The values of `--set path=value` arguments as one document (`{path: value}`, nested along
/// the path), so named paths and kurel variables find them like values in a file.
pub fn set_arguments_document(sets: &[String]) -> Value {
    fn insert(at: &mut Value, segs: &[Segment], value: Value) {
        let Some((first, rest)) = segs.split_first() else {
            *at = value;
            return;
        };
        match first {
            Segment::Key(k) => {
                if !at.is_object() {
                    *at = Value::Object(serde_json::Map::new());
                }
                if let Some(m) = at.as_object_mut() {
                    insert(m.entry(k.clone()).or_insert(Value::Null), rest, value);
                }
            }
            // Lists as long as the index says (a huge index is not a real parameter).
            Segment::Index(i) if *i < 10_000 => {
                if !at.is_array() {
                    *at = Value::Array(Vec::new());
                }
                if let Some(a) = at.as_array_mut() {
                    if a.len() <= *i {
                        a.resize(*i + 1, Value::Null);
                    }
                    insert(&mut a[*i], rest, value);
                }
            }
            Segment::Index(_) => {}
        }
    }
    let mut doc = Value::Object(serde_json::Map::new());
    for s in sets {
        if let Some((path, value)) = s.split_once('=') {
            // `insert` recurses along the path: one deeper than any document (a run refuses it
            // first, `kurel::values::too_deep_sets`) is left out.
            let deepest = crate::limits::Limit::YamlDepth.max();
            if let Some(fp) = FieldPath::parse(path.trim()).filter(|p| p.0.len() as u64 <= deepest)
            {
                insert(&mut doc, &fp.0, Value::String(value.to_string()));
            }
        }
    }
    doc
}

/// The rules a named path makes.
fn rules_of(p: &SecretPath) -> Vec<Rule> {
    let mut rules = vec![Rule {
        scope: Scope::Root,
        path: p.clone(),
    }];
    if let Some(rest) = p.starts_with_key("parameters") {
        rules.push(Rule {
            scope: Scope::Parameters,
            path: rest,
        });
    }
    rules
}

/// Whether one path is within the other (or equal).
fn related(a: &FieldPath, b: &FieldPath) -> bool {
    let n = a.0.len().min(b.0.len());
    a.0[..n] == b.0[..n]
}

/// A cheap test before parsing a file again: can it hold a Secret or a sensitive marker?
/// What of a unit's objects redaction must still see once the unit is serialised (`yaml` is
/// their text): all of them when the text may hold a secret value (a Secret's data, an
/// `oc:sensitive` field), else none. Doors that serialise each unit on its worker keep these
/// for their warnings ([`crate::request::Rendered::redacted_warnings`]).
pub fn kept_for_redaction(yaml: &str, objects: Vec<Value>) -> Vec<Value> {
    if may_hold_secrets(yaml) {
        objects
    } else {
        Vec::new()
    }
}

pub(crate) fn may_hold_secrets(text: &str) -> bool {
    text.contains("ecret") || text.contains("oc:sensitive")
}

fn parse(f: &SourceFile, formats: &[FileSecrets]) -> Parsed {
    if let Some(lines) = formats.iter().find_map(|read| read(f)) {
        return Parsed::Lines(lines);
    }
    let file = Arc::new(SourceFile {
        name: f.name.clone(),
        text: f.text.clone(),
    });
    match parse_source(&file, &YamlLimits::default()) {
        Ok(docs) => Parsed::Docs(docs),
        Err(_) => Parsed::Unparsed(unparsed_secret_lines(&f.text)),
    }
}

/// A YAML file that did not parse and mentions a Secret: the lines indented under `data:` or
/// `stringData:`, as `(first, last)` line ranges (1-based).
fn unparsed_secret_lines(text: &str) -> Vec<(usize, usize)> {
    if !text.contains("Secret") {
        return Vec::new();
    }
    let indent = |l: &str| l.len() - l.trim_start().len();
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if t.starts_with("data:") || t.starts_with("stringData:") {
            let base = indent(lines[i]);
            let inline = t.split_once(':').is_some_and(|(_, v)| !v.trim().is_empty());
            let first = if inline { i } else { i + 1 };
            let mut j = i + 1;
            while j < lines.len() && (lines[j].trim().is_empty() || indent(lines[j]) > base) {
                j += 1;
            }
            if j > first {
                out.push((first + 1, j));
            }
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// Byte ranges of the value parts of lines `first..=last` (after the first `: `, or the whole
/// content for a line without one).
fn value_parts(text: &str, first: usize, last: usize) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut offset = 0;
    for (i, line) in text.split_inclusive('\n').enumerate() {
        let n = i + 1;
        if n > last {
            break;
        }
        if n >= first {
            let content = line.trim_end_matches(['\n', '\r']);
            let start = match content.find(": ") {
                Some(p) => p + 2,
                None if content.trim_end().ends_with(':') => content.len(),
                None => content.len() - content.trim_start().len(),
            };
            if start < content.len() {
                out.push(offset + start..offset + content.len());
            }
        }
        offset += line.len();
    }
    out
}

/// `text` with each byte range replaced by [`REDACTED`], once per line it covers, line breaks
/// kept.
fn mask(text: &str, mut ranges: Vec<Range<usize>>) -> String {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut masked = vec![false; text.len()];
    for r in ranges {
        for m in &mut masked[r.start.min(text.len())..r.end.min(text.len())] {
            *m = true;
        }
    }
    let mut out = String::with_capacity(text.len());
    let mut in_mask = false;
    for (i, c) in text.char_indices() {
        if masked[i] && c != '\n' && c != '\r' {
            if !in_mask {
                out.push_str(REDACTED);
                in_mask = true;
            }
            continue;
        }
        in_mask = false;
        out.push(c);
    }
    out
}

/// The forms in which a printer may write a value: as is; escaped inside a quoted string the
/// way each printer kiln's output passes through escapes ([`Escape`]: YAML as kiln's writer
/// writes it and with lower-case hex, JSON, Go's encoding/json and `%q`, Rust's `{:?}`, a YAML
/// single-quoted string); each of those escaped again as a JSON string (a diff's text in
/// `--format json`, a message quoting a quoted value); each long line of a multi-line value; its
/// base64, as a `data` field holds it (either alphabet, without the padding, which a match need
/// not include).
fn forms_of(value: &str) -> Vec<String> {
    let mut forms = vec![value.to_string()];
    let debug = format!("{value:?}");
    forms.push(debug[1..debug.len() - 1].to_string());
    for e in ESCAPES {
        forms.push(escaped(value, e));
    }
    forms.push(value.replace('\'', "''"));
    let again: Vec<String> = forms[1..]
        .iter()
        .map(|f| escaped(f, &Escape::Json))
        .collect();
    forms.extend(again);
    if value.contains('\n') {
        for line in value.lines() {
            let line = line.trim();
            if line.chars().count() >= 8 {
                forms.push(line.to_string());
            }
        }
    }
    let b64 = crate::expr::library::base64(value.as_bytes());
    let b64 = b64.trim_end_matches('=');
    forms.push(b64.replace('+', "-").replace('/', "_"));
    forms.push(b64.to_string());
    forms.retain(|f| !f.is_empty());
    forms.sort();
    forms.dedup();
    forms
}

/// How a printer escapes characters inside a double-quoted string.
enum Escape {
    /// YAML as kiln's writer (serde-saphyr) writes it: named escapes, `\xXX` and `\uXXXX` with
    /// upper-case hex.
    YamlUpper,
    /// The same with lower-case hex, as a person may write it.
    YamlLower,
    /// JSON (serde_json): `\uXXXX` for the other control characters below U+0020.
    Json,
    /// Go's encoding/json (kustomize's and kubectl's messages): JSON, and `<`, `>`, `&`, U+2028
    /// and U+2029 as `\uXXXX`.
    GoJson,
    /// Go's `%q`: `\xXX` below U+0080, `\uXXXX` and `\UXXXXXXXX` for what is not printable.
    GoQuote,
}

const ESCAPES: &[Escape] = &[
    Escape::YamlUpper,
    Escape::YamlLower,
    Escape::Json,
    Escape::GoJson,
    Escape::GoQuote,
];

/// `value` escaped as `how` writes it inside a quoted string (without the quotes).
fn escaped(value: &str, how: &Escape) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(value.len() + 8);
    for c in value.chars() {
        let n = u32::from(c);
        let yaml = matches!(how, Escape::YamlUpper | Escape::YamlLower);
        let named = match c {
            '"' => Some("\\\""),
            '\\' => Some("\\\\"),
            '\n' => Some("\\n"),
            '\t' => Some("\\t"),
            '\r' => Some("\\r"),
            '\u{8}' => Some("\\b"),
            '\u{c}' => Some("\\f"),
            '\u{7}' if yaml || matches!(how, Escape::GoQuote) => Some("\\a"),
            '\u{b}' if yaml || matches!(how, Escape::GoQuote) => Some("\\v"),
            '\0' if yaml => Some("\\0"),
            '\u{1b}' if yaml => Some("\\e"),
            '\u{85}' if yaml => Some("\\N"),
            '\u{2028}' if yaml => Some("\\L"),
            '\u{2029}' if yaml => Some("\\P"),
            _ => None,
        };
        if let Some(e) = named {
            out.push_str(e);
            continue;
        }
        let unprintable = c.is_control() || c.escape_debug().nth(1).is_some();
        let hex = match how {
            Escape::YamlUpper | Escape::YamlLower => {
                if n <= 0xff && (c.is_control() || (0x7f..=0x9f).contains(&n)) {
                    Some(format!("\\x{n:02X}"))
                } else if matches!(c, '\u{feff}' | '\u{fffe}' | '\u{ffff}') {
                    Some(format!("\\u{n:04X}"))
                } else {
                    None
                }
            }
            Escape::Json => (n < 0x20).then(|| format!("\\u{n:04x}")),
            Escape::GoJson => (n < 0x20 || matches!(c, '<' | '>' | '&' | '\u{2028}' | '\u{2029}'))
                .then(|| format!("\\u{n:04x}")),
            Escape::GoQuote => {
                if n < 0x20 || n == 0x7f {
                    Some(format!("\\x{n:02x}"))
                } else if unprintable && n <= 0xffff {
                    Some(format!("\\u{n:04x}"))
                } else if unprintable {
                    Some(format!("\\U{n:08x}"))
                } else {
                    None
                }
            }
        };
        match hex {
            Some(h) if matches!(how, Escape::YamlLower) => out.push_str(&h.to_lowercase()),
            Some(h) => out.push_str(&h),
            None => {
                let _ = write!(out, "{c}");
            }
        }
    }
    out
}

/// Walk `v` for Secret objects (their data values are added to `found`), Secret templates (what
/// their expressions read becomes a rule) and component definitions (their `oc:sensitive`
/// parameters become rules).
fn scan(
    v: &Value,
    at: &FieldPath,
    depth: usize,
    found: &mut Vec<(FieldPath, String)>,
    rules: &mut Vec<Rule>,
) {
    if depth > MAX_SCAN_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            match m.get("kind").and_then(Value::as_str) {
                Some("Secret") => {
                    for key in ["data", "stringData"] {
                        if let Some(d) = m.get(key) {
                            let base = at.key(key);
                            let mut inferred = Vec::new();
                            for (p, s) in data_values(d, &base, &mut inferred) {
                                found.push((p, s));
                            }
                            for r in inferred {
                                if !rules.contains(&r) {
                                    rules.push(r);
                                }
                            }
                        }
                    }
                }
                Some(kind) => sensitive_rules(kind, v, rules),
                None => {}
            }
            for (k, x) in m {
                scan(x, &at.key(k), depth + 1, found, rules);
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                scan(x, &at.index(i), depth + 1, found, rules);
            }
        }
        _ => {}
    }
}

/// The values of a Secret's `data` or `stringData`: literal text is secret (a `data` value also
/// decoded); an expression is not, but what it reads becomes a rule.
fn data_values(d: &Value, base: &FieldPath, rules: &mut Vec<Rule>) -> Vec<(FieldPath, String)> {
    let mut out = Vec::new();
    let decode = base.0.last() == Some(&Segment::Key("data".into()));
    leaves(d, base, &mut |p, s| {
        if s.contains("${") {
            rules.extend(read_by(&s));
            return;
        }
        if decode {
            if let Some(text) = base64_text(&s) {
                out.push((p.clone(), text));
            }
        }
        out.push((p, s));
    });
    out
}

/// Every scalar under `v`, as text (what a front-end reading its own format calls secret when it
/// sits in a Secret's data).
pub fn scalars(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    leaves(v, &FieldPath::root(), &mut |_, s| out.push(s));
    out
}

/// Every scalar under `v`, as text, with its path.
fn leaves(v: &Value, at: &FieldPath, f: &mut dyn FnMut(FieldPath, String)) {
    match v {
        Value::Null => {}
        Value::String(s) => f(at.clone(), s.clone()),
        Value::Bool(_) | Value::Number(_) => f(at.clone(), v.to_string()),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaves(x, &at.index(i), f);
            }
        }
        Value::Object(m) => {
            for (k, x) in m {
                leaves(x, &at.key(k), f);
            }
        }
    }
}

/// The rules for what the expressions of a template string read.
fn read_by(s: &str) -> Vec<Rule> {
    static CHAIN: OnceLock<regex::Regex> = OnceLock::new();
    let chain = CHAIN.get_or_init(|| {
        regex::Regex::new(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_-]*|\[[0-9]+\])*")
            .expect("valid regex")
    });
    let mut rules = Vec::new();
    let mut rest = s;
    while let Some(i) = rest.find("${") {
        let after = &rest[i + 2..];
        let Some(end) = after.find('}') else {
            break;
        };
        let expr = &after[..end];
        rest = &after[end + 1..];
        for m in chain.find_iter(expr) {
            let text = m.as_str();
            let (scope, path) = if let Some(p) = text.strip_prefix("schema.") {
                (Scope::Root, p)
            } else if let Some(p) = ["parameters.", "envOverrides.", "environmentConfigs."]
                .iter()
                .find_map(|pre| text.strip_prefix(pre))
            {
                (Scope::Parameters, p)
            } else if text == expr.trim() {
                // A kurel variable: the whole expression is one parameter path.
                (Scope::Root, text)
            } else {
                continue;
            };
            if let Ok(path) = SecretPath::parse(path) {
                let r = Rule { scope, path };
                if !rules.contains(&r) {
                    rules.push(r);
                }
            }
        }
    }
    rules
}

/// Rules for the `oc:sensitive` parameters of a component type or addon.
fn sensitive_rules(kind: &str, def: &Value, rules: &mut Vec<Rule>) {
    let scope = match kind {
        "ComponentTypeDefinition" => Scope::Parameters,
        "Addon" => Scope::AddonParameters,
        _ => return,
    };
    let Some(schema) = def.pointer("/spec/schema") else {
        return;
    };
    let types = schema.get("types").and_then(Value::as_object);
    for section in ["parameters", "envOverrides"] {
        if let Some(s) = schema.get(section) {
            let mut paths = Vec::new();
            sensitive_fields(s, types, &mut Vec::new(), 0, &mut paths);
            for p in paths {
                let r = Rule {
                    scope: scope.clone(),
                    path: SecretPath(p),
                };
                if !rules.contains(&r) {
                    rules.push(r);
                }
            }
        }
    }
}

/// Paths of the fields of a shorthand schema section marked `oc:sensitive`, following named
/// types (`[]T` and `map<T>` as any index or key).
fn sensitive_fields(
    section: &Value,
    types: Option<&serde_json::Map<String, Value>>,
    prefix: &mut Vec<Pat>,
    depth: usize,
    out: &mut Vec<Vec<Pat>>,
) {
    let Value::Object(m) = section else {
        return;
    };
    if depth > 16 {
        return;
    }
    for (k, v) in m {
        prefix.push(Pat::Key(k.clone()));
        match v {
            Value::String(s) => {
                let (ty, markers) = s.split_once('|').unwrap_or((s, ""));
                if markers
                    .split_whitespace()
                    .any(|t| t == "oc:sensitive" || t == "oc:sensitive=true")
                {
                    out.push(prefix.clone());
                } else {
                    let mut ty = ty.trim();
                    let mut extra = 0;
                    loop {
                        if let Some(t) = ty.strip_prefix("[]") {
                            ty = t;
                        } else if let Some(t) = ty
                            .strip_prefix("map<")
                            .and_then(|t| t.strip_suffix('>'))
                            .or_else(|| ty.strip_prefix("array<").and_then(|t| t.strip_suffix('>')))
                            .or_else(|| ty.strip_prefix("map[string]"))
                        {
                            ty = t.trim();
                        } else {
                            break;
                        }
                        prefix.push(Pat::Any);
                        extra += 1;
                    }
                    if let Some(t) = types.and_then(|t| t.get(ty)) {
                        sensitive_fields(t, types, prefix, depth + 1, out);
                    }
                    prefix.truncate(prefix.len() - extra);
                }
            }
            Value::Object(_) => sensitive_fields(v, types, prefix, depth + 1, out),
            _ => {}
        }
        prefix.pop();
    }
}

/// Apply the rules to a document: each value found (every scalar under it) is secret.
fn apply(doc: &Value, rules: &[Rule], found: &mut Vec<(FieldPath, String)>) {
    for r in rules {
        let roots: Vec<SecretPath> = match r.scope {
            Scope::Root => vec![SecretPath(Vec::new()), spath("spec")],
            Scope::Parameters => PARAMETER_ROOTS.iter().map(|p| spath(p)).collect(),
            Scope::AddonParameters => ADDON_ROOTS.iter().map(|p| spath(p)).collect(),
        };
        for root in roots {
            let pats: Vec<Pat> = root.0.iter().chain(r.path.0.iter()).cloned().collect();
            let mut hits = Vec::new();
            find(doc, &pats, FieldPath::root(), &mut hits);
            for (p, v) in hits {
                leaves(v, &p, &mut |p, s| {
                    if !s.contains("${") {
                        found.push((p, s));
                    }
                });
            }
        }
    }
}

fn spath(s: &str) -> SecretPath {
    SecretPath::parse(s).expect("built-in paths parse")
}

fn find<'v>(v: &'v Value, pats: &[Pat], at: FieldPath, out: &mut Vec<(FieldPath, &'v Value)>) {
    let Some((first, rest)) = pats.split_first() else {
        out.push((at, v));
        return;
    };
    match (first, v) {
        (Pat::Key(k), Value::Object(m)) => {
            if let Some(x) = m.get(k) {
                find(x, rest, at.key(k), out);
            }
        }
        (Pat::Index(i), Value::Array(a)) => {
            if let Some(x) = a.get(*i) {
                find(x, rest, at.index(*i), out);
            }
        }
        (Pat::Any, Value::Object(m)) => {
            for (k, x) in m {
                find(x, rest, at.key(k), out);
            }
        }
        (Pat::Any, Value::Array(a)) => {
            for (i, x) in a.iter().enumerate() {
                find(x, rest, at.index(i), out);
            }
        }
        _ => {}
    }
}

/// The text a `data` value encodes, when it is base64 of UTF-8 (control characters included: a
/// value holding one is still a value a template may copy).
fn base64_text(s: &str) -> Option<String> {
    let bytes = base64_decode(s)?;
    let text = String::from_utf8(bytes).ok()?;
    (!text.trim().is_empty()).then_some(text)
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            b'\n' | b'\r' | b' ' => continue,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::codes;

    fn file(name: &str, text: &str) -> Arc<SourceFile> {
        Arc::new(SourceFile {
            name: name.into(),
            text: text.into(),
        })
    }

    fn values(s: &Secrets) -> Vec<&str> {
        s.iter().map(|x| x.value.as_str()).collect()
    }

    /// A unit serialised on its worker keeps the objects redaction needs: a rendered Secret's
    /// value (computed, so in no input file) is still blanked from a warning.
    #[test]
    fn a_serialised_unit_keeps_what_redaction_needs() {
        let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "db"}, "stringData": {"pw": "alice:Computed-42"}});
        let plain = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k": "v"}});
        let objects = vec![plain.clone(), secret];
        let yaml = crate::output::yaml_stream(&objects).unwrap();
        let kept = kept_for_redaction(&yaml, objects);
        assert_eq!(kept.len(), 2);
        let mut s = Secrets::default();
        s.add_objects(&kept, &[]);
        let d = Diagnostic::warning(codes::EVALUATION, "value \"alice:Computed-42\" is odd");
        assert!(!s.redact_diagnostic(&d).message.contains("Computed-42"));

        let yaml = crate::output::yaml_stream(std::slice::from_ref(&plain)).unwrap();
        assert!(kept_for_redaction(&yaml, vec![plain]).is_empty());
    }

    #[test]
    fn paths_parse_and_print() {
        let deep = vec!["a"; 513].join(".");
        for p in [
            "spec.password",
            "spec.users[*].password",
            "a[0][\"b.c\"]",
            "*.x",
        ] {
            let parsed = SecretPath::parse(p).unwrap();
            assert_eq!(
                SecretPath::parse(&parsed.to_string()).unwrap(),
                parsed,
                "{p}"
            );
        }
        for (bad, why) in [
            ("", "the path is empty"),
            ("a..b", "empty segment"),
            ("a.", "ends with ."),
            ("a[", "unclosed ["),
            ("a[x]", "\"[x]\" is not an index"),
            (".a", "empty segment"),
            // Deeper than any document kiln reads (issue 39).
            (deep.as_str(), "513 segments"),
        ] {
            let refused = SecretPath::parse(bad).expect_err("an error");
            assert!(refused.to_string().contains(why), "{bad}: {refused}");
        }
    }

    #[test]
    fn secret_objects_and_what_their_templates_read() {
        let rgd = file(
            "rgd.yaml",
            r#"kind: ResourceGraphDefinition
spec:
  resources:
    - id: creds
      template:
        apiVersion: v1
        kind: Secret
        stringData:
          password: ${schema.spec.db.password}
          literal: template-literal-secret
        data:
          token: ${base64.encode(bytes(schema.spec.token))}
"#,
        );
        let inst = file(
            "inst.yaml",
            "kind: App\nspec:\n  db: {password: hunter22, user: admin}\n  token: tok-123456\n",
        );
        let plain = file(
            "secret.yaml",
            "kind: Secret\ndata:\n  key: aHVudGVyMjI=\nstringData:\n  other: s3cr3t-value\n",
        );
        let s = Secrets::collect(&[rgd, inst, plain], &[], &[], &[]);
        let v = values(&s);
        for want in [
            "template-literal-secret",
            "hunter22",
            "tok-123456",
            "aHVudGVyMjI=",
            "s3cr3t-value",
        ] {
            assert!(v.contains(&want), "{want} not in {v:?}");
        }
        assert!(!v.contains(&"admin"), "{v:?}");
        assert!(!v.iter().any(|x| x.contains("${")), "{v:?}");
    }

    #[test]
    fn named_paths_kurel_variables_and_sensitive_parameters() {
        let ctd = file(
            "type.yaml",
            r#"kind: ComponentTypeDefinition
spec:
  schema:
    types:
      Creds: {user: string, key: string | oc:sensitive}
    parameters:
      apiKey: string | oc:sensitive
      creds: Creds
      port: integer
"#,
        );
        let comp = file(
            "component.yaml",
            "kind: Component\nspec:\n  parameters:\n    apiKey: api-key-value\n    port: 8080\n    creds: {user: bob, key: creds-key-value}\n",
        );
        let deploy = file(
            "deploy.yaml",
            "kind: ComponentDeployment\nspec:\n  overrides:\n    apiKey: override-key-value\n",
        );
        let kurel_res = file(
            "secret.yaml",
            "kind: Secret\nstringData:\n  pw: ${db.password}\n",
        );
        let params = file(
            "parameters.yaml",
            "db: {password: kurel-password}\nother: 1\n",
        );
        let inst = file("inst.yaml", "kind: App\nspec: {token: named-token-value}\n");
        let named = vec![SecretPath::parse("spec.token").unwrap()];
        let s = Secrets::collect(
            &[ctd, comp, deploy, kurel_res, params, inst],
            &[],
            &named,
            &[],
        );
        let v = values(&s);
        for want in [
            "api-key-value",
            "creds-key-value",
            "override-key-value",
            "kurel-password",
            "named-token-value",
        ] {
            assert!(v.contains(&want), "{want} not in {v:?}");
        }
        assert!(!v.contains(&"bob") && !v.contains(&"8080"), "{v:?}");
    }

    #[test]
    fn diagnostics_and_snippets_are_blanked() {
        let text = "apiVersion: v1\nkind: Secret\nstringData:\n  password: \"hunter22\"\n  pin: \"42\"\n  key: |\n    -----BEGIN KEY-----\n    c2VjcmV0LWtleS1tYXRlcmlhbA\n";
        let f = file("s.yaml", text);
        let s = Secrets::collect(std::slice::from_ref(&f), &[], &[], &[]);
        let src = s.redact_source(&f);
        assert!(!src.contains("hunter22") && !src.contains("42"), "{src}");
        assert!(!src.contains("c2VjcmV0"), "{src}");
        assert_eq!(src.lines().count(), text.lines().count(), "{src}");
        assert!(src.contains("password: [redacted]"), "{src}");
        let d = Diagnostic::error(
            codes::INSTANCE_INVALID,
            "value \"hunter22\" and \"42\" are bad",
        )
        .in_document("s.yaml", 0)
        .at("stringData.pin")
        .with_hint("not hunter22");
        let r = s.redact_diagnostic(&d);
        assert_eq!(r.message, "value \"[redacted]\" and \"[redacted]\" are bad");
        assert_eq!(r.hint.as_deref(), Some("not [redacted]"));
        // A short value elsewhere is left alone.
        let other = Diagnostic::error(codes::INSTANCE_INVALID, "replicas 42").in_file("x.yaml");
        assert_eq!(s.redact_diagnostic(&other).message, "replicas 42");
        // Escaped forms are found too, and a replacement is never searched again.
        let mut s = Secrets::default();
        s.add_value("a\"quote\nline");
        s.add_value("dact");
        assert_eq!(s.redact("x \"a\\\"quote\\nline\" y"), "x \"[redacted]\" y");
        assert_eq!(s.redact("redacted"), "re[redacted]ed");
    }

    #[test]
    fn rendered_objects() {
        let mut s = Secrets::default();
        s.add_objects(
            &[serde_json::json!({"kind": "List", "items": [{"kind": "Secret", "data": {"a": "cmVuZGVyZWQtc2VjcmV0"}}]})],
            &[],
        );
        assert!(values(&s).contains(&"rendered-secret"), "{:?}", values(&s));
    }

    /// A file a front-end reads in its own format is read by it (kurel's patches: see
    /// `kurel::secrets`), and its secret lines are masked in snippets.
    #[test]
    fn files_of_a_front_end_format_are_read_by_it() {
        fn lines(f: &SourceFile) -> Option<Vec<(usize, Vec<String>)>> {
            f.name
                .ends_with(".own")
                .then(|| vec![(2, vec!["own-password".to_string()])])
        }
        let p = file(
            "10-pw.own",
            "[secret.db]\npassword: own-password\nreplicas: 3\n",
        );
        let s = Secrets::collect(std::slice::from_ref(&p), &[], &[], &[lines]);
        assert_eq!(values(&s), ["own-password"]);
        let src = s.redact_source(&p);
        assert!(src.contains("password: [redacted]"), "{src}");
        assert!(src.contains("replicas: 3"), "{src}");
        let s = Secrets::collect(std::slice::from_ref(&p), &[], &[], &[]);
        assert!(s.is_empty(), "{:?}", values(&s));
    }

    /// How a YAML printer writes `v` on one line (kiln's output writer: a diff's text), `None`
    /// when it writes a block.
    fn as_yaml(v: &str) -> Option<String> {
        let y = crate::output::to_yaml(&serde_json::json!([v])).unwrap();
        let y = y.strip_prefix("- ")?.strip_suffix('\n')?;
        (!y.starts_with('|') && !y.contains('\n')).then(|| y.to_string())
    }

    proptest::proptest! {
        /// A secret quoted in a message in any of the usual ways (as is, `{:?}`, JSON, as the
        /// YAML writer writes it, each of those escaped again as a JSON string, base64) never
        /// survives redaction, in the message, the hint or the JSON form of the diagnostic.
        #[test]
        fn quoted_secrets_never_survive(
            secret in "[a-z0-9\"\\\n\t!é'/\u{1}\u{7f}\u{85}\u{2028}\u{feff}<]{4,24}",
            prefix in "[A-Z :]{0,12}",
            suffix in "[A-Z :]{0,12}",
        ) {
            proptest::prop_assume!(!REDACTED.contains(secret.as_str()));
            // Blank values are never secrets (redacting whitespace would mangle every
            // message); `push` drops them on purpose.
            proptest::prop_assume!(!secret.trim().is_empty());
            let mut s = Secrets::default();
            s.add_value(secret.clone());
            let mut quoted = vec![
                secret.clone(),
                format!("{secret:?}"),
                serde_json::to_string(&secret).unwrap(),
                crate::expr::library::base64(secret.as_bytes()),
            ];
            quoted.extend(as_yaml(&secret));
            let again: Vec<String> =
                quoted.iter().map(|q| serde_json::to_string(q).unwrap()).collect();
            quoted.extend(again);
            for q in quoted {
                let d = Diagnostic::error(codes::EVALUATION, format!("{prefix}{q}{suffix}"))
                    .with_hint(format!("{suffix}{q}"));
                let r = s.redact_diagnostic(&d);
                let json = serde_json::to_string(&r).unwrap();
                for text in [&r.message, r.hint.as_ref().unwrap(), &json] {
                    proptest::prop_assert!(!text.contains(secret.as_str()), "{q}: {text}");
                    proptest::prop_assert!(!text.contains(q.as_str()), "{q}: {text}");
                }
                proptest::prop_assert!(r.message.contains(REDACTED), "{q}: {}", r.message);
            }
        }
    }

    /// A Secret's value with a control character and a line separator, copied into another
    /// object: every way a printer writes it is blanked (issue 39), and a file's snippet masks
    /// it however the file spells it.
    #[test]
    fn every_form_of_a_value_is_blanked() {
        let value = "hunter22\u{1}zz\u{2028}secret";
        let mut s = Secrets::default();
        s.add_value(value);
        for form in [
            // kiln's YAML writer (a diff's text), and that text in a JSON diff.
            r#"mode: "hunter22\x01zz\Lsecret""#,
            r#""mode: \"hunter22\\x01zz\\Lsecret\"""#,
            // JSON, Rust's {:?}, Go's %q.
            r#""hunter22\u0001zz\u2028secret""#,
            r#""hunter22\u{1}zz\u{2028}secret""#,
            r#""hunter22\x01zz\u2028secret""#,
            // base64 (a `data` field), padded or not, either alphabet.
            "aHVudGVyMjIBenrigKhzZWNyZXQ=",
            "aHVudGVyMjIBenrigKhzZWNyZXQ",
        ] {
            let r = s.redact(form);
            assert!(r.contains(REDACTED), "{form}: {r}");
            assert!(
                !r.contains("hunter22") && !r.contains("aHVudGVy"),
                "{form}: {r}"
            );
        }
        // A snippet: the ConfigMap's own spelling, an escape of a printable character (found by
        // what the scalar means), a double-quoted value folded over two lines.
        let text = "kind: ConfigMap\ndata:\n  a: \"hunter22\\x01zz\\Lsecret\"\n  b: \"\\x68unter22\\U00000001zz\\u2028secret\"\n  c: \"hunter22\\x01zz\\L\\\n    secret\"\n  d: plain\n";
        let f = file("cm.yaml", text);
        let src = s.redact_source(&f);
        assert!(
            !src.contains("unter22") && !src.contains("secret\""),
            "{src}"
        );
        assert_eq!(src.lines().count(), text.lines().count(), "{src}");
        assert!(src.contains("d: plain"), "{src}");
        // A `data` value encoding such a text is a secret in its decoded form too.
        let sec = file(
            "s.yaml",
            "kind: Secret\ndata:\n  pw: aHVudGVyMjIBenrigKhzZWNyZXQ=\n",
        );
        let s = Secrets::collect(&[sec], &[], &[], &[]);
        assert!(values(&s).contains(&value), "{:?}", values(&s));
    }

    /// A secret longer than the regular expression takes is blanked in every form too, whole
    /// when a shorter secret sits inside it.
    #[test]
    fn a_huge_secret_is_blanked() {
        let value = format!("{}\u{1}end", "s".repeat(LONG_FORM * 8));
        let mut s = Secrets::default();
        s.add_value(value.clone());
        s.add_value("ssss");
        assert!(!s.searched().long.is_empty());
        let yaml = as_yaml(&value).unwrap();
        for form in [value.clone(), format!("{value:?}"), yaml] {
            let r = s.redact(&format!("x {form} y"));
            assert!(r.len() < 20 && !r.contains("ss"), "{r}");
            assert_eq!(r.matches(REDACTED).count(), 1, "{r}");
        }
        assert_eq!(s.redact("a ssss b"), format!("a {REDACTED} b"));
    }

    #[test]
    fn set_arguments_are_a_document() {
        let doc = set_arguments_document(&["db.password=p=w0rd".into(), "hosts[1].name=h".into()]);
        assert_eq!(
            doc,
            serde_json::json!({"db": {"password": "p=w0rd"}, "hosts": [null, {"name": "h"}]})
        );
        let mut s = Secrets::default();
        s.add_objects(&[doc], &[SecretPath::parse("db.password").unwrap()]);
        assert_eq!(values(&s), ["p=w0rd"]);
        // A path deeper than any document is left out, not built (issue 39).
        let deep = format!("{}=v", vec!["a"; 513].join("."));
        assert_eq!(set_arguments_document(&[deep]), serde_json::json!({}));
        assert!(SecretPath::parse(&vec!["a"; 512].join(".")).is_ok());
    }

    #[test]
    fn unparsed_files_are_masked_by_indentation() {
        let text = "kind: Secret\nstringData:\n  password: hunter22\n  bad: [unclosed\nmetadata: {name: x}\n";
        let f = file("bad.yaml", text);
        let s = Secrets::collect(std::slice::from_ref(&f), &[], &[], &[]);
        let src = s.redact_source(&f);
        assert!(!src.contains("hunter22"), "{src}");
        assert!(src.contains("metadata: {name: x}"), "{src}");
    }
}
