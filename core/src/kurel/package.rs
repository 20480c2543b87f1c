//! Loading a package directory (and its local extension) into an immutable [`Package`].
//!
//! Every file is read through a [`Root`]: the package directory for the package, the directory
//! holding the package for finding `NAME.local.kurel/`, and that extension directory for its own
//! files. Nothing can make kiln read outside them (`..`, absolute paths, symlinks that leave, device
//! files). Every problem found is reported at once; the package is returned only without errors.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{parse_source_with_warnings, Document, SourceFile, YamlLimits};
use crate::fieldpath::FieldPath;
use crate::source::{Buffers, Root};

use super::kpatch::{self, Op};
use super::parameters::{self, Metadata, MetadataSource};
use super::variables;

/// Extensions of `.kpatch`-format files. `.patch` and `.toml` are the prototype's names for the
/// same format.
const KPATCH_EXTENSIONS: &[&str] = &["kpatch", "patch", "toml"];
/// Extensions of YAML patch files and sidecars.
const YAML_EXTENSIONS: &[&str] = &["yaml", "yml", "json"];

/// Whether a patch belongs to the package or to the user's local extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// `NAME.kurel/patches/`.
    Package,
    /// `NAME.local.kurel/patches/`.
    Local,
}

/// Where something was written, for diagnostics.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Loc {
    /// File display name.
    pub file: String,
    /// 1-based line.
    pub line: Option<usize>,
    /// Field path inside a YAML file.
    pub path: Option<String>,
}

impl Loc {
    /// Place a diagnostic here.
    pub fn place(&self, mut d: Diagnostic) -> Diagnostic {
        d = d.in_file(&self.file);
        if let Some(l) = self.line {
            d = d.at_line(l, None);
        }
        if let Some(p) = &self.path {
            d = d.at(p.clone());
        }
        d
    }

    fn of(doc: &Document, path: &FieldPath) -> Self {
        Self {
            file: doc.file().to_string(),
            line: crate::document::locate(&doc.source.text, doc.index, path).map(|(l, _)| l),
            path: (!path.is_empty()).then(|| path.to_string()),
        }
    }
}

/// A patch's `enabled` condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Enabled {
    /// No condition: always enabled.
    Always,
    /// `true` or `false`.
    Literal(bool),
    /// `${path}`: a boolean parameter.
    Variable(String),
}

/// A reference from `requires` / `conflicts` to another patch, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchRef {
    /// The reference: a path under `patches/` (`features/05-metrics.kpatch`), with or without
    /// extension, or a bare name (`05-metrics`).
    pub name: String,
    /// Where it was written.
    pub loc: Loc,
}

/// Patch metadata: from a sidecar `NAME.yaml`, `# kurel:` header lines, or a YAML patch's own keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchMeta {
    /// When the patch applies.
    pub enabled: Enabled,
    /// Where `enabled` was written.
    pub enabled_loc: Loc,
    /// What it does.
    pub description: Option<String>,
    /// Patches this one needs (auto-enabled).
    pub requires: Vec<PatchRef>,
    /// Patches that must not be enabled with this one.
    pub conflicts: Vec<PatchRef>,
}

/// One patch file.
#[derive(Debug, Clone, PartialEq)]
pub struct PatchFile {
    /// Path under `patches/`, e.g. `features/10-monitoring.kpatch`.
    pub id: String,
    /// File name without extension, e.g. `10-monitoring`: how logs name the patch.
    pub name: String,
    /// Package or local extension.
    pub origin: Origin,
    /// Display name of the file.
    pub file: String,
    /// Metadata.
    pub meta: PatchMeta,
    /// Operations, in file order.
    pub ops: Vec<Op>,
}

/// The user's local extension directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Local {
    /// Display name of the directory.
    pub dir: String,
    /// Its `parameters.yaml`, if any.
    pub parameters: Option<Document>,
}

