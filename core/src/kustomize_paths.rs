//! The paths a kustomization names, checked against a root before kustomize runs.
//!
//! A door that runs `kustomize build` (or `kubectl kustomize`) with load restrictions off, as
//! Flux's kustomize-controller does, must not let the kustomization read files outside the
//! source it was given: kustomize follows an absolute `resources:` entry, or enough `../`,
//! anywhere on the disk, and prints what it read. Flux builds on a file system confined to the
//! source root; a door running kustomize on the real disk has to check first. [`check`] does
//! that for every path kustomize v5 reads, transitively:
//!
//! | where | fields |
//! | --- | --- |
//! | a kustomization (`kustomization.yaml`, `kustomization.yml`, `Kustomization`) | `resources`, `bases`, `components` (files, or directories whose kustomization is checked in turn); `crds`, `configurations`; `patchesStrategicMerge` (a path or an inline patch); `patches[].path`, `patchesJson6902[].path`, `replacements[].path`, `openapi.path`; `configMapGenerator[]` and `secretGenerator[]` `files` (`[key=]path`), `envs`, `env`; `generators`, `transformers`, `validators` (inline configurations, files, or directories); `helmGlobals.chartHome`, `.configHome`; `helmCharts[]` `valuesFile`, `additionalValuesFiles`; `helmChartInflationGenerator[]` `chartHome`, `helmHome`, `values`, `helmBin` |
//! | a generator, transformer or validator configuration (kustomize's builtin plugins) | `path`, `paths`, `files`, `envs`, `env`, `valuesFile`, `additionalValuesFiles`, `chartHome`, `configHome`, `helmHome`, `values`, `helmBin`, `targetFilePath`, at any depth |
//!
//! Field names are matched as kustomize's decoder (Go's `encoding/json`) matches them: ignoring
//! case, with Go's case folding (`ſ` is `s`, `K` is `k`). A path is refused (KLN1002) when it is
//! absolute, when its `..` climbs above the root (applied lexically, as `filepath.Join` does), or
//! when what it names resolves, through symlinks, outside the root. A path that does not exist
//! is left to kustomize (reading it fails; nothing leaks). Remote references — Git URLs
//! (`https://`, `ssh://`, `file://`, `git::`, `user@host:`, `github.com/…`), HTTP(S) files, Helm
//! repositories — are refused (KLN1014) unless [`Options::allow_remote`]; a remote base is not
//! checked (its content is not here to check). Kustomizations are followed into every directory
//! they name, each once; a cycle, or nesting deeper than [`Options::max_depth`] or more
//! kustomizations than [`Options::max_kustomizations`], is KLN1015.
//!
//! Every file is read through the [`Root`] (`source::Access::Within`'s confinement), so the check
//! itself cannot be led outside either. Conservative where kustomize is ambiguous: a
//! `patchesStrategicMerge` entry is checked as a path even when it is an inline patch, and a
//! kustomization file that holds several documents, or repeats a key, has all of them checked.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::diag::{codes, path_shown, Diagnostic, Diagnostics};
use crate::document::{parse_source_with_warnings, SourceFile, YamlLimits};
use crate::source::Root;

/// kustomize's kustomization file names, in the order it looks for them.
pub const KUSTOMIZATION_FILES: &[&str] =
    &["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Whether a file name is one kustomize reads as its kustomization.
pub fn is_kustomization_file(rel: &str) -> bool {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    KUSTOMIZATION_FILES.contains(&base)
}

/// How far [`check`] goes.
#[derive(Debug, Clone)]
pub struct Options {
    /// Let remote bases and files through, unchecked (Flux allows them unless its controller
    /// runs with `--no-remote-bases`).
    pub allow_remote: bool,
    /// Most kustomizations on one chain of references (a base of a base …).
    pub max_depth: usize,
    /// Most kustomization directories visited in all.
    pub max_kustomizations: usize,
    /// Limits for reading the kustomization and configuration files.
    pub yaml: YamlLimits,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            allow_remote: false,
            max_depth: 100,
            max_kustomizations: 10_000,
            yaml: YamlLimits::default(),
        }
    }
}

/// Check every path the kustomization in `dir` (relative to `root`) names, transitively. The
/// result holds one error per path that leaves the root, per remote reference (unless allowed),
/// per cycle or exceeded bound; empty when kustomize may run. A directory without a
/// kustomization file has nothing to check.
pub fn check(root: &Root, dir: &Path, opts: &Options) -> Diagnostics {
    check_and_reach(root, dir, opts).0
}

