//! One request, one call: the entry point every door uses.
//!
//! A door (the `kiln` command line, the KRM function, the Argo CD plugin, the Flux step) turns its
//! protocol into a [`Request`] and calls [`render_units`] (or [`render`]) once. Everything a run
//! does before output lives here: reading the inputs (files, directories walked in sorted order,
//! stdin, in-memory texts), finding kurel packages in the walk, reading values files, instance
//! directories and CRDs, checking the Kubernetes version, rendering the kro instances, component
//! releases and kurel packages, and turning warnings into errors under `strict`. The door then
//! only writes what comes back, or the diagnostics.
//!
//! ```
//! use kiln_core::request::{render, Request};
//! use kiln_core::source::Input;
//!
//! let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\n";
//! let req = Request {
//!     inputs: vec![Input::Text { name: "cm.yaml".into(), text: cm.into() }],
//!     ..Request::default()
//! };
//! let out = render(&req).expect("renders");
//! assert_eq!(out.units.len(), 1); // a pass-through document is a unit of its own
//! ```
//!
//! **Paths and trust.** Where files are read is part of the request ([`Request::files`]). With
//! [`Files::AsGiven`], every path of the request is the user's own and is read as given
//! (absolute, `..`, a fifo such as `<(helm template …)`). Otherwise every path is resolved
//! inside a root and may not leave it: what a door does with paths that come from untrusted
//! configuration (`Within`), and `kiln diff`'s working tree and revisions (`Tree`, `Revision`). Paths found inside inputs (a package's files) are
//! always confined to their package. See [`crate::source::Access`].
//!
//! **Output order.** Pass-through documents and kro instances in input order (an instance
//! replaced by its objects), then component releases in the component front-end's order, then
//! kurel packages in input order (directories in sorted path order); definitions are consumed.
//!
//! **Values and several packages.** `values`, `sets` and `instances` are the overrides of one
//! kurel package: they apply when the inputs hold exactly one, and are an error (KLN1010) when
//! they hold none or several. A package in a tree takes its own overrides from its local
//! extension beside it (`NAME.local.kurel/`).

use std::path::PathBuf;
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::{Document, SourceFile};
use crate::kurel;
use crate::limits::Limits;
use crate::pipeline::{self, Options};
pub use crate::provenance::{Origin, OriginKind};
use crate::redact::{FileSecrets, SecretPath, Secrets};
use crate::source::{load_inputs_in, Access, FoundPackage, Input, Root, Snapshot};

mod checks;
mod duplicates;
mod packages;
mod pair;
mod reuse;
mod snapshot;
use checks::*;
pub use checks::{cluster_version_warning, fatal_in_strict_mode};
use duplicates::{check_unit, Checked};
use packages::render_package;
pub use pair::{render_pair, Pair, SharedFinish};
use reuse::{context_of, is_instance, Context, Kept, KeptPackage, KurelRecorded, Reuse};

/// Everything one run needs, whatever door it came through.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// What to read: paths (files, or directories walked recursively), stdin, in-memory texts.
    pub inputs: Vec<Input>,
    /// Where the request's paths are read: as given, or inside a root they may not leave.
    pub files: Files,
    /// The environment components are rendered for.
    pub environment: Option<String>,
    /// kurel values files, merged in order over the package's parameters.
    pub values: Vec<PathBuf>,
    /// kurel `path=value` overrides, applied after the values files.
    pub sets: Vec<String>,
    /// kurel: a directory with one values file per instance of the package.
    pub instances: Option<PathBuf>,
    /// Namespace for namespaced objects whose instance, component or package sets none.
    pub namespace: Option<String>,
    /// Files or directories of CustomResourceDefinitions that check templates of their kinds
    /// (nothing else in them is read).
    pub crds: Vec<PathBuf>,
    /// Kubernetes version whose schemas check templates (only the bundled one exists).
    pub kube_version: Option<String>,
    /// Every limit of the run.
    pub limits: Limits,
    /// kurel: how deep `${…}` references between parameters may nest (wins over
    /// `limits.variable_depth`).
    pub kurel_max_depth: Option<usize>,
    /// kurel: leave out the `-v` lines of a package's instances (each patch operation applied):
    /// a run that does not print them need not hold lines for every instance.
    pub kurel_no_details: bool,
    /// Paths whose values are secret (redacted from diagnostics).
    pub secrets: Vec<SecretPath>,
    /// Warnings fail the run.
    pub strict: bool,
    /// Check each environment's component releases on their own: releases of one component for
    /// different environments may hold the same object (group, kind, namespace, name). What
    /// `kiln validate` without `--env` asks; a single output stream cannot hold both, so a
    /// render keeps it off and such objects are duplicates (KLN1012).
    pub environments_apart: bool,
    /// Objects rendered from files of different directories are not one output: a tree rendered
    /// in place is built by kustomize one directory (and what it reaches) at a time, and the
    /// environments of a monorepo (`apps/staging`, `apps/production`) hold objects of the same
    /// name. Only objects whose inputs share a directory are duplicates (KLN1012); kustomize
    /// reports the others when a kustomization brings them together.
    pub duplicates_per_directory: bool,
    /// Groups whose kinds no definition of the run knows but that are meant to pass through
    /// unrendered (`*`: every group). Without it such a document is an error (KLN1011).
    pub pass_through: Vec<String>,
    /// Inputs with no documents at all are accepted (an empty result). Without it they are an
    /// error (KLN1010): an empty stream applied by a GitOps tool deletes what it manages.
    pub allow_empty: bool,
    /// Live objects (files or directories of YAML, e.g. `kubectl get -o yaml` output, or texts
    /// a door read) that externalRefs and reads of a resource's status resolve against. Paths
    /// are confined to `root` like every other path of the request.
    pub observed: Vec<Input>,
    /// How kro definitions ship: rendered here (direct), or as RGDs and instances for the
    /// in-cluster controller (kro).
    pub mode: Mode,
    /// kro mode: also emit each RGD's generated instance CRD.
    pub emit_crds: bool,
    /// kro mode: annotate CRDs and RGDs with Argo CD sync waves so they apply before instances.
    pub sync_waves: bool,
    /// Leave out the provenance annotations (`kiln.dev/definition`, `kiln.dev/instance`,
    /// `kiln.dev/node`) that rendered objects otherwise carry.
    pub no_provenance: bool,
    /// Texts read instead of the input files of these names (as diagnostics name them): an
    /// editor's unsaved buffers over the files on disk ([`crate::ide::workspace`]). The walk
    /// still decides which files are inputs; files a kurel package reads come from disk.
    pub buffers: Buffers,
}