/// A loaded package: the immutable definition, plus the local extension found next to it.
#[derive(Debug, Clone)]
pub struct Package {
    /// Display name of the package directory.
    pub dir: String,
    /// Metadata.
    pub metadata: Metadata,
    /// Parameters of `parameters.yaml`, with `kurel` set to the metadata.
    pub parameters: Value,
    /// The `parameters.yaml` document (for locating diagnostics), if the file exists.
    pub parameters_doc: Option<Document>,
    /// Resource documents, in path order.
    pub resources: Vec<Document>,
    /// Package patches in apply order, then local patches in apply order.
    pub patches: Vec<PatchFile>,
    /// The local extension, if there is one.
    pub local: Option<Local>,
    /// Every file read (for source snippets in diagnostics).
    pub files: Vec<Arc<SourceFile>>,
    /// Warnings found while loading.
    pub warnings: Vec<Diagnostic>,
}

/// Loading failed: every problem found, and the files read (for snippets).
#[derive(Debug, Clone, Default)]
pub struct LoadError {
    /// Errors and warnings.
    pub diagnostics: Diagnostics,
    /// Files read.
    pub files: Vec<Arc<SourceFile>>,
    /// When the only errors are in patch files: the package without those patches, so the rest
    /// (variables, schemas, the other patches) is still checked in the same run.
    pub partial: Option<Box<Package>>,
}

struct Loader {
    diags: Diagnostics,
    files: Vec<Arc<SourceFile>>,
    limits: YamlLimits,
    /// An editor's unsaved buffers, read instead of the files they name.
    buffers: Option<Buffers>,
}

impl Loader {
    /// Read and parse one YAML file of a root; problems are recorded.
    fn read(&mut self, root: &Root, rel: &Path) -> Option<Vec<Document>> {
        let text = match root.read_to_string(rel, self.limits.max_input_bytes) {
            Ok(t) => t,
            Err(d) => {
                self.diags.push(d);
                return None;
            }
        };
        let file = Arc::new(SourceFile {
            name: root.display_name(rel),
            text,
        });
        self.files.push(file.clone());
        match parse_source_with_warnings(&file, &self.limits) {
            Ok((docs, warnings)) => {
                self.diags.extend(warnings);
                Some(docs)
            }
            Err(d) => {
                self.diags.push(d);
                None
            }
        }
    }

    /// Read a file that must hold one mapping (an empty file is an empty mapping).
    fn read_map(&mut self, root: &Root, rel: &Path) -> Option<Document> {
        let name = root.display_name(rel);
        let docs = self.read(root, rel)?;
        let file = self.files.last().cloned()?;
        match docs.len() {
            0 => Some(Document {
                source: file,
                index: 0,
                item: None,
                value: Value::Object(Map::new()),
            }),
            1 if docs[0].value.is_object() => docs.into_iter().next(),
            1 => {
                self.diags.push(
                    Diagnostic::error(codes::KUREL_PACKAGE, format!("{name} must be a mapping"))
                        .in_file(&name)
                        .at_line(1, None)
                        .with_hint("write key: value pairs at the top level"),
                );
                None
            }
            _ => {
                self.diags.push(
                    Diagnostic::error(
                        codes::KUREL_PACKAGE,
                        format!(
                            "{name} holds {} YAML documents; one is expected",
                            docs.len()
                        ),
                    )
                    .in_file(&name)
                    .with_hint("remove the `---` separators"),
                );
                None
            }
        }
    }

    fn exists(&mut self, root: &Root, rel: &Path) -> bool {
        // symlink_metadata does not follow links, so a dangling or escaping link still "exists"
        // and is then refused by Root with a precise message.
        let Ok(base) = root.resolve(Path::new("")) else {
            return false;
        };
        fs::symlink_metadata(base.join(rel)).is_ok()
    }
}

/// Every file under `rel`, recursively, sorted, hidden entries skipped, every entry checked by
/// the root (no symlink may leave it).
fn walk_files(root: &Root, rel: &Path, diags: &mut Diagnostics) -> Vec<PathBuf> {
    root.walk_all(rel, diags)
}

fn ext_of(p: &Path) -> &str {
    p.extension().and_then(|e| e.to_str()).unwrap_or("")
}

