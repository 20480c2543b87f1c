//! An application directory with a kustomization: rendered in place, then built by kustomize,
//! as Argo CD's own kustomize source type builds a directory (argo-cd
//! `util/kustomize/kustomize.go`, `Build`: `kustomize build <path>` with `kustomize.buildOptions`
//! appended, load restrictions left at kustomize's default, `LoadRestrictionsRootOnly`).
//!
//! 1. Every file of the checkout is read ([`kiln_core::inplace::tree`]: a symlink leaving the
//!    checkout, or a special file, is refused).
//! 2. The application directory is rendered in place ([`kiln_core::inplace::build`]): kiln's
//!    inputs become the objects they render under the same file names, consumed definitions go,
//!    and every kustomization of the directory is rewritten to name what the rendered tree holds.
//! 3. The rendered directory and the rest of the checkout, byte for byte, are written to a
//!    scratch directory ([`kiln_core::kustomize_build::stage`]).
//! 4. Every path the kustomizations name is checked to stay inside the checkout
//!    ([`kiln_core::kustomize_paths::check`], KLN1002; remote bases KLN1014 unless the sidecar
//!    allows them): kustomize runs on the real disk, and the trust boundary of kiln-cmp is the
//!    checkout. Nothing runs when a path leaves it.
//! 5. kustomize builds the scratch copy of the directory; its objects are the output.

use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::inplace::{self, tree, OutFile};
use kiln_core::kustomize_build::{self, Program};
use kiln_core::kustomize_paths;
use kiln_core::limits::Limits;
use kiln_core::source::{Access, Root};
use serde_json::Value;

use crate::env::Env;
use crate::generate::{normalise, Place, KUSTOMIZATION_NAMES};
use crate::options::Options;
use kiln_core::diag::quote;

/// The kustomization file at the top of the application directory, if any: what makes Argo CD
/// build a directory with kustomize (argo-cd `util/app/discovery`, `IsKustomization`).
pub fn top_kustomization(place: &Place) -> Option<&'static str> {
    let dir = place.root.join(&place.app);
    KUSTOMIZATION_NAMES
        .iter()
        .copied()
        .find(|n| dir.join(n).is_file())
}

/// The program that builds: `KILN_KUSTOMIZE`, else `kustomize`, else `kubectl` on `PATH`.
pub fn program(env: &Env) -> Result<Program, Diagnostic> {
    if let Some(p) = &env.sidecar.kustomize {
        return Ok(Program(PathBuf::from(p)));
    }
    kustomize_build::on_path(&["kustomize", "kubectl"])
        .map(Program)
        .ok_or_else(|| {
            Diagnostic::error(
                codes::REQUEST_INVALID,
                "neither kustomize nor kubectl is on PATH: the application directory has a kustomization to build",
            )
            .in_file("KILN_KUSTOMIZE")
            .with_hint("the kiln sidecar image ships kubectl; on another image install kustomize or kubectl, or set KILN_KUSTOMIZE on the sidecar to its path")
        })
}

/// The diagnostics of a failed run, and the scratch directory they may name.
pub struct Failed {
    /// What went wrong.
    pub diagnostics: Vec<Diagnostic>,
    /// The scratch directory (its path is taken out of the messages).
    pub scratch: Option<PathBuf>,
}

impl From<Vec<Diagnostic>> for Failed {
    fn from(diagnostics: Vec<Diagnostic>) -> Self {
        Failed {
            diagnostics,
            scratch: None,
        }
    }
}

/// What the build gives: the objects, and the render's warnings.
pub struct Built {
    /// kustomize's objects, in its order.
    pub objects: Vec<Value>,
    /// Warnings of the in-place render.
    pub warnings: Vec<Diagnostic>,
}

