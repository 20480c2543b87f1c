//! Sources: where input files come from, confined to a root.
//!
//! Every file read goes through a [`Root`], which refuses paths that leave it (`..`, absolute paths,
//! symlinks whose target lies outside) and anything that is not a regular file (devices, fifos), so a
//! template or package can never make kiln read `/etc/passwd` or block on `/dev/zero`. Directory walks
//! are sorted, so the order of inputs never depends on the file system.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use crate::diag::{codes, path_shown, Diagnostic, Diagnostics};
use std::sync::Arc;

use crate::document::{parse_source_with_warnings, Document, SourceFile, YamlLimits};

/// The file extensions read when walking a directory.
pub const MANIFEST_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// The metadata directories of version-control systems: never an input of any door, never
/// packed, never read (docs/ARCHITECTURE.md, "The trust boundary"). `.git` is what Flux's
/// source-controller leaves out of every artifact (fluxcd/pkg `sourceignore.ExcludeVCS`); the
/// others are the same kind of data of Mercurial, Subversion and Bazaar working copies, whose
/// configuration may hold credentials (`.hg/hgrc`'s `[auth]`) just as `.git/config` may.
pub const VCS_DIRS: &[&str] = &[".git", ".hg", ".svn", ".bzr"];

/// Whether a file name is a version-control directory's ([`VCS_DIRS`]), compared ASCII
/// case-insensitively: a case-insensitive file system opens `.GIT` as `.git`, and git refuses
/// both in a tree.
pub fn is_vcs_name(name: &str) -> bool {
    VCS_DIRS.iter().any(|v| v.eq_ignore_ascii_case(name))
}

/// The first component of `rel` that is a version-control directory, if any.
pub fn vcs_component(rel: &Path) -> Option<String> {
    rel.components().find_map(|c| match c {
        Component::Normal(n) => n.to_str().filter(|n| is_vcs_name(n)).map(str::to_string),
        _ => None,
    })
}

/// KLN1002 for `name`, a path that is (or resolves into, at `real`) version-control data.
pub fn vcs_refused(name: &str, vcs: &str, real: Option<&Path>) -> Diagnostic {
    let why = match real {
        Some(r) => format!(
            "it resolves to {}, inside {vcs}: version-control data is never an input",
            r.display()
        ),
        None => format!("it is inside {vcs}: version-control data is never an input"),
    };
    Diagnostic::error(
        codes::PATH_ESCAPE,
        format!("refusing to read {name}: {why}"),
    )
    .in_file(name)
    .with_hint(format!(
        "name files of the working tree; {} are never read, and a link into one is refused",
        VCS_DIRS.join(", ")
    ))
}

/// A directory that file access may not leave.
#[derive(Debug, Clone)]
pub struct Root {
    /// Canonical absolute path of the root.
    canonical: PathBuf,
    /// The path as the user gave it, used to name files in diagnostics.
    display: PathBuf,
    /// Texts read instead of the files they name (an editor's unsaved buffers), by the name
    /// diagnostics give the file.
    overlay: Option<Buffers>,
}

/// File name (as diagnostics name it) → the text read instead of the file: an editor's
/// unsaved buffers.
pub type Buffers = std::sync::Arc<BTreeMap<String, String>>;

impl Root {
    /// Open a root directory.
    pub fn new(dir: &Path) -> Result<Self, Diagnostic> {
        let canonical = fs::canonicalize(dir).map_err(|e| io_error(dir, &e))?;
        if !canonical.is_dir() {
            return Err(Diagnostic::error(codes::IO_READ, "not a directory")
                .in_file(dir.display().to_string())
                .with_hint("name a directory"));
        }
        Ok(Self {
            canonical,
            display: dir.to_path_buf(),
            overlay: None,
        })
    }

    /// Open a root directory that diagnostics call `display` (a directory found inside another
    /// root keeps the name it has there).
    pub fn named(dir: &Path, display: PathBuf) -> Result<Self, Diagnostic> {
        let mut root = Self::new(dir)?;
        root.display = display;
        Ok(root)
    }

    /// The display name of a path relative to this root.
    pub fn display_name(&self, rel: &Path) -> String {
        if rel.as_os_str().is_empty() {
            return self.display.display().to_string();
        }
        if self.display.as_os_str().is_empty() || self.display == Path::new(".") {
            rel.display().to_string()
        } else {
            self.display.join(rel).display().to_string()
        }
    }

    /// The path inside the root of a file this root named `name` ([`Root::display_name`]).
    pub fn rel_of_name(&self, name: &str) -> Option<PathBuf> {
        if self.display.as_os_str().is_empty() || self.display == Path::new(".") {
            return Some(PathBuf::from(name));
        }
        Path::new(name)
            .strip_prefix(&self.display)
            .ok()
            .map(Path::to_path_buf)
    }

    /// Resolve a relative path inside the root, refusing anything that would leave it, and
    /// anything in a version-control directory below it ([`VCS_DIRS`]), named so or reached
    /// through a symlink.
    pub fn resolve(&self, rel: &Path) -> Result<PathBuf, Diagnostic> {
        let name = self.display_name(rel);
        if let Some(v) = vcs_component(rel) {
            return Err(vcs_refused(&name, &v, None));
        }
        for c in rel.components() {
            match c {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => {
                    return Err(escape(&name, "the path contains `..`"));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(escape(&name, "the path is absolute"));
                }
            }
        }
        let joined = self.canonical.join(rel);
        let real = fs::canonicalize(&joined).map_err(|e| io_error(Path::new(&name), &e))?;
        if !real.starts_with(&self.canonical) {
            return Err(escape(
                &name,
                &format!("it resolves to {}, outside the root", real.display()),
            ));
        }
        self.outside_vcs(&name, &real)?;
        Ok(real)
    }

    /// `Err` when `real`, a canonical path inside the root, lies in a version-control directory
    /// below it (the root itself may be anywhere: the user named it).
    fn outside_vcs(&self, name: &str, real: &Path) -> Result<(), Diagnostic> {
        let below = real.strip_prefix(&self.canonical).unwrap_or(Path::new(""));
        match vcs_component(below) {
            Some(v) => Err(vcs_refused(name, &v, Some(below))),
            None => Ok(()),
        }
    }

