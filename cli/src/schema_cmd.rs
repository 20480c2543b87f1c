//! `kiln schema PATH` on a tree, read as `render` reads it: the instance CRD of each
//! ResourceGraphDefinition, the parameter JSON Schema of each ComponentTypeDefinition or Addon,
//! and of each kurel package found in it, as a YAML stream (or JSON with `--output-format json`).

use std::process::ExitCode;

use kiln_core::output;
use kiln_core::request;
use serde_json::Value;

use crate::{definitions_request, emit, fail, report, Common, OutFormat};

/// Print the schema of every definition under `path`.
pub fn run(path: &str, format: OutFormat, common: &Common) -> ExitCode {
    let loaded = match request::definitions(&definitions_request(&[path.to_string()], common)) {
        Ok(d) => d,
        Err(failed) => return fail(&failed, common.diagnostics),
    };
    let mut docs: Vec<Value> = loaded
        .definitions
        .rgds
        .iter()
        .map(kiln_core::kro::crd::instance_crd)
        .collect();
    match kiln_core::component::json_schemas(&loaded.documents) {
        Ok(schemas) => docs.extend(schemas.into_iter().map(|(_, s)| s)),
        Err(diags) => {
            report::print(&diags.0, &loaded.files, common.diagnostics);
            return ExitCode::from(1);
        }
    }
    // The kurel packages of the tree, found as `render` finds them.
    for found in &loaded.packages {
        match kiln_core::kurel::load_with_limits(&found.path, &common.limits().yaml) {
            Ok(package) => docs.push(kiln_core::kurel::schema::generate(&package)),
            Err(e) => {
                report::print(&e.diagnostics.0, &e.files, common.diagnostics);
                return ExitCode::from(1);
            }
        }
    }
    if docs.is_empty() {
        let d = kiln_core::diag::Diagnostic::error(
            kiln_core::diag::codes::IO_READ,
            format!(
                "{path}: no ResourceGraphDefinition, ComponentTypeDefinition, Addon or kurel package found"
            ),
        )
        .with_hint("kiln schema prints the schema of each definition and kurel package in the inputs");
        report::print(&[d], &loaded.files, common.diagnostics);
        return ExitCode::from(1);
    }
    let text = match format {
        OutFormat::Yaml => match output::yaml_stream(&docs) {
            Ok(t) => t,
            Err(d) => {
                report::print(&[d], &loaded.files, common.diagnostics);
                return ExitCode::from(1);
            }
        },
        OutFormat::Json => {
            let v = if docs.len() == 1 {
                docs.remove(0)
            } else {
                Value::Array(docs)
            };
            let mut t = serde_json::to_string_pretty(&v).unwrap_or_default();
            t.push('\n');
            t
        }
    };
    emit(&text)
}
