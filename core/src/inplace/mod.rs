//! Rendering a tree in place (kiln-flux's build, kiln-cmp's kustomize applications): the output tree has the input's file layout, with kiln's inputs
//! replaced by what they render and every other file byte for byte.
//!
//! Per file of the tree:
//!
//! | the file | in the output |
//! | --- | --- |
//! | not a kiln input: not `.yaml`/`.yml`/`.json`, hidden (a path component starts with `.`), or a `kustomization.yaml`/`.yml` | copied byte for byte (a kustomization naming consumed inputs is rewritten, see below) |
//! | only plain manifests (every document passes through) | copied byte for byte |
//! | kro instances (with or without plain manifests) | the same name, holding the file's documents in order, each instance replaced by its objects (the whole file is rewritten by kiln's YAML writer) |
//! | only definitions (ResourceGraphDefinitions, component types, workloads, …) | gone: definitions are consumed |
//! | no documents at all (empty, comments only) | copied byte for byte |
//! | a file in a kurel package directory `NAME/` (or its `NAME.local.kurel/` extension) | gone; the package's objects are in `NAME.yaml` beside the directory |
//!
//! A component release (OpenChoreo style) goes to `STEM.ENV.yaml` beside the file of its
//! `Component` (`STEM.yaml`), one file per component file and environment. Documents of other
//! `openchoreo.dev` kinds that the component front-end passes through (Environment, Project, …)
//! stay in their files, as any pass-through document. A generated name that is already a file of
//! the tree is an error: nothing is overwritten.
//!
//! File names stay, so a `kustomization.yaml` whose `resources:` names `instances.yaml` still
//! finds it, now holding the rendered objects. A kustomization whose `resources` name an input
//! that is gone or moved (a definitions-only file, a kurel package directory, a `Component`'s
//! file) is rewritten to name what the output holds instead, so that the output tree builds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{parse_source_with_warnings, SourceFile};
use crate::flux::{lint, DISABLED, SUBSTITUTE_KEY};
use crate::limits::Limits;
use crate::output;
use crate::request::{self, OriginKind, Request};
use crate::source::Input;
use rayon::prelude::*;
use serde_json::Value;

pub mod tree;

/// How rendered objects are kept from Flux's postBuild substitution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protect {
    /// Escape every `$` so that substitution gives the object back (`$${`).
    Escape,
    /// Add the annotation `kustomize.toolkit.fluxcd.io/substitute: disabled`.
    Annotate,
}

/// Settings of an in-place build.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The render's settings: environment, namespace, pass-through groups, limits, mode, kurel
    /// values (relative to the tree, confined to it as every path of the request) and sets,
    /// provenance, strictness. Its observed state is the operator's own (a path is read as
    /// given, not confined to the tree). The build sets the rest: the inputs (the tree's
    /// files), where they are read (the tree), empty inputs allowed and duplicates per
    /// directory.
    pub request: Request,
    /// Protect rendered objects from substitution.
    pub protect: Option<Protect>,
    /// Report rendered objects that substitution would change (KLN8008 warnings).
    pub lint: bool,
}

/// One file of the output tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutFile {
    /// Its path, relative, `/`-separated.
    pub rel: String,
    /// Its contents.
    pub bytes: Vec<u8>,
    /// Whether it is executable.
    pub executable: bool,
    /// Whether it holds manifests (rendered objects, or documents kiln read and passed through):
    /// what the tree's stream holds. Kustomizations, patches, values files and other files the
    /// tree carries are not.
    pub manifest: bool,
}

/// The output tree.
#[derive(Debug, Default)]
pub struct Built {
    /// Its files, in sorted path order.
    pub files: Vec<OutFile>,
    /// Warnings of the render (and of the safety check).
    pub warnings: Vec<Diagnostic>,
    /// Lines for people (kurel's log).
    pub log: Vec<String>,
}