    /// Resolve `entry`, a path written in a file of the directory `base` (relative to the root,
    /// without `..`), as a tool that joins it to that directory would: absolute paths are
    /// refused; `..` is applied lexically (as Go's `filepath.Join` does) and may not climb above
    /// the root; and what exists is resolved through its symlinks, both after and without the
    /// lexical cleaning, and must stay inside. `Ok(Some((rel, real)))`: it exists, at `rel`
    /// below the root; `Ok(None)`: nothing is there (reading it would fail, not escape).
    /// Escapes are KLN1002 naming `shown`.
    pub fn resolve_from(
        &self,
        base: &Path,
        entry: &Path,
        shown: &str,
    ) -> Result<Option<(PathBuf, PathBuf)>, Diagnostic> {
        if entry.has_root() || entry.is_absolute() {
            return Err(escape(shown, "the path is absolute"));
        }
        let mut clean = PathBuf::new();
        for c in base.components().chain(entry.components()) {
            match c {
                Component::CurDir => {}
                Component::Normal(n) => clean.push(n),
                Component::ParentDir => {
                    if !clean.pop() {
                        return Err(escape(shown, "its `..` climbs above the root"));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(escape(shown, "the path is absolute"));
                }
            }
        }
        if let Some(v) = vcs_component(&clean) {
            return Err(vcs_refused(shown, &v, None));
        }
        // Without lexical cleaning: `link/..` is the parent of the link's target.
        if let Ok(raw) = fs::canonicalize(self.canonical.join(base).join(entry)) {
            if !raw.starts_with(&self.canonical) {
                return Err(escape(
                    shown,
                    &format!("it resolves to {}, outside the root", raw.display()),
                ));
            }
            self.outside_vcs(shown, &raw)?;
        }
        match fs::canonicalize(self.canonical.join(&clean)) {
            Err(_) => Ok(None),
            Ok(real) => match real.strip_prefix(&self.canonical) {
                Ok(rel) => {
                    self.outside_vcs(shown, &real)?;
                    Ok(Some((rel.to_path_buf(), real.clone())))
                }
                Err(_) => Err(escape(
                    shown,
                    &format!("it resolves to {}, outside the root", real.display()),
                )),
            },
        }
    }

    /// This root, reading `buffers`' texts instead of the files they name.
    pub fn with_overlay(mut self, buffers: Option<Buffers>) -> Self {
        self.overlay = buffers.filter(|b| !b.is_empty());
        self
    }

    /// Read a regular file inside the root as UTF-8 text, with a size limit (a buffer of the
    /// overlay instead, once the path is known to stay inside).
    pub fn read_to_string(&self, rel: &Path, max_bytes: usize) -> Result<String, Diagnostic> {
        let real = self.resolve(rel)?;
        let name = self.display_name(rel);
        if let Some(text) = self.overlay.as_ref().and_then(|b| b.get(&name)) {
            return read_limited(text.as_bytes(), &name, max_bytes);
        }
        read_regular_file(&real, &name, max_bytes)
    }

    /// All manifest files (by [`MANIFEST_EXTENSIONS`]) under `rel`, recursively, as paths relative to
    /// the root, in sorted order. Hidden entries (starting with `.`) are skipped; symlinks are followed
    /// only when they stay inside the root, and each real directory is visited once.
    pub fn walk(&self, rel: &Path) -> Result<Vec<PathBuf>, Diagnostics> {
        Ok(self.walk_files(rel)?.into_iter().map(|f| f.rel).collect())
    }

    /// What [`Root::walk`] finds, with each file's real path, so reading it needs no second
    /// resolution: a GitOps directory may hold ten thousand files, and resolving each path again
    /// (a `readlink` per component) cost more than reading the file.
    pub fn walk_files(&self, rel: &Path) -> Result<Vec<WalkedFile>, Diagnostics> {
        let mut out = Vec::new();
        let mut diags = Diagnostics::new();
        let mut seen = BTreeSet::new();
        self.walk_into(rel, has_manifest_extension, &mut out, &mut diags, &mut seen);
        if diags.has_errors() {
            Err(diags)
        } else {
            Ok(out)
        }
    }

    /// Every file under `rel` whatever its extension, with the same rules as [`Root::walk`];
    /// problems are added to `diags` and the files that could be listed are returned.
    pub fn walk_all(&self, rel: &Path, diags: &mut Diagnostics) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        self.walk_into(rel, |_| true, &mut out, diags, &mut seen);
        out.into_iter().map(|f| f.rel).collect()
    }

    /// Read a file found by [`Root::walk_files`] as UTF-8 text, with a size limit.
    pub fn read_walked(&self, file: &WalkedFile, max_bytes: usize) -> Result<String, Diagnostic> {
        let name = self.display_name(&file.rel);
        if file.regular {
            read_opened_file(&file.real, &name, max_bytes)
        } else {
            read_regular_file(&file.real, &name, max_bytes)
        }
    }

    fn walk_into(
        &self,
        rel: &Path,
        keep: fn(&Path) -> bool,
        out: &mut Vec<WalkedFile>,
        diags: &mut Diagnostics,
        seen: &mut BTreeSet<PathBuf>,
    ) {
        self.walk_finding(rel, keep, out, diags, seen, None);
    }

    /// [`Root::walk_files`] that stops at kurel package directories: each is added to
    /// `packages` instead of being walked, and `*.local.kurel` extensions are left to the
    /// package they extend.
    pub fn walk_files_and_packages(
        &self,
        rel: &Path,
        packages: &mut Vec<FoundPackage>,
    ) -> Result<Vec<WalkedFile>, Diagnostics> {
        let mut out = Vec::new();
        let mut diags = Diagnostics::new();
        let mut seen = BTreeSet::new();
        self.walk_finding(
            rel,
            has_manifest_extension,
            &mut out,
            &mut diags,
            &mut seen,
            Some(packages),
        );
        if diags.has_errors() {
            Err(diags)
        } else {
            Ok(out)
        }
    }

    fn walk_finding(
        &self,
        rel: &Path,
        keep: fn(&Path) -> bool,
        out: &mut Vec<WalkedFile>,
        diags: &mut Diagnostics,
        seen: &mut BTreeSet<PathBuf>,
        mut packages: Option<&mut Vec<FoundPackage>>,
    ) {
        let real = match self.resolve(rel) {
            Ok(r) => r,
            Err(d) => return diags.push(d),
        };
        if !seen.insert(real.clone()) {
            return;
        }
        let entries = match fs::read_dir(&real) {
            Ok(e) => e,
            Err(e) => return diags.push(io_error(Path::new(&self.display_name(rel)), &e)),
        };
        // Entries that are not symlinks are what they say: their real path is the (canonical)
        // directory's plus their name, and only symlinks need resolving. A GitOps directory may
        // hold thousands of files; canonicalising each one cost more than reading it.
        let mut names: Vec<_> = entries
            .filter_map(|e| e.ok())
            .map(|e| {
                let kind = e.file_type().ok().filter(|t| !t.is_symlink());
                (e.file_name(), kind)
            })
            .collect();
        // On every core: at thousands of files sorting the names is a large share of what the
        // main thread does alone. Names in a directory are unique, so an unstable sort gives the
        // same order; unlike the merge sort it needs no buffer of fresh memory.
        names.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
        // Each entry's paths made on every core too (two allocations and a symlink's
        // resolution each: at 10 000 files, as long as listing them); directories are then
        // walked in order, on this thread.
        let entries: Vec<Entry> = names
            .into_par_iter()
            .map(|(name, kind)| {
                let Some(s) = name.to_str() else {
                    return Entry::Problem(
                        Diagnostic::error(codes::NOT_UTF8, "file name is not valid UTF-8")
                            .in_file(self.display_name(&rel.join(&name)))
                            .with_hint("rename the file"),
                    );
                };
                if s.starts_with('.') {
                    return Entry::Skipped;
                }
                let child = rel.join(&name);
                let (is_dir, child_real, regular) = match kind {
                    Some(t) => (t.is_dir(), real.join(&name), t.is_file()),
                    None => match self.resolve(&child) {
                        Ok(t) => (t.is_dir(), t, false),
                        Err(d) => return Entry::Problem(d),
                    },
                };
                if is_dir {
                    Entry::Dir(child, child_real, s.ends_with(".local.kurel"))
                } else if keep(&child) {
                    Entry::File(WalkedFile {
                        rel: child,
                        real: child_real,
                        regular,
                    })
                } else {
                    Entry::Skipped
                }
            })
            .collect();
        // A `values/` directory beside a kurel package holds the package's values files.
        let values_dir = packages.is_some()
            && entries.iter().any(|e| {
                matches!(e, Entry::Dir(c, _, false) if c.file_name().is_some_and(|n| n == VALUES_DIR))
            })
            && entries
                .iter()
                .any(|e| matches!(e, Entry::Dir(_, r, false) if is_kurel_package(r)));
        let mut values_beside = Vec::new();
        let mut found_here = Vec::new();
        for entry in entries {
            match entry {
                Entry::Skipped => {}
                Entry::Problem(d) => diags.push(d),
                Entry::File(f) => out.push(f),
                Entry::Dir(child, child_real, extension) => {
                    if let Some(found) = packages.as_deref_mut() {
                        if extension {
                            continue;
                        }
                        if values_dir && child.file_name().is_some_and(|n| n == VALUES_DIR) {
                            let mut files = Vec::new();
                            self.walk_finding(&child, keep, &mut files, diags, seen, None);
                            values_beside.extend(files.iter().map(|f| self.display_name(&f.rel)));
                            continue;
                        }
                        if is_kurel_package(&child_real) {
                            found_here.push(found.len());
                            found.push(FoundPackage {
                                path: child_real,
                                name: self.display_name(&child),
                                values_beside: Vec::new(),
                            });
                            continue;
                        }
                    }
                    self.walk_finding(&child, keep, out, diags, seen, packages.as_deref_mut());
                }
            }
        }
        if let Some(found) = packages {
            for i in found_here {
                found[i].values_beside = values_beside.clone();
            }
        }
    }
}

