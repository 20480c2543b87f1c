//! `kiln schema PATH` on definition documents: the instance CRD of each ResourceGraphDefinition.

use std::process::ExitCode;

use kiln_core::document::YamlLimits;

use crate::Common;

/// Print the schema of every definition under `path`.
pub fn run(_path: &str, _common: &Common, _limits: &YamlLimits) -> ExitCode {
    eprintln!("error: kiln schema is not implemented yet");
    ExitCode::from(1)
}