/// What happens to a file of the tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Copy,
    Input,
    Consumed,
}

/// The observed state the operator named (`--observed`), read here as the operator's own paths
/// (kiln-core's reader, as given): the request confines its paths to the tree, and these are
/// not part of it (a `kubectl get -o yaml` dump in a CI workspace).
fn observed_inputs(named: &[Input], limits: &Limits) -> Result<Vec<Input>, Diagnostics> {
    let loaded = crate::source::load_inputs_with_files(named, &limits.yaml);
    if loaded.diagnostics.has_errors() {
        return Err(loaded.diagnostics);
    }
    Ok(loaded
        .files
        .iter()
        .map(|f| Input::Text {
            name: f.name.clone(),
            text: f.text.clone(),
        })
        .collect())
}

fn is_hidden(rel: &str) -> bool {
    rel.split('/').any(|c| c.starts_with('.'))
}

/// Whether a file name is one kustomize reads as its kustomization (defined with the names, in
/// [`crate::kustomize_paths`]).
pub use crate::kustomize_paths::is_kustomization_file;

/// Whether a file of a tree is never an input, only copied as it is: hidden, a kustomization, or
/// not a manifest by its name.
pub fn is_copied(rel: &str) -> bool {
    is_hidden(rel) || is_kustomization_file(rel) || !is_manifest_name(rel)
}

/// Whether the file is a manifest by its extension (what kiln reads in a directory).
pub fn is_manifest_name(rel: &str) -> bool {
    let base = rel.rsplit('/').next().unwrap_or(rel);
    base.rsplit_once('.')
        .is_some_and(|(_, e)| crate::source::MANIFEST_EXTENSIONS.contains(&e))
}

/// The directories of kurel packages in the tree (in sorted order), and the extensions beside
/// them: what kiln's own walk treats as packages.
fn packages(dir: &Path, files: &[tree::File]) -> (Vec<String>, Vec<String>) {
    let mut dirs = BTreeSet::new();
    for f in files {
        let mut end = 0;
        while let Some(i) = f.rel[end..].find('/') {
            end += i;
            dirs.insert(f.rel[..end].to_string());
            end += 1;
        }
    }
    let mut pkgs: Vec<String> = Vec::new();
    let mut locals: Vec<String> = Vec::new();
    for d in dirs {
        let inside = |list: &[String]| list.iter().any(|p| d.starts_with(&format!("{p}/")));
        if is_hidden(&d) || inside(&pkgs) || inside(&locals) {
            continue;
        }
        if d.ends_with(".local.kurel") {
            locals.push(d);
        } else if crate::kurel::is_package(&dir.join(&d)) {
            pkgs.push(d);
        }
    }
    (pkgs, locals)
}

/// The files of the tree that its kustomizations name as kustomize's own (patches, generator
/// files and configurations, CRDs, replacements): a JSON patch is a YAML list, a strategic merge
/// patch a partial object, so neither is a manifest to render or to check against its kind's
/// schema. Paths the kustomizations name outside the tree are left to the door's own check.
fn kustomize_files(dir: &Path, files: &[tree::File], opts: &Options) -> BTreeSet<String> {
    let mut named = BTreeSet::new();
    let Ok(root) = crate::source::Root::new(dir) else {
        return named;
    };
    let check = crate::kustomize_paths::Options {
        allow_remote: true,
        yaml: opts.request.limits.yaml,
        ..crate::kustomize_paths::Options::default()
    };
    let dirs: BTreeSet<&str> = files
        .iter()
        .filter(|f| is_kustomization_file(&f.rel) && !is_hidden(&f.rel))
        .map(|f| f.rel.rsplit_once('/').map_or("", |(d, _)| d))
        .collect();
    for d in dirs {
        let (_, reach) = crate::kustomize_paths::check_and_reach(&root, Path::new(d), &check);
        named.extend(reach.files);
    }
    named
}