/// The numeric prefix of a file name (`10-monitoring` → 10), which orders patches.
pub fn numeric_prefix(name: &str) -> Option<u64> {
    let digits: String = name.chars().take_while(char::is_ascii_digit).collect();
    if digits.is_empty() {
        None
    } else {
        digits.parse().ok()
    }
}

/// Load the package at `dir` and the local extension next to it, under the default reading
/// limits.
pub fn load(dir: &Path) -> Result<Package, LoadError> {
    load_with_limits(dir, &YamlLimits::default())
}

/// [`load`] with reading limits for every file of the package (kpatch values included).
pub fn load_with_limits(dir: &Path, limits: &YamlLimits) -> Result<Package, LoadError> {
    load_with_buffers(dir, limits, None)
}

/// [`load_with_limits`], reading an editor's unsaved `buffers` instead of the files they name.
pub fn load_with_buffers(
    dir: &Path,
    limits: &YamlLimits,
    buffers: Option<Buffers>,
) -> Result<Package, LoadError> {
    let mut l = Loader {
        diags: Diagnostics::new(),
        files: Vec::new(),
        limits: *limits,
        buffers,
    };
    let display = dir.display().to_string();
    let root = match Root::new(dir).map(|r| r.with_overlay(l.buffers.clone())) {
        Ok(r) => r,
        Err(d) => {
            return Err(LoadError {
                diagnostics: d.into(),
                files: Vec::new(),
                partial: None,
            })
        }
    };

    // Metadata and parameters.
    let has_params = l.exists(&root, Path::new("parameters.yaml"));
    let has_kurel_yaml = l.exists(&root, Path::new("kurel.yaml"));
    let params_doc = if has_params {
        l.read_map(&root, Path::new("parameters.yaml"))
    } else {
        None
    };
    let kurel_doc = if has_kurel_yaml {
        l.read_map(&root, Path::new("kurel.yaml"))
    } else {
        None
    };
    if !has_params && !has_kurel_yaml {
        l.diags.push(
            Diagnostic::error(
                codes::KUREL_PACKAGE,
                format!("{display} has no parameters.yaml"),
            )
            .in_file(root.display_name(Path::new("parameters.yaml")))
            .with_hint("a kurel package needs parameters.yaml with a kurel: key (name, version, appVersion)"),
        );
    }
    let mut metadata = None;
    let mut parameters = Map::new();
    if let Some(doc) = &params_doc {
        if let Value::Object(m) = &doc.value {
            parameters = m.clone();
            parameters::warn_foreign_templates(doc, &doc.value, &FieldPath::root(), &mut l.diags);
            if let Some(g) = m.get("global") {
                if !g.is_object() {
                    l.diags.push(
                        doc.diag(
                            Diagnostic::error(codes::KUREL_PARAMETERS, "global must be a mapping")
                                .with_hint("global: holds defaults such as labels and resources"),
                            &FieldPath::root().key("global"),
                        ),
                    );
                }
            }
            match m.get("kurel") {
                Some(Value::Object(k)) => {
                    metadata = parameters::parse_metadata(
                        doc,
                        k,
                        &FieldPath::root().key("kurel"),
                        MetadataSource::Parameters,
                        &mut l.diags,
                    );
                    if let Some(kd) = &kurel_doc {
                        l.diags.push(
                            Diagnostic::warning(
                                codes::KUREL_METADATA_WARNING,
                                "kurel.yaml is ignored: the metadata comes from kurel: in parameters.yaml",
                            )
                            .in_file(kd.file())
                            .with_hint("delete kurel.yaml"),
                        );
                    }
                }
                Some(_) => l.diags.push(doc.diag(
                    Diagnostic::error(codes::KUREL_METADATA, "kurel must be a mapping").with_hint(
                        "write kurel: {name: my-app, version: 1.0.0, appVersion: \"1.0\"}",
                    ),
                    &FieldPath::root().key("kurel"),
                )),
                None if kurel_doc.is_none() => l.diags.push(
                    doc.diag(
                        Diagnostic::error(
                            codes::KUREL_METADATA,
                            "parameters.yaml has no kurel: metadata",
                        )
                        .with_hint(
                            "add kurel: {name: my-app, version: 1.0.0, appVersion: \"1.0\"}",
                        ),
                        &FieldPath::root(),
                    ),
                ),
                None => {}
            }
        }
    }
    if metadata.is_none() && !parameters.contains_key("kurel") {
        if let Some(kd) = &kurel_doc {
            if let Value::Object(m) = &kd.value {
                metadata = parameters::parse_metadata(
                    kd,
                    m,
                    &FieldPath::root(),
                    MetadataSource::KurelYaml,
                    &mut l.diags,
                );
            }
        }
    }
    if let Some(md) = &metadata {
        parameters.insert("kurel".into(), md.as_parameter());
    }

    // Resources.
    let mut resources = Vec::new();
    if l.exists(&root, Path::new("resources")) {
        let files = walk_files(&root, Path::new("resources"), &mut l.diags);
        for f in files {
            if !YAML_EXTENSIONS.contains(&ext_of(&f)) {
                continue;
            }
            let Some(docs) = l.read(&root, &f) else {
                continue;
            };
            for d in docs {
                if check_resource_shape(&d, &mut l.diags) {
                    resources.push(d);
                }
            }
        }
    } else {
        l.diags.push(
            Diagnostic::warning(
                codes::KUREL_PACKAGE,
                "the package has no resources/ directory",
            )
            .in_file(&display)
            .with_hint("put the package's Kubernetes manifests under resources/"),
        );
    }
    for name in ["manifests"] {
        if l.exists(&root, Path::new(name)) {
            l.diags.push(
                Diagnostic::warning(
                    codes::KUREL_PROTOTYPE,
                    format!("{name}/ is not read; resources live in resources/"),
                )
                .in_file(root.display_name(Path::new(name)))
                .with_hint("move the manifests to resources/"),
            );
        }
    }

    // Patches.
    let mut patches = load_patches(&mut l, &root, Origin::Package);

    // Prototype-style local extension files inside the package.
    if let Ok(entries) = fs::read_dir(dir) {
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| n.ends_with(".local.kurel") || n.ends_with(".local.yaml"))
            .collect();
        names.sort();
        for n in names {
            l.diags.push(
                Diagnostic::warning(
                    codes::KUREL_PROTOTYPE,
                    format!("{n} is a prototype-style local extension file and is not read"),
                )
                .in_file(root.display_name(Path::new(&n)))
                .with_hint("a local extension is a directory NAME.local.kurel/ next to the package, holding parameters.yaml and patches/"),
            );
        }
    }

    // The local extension next to the package.
    let local = load_local(&mut l, dir, &mut patches);

    check_patch_ids(&patches, &mut l.diags);

    let LoadResult { diags, files } = LoadResult {
        diags: l.diags,
        files: l.files,
    };
    if diags.has_errors() {
        let mut diags = diags;
        diags.sort();
        let only_patch_files = diags.iter().filter(|d| d.is_error()).all(|d| {
            [
                codes::KUREL_KPATCH_SYNTAX,
                codes::KUREL_PATCH_YAML,
                codes::KUREL_PATCH_METADATA,
            ]
            .contains(&d.code)
        });
        let partial = match (&metadata, only_patch_files) {
            (Some(md), true) => Some(Box::new(Package {
                dir: display.clone(),
                metadata: md.clone(),
                parameters: Value::Object(parameters),
                parameters_doc: params_doc,
                resources,
                patches,
                local,
                files: files.clone(),
                warnings: Vec::new(),
            })),
            _ => None,
        };
        return Err(LoadError {
            diagnostics: diags,
            files,
            partial,
        });
    }
    let Some(metadata) = metadata else {
        return Err(LoadError {
            diagnostics: Diagnostic::error(codes::KUREL_METADATA, "the package has no metadata")
                .in_file(&display)
                .with_hint("add kurel: to parameters.yaml")
                .into(),
            files,
            partial: None,
        });
    };
    let mut warnings = diags.0;
    warnings.sort_by(|a, b| (&a.file, a.line, &a.message).cmp(&(&b.file, b.line, &b.message)));
    Ok(Package {
        dir: display,
        metadata,
        parameters: Value::Object(parameters),
        parameters_doc: params_doc,
        resources,
        patches,
        local,
        files,
        warnings,
    })
}

