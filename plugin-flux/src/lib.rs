//! `kiln-flux`: kiln as a Flux build step.
//!
//! Flux has no render plugin: what it applies comes from a source artifact (a Git tree, an OCI
//! artifact), built by kustomize-controller with kustomize's builtins and changed by
//! `postBuild` substitution. So kiln runs before Flux, in CI, and this crate is that step:
//!
//! - **`build PATH`** renders a tree in place ([`inplace`]): same file layout, kiln's inputs
//!   replaced by what they render, every other file byte for byte, `kustomization.yaml` kept.
//!   Out as a YAML stream (for `flux push artifact --path=-`), a directory (`-o DIR`), or a
//!   reproducible tarball (`--artifact FILE.tar.gz`, [`artifact`]) with its digest and
//!   revision as JSON shaped like Flux's `status.artifact`.
//! - **`build --kustomization FILE --source-root DIR`** reads a Flux Kustomization
//!   ([`kustomization`]), renders its `spec.path` (confined to the root: it is configuration,
//!   not the user's own path), and shows what Flux would apply ([`preview`]): the real
//!   `kubectl kustomize` over the rendered tree with the Kustomization's transformations,
//!   `postBuild` substitution with `--substitute` (core's engine, `kiln_core::flux`), variables
//!   from `--vars-from DIR` ([`vars`]). Rendered objects that substitution would change are
//!   reported; `--protect` escapes them or marks them with the opt-out annotation.
//! - **`envsubst [--strict]`**: Flux's substitution over stdin, variables from the environment.
//!
//! All or nothing: a failed build writes nothing (stdout empty, no file, no directory).

#![deny(missing_docs)]
// Diagnostics are large by design (file, line, path, hint), as in core.
#![allow(clippy::result_large_err)]

pub mod artifact;
pub mod exclusion;
pub use kiln_core::inplace;
pub mod kustomization;
pub mod preview;
pub use kiln_core::inplace::tree;
pub mod vars;

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::flux::envsubst;
use kiln_core::redact::Secrets;
use kiln_core::vocabulary::Vocabulary;
use kiln_core::{kustomize_build, kustomize_paths, kustomize_reach};

use exclusion::Exclusion;
use inplace::{OutFile, Protect};

/// Groups kiln-flux passes through by default: Flux's own kinds (Kustomization, HelmRelease,
/// sources, alerts, image automation) are what a Flux tree holds besides manifests.
pub const FLUX_GROUPS: &[&str] = &[
    "kustomize.toolkit.fluxcd.io",
    "source.toolkit.fluxcd.io",
    "helm.toolkit.fluxcd.io",
    "notification.toolkit.fluxcd.io",
    "image.toolkit.fluxcd.io",
    "source.extensions.fluxcd.io",
];

/// What a run prints and its exit code (0 success, 1 failure, 2 usage); stdout is bytes, for
/// an artifact written there.
pub type Outcome = kiln_core::output::Outcome<Vec<u8>>;

/// Where a build's tree goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Output {
    /// A YAML stream on stdout (with `--kustomization`: what Flux would apply).
    Stdout,
    /// A directory, which must not exist or be empty.
    Dir(PathBuf),
    /// A reproducible `.tar.gz`; `reference` names the revision (`<reference>@sha256:…`).
    Artifact {
        /// The file.
        file: PathBuf,
        /// The named pointer of the revision (a tag or branch).
        reference: String,
    },
}

/// A `build` request.
#[derive(Debug, Clone)]
pub struct Build {
    /// The tree to render in place (`build PATH`).
    pub path: Option<PathBuf>,
    /// A Flux Kustomization file (`--kustomization`).
    pub kustomization: Option<PathBuf>,
    /// The source root its `spec.path` stays in (`--source-root`).
    pub source_root: Option<PathBuf>,
    /// Where the result goes.
    pub output: Output,
    /// Rendering settings.
    pub render: inplace::Options,
    /// Preview settings (with `--kustomization`).
    pub preview: preview::Options,
}

fn report(ds: &[Diagnostic], secrets: &Secrets) -> String {
    let mut s = String::new();
    for d in ds {
        s.push_str(&secrets.redact_diagnostic(&door_hint(d)).to_string());
        s.push('\n');
    }
    s
}

/// kiln-flux's words for the `kiln` flags core's hints name: its own options have the CLI's
/// names, except `--crds` (a Flux tree's CRDs are files of the tree).
pub fn vocabulary() -> Vocabulary {
    Vocabulary::new([("--crds", "a file of the tree")]).phrases([
        (" to the inputs (or --crds)", " to the tree"),
        (" (or --crds)", ""),
    ])
}

