//! `kiln`: render Kubernetes manifests offline from kro ResourceGraphDefinitions and their
//! instances.
//!
//! Exit codes: 0 success, 1 diagnostics with errors, 2 usage error, 3 internal error (a bug).

#![allow(clippy::result_large_err)]

mod component_cmd;
mod contents;
mod diff_cmd;
mod graph_cmd;
mod kurel_cmd;
mod progress;
mod report;
mod schema_cmd;
mod status_cmd;

use std::os::fd::AsFd;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use kiln_core::layout::Layout;
use kiln_core::output::{self, Format};
use kiln_core::request::{self, Failed, Rendered, Request};
use kiln_core::source::Input;

use report::DiagFormat;

// Rendering allocates many small maps and strings; mimalloc does that several times faster than
// glibc's malloc and does not serialise the worker threads.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "Render Kubernetes manifests offline, at GitOps build time, from kro resource graphs, component types and kurel packages",
    long_about = "kiln renders Kubernetes manifests offline, at GitOps build time, with no controller \
in the cluster, from three kinds of templated definitions:

  kro         ResourceGraphDefinitions and their instances: the objects kro would create
  components  component types (ComponentTypeDefinition, Addons, Components, Workloads,
              per-environment deployments and snapshots; OpenChoreo's ComponentType and
              ReleaseBinding too): a release per environment (--env)
  kurel       packages (NAME.kurel/: parameters, resources, conditional patches, local
              extensions): their manifests

One tree may mix all three with plain manifests, which pass through unchanged (checked against \
their schemas). Inputs are files, directories (read recursively, *.yaml, *.yml, *.json, in sorted \
order) or - for stdin. Output is byte-for-byte deterministic; any error means nothing is written.

The same engine runs behind four executables: kiln (this command line), kiln-krm (a KRM \
function for kustomize and kpt), kiln-cmp (an Argo CD config-management plugin) and kiln-flux \
(a Flux build step). See README.md and docs/.",
    after_long_help = "Examples (from a clone of the repository):
  kiln render examples/webapp
      render a ResourceGraphDefinition and its instances to stdout
  kiln render testdata/render/mixed-tree/tree --env production -o manifests.yaml
      kro, components and kurel packages in one tree, for one environment, into one file
  kiln validate examples/webapp
      every diagnostic, nothing rendered
  kiln schema examples/webapp/rgd.yaml
      the instance CRD kro would create
  kiln graph examples/webapp --format mermaid
      the resource graph as a Mermaid flowchart
  kiln status testdata/strategies/status/rgd.yaml testdata/strategies/status/instances.yaml \\
       --observed testdata/strategies/status/observed
      the status kro would write on each instance, from live objects
  kiln info testdata/kurel/monitoring/shop.kurel
      a kurel package's parameters, resources and patches
  kiln diff examples/webapp --base HEAD
      what the working tree changes in the rendered objects since the last commit

Exit codes: 0 success, 1 errors found (nothing written), 2 usage error, 3 internal error, 141 \
the reader of stdout went away."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args)]
struct Common {
    /// How to print diagnostics on stderr.
    #[arg(long, value_enum, default_value_t = DiagFormat::Human)]
    diagnostics: DiagFormat,
    /// Namespace for instances that set none (as `kubectl -n` or an Argo CD destination would).
    #[arg(long, short = 'n')]
    namespace: Option<String>,
    /// Worker threads for rendering (default: all cores, none besides the main thread for
    /// inputs of at most 32 KiB). Output is identical for any value.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
    /// Directory (or file) of CustomResourceDefinitions used to check templates of those kinds;
    /// nothing else in it is read as input.
    #[arg(long, value_name = "DIR")]
    crds: Option<String>,
    /// Kubernetes version whose built-in schemas check templates and rendered objects: only the
    /// bundled version is available (the text `--help` prints names it).
    #[arg(long, value_name = "MAJOR.MINOR", help = kube_version_help())]
    kube_version: Option<String>,
    // `[redacted]` below is the literal marker kiln prints (also shown by --help), not a doc link.
    #[allow(rustdoc::broken_intra_doc_links)]
    /// Treat the values at PATH as secret: they are printed as [redacted] in diagnostics and
    /// logs (repeatable). Looked up in every input document from its root and its spec
    /// (`spec.password`), in kurel parameters and values (`db.password`), and with a leading
    /// `parameters.` in component parameters; `*` or `[*]` matches any key or index. Values of
    /// Secret objects are always redacted.
    #[arg(long = "secret", value_name = "PATH", value_parser = kiln_core::redact::SecretPath::parse)]
    secret: Vec<kiln_core::redact::SecretPath>,
    /// Change a limit, e.g. `--limit input-bytes=256Mi` (repeatable; names and defaults in
    /// --help).
    #[arg(long = "limit", value_name = "NAME=VALUE",
          value_parser = kiln_core::limits::Setting::parse,
          long_help = kiln_core::limits::help())]
    limit: Vec<kiln_core::limits::Setting>,
}

