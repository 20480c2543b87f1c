//! `kiln-flux`: see the crate documentation of `kiln_flux`.
#![allow(clippy::result_large_err)]

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use kiln_flux::{inplace, preview, Build, Outcome, Output};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// kiln as a Flux build step: render a tree in place for a Flux source, build a reproducible
/// artifact, preview what a Flux Kustomization would apply. See docs/flux.md.
#[derive(Parser)]
#[command(name = "kiln-flux", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Render a tree in place (PATH), or what a Flux Kustomization would apply (--kustomization).
    Build(Box<BuildArgs>),
    /// Flux's postBuild substitution on stdin, variables from the environment.
    Envsubst {
        /// A variable that is not set (and has no default operator) is an error.
        #[arg(long)]
        strict: bool,
        /// Change a limit, e.g. `--limit input-bytes=256Mi` (repeatable; stdin is read within
        /// `input-bytes`, the output stays within `output-bytes`).
        #[arg(long = "limit", value_name = "NAME=VALUE", value_parser = kiln_core::limits::Setting::parse)]
        limit: Vec<kiln_core::limits::Setting>,
    },
}

#[derive(clap::Args)]
struct BuildArgs {
    /// The tree to render in place.
    path: Option<PathBuf>,
    /// A Flux kustomize.toolkit.fluxcd.io/v1 Kustomization: render its spec.path and show what
    /// Flux would apply (kubectl kustomize with its transformations, then postBuild with
    /// --substitute).
    #[arg(long, value_name = "FILE")]
    kustomization: Option<PathBuf>,
    /// The source's root: the Kustomization's spec.path is resolved inside it and may not
    /// leave it.
    #[arg(long, value_name = "DIR")]
    source_root: Option<PathBuf>,
    /// Write the rendered tree into DIR (new or empty) instead of a stream on stdout.
    #[arg(
        short = 'o',
        long = "output",
        value_name = "DIR",
        conflicts_with = "artifact"
    )]
    output: Option<PathBuf>,
    /// Write the rendered tree as a reproducible .tar.gz; its digest, size and revision are
    /// printed as JSON.
    #[arg(long, value_name = "FILE.tar.gz")]
    artifact: Option<PathBuf>,
    /// The named pointer of the artifact's revision (`REF@sha256:…`): a tag or branch.
    #[arg(long, value_name = "REF", default_value = "latest")]
    revision: String,
    /// Run the Kustomization's postBuild substitution (with --kustomization).
    #[arg(long)]
    substitute: bool,
    /// A directory of ConfigMaps and Secrets that postBuild.substituteFrom names.
    #[arg(long, value_name = "DIR")]
    vars_from: Option<PathBuf>,
    /// Substitute without strict mode (an unset variable is empty), as Flux before 2.9.
    #[arg(long)]
    no_strict_substitution: bool,
    /// Keep rendered objects from substitution: `escape` every `$` (`$${`), or `annotate` with
    /// kustomize.toolkit.fluxcd.io/substitute: disabled.
    #[arg(long, value_name = "HOW", num_args = 0..=1, default_missing_value = "escape",
          value_parser = ["escape", "annotate"])]
    protect: Option<String>,
    /// The environment component releases are rendered for.
    #[arg(long = "env", value_name = "NAME")]
    environment: Option<String>,
    /// Namespace for namespaced objects that set none.
    #[arg(short = 'n', long)]
    namespace: Option<String>,
    /// A kurel values file for the tree's one kurel package (repeatable, later ones win): a path
    /// relative to the tree (PATH, or the Kustomization's spec.path), inside it, such as the
    /// `values/prod.yaml` beside the package.
    #[arg(long = "values", value_name = "FILE")]
    values: Vec<PathBuf>,
    /// A kurel parameter override, `PATH=VALUE` (repeatable), for the tree's one kurel package.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    sets: Vec<String>,
    /// A group whose unknown kinds pass through unrendered (repeatable; `*` for all). Flux's
    /// own groups always pass through.
    #[arg(long = "pass-through", value_name = "GROUP")]
    pass_through: Vec<String>,
    /// Warnings fail the build.
    #[arg(long)]
    strict: bool,
    /// kro: check everything as direct does, then ship the ResourceGraphDefinitions and the
    /// defaulted instances to the in-cluster controller instead of rendering them.
    #[arg(long, value_parser = ["direct", "kro"], default_value = "direct")]
    mode: String,
    /// With --mode kro: also emit each RGD's generated instance CRD, first.
    #[arg(long)]
    emit_crds: bool,
    /// Live objects (a YAML file such as `kubectl get -o yaml` output, or a directory;
    /// repeatable): externalRefs, reads of a resource's status and of the instance's
    /// server-set metadata (metadata.uid, ...) resolve against them.
    #[arg(long, value_name = "PATH")]
    observed: Vec<PathBuf>,
    /// Leave out the kiln.dev/* provenance annotations of rendered objects.
    #[arg(long)]
    no_provenance: bool,
    /// Let kustomizations name remote bases and files (Git and HTTP URLs), which kubectl
    /// fetches unchecked; without it they are refused (KLN1014). Flux allows them unless its
    /// controller runs with --no-remote-bases.
    #[arg(long)]
    allow_remote_bases: bool,
    /// kubectl to run for --kustomization (default: kubectl on PATH).
    #[arg(long, value_name = "PATH")]
    kubectl: Option<PathBuf>,
    /// Change a limit, e.g. `--limit input-bytes=256Mi` (repeatable).
    #[arg(long = "limit", value_name = "NAME=VALUE", value_parser = kiln_core::limits::Setting::parse)]
    limit: Vec<kiln_core::limits::Setting>,
}