/// The diagnostic in kiln-flux's words ([`vocabulary`]); the substitution check's fix is
/// kiln-flux's `--protect`.
pub fn door_hint(d: &Diagnostic) -> Diagnostic {
    let mut d = vocabulary().speak(d.clone());
    if d.code == codes::FLUX_UNESCAPED {
        d.hint = Some(format!(
            "build with --protect (escapes it: `$${{` for `${{`) or --protect=annotate (adds {}: {}), or escape it in the source",
            kiln_core::flux::SUBSTITUTE_KEY,
            kiln_core::flux::DISABLED
        ));
    }
    d
}

fn failed(ds: &[Diagnostic], secrets: &Secrets) -> Outcome {
    Outcome {
        stderr: report(ds, secrets),
        code: 1,
        ..Outcome::default()
    }
}

fn usage(msg: &str) -> Outcome {
    Outcome {
        stderr: format!("kiln-flux: {msg}\n(see kiln-flux build --help)\n"),
        code: 2,
        ..Outcome::default()
    }
}

/// Run a build.
pub fn build(b: &Build) -> Outcome {
    let none = Secrets::default();
    match (&b.path, &b.kustomization, &b.source_root) {
        (Some(_), Some(_), _) => usage("give either PATH or --kustomization, not both"),
        (None, None, _) => {
            usage("give the tree to build (PATH), or --kustomization FILE with --source-root DIR")
        }
        (None, Some(_), None) => {
            usage("--kustomization needs --source-root DIR: the directory its spec.path is inside")
        }
        (Some(_), None, Some(_)) => usage("--source-root goes with --kustomization"),
        (Some(path), None, None) => {
            if let Some(d) = artifact_inside(&b.output, path) {
                return failed(&[d], &none);
            }
            // The tree is the artifact's root: its own `.sourceignore` files decide.
            let max = b.render.request.limits.yaml.max_input_bytes;
            let (exclusion, mut warnings) = match Exclusion::load(path, max) {
                Ok(x) => x,
                Err(ds) => return failed(&ds, &none),
            };
            let files = match exclusion.read_tree(path, max) {
                Ok(f) => f,
                Err(ds) => return failed(&ds, &none),
            };
            let outside =
                kustomize_reach::check_tree(path, &files, &preview::check_options(&b.preview));
            if outside.has_errors() {
                let mut ds = outside.0;
                for d in &mut ds {
                    d.message = d.message.replace("the source root", "the tree");
                    if d.code == codes::PATH_ESCAPE {
                        d.hint = Some(format!(
                            "`build {}` renders that tree alone, and Flux would not find what the kustomization names outside it; build the directory that holds both (e.g. the repository root), or use --kustomization with --source-root",
                            path.display()
                        ));
                    }
                }
                return failed(&ds, &none);
            }
            let read: BTreeSet<String> = files.iter().map(|f| f.rel.clone()).collect();
            // An artifact is what a Flux Kustomization applies, with postBuild substitution if
            // it has any: rendered objects that hold `${` are named (kiln cannot see the
            // Kustomization here; --protect escapes them).
            let mut render = b.render.clone();
            render.lint |= matches!(b.output, Output::Artifact { .. });
            let built = match inplace::build(path, files, &render) {
                Ok(built) => built,
                Err(ds) => return failed(&ds.0, &none),
            };
            let (kept, dropped) = match exclusion.keep(path, built.files, &read) {
                Ok(k) => k,
                Err(ds) => return failed(&ds, &none),
            };
            if let Some(o) = strict_failure(b, &warnings, &dropped) {
                return o;
            }
            warnings.extend(built.warnings);
            warnings.extend(dropped);
            let mut o = write_out(&kept, &b.output);
            o.stderr = report(&warnings, &none) + &o.stderr;
            o
        }
        (None, Some(kfile), Some(root)) => build_kustomization(b, kfile, root),
    }
}

