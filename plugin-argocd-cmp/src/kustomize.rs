//! An application directory with a kustomization: what it reaches rendered in place, then built
//! by kustomize, as Argo CD's own kustomize source type builds a directory (argo-cd
//! `util/kustomize/kustomize.go`, `Build`: `kustomize build <path>` with `kustomize.buildOptions`
//! appended, load restrictions left at kustomize's default, `LoadRestrictionsRootOnly`).
//!
//! 1. Every file of the checkout is read ([`kiln_core::inplace::tree`]: a symlink leaving the
//!    checkout, or a special file, is refused).
//! 2. What the application's kustomization reaches (the application directory, and the bases
//!    and components it names elsewhere in the checkout, `../../base`) is rendered in place as
//!    one run, every path it names checked to stay inside the checkout (KLN1002; remote bases
//!    KLN1014 unless the sidecar allows them), and kustomize builds the result in a scratch
//!    copy ([`kiln_core::kustomize_reach`], shared with kiln-flux). A definition or instance
//!    kind in kustomize's output that kiln did not render is an error.

use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic, Diagnostics};
use kiln_core::inplace::{self, tree};
use kiln_core::kustomize_build::{self, Program};
use kiln_core::kustomize_paths;
use kiln_core::kustomize_reach;
use kiln_core::limits::Limits;
use kiln_core::source::{Access, Input};
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
    // The checkout is read once; what the application's kustomization reaches (the
    // application directory, and bases and components elsewhere in the checkout) is rendered in
    // place, and kustomize builds the result.
    let all = tree::read(&place.root, &place.root, max).map_err(|ds| Failed::from(ds.0))?;
    let mut pass_through = crate::generate::cluster_groups(&env.kube_api_versions);
    pass_through.extend(opts.pass_through.iter().cloned());
    let render = inplace::Options {
        request: kiln_core::request::Request {
            environment: opts.environment.clone(),
            namespace: env.app_namespace.clone(),
            pass_through,
            strict: opts.strict,
            limits,
            mode: if opts.kro_mode {
                kiln_core::request::Mode::Kro
            } else {
                kiln_core::request::Mode::Direct
            },
            emit_crds: opts.emit_crds,
            observed: observed.into_iter().map(Input::Path).collect(),
            no_provenance: opts.no_provenance,
            values,
            sets: opts.sets.clone(),
            sync_waves: opts.sync_waves,
            ..Default::default()
        },
        protect: None,
        lint: false,
    };
    let check = kustomize_paths::Options {
        allow_remote: env.sidecar.allow_remote_bases,
        yaml: limits.yaml,
        ..kustomize_paths::Options::default()
    };
    let in_checkout = |ds: Diagnostics| Failed::from(in_checkout_words(ds.0));
    let prepared = kustomize_reach::prepare(
        &place.root,
        Path::new(""),
        &place.app,
        &[],
        all,
        &render,
        &check,
    )
    .map_err(in_checkout)?;
    let program = program(env).map_err(|d| Failed::from(vec![d]))?;
    let build = kustomize_reach::Build {
        program: &program,
        args: &env.sidecar.build_options,
        check: &check,
        kro_mode: opts.kro_mode,
        hint: "the application directory, with kiln's inputs rendered in place, is what kustomize builds; fix its kustomization.yaml",
        origins: false,
        bounds: kustomize_build::Bounds::new(
            &limits,
            env.sidecar
                .kustomize_timeout
                .unwrap_or(kustomize_build::DEFAULT_TIMEOUT),
        ),
    };
    let docs = kustomize_reach::build(Path::new(""), &place.app, &prepared, &build, |_| Ok(()))
        .map_err(in_checkout)?
        .docs;
    Ok(Built {
        objects: docs.into_iter().map(|d| d.value).collect(),
        warnings: prepared.warnings,
    })
}

/// The path check's words for kiln-cmp: its root is the repository checkout.
fn in_checkout_words(mut ds: Vec<Diagnostic>) -> Vec<Diagnostic> {
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
    ds
}