struct LoadResult {
    diags: Diagnostics,
    files: Vec<Arc<SourceFile>>,
}

/// A resource document must be a mapping with apiVersion, kind and metadata.name (strings, or
/// `${…}` that resolve to strings). Reports and returns false otherwise.
fn check_resource_shape(d: &Document, diags: &mut Diagnostics) -> bool {
    let err = |p: FieldPath, msg: &str, hint: &str| {
        d.diag(
            Diagnostic::error(codes::KUREL_RESOURCE, msg.to_string()).with_hint(hint),
            &p,
        )
    };
    let Some(m) = d.value.as_object() else {
        diags.push(err(
            FieldPath::root(),
            "a resource must be a mapping",
            "each YAML document under resources/ is one Kubernetes object",
        ));
        return false;
    };
    let mut ok = true;
    for k in ["apiVersion", "kind"] {
        if !matches!(m.get(k), Some(Value::String(s)) if !s.is_empty()) {
            diags.push(err(
                FieldPath::root().key(k),
                &format!("the resource has no {k}"),
                "every resource needs apiVersion, kind and metadata.name",
            ));
            ok = false;
        }
    }
    if !matches!(d.value.pointer("/metadata/name"), Some(Value::String(s)) if !s.is_empty()) {
        diags.push(err(
            if m.contains_key("metadata") {
                FieldPath::root().key("metadata")
            } else {
                FieldPath::root()
            },
            "the resource has no metadata.name",
            "every resource needs apiVersion, kind and metadata.name",
        ));
        ok = false;
    }
    ok
}

