//! `kiln render|validate|schema|info` on a kurel package directory: translates the command line
//! into `kiln_core::kurel` calls and prints the results. Data goes to stdout, logs and diagnostics
//! to stderr.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use kiln_core::diag::Diagnostic;
use kiln_core::document::{Document, SourceFile};
use kiln_core::kurel::{self, values, Instance, Options, Package};
use kiln_core::output;
use kiln_core::source::Root;
use serde_json::Value;

use crate::report::{self, DiagFormat};
use crate::{Common, OutputArgs};

/// Flags of `kiln render` / `kiln validate` that only kurel packages use.
#[derive(clap::Args, Debug, Default)]
pub struct KurelArgs {
    /// kurel: a values file overriding package parameters (repeatable; deep-merged in order).
    /// Read relative to the current directory, which it may not leave.
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<String>,
    /// kurel: override one parameter, `path=value` (repeatable; applied after --values). A
    /// string parameter takes the text as written; others read it as YAML.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// kurel: render one instance per values file (`*.yaml`, `*.yml`) directly in DIR, in name
    /// order and in parallel. Each file is layered over the package defaults, the local
    /// extension and every --values file, and under --set. Read relative to the current
    /// directory, which it may not leave.
    #[arg(long = "instances", value_name = "DIR")]
    pub instances: Option<String>,
    /// kurel: print every patch operation applied, on stderr.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// kurel: how deep `${...}` references may nest inside parameter values (a longer chain is
    /// an error naming it); the same as `--limit variable-depth=N`, and wins over it [default: 10].
    #[arg(long, value_name = "N",
          value_parser = clap::value_parser!(u16).range(1..=100))]
    pub max_depth: Option<u16>,
}

/// Whether `path` is a kurel package directory: named `*.kurel`, or holding a `parameters.yaml`
/// with a top-level `kurel:` key.
pub fn is_package(path: &str) -> bool {
    kurel::is_package(Path::new(path))
}

fn options(args: &KurelArgs, common: &Common) -> Options {
    Options {
        namespace: common.namespace.clone(),
        max_depth: args
            .max_depth
            .map_or(common.limits().variable_depth, usize::from),
    }
}

/// Load the package, printing diagnostics on failure.
fn load(pkg: &str, common: &Common) -> Result<Package, ExitCode> {
    match kurel::load_with_limits(Path::new(pkg), &common.limits().yaml) {
        Ok(p) => Ok(p),
        Err(e) => {
            report::print(&e.diagnostics.0, &e.files, common.diagnostics);
            Err(ExitCode::from(1))
        }
    }
}

/// A run of `render` / `validate` on a package, ready to render its instances.
struct Run<'p> {
    prepared: kurel::Prepared<'p>,
    /// The `--instances` documents (empty without `--instances`).
    instances: Vec<Document>,
    /// Every file read, for snippets.
    files: Vec<Arc<SourceFile>>,
    /// Warnings of reading the values (an empty `--instances` directory): reported with the
    /// render's, so `--diagnostics json` prints one document.
    read_warnings: Vec<Diagnostic>,
}

/// Read the `--values` files (and `--instances DIR`) and prepare the instance-independent part
/// of the render; prints diagnostics on failure.
fn prepare<'p>(pkg: &'p Package, args: &KurelArgs, common: &Common) -> Result<Run<'p>, ExitCode> {
    let mut files = pkg.files.clone();
    let root = match Root::new(Path::new(".")) {
        Ok(r) => r,
        Err(d) => {
            report::print(&[d], &files, common.diagnostics);
            return Err(ExitCode::from(1));
        }
    };
    let limits = common.limits().yaml;
    let (docs, vfiles, mut diags) =
        values::read_values_files_with_limits(&root, &args.values, &limits);
    files.extend(vfiles);
    let mut instances = Vec::new();
    if let Some(dir) = &args.instances {
        let (docs, ifiles, idiags) = values::read_instances_dir(&root, dir, &limits);
        instances = docs;
        files.extend(ifiles);
        diags.extend(idiags);
    }
    if diags.has_errors() {
        report::print(&diags.0, &files, common.diagnostics);
        return Err(ExitCode::from(1));
    }
    let read_warnings = diags.0;
    // `--set` values are on the command line, not in a file: let redaction see them.
    report::note_document(kiln_core::redact::set_arguments_document(&args.set));
    let instance = Instance {
        values: docs,
        sets: args.set.clone(),
    };
    match kurel::Prepared::new(pkg, &instance, &options(args, common)) {
        Ok(prepared) => Ok(Run {
            prepared,
            instances,
            files,
            read_warnings,
        }),
        Err(diags) => {
            let mut all = read_warnings;
            all.extend(diags);
            report::print(&all, &files, common.diagnostics);
            Err(ExitCode::from(1))
        }
    }
}