/// One directory entry, as a walk ([`Root::walk_files`]) takes it.
enum Entry {
    /// Hidden, or a file the walk does not keep.
    Skipped,
    /// A name that is not UTF-8, or a symlink that cannot be followed.
    Problem(Diagnostic),
    /// A file the walk keeps.
    File(WalkedFile),
    /// A directory: its path relative to the root, its real path, and whether its name is a
    /// kurel package's local extension (`*.local.kurel`).
    Dir(PathBuf, PathBuf, bool),
}

/// A file found by [`Root::walk_files`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WalkedFile {
    /// Its path relative to the root (what diagnostics name).
    pub rel: PathBuf,
    /// Its real path, inside the root.
    pub real: PathBuf,
    /// The directory listing said it is a regular file (not a symlink): it can be opened without
    /// first checking that opening cannot block, as a fifo's would.
    regular: bool,
}

fn has_manifest_extension(p: &Path) -> bool {
    p.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| MANIFEST_EXTENSIONS.contains(&e))
}

fn escape(name: &str, why: &str) -> Diagnostic {
    let name = path_shown(name);
    Diagnostic::error(
        codes::PATH_ESCAPE,
        format!("refusing to read {name}: {why}"),
    )
    .in_file(name)
    .with_hint("inputs must stay inside the directory they were given under")
}

fn io_error(path: &Path, e: &std::io::Error) -> Diagnostic {
    let hint = match e.kind() {
        std::io::ErrorKind::NotFound => "check the path: it does not exist",
        std::io::ErrorKind::PermissionDenied => "check the file's permissions",
        _ => "check that the path is a readable file or directory (not a symlink loop or a device)",
    };
    let name = path_shown(&path.display().to_string());
    Diagnostic::error(codes::IO_READ, format!("cannot read {name}: {e}"))
        .in_file(name)
        .with_hint(hint)
}

/// Read a file the directory listing called regular: open it first and check what was opened
/// (one path lookup instead of two), as UTF-8, refusing files over `max_bytes`.
fn read_opened_file(real: &Path, name: &str, max_bytes: usize) -> Result<String, Diagnostic> {
    let file = fs::File::open(real).map_err(|e| io_error(Path::new(name), &e))?;
    let meta = file.metadata().map_err(|e| io_error(Path::new(name), &e))?;
    if !meta.is_file() {
        return Err(not_a_file(name));
    }
    if meta.len() > max_bytes as u64 {
        return Err(too_big(name, meta.len() as usize, max_bytes));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(Path::new(name), &e))?;
    if bytes.len() > max_bytes {
        return Err(too_big(name, bytes.len(), max_bytes));
    }
    into_utf8(name, bytes)
}

fn not_a_file(name: &str) -> Diagnostic {
    Diagnostic::error(codes::NOT_A_FILE, format!("{name} is not a regular file"))
        .in_file(name)
        .with_hint("devices, sockets and pipes are not read as inputs")
}

/// Read a file that must be a regular file, as UTF-8, refusing files over `max_bytes`.
fn read_regular_file(real: &Path, name: &str, max_bytes: usize) -> Result<String, Diagnostic> {
    let meta = fs::metadata(real).map_err(|e| io_error(Path::new(name), &e))?;
    if !meta.is_file() {
        return Err(not_a_file(name));
    }
    if meta.len() > max_bytes as u64 {
        return Err(too_big(name, meta.len() as usize, max_bytes));
    }
    // Known to be a regular file now, so opening it cannot block.
    read_opened_file(real, name, max_bytes)
}

/// Read a file the user named: a regular file, or a fifo such as the `/dev/fd/63` of
/// `kiln render <(helm template …)`, which is read to its end (within `max_bytes`). Devices and
/// sockets are still refused: `/dev/zero` would only end at the limit.
fn read_user_file(path: &Path, name: &str, max_bytes: usize) -> Result<String, Diagnostic> {
    let meta = fs::metadata(path).map_err(|e| io_error(Path::new(name), &e))?;
    if meta.is_file() {
        return read_regular_file(path, name, max_bytes);
    }
    if !is_fifo(&meta) {
        return Err(
            Diagnostic::error(codes::NOT_A_FILE, format!("{name} is not a regular file"))
                .in_file(name)
                .with_hint("devices and sockets are not read as inputs; files and pipes are"),
        );
    }
    let file = fs::File::open(path).map_err(|e| io_error(Path::new(name), &e))?;
    let mut bytes = Vec::new();
    file.take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(Path::new(name), &e))?;
    if bytes.len() > max_bytes {
        return Err(too_big(name, bytes.len(), max_bytes));
    }
    into_utf8(name, bytes)
}

#[cfg(unix)]
fn is_fifo(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_fifo()
}

#[cfg(not(unix))]
fn is_fifo(_meta: &fs::Metadata) -> bool {
    false
}

/// Read everything `reader` gives, up to `max_bytes`: one byte more is the `input-bytes` limit
/// (KLN1005), never an allocation of whatever a pipe sends; the text must be UTF-8 (KLN1003).
/// What every door reads from a stream (stdin, a file it opened itself) goes through this.
pub fn read_limited(reader: impl Read, name: &str, max_bytes: usize) -> Result<String, Diagnostic> {
    read_limited_sized(reader, name, max_bytes, 0)
}

/// [`read_limited`] into a buffer made for `size_hint` bytes (what `fstat` says of a file on
/// stdin, say): a large input is then read in place instead of into a buffer that doubles,
/// copying what it holds each time.
pub fn read_limited_sized(
    reader: impl Read,
    name: &str,
    max_bytes: usize,
    size_hint: usize,
) -> Result<String, Diagnostic> {
    // One byte more than the file, so that reading it to its end needs no growing.
    let mut bytes = Vec::with_capacity(size_hint.min(max_bytes).saturating_add(1));
    reader
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(Path::new(name), &e))?;
    if bytes.len() > max_bytes {
        return Err(too_big(name, bytes.len(), max_bytes));
    }
    into_utf8(name, bytes)
}

