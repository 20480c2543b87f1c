//! kurel on the command line: the flags `render` and `validate` pass into the request (rendering
//! itself goes through `kiln_core::request` like every other input), `kiln schema` of a package
//! directory, and `kiln info`, which reads a tree through the same request walk and describes
//! the packages in it. Data goes to stdout, logs and diagnostics to stderr.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use kiln_core::diag::Diagnostic;
use kiln_core::document::SourceFile;
use kiln_core::kurel::{self, Package};
use kiln_core::request;
use serde_json::Value;

use crate::contents::{self, Kind};
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

/// `kiln info PATH`: the tree read as `render` reads it (the request walk), and every kurel
/// package found in it described (metadata, parameters, resources, patches enabled or not and
/// why) as a YAML stream, one document per package in walk order; on stderr, what else the tree
/// holds, which `info` does not describe. A tree without a package is an error.
pub fn info(paths: &[String], common: &Common) -> ExitCode {
    let path = paths.join(" ");
    let defs = match request::definitions(&crate::definitions_request(paths, common)) {
        Ok(d) => d,
        Err(failed) => return crate::fail(&failed, common.diagnostics),
    };
    let skipped = contents::skipped(&defs, Kind::Kurel);
    if defs.packages.is_empty() {
        let d = Diagnostic::error(
            kiln_core::diag::codes::KUREL_PACKAGE,
            format!("{path}: no kurel package found"),
        )
        .with_hint(if skipped.is_empty() {
            "kiln info describes kurel packages: name a directory NAME.kurel/, or one with a \
             parameters.yaml that has a kurel: key (or a tree holding them)"
                .to_string()
        } else {
            format!(
                "kiln info describes kurel packages (a directory NAME.kurel/, or one with a \
                 parameters.yaml that has a kurel: key); the inputs hold {}",
                skipped.join(", ")
            )
        });
        report::print(&[d], &defs.files, common.diagnostics);
        return ExitCode::from(1);
    }
    if !skipped.is_empty() && common.diagnostics == DiagFormat::Human {
        eprintln!(
            "note: kiln info describes kurel packages; skipped {}",
            skipped.join(", ")
        );
    }
    let mut docs = Vec::new();
    // Every package's problems in one report (one JSON document with `--diagnostics json`).
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    for found in &defs.packages {
        // The command line's paths are read as given (the request has no root), so the name
        // the walk gives a package is a path to it, and the one `kiln info` has always shown.
        let package = match load(&found.name, common) {
            Ok(p) => p,
            Err(c) => return c,
        };
        let info = kurel::info::info(&package);
        warnings.extend(info.warnings);
        files.extend(package.files);
        docs.push(info.value);
    }
    report::print(&warnings, &files, common.diagnostics);
    // A package with errors is still described; the exit code says it is broken.
    let broken = warnings.iter().any(Diagnostic::is_error);
    match kiln_core::output::yaml_stream(&docs) {
        Ok(text) if broken => {
            let _ = crate::emit(&text);
            ExitCode::from(1)
        }
        Ok(text) => crate::emit(&text),
        Err(d) => {
            report::print(&[d], &defs.files, common.diagnostics);
            ExitCode::from(1)
        }
    }
}
