//! Diagnostics: the one error type of the whole workspace.
//!
//! Every stage reports problems as [`Diagnostic`]s and keeps going where it can, so a run reports
//! every problem it finds rather than the first. A diagnostic carries a stable [`Code`] (documented in
//! `docs/errors.md`), the file and line when known, the field path inside the document
//! (`spec.resources[2].template.spec.replicas`) and a hint on how to fix it. The doors decide how to
//! print them: human text with a snippet, JSON, or KRM `results`.

use std::fmt;

use serde::Serialize;

/// How bad a diagnostic is. Errors make a run fail; warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The run fails and produces no output.
    Error,
    /// Reported, but output is still produced.
    Warning,
}

/// A stable diagnostic code. The number never changes meaning once released; the slug says what it
/// is about in a word or two. See `docs/errors.md` for causes and fixes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Code {
    /// `KLN` + four digits, e.g. `KLN1001`.
    pub id: &'static str,
    /// Short kebab-case name, e.g. `yaml-syntax`.
    pub slug: &'static str,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id)
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id)
    }
}

/// Declares code constants and a slice `$list` of them. Each front-end keeps its codes in its own
/// file (`diag_codes_*.rs`), so adding a code touches one place.
macro_rules! code_table {
    ($list:ident; $($(#[$doc:meta])* $name:ident = $id:literal, $slug:literal;)*) => {
        $($(#[$doc])* pub const $name: Code = Code { id: $id, slug: $slug };)*
        /// The codes declared in this table.
        pub const $list: &[Code] = &[$($name),*];
    };
}

/// Every diagnostic code kiln emits. Ranges: 1xxx input and YAML, 2xxx definitions and schemas,
/// 3xxx expressions, 4xxx graphs, 5xxx evaluation and instances, 6xxx component types, 7xxx kurel
/// packages, 8xxx Flux postBuild substitution, 9xxx internal.
pub mod codes {
    use super::Code;

    include!("diag_codes_core.rs");
    include!("diag_codes_component.rs");
    include!("diag_codes_kurel.rs");
    include!("diag_codes_flux.rs");

    /// All codes, for the error catalogue test and `--explain`-style tooling.
    pub fn all() -> impl Iterator<Item = &'static Code> {
        CORE.iter().chain(COMPONENT).chain(KUREL).chain(FLUX)
    }
}

/// One problem, located as precisely as the input allows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// What is wrong, in one sentence.
    pub message: String,
    /// The file, as the user named it (or `<stdin>`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// 1-based line, when the parser gives it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// 1-based column (in characters), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
    /// Where the span the diagnostic is about ends, when known: 1-based line and column (in
    /// characters) of the position just past its last character. With `line`/`column` it is the
    /// exact range an editor marks: the whole `${…}` expression the message names, or the field
    /// (its key through its value).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_line: Option<usize>,
    /// See `end_line`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub end_column: Option<usize>,
    /// Field path inside the document, e.g. `spec.resources[2].template.spec.replicas`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// How to fix it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The word the hint suggests instead of a misspelt one (`did you mean "X"?`), for an
    /// editor's quick fix; not part of the JSON output.
    #[serde(skip)]
    pub suggestion: Option<String>,
    /// Which document of a multi-document file (0-based); used to find the line lazily.
    #[serde(skip)]
    pub document: Option<usize>,
}

impl Diagnostic {
    /// A new error with just a code and message; add location with the builder methods.
    pub fn error(code: Code, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            code,
            message: message.into(),
            file: None,
            line: None,
            column: None,
            end_line: None,
            end_column: None,
            path: None,
            hint: None,
            suggestion: None,
            document: None,
        }
    }

    /// A new warning.
    pub fn warning(code: Code, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(code, message)
        }
    }

    /// Set the file.
    pub fn in_file(mut self, file: impl Into<String>) -> Self {
        self.file = Some(file.into());
        self
    }

    /// Set the file and document index.
    pub fn in_document(mut self, file: &str, document: usize) -> Self {
        self.file = Some(file.to_string());
        self.document = Some(document);
        self
    }

    /// Set the field path.
    pub fn at(mut self, path: impl Into<String>) -> Self {
        let p = path.into();
        self.path = if p.is_empty() { None } else { Some(p) };
        self
    }

    /// Set line and column.
    pub fn at_line(mut self, line: usize, column: Option<usize>) -> Self {
        self.line = Some(line);
        self.column = column;
        // A span found for the old position does not end this one.
        self.end_line = None;
        self.end_column = None;
        self
    }

    /// Set where the span the diagnostic is about ends (1-based line and character column, just
    /// past its last character).
    pub fn ending_at(mut self, line: usize, column: usize) -> Self {
        self.end_line = Some(line);
        self.end_column = Some(column);
        self
    }

    /// Set line and column if known.
    pub fn with_position(mut self, line: Option<usize>, column: Option<usize>) -> Self {
        if let Some(line) = line {
            self = self.at_line(line, column);
        }
        self
    }

    /// Set the hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Whether this diagnostic fails the run.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Diagnostic {
    /// One-line form: `error[KLN4001]: file:line: path: message (hint: …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sev = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{sev}[{}]: ", self.code)?;
        if let Some(file) = &self.file {
            write!(f, "{file}")?;
            if let Some(line) = self.line {
                write!(f, ":{line}")?;
            }
            write!(f, ": ")?;
        }
        if let Some(path) = &self.path {
            write!(f, "{path}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(hint) = &self.hint {
            write!(f, " (hint: {hint})")?;
        }
        Ok(())
    }
}