fn too_big(name: &str, len: usize, max: usize) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!("{name} is {len} bytes or more, over the limit of {max} bytes"),
    )
    .in_file(name)
    .with_hint(crate::limits::Limit::InputBytes.hint("split the input"))
}

fn into_utf8(name: &str, bytes: Vec<u8>) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|e| {
        let upto = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = upto.iter().filter(|&&b| b == b'\n').count() + 1;
        Diagnostic::error(codes::NOT_UTF8, "the file is not valid UTF-8")
            .in_file(name)
            .at_line(line, None)
            .with_hint("save the file as UTF-8")
    })
}

/// What the user asked to read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input {
    /// A file or a directory (walked recursively).
    Path(PathBuf),
    /// Standard input, given as `-`.
    Stdin,
    /// A file's text already in memory (a KRM item, a door's generated input): `name` is what
    /// diagnostics call it.
    Text {
        /// The display name, e.g. the path the item came from.
        name: String,
        /// The YAML or JSON text.
        text: String,
    },
    /// One document the caller has already read with kiln's reader
    /// ([`crate::document::parse_file`]): its value is taken as it is (a door that parsed its
    /// protocol's items need not have them parsed twice), its text kept for snippets.
    Parsed {
        /// The display name.
        name: String,
        /// The document's text.
        text: String,
        /// What the text parses to: an object.
        value: serde_json::Value,
    },
}

impl Input {
    /// `-` is stdin, anything else a path.
    pub fn from_arg(s: &str) -> Self {
        if s == "-" {
            Input::Stdin
        } else {
            Input::Path(PathBuf::from(s))
        }
    }
}

/// Everything read from the inputs: the documents, the text of every file read (for snippets in
/// diagnostics, even when a file did not parse), and the problems found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Parsed documents, in order.
    pub documents: Vec<Document>,
    /// Every file read, by display name.
    pub files: Vec<Arc<SourceFile>>,
    /// Problems; if any is an error, `documents` must not be used.
    pub diagnostics: Diagnostics,
    /// kurel packages found: an input that is a package directory, or a package directory met
    /// in a walk (its files are not read as documents), in input and then sorted path order.
    pub packages: Vec<FoundPackage>,
}

/// Whether `path` is a kurel package (the walk stops there: the directory is a unit of its own,
/// loaded by the kurel front-end): a directory named `*.kurel` (not `*.local.kurel`), or one
/// holding a `parameters.yaml` with a top-level `kurel:` key, or a prototype-style `kurel.yaml`
/// next to `parameters.yaml`.
pub fn is_kurel_package(path: &Path) -> bool {
    let Ok(meta) = fs::metadata(path) else {
        return false;
    };
    if !meta.is_dir() {
        return false;
    }
    let name = fs::canonicalize(path)
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().to_string()))
        .unwrap_or_default();
    if name.ends_with(".local.kurel") {
        return false;
    }
    if name.ends_with(".kurel") {
        return true;
    }
    let Ok(root) = Root::new(path) else {
        return false;
    };
    let max = YamlLimits::default().max_input_bytes;
    if let Ok(text) = root.read_to_string(Path::new("parameters.yaml"), max) {
        // A cheap line check: a full parse happens on load.
        if text.lines().any(|l| l.starts_with("kurel:")) {
            return true;
        }
        return root.resolve(Path::new("kurel.yaml")).is_ok();
    }
    false
}

/// A kurel package directory found among the inputs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundPackage {
    /// The path to load it from (as given, or inside the walked directory).
    pub path: PathBuf,
    /// What diagnostics and output call it.
    pub name: String,
    /// Values files beside it (`values/*.yaml` in the directory that holds the package), by
    /// display name: never manifests, used when named (`--values`).
    pub values_beside: Vec<String>,
}

/// The directory beside a kurel package that holds its values files (`values/prod.yaml`): a
/// walk does not read it as manifests.
pub const VALUES_DIR: &str = "values";

/// How the paths of a run are read. The rule of kiln's trust boundary, in one place:
///
/// - paths the person running kiln names on the command line are theirs: read as given
///   (absolute, `..`, `-`, a fifo from `<(…)` all work) — [`Access::AsGiven`];
/// - paths that come from a door's untrusted configuration (an Argo CD parameter, a KRM
///   functionConfig, a Flux Kustomization's `spec.path`) stay inside the root the door defines —
///   [`Access::Within`], which refuses `..`, absolute paths, symlinks out and devices.
///
/// Paths found inside inputs (a kurel package's own files, its local extension) are always read
/// through a [`Root`] of their own, whatever the access of the run.
#[derive(Debug, Clone)]
pub enum Access {
    /// The user's own paths.
    AsGiven,
    /// Confined to this root.
    Within(Root),
}

impl Access {
    /// Confined to `dir` (which must exist).
    pub fn within(dir: &Path) -> Result<Self, Diagnostic> {
        Ok(Access::Within(Root::new(dir)?))
    }

    /// What diagnostics call `path`.
    pub fn display_name(&self, path: &Path) -> String {
        match self {
            Access::AsGiven => path.display().to_string(),
            Access::Within(root) => root.display_name(path),
        }
    }

    /// The real path of `path`: as given, or resolved inside the root.
    pub fn resolve(&self, path: &Path) -> Result<PathBuf, Diagnostic> {
        match self {
            Access::AsGiven => Ok(path.to_path_buf()),
            Access::Within(root) => root.resolve(path),
        }
    }

    /// Read a file as UTF-8 text within `max_bytes`: as given, a regular file or a fifo (process
    /// substitution); within a root, a regular file only.
    pub fn read_to_string(&self, path: &Path, max_bytes: usize) -> Result<String, Diagnostic> {
        match self {
            Access::AsGiven => read_user_file(path, &path.display().to_string(), max_bytes),
            Access::Within(root) => root.read_to_string(path, max_bytes),
        }
    }

    /// The real path of the file a run with this access named `name` (its display name), when
    /// it exists.
    pub fn real_of_name(&self, name: &str) -> Option<PathBuf> {
        match self {
            Access::AsGiven => fs::canonicalize(name).ok(),
            Access::Within(root) => root
                .rel_of_name(name)
                .and_then(|rel| root.resolve(&rel).ok()),
        }
    }

    /// Whether `path` names a directory (false when it cannot be resolved).
    pub fn is_dir(&self, path: &Path) -> bool {
        self.resolve(path).is_ok_and(|p| p.is_dir())
    }
}

/// Read and parse every input into documents, in argument order and, within a directory, in sorted
/// path order. Every problem is reported; documents come back only if there were none.
pub fn load_inputs(inputs: &[Input], limits: &YamlLimits) -> Result<Vec<Document>, Diagnostics> {
    let loaded = load_inputs_with_files(inputs, limits);
    if loaded.diagnostics.has_errors() {
        Err(loaded.diagnostics)
    } else {
        Ok(loaded.documents)
    }
}

/// Like [`load_inputs`], also returning the file texts. Paths are the user's own
/// ([`Access::AsGiven`]) and kurel packages are not looked for.
pub fn load_inputs_with_files(inputs: &[Input], limits: &YamlLimits) -> Loaded {
    load_inputs_in(inputs, &Access::AsGiven, limits, false)
}