/// `--kube-version`'s help, naming the bundled version (read from the schemas kiln carries, so
/// the text cannot go stale).
fn kube_version_help() -> String {
    let v = kiln_core::openapi::Schemas::kubernetes_version();
    format!(
        "Kubernetes version whose built-in schemas check templates and rendered objects. kiln \
         bundles the schemas of Kubernetes {v} only: {v} (or {v}.N, any patch) is accepted, any \
         other version is a usage error (exit 2)"
    )
}

impl Common {
    /// The limits of this run: the defaults with every `--limit` applied in order.
    fn limits(&self) -> kiln_core::limits::Limits {
        kiln_core::limits::Limits::with(&self.limit)
    }
}

/// Where and how rendered objects are written.
#[derive(clap::Args)]
struct OutputArgs {
    /// Output format: a YAML stream or a JSON v1/List.
    #[arg(long, value_enum, default_value_t = OutFormat::Yaml)]
    output_format: OutFormat,
    /// Write into this directory instead of stdout (created or replaced as a whole, never left
    /// half-written; only a directory that is missing, empty or written by kiln is replaced); a
    /// name ending in .yaml, .yml or .json is one file (`-o manifests.yaml`), written all at once
    /// the same way, and replaced only when missing, empty or written by kiln (a YAML file starts
    /// with kiln's `# Written by kiln` comment).
    #[arg(long = "output-dir", short = 'o', value_parser = output_dir)]
    output_dir: Option<PathBuf>,
    /// How objects are spread over files with `-o DIR` (`--format`, the kurel design's name, is
    /// the same option).
    #[arg(long, visible_alias = "format", value_enum, default_value_t = LayoutArg::Single, requires = "output_dir")]
    layout: LayoutArg,
}

/// `-o DIR`. kubectl's `-o json` / `-o yaml` choose a format; here `-o` names a directory, and
/// a directory called `json` is almost never what was meant: a bare format name is refused unless
/// such a directory already exists (`-o ./json` names it unambiguously).
fn output_dir(s: &str) -> Result<PathBuf, String> {
    const FORMATS: &[&str] = &[
        "json",
        "yaml",
        "yml",
        "wide",
        "name",
        "jsonpath",
        "go-template",
    ];
    let p = PathBuf::from(s);
    if FORMATS.contains(&s) && !p.is_dir() {
        return Err(format!(
            "-o names the output directory, not a format: for {s} use --output-format {} (or -o ./{s} for a directory named {s})",
            if s == "json" { "json" } else { "yaml" }
        ));
    }
    Ok(p)
}

/// How kro definitions ship, and what the run may read of a cluster.
#[derive(clap::Args)]
struct StrategyArgs {
    /// direct: render every object here. kro: check everything as direct does, then emit the
    /// ResourceGraphDefinitions and the defaulted instances for the in-cluster controller
    /// (component types and kurel packages are still rendered here).
    #[arg(long, value_enum, default_value_t = ModeArg::Direct)]
    mode: ModeArg,
    /// With --mode kro: also emit each RGD's generated instance CRD, first.
    #[arg(long)]
    emit_crds: bool,
    /// With --mode kro: annotate CRDs (wave -2) and RGDs (wave -1) with Argo CD sync waves.
    #[arg(long)]
    sync_waves: bool,
    /// Live objects (a YAML file such as `kubectl get -o yaml` output, or a directory; repeatable):
    /// externalRefs, reads of a resource's status and of the instance's server-set metadata
    /// (metadata.uid, ...) resolve against them.
    #[arg(long, value_name = "PATH")]
    observed: Vec<String>,
    /// Leave out the provenance annotations (kiln.dev/definition, kiln.dev/instance,
    /// kiln.dev/node) that rendered objects otherwise carry.
    #[arg(long)]
    no_provenance: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Direct,
    Kro,
}