fn build_kustomization(b: &Build, kfile: &Path, root: &Path) -> Outcome {
    let none = Secrets::default();
    let limits = &b.render.request.limits;
    let name = kfile.display().to_string();
    let text = match std::fs::read_to_string(kfile) {
        Ok(t) => t,
        Err(e) => {
            return failed(
                &[
                    Diagnostic::error(codes::IO_READ, format!("cannot read: {e}"))
                        .in_file(name)
                        .with_hint("name the file holding the Flux Kustomization"),
                ],
                &none,
            )
        }
    };
    let k = match kustomization::parse(&name, &text, &limits.yaml) {
        Ok(k) => k,
        Err(ds) => return failed(&ds.0, &none),
    };
    // spec.path is configuration: it is resolved inside the source root and may not leave it.
    let access = match kiln_core::source::Access::within(root) {
        Ok(a) => a,
        Err(d) => return failed(&[d], &none),
    };
    let spec_path = PathBuf::from(k.path.as_deref().filter(|p| !p.is_empty()).unwrap_or("."));
    let real = match access.resolve(&spec_path) {
        Ok(r) => r,
        Err(d) => {
            let d = Diagnostic {
                file: Some(name.clone()),
                path: Some("spec.path".into()),
                line: None,
                ..d
            }
            .with_hint(format!(
                "spec.path is resolved inside --source-root {} and may not leave it (no `..`, no absolute path, no symlink out), nor name version-control data",
                root.display()
            ));
            return failed(&[d], &none);
        }
    };
    if !real.is_dir() {
        return failed(
            &[Diagnostic::error(
                codes::IO_READ,
                format!("spec.path {} is not a directory", spec_path.display()),
            )
            .in_file(name)
            .at("spec.path")
            .with_hint("spec.path names a directory of the source")],
            &none,
        );
    }
    let croot = match std::fs::canonicalize(root) {
        Ok(c) => c,
        Err(e) => {
            return failed(
                &[
                    Diagnostic::error(codes::IO_READ, format!("cannot read: {e}"))
                        .in_file(root.display().to_string()),
                ],
                &none,
            )
        }
    };
    let spec_rel = real
        .strip_prefix(&croot)
        .unwrap_or(Path::new(""))
        .to_path_buf();
    if let Some(d) = artifact_inside(&b.output, &real) {
        return failed(&[d], &none);
    }
    // source-controller archives the whole source: the root's `.sourceignore` files decide. The
    // source is read once; what spec.path's kustomization reaches (bases and components
    // elsewhere in the source, the Kustomization's own components) is rendered in place, as
    // Flux would build it.
    let max = limits.yaml.max_input_bytes;
    let (exclusion, mut ignore_warnings) = match Exclusion::load(root, max) {
        Ok(x) => x,
        Err(ds) => return failed(&ds, &none),
    };
    let all = match exclusion.read_tree(root, max) {
        Ok(f) => f,
        Err(ds) => return failed(&ds, &none),
    };
    let read: BTreeSet<String> = all.iter().map(|f| f.rel.clone()).collect();
    let mut render = b.render.clone();
    render.lint = k.post_build.is_some();
    let check = preview::check_options(&b.preview);
    let prepared = match kustomize_reach::prepare(
        root,
        root,
        &spec_rel,
        &k.components,
        all,
        &render,
        &check,
    ) {
        Ok(p) => p,
        Err(ds) => return failed(&ds.0, &none),
    };
    let reach = prepared.reach.clone();
    let (kept, dropped) = match exclusion.keep(root, prepared.files, &read) {
        Ok(k) => k,
        Err(ds) => return failed(&ds, &none),
    };
    // Flux finds no such path in its artifact ("kustomization path not found").
    let under = |rel: &str| kustomize_paths::is_under(rel, &spec_rel.to_string_lossy());
    if !kept.iter().any(|f| under(&f.rel)) && read.iter().any(|r| under(r)) {
        return failed(
            &[Diagnostic::error(
                codes::SOURCE_IGNORED,
                format!(
                    "Flux's artifact holds nothing under spec.path {}: its {} patterns (or source-controller's defaults) leave every file out",
                    spec_path.display(),
                    kiln_core::flux::sourceignore::IGNORE_FILE
                ),
            )
            .in_file(name)
            .at("spec.path")
            .with_hint("change the .sourceignore patterns, or spec.path")],
            &none,
        );
    }
    if let Some(o) = strict_failure(b, &ignore_warnings, &dropped) {
        return o;
    }
    ignore_warnings.extend(prepared.warnings);
    ignore_warnings.extend(dropped);
    let warnings = report(&ignore_warnings, &none);
    if b.output != Output::Stdout {
        // The tree Flux receives: the source's files this Kustomization's build reads, at their
        // paths, so that its spec.path builds from the artifact as it does from the source.
        if let Some(d) = artifact_reached(&b.output, root, &reach) {
            return failed(&[d], &none);
        }
        let mut o = write_out(&kept, &b.output);
        o.stderr = warnings + &o.stderr;
        return o;
    }
    let prepared = kustomize_reach::Prepared {
        files: kept,
        reach,
        defined: prepared.defined,
        warnings: Vec::new(),
        log: prepared.log,
    };
    let kubectl = match preview::find_kubectl(b.preview.kubectl.as_deref()) {
        Ok(k) => kustomize_build::Program(k),
        Err(d) => return failed(&[d], &none),
    };
    let args = preview::kubectl_args();
    let build = kustomize_reach::Build {
        program: &kubectl,
        args: &args,
        check: &check,
        kro_mode: b.render.request.mode == kiln_core::request::Mode::Kro,
        hint: preview::BUILD_HINT,
        origins: true,
        bounds: kustomize_build::Bounds::new(
            &b.render.request.limits,
            b.preview
                .timeout
                .unwrap_or(kustomize_build::DEFAULT_TIMEOUT),
        ),
    };
    let yaml = b.preview.yaml;
    let docs = match kustomize_reach::build(root, &spec_rel, &prepared, &build, |dir| {
        preview::write_overlay(dir, &k, &yaml)
    }) {
        Ok(d) => d,
        Err(ds) => {
            let mut o = failed(&ds.0, &none);
            o.stderr = warnings + &o.stderr;
            return o;
        }
    };
    match preview::after_build(docs, &k, &b.preview, b.render.protect) {
        Err(f) => {
            let ds = kustomize_build::redacted(f.diagnostics, &[&prepared.files]);
            let mut o = failed(&ds, &f.secrets);
            o.stderr = warnings + &o.stderr;
            o
        }
        Ok(p) => match kiln_core::output::yaml_stream(&p.objects) {
            Ok(s) => Outcome {
                stdout: s.into_bytes(),
                stderr: warnings + &report(&p.warnings, &none),
                code: 0,
            },
            Err(d) => failed(&[d], &none),
        },
    }
}