/// Read and parse inputs whose paths are read with `access`. With `find_packages`, an input
/// that is a kurel package directory, and every package directory a walk meets, is listed in
/// [`Loaded::packages`] instead of being read as documents.
pub fn load_inputs_in(
    inputs: &[Input],
    access: &Access,
    limits: &YamlLimits,
    find_packages: bool,
) -> Loaded {
    load_owned_inputs_in(inputs.to_vec(), access, limits, find_packages)
}

/// [`load_inputs_in`] of inputs the caller gives up: texts and parsed values are moved into the
/// documents, not copied.
pub fn load_owned_inputs_in(
    inputs: Vec<Input>,
    access: &Access,
    limits: &YamlLimits,
    find_packages: bool,
) -> Loaded {
    load_owned_inputs_reusing(
        inputs,
        access,
        limits,
        find_packages,
        None,
        &BTreeMap::new(),
    )
}

/// The documents of a file already parsed elsewhere (the other side of a diff), by the file's
/// name and text: handed out (once) instead of parsing the file again. A file's documents are
/// a function of its name, its text and the limits, so a file of the same name and text gives
/// the same documents; the caller keeps only files that parsed without a warning and hold no
/// list (whose items a load expands).
pub(crate) type Parsed<'a> = dyn Fn(&str, &str) -> Option<Vec<Document>> + Sync + 'a;

/// [`load_owned_inputs_in`], taking the documents of files `parsed` holds instead of parsing
/// them, and the text of files `buffers` names from there instead of from disk.
pub(crate) fn load_owned_inputs_reusing(
    inputs: Vec<Input>,
    access: &Access,
    limits: &YamlLimits,
    find_packages: bool,
    parsed: Option<&Parsed<'_>>,
    buffers: &BTreeMap<String, String>,
) -> Loaded {
    let mut texts: Vec<(String, String)> = Vec::new();
    // Values already parsed, by their position in `texts`.
    let mut parsed_values: Vec<Option<serde_json::Value>> = Vec::new();
    let mut diags = Diagnostics::new();
    let mut packages = Vec::new();
    for input in inputs {
        let input = match input {
            Input::Parsed { name, text, value } => {
                parsed_values.resize(texts.len(), None);
                parsed_values.push(Some(value));
                texts.push((name, text));
                continue;
            }
            other => other,
        };
        let input = &input;
        match input {
            Input::Parsed { .. } => unreachable!("handled above"),
            Input::Text { name, text } => texts.push((name.clone(), text.clone())),
            Input::Stdin => {
                match read_limited(std::io::stdin(), "<stdin>", limits.max_input_bytes) {
                    Ok(t) => texts.push(("<stdin>".into(), t)),
                    Err(d) => diags.push(d),
                }
            }
            Input::Path(p) => match access.resolve(p).and_then(|real| {
                fs::metadata(&real)
                    .map(|m| (real, m))
                    .map_err(|e| io_error(Path::new(&access.display_name(p)), &e))
            }) {
                Err(d) => diags.push(d),
                Ok((real, m)) if m.is_dir() => {
                    let display = PathBuf::from(access.display_name(p));
                    if find_packages && is_kurel_package(&real) {
                        packages.push(FoundPackage {
                            path: real,
                            name: display.display().to_string(),
                            values_beside: Vec::new(),
                        });
                        continue;
                    }
                    // The boundary of a walk: the root of a confined run (a symlink to another
                    // directory of the same checkout is followed; one that leaves it is not), or
                    // the directory the user named.
                    let (root, start) = match access {
                        Access::Within(root) => (root.clone(), p.as_path()),
                        Access::AsGiven => match Root::named(&real, display) {
                            Ok(r) => (r, Path::new("")),
                            Err(d) => {
                                diags.push(d);
                                continue;
                            }
                        },
                    };
                    let walked = if find_packages {
                        root.walk_files_and_packages(start, &mut packages)
                    } else {
                        root.walk_files(start)
                    };
                    match walked {
                        Err(ds) => diags.extend(ds),
                        Ok(files) => {
                            // A GitOps directory may hold thousands of small files: read them on
                            // every core, keeping the sorted order.
                            let read: Vec<_> = files
                                .par_iter()
                                .with_max_len(crate::process::PIECE)
                                .map(|f| {
                                    let name = root.display_name(&f.rel);
                                    match buffers.get(&name) {
                                        Some(t) => read_limited(
                                            t.as_bytes(),
                                            &name,
                                            limits.max_input_bytes,
                                        )
                                        .map(|t| (name, t)),
                                        None => root
                                            .read_walked(f, limits.max_input_bytes)
                                            .map(|t| (name, t)),
                                    }
                                })
                                .collect();
                            for r in read {
                                match r {
                                    Ok(nt) => texts.push(nt),
                                    Err(d) => diags.push(d),
                                }
                            }
                        }
                    }
                }
                Ok(_) => {
                    let name = access.display_name(p);
                    if let Some(t) = buffers.get(&name) {
                        match read_limited(t.as_bytes(), &name, limits.max_input_bytes) {
                            Ok(t) => texts.push((name, t)),
                            Err(d) => diags.push(d),
                        }
                        continue;
                    }
                    match access.read_to_string(p, limits.max_input_bytes) {
                        Ok(t) => texts.push((name, t)),
                        Err(d) => diags.push(d),
                    }
                }
            },
        }
    }
    let mut docs = Vec::new();
    let mut files = Vec::new();
    let mut total = 0usize;
    // Parse on every core; results are merged in input order.
    parsed_values.resize(texts.len(), None);
    let parsed: Vec<_> = texts
        .into_par_iter()
        .zip(parsed_values)
        .with_max_len(crate::process::PIECE)
        .map(|((name, text), value)| {
            let file = Arc::new(SourceFile { name, text });
            let res = match value {
                Some(value) => Ok((
                    vec![Document {
                        source: file.clone(),
                        index: 0,
                        item: None,
                        value,
                    }],
                    Vec::new(),
                )),
                None => match parsed.and_then(|f| f(&file.name, &file.text)) {
                    Some(mut docs) => {
                        for d in &mut docs {
                            d.source = file.clone();
                        }
                        Ok((docs, Vec::new()))
                    }
                    None => parse_source_with_warnings(&file, limits),
                },
            };
            // A list's items are expanded here, on the worker that parsed it; the limit on
            // documents counts the documents as written.
            let res = res.map(|(docs, warnings)| {
                (
                    docs.len(),
                    crate::document::expand_lists_here(docs),
                    warnings,
                )
            });
            (file, res)
        })
        .collect();
    // Sized once: grown by doubling, the list of 10 000 documents was copied and faulted in
    // again at every step, on the main thread alone.
    docs.reserve(
        parsed
            .iter()
            .map(|(_, r)| r.as_ref().map_or(0, |(_, d, _)| d.len()))
            .sum(),
    );
    files.reserve(parsed.len());
    for (file, res) in parsed {
        match res {
            Ok((written, d, warnings)) => {
                total += written;
                docs.extend(d);
                diags.extend(warnings);
            }
            Err(d) => diags.push(d),
        }
        files.push(file);
    }
    if total > limits.max_documents {
        diags.push(
            Diagnostic::error(
                codes::YAML_BUDGET,
                format!(
                    "{total} documents in all inputs, more than the limit of {}",
                    limits.max_documents
                ),
            )
            .with_hint(crate::limits::Limit::Documents.hint("render fewer inputs at once")),
        );
    }
    Loaded {
        documents: docs,
        files,
        diagnostics: diags,
        packages,
    }
}