impl Request {
    /// This request as `kiln validate` runs it: without an environment, every environment's
    /// component releases are checked, each on its own (releases of one component for two
    /// environments are not duplicates of each other). The command line and the editor's
    /// workspace ([`crate::ide::workspace`]) both build their request with it.
    pub fn for_validation(mut self) -> Self {
        self.environments_apart = self.environment.is_none();
        self
    }
}

/// File name → the text read instead of the file ([`Request::buffers`]).
pub use crate::source::Buffers;

/// Where a request's paths are read (module docs, **Paths and trust**).
#[derive(Debug, Clone, Default)]
pub enum Files {
    /// Every path is the user's own, read as given.
    #[default]
    AsGiven,
    /// Every path is read inside this directory and may not leave it (what a door does with
    /// paths from untrusted configuration); files are named by their path joined to it.
    Within(PathBuf),
    /// Every path is read inside this tree, files named as the tree names them: `kiln diff`'s
    /// working tree, its paths relative to the repository's top.
    Tree(Root),
    /// A committed revision (`kiln diff`), its paths relative to its top, files named by their
    /// path in it. Plain manifests are read from memory; anything that needs files (a kurel
    /// package, values files, instance directories, CRDs, symlinks) is rendered from the
    /// revision written into a private temporary directory for the run.
    Revision(Arc<Snapshot>),
}

/// How kro definitions are shipped.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Mode {
    /// Render every object client-side (what kiln has always done).
    #[default]
    Direct,
    /// Ship the ResourceGraphDefinitions and defaulted instances; the controller renders.
    Kro,
}

/// A successful run: what `finish` made of each unit, in output order.
#[derive(Debug)]
pub struct Rendered<T> {
    /// One entry per unit of output.
    pub units: Vec<T>,
    /// What produced each unit (same order and length as `units`).
    pub origins: Vec<Origin>,
    /// Warnings (none that `strict` would have turned into a failure).
    pub warnings: Vec<Diagnostic>,
    /// Every file read, for source snippets.
    pub files: Vec<Arc<SourceFile>>,
    /// Lines for people (stderr): kurel patches enabled on their own.
    pub log: Vec<String>,
    /// Lines for people with `-v`: every kurel patch operation applied.
    pub details: Vec<String>,
    /// Documents read from the inputs (outside packages).
    pub documents: usize,
    /// What was rendered of each kurel package.
    pub packages: Vec<PackageSummary>,
    /// In-memory documents that count like files for redaction (`sets` as a document).
    pub extra_documents: Vec<Value>,
}

/// What a kurel package rendered, for summaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackageSummary {
    /// The package's metadata name.
    pub name: String,
    /// Its version.
    pub version: String,
    /// Objects rendered.
    pub objects: usize,
    /// Patches the package has.
    pub patches: usize,
    /// Patch files applied (one instance), or `None` with instances.
    pub applied: Option<usize>,
    /// Instances rendered (`instances`), or `None` for one.
    pub instances: Option<usize>,
}

/// A failed run: every diagnostic found (errors and the warnings beside them), sorted, and the
/// files they point into.
#[derive(Debug, Default)]
pub struct Failed {
    /// The diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// Every file read, for source snippets.
    pub files: Vec<Arc<SourceFile>>,
    /// In-memory documents that count like files for redaction.
    pub extra_documents: Vec<Value>,
}

impl Failed {
    pub(crate) fn new(
        diagnostics: Vec<Diagnostic>,
        files: Vec<Arc<SourceFile>>,
        extra: &[Value],
    ) -> Self {
        Self {
            diagnostics,
            files,
            extra_documents: extra.to_vec(),
        }
    }

    /// The secrets of the inputs this run read, for doors that print diagnostics.
    pub fn secrets(&self, named: &[SecretPath]) -> Secrets {
        collect_secrets(&self.files, &self.extra_documents, named)
    }

    /// The diagnostics with every secret value blanked out.
    pub fn redacted(&self, named: &[SecretPath]) -> Vec<Diagnostic> {
        let s = self.secrets(named);
        self.diagnostics
            .iter()
            .map(|d| s.redact_diagnostic(d))
            .collect()
    }
}

impl<T> Rendered<T> {
    /// Every secret value of the run: its inputs', `named`'s, and the Secrets among `rendered`
    /// (the output objects).
    pub fn secrets(&self, named: &[SecretPath], rendered: &[Value]) -> Secrets {
        let mut s = collect_secrets(&self.files, &self.extra_documents, named);
        s.add_objects(rendered, named);
        s
    }

    /// The warnings with every secret value blanked out; `rendered` are the output objects
    /// (their Secrets count too).
    pub fn redacted_warnings(&self, named: &[SecretPath], rendered: &[Value]) -> Vec<Diagnostic> {
        if self.warnings.is_empty() {
            return Vec::new();
        }
        let s = self.secrets(named, rendered);
        self.warnings
            .iter()
            .map(|d| s.redact_diagnostic(d))
            .collect()
    }
}

/// Render the request, keeping every unit's objects.
pub fn render(req: &Request) -> Result<Rendered<Vec<Value>>, Failed> {
    render_units(req, Ok)
}