/// An artifact written into a directory the build reads would be packed by the next build.
fn artifact_reached(
    output: &Output,
    root: &Path,
    reach: &kustomize_paths::Reach,
) -> Option<Diagnostic> {
    let Output::Artifact { file, .. } = output else {
        return None;
    };
    let croot = std::fs::canonicalize(root).ok()?;
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).ok()?;
    let rel = dir.strip_prefix(&croot).ok()?;
    let name = file.file_name()?.to_string_lossy();
    let rel = rel.join(&*name).to_string_lossy().replace('\\', "/");
    reach.holds(&rel).then(|| {
        Diagnostic::error(
            codes::REQUEST_INVALID,
            "the artifact would be written inside the tree it packs: the next build would pack it too, and its digest would change every time",
        )
        .in_file(file.display().to_string())
        .with_hint("write the artifact outside the directories the Kustomization's build reads, e.g. into a build directory")
    })
}

/// With `--strict`, the warnings of the artifact's rules fail the build as the render's do.
fn strict_failure(b: &Build, reading: &[Diagnostic], dropped: &[Diagnostic]) -> Option<Outcome> {
    if !b.render.request.strict || (reading.is_empty() && dropped.is_empty()) {
        return None;
    }
    let all: Vec<Diagnostic> = reading.iter().chain(dropped).cloned().collect();
    Some(failed(&all, &Secrets::default()))
}

/// An artifact written inside the tree it packs would be packed by the next build: every build
/// would then give a new digest (and carry every earlier artifact). Refused, before anything is
/// read.
fn artifact_inside(output: &Output, tree: &Path) -> Option<Diagnostic> {
    let Output::Artifact { file, .. } = output else {
        return None;
    };
    let tree = std::fs::canonicalize(tree).ok()?;
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = std::fs::canonicalize(parent).ok()?;
    dir.starts_with(&tree).then(|| {
        Diagnostic::error(
            codes::REQUEST_INVALID,
            "the artifact would be written inside the tree it packs: the next build would pack it too, and its digest would change every time",
        )
        .in_file(file.display().to_string())
        .with_hint("write the artifact outside the tree, e.g. --artifact ../m.tar.gz or into a build directory")
    })
}

/// Write the output tree where `output` says.
pub fn write_out(files: &[OutFile], output: &Output) -> Outcome {
    match output {
        Output::Stdout => Outcome {
            stdout: inplace::stream(files).into_bytes(),
            ..Outcome::default()
        },
        Output::Dir(d) => match write_dir(files, d) {
            Ok(()) => Outcome::default(),
            Err(d) => failed(&[d], &Secrets::default()),
        },
        Output::Artifact { file, reference } => {
            let entries: Vec<artifact::Entry<'_>> = files
                .iter()
                .map(|f| artifact::Entry {
                    path: &f.rel,
                    bytes: &f.bytes,
                    executable: f.executable,
                })
                .collect();
            let gz = match artifact::tar_gz(&entries) {
                Ok(t) => t,
                Err(e) => {
                    return failed(
                        &[Diagnostic::error(codes::REQUEST_INVALID, format!("cannot archive {:?}: {}", e.path, e.why))
                            .with_hint("this is a bug in kiln-flux: a tree's paths are always archivable; please report it")],
                        &Secrets::default(),
                    )
                }
            };
            if let Err(e) = artifact::write_atomically(file, &gz) {
                return failed(
                    &[
                        Diagnostic::error(
                            codes::IO_READ,
                            format!("cannot write the artifact: {e}"),
                        )
                        .in_file(file.display().to_string())
                        .with_hint("check that the directory exists and is writable"),
                    ],
                    &Secrets::default(),
                );
            }
            let status = artifact::Status::of(&gz, &file.display().to_string(), reference);
            let mut s = serde_json::to_string_pretty(&status.to_json()).expect("JSON");
            s.push('\n');
            Outcome {
                stdout: s.into_bytes(),
                ..Outcome::default()
            }
        }
    }
}