/// Whether a unit passes its input through as it is (the user's own documents).
fn is_passthrough(kind: OriginKind) -> bool {
    matches!(
        kind,
        OriginKind::Passthrough | OriginKind::ComponentPassthrough
    )
}

/// The display name core gives a path of a request confined to `dir`.
fn display_in(dir: &Path, rel: &str) -> String {
    if dir.as_os_str().is_empty() || dir == Path::new(".") {
        rel.to_string()
    } else {
        dir.join(rel).display().to_string()
    }
}

/// Where a component release of `file` for `env` goes: `STEM.ENV.yaml` beside it.
fn release_file(file: &str, env: &str) -> String {
    let (parent, base) = match file.rsplit_once('/') {
        Some((p, b)) => (Some(p), b),
        None => (None, file),
    };
    let stem = base.rsplit_once('.').map_or(base, |(s, _)| s);
    let name = format!("{stem}.{env}.yaml");
    match parent {
        Some(p) => format!("{p}/{name}"),
        None => name,
    }
}

/// A file's units after the safety check, and what the check found.
/// A rendered unit, finished on the worker that rendered it: its objects are not kept.
struct Unit {
    /// Its YAML as the output holds it (protected, when protection is on).
    yaml: String,
    /// Its YAML as rendered, when protection changed it: what a pass-through unit (the user's
    /// own documents, copied as written) writes instead.
    plain: Option<String>,
    /// The safety check's findings (no file yet: the unit's output file is decided later).
    found: Vec<Diagnostic>,
    /// The objects that may hold secret values (a Secret's data, `oc:sensitive` fields): kept
    /// so that a warning never prints a rendered secret.
    secrets: Vec<Value>,
}

impl Unit {
    fn finish(objs: Vec<Value>, opts: &Options) -> Result<Unit, Diagnostic> {
        let (yaml, plain) = match opts.protect {
            None => (output::yaml_stream(&objs)?, None),
            Some(how) => {
                let protected: Vec<Value> = objs
                    .iter()
                    .map(|o| match how {
                        Protect::Escape => lint::escape(o),
                        Protect::Annotate => {
                            let mut o = o.clone();
                            annotate(&mut o);
                            o
                        }
                    })
                    .collect();
                let plain = (protected != objs)
                    .then(|| output::yaml_stream(&objs))
                    .transpose()?;
                (output::yaml_stream(&protected)?, plain)
            }
        };
        let mut found = Vec::new();
        // A protected object is what substitution gives back: nothing to warn about. Every
        // hazard is a `$`, which the YAML holds as written wherever it is (key or value, any
        // scalar style): a unit without one, most of them, is not walked.
        if opts.lint && opts.protect.is_none() && yaml.contains('$') {
            for o in &objs {
                found.extend(lint::diagnostics(o));
            }
        }
        let secrets = crate::redact::kept_for_redaction(plain.as_deref().unwrap_or(&yaml), objs);
        Ok(Unit {
            yaml,
            plain,
            found,
            secrets,
        })
    }

    /// What the output file holds of this unit, and the findings that go with it.
    fn take(self, kind: OriginKind) -> (String, Vec<Diagnostic>) {
        if is_passthrough(kind) {
            (self.plain.unwrap_or(self.yaml), Vec::new())
        } else {
            (self.yaml, self.found)
        }
    }
}