/// Render the request and hand each unit's objects to `finish` on the worker that rendered it
/// (a caller serialises there, so the whole output never exists as objects at once). All or
/// nothing: on any error, including one from `finish`, the result is every diagnostic found.
pub fn render_units<T, F>(req: &Request, finish: F) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_with(req, None, finish, None, None)
}

/// [`render_units`] of a request the caller gives up: its in-memory inputs (texts, parsed
/// documents) are moved into the run, not copied. What a door that holds thousands of items
/// uses: each copy is fresh memory to fill.
pub fn render_units_owned<T, F>(mut req: Request, finish: F) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let inputs = take_inputs(&mut req);
    render_with(&req, Some(inputs), finish, None, None)
}

/// A request's in-memory inputs taken out of it: the request keeps their names (for messages),
/// not their contents.
fn take_inputs(req: &mut Request) -> Vec<Input> {
    let inputs = std::mem::take(&mut req.inputs);
    req.inputs = inputs
        .iter()
        .map(|i| match i {
            Input::Text { name, .. } | Input::Parsed { name, .. } => Input::Text {
                name: name.clone(),
                text: String::new(),
            },
            other => other.clone(),
        })
        .collect();
    inputs
}

/// Every render: where the request's files are ([`Request::files`]), then the run. `owned` are
/// the request's inputs moved out of it; `reuse` and `prepared` are a diff's (`pair`).
fn render_with<T, F>(
    req: &Request,
    owned: Option<Vec<Input>>,
    finish: F,
    reuse: Option<&dyn Reuse<T>>,
    prepared: Option<Result<Prepared, Failed>>,
) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    match &req.files {
        Files::Revision(snapshot) => snapshot::render(req, snapshot, finish, reuse),
        _ => render_units_from(req, owned, None, finish, reuse, prepared),
    }
}

fn render_units_from<T, F>(
    req: &Request,
    owned: Option<Vec<Input>>,
    access: Option<Access>,
    finish: F,
    reuse: Option<&dyn Reuse<T>>,
    prepared: Option<Result<Prepared, Failed>>,
) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    // Every unit's objects are checked on the worker that rendered them, before `finish` sees
    // them: kinds of built-in groups must exist, and identities are kept for the duplicate rule.
    let checked = |objs: Vec<Value>| check_unit(objs, &finish);
    let prepared = match prepared {
        Some(p) => p?,
        None => {
            let taking = reuse.map(|r| move |name: &str, text: &str| r.parsed(name, text));
            let taking = taking.as_ref().map(|t| t as &crate::source::Parsed<'_>);
            prepare(req, owned, access, reuse.is_some(), false, taking)?
        }
    };
    let (r, recorded) = render_checked(req, prepared, checked, reuse)?;
    let problems = duplicates::problems(req, &r.units, &r.origins);
    if !problems.is_empty() {
        let mut sorted = Diagnostics(problems);
        sorted.sort();
        let mut all = r.warnings;
        for p in sorted.0 {
            if !all.contains(&p) {
                all.push(p);
            }
        }
        return Err(Failed::new(all, r.files, &r.extra_documents));
    }
    // Every unit has its output here (a unit with problems failed the run above), so unit
    // indices are those of the result.
    if let Some(reuse) = reuse {
        let mut units = std::collections::HashMap::new();
        let context = recorded.keys.and_then(|(context, keys)| {
            for (i, (c, key)) in r.units.iter().zip(keys).enumerate() {
                if let Some(k) = key {
                    units.insert(k, (i, c.ids.clone()));
                }
            }
            context
        });
        let kurel: Vec<KeptPackage> = recorded
            .kurel
            .into_iter()
            .map(|(context, holder, instances)| KeptPackage {
                context,
                holder,
                instances: instances
                    .into_iter()
                    .map(|(file, i, record)| {
                        let ids = r.units[i].ids.clone();
                        (file.name.clone(), (file, i, ids, record))
                    })
                    .collect(),
            })
            .collect();
        if context.is_some() || !units.is_empty() || !kurel.is_empty() {
            reuse.keep(Kept {
                context,
                units,
                kurel,
            });
        }
    }
    let rendered = Rendered {
        units: if crate::process::exits_soon() {
            // Each object's identity is left to the process's exit (`process::discard`):
            // freeing them, even on the workers, is work the end of a large run waits for.
            r.units
                .into_iter()
                .filter_map(|c| {
                    crate::process::discard(c.ids);
                    c.out
                })
                .collect()
        } else {
            // On the workers (in order): dropping each object's identity on the main thread
            // was as much as the duplicate check itself.
            r.units.into_par_iter().filter_map(|c| c.out).collect()
        },
        origins: r.origins,
        warnings: r.warnings,
        files: r.files,
        log: r.log,
        details: r.details,
        documents: r.documents,
        packages: r.packages,
        extra_documents: r.extra_documents,
    };
    Ok(rendered)
}

/// What [`render_checked`] records for the other side of a diff: its kro context and each
/// unit's key (`None` for units that are neither kro instances nor component releases); and its
/// kurel packages' instances, unit indices among the run's.
#[derive(Default)]
struct Recorded {
    /// The kro context, when the run has one, and each unit's key (kro instances', component
    /// releases'), when there is another side.
    keys: Option<(Option<Context>, Vec<Option<String>>)>,
    kurel: Vec<KurelRecorded>,
}

/// A run read and checked, not rendered yet: what [`prepare`] gives [`render_checked`]. A diff
/// prepares the head side first, to know its context and kro instances before the base renders
/// (`pair`).
pub(crate) struct Prepared {
    /// The documents of its files, kept for the other side of a diff.
    pub(crate) parsed: Option<pair::ParsedFiles>,
    /// The instance keys of its documents, by index, once made ([`Prepared::instance_keys`]).
    keys: Option<Vec<Option<String>>>,
    extra: Vec<Value>,
    access: Access,
    files: Vec<Arc<SourceFile>>,
    diags: Diagnostics,
    documents: Vec<Document>,
    kustomizations: Vec<String>,
    packages: Vec<FoundPackage>,
    opts: Options,
    /// The run's context ([`context_of`]) when it was asked for and the run has definitions.
    context: Option<Context>,
    /// The digest of what its component releases read besides their own documents
    /// ([`reuse::component_context_of`]), when a context was asked for and the run has
    /// component documents.
    component_context: Option<String>,
    /// Its components' keys ([`crate::component::document_keys`]), once made.
    component_keys: Option<std::collections::HashMap<String, String>>,
}

