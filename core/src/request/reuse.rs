//! What a run exchanges with another rendered beside it (`kiln diff`'s two sides, `pair`): the
//! [`Context`] that says when a kro instance's unit may be taken from the other run, and the
//! [`Reuse`] trait the pair supplies.

use super::duplicates::{Checked, Identity};
use super::{Options, Request};
use crate::component;
use crate::document::Document;
use crate::limits::Limits;
use crate::pipeline;

/// What a run exchanges with another run rendered beside it: `kiln diff`'s two sides (`pair`),
/// whose unchanged kro instances render once. A render alone has none. The pipeline sees only
/// the units ([`pipeline::InstanceCache`]); the rest is the request's.
pub(crate) trait Reuse<T>: pipeline::InstanceCache<Checked<T>> {
    /// The documents the other run parsed of the file `name`, when it held this text.
    fn parsed(&self, name: &str, text: &str) -> Option<Vec<Document>>;
    /// Whether this run, of context `here`, takes units from or makes units for the other
    /// (asked once, before the render).
    fn applies(&self, here: &Context) -> bool;
    /// What the run kept for the other: its context and its instances' units (after it
    /// succeeded).
    fn keep(&self, kept: Kept);
}

/// What one rendered run keeps for the other of a diff ([`Reuse::keep`]): the context its kro
/// instances were rendered in ([`context_of`]), and the index and identities of each instance's
/// unit by the instance's key ([`pipeline::instance_key`]).
#[derive(Debug)]
pub(crate) struct Kept {
    pub(crate) context: Context,
    pub(crate) units: std::collections::HashMap<String, (usize, Vec<Identity>)>,
}

/// What identifies the render of a kro instance besides its own document's value: two runs of
/// equal contexts render equal objects for instance documents of equal value ([`pipeline::instance_key`]),
/// so one may take the other's unit (`kiln diff`, see `pair`). Each field is something the
/// render of an instance reads; what it does not read (the inputs' paths and root, the
/// environment, kurel's values, sets and instances, `--secret` paths, `strict`, the duplicate
/// rules, `pass_through`) is left out, since each side runs those parts itself. kro mode is left
/// out too: instance keys are made in direct mode only. Texts, not parsed values, are compared:
/// serde_json's maps compare equal in any key order, and key order reaches the output.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Context {
    /// The namespace instances that set none (and the objects they make) are given.
    namespace: Option<String>,
    /// Whether rendered objects carry the provenance annotations.
    provenance: bool,
    /// The limits: whether an instance renders or fails, and what its expressions may build.
    limits: Limits,
    /// Every document of the run that is not a kro instance, as JSON, one a line, in input
    /// order: the RGDs an instance renders through (nested ones included) and the CRDs that
    /// give its templates their schemas and scopes. The rest (component documents, pass-through
    /// documents) no instance reads; they are in so that the rule is plainly safe.
    documents: String,
    /// The `--crds` CRDs (schemas and scopes, as the inputs' CRDs), as JSON, one a line.
    crds: String,
    /// The observed state, which externalRefs and status reads resolve against.
    observed: String,
}

/// The [`Context`] of a run: its request, its documents and its options.
pub(super) fn context_of(req: &Request, documents: &[Document], opts: &Options) -> Context {
    use std::fmt::Write as _;
    let declared = crate::kro::definitions::declared_kinds(documents);
    let mut texts = String::new();
    for d in documents.iter().filter(|d| !is_instance(d, &declared)) {
        let _ = writeln!(texts, "{}", d.value);
    }
    let mut crds = String::new();
    for d in &opts.crds {
        let _ = writeln!(crds, "{}", d.value);
    }
    Context {
        namespace: req.namespace.clone(),
        provenance: !req.no_provenance,
        limits: req.limits,
        documents: texts,
        crds,
        observed: opts
            .observed
            .as_ref()
            .map_or_else(String::new, crate::observed::Observed::to_json),
    }
}

/// Whether a document is a kro instance: its group, version and kind are declared by an RGD of
/// the run, and it is neither an RGD nor a component document.
pub(super) fn is_instance(
    d: &Document,
    declared: &std::collections::BTreeSet<(String, String, String)>,
) -> bool {
    !crate::kro::is_rgd(d)
        && !component::is_component_document(d)
        && d.api_version().is_some_and(|api| {
            let (group, version) = api.rsplit_once('/').unwrap_or(("", api));
            declared.contains(&(
                group.to_string(),
                version.to_string(),
                d.kind().unwrap_or("").to_string(),
            ))
        })
}
