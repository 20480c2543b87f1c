//! `kiln schema PATH` on definition documents: the instance CRD of each ResourceGraphDefinition
//! and the parameter JSON Schema of each ComponentTypeDefinition or Addon, as a YAML stream (or
//! JSON with `--output-format json`).

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
    if docs.is_empty() {
        let d = kiln_core::diag::Diagnostic::error(
            kiln_core::diag::codes::IO_READ,
            format!("{path}: no ResourceGraphDefinition, ComponentTypeDefinition or Addon found"),
        )
        .with_hint("kiln schema reads definitions; a kurel package is read from its directory");
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