impl Prepared {
    /// The key of every kro instance document of the run ([`pipeline::instance_key`]), when it
    /// has a context: what the run would look up in, or record for, the other side of a diff.
    /// The keys are kept, by document, for this run's render (not made twice).
    pub(crate) fn instance_keys(&mut self) -> std::collections::HashSet<String> {
        if self.context.is_none() || self.opts.kro.is_some() {
            return Default::default();
        }
        let declared = crate::kro::definitions::declared_kinds(&self.documents);
        let keys: Vec<Option<String>> = self
            .documents
            .iter()
            .map(|d| is_instance(d, &declared).then(|| pipeline::instance_key(d)))
            .collect();
        let set = keys.iter().flatten().cloned().collect();
        self.keys = Some(keys);
        set
    }

    /// The run's context, when it has one.
    pub(crate) fn context(&self) -> Option<&Context> {
        self.context.as_ref()
    }

    /// Each component's part of its releases' keys ([`crate::component::document_keys`]), when
    /// it has a component context: what the other side of a diff would look up. Kept for the
    /// render.
    pub(crate) fn component_keys(&mut self) -> std::collections::HashSet<String> {
        let Some(c) = &self.component_context else {
            return Default::default();
        };
        let keys = crate::component::document_keys(&self.documents, c);
        let set = keys.values().cloned().collect();
        self.component_keys = Some(keys);
        set
    }
}

/// Read the request's inputs and check them, up to the render: every diagnostic a render would
/// give before it renders anything. With `context`, the run's context is computed too; with
/// `keep`, a copy of the documents of the files read is kept for the other side of a diff;
/// `taking` has the documents of files the other side read already.
fn prepare(
    req: &Request,
    owned: Option<Vec<Input>>,
    access: Option<Access>,
    context: bool,
    keep: bool,
    taking: Option<&crate::source::Parsed<'_>>,
) -> Result<Prepared, Failed> {
    // What no input can make right, before anything is read or built from the options: a set
    // key deeper than any document (it would build that nesting), a namespace the API server
    // refuses.
    let early = check_options(req);
    if !early.is_empty() {
        return Err(Failed::new(early, Vec::new(), &[]));
    }
    let extra = if req.sets.is_empty() {
        Vec::new()
    } else {
        vec![crate::redact::set_arguments_document(&req.sets)]
    };
    let access = match (access, &req.files) {
        (Some(a), _) => a,
        (None, Files::Within(dir)) => match Access::within(dir) {
            Ok(a) => a,
            Err(d) => return Err(Failed::new(vec![d], Vec::new(), &extra)),
        },
        (None, Files::Tree(root)) => Access::Within(root.clone()),
        (None, Files::AsGiven | Files::Revision(_)) => Access::AsGiven,
    };
    let limits = &req.limits;
    let inputs = owned.unwrap_or_else(|| req.inputs.clone());
    let loaded = crate::source::load_owned_inputs_reusing(
        inputs,
        &access,
        &limits.yaml,
        true,
        taking,
        &req.buffers,
    );
    let kept = (keep && !loaded.diagnostics.has_errors()).then(|| pair::ParsedFiles::of(&loaded));
    let mut files = loaded.files;
    let mut diags = loaded.diagnostics;
    if diags.has_errors() {
        return Err(fail(diags, files, &extra));
    }
    let documents = without_values_files(loaded.documents, &access, &req.values);
    let (documents, kustomizations) = without_kustomizations(documents);
    let packages = loaded.packages;

    let mut problems = Diagnostics::new();
    problems.extend(check_kube_version(req.kube_version.as_deref()));
    problems.extend(check_mode(req));
    problems.extend(check_package_overrides(req, &packages));
    problems.extend(check_environment(req, &documents));
    problems.extend(check_not_empty(req, &documents, &packages, &kustomizations));
    let opts = match options(req, &access, &mut files) {
        Ok(o) => o,
        Err(ds) => {
            problems.extend(ds);
            Options::default()
        }
    };
    if problems.has_errors() {
        diags.extend(problems);
        return Err(fail(diags, files, &extra));
    }

    // For a diff: this run's context, before pass-through values move into their units. The
    // other side's units are taken only when its context is this one, byte for byte.
    // A run without definitions has no instance to take or keep (and a large pass-through tree
    // is not written out as text for nothing).
    let component_context = (context && documents.iter().any(crate::component::is_unit_document))
        .then(|| reuse::component_context_of(req, &documents, &opts));
    let context = (context && documents.iter().any(crate::kro::is_rgd))
        .then(|| context_of(req, &documents, &opts));
    Ok(Prepared {
        parsed: kept,
        keys: None,
        extra,
        access,
        files,
        diags,
        documents,
        kustomizations,
        packages,
        opts,
        context,
        component_context,
        component_keys: None,
    })
}