/// Discover and parse the patches of a root's `patches/` directory.
fn load_patches(l: &mut Loader, root: &Root, origin: Origin) -> Vec<PatchFile> {
    if !l.exists(root, Path::new("patches")) {
        return Vec::new();
    }
    let files = walk_files(root, Path::new("patches"), &mut l.diags);
    let set: BTreeSet<&PathBuf> = files.iter().collect();
    // Stems that have a kpatch file: their YAML sibling is a sidecar.
    let mut kpatch_stems: BTreeMap<PathBuf, Vec<&PathBuf>> = BTreeMap::new();
    for f in &files {
        if KPATCH_EXTENSIONS.contains(&ext_of(f)) {
            kpatch_stems
                .entry(f.with_extension(""))
                .or_default()
                .push(f);
        }
    }
    let mut out = Vec::new();
    for f in &files {
        let ext = ext_of(f);
        let rel_id = f
            .strip_prefix("patches")
            .unwrap_or(f)
            .to_string_lossy()
            .replace('\\', "/");
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        if KPATCH_EXTENSIONS.contains(&ext) {
            let stem = f.with_extension("");
            if kpatch_stems.get(&stem).is_some_and(|v| v.len() > 1) {
                l.diags.push(
                    Diagnostic::error(
                        codes::KUREL_PATCH_METADATA,
                        format!("several patch files are named {}", stem.display()),
                    )
                    .in_file(root.display_name(f))
                    .with_hint("give each patch a unique name"),
                );
                continue;
            }
            let sidecar = YAML_EXTENSIONS
                .iter()
                .map(|e| f.with_extension(e))
                .find(|p| set.contains(p));
            if let Some(p) = load_kpatch(l, root, f, sidecar.as_deref(), rel_id, name, origin) {
                out.push(p);
            }
        } else if YAML_EXTENSIONS.contains(&ext) {
            if kpatch_stems.contains_key(&f.with_extension("")) {
                continue; // a sidecar, read with its patch
            }
            if let Some(p) = load_yaml_patch(l, root, f, rel_id, name, origin) {
                out.push(p);
            }
        }
        // Other files (README.md, …) are documentation.
    }
    // Numeric prefix first, then path: `2-x` before `10-x`, unnumbered patches last.
    out.sort_by(|a, b| {
        (numeric_prefix(&a.name).unwrap_or(u64::MAX), &a.id)
            .cmp(&(numeric_prefix(&b.name).unwrap_or(u64::MAX), &b.id))
    });
    out
}