/// The most characters of a value a message quotes ([`quote`]): values come from options,
/// configurations and files, and may be megabytes (a `set` value, an environment name), which a
/// message would otherwise print whole, once per mention; Argo CD shows and caches messages.
pub const QUOTE_CHARS: usize = 48;

/// `s` quoted for a message, the one way every door and every stage quotes a value given to
/// kiln: whole (as Rust's `{:?}` writes it) when it has at most [`QUOTE_CHARS`] characters,
/// else its first [`QUOTE_CHARS`] characters and its length: `"abc…"… (100000 bytes)`.
pub fn quote(s: &str) -> String {
    match s.char_indices().nth(QUOTE_CHARS) {
        None => format!("{s:?}"),
        Some((cut, _)) => format!("{:?}… ({} bytes)", &s[..cut], s.len()),
    }
}

/// `s` as it is when it has at most [`QUOTE_CHARS`] characters, else [`quote`]d: for text a
/// message shows unquoted (a parameter path, a command-line argument) that may be a value of
/// megabytes.
pub fn bounded(s: &str) -> String {
    if s.chars().nth(QUOTE_CHARS).is_none() {
        s.to_string()
    } else {
        quote(s)
    }
}

/// The field path of `key` in `parent`, as `join` writes it (`spec.colour`, `data["mode"]`), or
/// `parent` alone for a key too long to name whole: its message quotes a prefix of it.
pub fn key_path(parent: &str, key: &str, join: impl FnOnce(&str, &str) -> String) -> String {
    if key.chars().nth(QUOTE_CHARS).is_none() {
        join(parent, key)
    } else {
        parent.to_string()
    }
}

/// The longest path a diagnostic names whole, in bytes (Linux's `PATH_MAX`), and the longest
/// name in it (`NAME_MAX`): no file has a longer one.
pub const PATH_BYTES: usize = 4096;
const NAME_BYTES: usize = 255;

/// A path as a diagnostic names it (its file, its message): whole when it can name a file,
/// else (a value given as a path, longer than any file's) quoted by a prefix ([`quote`]).
pub fn path_shown(p: &str) -> String {
    if p.len() <= PATH_BYTES && p.split('/').all(|n| n.len() <= NAME_BYTES) {
        p.to_string()
    } else {
        quote(p)
    }
}

