//! `kiln status`: the instance status kro would write, hydrated from observed state.
//!
//! stdout is a YAML stream of the instances with their `status` (what kro would write, ready
//! for a diff or a health check); stderr, for people, says which resources are not ready and why.

use std::process::ExitCode;

use kiln_core::request::Request;

use crate::report::DiagFormat;
use crate::Common;

/// Run `kiln status`.
pub fn run(paths: &[String], observed: &[String], common: &Common) -> ExitCode {
    // The same reading as `graph` and `schema`, plus the observed state.
    let req = Request {
        observed: observed
            .iter()
            .map(|p| kiln_core::source::Input::from_arg(p))
            .collect(),
        ..crate::definitions_request(paths, common)
    };
    let statuses = match kiln_core::status::status(&req) {
        Ok(s) => s,
        Err(failed) => return crate::fail(&failed, common.diagnostics),
    };
    let objects: Vec<serde_json::Value> = statuses
        .instances
        .iter()
        .map(|s| s.object.clone())
        .collect();
    let text = match kiln_core::output::yaml_stream(&objects) {
        Ok(t) => t,
        Err(d) => {
            crate::report::print(&[d], &statuses.files, common.diagnostics);
            return ExitCode::from(1);
        }
    };
    if common.diagnostics == DiagFormat::Human {
        for s in &statuses.instances {
            let o = &s.object;
            let ns = o["metadata"]["namespace"]
                .as_str()
                .map(|n| format!("{n}/"))
                .unwrap_or_default();
            eprintln!(
                "{} {ns}{}: {}",
                o["kind"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap_or(""),
                o["status"]["state"].as_str().unwrap_or("")
            );
            for n in &s.not_ready {
                eprintln!("  not ready: {}: {}", n.id, n.reason);
            }
        }
    }
    crate::emit(&text)
}