fn default_meta(file: &str) -> PatchMeta {
    PatchMeta {
        enabled: Enabled::Always,
        enabled_loc: Loc {
            file: file.to_string(),
            line: None,
            path: None,
        },
        description: None,
        requires: Vec::new(),
        conflicts: Vec::new(),
    }
}

/// Parse an `enabled` value.
pub fn parse_enabled(v: &Value) -> Result<Enabled, String> {
    let bad = |what: String| {
        Err(format!(
            "enabled must be true, false or a single boolean variable such as ${{monitoring.enabled}}; got {what}"
        ))
    };
    match v {
        Value::Bool(b) => Ok(Enabled::Literal(*b)),
        Value::String(s) => {
            let t = s.trim();
            match t {
                "true" => return Ok(Enabled::Literal(true)),
                "false" => return Ok(Enabled::Literal(false)),
                _ => {}
            }
            match variables::scan(t) {
                Ok(p) => match p.as_slice() {
                    [variables::Piece::Ref(path)] => Ok(Enabled::Variable(path.clone())),
                    _ => bad(format!("{t:?}")),
                },
                Err(e) => bad(format!("{t:?} ({})", e.message)),
            }
        }
        other => bad(other.to_string()),
    }
}

/// Split a `requires`/`conflicts` value: a list of strings, or one string of names separated by
/// whitespace or commas (the header-line form).
fn parse_refs(v: &Value, loc: &Loc) -> Result<Vec<PatchRef>, String> {
    let mk = |s: &str| PatchRef {
        name: s.to_string(),
        loc: loc.clone(),
    };
    match v {
        Value::Null => Ok(Vec::new()),
        Value::String(s) => Ok(s
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|x| !x.is_empty())
            .map(mk)
            .collect()),
        Value::Array(items) => items
            .iter()
            .map(|i| match i {
                Value::String(s) if !s.trim().is_empty() => Ok(mk(s.trim())),
                other => Err(format!("entries must be patch names, got {other}")),
            })
            .collect(),
        other => Err(format!("must be a list of patch names, got {other}")),
    }
}

/// Read metadata keys from a mapping (a sidecar, or a YAML patch's top level).
fn meta_from_map(
    doc: &Document,
    m: &Map<String, Value>,
    strict_keys: bool,
    diags: &mut Diagnostics,
) -> PatchMeta {
    let mut meta = default_meta(doc.file());
    let err = |p: &FieldPath, msg: String, hint: &str| {
        doc.diag(
            Diagnostic::error(codes::KUREL_PATCH_METADATA, msg).with_hint(hint),
            p,
        )
    };
    for (k, v) in m {
        let p = FieldPath::root().key(k);
        let loc = Loc::of(doc, &p);
        match k.as_str() {
            "enabled" => match parse_enabled(v) {
                Ok(e) => {
                    meta.enabled = e;
                    meta.enabled_loc = loc;
                }
                Err(e) => diags.push(doc.diag(
                    Diagnostic::error(codes::KUREL_PATCH_ENABLED, e).with_hint(
                        "use a boolean parameter: enabled: ${monitoring.enabled}; expressions are not supported",
                    ),
                    &p,
                )),
            },
            "description" => match v {
                Value::String(s) => meta.description = Some(s.clone()),
                other => diags.push(err(&p, format!("description must be a string, got {other}"), "quote it")),
            },
            "requires" | "conflicts" => match parse_refs(v, &loc) {
                Ok(r) if k == "requires" => meta.requires = r,
                Ok(r) => meta.conflicts = r,
                Err(e) => diags.push(err(&p, format!("{k} {e}"), "write a list of patch paths, e.g. [features/05-metrics.kpatch]")),
            },
            other if strict_keys => diags.push(err(
                &p,
                format!("unknown patch metadata key {other:?}"),
                "patch metadata has enabled, description, requires and conflicts",
            )),
            _ => {}
        }
    }
    meta
}