// No huge pages, freed memory kept: set before the allocator's first arena.
kiln_core::run_at_load!();

fn main() -> ExitCode {
    kiln_core::process::end(main_run())
}

fn main_run() -> ExitCode {
    // Rendering runs on the workers, recursively: they get the CLI's stacks.
    kiln_core::process::worker_pool(None, false);
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(mut e) => {
            // clap names the argument it refused whole: one of megabytes is quoted by a prefix.
            use clap::error::{ContextKind, ContextValue};
            for kind in [ContextKind::InvalidValue, ContextKind::InvalidArg] {
                if let Some(ContextValue::String(v)) = e.get(kind) {
                    let shown = kiln_core::diag::bounded(v);
                    e.insert(kind, ContextValue::String(shown));
                }
            }
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let out = match cli.command {
        Command::Build(a) => build(*a),
        Command::Envsubst { strict, limit } => {
            // Within the input-bytes limit, as every door reads a stream: a runaway pipe is a
            // diagnostic, not an allocation failure.
            let limits = kiln_core::limits::Limits::with(&limit);
            let max = limits.yaml.max_input_bytes;
            match kiln_core::source::read_limited(std::io::stdin(), "<stdin>", max) {
                Err(d) => Outcome {
                    stderr: format!("kiln-flux: {d}\n"),
                    code: 1,
                    ..Outcome::default()
                },
                Ok(text) => {
                    let vars = std::env::vars_os()
                        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
                        .collect();
                    kiln_flux::envsubst(&text, &vars, strict, limits.output_bytes)
                }
            }
        }
    };
    // A reader that went away (`kiln-flux build . | head -1`): the output is incomplete, so the
    // run failed, but the reader knows; no message (`output::EXIT_BROKEN_PIPE`).
    ExitCode::from(out.print(|d| d.to_string()))
}

fn build(a: BuildArgs) -> Outcome {
    let limits = kiln_core::limits::Limits::with(&a.limit);
    // The time limit of `kubectl kustomize` (docs/flux.md, Limits): the environment, as on
    // kiln-cmp's sidecar, so that a CI job sets it once for every build.
    use kiln_core::kustomize_build::{parse_timeout, TIMEOUT_VARIABLE};
    let timeout = match std::env::var(TIMEOUT_VARIABLE) {
        Ok(v) if !v.is_empty() => match parse_timeout(&v) {
            Ok(t) => Some(t),
            Err(e) => {
                return Outcome {
                    stderr: format!("kiln-flux: {e}\n"),
                    code: 2,
                    ..Outcome::default()
                }
            }
        },
        _ => None,
    };
    let output = match (a.output, a.artifact) {
        (Some(d), _) => Output::Dir(d),
        (None, Some(f)) => Output::Artifact {
            file: f,
            reference: a.revision,
        },
        (None, None) => Output::Stdout,
    };
    let b = Build {
        path: a.path,
        kustomization: a.kustomization,
        source_root: a.source_root,
        output,
        render: inplace::Options {
            request: kiln_core::request::Request {
                environment: a.environment,
                namespace: a.namespace,
                pass_through: kiln_flux::FLUX_GROUPS
                    .iter()
                    .map(|g| g.to_string())
                    .chain(a.pass_through)
                    .collect(),
                strict: a.strict,
                mode: if a.mode == "kro" {
                    kiln_core::request::Mode::Kro
                } else {
                    kiln_core::request::Mode::Direct
                },
                emit_crds: a.emit_crds,
                // The operator's own paths: read as given, not confined to the tree.
                observed: a
                    .observed
                    .into_iter()
                    .map(kiln_core::source::Input::Path)
                    .collect(),
                no_provenance: a.no_provenance,
                limits,
                values: a.values,
                sets: a.sets,
                ..Default::default()
            },
            protect: a.protect.as_deref().and_then(kiln_flux::parse_protect),
            lint: false,
        },
        preview: preview::Options {
            kubectl: a.kubectl,
            substitute: a.substitute,
            vars_from: a.vars_from,
            lenient: a.no_strict_substitution,
            yaml: limits.yaml,
            max_output_bytes: limits.output_bytes,
            allow_remote_bases: a.allow_remote_bases,
            timeout,
        },
    };
    kiln_flux::build(&b)
}