impl Run<'_> {
    /// Print diagnostics of a failed render, after the reading warnings.
    fn fail(&self, diags: Vec<Diagnostic>, common: &Common) -> ExitCode {
        let mut all = self.read_warnings.clone();
        all.extend(diags);
        report::print(&all, &self.files, common.diagnostics);
        ExitCode::from(1)
    }

    /// Render the one instance of a run without `--instances`; prints diagnostics on failure.
    fn render_one(&self, common: &Common) -> Result<kurel::Rendered, ExitCode> {
        match self.prepared.render(None) {
            Ok(mut r) => {
                r.warnings.splice(0..0, self.read_warnings.iter().cloned());
                Ok(r)
            }
            Err(diags) => Err(self.fail(diags.0, common)),
        }
    }

    /// Render every instance of `--instances`, handing each one's objects to `unit` on its
    /// worker; prints diagnostics on failure.
    fn render_many<T: Send>(
        &self,
        common: &Common,
        unit: impl Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
    ) -> Result<kurel::RenderedInstances<T>, ExitCode> {
        match kurel::render_instances(&self.prepared, &self.instances, unit) {
            Ok(mut r) => {
                r.warnings.splice(0..0, self.read_warnings.iter().cloned());
                Ok(r)
            }
            Err(diags) => Err(self.fail(diags.0, common)),
        }
    }
}

/// Log lines are for people: with `--diagnostics json` stderr stays one JSON document. Secrets
/// are redacted, as in diagnostics; `objects` are what redaction must know of the rendered
/// output.
fn log(
    lines: &[String],
    details: &[String],
    objects: &[Value],
    files: &[Arc<SourceFile>],
    args: &KurelArgs,
    common: &Common,
) {
    if common.diagnostics == DiagFormat::Json {
        return;
    }
    let mut text = String::new();
    for l in lines {
        text.push_str(l);
        text.push('\n');
    }
    if args.verbose {
        for l in details {
            text.push_str(l);
            text.push('\n');
        }
    }
    if !text.is_empty() {
        report::note_rendered(objects);
        eprint!("{}", report::redact_log(&text, files));
    }
}

/// `kiln render PKG`.
pub fn render(pkg: &str, args: &KurelArgs, out: &OutputArgs, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let run = match prepare(&package, args, common) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let files = &run.files;
    if args.instances.is_none() {
        let rendered = match run.render_one(common) {
            Ok(r) => r,
            Err(c) => return c,
        };
        log(
            &rendered.log,
            &rendered.details,
            &rendered.objects,
            files,
            args,
            common,
        );
        return crate::deliver(&rendered.objects, &rendered.warnings, files, out, common);
    }
    if out.output_dir.is_none() && out.output_format == crate::OutFormat::Yaml {
        // A YAML stream on stdout is serialised instance by instance on the workers: the
        // objects of the whole fleet never exist at once.
        let rendered = match run.render_many(common, |objs| {
            Ok((
                output::yaml_stream(&objs)?,
                crate::for_redaction(objs, common),
            ))
        }) {
            Ok(r) => r,
            Err(c) => return c,
        };
        let (texts, kept): (Vec<String>, Vec<Vec<Value>>) = rendered.units.into_iter().unzip();
        let kept: Vec<Value> = kept.into_iter().flatten().collect();
        log(&rendered.log, &rendered.details, &kept, files, args, common);
        if !crate::report_warnings(&rendered.warnings, files, common, &kept) {
            return ExitCode::from(1);
        }
        return crate::emit_yaml_units(&texts);
    }
    let rendered = match run.render_many(common, Ok) {
        Ok(r) => r,
        Err(c) => return c,
    };
    let objects: Vec<Value> = rendered.units.into_iter().flatten().collect();
    log(
        &rendered.log,
        &rendered.details,
        &objects,
        files,
        args,
        common,
    );
    crate::deliver(&objects, &rendered.warnings, files, out, common)
}

