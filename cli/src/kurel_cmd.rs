//! `kiln render|validate|schema|info` on a kurel package directory: translates the command line
//! into `kiln_core::kurel` calls and prints the results. Data goes to stdout, logs and diagnostics
//! to stderr.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use kiln_core::diag::Diagnostic;
use kiln_core::document::SourceFile;
use kiln_core::kurel::{self, values, Instance, Options, Package};
use kiln_core::source::Root;

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
    /// kurel: print every patch operation applied, on stderr.
    #[arg(long, short = 'v')]
    pub verbose: bool,
    /// kurel: how deep `${...}` references may nest inside parameter values (a longer chain is
    /// an error naming it).
    #[arg(long, value_name = "N", default_value_t = 10,
          value_parser = clap::value_parser!(u16).range(1..))]
    pub max_depth: u16,
}

/// Whether `path` is a kurel package directory: named `*.kurel`, or holding a `parameters.yaml`
/// with a top-level `kurel:` key.
pub fn is_package(path: &str) -> bool {
    kurel::is_package(Path::new(path))
}

fn options(args: &KurelArgs, common: &Common) -> Options {
    Options {
        namespace: common.namespace.clone(),
        max_depth: usize::from(args.max_depth),
    }
}

/// Load the package, printing diagnostics on failure.
fn load(pkg: &str, common: &Common) -> Result<Package, ExitCode> {
    match kurel::load(Path::new(pkg)) {
        Ok(p) => Ok(p),
        Err(e) => {
            report::print(&e.diagnostics.0, &e.files, common.diagnostics);
            Err(ExitCode::from(1))
        }
    }
}

/// Read the values files and render; prints diagnostics on failure.
fn render_instance(
    pkg: &Package,
    args: &KurelArgs,
    common: &Common,
) -> Result<(kurel::Rendered, Vec<Arc<SourceFile>>), ExitCode> {
    let mut files = pkg.files.clone();
    let root = match Root::new(Path::new(".")) {
        Ok(r) => r,
        Err(d) => {
            report::print(&[d], &files, common.diagnostics);
            return Err(ExitCode::from(1));
        }
    };
    let (docs, vfiles, diags) = values::read_values_files(&root, &args.values);
    files.extend(vfiles);
    if diags.has_errors() {
        report::print(&diags.0, &files, common.diagnostics);
        return Err(ExitCode::from(1));
    }
    // `--set` values are on the command line, not in a file: let redaction see them.
    report::note_document(kiln_core::redact::set_arguments_document(&args.set));
    let instance = Instance {
        values: docs,
        sets: args.set.clone(),
    };
    match kurel::render(pkg, &instance, &options(args, common)) {
        Ok(r) => Ok((r, files)),
        Err(diags) => {
            report::print(&diags.0, &files, common.diagnostics);
            Err(ExitCode::from(1))
        }
    }
}

/// Log lines are for people: with `--diagnostics json` stderr stays one JSON document. Secrets
/// are redacted, as in diagnostics.
fn log(rendered: &kurel::Rendered, files: &[Arc<SourceFile>], args: &KurelArgs, common: &Common) {
    if common.diagnostics == DiagFormat::Json {
        return;
    }
    let mut text = String::new();
    for l in &rendered.log {
        text.push_str(l);
        text.push('\n');
    }
    if args.verbose {
        for l in &rendered.details {
            text.push_str(l);
            text.push('\n');
        }
    }
    if !text.is_empty() {
        report::note_rendered(&rendered.objects);
        eprint!("{}", report::redact_log(&text, files));
    }
}

/// `kiln render PKG`.
pub fn render(pkg: &str, args: &KurelArgs, out: &OutputArgs, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (rendered, files) = match render_instance(&package, args, common) {
        Ok(x) => x,
        Err(c) => return c,
    };
    log(&rendered, &files, args, common);
    crate::deliver(&rendered.objects, &rendered.warnings, &files, out, common)
}

/// `kiln validate PKG`: everything `render` checks, without output.
pub fn validate(pkg: &str, args: &KurelArgs, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let (rendered, files) = match render_instance(&package, args, common) {
        Ok(x) => x,
        Err(c) => return c,
    };
    log(&rendered, &files, args, common);
    if !rendered.warnings.is_empty() {
        report::note_rendered(&rendered.objects);
    }
    report::print(&rendered.warnings, &files, common.diagnostics);
    if common.strict && !rendered.warnings.is_empty() {
        return ExitCode::from(1);
    }
    if common.diagnostics == DiagFormat::Human {
        let enabled = rendered
            .details
            .iter()
            .filter(|l| l.starts_with("applying "))
            .count();
        eprintln!(
            "ok: package {} {}: {} resource(s), {} of {} patch(es) applied",
            package.metadata.name,
            package.metadata.version,
            rendered.objects.len(),
            enabled,
            package.patches.len()
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