/// A bag of diagnostics gathered by a stage that keeps going after the first problem.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    /// Empty bag.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add one.
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }

    /// Add many.
    pub fn extend(&mut self, ds: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(ds);
    }

    /// Whether any is an error.
    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// Whether there are none at all.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Iterate.
    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// Sort into a stable order (file, document, line, path, code, message) and drop exact
    /// duplicates, so that output does not depend on which worker found what first.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (&a.file, a.document, a.line, &a.path, a.code, &a.message)
                .cmp(&(&b.file, b.document, b.line, &b.path, b.code, &b.message))
        });
        self.0.dedup();
    }
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Self {
        Self(vec![d])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_are_bounded() {
        assert_eq!(quote("yes"), "\"yes\"");
        let at_most = "y".repeat(QUOTE_CHARS);
        assert_eq!(quote(&at_most), format!("{at_most:?}"));
        // A 100-character value: its first 48, and its length.
        let q = quote(&"y".repeat(100));
        assert_eq!(q, format!("{:?}… (100 bytes)", "y".repeat(QUOTE_CHARS)));
        let q = quote(&"y".repeat(20 << 20));
        assert!(q.len() < 80 && q.ends_with("… (20971520 bytes)"), "{q}");
        // Never cut inside a character; escapes stay bounded.
        assert!(quote(&"é".repeat(100)).contains("(200 bytes)"));
        assert!(quote(&"\u{1}".repeat(1000)).len() < 400);
        assert_eq!(bounded("spec.a"), "spec.a");
        let join = |p: &str, k: &str| format!("{p}.{k}");
        assert_eq!(key_path("spec", "colour", join), "spec.colour");
        assert_eq!(key_path("spec", &"y".repeat(100), join), "spec");
        assert_eq!(bounded(&"y".repeat(100)), quote(&"y".repeat(100)));
    }

    #[test]
    fn paths_are_named_whole_unless_no_file_has_them() {
        let real = format!("{}/x.yaml", ["d"; 300].join("/"));
        assert_eq!(path_shown(&real), real);
        let name = format!("app/{}", "n".repeat(NAME_BYTES + 1));
        assert!(
            path_shown(&name).ends_with("… (260 bytes)"),
            "{}",
            path_shown(&name)
        );
        let long = "a/".repeat(PATH_BYTES);
        assert!(path_shown(&long).len() < 100);
    }

    #[test]
    fn codes_are_unique_and_well_formed() {
        let mut ids: Vec<_> = codes::all().map(|c| c.id).collect();
        let n = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate diagnostic id");
        for c in codes::all() {
            assert!(c.id.starts_with("KLN") && c.id.len() == 7, "{}", c.id);
            assert!(c
                .slug
                .chars()
                .all(|ch| ch.is_ascii_lowercase() || ch.is_ascii_digit() || ch == '-'));
        }
    }

    #[test]
    fn every_code_is_documented() {
        let doc = include_str!("../../docs/errors.md");
        for c in codes::all() {
            let heading = format!("## {} {}", c.id, c.slug);
            assert!(doc.contains(&heading), "docs/errors.md lacks {heading:?}");
        }
    }

    #[test]
    fn display_has_every_part() {
        let d = Diagnostic::error(codes::CYCLE, "graph contains a cycle: a -> b -> a")
            .in_file("rgd.yaml")
            .at_line(12, Some(3))
            .at("spec.resources[0]")
            .with_hint("break the cycle");
        assert_eq!(
            d.to_string(),
            "error[KLN4001]: rgd.yaml:12: spec.resources[0]: graph contains a cycle: a -> b -> a (hint: break the cycle)"
        );
    }

    #[test]
    fn sort_is_stable_and_dedups() {
        let a = Diagnostic::error(codes::CYCLE, "x").in_file("b.yaml");
        let b = Diagnostic::error(codes::CYCLE, "x").in_file("a.yaml");
        let mut ds = Diagnostics(vec![a.clone(), b.clone(), a.clone()]);
        ds.sort();
        assert_eq!(ds.0, vec![b, a]);
    }
}