/// The files of a tree that is not on disk, such as a committed revision of a repository: what
/// `kiln diff` renders for the base side. Paths are relative to the tree's top and may not leave
/// it; symlinks keep their target as written in the tree.
///
/// A snapshot is rendered by [`Snapshot::materialize`]: its files are written into a private
/// temporary directory (mode 0700, removed when the [`Materialized`] is dropped) and every path of
/// the run is then read through a [`Root`] at that directory, with the rules of any confined run:
/// `..`, absolute paths and symlinks whose target leaves the tree are refused (KLN1002). A path
/// from inside a revision never leaves it. Every input kind (manifests, kro, component types,
/// kurel packages with their local extensions, values files, instance directories, CRDs) reads a
/// revision exactly as it reads a working tree.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    entries: Vec<(PathBuf, SnapshotEntry)>,
}

/// One entry of a [`Snapshot`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotEntry {
    /// A file's bytes.
    File(Vec<u8>),
    /// A file known only by its size (larger than the run reads): written as a sparse file of
    /// that size, so that reading it fails on the size limit, as the real file would.
    Oversized(u64),
    /// A symbolic link and its target, as stored.
    Symlink(PathBuf),
}

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Add an entry at `rel`, a path relative to the tree's top. A path that is absolute or
    /// holds `..` is refused (KLN1002): it names nothing inside the tree.
    pub fn add(&mut self, rel: &Path, entry: SnapshotEntry) -> Result<(), Diagnostic> {
        let name = rel.display().to_string();
        if rel.as_os_str().is_empty() {
            return Err(escape(&name, "the path is empty"));
        }
        for c in rel.components() {
            match c {
                Component::Normal(_) | Component::CurDir => {}
                Component::ParentDir => return Err(escape(&name, "the path contains `..`")),
                Component::RootDir | Component::Prefix(_) => {
                    return Err(escape(&name, "the path is absolute"))
                }
            }
        }
        if let Some(v) = vcs_component(rel) {
            return Err(vcs_refused(&name, &v, None));
        }
        self.entries.push((rel.to_path_buf(), entry));
        Ok(())
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// The entries, in the order they were added.
    pub fn entries(&self) -> &[(PathBuf, SnapshotEntry)] {
        &self.entries
    }

    /// No entries.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The request's inputs read straight from the snapshot, as in-memory texts, when nothing
    /// in them needs files on disk: every input is a path of the snapshot, and what they hold
    /// (walked as [`Root::walk`] walks: hidden entries skipped, manifest extensions, sorted by
    /// name) is regular UTF-8 files within `max_bytes`, with no symlink and nothing that may be
    /// a kurel package (a `*.kurel` directory or a `parameters.yaml`). `None` otherwise: the
    /// snapshot is then rendered from disk ([`Snapshot::materialize`]), which applies every
    /// rule. Files are named by their path in the tree, as a materialized snapshot names them.
    pub fn as_texts(&self, inputs: &[Input], max_bytes: usize) -> Option<Vec<Input>> {
        let mut out = Vec::new();
        for input in inputs {
            let Input::Path(p) = input else {
                return None;
            };
            let base = normal(p)?;
            // The entries at or under `base`, in the walk's order.
            let mut found: Vec<(&Path, &SnapshotEntry)> = self
                .entries
                .iter()
                .filter(|(rel, _)| base.as_os_str().is_empty() || rel.starts_with(&base))
                .map(|(rel, e)| (rel.as_path(), e))
                .collect();
            if found.is_empty() {
                return None;
            }
            // Sorted as a walk visits them: each directory's entries by name.
            found.sort_by(|a, b| a.0.components().cmp(b.0.components()));
            let named_file = found.len() == 1 && found[0].0 == base;
            for (rel, entry) in found {
                let SnapshotEntry::File(bytes) = entry else {
                    return None;
                };
                let under = rel.strip_prefix(&base).unwrap_or(rel);
                let package = rel.iter().any(|c| {
                    c.to_str()
                        .is_none_or(|c| c.ends_with(".kurel") || c == "parameters.yaml")
                });
                if package || bytes.len() > max_bytes {
                    return None;
                }
                if !named_file {
                    let hidden = under
                        .iter()
                        .any(|c| c.to_str().is_none_or(|c| c.starts_with('.')));
                    if hidden || !has_manifest_extension(rel) {
                        continue;
                    }
                }
                let text = String::from_utf8(bytes.clone()).ok()?;
                // Named as a walk from the path as given names them.
                let name = if under.as_os_str().is_empty() {
                    p.display().to_string()
                } else {
                    p.join(under).display().to_string()
                };
                out.push(Input::Text { name, text });
            }
        }
        Some(out)
    }

    /// Write the snapshot into a new private temporary directory.
    pub fn materialize(&self) -> Result<Materialized, Diagnostic> {
        let fail = |what: &str, p: &Path, e: std::io::Error| {
            Diagnostic::error(
                codes::IO_READ,
                format!("cannot {what} {} in a temporary directory: {e}", p.display()),
            )
            .with_hint("the revision's files are written into the system's temporary directory (TMPDIR) to be rendered: check that it is writable and has room")
        };
        let mut builder = tempfile::Builder::new();
        builder.prefix("kiln-rev-");
        // Creating ten thousand files on a disk-backed file system costs seconds of system
        // time; in memory, a tenth of that. Unless TMPDIR says where, a writable /dev/shm is
        // used.
        let shm = Path::new("/dev/shm");
        let dir = match std::env::var_os("TMPDIR") {
            None if shm.is_dir() => builder.tempdir_in(shm).or_else(|_| builder.tempdir()),
            _ => builder.tempdir(),
        }
        .map_err(|e| fail("create", Path::new("kiln-rev-*"), e))?;
        let top = fs::canonicalize(dir.path()).map_err(|e| fail("open", dir.path(), e))?;
        let dirs: BTreeSet<&Path> = self
            .entries
            .iter()
            .filter_map(|(rel, _)| rel.parent())
            .collect();
        for d in dirs {
            fs::create_dir_all(top.join(d)).map_err(|e| fail("create", d, e))?;
        }
        self.entries.par_iter().try_for_each(|(rel, entry)| {
            let path = top.join(rel);
            match entry {
                SnapshotEntry::File(bytes) => {
                    fs::write(&path, bytes).map_err(|e| fail("write", rel, e))?
                }
                SnapshotEntry::Oversized(len) => fs::File::create(&path)
                    .and_then(|f| f.set_len(*len))
                    .map_err(|e| fail("write", rel, e))?,
                SnapshotEntry::Symlink(target) => {
                    #[cfg(unix)]
                    std::os::unix::fs::symlink(target, &path).map_err(|e| fail("link", rel, e))?;
                    #[cfg(not(unix))]
                    {
                        let _ = target;
                        return Err(Diagnostic::error(
                            codes::NOT_A_FILE,
                            format!("{} is a symbolic link, which kiln reads from a revision only on Unix", rel.display()),
                        )
                        .in_file(rel.display().to_string()));
                    }
                }
            }
            Ok(())
        })?;
        // A revision holds no version-control data, so a link into `.git` would only dangle
        // there, and reading it fail as a missing file. An empty stand-in at its target makes
        // the root refuse it by what it is (KLN1002), as the working tree's link is refused.
        let mut stand_ins: Vec<PathBuf> = self
            .entries
            .iter()
            .filter_map(|(rel, entry)| match entry {
                SnapshotEntry::Symlink(target) => {
                    normal_within(&rel.parent().unwrap_or(Path::new("")).join(target))
                }
                _ => None,
            })
            .filter(|t| vcs_component(t).is_some())
            .collect();
        // Deepest first: `.git/config` makes `.git` a directory before a link to `.git` asks.
        stand_ins.sort_by_key(|t| std::cmp::Reverse(t.components().count()));
        for t in stand_ins {
            let path = top.join(&t);
            if fs::symlink_metadata(&path).is_ok() {
                continue;
            }
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent).map_err(|e| fail("create", &t, e))?;
            }
            fs::write(&path, b"").map_err(|e| fail("write", &t, e))?;
        }
        let root = Root::named(&top, PathBuf::new())?;
        Ok(Materialized {
            _dir: dir,
            top,
            root,
        })
    }
}