/// Render the application directory in place and build it with kustomize.
pub fn build(place: &Place, env: &Env, opts: &Options) -> Result<Built, Failed> {
    let limits = Limits::default();
    let max = limits.yaml.max_input_bytes;
    let app_dir = place.root.join(&place.app);
    let in_app = |rel: &str| -> Option<PathBuf> {
        normalise(PathBuf::from(rel)).filter(|_| !Path::new(rel).is_absolute())
    };
    // Values files: relative to the application directory, and inside it (the render's root).
    let mut errs = Vec::new();
    let mut values = Vec::new();
    for v in &opts.values {
        match in_app(v) {
            Some(p) => values.push(p),
            None => errs.push(
                Diagnostic::error(
                    codes::PATH_ESCAPE,
                    format!(
                        "values file {} is outside the application directory",
                        quote(v)
                    ),
                )
                .in_file("ARGOCD_APP_PARAMETERS")
                .with_hint(
                    "with a kustomization, values files are paths inside the application directory",
                ),
            ),
        }
    }
    // Observed state: relative to the application directory, resolved inside the checkout.
    let mut observed = Vec::new();
    let access = Access::within(&place.root).map_err(|d| Failed::from(vec![d]))?;
    for v in &opts.observed {
        let rel = normalise(place.app.join(v)).filter(|_| !Path::new(v).is_absolute());
        match rel.map(|r| access.resolve(&r)) {
            Some(Ok(real)) => observed.push(real),
            Some(Err(d)) => errs.push(d),
            None => errs.push(
                Diagnostic::error(
                    codes::PATH_ESCAPE,
                    format!("observed state {} is outside the repository", quote(v)),
                )
                .in_file("ARGOCD_APP_PARAMETERS")
                .with_hint("observed paths are relative to the application directory, inside the repository"),
            ),
        }
    }
    if !errs.is_empty() {
        return Err(errs.into());
    }
    // The checkout is read once: the application directory's files are rendered, the rest are
    // staged byte for byte for the bases and files the kustomizations name.
    let all = tree::read(&place.root, &place.root, max).map_err(|ds| Failed::from(ds.0))?;
    let app = place.app.display().to_string();
    let (files, others) = split_app(all, &app);
    let mut pass_through = crate::generate::cluster_groups(&env.kube_api_versions);
    pass_through.extend(opts.pass_through.iter().cloned());
    let render = inplace::Options {
        environment: opts.environment.clone(),
        namespace: env.app_namespace.clone(),
        pass_through,
        strict: opts.strict,
        limits,
        protect: None,
        lint: false,
        kro_mode: opts.kro_mode,
        emit_crds: opts.emit_crds,
        observed,
        no_provenance: opts.no_provenance,
        values,
        sets: opts.sets.clone(),
        sync_waves: opts.sync_waves,
    };
    let built = inplace::build(&app_dir, files, &render).map_err(|ds| Failed::from(ds.0))?;
    let scratch = tempfile::Builder::new()
        .prefix("kiln-cmp-")
        .tempdir()
        .map_err(|e| {
            Failed::from(vec![Diagnostic::error(
                codes::IO_READ,
                format!("cannot create a scratch directory: {e}"),
            )
            .with_hint("check the sidecar's /tmp (TMPDIR)")])
        })?;
    let with_scratch = |ds: Vec<Diagnostic>| Failed {
        diagnostics: ds,
        scratch: Some(scratch.path().to_path_buf()),
    };
    kustomize_build::stage(scratch.path(), &place.app, &others, &built.files)
        .map_err(|d| with_scratch(vec![d]))?;
    let root = Root::named(scratch.path(), PathBuf::new()).map_err(|d| with_scratch(vec![d]))?;
    let check = kustomize_paths::Options {
        allow_remote: env.sidecar.allow_remote_bases,
        yaml: limits.yaml,
        ..kustomize_paths::Options::default()
    };
    let escapes = kustomize_paths::check(&root, &place.app, &check);
    if escapes.has_errors() {
        let mut ds = escapes.0;
        for d in &mut ds {
            d.message = d
                .message
                .replace("the source root", "the repository checkout");
            if d.code == codes::PATH_ESCAPE {
                d.hint = Some("kiln-cmp's trust boundary is the repository checkout: every path a kustomization names stays inside it; copy the file into the repository instead of pointing outside".into());
            }
            if d.code == codes::KUSTOMIZE_REMOTE {
                d.hint = Some("kiln-cmp builds from the checkout only; to let kustomizations fetch remote bases, set KILN_ALLOW_REMOTE_BASES=true on the kiln sidecar".into());
            }
        }
        return Err(with_scratch(ds));
    }
    let program = program(env).map_err(|d| with_scratch(vec![d]))?;
    let text = kustomize_build::run(
        &program,
        &scratch.path().join(&place.app),
        scratch.path(),
        &env.sidecar.build_options,
        &app,
        "the application directory, with kiln's inputs rendered in place, is what kustomize builds; fix its kustomization.yaml",
    )
    .map_err(|d| with_scratch(kustomize_build::redacted(vec![d], &[&others, &built.files])))?;
    let docs = kiln_core::document::parse_file("kustomize build", text, &limits.yaml)
        .map_err(|d| with_scratch(vec![d]))?;
    // A ResourceGraphDefinition in kustomize's output came from outside the application
    // directory (one inside is consumed, or in kro mode shipped): kiln did not render it, nor
    // its instances. In kro mode RGDs are meant for the controller.
    if !opts.kro_mode {
        let stray: Vec<Diagnostic> = docs
            .iter()
            .filter(|d| {
                d.kind() == Some("ResourceGraphDefinition")
                    && d.api_version().is_some_and(|v| v.starts_with("kro.run/"))
            })
            .map(|d| {
                Diagnostic::error(
                    codes::REQUEST_INVALID,
                    format!(
                        "kustomize's output holds the ResourceGraphDefinition {}, which kiln did not render: it comes from outside the application directory",
                        quote(d.value.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("?"))
                    ),
                )
                .in_file(app.clone())
                .with_hint("kiln renders the inputs inside the application directory only: move the definitions and their instances into it, or point the Application at a directory that holds them")
            })
            .collect();
        if !stray.is_empty() {
            return Err(with_scratch(stray));
        }
    }
    Ok(Built {
        objects: docs.into_iter().map(|d| d.value).collect(),
        warnings: built.warnings,
    })
}

/// The files of the checkout below the application directory `app` (their paths made relative
/// to it), and the others as they are to be staged.
fn split_app(all: Vec<tree::File>, app: &str) -> (Vec<tree::File>, Vec<OutFile>) {
    if app == "." {
        return (all, Vec::new());
    }
    let prefix = format!("{app}/");
    let mut files = Vec::new();
    let mut others = Vec::new();
    for f in all {
        match f.rel.strip_prefix(&prefix) {
            Some(rel) => files.push(tree::File {
                rel: rel.to_string(),
                ..f
            }),
            None => others.push(OutFile {
                rel: f.rel,
                bytes: f.bytes,
                executable: f.executable,
            }),
        }
    }
    (files, others)
}
