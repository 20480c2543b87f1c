//! What a run exchanges with another rendered beside it (`kiln diff`'s two sides, `pair`): the
//! [`Context`] that says when a kro instance's unit may be taken from the other run, the
//! [`PackageContext`] that says the same of a kurel package's instances, and the [`Reuse`] trait
//! the pair supplies.

use std::sync::Arc;

use super::duplicates::{Checked, Identity};
use super::{Options, Request};
use crate::component;
use crate::document::{Document, SourceFile};
use crate::kurel;
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
    /// Whether the run keeps its kurel instances' records for the other ([`Kept::kurel`]).
    fn keeps_kurel(&self) -> bool;
    /// The other run's units of the kurel package of context `here`, by instance file (name
    /// and text), when it rendered that package in that context; `holder` is the directory
    /// holding the package as this run names its files ([`package_context`]).
    fn kurel<'s>(&'s self, here: &PackageContext, holder: &str) -> Option<Box<KurelTake<'s, T>>>;
    /// Whether the other run will take this run's units of the component of this
    /// [`component::document_keys`] entry (its releases are taken by key, as kro instances are,
    /// through [`pipeline::InstanceCache::take`]).
    fn component_shares(&self, key: &str) -> bool;
}

/// The unit (as [`Checked`]) and record of a kurel instance file the other run rendered.
pub(crate) type KurelTake<'a, T> =
    dyn Fn(&SourceFile) -> Option<(Checked<T>, kurel::Record)> + Sync + 'a;

/// What one rendered run keeps for the other of a diff ([`Reuse::keep`]): the context its kro
/// instances were rendered in ([`context_of`]), and the index and identities of each instance's
/// unit by the instance's key ([`pipeline::instance_key`]).
#[derive(Debug)]
pub(crate) struct Kept {
    /// `None` when the run had no kro definitions (nothing to take by instance key).
    pub(crate) context: Option<Context>,
    pub(crate) units: std::collections::HashMap<String, (usize, Vec<Identity>)>,
    /// Each kurel package rendered with instances: its context and its instances.
    pub(crate) kurel: Vec<KeptPackage>,
}

/// A kurel package's instances one run kept for the other ([`Kept::kurel`]).
#[derive(Debug)]
pub(crate) struct KeptPackage {
    pub(crate) context: PackageContext,
    /// The directory holding the package, as the run named its files.
    pub(crate) holder: String,
    /// By instance file name: its file (for the text), the index of its unit among the run's,
    /// that unit's identities, and the rest of what the instance gave.
    pub(crate) instances:
        std::collections::HashMap<String, (Arc<SourceFile>, usize, Vec<Identity>, kurel::Record)>,
}

/// What the render of a kurel package's instance reads besides the instance's own file: two
/// runs of equal package contexts render equal units, warnings and log lines from instance files
/// of equal name and text (the name reaches diagnostics and the provenance annotations), so one
/// may take the other's (`kiln diff`, see `pair`). Every file the package's load read (the
/// package, its local extension) and the common values files, by name and text; the `--set`
/// arguments; the options of [`kurel::Options`] (whether `-v` lines are kept too); the limits and
/// Kubernetes version of the run.
/// The run's CRDs are compared as text, as [`Context`]'s documents are.
///
/// A package's files are named by where they were read (a revision is written out for its run,
/// somewhere else each time), so they are compared by their names below the directory holding
/// the package (`web.kurel/parameters.yaml`, `web.local.kurel/parameters.yaml`): the render
/// reads them by that name (provenance names a resource file below the package), and a record
/// taken is moved from the other run's directory to this one's ([`kurel::Record::relocated`]).
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PackageContext {
    files: Vec<(String, String)>,
    sets: Vec<String>,
    namespace: Option<String>,
    max_depth: usize,
    provenance: bool,
    details: bool,
    crds: String,
    limits: Limits,
    kube_version: Option<String>,
}

/// The [`PackageContext`] of a package of a run (the package loaded, the common values files
/// read, the options it renders with), and the directory holding the package as its files are
/// named (what a record kept for the other run may not mention).
pub(super) fn package_context(
    req: &Request,
    package: &kurel::Package,
    values: &[Arc<SourceFile>],
    options: &kurel::Options,
) -> (PackageContext, String) {
    use std::fmt::Write as _;
    let holder = match package.dir.rsplit_once('/') {
        Some((holder, _)) => format!("{holder}/"),
        None => String::new(),
    };
    let below = |name: &str| name.strip_prefix(&holder).unwrap_or(name).to_string();
    let mut crds = String::new();
    for c in &options.crds {
        let _ = writeln!(crds, "{c}");
    }
    let context = PackageContext {
        files: package
            .files
            .iter()
            .map(|f| (below(&f.name), f.text.clone()))
            .chain(values.iter().map(|f| (f.name.clone(), f.text.clone())))
            .collect(),
        sets: req.sets.clone(),
        namespace: options.namespace.clone(),
        max_depth: options.max_depth,
        provenance: options.provenance,
        details: options.details,
        crds,
        limits: req.limits,
        kube_version: req.kube_version.clone(),
    };
    (context, holder)
}

/// A kurel package's instances as a run recorded them, for [`Kept::kurel`]: the package's
/// context, the directory holding it and, for each instance, its file, its unit's index among
/// the run's and its record.
pub(super) type KurelRecorded = (
    PackageContext,
    String,
    Vec<(Arc<SourceFile>, usize, kurel::Record)>,
);

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

/// The digest of what a run's component releases read besides their own documents
/// ([`component::UnitReuse`]): every document of the run that is not a Component, Workload or
/// binding (definitions, platform objects, releases, snapshots, CRDs and the rest), the
/// `--crds` CRDs, the observed state, and the options a release reads (namespace, environment,
/// provenance, limits, Kubernetes version). SHA-256 over their texts: the digest is in every
/// release's key.
pub(super) fn component_context_of(
    req: &Request,
    documents: &[Document],
    opts: &Options,
) -> String {
    use sha2::{Digest, Sha256};
    use std::fmt::Write as _;
    let mut text = format!(
        "{:?}\n{:?}\n{}\n{:?}\n{:?}\n",
        req.namespace, req.environment, !req.no_provenance, req.limits, req.kube_version
    );
    for d in documents.iter().filter(|d| !component::is_unit_document(d)) {
        let _ = writeln!(text, "{}", d.value);
    }
    for d in &opts.crds {
        let _ = writeln!(text, "{}", d.value);
    }
    if let Some(o) = &opts.observed {
        text.push_str(&o.to_json());
    }
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
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