fn load_kpatch(
    l: &mut Loader,
    root: &Root,
    f: &Path,
    sidecar: Option<&Path>,
    id: String,
    name: String,
    origin: Origin,
) -> Option<PatchFile> {
    let display = root.display_name(f);
    let text = match root.read_to_string(f, l.limits.max_input_bytes) {
        Ok(t) => t,
        Err(d) => {
            l.diags.push(d);
            return None;
        }
    };
    let file = Arc::new(SourceFile {
        name: display.clone(),
        text,
    });
    l.files.push(file.clone());
    let (ops, header) = match kpatch::parse_kpatch_with_limits(&file, &l.limits) {
        Ok(x) => x,
        Err(ds) => {
            l.diags.extend(ds);
            return None;
        }
    };
    if let Err(ds) = kpatch::within_depth(&ops, &display, l.limits.max_depth) {
        l.diags.extend(ds);
        return None;
    }
    let mut meta = default_meta(&display);
    if let Some(sc) = sidecar {
        let doc = l.read_map(root, sc)?;
        if let Value::Object(m) = &doc.value {
            meta = meta_from_map(&doc, m, true, &mut l.diags);
        }
        if !header.entries.is_empty() {
            l.diags.push(
                Diagnostic::error(
                    codes::KUREL_PATCH_METADATA,
                    format!(
                        "{display} has both a sidecar {} and # kurel: header lines",
                        root.display_name(sc)
                    ),
                )
                .in_file(&display)
                .at_line(header.entries[0].2, None)
                .with_hint("keep the metadata in one place: the sidecar file"),
            );
        }
    } else {
        for (k, v, line) in &header.entries {
            let loc = Loc {
                file: display.clone(),
                line: Some(*line),
                path: None,
            };
            let err = |code, msg: String, hint: &str| {
                loc.place(Diagnostic::error(code, msg).with_hint(hint))
            };
            match k.as_str() {
                "enabled" => match parse_enabled(&Value::String(v.clone())) {
                    Ok(e) => {
                        meta.enabled = e;
                        meta.enabled_loc = loc.clone();
                    }
                    Err(e) => l.diags.push(err(
                        codes::KUREL_PATCH_ENABLED,
                        e,
                        "use a boolean parameter: # kurel:enabled: ${monitoring.enabled}",
                    )),
                },
                "description" => meta.description = Some(v.clone()),
                "requires" | "conflicts" => {
                    let refs = parse_refs(&Value::String(v.clone()), &loc).unwrap_or_default();
                    if k == "requires" {
                        meta.requires.extend(refs);
                    } else {
                        meta.conflicts.extend(refs);
                    }
                }
                other => l.diags.push(err(
                    codes::KUREL_PATCH_METADATA,
                    format!("unknown patch metadata key {other:?}"),
                    "patch metadata has enabled, description, requires and conflicts",
                )),
            }
        }
    }
    Some(PatchFile {
        id,
        name,
        origin,
        file: display,
        meta,
        ops,
    })
}

fn load_yaml_patch(
    l: &mut Loader,
    root: &Root,
    f: &Path,
    id: String,
    name: String,
    origin: Origin,
) -> Option<PatchFile> {
    let display = root.display_name(f);
    let docs = l.read(root, f)?;
    let doc = match docs.len() {
        1 => docs.into_iter().next()?,
        n => {
            l.diags.push(
                Diagnostic::error(
                    codes::KUREL_PATCH_YAML,
                    format!("a YAML patch must hold exactly one document, {display} has {n}"),
                )
                .in_file(&display)
                .with_hint("put each patch in its own file"),
            );
            return None;
        }
    };
    let meta = match &doc.value {
        Value::Object(m) => meta_from_map(&doc, m, false, &mut l.diags),
        _ => default_meta(&display),
    };
    let ops = match kpatch::parse_yaml_patch(&doc) {
        Ok(o) => o,
        Err(ds) => {
            l.diags.extend(ds);
            return None;
        }
    };
    if let Err(ds) = kpatch::within_depth(&ops, &display, l.limits.max_depth) {
        l.diags.extend(ds);
        return None;
    }
    if ops.is_empty() {
        l.diags.push(
            Diagnostic::error(
                codes::KUREL_PATCH_YAML,
                format!("{display} has no patch operations"),
            )
            .in_file(&display)
            .with_hint("add patches: [- target: kind.name, set: {path: value}]"),
        );
    }
    Some(PatchFile {
        id,
        name,
        origin,
        file: display,
        meta,
        ops,
    })
}