/// Render the tree at `dir` in place. All or nothing: on any error, every diagnostic found.
pub fn build(dir: &Path, files: Vec<tree::File>, opts: &Options) -> Result<Built, Diagnostics> {
    // A package's objects go to NAME.yaml beside its directory, which for the tree's own root
    // would be outside the tree; and walked as a plain tree, its files would be read as
    // manifests (or pass through unrendered). `kiln render DIR` renders it as a package, so the
    // door says what to do rather than build something else.
    if crate::kurel::is_package(dir) {
        return Err(Diagnostics(vec![Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "{} is a kurel package, not a tree that holds one",
                display_in(dir, "").trim_end_matches('/')
            ),
        )
        .in_file(dir.display().to_string())
        .with_hint(
            "build the directory that holds the package: rendered in place, a package's objects \
             go to NAME.yaml beside its directory",
        )]));
    }
    let (pkgs, locals) = packages(dir, &files);
    // The values files beside each package (`values/`): kept as written, never manifests.
    let values: Vec<String> = pkgs
        .iter()
        .map(|p| match p.rsplit_once('/') {
            Some((d, _)) => format!("{d}/{}", crate::source::VALUES_DIR),
            None => crate::source::VALUES_DIR.to_string(),
        })
        .filter(|v| files.iter().any(|f| f.rel.starts_with(&format!("{v}/"))))
        .collect();
    let kustomizes = kustomize_files(dir, &files, opts);
    let in_dir =
        |rel: &str, list: &[String]| list.iter().any(|p| rel.starts_with(&format!("{p}/")));
    let roles: Vec<Role> = files
        .iter()
        .map(|f| {
            if in_dir(&f.rel, &pkgs) || in_dir(&f.rel, &locals) {
                Role::Consumed
            } else if is_copied(&f.rel) || kustomizes.contains(&f.rel) || in_dir(&f.rel, &values) {
                Role::Copy
            } else {
                Role::Input
            }
        })
        .collect();

    let mut diags = Diagnostics::new();
    let mut inputs = Vec::new();
    for (f, role) in files.iter().zip(&roles) {
        if *role != Role::Input {
            continue;
        }
        match std::str::from_utf8(&f.bytes) {
            Ok(t) => inputs.push(Input::Text {
                name: f.rel.clone(),
                text: t.to_string(),
            }),
            Err(e) => diags.push(
                Diagnostic::error(codes::NOT_UTF8, format!("not valid UTF-8: {e}"))
                    .in_file(f.rel.clone())
                    .with_hint("save the file as UTF-8"),
            ),
        }
    }
    if diags.has_errors() {
        return Err(diags);
    }
    inputs.extend(pkgs.iter().map(|p| Input::Path(p.into())));
    let req = Request {
        inputs,
        files: request::Files::Within(dir.to_path_buf()),
        // The tree is the output: files without documents are copied as they are.
        allow_empty: true,
        observed: observed_inputs(&opts.request.observed, &opts.request.limits)?,
        // Each directory is built on its own (an overlay per environment over one base).
        duplicates_per_directory: true,
        ..opts.request.clone()
    };
    let rendered = if req.inputs.is_empty() {
        None
    } else {
        let r = request::render_units(&req, |objs| Unit::finish(objs, opts))
            .map_err(|f| Diagnostics(f.redacted(&[])))?;
        Some(r)
    };

    // Where each unit goes.
    let kurel_names: BTreeMap<String, &String> =
        pkgs.iter().map(|p| (display_in(dir, p), p)).collect();
    let mut warnings = Vec::new();
    let mut log = Vec::new();
    let mut groups: BTreeMap<String, Vec<(OriginKind, String)>> = BTreeMap::new();
    let mut findings: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
    // Which input (a file, or a kurel package directory) each generated file comes from, for
    // the kustomizations that name the input.
    let mut produced: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    // The environments each component file is released to.
    let mut environments: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    if let Some(r) = rendered {
        // Printed by the door as they are: blanked here, like the errors above.
        if !r.warnings.is_empty() {
            let objects: Vec<Value> = r.units.iter().flat_map(|u| u.secrets.clone()).collect();
            warnings.extend(r.redacted_warnings(&[], &objects));
        }
        log.extend(r.log);
        for (unit, origin) in r.units.into_iter().zip(r.origins) {
            let key = match origin.kind {
                OriginKind::Passthrough
                | OriginKind::ComponentPassthrough
                | OriginKind::Instance
                | OriginKind::Definition => origin.file.clone(),
                OriginKind::Component | OriginKind::Project | OriginKind::Resource => {
                    release_file(&origin.file, origin.detail.as_deref().unwrap_or("default"))
                }
                OriginKind::Kurel => {
                    let base = kurel_names
                        .get(&origin.file)
                        .map_or(origin.file.clone(), |p| p.to_string());
                    match &origin.detail {
                        Some(inst) => format!("{base}.{}.yaml", stem_of(inst)),
                        None => format!("{base}.yaml"),
                    }
                }
            };
            let source = match origin.kind {
                OriginKind::Kurel => kurel_names.get(&origin.file).map(|p| p.to_string()),
                OriginKind::Component | OriginKind::Project | OriginKind::Resource => {
                    Some(origin.file.clone())
                }
                _ => None,
            };
            if let Some(src) = source {
                produced.entry(src).or_default().insert(key.clone());
            }
            if let (OriginKind::Component | OriginKind::Project | OriginKind::Resource, Some(env)) =
                (origin.kind, &origin.detail)
            {
                environments
                    .entry(origin.file.clone())
                    .or_default()
                    .insert(env.clone());
            }
            let (yaml, found) = unit.take(origin.kind);
            if !found.is_empty() {
                let file = findings.entry(key.clone()).or_default();
                file.extend(found.into_iter().map(|d| d.in_file(key.clone())));
            }
            groups.entry(key).or_default().push((origin.kind, yaml));
        }
    }

    // The safety check's findings, by output file (pass-through documents are the user's,
    // copied as written: never checked).
    if opts.protect.is_some() || opts.lint {
        for d in findings.into_values().flatten() {
            if d.is_error() {
                diags.push(d);
            } else {
                warnings.push(d);
            }
        }
        if diags.has_errors() {
            return Err(diags);
        }
        if opts.request.strict && !warnings.is_empty() {
            return Err(Diagnostics(request::fatal_in_strict_mode(warnings)));
        }
    }

    let limits = opts.request.limits;
    let input_names: BTreeSet<String> = files
        .iter()
        .zip(&roles)
        .filter(|(_, role)| **role == Role::Input)
        .map(|(f, _)| f.rel.clone())
        .collect();
    let out: Vec<OutFile> = files
        .into_iter()
        .zip(roles)
        .filter(|(_, role)| *role != Role::Consumed)
        .map(|(f, role)| OutFile {
            rel: f.rel,
            bytes: f.bytes,
            executable: f.executable,
            manifest: role == Role::Input,
        })
        .collect();
    let mut result = Vec::with_capacity(out.len() + groups.len());
    // What happens to each file is decided in parallel (a pass-through file is parsed again to
    // count its documents); the rendered text is then moved, not copied, into the output.
    #[derive(Clone, Copy)]
    enum Decision {
        Keep,
        Drop,
        Rendered,
    }
    let decisions: Vec<Result<Decision, Diagnostic>> = out
        .par_iter()
        .map(|f| {
            if !input_names.contains(&f.rel) {
                return Ok(Decision::Keep);
            }
            match groups.get(&f.rel) {
                None => {
                    // No unit: definitions only (consumed), or no documents at all (kept).
                    if document_count(f, &limits)? == 0 {
                        Ok(Decision::Keep)
                    } else {
                        Ok(Decision::Drop)
                    }
                }
                Some(units) => {
                    let all_plain = units.iter().all(|(k, _)| is_passthrough(*k));
                    if all_plain && document_count(f, &limits)? == units.len() {
                        Ok(Decision::Keep)
                    } else {
                        Ok(Decision::Rendered)
                    }
                }
            }
        })
        .collect();
    // What a kustomization's entry for an input becomes: the files the output holds instead.
    let mut replaced: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for p in pkgs.iter().chain(&locals) {
        replaced.insert(
            p.clone(),
            produced.get(p).into_iter().flatten().cloned().collect(),
        );
    }
    for (f, d) in out.into_iter().zip(decisions) {
        let kept = matches!(d, Ok(Decision::Keep | Decision::Rendered));
        if let Some(made) = produced.get(&f.rel) {
            let mut now: Vec<String> = kept.then(|| f.rel.clone()).into_iter().collect();
            now.extend(made.iter().filter(|m| **m != f.rel).cloned());
            replaced.insert(f.rel.clone(), now);
        } else if matches!(d, Ok(Decision::Drop)) {
            replaced.insert(f.rel.clone(), Vec::new());
        }
        match d {
            Ok(Decision::Keep) => result.push(f),
            Ok(Decision::Drop) => {}
            Ok(Decision::Rendered) => {
                let units = groups.remove(&f.rel).unwrap_or_default();
                result.push(OutFile {
                    bytes: joined(units).into_bytes(),
                    rel: f.rel,
                    executable: f.executable,
                    manifest: true,
                });
            }
            Err(d) => diags.push(d),
        }
    }
    // Files kiln generates: component releases, kurel packages, openchoreo pass-through.
    let taken: BTreeSet<&String> = input_names.iter().collect();
    let existing: BTreeSet<String> = result.iter().map(|f| f.rel.clone()).collect();
    for (key, units) in groups {
        if taken.contains(&key) {
            continue;
        }
        if existing.contains(&key) {
            diags.push(
                Diagnostic::error(
                    codes::REQUEST_INVALID,
                    format!("kiln would write its output to {key}, which is already a file of the tree"),
                )
                .in_file(key.clone())
                .with_hint("rename the file: component releases go to STEM.ENV.yaml beside their Component, a kurel package NAME/ to NAME.yaml"),
            );
            continue;
        }
        result.push(OutFile {
            rel: key,
            bytes: joined(units).into_bytes(),
            executable: false,
            manifest: true,
        });
    }
    if diags.has_errors() {
        return Err(diags);
    }
    result.sort_by(|a, b| a.rel.cmp(&b.rel));
    rewrite_kustomizations(&mut result, &replaced, &environments, &limits)?;
    let total: usize = result.iter().map(|f| f.bytes.len()).sum();
    if total > limits.output_bytes {
        diags.push(
            Diagnostic::error(
                codes::OUTPUT_LIMIT,
                format!(
                    "the output tree holds {total} bytes, more than the limit of {}",
                    limits.output_bytes
                ),
            )
            .with_hint(crate::limits::Limit::OutputBytes.hint("build a smaller tree")),
        );
        return Err(diags);
    }
    Ok(Built {
        files: result,
        warnings,
        log,
    })
}