/// What a kustomization reaches, transitively, as paths relative to the root (`/`-separated,
/// sorted): what a door renders before kustomize builds it, and what the tree kustomize builds
/// must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reach {
    /// Directories whose objects kustomize builds: the starting directory and every directory
    /// named as a resource, base or component (each a kustomization, or a kurel package that
    /// renders into one). kiln's inputs in them are rendered.
    pub dirs: BTreeSet<String>,
    /// Files named as resources: kiln's inputs too.
    pub resources: BTreeSet<String>,
    /// Everything else kustomize reads (patches, generator files and configurations, CRDs,
    /// generator and transformer directories): taken as they are.
    pub files: BTreeSet<String>,
}

impl Reach {
    /// Whether a file (relative to the root) is below a reached directory or a reached resource.
    pub fn renders(&self, rel: &str) -> bool {
        self.resources.contains(rel) || self.dirs.iter().any(|d| under(rel, d))
    }

    /// Whether a file (relative to the root) is something kustomize reads.
    pub fn holds(&self, rel: &str) -> bool {
        self.renders(rel) || self.files.iter().any(|f| f == rel || under(rel, f))
    }
}

/// `rel`, written in a file of the directory `dir`, joined to it lexically as Go's
/// `filepath.Join` does (`/`-separated; `dir` may be absolute); `None` when `rel` is absolute or
/// its `..` climbs above `dir`'s start.
pub fn join_lexically(dir: &str, rel: &str) -> Option<String> {
    if rel.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = dir
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    for c in rel.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    let joined = parts.join("/");
    Some(if dir.starts_with('/') {
        format!("/{joined}")
    } else {
        joined
    })
}

/// Whether `rel` lies below the directory `dir` (`""` is the root).
pub fn is_under(rel: &str, dir: &str) -> bool {
    under(rel, dir)
}

fn under(rel: &str, dir: &str) -> bool {
    dir.is_empty()
        || rel
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// [`check`], and what the kustomization in `dir` reaches ([`Reach`]). A directory without a
/// kustomization reaches only itself.
pub fn check_and_reach(root: &Root, dir: &Path, opts: &Options) -> (Diagnostics, Reach) {
    let mut c = Checker {
        root,
        opts,
        done: BTreeSet::new(),
        stack: Vec::new(),
        config_done: BTreeSet::new(),
        visited: 0,
        diags: Diagnostics::new(),
        reach: Reach::default(),
    };
    let shown = root.display_name(dir);
    match root.resolve_from(Path::new(""), dir, &shown) {
        Ok(Some((rel, real))) if real.is_dir() => {
            c.reach.dirs.insert(slashed(&rel));
            c.visit_dir(&rel);
        }
        Ok(_) => {}
        Err(d) => c.diags.push(d),
    }
    (c.diags, c.reach)
}

/// A relative path as the tree names it: `/`-separated, `""` for the root.
fn slashed(rel: &Path) -> String {
    let s = rel.to_string_lossy().replace('\\', "/");
    if s == "." {
        String::new()
    } else {
        s
    }
}

/// The files one kustomization names as kustomize's own rather than as resources: patches,
/// replacements, CRDs, configurations, the OpenAPI schema, generator files and envs, generator,
/// transformer and validator configuration files; as written (relative to the kustomization's
/// directory), remote ones left out. What a walk that reads manifests must not take for
/// objects: a JSON patch is a YAML list, a strategic merge patch a partial object.
pub fn own_files(kustomization: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(m) = kustomization.as_object() else {
        return out;
    };
    let mut push = |s: &str| {
        if !s.is_empty() && !is_remote(s) && !out.iter().any(|o| o == s) {
            out.push(s.to_string());
        }
    };
    for (key, v) in m {
        match fold(key).as_str() {
            "CRDS" | "CONFIGURATIONS" | "PATCHESSTRATEGICMERGE" => {
                strings(v).iter().for_each(|(_, s)| push(s))
            }
            "GENERATORS" | "TRANSFORMERS" | "VALIDATORS" => strings(v)
                .iter()
                .filter(|(_, s)| !s.contains('\n'))
                .for_each(|(_, s)| push(s)),
            "PATCHES" | "PATCHESJSON6902" | "REPLACEMENTS" | "CONFIGMAPGENERATOR"
            | "SECRETGENERATOR" => {
                for (_, item) in items(v) {
                    for (k, x) in item {
                        let files = is(k, "files");
                        if is(k, "path") || files || is(k, "envs") || is(k, "env") {
                            for (_, s) in strings(x) {
                                // A file source is `[key=]path`.
                                let path = if files {
                                    s.split_once('=').map_or(s.as_str(), |(_, p)| p)
                                } else {
                                    s.as_str()
                                };
                                push(path);
                            }
                        }
                    }
                }
            }
            "OPENAPI" => {
                if let Some(p) = v
                    .as_object()
                    .and_then(|o| o.iter().find(|(k, _)| is(k, "path")))
                {
                    strings(p.1).iter().for_each(|(_, s)| push(s));
                }
            }
            _ => {}
        }
    }
    out
}

/// What an entry may be.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    /// A file kustomize reads (its content is not checked further).
    File,
    /// A file or a directory holding a kustomization (resources, bases, components).
    Base,
    /// A generator, transformer or validator: a file of configurations or a kustomization
    /// directory whose resources are configurations.
    Config,
}