/// Render a request read and checked ([`prepare`]): its kro instances, documents and component
/// releases through the pipeline, then its kurel packages.
fn render_checked<T, F>(
    req: &Request,
    prepared: Prepared,
    finish: F,
    reuse: Option<&dyn Reuse<T>>,
) -> Result<(Rendered<Checked<T>>, Recorded), Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<Checked<T>, Diagnostic> + Sync,
{
    let Prepared {
        parsed: _,
        keys: known,
        extra,
        access,
        mut files,
        diags,
        mut documents,
        kustomizations,
        packages,
        opts,
        context,
        component_context,
        component_keys,
    } = prepared;
    // Units are exchanged with the other side of a diff only when it has this context; keys
    // are said whenever there is another side (it may take from this one). A component
    // release's key carries its own context ([`crate::component::UnitReuse`]).
    let take_component = |key: &str| reuse.and_then(|r| r.take(key));
    let shares_component = |key: &str| reuse.is_some_and(|r| r.component_shares(key));
    let make_shared = |objs: Vec<Value>| match reuse {
        Some(r) => r.make(objs),
        None => unreachable!("only asked for when `shares`"),
    };
    // Made before the render hands the documents' specs over.
    let component_keys = match (reuse, component_keys, &component_context) {
        (Some(_), Some(keys), _) => Some(keys),
        (Some(_), None, Some(c)) => Some(crate::component::document_keys(&documents, c)),
        _ => None,
    };
    let exchange = match (reuse, &context, &component_keys) {
        (Some(r), here, components) if here.is_some() || components.is_some() => {
            Some(pipeline::Exchange {
                cache: here
                    .as_ref()
                    .filter(|h| r.applies(h))
                    .map(|_| r as &dyn pipeline::InstanceCache<Checked<T>>),
                components: components.as_ref().map(|keys| crate::component::UnitReuse {
                    keys,
                    take: &take_component,
                    shares: &shares_component,
                    make: &make_shared,
                }),
                known: known.as_deref(),
            })
        }
        _ => None,
    };
    let record = exchange.is_some();
    let mut keys = Vec::new();

    // kro instances, pass-through documents and component releases.
    let mut units = Vec::new();
    let mut origins = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Diagnostics::new();
    if !documents.is_empty() || packages.is_empty() {
        match pipeline::render_units_moving(&mut documents, &opts, &finish, exchange.as_ref()) {
            Ok(r) => {
                units = r.units;
                origins = r.origins;
                warnings = r.warnings;
                keys = r.keys;
            }
            Err(ds) => errors.extend(ds),
        }
    }

    // kurel packages, each on its own (a package's instances render in parallel inside). The
    // run's CRDs (`--crds`, and those among the other inputs) type their resources too.
    // Asked of every document, on every core.
    let run_crds: Vec<Value> = opts
        .crds
        .par_iter()
        .chain(&documents)
        .filter(|d| {
            d.kind() == Some("CustomResourceDefinition")
                && d.api_version()
                    .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
        })
        .map(|d| d.value.clone())
        .collect();
    // A kustomization is kustomize's configuration, not a manifest: it is never emitted or
    // applied, and the person running kiln hears so once per file.
    let mut log: Vec<String> = kustomizations
        .iter()
        .map(|f| {
            format!(
                "{f}: kustomize's configuration (a kustomization, or a patch or generator input \
                 one names), not a manifest, was not applied: build the output with kustomize, or \
                 run kiln as its KRM function (kiln-krm)"
            )
        })
        .collect();
    let mut details = Vec::new();
    let mut summaries = Vec::new();
    let mut kurel_kept = Vec::new();
    for found in &packages {
        match render_package(req, &access, found, &run_crds, &finish, reuse) {
            Ok(p) => {
                if let Some((context, holder, instances)) = p.kept {
                    // Unit indices among the run's: the package's units follow those before.
                    let at = units.len();
                    let instances = instances
                        .into_iter()
                        .map(|(f, i, record)| (f, at + i, record))
                        .collect();
                    kurel_kept.push((context, holder, instances));
                }
                files.extend(p.files);
                warnings.extend(p.warnings);
                if req.values.is_empty() && !found.values_beside.is_empty() {
                    warnings.push(unused_values(found));
                }
                log.extend(p.log);
                details.extend(p.details);
                summaries.push(p.summary);
                for (i, u) in p.units.into_iter().enumerate() {
                    units.push(u);
                    if record {
                        keys.push(None);
                    }
                    origins.push(Origin {
                        kind: OriginKind::Kurel,
                        file: found.name.clone(),
                        index: 0,
                        detail: p.instance_names.get(i).cloned(),
                    });
                }
            }
            Err((ds, fs)) => {
                files.extend(fs);
                errors.extend(ds);
            }
        }
    }

    if errors.has_errors() {
        // Reading warnings (duplicate keys) come first, then the rest, as they always have.
        let mut all = diags;
        for d in errors.0 {
            if !all.iter().any(|x| *x == d) {
                all.push(d);
            }
        }
        return Err(fail(all, files, &extra));
    }
    // Reading warnings first, then the render's.
    let mut all_warnings: Vec<Diagnostic> = diags.0;
    for w in warnings {
        if !all_warnings.contains(&w) {
            all_warnings.push(w);
        }
    }
    if req.strict && !all_warnings.is_empty() {
        return Err(Failed::new(
            fatal_in_strict_mode(all_warnings),
            files,
            &extra,
        ));
    }
    // kro mode ships kro definitions; what has no controller is still rendered here, and the
    // person running it should know which is which.
    if req.mode == Mode::Kro {
        let client_side = origins
            .iter()
            .filter(|o| {
                matches!(
                    o.kind,
                    OriginKind::Component
                        | OriginKind::Project
                        | OriginKind::Resource
                        | OriginKind::Kurel
                )
            })
            .count();
        if client_side > 0 {
            log.push(format!(
                "kro mode: {client_side} component release(s) and kurel package instance(s) have no in-cluster controller and were rendered here"
            ));
        }
    }
    let rendered = Rendered {
        units,
        origins,
        warnings: all_warnings,
        files,
        log,
        details,
        documents: {
            let n = documents.len();
            // Left to the process's exit in kiln's executables (`process::discard`): freeing
            // them, even on the workers, is work the end of a large run waits for.
            if crate::process::exits_soon() {
                crate::process::discard(documents);
            } else {
                // Freed on the workers, which allocated most of what they hold.
                documents.into_par_iter().for_each(drop);
            }
            n
        },
        packages: summaries,
        extra_documents: extra,
    };
    let recorded = Recorded {
        keys: if record { Some((context, keys)) } else { None },
        kurel: kurel_kept,
    };
    Ok((rendered, recorded))
}

