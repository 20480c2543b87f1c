//! A request whose files are a committed revision ([`super::Files::Revision`]).

use std::sync::Arc;

use serde_json::Value;

use super::{render_units_from, Access, Failed, Files, Rendered, Request, Reuse};
use crate::diag::Diagnostic;
use crate::document::SourceFile;
use crate::source::Snapshot;

/// Render `req` over the revision `snapshot`: from memory when nothing of the run needs files
/// on disk ([`in_memory`]), else from the revision written into a private temporary directory
/// (removed after the run), its files named by their path in the revision, in diagnostics too
/// (a kurel package's files included).
pub(super) fn render<T, F>(
    req: &Request,
    snapshot: &Snapshot,
    finish: F,
    reuse: Option<&dyn Reuse<T>>,
) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    if let Some(mut own) = in_memory(req, snapshot) {
        let inputs = super::take_inputs(&mut own);
        return render_units_from(&own, Some(inputs), None, finish, reuse, None);
    }
    let tree = snapshot
        .materialize()
        .map_err(|d| Failed::new(vec![d], Vec::new(), &[]))?;
    let rename_files = |files: Vec<Arc<SourceFile>>| -> Vec<Arc<SourceFile>> {
        files
            .into_iter()
            .map(|f| {
                let name = tree.tree_name(&f.name);
                if name == f.name {
                    f
                } else {
                    Arc::new(SourceFile {
                        name,
                        text: f.text.clone(),
                    })
                }
            })
            .collect()
    };
    let rename_diag = |mut d: Diagnostic| {
        d.file = d.file.map(|f| tree.tree_name(&f));
        let top = format!("{}/", tree.path().display());
        d.message = d.message.replace(&top, "");
        d.hint = d.hint.map(|h| h.replace(&top, ""));
        d
    };
    let within = Some(Access::Within(tree.root().clone()));
    match render_units_from(req, None, within, finish, reuse, None) {
        Ok(mut r) => {
            r.files = rename_files(std::mem::take(&mut r.files));
            r.warnings = std::mem::take(&mut r.warnings)
                .into_iter()
                .map(rename_diag)
                .collect();
            for o in &mut r.origins {
                o.file = tree.tree_name(&o.file);
            }
            Ok(r)
        }
        Err(mut f) => {
            f.files = rename_files(std::mem::take(&mut f.files));
            f.diagnostics = std::mem::take(&mut f.diagnostics)
                .into_iter()
                .map(rename_diag)
                .collect();
            Err(f)
        }
    }
}

/// The request of a revision read from memory, its inputs the revision's texts (its files read
/// as given, which texts are), when nothing of the run needs files on disk (a kurel package,
/// values files, instance directories, CRDs, symlinks).
pub(super) fn in_memory(req: &Request, snapshot: &Snapshot) -> Option<Request> {
    if !(req.values.is_empty() && req.instances.is_none() && req.crds.is_empty()) {
        return None;
    }
    let inputs = snapshot.as_texts(&req.inputs, req.limits.yaml.max_input_bytes)?;
    let mut own = req.clone();
    own.files = Files::AsGiven;
    own.inputs = inputs;
    Some(own)
}
