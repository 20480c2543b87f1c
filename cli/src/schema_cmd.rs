//! `kiln schema PATH` on definition documents: the instance CRD of each ResourceGraphDefinition
//! and the parameter JSON Schema of each ComponentTypeDefinition or Addon, as a YAML stream (or
//! JSON with `--output-format json`).

use std::process::ExitCode;

use kiln_core::document::YamlLimits;
use kiln_core::output;
use kiln_core::pipeline;
use kiln_core::source::load_inputs_with_files;
use serde_json::Value;

use crate::{emit, fail, inputs, options, report, Common, OutFormat};

/// Print the schema of every definition under `path`.
pub fn run(path: &str, format: OutFormat, common: &Common, limits: &YamlLimits) -> ExitCode {
    let loaded = load_inputs_with_files(&inputs(&[path.to_string()]), limits);
    if loaded.diagnostics.has_errors() {
        return fail(&loaded.diagnostics, &loaded, common.diagnostics);
    }
    let opts = match options(common, None) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let defs = match pipeline::definitions(&loaded.documents, &opts) {
        Ok(d) => d,
        Err(diags) => return fail(&diags, &loaded, common.diagnostics),
    };
    let mut docs: Vec<Value> = defs
        .rgds
        .iter()
        .map(kiln_core::kro::crd::instance_crd)
        .collect();
    match kiln_core::component::json_schemas(&loaded.documents) {
        Ok(schemas) => docs.extend(schemas.into_iter().map(|(_, s)| s)),
        Err(diags) => return fail(&diags, &loaded, common.diagnostics),
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
            Err(d) => return fail(&d.into(), &loaded, common.diagnostics),
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