/// Make every kept kustomization name what the output tree holds: an entry of `resources` (or
/// the deprecated `bases`) that names an input kiln consumed or moved is replaced by the files
/// the output holds instead (`replaced`: a definitions-only file by nothing, a kurel package
/// directory by its rendered file, a `Component` file by its release files).
/// A kustomization that needs no change keeps its bytes; one that does is rewritten by kiln's
/// YAML writer (its comments are not kept).
fn rewrite_kustomizations(
    files: &mut [OutFile],
    replaced: &BTreeMap<String, Vec<String>>,
    environments: &BTreeMap<String, BTreeSet<String>>,
    limits: &Limits,
) -> Result<(), Diagnostics> {
    let mut diags = Diagnostics::new();
    for f in files.iter_mut() {
        if is_hidden(&f.rel) || !is_kustomization_file(&f.rel) {
            continue;
        }
        let kdir = f.rel.rsplit_once('/').map_or("", |(d, _)| d);
        let source = Arc::new(SourceFile {
            name: f.rel.clone(),
            text: String::from_utf8_lossy(&f.bytes).into_owned(),
        });
        let mut docs = match parse_source_with_warnings(&source, &limits.yaml) {
            Ok((docs, _)) => docs,
            Err(d) => {
                diags.push(d);
                continue;
            }
        };
        let Some(Value::Object(k)) = docs.first_mut().map(|d| &mut d.value) else {
            continue;
        };
        let mut changed = false;
        for field in ["resources", "bases"] {
            let Some(Value::Array(entries)) = k.get(field) else {
                continue;
            };
            let mut now: Vec<Value> = Vec::with_capacity(entries.len());
            for e in entries {
                let target = e.as_str().and_then(|s| in_tree(kdir, s));
                // One build holding the releases of several environments applies them all.
                if let Some(envs) = target
                    .as_deref()
                    .and_then(|t| environments.get(t))
                    .filter(|envs| envs.len() > 1)
                {
                    let list: Vec<&str> = envs.iter().map(String::as_str).collect();
                    diags.push(
                        Diagnostic::error(
                            codes::REQUEST_INVALID,
                            format!(
                                "{field} names {}, whose components are released to {} environments ({}): built by kustomize, it would hold every environment's release",
                                e.as_str().unwrap_or_default(),
                                list.len(),
                                list.join(", ")
                            ),
                        )
                        .in_file(f.rel.clone())
                        .at(field)
                        .with_hint("choose the environment to render with --env"),
                    );
                }
                match target.as_deref().and_then(|t| replaced.get(t)) {
                    Some(files) => {
                        changed = true;
                        for n in files {
                            let v = Value::String(relative(kdir, n));
                            if !now.contains(&v) {
                                now.push(v);
                            }
                        }
                    }
                    None => now.push(e.clone()),
                }
            }
            k.insert(field.to_string(), Value::Array(now));
        }
        if !changed {
            continue;
        }
        let value = Value::Object(std::mem::take(k));
        match output::to_yaml(&value) {
            Ok(text) => {
                f.bytes = format!(
                    "# Rewritten by kiln: resources name the rendered tree's files.\n{text}"
                )
                .into_bytes()
            }
            Err(d) => diags.push(d.in_file(f.rel.clone())),
        }
    }
    if diags.has_errors() {
        Err(diags)
    } else {
        Ok(())
    }
}

