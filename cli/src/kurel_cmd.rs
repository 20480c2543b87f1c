//! kurel on the command line: the flags `render` and `validate` pass into the request (rendering
//! itself goes through `kiln_core::request` like every other input), and the package-only
//! commands `schema` and `info`. Data goes to stdout, logs and diagnostics to stderr.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use kiln_core::diag::Diagnostic;
use kiln_core::document::SourceFile;
use kiln_core::kurel::{self, Package};
use serde_json::Value;

use crate::report::{self, DiagFormat};
use crate::Common;

/// Flags of `kiln render` / `kiln validate` that only kurel packages use.
#[derive(clap::Args, Debug, Default)]
pub struct KurelArgs {
    /// kurel: a values file overriding package parameters (repeatable; deep-merged in order).
    /// Applies when the inputs hold exactly one kurel package.
    #[arg(long = "values", value_name = "FILE")]
    pub values: Vec<String>,
    /// kurel: override one parameter, `path=value` (repeatable; applied after --values). A
    /// string parameter takes the text as written; others read it as YAML. Applies when the
    /// inputs hold exactly one kurel package.
    #[arg(long = "set", value_name = "PATH=VALUE")]
    pub set: Vec<String>,
    /// kurel: render one instance per values file (`*.yaml`, `*.yml`) directly in DIR, in name
    /// order and in parallel. Each file is layered over the package defaults, the local
    /// extension and every --values file, and under --set.
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

/// Log lines are for people: with `--diagnostics json` stderr stays one JSON document. Secrets
/// are redacted, as in diagnostics; `objects` are what redaction must know of the rendered
/// output.
pub fn log(
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

/// `kiln schema PKG`: the JSON Schema of the package's parameters, in the `--output-format`
/// asked for (YAML by default, as for every definition kind).
pub fn schema(pkg: &str, format: crate::OutFormat, common: &Common) -> ExitCode {
    let package = match load(pkg, common) {
        Ok(p) => p,
        Err(c) => return c,
    };
    let schema = kurel::schema::generate(&package);
    let text = match format {
        crate::OutFormat::Json => {
            let mut t = serde_json::to_string_pretty(&schema).unwrap_or_default();
            t.push('\n');
            t
        }
        crate::OutFormat::Yaml => match kiln_core::output::to_yaml(&schema) {
            Ok(t) => t,
            Err(d) => {
                report::print(&[d], &package.files, common.diagnostics);
                return ExitCode::from(1);
            }
        },
    };
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