impl StrategyArgs {
    fn apply(&self, req: &mut Request) {
        req.mode = match self.mode {
            ModeArg::Direct => request::Mode::Direct,
            ModeArg::Kro => request::Mode::Kro,
        };
        req.emit_crds = self.emit_crds;
        req.sync_waves = self.sync_waves;
        req.observed = self.observed.iter().map(|p| Input::from_arg(p)).collect();
        req.no_provenance = self.no_provenance;
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LayoutArg {
    /// One file, `manifests.yaml`.
    Single,
    /// One file per kind.
    ByKind,
    /// One file per object.
    ByResource,
}

impl Command {
    /// The options every command but `lsp` has.
    fn common(&self) -> Option<&Common> {
        Some(match self {
            Command::Render { common, .. }
            | Command::Validate { common, .. }
            | Command::Graph { common, .. }
            | Command::Status { common, .. }
            | Command::Schema { common, .. }
            | Command::Info { common, .. }
            | Command::Promote { common, .. }
            | Command::Diff { common, .. } => common,
            Command::Snapshot {
                action: SnapshotAction::Create { common, .. },
            } => common,
            Command::Lsp { .. } => return None,
        })
    }

    /// A render or validate whose inputs are small ([`kiln_core::process::small_input`]): every
    /// file it reads counts, the paths' and those of `--values`, `--instances`, `--observed` and
    /// `--crds`; stdin is never known to be small. It gets no worker threads.
    fn is_small(&self) -> bool {
        let (paths, strategy, kurel, common) = match self {
            Command::Render {
                paths,
                strategy,
                kurel,
                common,
                ..
            }
            | Command::Validate {
                paths,
                strategy,
                kurel,
                common,
                ..
            } => (paths, strategy, kurel, common),
            _ => return false,
        };
        let here = [".".to_string()];
        let named = if paths.is_empty() { &here[..] } else { paths };
        let all: Vec<&String> = named
            .iter()
            .chain(&kurel.values)
            .chain(&kurel.instances)
            .chain(&strategy.observed)
            .chain(&common.crds)
            .collect();
        !all.iter().any(|p| *p == "-") && kiln_core::process::small_input(&all)
    }
}

#[derive(Subcommand)]
enum Command {
    /// Render definitions + instances into manifests on stdout.
    Render {
        /// Files or directories to read (or one kurel package directory); `-` reads stdin.
        /// Defaults to the current directory.
        paths: Vec<String>,
        #[command(flatten)]
        out: OutputArgs,
        /// Environment to render components for.
        #[arg(long)]
        env: Option<String>,
        /// A group whose kinds nothing in the run defines but that is meant to pass through
        /// unrendered (repeatable; `*` for every group). Without it, a document of an unknown
        /// kind is an error (KLN1011): it may be an instance whose definition was forgotten.
        #[arg(long = "pass-through", value_name = "GROUP")]
        pass_through: Vec<String>,
        /// Accept inputs that hold no documents at all (an empty result). Without it they are
        /// an error: an empty stream applied by a GitOps tool deletes what it manages.
        #[arg(long)]
        allow_empty: bool,
        #[command(flatten)]
        strategy: StrategyArgs,
        #[command(flatten)]
        kurel: kurel_cmd::KurelArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Check definitions and instances; print every diagnostic found.
    Validate {
        /// Files or directories to read (or one kurel package directory); `-` reads stdin.
        /// Defaults to the current directory.
        paths: Vec<String>,
        /// Environment to check components for.
        #[arg(long)]
        env: Option<String>,
        /// A group whose kinds nothing in the run defines but that is meant to pass through
        /// unrendered (repeatable; `*` for every group). Without it, a document of an unknown
        /// kind is an error (KLN1011): it may be an instance whose definition was forgotten.
        #[arg(long = "pass-through", value_name = "GROUP")]
        pass_through: Vec<String>,
        /// Accept inputs that hold no documents at all (an empty result). Without it they are
        /// an error: an empty stream applied by a GitOps tool deletes what it manages.
        #[arg(long)]
        allow_empty: bool,
        #[command(flatten)]
        strategy: StrategyArgs,
        #[command(flatten)]
        kurel: kurel_cmd::KurelArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Compare the rendered objects of two revisions (or two environments), object by object.
    #[command(
        long_about = "Render the same inputs at two points and compare the objects by identity (group, kind, \
namespace, name): a reordering or a file move is not a change. The base is a revision of the git repository \
holding the paths (--base, default HEAD), read from the repository's objects: nothing is checked out and the \
working tree and index are never touched. The head is the working tree (uncommitted and untracked files \
included) or --head REV. --env and --base-env compare two environments. Values of Secret objects are shown \
only as [redacted] / [redacted, changed].\n\nExit codes: 0 (with or without differences), 1 differences \
with --exit-code, 2 usage error (an unknown revision, a path outside the repository), 4 a side does not \
render (its diagnostics name the side: files of a revision are called REV:path).",
        after_help = "Examples:\n  kiln diff apps/                          # HEAD against the working tree\n  \
kiln diff --base origin/main --format markdown apps/ > comment.md\n  \
kiln diff --base main...HEAD --head HEAD --exit-code apps/\n  \
kiln diff --env prod --base-env staging components/   # what promoting staging to prod changes"
    )]
    Diff {
        #[command(flatten)]
        args: diff_cmd::DiffArgs,
        #[command(flatten)]
        strategy: StrategyArgs,
        #[command(flatten)]
        kurel: kurel_cmd::KurelArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Print the schema a definition induces: the instance CRD of a ResourceGraphDefinition, the
    /// JSON Schema of a ComponentTypeDefinition's or Addon's parameters, or of a kurel package's
    /// parameters.
    Schema {
        /// File or directory holding the definitions, or a kurel package directory.
        path: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = OutFormat::Yaml)]
        output_format: OutFormat,
        #[command(flatten)]
        common: Common,
    },
    /// Describe kurel packages: metadata, parameters, resources and patches (enabled and why)
    ///
    /// The inputs are read as `render` reads them: every kurel package found is described (a YAML
    /// stream, one document per package); what else they hold is named on stderr and skipped.
    Info {
        /// kurel package directories, or files and directories holding packages (as `render`
        /// takes them).
        #[arg(required = true)]
        paths: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Component snapshots.
    Snapshot {
        #[command(subcommand)]
        action: SnapshotAction,
    },
    /// Copy a component's snapshot from one environment to another and commit it with git.
    Promote {
        #[command(flatten)]
        args: component_cmd::PromoteArgs,
        #[command(flatten)]
        common: Common,
    },
    /// Print the status kro would write on each instance, evaluated against observed state:
    /// status fields, state, conditions, and which resources are not ready and why.
    Status {
        /// Files or directories holding the definitions and instances.
        paths: Vec<String>,
        /// Live objects (a YAML file such as `kubectl get -o yaml` output, or a directory;
        /// repeatable).
        #[arg(long, value_name = "PATH", required = true)]
        observed: Vec<String>,
        #[command(flatten)]
        common: Common,
    },
    /// Speak the Language Server Protocol on stdin and stdout: the diagnostics `kiln validate`
    /// gives for the editor's workspace folder as you type, hover, completion, definitions,
    /// references, outlines and quick fixes (docs/editors.md).
    Lsp {
        /// Files or directories of CustomResourceDefinitions that check templates of their
        /// kinds (as `kiln validate --crds`; repeatable).
        #[arg(long, value_name = "PATH")]
        crds: Vec<PathBuf>,
    },
    /// Print the resource graph of each ResourceGraphDefinition.
    Graph {
        /// File or directory holding the definitions.
        path: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = graph_cmd::GraphFormat::Text)]
        format: graph_cmd::GraphFormat,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand)]