/// The path below the tree that `entry`, written in the kustomization of `kdir`, names; `None`
/// for a remote or absolute entry, or one that leaves the tree.
fn in_tree(kdir: &str, entry: &str) -> Option<String> {
    if crate::kustomize_paths::is_remote(entry) {
        return None;
    }
    crate::kustomize_paths::join_lexically(kdir, entry)
}

/// `file` (below the tree) as a path relative to the directory `from` (below the tree).
fn relative(from: &str, file: &str) -> String {
    let a: Vec<&str> = from.split('/').filter(|c| !c.is_empty()).collect();
    let b: Vec<&str> = file.split('/').filter(|c| !c.is_empty()).collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out: Vec<&str> = vec![".."; a.len() - common];
    out.extend(&b[common..]);
    out.join("/")
}

fn stem_of(file: &str) -> &str {
    let base = file.rsplit('/').next().unwrap_or(file);
    base.rsplit_once('.').map_or(base, |(s, _)| s)
}

/// The units of one file as one stream; a single unit (one instance in its own file, the
/// common GitOps layout) is moved, not copied.
fn joined(units: Vec<(OriginKind, String)>) -> String {
    let mut streams: Vec<String> = units.into_iter().map(|(_, yaml)| yaml).collect();
    if streams.len() == 1 {
        return streams.pop().unwrap_or_default();
    }
    output::join_yaml(&streams)
}