/// Find and load `NAME.local.kurel/` next to the package.
fn load_local(l: &mut Loader, dir: &Path, patches: &mut Vec<PatchFile>) -> Option<Local> {
    let canonical = fs::canonicalize(dir).ok()?;
    let base = canonical.file_name()?.to_string_lossy().to_string();
    let stem = base.strip_suffix(".kurel").unwrap_or(&base);
    let local_name = format!("{stem}.local.kurel");
    // The parent as the user wrote it, so diagnostics show familiar paths.
    let parent_display: PathBuf = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() && dir.file_name().is_some() => p.to_path_buf(),
        Some(_) if dir.file_name().is_some() => PathBuf::from("."),
        _ => canonical.parent()?.to_path_buf(),
    };
    let parent_root = Root::new(&parent_display).ok()?;
    if !l.exists(&parent_root, Path::new(&local_name)) {
        return None;
    }
    let display = parent_root.display_name(Path::new(&local_name));
    // Refuses a symlink that leaves the directory holding the package.
    let real = match parent_root.resolve(Path::new(&local_name)) {
        Ok(r) => r,
        Err(d) => {
            l.diags.push(d);
            return None;
        }
    };
    if !real.is_dir() {
        l.diags.push(
            Diagnostic::error(codes::KUREL_LOCAL, format!("{display} is not a directory"))
                .in_file(&display)
                .with_hint("a local extension is a directory holding parameters.yaml and patches/"),
        );
        return None;
    }
    let root = match Root::new(Path::new(&display)).map(|r| r.with_overlay(l.buffers.clone())) {
        Ok(r) => r,
        Err(d) => {
            l.diags.push(d);
            return None;
        }
    };
    for forbidden in ["resources", "kurel.yaml", "manifests"] {
        if l.exists(&root, Path::new(forbidden)) {
            l.diags.push(
                Diagnostic::error(
                    codes::KUREL_LOCAL,
                    format!("a local extension cannot have {forbidden}"),
                )
                .in_file(root.display_name(Path::new(forbidden)))
                .with_hint("a local extension only overrides parameters (parameters.yaml) and adds patches (patches/)"),
            );
        }
    }
    let parameters = if l.exists(&root, Path::new("parameters.yaml")) {
        let doc = l.read_map(&root, Path::new("parameters.yaml"));
        if let Some(d) = &doc {
            if d.value.get("kurel").is_some() {
                l.diags.push(
                    d.diag(
                        Diagnostic::error(
                            codes::KUREL_LOCAL,
                            "a local extension cannot change the package metadata (kurel:)",
                        )
                        .with_hint("remove kurel: from the local parameters.yaml"),
                        &FieldPath::root().key("kurel"),
                    ),
                );
            }
        }
        doc
    } else {
        None
    };
    patches.extend(load_patches(l, &root, Origin::Local));
    Some(Local {
        dir: display,
        parameters,
    })
}

/// A local patch may not have the id of a package patch: it would replace it.
fn check_patch_ids(patches: &[PatchFile], diags: &mut Diagnostics) {
    let mut by_id: BTreeMap<&str, &PatchFile> = BTreeMap::new();
    for p in patches {
        if let Some(first) = by_id.get(p.id.as_str()) {
            if first.origin == Origin::Package && p.origin == Origin::Local {
                diags.push(
                    Diagnostic::error(
                        codes::KUREL_LOCAL,
                        format!(
                            "local patch {} has the same path as package patch {}",
                            p.file, first.file
                        ),
                    )
                    .in_file(&p.file)
                    .with_hint(
                        "a local extension may add patches, never replace the package's: rename it",
                    ),
                );
            }
        } else {
            by_id.insert(&p.id, p);
        }
    }
}