/// `kiln validate PKG`: everything `render` checks, without output.
pub fn validate(pkg: &str, args: &KurelArgs, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let run = match prepare(&package, args, common) {
        Ok(x) => x,
        Err(c) => return c,
    };
    let files = &run.files;
    // What is checked: one instance, or every instance of --instances (keeping only what
    // redaction needs of their objects).
    let (kept, warnings, summary) = if args.instances.is_none() {
        let rendered = match run.render_one(common) {
            Ok(r) => r,
            Err(c) => return c,
        };
        log(
            &rendered.log,
            &rendered.details,
            &rendered.objects,
            files,
            args,
            common,
        );
        let applied = rendered
            .details
            .iter()
            .filter(|l| l.starts_with("applying "))
            .count();
        let summary = format!(
            "{} resource(s), {applied} of {} patch(es) applied",
            rendered.objects.len(),
            package.patches.len()
        );
        (rendered.objects, rendered.warnings, summary)
    } else {
        let rendered = match run.render_many(common, |objs| Ok(crate::for_redaction(objs, common)))
        {
            Ok(r) => r,
            Err(c) => return c,
        };
        let kept: Vec<Value> = rendered.units.concat();
        log(&rendered.log, &rendered.details, &kept, files, args, common);
        let summary = format!(
            "{} instance(s), {} resource(s)",
            run.instances.len(),
            rendered.objects
        );
        (kept, rendered.warnings, summary)
    };
    if !warnings.is_empty() {
        report::note_rendered(&kept);
    }
    report::print(&warnings, files, common.diagnostics);
    if common.strict && !warnings.is_empty() {
        return ExitCode::from(1);
    }
    if common.diagnostics == DiagFormat::Human {
        eprintln!(
            "ok: package {} {}: {summary}",
            package.metadata.name, package.metadata.version
        );
    }
    ExitCode::SUCCESS
}

/// `kiln schema PKG`: the JSON Schema of the package's parameters.
pub fn schema(pkg: &str, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let schema = kurel::schema::generate(&package);
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    crate::emit(&text)
}

/// `kiln info PKG`: metadata, parameters, resources and patches (enabled or not, and why), as YAML.
pub fn info(pkg: &str, common: &Common) -> ExitCode {
    if !is_package(pkg) {
        let d = Diagnostic::error(
            kiln_core::diag::codes::KUREL_PACKAGE,
            format!("{pkg} is not a kurel package"),
        )
        .in_file(pkg)
        .with_hint(
            "name a directory NAME.kurel/, or one with a parameters.yaml that has a kurel: key",
        );
        report::print(&[d], &[], common.diagnostics);
        return ExitCode::from(1);
    }
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let info = kurel::info::info(&package);
    report::print(&info.warnings, &package.files, common.diagnostics);
    match kiln_core::output::to_yaml(&info.value) {
        // A package with errors is still described; the exit code says it is broken.
        Ok(text) if info.warnings.iter().any(Diagnostic::is_error) => {
            let _ = crate::emit(&text);
            ExitCode::from(1)
        }
        Ok(text) => crate::emit(&text),
        Err(d) => {
            report::print(&[d], &package.files, common.diagnostics);
            ExitCode::from(1)
        }
    }
}