struct Checker<'a> {
    root: &'a Root,
    opts: &'a Options,
    /// Kustomization directories checked (real paths relative to the root).
    done: BTreeSet<PathBuf>,
    /// The chain of kustomization directories being checked.
    stack: Vec<PathBuf>,
    /// Generator and transformer directories whose configurations were checked.
    config_done: BTreeSet<PathBuf>,
    visited: usize,
    diags: Diagnostics,
    reach: Reach,
}

/// Go's `encoding/json` key folding: ASCII upper case; other characters lower-cased then
/// upper-cased one to one (so `ſ` is `S`, `K` is `K`, `ı` and `İ` are `I`).
fn fold(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii() {
                return c.to_ascii_uppercase();
            }
            let lower = if c == '\u{130}' {
                'i'
            } else {
                one(c.to_lowercase()).unwrap_or(c)
            };
            one(lower.to_uppercase()).unwrap_or(lower)
        })
        .collect()
}

fn one(mut it: impl Iterator<Item = char>) -> Option<char> {
    let c = it.next()?;
    it.next().is_none().then_some(c)
}

fn is(key: &str, field: &str) -> bool {
    fold(key) == field.to_ascii_uppercase()
}

/// Whether kustomize would fetch `s` instead of reading it from the disk: an HTTP(S) file, or
/// what its Git repository parser accepts (a scheme, `user@host:`, `github.com/`), with or
/// without the `git::` prefix it strips.
pub fn is_remote(s: &str) -> bool {
    let t = s.trim();
    let lower = t.to_ascii_lowercase();
    let lower = lower.strip_prefix("git::").unwrap_or(&lower);
    if lower.contains("://") || lower.starts_with("github.com/") || lower.starts_with("github.com:")
    {
        return true;
    }
    // scp-style `user@host:path` (kustomize: `^[a-zA-Z][a-zA-Z0-9-]*@`).
    let mut chars = lower.chars();
    if chars.next().is_some_and(|c| c.is_ascii_alphabetic()) {
        for c in chars {
            if c == '@' {
                return true;
            }
            if !(c.is_ascii_alphanumeric() || c == '-') {
                break;
            }
        }
    }
    false
}