fn fail(diags: Diagnostics, files: Vec<Arc<SourceFile>>, extra: &[Value]) -> Failed {
    Failed::new(diags.0, files, extra)
}

/// The pipeline options of the request; `--crds` files are read here.
fn options(
    req: &Request,
    access: &Access,
    files: &mut Vec<Arc<SourceFile>>,
) -> Result<Options, Diagnostics> {
    let limits = &req.limits;
    let mut o = Options {
        namespace: req.namespace.clone(),
        expr: limits.expr,
        render: limits.render(),
        pass_through: req.pass_through.clone(),
        kro: (req.mode == Mode::Kro).then_some(crate::strategy::KroMode {
            emit_crds: req.emit_crds,
            sync_waves: req.sync_waves,
        }),
        provenance: !req.no_provenance,
        ..Options::default()
    };
    o.component.env = req.environment.clone();
    o.component.expr = limits.expr;
    o.component.eval = limits.eval;
    o.component.max_collection_size = limits.component_collection_size;
    if !req.crds.is_empty() {
        let inputs: Vec<Input> = req.crds.iter().cloned().map(Input::Path).collect();
        let loaded = crate::source::load_inputs_in(&inputs, access, &limits.yaml, false);
        files.extend(loaded.files);
        if loaded.diagnostics.has_errors() {
            return Err(loaded.diagnostics);
        }
        o.crds = loaded
            .documents
            .into_iter()
            .filter(|d| d.kind() == Some("CustomResourceDefinition"))
            .collect();
    }
    if !req.observed.is_empty() {
        let loaded = crate::source::load_inputs_in(&req.observed, access, &limits.yaml, false);
        files.extend(loaded.files);
        if loaded.diagnostics.has_errors() {
            return Err(loaded.diagnostics);
        }
        o.observed = Some(crate::observed::Observed::from_documents(
            &loaded.documents,
        )?);
    }
    Ok(o)
}

/// The readers of the front-ends' own file formats that hold secrets (kurel's patches), for
/// [`Secrets::collect`].
pub const SECRET_FORMATS: &[FileSecrets] = &[kurel::secrets::secret_lines];

/// The secrets of the files a run read, of in-memory objects (rendered output, `--set`
/// arguments) and at the paths the user named, every front-end's file format included: what a
/// door blanks out of what it prints ([`Secrets::collect`] with [`SECRET_FORMATS`]).
pub fn collect_secrets(
    files: &[Arc<SourceFile>],
    objects: &[Value],
    named: &[SecretPath],
) -> Secrets {
    Secrets::collect(files, objects, named, SECRET_FORMATS)
}

/// The definitions of a request's inputs, for the commands that show them (`kiln graph`,
/// `kiln schema`) rather than render.
pub struct Definitions {
    /// The documents read, as `render` reads them: kurel packages are found rather than read as
    /// manifests, and kustomizations are left out.
    pub documents: Vec<Document>,
    /// The kurel packages found among the inputs (not loaded).
    pub packages: Vec<crate::source::FoundPackage>,
    /// The kustomization files left out.
    pub kustomizations: Vec<String>,
    /// The kro definitions loaded from them.
    pub definitions: pipeline::Definitions,
    /// Every file read.
    pub files: Vec<Arc<SourceFile>>,
    /// The run's options (observed state included).
    pub options: Options,
}

/// Read the request's inputs and load their definitions, with the request's CRDs, Kubernetes
/// version and limits. Any error fails the call with every diagnostic found.
pub fn definitions(req: &Request) -> Result<Definitions, Failed> {
    let access = match &req.files {
        Files::AsGiven => Access::AsGiven,
        Files::Tree(root) => Access::Within(root.clone()),
        Files::Within(dir) => {
            Access::within(dir).map_err(|d| Failed::new(vec![d], Vec::new(), &[]))?
        }
        // What the commands that show definitions never name.
        Files::Revision(_) => {
            return Err(Failed::new(
                vec![Diagnostic::error(
                    codes::REQUEST_INVALID,
                    "the definitions of a committed revision are not read",
                )],
                Vec::new(),
                &[],
            ))
        }
    };
    // The same walk as `render`: a tree `render` accepts is a tree every command accepts.
    let loaded = load_inputs_in(&req.inputs, &access, &req.limits.yaml, true);
    let mut files = loaded.files;
    let mut diags = loaded.diagnostics;
    if diags.has_errors() {
        return Err(fail(diags, files, &[]));
    }
    let (documents, kustomizations) = without_kustomizations(loaded.documents);
    let packages = loaded.packages;
    diags.extend(check_kube_version(req.kube_version.as_deref()));
    let opts = match options(req, &access, &mut files) {
        Ok(o) => o,
        Err(ds) => {
            diags.extend(ds);
            Options::default()
        }
    };
    if diags.has_errors() {
        return Err(fail(diags, files, &[]));
    }
    match pipeline::definitions(&documents, &opts) {
        Ok(definitions) => Ok(Definitions {
            documents,
            packages,
            kustomizations,
            definitions,
            files,
            options: opts,
        }),
        Err(ds) => {
            let mut all = diags;
            all.extend(ds);
            Err(fail(all, files, &[]))
        }
    }
}