/// `p` with `.` and `..` applied lexically; `None` when it is absolute or climbs above its top.
fn normal_within(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            _ => return None,
        }
    }
    Some(out)
}

/// `p` without `.` components; `None` when it holds `..` or is absolute.
fn normal(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    Some(out)
}

/// A [`Snapshot`] written to disk; the directory is removed when this is dropped.
#[derive(Debug)]
pub struct Materialized {
    _dir: tempfile::TempDir,
    top: PathBuf,
    root: Root,
}

impl Materialized {
    /// The root every path of the run is read under; it names files by their path in the tree
    /// (`apps/web.yaml`), as a run confined to the tree's top on disk would.
    pub fn root(&self) -> &Root {
        &self.root
    }

    /// The directory the files were written to.
    pub fn path(&self) -> &Path {
        &self.top
    }

    /// `name` with the temporary directory taken off its front: what a file that a front-end
    /// named by its real path (a kurel package's files) is called in the tree.
    pub fn tree_name(&self, name: &str) -> String {
        let top = self.top.display().to_string();
        match name.strip_prefix(&top) {
            Some("") => ".".to_string(),
            Some(rest) if rest.starts_with('/') => rest[1..].to_string(),
            _ => name.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A size hint changes where the input is read into, never what is read or refused: too
    /// small, exact or too large, the text is the input's, and the limit still holds.
    #[test]
    fn size_hints_do_not_change_what_is_read() {
        let text = "a: 1\n".repeat(1000);
        for hint in [0, 10, text.len(), text.len() + 1, 1 << 20] {
            let got = read_limited_sized(text.as_bytes(), "in", 1 << 16, hint).unwrap();
            assert_eq!(got, text, "hint {hint}");
            let refused = read_limited_sized(text.as_bytes(), "in", 100, hint).unwrap_err();
            assert_eq!(refused.code, codes::YAML_BUDGET, "hint {hint}");
        }
    }

    fn tmp() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "kiln-source-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn walk_is_sorted_recursive_and_filtered() {
        let d = tmp();
        fs::create_dir_all(d.join("b/c")).unwrap();
        fs::create_dir_all(d.join(".git")).unwrap();
        for f in [
            "b/c/z.yaml",
            "b/a.yml",
            "a.json",
            "readme.md",
            ".git/x.yaml",
            "c.yaml",
        ] {
            fs::write(d.join(f), "a: 1\n").unwrap();
        }
        let root = Root::new(&d).unwrap();
        let files = root.walk(Path::new("")).unwrap();
        let names: Vec<_> = files.iter().map(|p| p.display().to_string()).collect();
        assert_eq!(names, ["a.json", "b/a.yml", "b/c/z.yaml", "c.yaml"]);
        fs::remove_dir_all(d).unwrap();
    }

    /// The real paths the walk hands out are the canonical ones, for plain files and for symlinks
    /// inside the root, and reading through them gives the files' text.
    #[test]
    fn walked_files_carry_their_real_paths() {
        let d = tmp();
        fs::create_dir_all(d.join("root/sub")).unwrap();
        fs::write(d.join("root/a.yaml"), "a: 1\n").unwrap();
        fs::write(d.join("root/sub/b.yaml"), "b: 2\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("root/sub/b.yaml"), d.join("root/c.yaml")).unwrap();
        let root = Root::new(&d.join("root")).unwrap();
        let files = root.walk_files(Path::new("")).unwrap();
        for f in &files {
            assert_eq!(
                f.real,
                fs::canonicalize(d.join("root").join(&f.rel)).unwrap()
            );
            let text = root.read_walked(f, 1 << 20).unwrap();
            assert_eq!(
                text,
                fs::read_to_string(&f.real).unwrap(),
                "{}",
                f.rel.display()
            );
        }
        let names: Vec<_> = files.iter().map(|f| f.rel.display().to_string()).collect();
        #[cfg(unix)]
        assert_eq!(names, ["a.yaml", "c.yaml", "sub/b.yaml"]);
        assert!(
            files
                .iter()
                .find(|f| f.rel == Path::new("a.yaml"))
                .unwrap()
                .regular
        );
        #[cfg(unix)]
        assert!(
            !files
                .iter()
                .find(|f| f.rel == Path::new("c.yaml"))
                .unwrap()
                .regular
        );
        let e = root.read_walked(&files[0], 3).unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn escapes_are_refused() {
        let d = tmp();
        fs::create_dir_all(d.join("pkg")).unwrap();
        fs::write(d.join("secret.yaml"), "a: 1\n").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("secret.yaml"), d.join("pkg/link.yaml")).unwrap();
        let root = Root::new(&d.join("pkg")).unwrap();
        let e = root.resolve(Path::new("../secret.yaml")).unwrap_err();
        assert_eq!(e.code, codes::PATH_ESCAPE);
        let e = root.resolve(Path::new("/etc/passwd")).unwrap_err();
        assert_eq!(e.code, codes::PATH_ESCAPE);
        #[cfg(unix)]
        {
            let e = root.resolve(Path::new("link.yaml")).unwrap_err();
            assert_eq!(e.code, codes::PATH_ESCAPE);
            let e = root.walk(Path::new("")).unwrap_err();
            assert_eq!(e.0[0].code, codes::PATH_ESCAPE);
        }
        fs::remove_dir_all(d).unwrap();
    }

    /// Version-control data below a root is never read (issue 39): named (in any case), reached
    /// through a symlink to a file or a directory, met in a walk or named from a file of the
    /// tree; the message names the directory, and the file's content is never in it.
    #[cfg(unix)]
    #[test]
    fn version_control_data_below_a_root_is_never_read() {
        use std::os::unix::fs::symlink;
        let d = tmp();
        for vcs in VCS_DIRS {
            fs::create_dir_all(d.join(vcs)).unwrap();
            fs::write(d.join(vcs).join("config.yaml"), "token: ghp-secret-4e1f\n").unwrap();
        }
        fs::create_dir_all(d.join("app")).unwrap();
        fs::write(d.join("app/cm.yaml"), "a: 1\n").unwrap();
        let root = Root::new(&d).unwrap();
        let refused = |e: Diagnostic, vcs: &str| {
            assert_eq!(e.code, codes::PATH_ESCAPE, "{e}");
            assert!(e.message.contains(vcs), "{e}");
            assert!(!e.to_string().contains("ghp-secret"), "{e}");
        };
        for vcs in VCS_DIRS {
            refused(
                root.resolve(&Path::new(vcs).join("config.yaml"))
                    .unwrap_err(),
                vcs,
            );
            refused(root.resolve(Path::new(vcs)).unwrap_err(), vcs);
        }
        refused(
            root.resolve(Path::new("app/.GIT/x.yaml")).unwrap_err(),
            ".GIT",
        );
        symlink("../.git/config.yaml", d.join("app/link.yaml")).unwrap();
        refused(
            root.resolve(Path::new("app/link.yaml")).unwrap_err(),
            ".git",
        );
        refused(root.walk(Path::new("app")).unwrap_err().0.remove(0), ".git");
        fs::remove_file(d.join("app/link.yaml")).unwrap();
        symlink("../.hg", d.join("app/dir")).unwrap();
        refused(root.walk(Path::new("app")).unwrap_err().0.remove(0), ".hg");
        fs::remove_file(d.join("app/dir")).unwrap();
        // The walk of the whole root skips them (hidden), and reads the rest.
        let names = root.walk(Path::new("")).unwrap();
        assert_eq!(names, [PathBuf::from("app/cm.yaml")]);
        // A path a file of the tree names (a kustomization's resource).
        let e = root
            .resolve_from(
                Path::new("app"),
                Path::new("../.svn/config.yaml"),
                "kustomization.yaml: resources[0]",
            )
            .unwrap_err();
        refused(e, ".svn");
        symlink("../.bzr", d.join("app/bzr")).unwrap();
        let e = root
            .resolve_from(
                Path::new("app"),
                Path::new("bzr/config.yaml"),
                "kustomization.yaml: resources[0]",
            )
            .unwrap_err();
        refused(e, ".bzr");
        // Named but missing (kustomize would fail on it): refused for what it names.
        let e = root
            .resolve_from(
                Path::new("app"),
                Path::new("../.git/missing.yaml"),
                "kustomization.yaml: resources[0]",
            )
            .unwrap_err();
        refused(e, ".git");
        // `link/..` is the parent of the link's target, which the OS resolves physically.
        fs::create_dir_all(d.join(".git/hooks")).unwrap();
        symlink("../.git/hooks", d.join("app/hooks")).unwrap();
        let e = root
            .resolve_from(
                Path::new("app"),
                Path::new("hooks/../config.yaml"),
                "kustomization.yaml: resources[0]",
            )
            .unwrap_err();
        refused(e, ".git");
        // ... and cleaned lexically (as kustomize joins it) it leads through a link into one.
        fs::create_dir_all(d.join("other/deep")).unwrap();
        symlink("../other/deep", d.join("app/deep")).unwrap();
        let e = root
            .resolve_from(
                Path::new("app"),
                Path::new("deep/../bzr/config.yaml"),
                "kustomization.yaml: resources[0]",
            )
            .unwrap_err();
        refused(e, ".bzr");
        // A root that is itself inside one is the user's own choice.
        let inner = Root::new(&d.join(".git")).unwrap();
        assert!(inner.read_to_string(Path::new("config.yaml"), 100).is_ok());
        fs::remove_dir_all(d).unwrap();
    }

    /// A revision's link into `.git` is refused as the working tree's is (KLN1002 naming it),
    /// not a missing file: a revision holds no version-control data to read, and an entry in
    /// one is refused outright.
    #[cfg(unix)]
    #[test]
    fn a_revision_s_link_into_version_control_data_is_refused() {
        let mut s = Snapshot::new();
        let e = s
            .add(
                Path::new("app/.git/config"),
                SnapshotEntry::File(Vec::new()),
            )
            .unwrap_err();
        assert_eq!(e.code, codes::PATH_ESCAPE);
        s.add(
            Path::new("app/cm.yaml"),
            SnapshotEntry::File(b"a: 1\n".to_vec()),
        )
        .unwrap();
        s.add(
            Path::new("app/link.yaml"),
            SnapshotEntry::Symlink("../.git/config".into()),
        )
        .unwrap();
        s.add(
            Path::new("app/dir"),
            SnapshotEntry::Symlink("../.git".into()),
        )
        .unwrap();
        let m = s.materialize().unwrap();
        for link in ["app/link.yaml", "app/dir"] {
            let e = m.root().resolve(Path::new(link)).unwrap_err();
            assert_eq!(e.code, codes::PATH_ESCAPE, "{link}: {e}");
            assert!(e.message.contains(".git"), "{e}");
        }
        assert!(m
            .root()
            .read_to_string(Path::new("app/cm.yaml"), 100)
            .is_ok());
    }

    /// A snapshot's paths stay inside it, and so do its symlinks once written: the rules of a
    /// confined run.
    #[test]
    fn snapshots_keep_their_paths_and_symlinks_inside() {
        let mut s = Snapshot::new();
        for bad in ["../x.yaml", "/etc/passwd", "a/../../x.yaml", ""] {
            let e = s
                .add(Path::new(bad), SnapshotEntry::File(Vec::new()))
                .unwrap_err();
            assert_eq!(e.code, codes::PATH_ESCAPE, "{bad}");
        }
        s.add(
            Path::new("apps/cm.yaml"),
            SnapshotEntry::File(b"a: 1\n".to_vec()),
        )
        .unwrap();
        s.add(
            Path::new("apps/big.yaml"),
            SnapshotEntry::Oversized(1 << 30),
        )
        .unwrap();
        #[cfg(unix)]
        {
            s.add(
                Path::new("apps/in.yaml"),
                SnapshotEntry::Symlink("cm.yaml".into()),
            )
            .unwrap();
            s.add(
                Path::new("apps/up.yaml"),
                SnapshotEntry::Symlink("../../../../../../etc/hostname".into()),
            )
            .unwrap();
            s.add(
                Path::new("apps/abs.yaml"),
                SnapshotEntry::Symlink("/etc/hostname".into()),
            )
            .unwrap();
        }
        let m = s.materialize().unwrap();
        let dir = m.path().to_path_buf();
        let root = m.root();
        assert_eq!(root.display_name(Path::new("apps/cm.yaml")), "apps/cm.yaml");
        assert_eq!(
            root.read_to_string(Path::new("apps/cm.yaml"), 100).unwrap(),
            "a: 1\n"
        );
        let e = root
            .read_to_string(Path::new("apps/big.yaml"), 100)
            .unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET);
        #[cfg(unix)]
        {
            assert_eq!(
                root.read_to_string(Path::new("apps/in.yaml"), 100).unwrap(),
                "a: 1\n"
            );
            for out in ["apps/up.yaml", "apps/abs.yaml"] {
                let e = root.read_to_string(Path::new(out), 100).unwrap_err();
                assert_eq!(e.code, codes::PATH_ESCAPE, "{out}");
            }
        }
        assert_eq!(
            m.tree_name(&dir.join("apps/x.yaml").display().to_string()),
            "apps/x.yaml"
        );
        assert_eq!(m.tree_name("elsewhere/x.yaml"), "elsewhere/x.yaml");
        drop(m);
        assert!(!dir.exists(), "the temporary directory is removed");
    }

    #[test]
    fn invalid_utf8_is_reported_with_its_line() {
        let d = tmp();
        fs::write(d.join("bad.yaml"), b"a: 1\nb: \xff\n").unwrap();
        let e =
            load_inputs(&[Input::Path(d.join("bad.yaml"))], &YamlLimits::default()).unwrap_err();
        assert_eq!(e.0[0].code, codes::NOT_UTF8);
        assert_eq!(e.0[0].line, Some(2));
        fs::remove_dir_all(d).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn device_files_are_refused() {
        let e =
            load_inputs(&[Input::Path("/dev/zero".into())], &YamlLimits::default()).unwrap_err();
        assert_eq!(e.0[0].code, codes::NOT_A_FILE);
    }
}