enum SnapshotAction {
    /// Write a ComponentEnvSnapshot of a component for an environment.
    Create {
        #[command(flatten)]
        args: component_cmd::SnapshotCreateArgs,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutFormat {
    Yaml,
    Json,
}

fn inputs(paths: &[String]) -> Vec<Input> {
    if paths.is_empty() {
        vec![Input::Path(PathBuf::from("."))]
    } else {
        paths.iter().map(|p| Input::from_arg(p)).collect()
    }
}

/// The request of `kiln render` / `kiln validate`: flags become fields, and nothing else happens
/// here. Paths named on the command line are the user's own (`Request::files` stays `AsGiven`): read
/// as given, `..`, absolute paths and fifos included.
fn request(
    paths: &[String],
    env: Option<&str>,
    pass_through: &[String],
    allow_empty: bool,
    strategy: &StrategyArgs,
    kurel: &kurel_cmd::KurelArgs,
    common: &Common,
) -> Request {
    let limits = common.limits();
    let mut req = Request {
        inputs: inputs(paths),
        environment: env.map(str::to_string),
        values: kurel.values.iter().map(PathBuf::from).collect(),
        sets: kurel.set.clone(),
        instances: kurel.instances.as_ref().map(PathBuf::from),
        namespace: common.namespace.clone(),
        crds: common.crds.iter().map(PathBuf::from).collect(),
        kube_version: common.kube_version.clone(),
        kurel_max_depth: kurel.max_depth.map(usize::from),
        kurel_no_details: !kurel.verbose,
        secrets: common.secret.clone(),
        limits,
        // Warnings are printed with the rendered objects' secrets redacted, then fail the run
        // here (see `report_warnings`).
        strict: false,
        pass_through: pass_through.to_vec(),
        allow_empty,
        ..Request::default()
    };
    strategy.apply(&mut req);
    req
}

/// The request of the commands that read definitions only (`graph`, `schema`).
fn definitions_request(paths: &[String], common: &Common) -> Request {
    Request {
        inputs: inputs(paths),
        namespace: common.namespace.clone(),
        crds: common.crds.iter().map(PathBuf::from).collect(),
        kube_version: common.kube_version.clone(),
        secrets: common.secret.clone(),
        limits: common.limits(),
        ..Request::default()
    }
}

/// Print the diagnostics of a failed run. A run whose only errors are about the request itself
/// (an override with nothing to act on, an unknown Kubernetes version) is a usage error.
fn fail(failed: &Failed, format: DiagFormat) -> ExitCode {
    for d in &failed.extra_documents {
        report::note_document(d.clone());
    }
    report::print(&failed.diagnostics, &failed.files, format);
    let usage = failed
        .diagnostics
        .iter()
        .filter(|d| d.is_error())
        .all(|d| d.code == kiln_core::diag::codes::REQUEST_INVALID);
    ExitCode::from(if usage { 2 } else { 1 })
}

/// Render the request, handing each unit's objects to `finish` on the worker that rendered it.
fn render_request<T, F>(req: &Request, common: &Common, finish: F) -> Result<Rendered<T>, ExitCode>
where
    T: Send,
    F: Fn(Vec<serde_json::Value>) -> Result<T, kiln_core::diag::Diagnostic> + Sync,
{
    let progress = progress::Progress::start();
    let result = request::render_units(req, |objs| {
        progress.unit_done();
        finish(objs)
    });
    progress.finish();
    match result {
        Err(failed) => Err(fail(&failed, common.diagnostics)),
        Ok(r) => {
            for d in &r.extra_documents {
                report::note_document(d.clone());
            }
            Ok(r)
        }
    }
}

/// `kiln render`: a YAML stream on stdout is serialised unit by unit on the workers (the
/// objects never all exist at once); a JSON list or `-o DIR` needs the objects.
fn render_command(
    req: &Request,
    kurel: &kurel_cmd::KurelArgs,
    out: &OutputArgs,
    common: &Common,
) -> ExitCode {
    if out.output_dir.is_none() && out.output_format == OutFormat::Yaml {
        let rendered = match render_request(req, common, |objs| {
            Ok((output::yaml_stream(&objs)?, for_redaction(objs, common)))
        }) {
            Err(code) => return code,
            Ok(r) => r,
        };
        let (texts, kept): (Vec<String>, Vec<Vec<serde_json::Value>>) =
            rendered.units.into_iter().unzip();
        let kept: Vec<serde_json::Value> = kept.into_iter().flatten().collect();
        kurel_cmd::log(
            &rendered.log,
            &rendered.details,
            &kept,
            &rendered.files,
            kurel,
            common,
        );
        if !report_warnings(&rendered.warnings, &rendered.files, common, &kept) {
            return ExitCode::from(1);
        }
        let code = emit_yaml_units(&texts);
        // The process ends here: freeing every parsed document one by one would only add to
        // the latency a GitOps refresh sees.
        kiln_core::process::discard((rendered.files, texts));
        return code;
    }
    let rendered = match render_request(req, common, Ok) {
        Err(code) => return code,
        Ok(r) => r,
    };
    let objects: Vec<serde_json::Value> = rendered.units.into_iter().flatten().collect();
    kurel_cmd::log(
        &rendered.log,
        &rendered.details,
        &objects,
        &rendered.files,
        kurel,
        common,
    );
    deliver(&objects, &rendered.warnings, &rendered.files, out, common)
}

/// `kiln validate`: everything `render` checks, keeping only what redaction needs of the
/// objects.
fn validate_command(req: &Request, kurel: &kurel_cmd::KurelArgs, common: &Common) -> ExitCode {
    let rendered = match render_request(req, common, |objs| Ok(for_redaction(objs, common))) {
        Err(code) => return code,
        Ok(r) => r,
    };
    let kept: Vec<serde_json::Value> = rendered.units.concat();
    kurel_cmd::log(
        &rendered.log,
        &rendered.details,
        &kept,
        &rendered.files,
        kurel,
        common,
    );
    if !rendered.warnings.is_empty() {
        report::note_rendered(&kept);
    }
    report::print(&rendered.warnings, &rendered.files, common.diagnostics);
    if common.strict && !rendered.warnings.is_empty() {
        strict_note(rendered.warnings.len(), common);
        return ExitCode::from(1);
    }
    if common.diagnostics == DiagFormat::Human {
        eprintln!("ok: {}", summary(&rendered));
    }
    ExitCode::SUCCESS
}

/// What `validate` checked, in a line.
fn summary<T>(r: &Rendered<T>) -> String {
    let package = |p: &request::PackageSummary| {
        let what = match (p.applied, p.instances) {
            (Some(applied), _) => format!(
                "{} resource(s), {applied} of {} patch(es) applied",
                p.objects, p.patches
            ),
            (None, n) => format!("{} instance(s), {} resource(s)", n.unwrap_or(0), p.objects),
        };
        format!("package {} {}: {what}", p.name, p.version)
    };
    match r.packages.as_slice() {
        [] => format!("{} document(s) checked", r.documents),
        [one] if r.documents == 0 => package(one),
        many => {
            let mut s = format!("{} document(s) checked", r.documents);
            for p in many {
                s.push_str("; ");
                s.push_str(&package(p));
            }
            s
        }
    }
}

/// The rendered objects redaction must know about once the objects themselves are gone:
/// Secrets, or every object when `--secret` paths are named.
pub(crate) fn for_redaction(
    objects: Vec<serde_json::Value>,
    common: &Common,
) -> Vec<serde_json::Value> {
    if !common.secret.is_empty() {
        return objects;
    }
    objects
        .into_iter()
        .filter(|o| o.get("kind").and_then(serde_json::Value::as_str) == Some("Secret"))
        .collect()
}

/// Print warnings (with the rendered objects' secrets redacted); `false` when `--strict` makes
/// them fail the run.
fn report_warnings(
    warnings: &[kiln_core::diag::Diagnostic],
    files: &[std::sync::Arc<kiln_core::document::SourceFile>],
    common: &Common,
    rendered: &[serde_json::Value],
) -> bool {
    if warnings.is_empty() {
        return true;
    }
    // Rendered Secrets are redacted from what is printed; scanned only when something is.
    report::note_rendered(rendered);
    report::print(warnings, files, common.diagnostics);
    if common.strict {
        strict_note(warnings.len(), common);
    }
    !common.strict
}

/// The line that says why a run with warnings alone failed.
fn strict_note(warnings: usize, common: &Common) {
    if common.diagnostics == DiagFormat::Human {
        eprintln!("error: --strict made the {warnings} warning(s) above fatal");
    }
}

/// Print warnings, then write the objects to stdout or into `-o DIR`. With `--strict`, warnings
/// fail the run and nothing is written. Shared by every front-end.
pub(crate) fn deliver(
    objects: &[serde_json::Value],
    warnings: &[kiln_core::diag::Diagnostic],
    files: &[std::sync::Arc<kiln_core::document::SourceFile>],
    out: &OutputArgs,
    common: &Common,
) -> ExitCode {
    if !report_warnings(warnings, files, common, objects) {
        return ExitCode::from(1);
    }
    if let Some(file) = out
        .output_dir
        .as_deref()
        .filter(|p| kiln_core::layout::is_file_target(p))
    {
        return deliver_file(objects, files, file, out, common);
    }
    if let Some(dir) = &out.output_dir {
        let layout = match out.layout {
            LayoutArg::Single => Layout::Single,
            LayoutArg::ByKind => Layout::ByKind,
            LayoutArg::ByResource => Layout::ByResource,
        };
        let max = common.limits().output_bytes;
        return match kiln_core::layout::write_dir_limited(dir, objects, layout, max) {
            Ok(()) => ExitCode::SUCCESS,
            Err(d) => {
                report::note_rendered(objects);
                report::print(&[d], files, common.diagnostics);
                ExitCode::from(1)
            }
        };
    }
    let format = match out.output_format {
        OutFormat::Yaml => Format::Yaml,
        OutFormat::Json => Format::Json,
    };
    match output::write(objects, format) {
        Ok(text) => emit(&text),
        Err(d) => {
            report::note_rendered(objects);
            report::print(&[d], files, common.diagnostics);
            ExitCode::from(1)
        }
    }
}

/// `-o FILE.yaml` / `-o FILE.json`: the single stream in the format the name says, written all
/// at once. A layout other than `single` or a format that contradicts the name is a usage error.
fn deliver_file(
    objects: &[serde_json::Value],
    files: &[std::sync::Arc<kiln_core::document::SourceFile>],
    file: &std::path::Path,
    out: &OutputArgs,
    common: &Common,
) -> ExitCode {
    let json = file.extension().is_some_and(|e| e == "json");
    if out.layout != LayoutArg::Single {
        eprintln!(
            "error: -o {} names one file; --layout/--format by-kind or by-resource needs a directory (e.g. -o out/)",
            file.display()
        );
        return ExitCode::from(2);
    }
    if !json && out.output_format == OutFormat::Json {
        eprintln!(
            "error: -o {} names a YAML file but --output-format json was given: name it .json",
            file.display()
        );
        return ExitCode::from(2);
    }
    let format = if json { Format::Json } else { Format::Yaml };
    let written = output::write(objects, format).and_then(|text| {
        kiln_core::layout::write_file_limited(file, &text, common.limits().output_bytes)
    });
    match written {
        Ok(()) => ExitCode::SUCCESS,
        Err(d) => {
            report::note_rendered(objects);
            report::print(&[d], files, common.diagnostics);
            ExitCode::from(1)
        }
    }
}

/// The output limit and diagnostics format of this run (set once in `run`), so every command's
/// stdout is checked in [`emit`] without each caller passing them along.
static OUTPUT_LIMIT: std::sync::OnceLock<(usize, DiagFormat)> = std::sync::OnceLock::new();

/// Write everything at once, so an error leaves nothing half-written on stdout. Output over
/// `--limit output-bytes` is not written at all (KLN1009).
pub(crate) fn emit(text: &str) -> ExitCode {
    emit_pieces(&[text])
}

/// [`emit`] for the per-unit YAML streams of a render: the pieces go out through one buffer
/// instead of being joined into one string first (24 MB for 10 000 web-app instances, whose
/// copying and page faults were a serial step at the end of every large run).
pub(crate) fn emit_yaml_units(streams: &[String]) -> ExitCode {
    let pieces: Vec<&str> = output::yaml_pieces(streams).collect();
    emit_pieces(&pieces)
}

/// Check the size of the whole output first, then write its pieces in order.
fn emit_pieces(pieces: &[&str]) -> ExitCode {
    let (limit, format) = OUTPUT_LIMIT
        .get()
        .copied()
        .unwrap_or((kiln_core::limits::DEFAULT_OUTPUT_BYTES, DiagFormat::Human));
    let len = pieces.iter().map(|p| p.len()).sum();
    if let Err(d) = kiln_core::limits::check_output_size(len, limit) {
        report::print(&[d.in_file("<stdout>")], &[], format);
        return ExitCode::from(1);
    }
    // Only a regular file takes it; a failure leaves the writes to report their own errors.
    let _ = kiln_core::process::reserve_file_space(std::io::stdout().as_fd(), len);
    // A closed pipe (`kiln render | head`) is not worth a message, but the reader did not get
    // everything: the exit code says so (`output::EXIT_BROKEN_PIPE`).
    ExitCode::from(output::write_stdout(pieces, 0, |d| {
        format!("error: {}", d.message)
    }))
}

/// Whether stdin is a pipe or a file: data someone meant kiln to read.
fn stdin_is_piped() -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata("/dev/stdin")
        .map(|m| m.file_type().is_fifo() || m.file_type().is_file())
        .unwrap_or(false)
}

fn run(cli: Cli) -> ExitCode {
    // With no path kiln reads the current directory; with data piped in, that is a guess about
    // which of the two was meant, and guessing wrong renders the wrong tree.
    if let Command::Render { paths, .. } | Command::Validate { paths, .. } = &cli.command {
        if paths.is_empty() && stdin_is_piped() {
            eprintln!("error: stdin is piped but no path was given: pass `-` to read stdin, or `.` to render the current directory");
            return ExitCode::from(2);
        }
    }
    // One stdin cannot be read twice.
    if let Command::Render {
        paths, strategy, ..
    }
    | Command::Validate {
        paths, strategy, ..
    } = &cli.command
    {
        if strategy.observed.iter().any(|o| o == "-") && paths.iter().any(|p| p == "-") {
            eprintln!("error: --observed - and the input - both name stdin: give the observed state or the inputs as a file");
            return ExitCode::from(2);
        }
    }
    if let Some(common) = cli.command.common() {
        report::set_secret_paths(&common.secret);
        let _ = OUTPUT_LIMIT.set((common.limits().output_bytes, common.diagnostics));
    }
    match cli.command {
        Command::Lsp { crds } => match kiln_lsp::serve_stdio(crds) {
            Ok(true) => ExitCode::SUCCESS,
            // `exit` without `shutdown`, or the editor went away: 1, as the protocol asks.
            Ok(false) => ExitCode::from(1),
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(1)
            }
        },
        Command::Render {
            paths,
            out,
            env,
            pass_through,
            allow_empty,
            strategy,
            kurel,
            common,
        } => render_command(
            &request(
                &paths,
                env.as_deref(),
                &pass_through,
                allow_empty,
                &strategy,
                &kurel,
                &common,
            ),
            &kurel,
            &out,
            &common,
        ),
        Command::Validate {
            paths,
            env,
            pass_through,
            allow_empty,
            strategy,
            kurel,
            common,
        } => {
            let req = request(
                &paths,
                env.as_deref(),
                &pass_through,
                allow_empty,
                &strategy,
                &kurel,
                &common,
            )
            .for_validation();
            validate_command(&req, &kurel, &common)
        }
        Command::Schema {
            path,
            output_format,
            common,
        } => {
            if kiln_core::kurel::is_package(std::path::Path::new(&path)) {
                return kurel_cmd::schema(&path, output_format, &common);
            }
            schema_cmd::run(&path, output_format, &common)
        }
        Command::Info { paths, common } => kurel_cmd::info(&paths, &common),
        Command::Snapshot {
            action: SnapshotAction::Create { args, common },
        } => component_cmd::snapshot_create(&args, &common),
        Command::Promote { args, common } => component_cmd::promote(&args, &common),
        Command::Diff {
            args,
            strategy,
            kurel,
            common,
        } => diff_cmd::run(&args, &strategy, &kurel, &common),
        Command::Status {
            paths,
            observed,
            common,
        } => status_cmd::run(&paths, &observed, &common),
        Command::Graph {
            path,
            format,
            common,
        } => match request::definitions(&definitions_request(std::slice::from_ref(&path), &common))
        {
            Err(failed) => fail(&failed, common.diagnostics),
            Ok(defs) => graph_cmd::run(&path, &defs, format, &common),
        },
    }
}

// No huge pages, freed memory kept: set before the allocator's first arena.
kiln_core::run_at_load!();

fn main() -> ExitCode {
    kiln_core::process::end(main_run())
}

fn main_run() -> ExitCode {
    // A panic is a bug in kiln, never the user's fault: report it as such, with exit code 3, and
    // without a raw backtrace.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".into());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("error[KLN9001]: internal error: {msg}{at}\n  this is a bug in kiln; please report it with the input that caused it");
    }));
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
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    // Worker threads evaluate nested CEL recursively; give them room.
    kiln_core::process::worker_pool(
        cli.command.common().and_then(|c| c.jobs).map(usize::from),
        cli.command.is_small(),
    );
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(code) => code,
        Err(_) => ExitCode::from(3),
    }
}
