//! `kiln`: render Kubernetes manifests offline from kro ResourceGraphDefinitions and their
//! instances.
//!
//! Exit codes: 0 success, 1 diagnostics with errors, 2 usage error, 3 internal error (a bug).

#![allow(clippy::result_large_err)]

mod component_cmd;
mod graph_cmd;
mod kurel_cmd;
mod progress;
mod report;
mod schema_cmd;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use kiln_core::diag::Diagnostics;
use kiln_core::document::YamlLimits;
use kiln_core::layout::Layout;
use kiln_core::output::{self, Format};
use kiln_core::pipeline::{self, Options};
use kiln_core::source::{load_inputs_with_files, Input, Loaded};

use report::DiagFormat;

// Rendering allocates many small maps and strings; mimalloc does that several times faster than
// glibc's malloc and does not serialise the worker threads.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "kiln",
    version,
    about = "Render Kubernetes manifests offline from kro ResourceGraphDefinitions and their instances",
    long_about = "kiln renders, at GitOps build time, the objects kro would create for each instance of a \
ResourceGraphDefinition, without a cluster. Inputs are files, directories (read recursively, *.yaml, *.yml, \
*.json, in sorted order) or - for stdin. Documents that are neither definitions nor instances pass through \
unchanged.\n\nExit codes: 0 success, 1 errors found, 2 usage error, 3 internal error."
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
    /// Worker threads for rendering (default: all cores). Output is identical for any value.
    #[arg(long, short = 'j', value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Treat warnings as errors.
    #[arg(long)]
    strict: bool,
    /// Directory (or file) of CustomResourceDefinitions used to check templates of those kinds;
    /// nothing else in it is read as input.
    #[arg(long, value_name = "DIR")]
    crds: Option<String>,
    /// Kubernetes version whose built-in schemas check templates (only the bundled one is
    /// available; see `kiln schema --help`).
    #[arg(long, value_name = "MAJOR.MINOR")]
    kube_version: Option<String>,
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
    /// half-written).
    #[arg(long = "output-dir", short = 'o')]
    output_dir: Option<PathBuf>,
    /// How objects are spread over files with `-o`.
    #[arg(long, value_enum, default_value_t = LayoutArg::Single, requires = "output_dir")]
    layout: LayoutArg,
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
    fn common(&self) -> &Common {
        match self {
            Command::Render { common, .. }
            | Command::Validate { common, .. }
            | Command::Graph { common, .. }
            | Command::Schema { common, .. }
            | Command::Info { common, .. }
            | Command::Promote { common, .. } => common,
            Command::Snapshot {
                action: SnapshotAction::Create { common, .. },
            } => common,
        }
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
    /// Describe a kurel package: metadata, parameters, resources and patches (enabled and why).
    Info {
        /// The package directory.
        path: String,
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
enum OutFormat {
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

/// Run options from the command line. CRDs named by `--crds` are read here, at the edge; a bad
/// `--kube-version` or unreadable CRD directory ends the run with its diagnostics.
fn options(common: &Common, env: Option<&str>) -> Result<Options, ExitCode> {
    let limits = common.limits();
    let mut o = Options {
        namespace: common.namespace.clone(),
        expr: limits.expr,
        render: limits.render(),
        ..Options::default()
    };
    o.component.env = env.map(str::to_string);
    o.component.expr = limits.expr;
    o.component.eval = limits.eval;
    o.component.max_collection_size = limits.component_collection_size;
    if let Some(v) = &common.kube_version {
        let bundled = kiln_core::openapi::Schemas::kubernetes_version();
        let wanted = v.trim_start_matches('v');
        if wanted != bundled {
            let d = kiln_core::diag::Diagnostic::error(
                kiln_core::diag::codes::IO_READ,
                format!("--kube-version {v}: no bundled schemas for this version"),
            )
            .with_hint(format!("bundled: {bundled}"));
            report::print(&[d], &[], common.diagnostics);
            return Err(ExitCode::from(2));
        }
    }
    if let Some(dir) = &common.crds {
        let loaded = load_inputs_with_files(&inputs(std::slice::from_ref(dir)), &limits.yaml);
        if loaded.diagnostics.has_errors() {
            return Err(fail(&loaded.diagnostics, &loaded, common.diagnostics));
        }
        o.crds = loaded
            .documents
            .into_iter()
            .filter(|d| d.kind() == Some("CustomResourceDefinition"))
            .collect();
    }
    Ok(o)
}

fn fail(diags: &Diagnostics, loaded: &Loaded, format: DiagFormat) -> ExitCode {
    report::print(&with_load_warnings(loaded, &diags.0), &loaded.files, format);
    ExitCode::from(1)
}

/// Warnings from reading the inputs (duplicate keys) come first, then the rest.
fn with_load_warnings(
    loaded: &Loaded,
    rest: &[kiln_core::diag::Diagnostic],
) -> Vec<kiln_core::diag::Diagnostic> {
    let mut all: Vec<_> = loaded
        .diagnostics
        .iter()
        .filter(|d| !rest.contains(d))
        .cloned()
        .collect();
    all.extend(rest.iter().cloned());
    all
}

/// Read the inputs and render them; on any error the diagnostics are printed and the exit code
/// returned.
/// Load the inputs and render them, handing each unit's objects to `finish` on the worker that
/// rendered it (see `pipeline::render_units`).
fn load_and_render<T, F>(
    paths: &[String],
    env: Option<&str>,
    common: &Common,
    limits: &YamlLimits,
    finish: F,
) -> Result<(Loaded, pipeline::Units<T>), ExitCode>
where
    T: Send,
    F: Fn(Vec<serde_json::Value>) -> Result<T, kiln_core::diag::Diagnostic> + Sync,
{
    let loaded = load_inputs_with_files(&inputs(paths), limits);
    if loaded.diagnostics.has_errors() {
        return Err(fail(&loaded.diagnostics, &loaded, common.diagnostics));
    }
    let opts = options(common, env)?;
    match pipeline::render_units(&loaded.documents, &opts, finish) {
        Err(diags) => Err(fail(&diags, &loaded, common.diagnostics)),
        Ok(out) => Ok((loaded, out)),
    }
}

/// `kiln render` of documents: a YAML stream on stdout is serialised unit by unit on the
/// workers (the objects never all exist at once); a JSON list or `-o DIR` needs the objects.
fn render_documents(
    paths: &[String],
    env: Option<&str>,
    out: &OutputArgs,
    common: &Common,
    limits: &YamlLimits,
) -> ExitCode {
    if out.output_dir.is_none() && out.output_format == OutFormat::Yaml {
        let progress = progress::Progress::start();
        let result = load_and_render(paths, env, common, limits, |objs| {
            progress.unit_done();
            Ok((output::yaml_stream(&objs)?, for_redaction(objs, common)))
        });
        progress.finish();
        return match result {
            Err(code) => code,
            Ok((loaded, rendered)) => {
                let warnings = with_load_warnings(&loaded, &rendered.warnings);
                let (texts, kept): (Vec<String>, Vec<Vec<serde_json::Value>>) =
                    rendered.units.into_iter().unzip();
                let kept: Vec<serde_json::Value> = kept.into_iter().flatten().collect();
                if !report_warnings(&warnings, &loaded.files, common, &kept) {
                    return ExitCode::from(1);
                }
                let code = emit_yaml_units(&texts);
                // The process ends here: freeing every parsed document one by one would only
                // add to the latency a GitOps refresh sees.
                std::mem::forget(loaded);
                std::mem::forget(texts);
                code
            }
        };
    }
    let progress = progress::Progress::start();
    let result = load_and_render(paths, env, common, limits, |objs| {
        progress.unit_done();
        Ok(objs)
    });
    progress.finish();
    match result {
        Err(code) => code,
        Ok((loaded, rendered)) => {
            let warnings = with_load_warnings(&loaded, &rendered.warnings);
            let objects: Vec<serde_json::Value> = rendered.units.into_iter().flatten().collect();
            deliver(&objects, &warnings, &loaded.files, out, common)
        }
    }
}

/// The rendered objects redaction must know about once the objects themselves are gone:
/// Secrets, or every object when `--secret` paths are named.
fn for_redaction(objects: Vec<serde_json::Value>, common: &Common) -> Vec<serde_json::Value> {
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
    !common.strict
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

/// The output limit and diagnostics format of this run (set once in `run`), so every command's
/// stdout is checked in [`emit`] without each caller passing them along.
static OUTPUT_LIMIT: std::sync::OnceLock<(usize, DiagFormat)> = std::sync::OnceLock::new();

/// Write everything at once, so an error leaves nothing half-written on stdout. Output over
/// `--limit output-bytes` is not written at all (KLN1009).
fn emit(text: &str) -> ExitCode {
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
    let mut out = std::io::BufWriter::with_capacity(1 << 20, std::io::stdout().lock());
    let written = pieces
        .iter()
        .try_for_each(|p| out.write_all(p.as_bytes()))
        .and_then(|_| out.flush());
    match written {
        Ok(()) => ExitCode::SUCCESS,
        // A closed pipe (`kiln render | head`) is not an error worth a message.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: cannot write output: {e}");
            ExitCode::from(1)
        }
    }
}

fn run(cli: Cli) -> ExitCode {
    report::set_secret_paths(&cli.command.common().secret);
    let all_limits = cli.command.common().limits();
    let limits = all_limits.yaml;
    let _ = OUTPUT_LIMIT.set((all_limits.output_bytes, cli.command.common().diagnostics));
    match cli.command {
        Command::Render {
            paths,
            out,
            env,
            kurel,
            common,
        } => {
            if let [one] = paths.as_slice() {
                if kurel_cmd::is_package(one) {
                    return kurel_cmd::render(one, &kurel, &out, &common);
                }
            }
            render_documents(&paths, env.as_deref(), &out, &common, &limits)
        }
        Command::Validate {
            paths,
            env,
            kurel,
            common,
        } => {
            if let [one] = paths.as_slice() {
                if kurel_cmd::is_package(one) {
                    return kurel_cmd::validate(one, &kurel, &common);
                }
            }
            // Validation renders everything but keeps only what redaction needs.
            match load_and_render(&paths, env.as_deref(), &common, &limits, |objs| {
                Ok(for_redaction(objs, &common))
            }) {
                Err(code) => code,
                Ok((loaded, out)) => {
                    let warnings = with_load_warnings(&loaded, &out.warnings);
                    if !warnings.is_empty() {
                        let kept: Vec<serde_json::Value> = out.units.concat();
                        report::note_rendered(&kept);
                    }
                    report::print(&warnings, &loaded.files, common.diagnostics);
                    if common.strict && !warnings.is_empty() {
                        return ExitCode::from(1);
                    }
                    if common.diagnostics == DiagFormat::Human {
                        eprintln!("ok: {} document(s) checked", loaded.documents.len());
                    }
                    ExitCode::SUCCESS
                }
            }
        }
        Command::Schema {
            path,
            output_format,
            common,
        } => {
            if kurel_cmd::is_package(&path) {
                return kurel_cmd::schema(&path, &common);
            }
            schema_cmd::run(&path, output_format, &common, &limits)
        }
        Command::Info { path, common } => kurel_cmd::info(&path, &common),
        Command::Snapshot {
            action: SnapshotAction::Create { args, common },
        } => component_cmd::snapshot_create(&args, &common),
        Command::Promote { args, common } => component_cmd::promote(&args, &common),
        Command::Graph {
            path,
            format,
            common,
        } => {
            let loaded = load_inputs_with_files(&inputs(&[path]), &limits);
            if loaded.diagnostics.has_errors() {
                return fail(&loaded.diagnostics, &loaded, common.diagnostics);
            }
            let opts = match options(&common, None) {
                Ok(o) => o,
                Err(code) => return code,
            };
            match pipeline::definitions(&loaded.documents, &opts) {
                Err(diags) => fail(&diags, &loaded, common.diagnostics),
                Ok(defs) => emit(&graph_cmd::render(&defs.rgds, format)),
            }
        }
    }
}

fn main() -> ExitCode {
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
        Err(e) => {
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
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(16 << 20);
    if let Some(j) = cli.command.common().jobs {
        pool = pool.num_threads(usize::from(j));
    }
    let _ = pool.build_global();
    match std::panic::catch_unwind(|| run(cli)) {
        Ok(code) => code,
        Err(_) => ExitCode::from(3),
    }
}