fn annotate(o: &mut Value) {
    if let Some(m) = o.as_object_mut() {
        let meta = m
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(meta) = meta.as_object_mut() {
            let ann = meta
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(SUBSTITUTE_KEY.to_string(), Value::String(DISABLED.into()));
            }
        }
    }
}

fn document_count(f: &OutFile, limits: &Limits) -> Result<usize, Diagnostic> {
    let text = String::from_utf8_lossy(&f.bytes).into_owned();
    let source = Arc::new(SourceFile {
        name: f.rel.clone(),
        text,
    });
    parse_source_with_warnings(&source, &limits.yaml)
        .map(|(docs, _)| crate::document::expand_lists(docs).len())
}

/// The manifests of an output tree as one YAML stream, in path order: every file that holds
/// manifests ([`OutFile::manifest`]: not hidden, not a kustomization, not a file kustomize
/// reads as a patch or a package's values file), its text as written.
pub fn stream(files: &[OutFile]) -> String {
    let mut out = String::new();
    for f in files {
        if !f.manifest {
            continue;
        }
        let text = String::from_utf8_lossy(&f.bytes);
        let mut body: &str = &text;
        // A leading document marker would make an empty document between files.
        if let Some(rest) = body.strip_prefix("---\n") {
            body = rest;
        }
        if body.trim().is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push_str("---\n");
        }
        out.push_str(body);
        if !body.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: sites.example.com
spec:
  schema:
    apiVersion: v1alpha1
    kind: Site
    group: example.com
    spec:
      image: string | required=true
  resources:
    - id: script
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: ${schema.metadata.name}-start
        data:
          start.sh: ${"exec /app --home ${HOME}"}
"#;

    /// One file holding an instance and a plain manifest: a unit of each kind.
    const MIXED: &str = r#"apiVersion: example.com/v1alpha1
kind: Site
metadata:
  name: shop
spec:
  image: shop:1
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  region: ${region}
"#;

    fn built(opts: &Options) -> (String, Vec<Diagnostic>) {
        let dir = tempfile::tempdir().unwrap();
        let files = [("rgd.yaml", RGD), ("sites.yaml", MIXED)]
            .into_iter()
            .map(|(rel, text)| tree::File {
                rel: rel.into(),
                bytes: text.as_bytes().to_vec(),
                executable: false,
            })
            .collect();
        let b = build(dir.path(), files, opts).unwrap();
        let sites = b.files.iter().find(|f| f.rel == "sites.yaml").unwrap();
        (String::from_utf8(sites.bytes.clone()).unwrap(), b.warnings)
    }

    /// Protection and the safety check are for kiln's own output: a document the user wrote,
    /// passed through beside a rendered one in the same file, is copied as written.
    #[test]
    fn protection_and_the_check_leave_pass_through_documents_as_written() {
        let (text, warnings) = built(&Options {
            protect: Some(Protect::Escape),
            ..Options::default()
        });
        assert!(text.contains("--home $${HOME}"), "{text}");
        assert!(text.contains("region: ${region}"), "{text}");
        assert!(warnings.is_empty(), "{warnings:?}");

        let (text, warnings) = built(&Options {
            lint: true,
            ..Options::default()
        });
        assert!(text.contains("--home ${HOME}"), "{text}");
        let found: Vec<String> = warnings.iter().map(|d| d.message.clone()).collect();
        assert_eq!(
            found,
            ["ConfigMap shop-start: this field holds `${`, which Flux postBuild would substitute"],
            "{warnings:?}"
        );
        assert_eq!(warnings[0].file.as_deref(), Some("sites.yaml"));
    }

    /// A unit's objects are not kept past its worker, but those that may hold a secret are:
    /// warnings are blanked against them.
    #[test]
    fn a_unit_keeps_only_the_objects_that_may_hold_secrets() {
        let opts = Options::default();
        let secret = serde_json::json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s"}, "stringData": {"k": "v"}});
        let plain = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c"}, "data": {"k": "v"}});
        let u = Unit::finish(vec![plain.clone(), secret.clone()], &opts).unwrap();
        assert_eq!(u.secrets, [plain.clone(), secret]);
        let u = Unit::finish(vec![plain], &opts).unwrap();
        assert!(u.secrets.is_empty());
    }
}