/// Write the tree into `dir` (absent or empty): built beside it, then renamed into place.
fn write_dir(files: &[OutFile], dir: &Path) -> Result<(), Diagnostic> {
    let shown = dir.display().to_string();
    let io = |e: std::io::Error| {
        Diagnostic::error(
            codes::IO_READ,
            format!("cannot write the output directory: {e}"),
        )
        .in_file(shown.clone())
        .with_hint("check that its parent exists and is writable")
    };
    if dir.exists() {
        let empty = std::fs::read_dir(dir).map_err(io)?.next().is_none();
        if !empty {
            return Err(Diagnostic::error(codes::REQUEST_INVALID, "the output directory exists and is not empty")
                .in_file(shown)
                .with_hint("name a new or empty directory: kiln-flux replaces nothing, so no stale file survives a build"));
        }
    }
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let tmp = tempfile::Builder::new()
        .prefix(".kiln-flux-")
        .tempdir_in(&parent)
        .map_err(io)?;
    for f in files {
        let p = tmp.path().join(&f.rel);
        if let Some(par) = p.parent() {
            std::fs::create_dir_all(par).map_err(io)?;
        }
        std::fs::write(&p, &f.bytes).map_err(io)?;
        #[cfg(unix)]
        if f.executable {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).map_err(io)?;
        }
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o755)).map_err(io)?;
    }
    let kept = tmp.keep();
    std::fs::rename(&kept, dir).map_err(|e| {
        let _ = std::fs::remove_dir_all(&kept);
        io(e)
    })
}

/// `envsubst`: Flux's substitution over `text` with `vars` (the environment). Strict: an unset
/// variable without a default operator is an error. The output (and what is built on the way)
/// stays within `max_output_bytes` (`--limit output-bytes`). Output only on success.
pub fn envsubst(
    text: &str,
    vars: &HashMap<String, String>,
    strict: bool,
    max_output_bytes: usize,
) -> Outcome {
    let opts = envsubst::Options {
        strict,
        max_output_bytes,
    };
    match envsubst::substitute(text, vars, &opts) {
        Ok(s) => Outcome {
            stdout: s.into_bytes(),
            ..Outcome::default()
        },
        Err(e) => {
            let code = match e.kind {
                envsubst::ErrorKind::Unset(_) => codes::FLUX_VARIABLE_UNSET,
                envsubst::ErrorKind::Syntax(_) => codes::FLUX_SUBSTITUTION_SYNTAX,
                envsubst::ErrorKind::TooLarge(_) | envsubst::ErrorKind::TooMuchWork => {
                    codes::FLUX_SUBSTITUTION_LIMIT
                }
                envsubst::ErrorKind::NotUtf8 => codes::FLUX_SUBSTITUTION_RESULT,
            };
            let before = &text.as_bytes()[..e.offset.min(text.len())];
            let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
            let column = before.iter().rev().take_while(|&&b| b != b'\n').count() + 1;
            let hint = match e.kind {
                envsubst::ErrorKind::TooLarge(_) => "check the substitutions that repeat large values or replace text (${v//p/r}); raise the output limit with --limit output-bytes=SIZE if the output is meant to be this large".to_string(),
                _ => "write a literal `${` as `$${`; a default (`${NAME:=value}`) covers a variable that may be unset".to_string(),
            };
            let d = Diagnostic::error(code, e.to_string())
                .in_file("<stdin>")
                .at_line(line, Some(column))
                .with_hint(hint);
            // Messages name variables, never their values.
            failed(&[d], &Secrets::default())
        }
    }
}

/// Protection mode from its command-line name.
pub fn parse_protect(s: &str) -> Option<Protect> {
    match s {
        "escape" => Some(Protect::Escape),
        "annotate" => Some(Protect::Annotate),
        _ => None,
    }
}