fn strings(v: &Value) -> Vec<(String, String)> {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .filter_map(|(i, x)| scalar(x).map(|s| (format!("[{i}]"), s)))
            .collect(),
        other => scalar(other)
            .map(|s| vec![(String::new(), s)])
            .unwrap_or_default(),
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn items(v: &Value) -> Vec<(usize, &serde_json::Map<String, Value>)> {
    match v {
        Value::Array(a) => a
            .iter()
            .enumerate()
            .filter_map(|(i, x)| x.as_object().map(|m| (i, m)))
            .collect(),
        _ => Vec::new(),
    }
}

/// Keys of a builtin plugin configuration whose values kustomize reads as paths.
const CONFIG_PATH_KEYS: &[&str] = &[
    "path",
    "paths",
    "files",
    "envs",
    "env",
    "valuesFile",
    "additionalValuesFiles",
    "chartHome",
    "configHome",
    "helmHome",
    "values",
    "helmBin",
    "targetFilePath",
];

/// Keys of a builtin plugin configuration that name a remote repository.
const CONFIG_REMOTE_KEYS: &[&str] = &["repo", "chartRepoUrl"];

impl Checker<'_> {
    fn visit_dir(&mut self, dir: &Path) {
        if self.stack.iter().any(|d| d == dir) {
            let chain: Vec<String> = self
                .stack
                .iter()
                .chain([&dir.to_path_buf()])
                .map(|d| self.root.display_name(d))
                .collect();
            self.diags.push(
                Diagnostic::error(
                    codes::KUSTOMIZE_REFERENCES,
                    format!(
                        "kustomizations refer to each other in a cycle: {}",
                        chain.join(" -> ")
                    ),
                )
                .in_file(self.root.display_name(dir))
                .with_hint(
                    "a base may not include the kustomization that includes it; break the cycle",
                ),
            );
            return;
        }
        if self.done.contains(dir) {
            return;
        }
        if self.stack.len() >= self.opts.max_depth || self.visited >= self.opts.max_kustomizations {
            self.diags.push(
                Diagnostic::error(
                    codes::KUSTOMIZE_REFERENCES,
                    format!(
                        "kustomizations nest deeper than {} or number more than {}: the paths they name are not checked",
                        self.opts.max_depth, self.opts.max_kustomizations
                    ),
                )
                .in_file(self.root.display_name(dir))
                .with_hint("flatten the chain of bases"),
            );
            return;
        }
        self.visited += 1;
        self.stack.push(dir.to_path_buf());
        for name in KUSTOMIZATION_FILES {
            let rel = dir.join(name);
            match self.root.resolve(&rel) {
                Ok(real) if real.is_file() => self.visit_kustomization(dir, &rel),
                Ok(_) => {}
                // A kustomization file linked from outside the root: kustomize would read it.
                Err(d) if d.code == codes::PATH_ESCAPE => self.diags.push(d),
                Err(_) => {}
            }
        }
        self.stack.pop();
        self.done.insert(dir.to_path_buf());
    }

    fn read(&mut self, rel: &Path) -> Option<Vec<Value>> {
        let shown = self.root.display_name(rel);
        let text = match self
            .root
            .read_to_string(rel, self.opts.yaml.max_input_bytes)
        {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                return None;
            }
        };
        let source = Arc::new(SourceFile {
            name: shown.clone(),
            text,
        });
        match parse_source_with_warnings(&source, &self.opts.yaml) {
            Ok((docs, _)) => Some(docs.into_iter().map(|d| d.value).collect()),
            Err(d) => {
                self.diags.push(
                    Diagnostic::error(
                        codes::KUSTOMIZE_REFERENCES,
                        format!(
                            "cannot read it as YAML, so the paths it names cannot be checked: {}",
                            d.message
                        ),
                    )
                    .in_file(shown)
                    .with_hint("fix the file's YAML"),
                );
                None
            }
        }
    }

    fn visit_kustomization(&mut self, dir: &Path, file: &Path) {
        let shown = self.root.display_name(file);
        let Some(docs) = self.read(file) else { return };
        for doc in &docs {
            let Some(m) = doc.as_object() else { continue };
            for (key, v) in m {
                let f = fold(key);
                let at = |i: &str| format!("{key}{i}");
                match f.as_str() {
                    "RESOURCES" | "BASES" | "COMPONENTS" => {
                        for (i, s) in strings(v) {
                            self.entry(dir, &s, &shown, &at(&i), Role::Base);
                        }
                    }
                    "CRDS" | "CONFIGURATIONS" | "PATCHESSTRATEGICMERGE" => {
                        for (i, s) in strings(v) {
                            self.entry(dir, &s, &shown, &at(&i), Role::File);
                        }
                    }
                    "GENERATORS" | "TRANSFORMERS" | "VALIDATORS" => {
                        for (i, s) in strings(v) {
                            match inline_configs(&s, &self.opts.yaml) {
                                Some(configs) => {
                                    for c in &configs {
                                        self.config(dir, c, &shown, &at(&i));
                                    }
                                }
                                None => self.entry(dir, &s, &shown, &at(&i), Role::Config),
                            }
                        }
                    }
                    "PATCHES" | "PATCHESJSON6902" | "REPLACEMENTS" => {
                        for (i, item) in items(v) {
                            self.fields(dir, item, &["path"], &shown, &at(&format!("[{i}]")));
                        }
                    }
                    "OPENAPI" => {
                        if let Some(m) = v.as_object() {
                            self.fields(dir, m, &["path"], &shown, key);
                        }
                    }
                    "CONFIGMAPGENERATOR" | "SECRETGENERATOR" => {
                        for (i, item) in items(v) {
                            self.fields(
                                dir,
                                item,
                                &["files", "envs", "env"],
                                &shown,
                                &at(&format!("[{i}]")),
                            );
                        }
                    }
                    "HELMGLOBALS" => {
                        if let Some(m) = v.as_object() {
                            self.fields(dir, m, &["chartHome", "configHome"], &shown, key);
                        }
                    }
                    "HELMCHARTS" => {
                        for (i, item) in items(v) {
                            let at = at(&format!("[{i}]"));
                            self.fields(
                                dir,
                                item,
                                &["valuesFile", "additionalValuesFiles"],
                                &shown,
                                &at,
                            );
                            self.remote_fields(item, &["repo"], &shown, &at);
                        }
                    }
                    "HELMCHARTINFLATIONGENERATOR" => {
                        for (i, item) in items(v) {
                            let at = at(&format!("[{i}]"));
                            self.fields(
                                dir,
                                item,
                                &["chartHome", "helmHome", "values", "helmBin"],
                                &shown,
                                &at,
                            );
                            self.remote_fields(item, &["chartRepoUrl"], &shown, &at);
                        }
                    }
                    _ => {}
                }
            }
        }
    }

    /// Check the path-valued `keys` of `m` (files entries may be `key=path`).
    fn fields(
        &mut self,
        dir: &Path,
        m: &serde_json::Map<String, Value>,
        keys: &[&str],
        shown: &str,
        at: &str,
    ) {
        for (k, v) in m {
            if !keys.iter().any(|f| is(k, f)) {
                continue;
            }
            let file_sources = is(k, "files");
            for (i, s) in strings(v) {
                let field = join(at, &format!("{k}{i}"));
                if file_sources {
                    // kustomize's file source is `[key=]path`.
                    if let Some((_, p)) = s.split_once('=') {
                        self.entry(dir, p, shown, &field, Role::File);
                    }
                }
                self.entry(dir, &s, shown, &field, Role::File);
            }
        }
    }

    fn remote_fields(
        &mut self,
        m: &serde_json::Map<String, Value>,
        keys: &[&str],
        shown: &str,
        at: &str,
    ) {
        for (k, v) in m {
            if keys.iter().any(|f| is(k, f)) {
                for (i, s) in strings(v) {
                    if !s.is_empty() && !self.opts.allow_remote {
                        self.remote(&s, shown, &join(at, &format!("{k}{i}")));
                    }
                }
            }
        }
    }

    /// A builtin plugin configuration: every path-valued key at any depth.
    fn config(&mut self, dir: &Path, v: &Value, shown: &str, at: &str) {
        match v {
            Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    self.config(dir, x, shown, &format!("{at}[{i}]"));
                }
            }
            Value::Object(m) => {
                self.fields(dir, m, CONFIG_PATH_KEYS, shown, at);
                self.remote_fields(m, CONFIG_REMOTE_KEYS, shown, at);
                for (k, x) in m {
                    if x.is_object() || x.is_array() {
                        self.config(dir, x, shown, &join(at, k));
                    }
                }
            }
            _ => {}
        }
    }

    fn remote(&mut self, s: &str, shown: &str, field: &str) {
        self.diags.push(
            Diagnostic::error(
                codes::KUSTOMIZE_REMOTE,
                format!("{field} names a remote reference ({}); kustomize would fetch it, and what it holds cannot be checked", path_shown(s)),
            )
            .in_file(shown.to_string())
            .at(field.to_string())
            .with_hint("vendor it into the source, or allow remote references explicitly (kiln-flux: --allow-remote-bases)"),
        );
    }

    /// One path `s` written in the kustomization of `dir`, at `field` of the file `shown`.
    fn entry(&mut self, dir: &Path, s: &str, shown: &str, field: &str, role: Role) {
        if s.is_empty() {
            return;
        }
        if is_remote(s) {
            if !self.opts.allow_remote {
                self.remote(s, shown, field);
            }
            return;
        }
        let resolved = match self.root.resolve_from(dir, Path::new(s), shown) {
            Ok(r) => r,
            Err(d) => {
                let why = d
                    .message
                    .split_once(": ")
                    .map_or(d.message.as_str(), |(_, w)| w)
                    .to_string();
                self.diags.push(
                    Diagnostic::error(
                        codes::PATH_ESCAPE,
                        format!("{field} ({}) leaves the source root: {why}", path_shown(s)),
                    )
                    .in_file(shown.to_string())
                    .at(field.to_string())
                    .with_hint("every path a kustomization names must stay inside the source root (as Flux's confined file system requires); copy the file in instead of pointing outside"),
                );
                return;
            }
        };
        let Some((rel, real)) = resolved else { return };
        match (role, real.is_dir()) {
            (Role::Base, true) => self.reach.dirs.insert(slashed(&rel)),
            (Role::Base, false) => self.reach.resources.insert(slashed(&rel)),
            _ => self.reach.files.insert(slashed(&rel)),
        };
        match role {
            Role::File => {}
            Role::Base | Role::Config if real.is_dir() => {
                if role == Role::Config {
                    self.visit_config_dir(dir, &rel, 0);
                } else {
                    self.visit_dir(&rel);
                }
            }
            Role::Base => {}
            Role::Config => {
                if let Some(docs) = self.read(&rel) {
                    let name = self.root.display_name(&rel);
                    // Configurations are given the loader of the kustomization that names
                    // them: their paths are relative to its directory.
                    for d in &docs {
                        self.config(dir, d, &name, "");
                    }
                }
            }
        }
    }

    /// A generator or transformer directory: a kustomization whose resources are
    /// configurations. Its own paths are checked as any kustomization's, and every file it lists
    /// as a resource is read as configurations, whose paths are relative to `base`, the
    /// directory of the kustomization that names the generator.
    fn visit_config_dir(&mut self, base: &Path, dir: &Path, depth: usize) {
        if depth >= self.opts.max_depth {
            self.diags.push(
                Diagnostic::error(
                    codes::KUSTOMIZE_REFERENCES,
                    format!(
                        "generator or transformer directories nest deeper than {}: the paths they name are not checked",
                        self.opts.max_depth
                    ),
                )
                .in_file(self.root.display_name(dir))
                .with_hint("flatten the chain of generator directories"),
            );
            return;
        }
        self.visit_dir(dir);
        if !self.config_done.insert(dir.to_path_buf()) {
            return;
        }
        for name in KUSTOMIZATION_FILES {
            let rel = dir.join(name);
            if !self.root.resolve(&rel).is_ok_and(|r| r.is_file()) {
                continue;
            }
            let shown = self.root.display_name(&rel);
            let Some(docs) = self.read(&rel) else {
                continue;
            };
            for doc in &docs {
                let Some(m) = doc.as_object() else { continue };
                for (k, v) in m {
                    if !(is(k, "resources") || is(k, "bases")) {
                        continue;
                    }
                    for (i, s) in strings(v) {
                        if is_remote(&s) {
                            continue; // reported by visit_dir
                        }
                        if let Ok(Some((r, real))) =
                            self.root.resolve_from(dir, Path::new(&s), &shown)
                        {
                            self.reach.files.insert(slashed(&r));
                            if real.is_dir() {
                                self.visit_config_dir(base, &r, depth + 1);
                            } else if let Some(docs) = self.read(&r) {
                                let name = self.root.display_name(&r);
                                for d in &docs {
                                    self.config(base, d, &name, &format!("{k}[{i}]"));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn join(at: &str, field: &str) -> String {
    if at.is_empty() {
        field.to_string()
    } else {
        format!("{at}.{field}")
    }
}

/// The documents of an inline generator or transformer configuration, as kustomize reads one
/// (a string that parses as objects with a kind); `None` when `s` is a path.
fn inline_configs(s: &str, yaml: &YamlLimits) -> Option<Vec<Value>> {
    if !s.contains(':') {
        return None;
    }
    let docs = crate::document::parse_file("inline", s.to_string(), yaml).ok()?;
    let values: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
    let objects = |v: &Value| match v {
        Value::Object(m) => m.contains_key("kind"),
        Value::Array(a) => a.iter().all(|x| x.get("kind").is_some()),
        _ => false,
    };
    (!values.is_empty() && values.iter().all(objects)).then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (p, t) in files {
            let p = d.path().join(p);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, t).unwrap();
        }
        d
    }

    fn run(d: &tempfile::TempDir, dir: &str, opts: &Options) -> Vec<(String, String)> {
        let root = Root::new(&d.path().join("root")).unwrap();
        check(&root, Path::new(dir), opts)
            .0
            .into_iter()
            .map(|d| (d.code.id.to_string(), d.path.unwrap_or_default()))
            .collect()
    }

    fn codes_of(d: &tempfile::TempDir, dir: &str) -> Vec<(String, String)> {
        run(d, dir, &Options::default())
    }

    #[test]
    fn a_kustomizations_own_files_are_listed_from_its_value() {
        let k: Value = serde_yaml_value(
            "resources: [a.yaml]\npatches:\n- path: p.yaml\n- patch: |\n    - op: x\npatchesStrategicMerge: [s.yaml]\nconfigMapGenerator:\n- name: c\n  files: [k=f.txt, g.txt]\n  envs: [e.env]\ntransformers: [t.yaml]\nopenapi:\n  path: o.json\ncrds: [https://x/c.yaml]\n",
        );
        let mut got = own_files(&k);
        got.sort();
        assert_eq!(
            got,
            ["e.env", "f.txt", "g.txt", "o.json", "p.yaml", "s.yaml", "t.yaml"]
        );
    }

    fn serde_yaml_value(text: &str) -> Value {
        let source = Arc::new(SourceFile {
            name: "k".into(),
            text: text.into(),
        });
        parse_source_with_warnings(&source, &YamlLimits::default())
            .unwrap()
            .0
            .remove(0)
            .value
    }

    #[test]
    fn folds_like_go() {
        assert_eq!(fold("reſources"), "RESOURCES");
        assert_eq!(fold("\u{212A}ind"), "KIND");
        assert_eq!(fold("confıgurations"), "CONFIGURATIONS");
        assert_eq!(fold("İmages"), "IMAGES");
        assert!(is("Resources", "resources"));
    }

    #[test]
    fn remote_forms() {
        for r in [
            "https://github.com/org/repo//base?ref=v1",
            "HTTP://example.com/x.yaml",
            "git::https://example.com/r.git",
            "ssh://git@example.com/r.git",
            "git@github.com:org/repo.git",
            "github.com/org/repo/base",
            "GitHub.com:org/repo",
            "file:///etc",
        ] {
            assert!(is_remote(r), "{r}");
        }
        for l in ["base", "../base", "a-b/c.yaml", "./x@y", "1a@b"] {
            assert!(!is_remote(l), "{l}");
        }
    }

    #[test]
    fn every_field_that_escapes_is_reported() {
        let k = r#"
resources: [ok.yaml, /etc/passwd, ../secret, sub]
bases: [../../x]
Components: [../c]
crds: [../crd.yaml]
configurations: [../cfg.yaml]
patchesStrategicMerge: [../psm.yaml]
patches: [{path: ../p.yaml}, {patch: "x"}]
patchesJson6902: [{path: /p.json}]
replacements: [{path: ../r.yaml}]
openapi: {path: ../schema.json}
configMapGenerator: [{name: a, files: [k=../f, ../g], envs: [../e.env], env: ../old.env}]
secretGenerator: [{name: s, files: [ok.txt]}]
helmGlobals: {chartHome: ../charts}
helmCharts: [{name: c, valuesFile: ../v.yaml, additionalValuesFiles: [../w.yaml], repo: https://charts.example.com}]
helmChartInflationGenerator: [{chartName: c, values: ../v.yaml, helmBin: /bin/sh}]
reſources: [../folded]
"#;
        let d = tree(&[
            ("root/kustomization.yaml", k),
            ("root/ok.yaml", "a: 1\n"),
            (
                "root/sub/kustomization.yaml",
                "resources: [../../outside.yaml]\n",
            ),
        ]);
        let got = codes_of(&d, "");
        let paths: Vec<&str> = got.iter().map(|(_, p)| p.as_str()).collect();
        for want in [
            "resources[1]",
            "resources[2]",
            "bases[0]",
            "Components[0]",
            "crds[0]",
            "configurations[0]",
            "patchesStrategicMerge[0]",
            "patches[0].path",
            "patchesJson6902[0].path",
            "replacements[0].path",
            "openapi.path",
            "configMapGenerator[0].files[0]",
            "configMapGenerator[0].files[1]",
            "configMapGenerator[0].envs[0]",
            "configMapGenerator[0].env",
            "helmGlobals.chartHome",
            "helmCharts[0].valuesFile",
            "helmCharts[0].additionalValuesFiles[0]",
            "helmCharts[0].repo",
            "helmChartInflationGenerator[0].values",
            "helmChartInflationGenerator[0].helmBin",
            "reſources[0]",
        ] {
            assert!(paths.contains(&want), "{want} not in {paths:?}");
        }
        // The nested base's escape is reported in its own file.
        assert!(paths.contains(&"resources[0]"), "{paths:?}");
        assert!(got.iter().all(|(c, _)| c == "KLN1002" || c == "KLN1014"));
        assert_eq!(
            got.iter().filter(|(c, _)| c == "KLN1014").count(),
            1,
            "{got:?}"
        );
    }

    #[test]
    fn paths_inside_the_root_pass() {
        let d = tree(&[
            ("root/apps/kustomization.yaml", "resources: [../base, cm.yaml]\npatches: [{path: p.yaml}]\nconfigMapGenerator: [{name: a, files: [k=../data/f.txt]}]\n"),
            ("root/apps/cm.yaml", "a: 1\n"),
            ("root/apps/p.yaml", "a: 1\n"),
            ("root/data/f.txt", "x"),
            ("root/base/kustomization.yml", "resources: [./x/../d.yaml, missing.yaml]\n"),
            ("root/base/d.yaml", "a: 1\n"),
        ]);
        assert_eq!(codes_of(&d, "apps"), Vec::<(String, String)>::new());
    }

    #[test]
    fn remote_allowed_is_not_reported() {
        let d = tree(&[(
            "root/kustomization.yaml",
            "resources: [https://github.com/org/repo//base?ref=v1, github.com/org/repo]\n",
        )]);
        assert_eq!(codes_of(&d, "").len(), 2);
        let allow = Options {
            allow_remote: true,
            ..Options::default()
        };
        assert!(run(&d, "", &allow).is_empty());
    }

    #[test]
    fn generators_inline_files_and_directories() {
        let d = tree(&[
            (
                "root/kustomization.yaml",
                "generators:\n- |\n  apiVersion: builtin\n  kind: ConfigMapGenerator\n  metadata: {name: a}\n  files: [../inline]\n- gen.yaml\n- gens\ntransformers: [t.yaml]\n",
            ),
            (
                "root/gen.yaml",
                "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: /etc/passwd\n",
            ),
            ("root/gens/kustomization.yaml", "resources: [g.yaml]\n"),
            (
                "root/gens/g.yaml",
                "apiVersion: builtin\nkind: ValueAddTransformer\nmetadata: {name: v}\ntargetFilePath: ../../x\n",
            ),
            (
                "root/t.yaml",
                "apiVersion: builtin\nkind: ReplacementTransformer\nmetadata: {name: r}\nreplacements: [{path: ../r.yaml}]\n",
            ),
        ]);
        let got = codes_of(&d, "");
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got.iter().all(|(c, _)| c == "KLN1002"), "{got:?}");
    }

    #[test]
    fn cycles_and_depth_are_bounded() {
        let d = tree(&[
            ("root/a/kustomization.yaml", "resources: [../b]\n"),
            ("root/b/kustomization.yaml", "resources: [../a]\n"),
        ]);
        let got = codes_of(&d, "a");
        assert_eq!(got, [("KLN1015".to_string(), String::new())]);
        let mut files = Vec::new();
        for i in 0..10 {
            files.push((
                format!("root/d{i}/kustomization.yaml"),
                format!("resources: [../d{}]\n", i + 1),
            ));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let d = tree(&files);
        let shallow = Options {
            max_depth: 3,
            ..Options::default()
        };
        let got = run(&d, "d0", &shallow);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].0, "KLN1015");
        // Generator directories whose resources are generator directories, and so on.
        let mut files = vec![(
            "root/kustomization.yaml".to_string(),
            "generators: [g0]\n".to_string(),
        )];
        for i in 0..10 {
            files.push((
                format!("root/g{i}/kustomization.yaml"),
                format!("resources: [../g{}]\n", i + 1),
            ));
        }
        let files: Vec<(&str, &str)> = files
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        let d = tree(&files);
        let got = run(&d, "", &shallow);
        assert!(
            got.iter().all(|(c, _)| c == "KLN1015") && !got.is_empty(),
            "{got:?}"
        );
    }

    #[test]
    fn merge_keys_and_duplicates_are_seen() {
        let d = tree(&[(
            "root/kustomization.yaml",
            "base: &b {resources: [/etc/passwd]}\n<<: *b\n",
        )]);
        let got = codes_of(&d, "");
        assert!(got.iter().any(|(c, _)| c == "KLN1002"), "{got:?}");
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_are_refused() {
        let d = tree(&[
            (
                "root/kustomization.yaml",
                "resources: [link.yaml, dir/x.yaml, dir/../y.yaml]\n",
            ),
            ("secret.yaml", "s: 1\n"),
            ("out/x.yaml", "x: 1\n"),
            ("y.yaml", "y: 1\n"),
        ]);
        std::os::unix::fs::symlink(
            d.path().join("secret.yaml"),
            d.path().join("root/link.yaml"),
        )
        .unwrap();
        std::os::unix::fs::symlink(d.path().join("out"), d.path().join("root/dir")).unwrap();
        let got = codes_of(&d, "");
        let paths: Vec<&str> = got.iter().map(|(_, p)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["resources[0]", "resources[1]", "resources[2]"],
            "{got:?}"
        );
        // A kustomization file linked from outside is refused, not skipped.
        let d = tree(&[
            ("root/base/x.yaml", "a: 1\n"),
            ("k.yaml", "resources: [../../secret]\n"),
        ]);
        std::os::unix::fs::symlink(
            d.path().join("k.yaml"),
            d.path().join("root/base/kustomization.yaml"),
        )
        .unwrap();
        let got = codes_of(&d, "base");
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].0, "KLN1002");
    }
}