/// Whether kiln renders from a document's value: a ResourceGraphDefinition, an instance of a
/// kind one of the run's definitions defines (`defines(group, kind)`), or a component-type
/// document. What a door must leave to kiln even where its protocol would set it aside.
pub fn is_source(v: &Value, defines: impl Fn(&str, &str) -> bool) -> bool {
    let field = |k| {
        crate::lookup::field(v, k)
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let (api_version, kind) = (field("apiVersion"), field("kind"));
    crate::kro::rgd::is_rgd_value(v)
        || crate::component::is_component_api_version(api_version)
        || defines(crate::scope::group_of(api_version), kind)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::path::Path;

    /// What kiln renders from, as a door asks of an item it would otherwise set aside: a
    /// definition, an instance of a kind the run defines (by group and kind, any version), a
    /// component-type document; not a plain object, nor an instance of an undefined kind.
    #[test]
    fn sources_are_definitions_instances_and_component_documents() {
        let defines = |g: &str, k: &str| (g, k) == ("example.org", "App");
        let source = |v: Value| is_source(&v, defines);
        let rgd = serde_json::json!({"apiVersion": "kro.run/v1alpha1", "kind": "ResourceGraphDefinition"});
        assert!(source(rgd));
        assert!(source(
            serde_json::json!({"apiVersion": "example.org/v1", "kind": "App"})
        ));
        assert!(source(
            serde_json::json!({"apiVersion": "example.org/v2", "kind": "App"})
        ));
        assert!(source(
            serde_json::json!({"apiVersion": "openchoreo.dev/v1alpha1", "kind": "Component"})
        ));
        assert!(!source(
            serde_json::json!({"apiVersion": "example.org/v1", "kind": "Other"})
        ));
        assert!(!source(
            serde_json::json!({"apiVersion": "other.org/v1", "kind": "App"})
        ));
        assert!(!source(
            serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"})
        ));
        assert!(!source(serde_json::json!({"kind": "App"})));
    }

    /// A scratch directory with `root/` (what a door confines to) and `outside/` beside it.
    fn scratch() -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "kiln-request-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let put = |rel: &str, text: &str| {
            let p = d.join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        };
        put(
            "root/app.kurel/parameters.yaml",
            "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: x\n",
        );
        put(
            "root/app.kurel/resources/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {mode: \"${mode}\"}\n",
        );
        put("root/values/prod.yaml", "mode: prod\n");
        put("outside/values.yaml", "mode: stolen\n");
        put(
            "outside/cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n",
        );
        d
    }

    fn confined(d: &Path) -> Request {
        Request {
            files: Files::Within(d.join("root")),
            inputs: vec![Input::Path("app.kurel".into())],
            ..Request::default()
        }
    }

    fn codes_of(f: &Failed) -> Vec<&'static str> {
        f.diagnostics.iter().map(|d| d.code.id).collect()
    }

    /// The owned path moves what it is given and renders exactly what the borrowed path does:
    /// parsed documents are taken as they are, and pass-through values are not copied.
    #[test]
    fn owned_parsed_inputs_render_like_texts() {
        let rgd = "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: t}\nspec:\n  schema: {apiVersion: v1alpha1, kind: T, spec: {n: string}}\n  resources:\n  - id: cm\n    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.spec.n}'}}\n";
        let texts = [
            ("a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain, labels: {x: w}}\ndata: {k: v}\n"),
            ("rgd.yaml", rgd),
            ("i.yaml", "apiVersion: kro.run/v1alpha1\nkind: T\nmetadata: {name: i, namespace: n}\nspec: {n: made}\n"),
        ];
        let as_text: Vec<Input> = texts
            .iter()
            .map(|(n, t)| Input::Text {
                name: n.to_string(),
                text: t.to_string(),
            })
            .collect();
        let as_parsed: Vec<Input> = texts
            .iter()
            .map(|(n, t)| {
                let d = crate::document::parse_file(n, t.to_string(), &Default::default()).unwrap();
                Input::Parsed {
                    name: n.to_string(),
                    text: t.to_string(),
                    value: d[0].value.clone(),
                }
            })
            .collect();
        let a = render(&Request {
            inputs: as_text,
            ..Request::default()
        })
        .unwrap();
        let b = render_units_owned(
            Request {
                inputs: as_parsed,
                ..Request::default()
            },
            Ok,
        )
        .unwrap();
        assert_eq!(a.units, b.units);
        assert_eq!(
            a.units[0][0]["data"]["k"], "v",
            "the pass-through document whole"
        );
        assert_eq!(a.units[1][0]["metadata"]["name"], "made");
        assert_eq!(a.origins, b.origins);
    }

    #[test]
    fn a_confined_request_reads_inside_its_root() {
        let d = scratch();
        let mut req = confined(&d);
        req.values = vec!["values/prod.yaml".into()];
        let out = render(&req).expect("renders");
        assert_eq!(out.units[0][0]["data"]["mode"], "prod");
        assert_eq!(out.origins[0].kind, OriginKind::Kurel);
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn a_confined_request_refuses_every_path_that_leaves_its_root() {
        let d = scratch();
        #[cfg(unix)]
        std::os::unix::fs::symlink(d.join("outside/values.yaml"), d.join("root/link.yaml"))
            .unwrap();
        let abs = d.join("outside/values.yaml");
        let mut bad: Vec<PathBuf> = vec!["../outside/values.yaml".into(), abs];
        if cfg!(unix) {
            bad.push("link.yaml".into());
        }
        for v in bad {
            let mut req = confined(&d);
            req.values = vec![v.clone()];
            let f = render(&req).expect_err("refused");
            assert_eq!(codes_of(&f), vec!["KLN1002"], "{}", v.display());
        }
        // Inputs, instances and CRDs too.
        let mut req = confined(&d);
        req.inputs = vec![Input::Path("../outside/cm.yaml".into())];
        assert_eq!(codes_of(&render(&req).unwrap_err()), vec!["KLN1002"]);
        let mut req = confined(&d);
        req.instances = Some("../outside".into());
        assert_eq!(codes_of(&render(&req).unwrap_err()), vec!["KLN1002"]);
        let mut req = confined(&d);
        req.crds = vec![d.join("outside")];
        assert_eq!(codes_of(&render(&req).unwrap_err()), vec!["KLN1002"]);
        fs::remove_dir_all(d).unwrap();
    }

    /// A run confined to a root that names files by their path in it (what `kiln diff` does
    /// with a repository): a values file met in the walk is still known as the values file.
    #[test]
    fn a_root_named_by_relative_paths_finds_its_values_files() {
        let d = scratch();
        let root = Root::named(&d.join("root"), PathBuf::new()).unwrap();
        let mut req = Request {
            inputs: vec![Input::Path(PathBuf::new())],
            values: vec!["values/prod.yaml".into()],
            files: Files::Tree(root),
            ..Request::default()
        };
        let out = render(&req).expect("renders");
        assert_eq!(out.units.len(), 1);
        assert_eq!(out.units[0][0]["data"]["mode"], "prod");
        // The same tree as a snapshot: files named as in the tree, removed after.
        let mut snap = Snapshot::new();
        for rel in [
            "app.kurel/parameters.yaml",
            "app.kurel/resources/cm.yaml",
            "values/prod.yaml",
        ] {
            let bytes = fs::read(d.join("root").join(rel)).unwrap();
            snap.add(Path::new(rel), crate::source::SnapshotEntry::File(bytes))
                .unwrap();
        }
        req.files = Files::Revision(Arc::new(snap));
        let out = render(&req).expect("renders");
        assert_eq!(out.units[0][0]["data"]["mode"], "prod");
        let mut names: Vec<&str> = out.files.iter().map(|f| f.name.as_str()).collect();
        names.sort();
        // The values file is read twice: in the walk and as values.
        names.dedup();
        assert_eq!(
            names,
            [
                "app.kurel/parameters.yaml",
                "app.kurel/resources/cm.yaml",
                "values/prod.yaml"
            ]
        );
        fs::remove_dir_all(d).unwrap();
    }

    /// A snapshot of plain manifests is read from memory and renders exactly what the same
    /// snapshot written out renders (same objects, same order, same file names); anything that
    /// needs files takes the written-out path.
    #[test]
    fn snapshots_read_from_memory_render_as_written_out() {
        use crate::source::SnapshotEntry;
        let cm = |n: &str| {
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {n}}}\n").into_bytes()
        };
        let mut snap = Snapshot::new();
        for (rel, bytes) in [
            ("apps/b.yaml", cm("b")),
            ("apps/a/z.yml", cm("z")),
            ("apps/a.yaml", cm("a")),
            ("apps/.hidden/x.yaml", cm("hidden")),
            ("apps/readme.md", b"# not a manifest\n".to_vec()),
            (
                "other/o.json",
                br#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "o"}}"#.to_vec(),
            ),
            ("other/named.txt", cm("named")),
        ] {
            snap.add(Path::new(rel), SnapshotEntry::File(bytes))
                .unwrap();
        }
        let mut req = Request {
            inputs: vec![
                Input::Path("apps".into()),
                Input::Path("./other/o.json".into()),
                Input::Path("other/named.txt".into()),
            ],
            ..Request::default()
        };
        let texts = snap
            .as_texts(&req.inputs, 1 << 20)
            .expect("plain manifests");
        let names: Vec<String> = texts
            .iter()
            .map(|i| match i {
                Input::Text { name, .. } => name.clone(),
                _ => unreachable!(),
            })
            .collect();
        assert_eq!(
            names,
            [
                "apps/a/z.yml",
                "apps/a.yaml",
                "apps/b.yaml",
                "./other/o.json",
                "other/named.txt"
            ]
        );
        req.files = Files::Revision(Arc::new(snap.clone()));
        let from_memory = render(&req).unwrap();
        let tree = snap.materialize().unwrap();
        req.files = Files::Tree(tree.root().clone());
        let from_disk = render(&req).unwrap();
        assert_eq!(from_memory.units, from_disk.units);
        assert_eq!(from_memory.origins, from_disk.origins);
        // What needs files: a symlink, a kurel package, a file over the limit, a missing path.
        let mut linked = snap.clone();
        linked
            .add(
                Path::new("apps/l.yaml"),
                SnapshotEntry::Symlink("b.yaml".into()),
            )
            .unwrap();
        assert!(linked.as_texts(&req.inputs, 1 << 20).is_none());
        let mut pkg = snap.clone();
        pkg.add(
            Path::new("apps/p.kurel/parameters.yaml"),
            SnapshotEntry::File(b"kurel: {}\n".to_vec()),
        )
        .unwrap();
        assert!(pkg.as_texts(&req.inputs, 1 << 20).is_none());
        assert!(snap.as_texts(&req.inputs, 10).is_none());
        assert!(snap
            .as_texts(&[Input::Path("nowhere".into())], 1 << 20)
            .is_none());
    }

    #[test]
    fn the_same_paths_are_the_users_own_without_a_root() {
        let d = scratch();
        let req = Request {
            inputs: vec![Input::Path(d.join("root/app.kurel"))],
            values: vec![d.join("root/../outside/values.yaml")],
            ..Request::default()
        };
        let out = render(&req).expect("renders");
        assert_eq!(out.units[0][0]["data"]["mode"], "stolen");
        fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn kube_versions_with_a_patch_match_the_bundled_minor() {
        let bundled = crate::openapi::Schemas::kubernetes_version();
        assert!(check_kube_version(Some(&format!("v{bundled}.3"))).is_none());
        assert!(check_kube_version(Some(bundled)).is_none());
        let d = check_kube_version(Some("1.2")).expect("refused");
        assert_eq!(d.code, codes::REQUEST_INVALID);
    }

    #[test]
    fn strict_turns_warnings_into_a_failure() {
        let dup =
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: \"1\", k: \"2\"}\n";
        let mut req = Request {
            inputs: vec![Input::Text {
                name: "dup.yaml".into(),
                text: dup.into(),
            }],
            ..Request::default()
        };
        assert_eq!(render(&req).unwrap().warnings.len(), 1);
        req.strict = true;
        assert_eq!(codes_of(&render(&req).unwrap_err()), vec!["KLN1008"]);
    }
}
