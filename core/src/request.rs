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
//! **Paths and trust.** With [`Request::root`] unset, every path of the request is the user's
//! own and is read as given (absolute, `..`, a fifo such as `<(helm template …)`). With it set,
//! every path is resolved inside that root and may not leave it: what a door does with paths
//! that come from untrusted configuration. Paths found inside inputs (a package's files) are
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

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rayon::prelude::*;
use serde_json::Value;

use crate::component;
use crate::diag::{codes, quote, Diagnostic, Diagnostics};
use crate::document::{Document, SourceFile};
use crate::kurel;
use crate::limits::Limits;
use crate::pipeline::{self, Options};
pub use crate::provenance::{Origin, OriginKind};
use crate::redact::{FileSecrets, SecretPath, Secrets};
use crate::source::{load_inputs_in, Access, FoundPackage, Input, Root, Snapshot};

mod pair;
pub use pair::{render_pair, Pair, Tree};

/// Everything one run needs, whatever door it came through.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// What to read: paths (files, or directories walked recursively), stdin, in-memory texts.
    pub inputs: Vec<Input>,
    /// The root untrusted paths stay in; `None` when every path is the user's own.
    pub root: Option<PathBuf>,
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
    /// The warnings with every secret value blanked out; `rendered` are the output objects
    /// (their Secrets count too).
    pub fn redacted_warnings(&self, named: &[SecretPath], rendered: &[Value]) -> Vec<Diagnostic> {
        if self.warnings.is_empty() {
            return Vec::new();
        }
        let mut s = collect_secrets(&self.files, &self.extra_documents, named);
        s.add_objects(rendered, named);
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
    render_units_from(req, None, None, finish, Link::default()).map(|(r, _)| r)
}

/// [`render_units`] with every path of the request read inside `root` (as [`Request::root`]
/// would, which is ignored here), files named as `root` names them. What `kiln diff` renders a
/// repository's working tree with: every path of the run relative to the repository's top, and
/// no file of the run outside it.
pub fn render_units_within<T, F>(
    req: &Request,
    root: &Root,
    finish: F,
) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_units_from(
        req,
        None,
        Some(Access::Within(root.clone())),
        finish,
        Link::default(),
    )
    .map(|(r, _)| r)
}

/// [`render_units_within`] a tree that is not on disk (a committed revision), its paths those
/// of the request (relative to the tree's top). The snapshot is written into a private temporary
/// directory for the run and removed after it; files are named by their path in the tree, in
/// diagnostics too (a kurel package's files included).
pub fn render_snapshot<T, F>(
    req: &Request,
    snapshot: &Snapshot,
    finish: F,
) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    snapshot_from(req, snapshot, finish, Link::default()).map(|(r, _)| r)
}

/// [`render_snapshot`], taking from and recording for the other side of a diff.
fn snapshot_from<T, F>(
    req: &Request,
    snapshot: &Snapshot,
    finish: F,
    link: Link<'_, T>,
) -> Result<(Rendered<T>, Option<Earlier>), Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    // Plain manifests are read from memory; anything that needs files (a kurel package, values
    // files, instance directories, CRDs, symlinks) is rendered from a written-out tree.
    if let Some(own) = in_memory(req, snapshot) {
        return render_owned_from(own, finish, link);
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
    match render_units_from(req, None, within, finish, link) {
        Ok((mut r, kept)) => {
            r.files = rename_files(std::mem::take(&mut r.files));
            r.warnings = std::mem::take(&mut r.warnings)
                .into_iter()
                .map(rename_diag)
                .collect();
            for o in &mut r.origins {
                o.file = tree.tree_name(&o.file);
            }
            Ok((r, kept))
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

/// The request of a snapshot read from memory, its inputs the snapshot's texts, when nothing of
/// the run needs files on disk (a kurel package, values files, instance directories, CRDs,
/// symlinks).
fn in_memory(req: &Request, snapshot: &Snapshot) -> Option<Request> {
    if !(req.values.is_empty() && req.instances.is_none() && req.crds.is_empty()) {
        return None;
    }
    let inputs = snapshot.as_texts(&req.inputs, req.limits.yaml.max_input_bytes)?;
    let mut own = req.clone();
    own.root = None;
    own.inputs = inputs;
    Some(own)
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

/// [`render_units`] of a request the caller gives up: its in-memory inputs (texts, parsed
/// documents) are moved into the run, not copied. What a door that holds thousands of items
/// uses: each copy is fresh memory to fill.
pub fn render_units_owned<T, F>(req: Request, finish: F) -> Result<Rendered<T>, Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    render_owned_from(req, finish, Link::default()).map(|(r, _)| r)
}

fn render_owned_from<T, F>(
    mut req: Request,
    finish: F,
    link: Link<'_, T>,
) -> Result<(Rendered<T>, Option<Earlier>), Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let inputs = take_inputs(&mut req);
    render_units_from(&req, Some(inputs), None, finish, link)
}

/// What a run of one side of a diff takes from the other's: the other's record, and its unit
/// of each index (see `pair`).
type From<'a, T> = Option<(&'a Earlier, &'a (dyn Fn(usize) -> T + Sync))>;

/// What one side of a diff is given for its run (see `pair`); the default for a run alone.
pub(crate) struct Link<'a, T> {
    /// The other side's record and units, to take unchanged instances from.
    pub(crate) from: From<'a, T>,
    /// Keep a record ([`Earlier`]) for the other side.
    pub(crate) record: bool,
    /// The other side's context, its instance keys, and what to make of the units of the
    /// instances it will take from this run ([`pipeline::Shared`]).
    pub(crate) shared: Option<SharedWith<'a, T>>,
    /// The run, already read and checked ([`prepare`]), or how that failed.
    pub(crate) prepared: Option<Result<Prepared, Failed>>,
    /// Documents the other side parsed ([`ParsedFiles`]), to take instead of parsing.
    pub(crate) parsed: Option<&'a crate::source::Parsed<'a>>,
}

/// [`Link::shared`].
pub(crate) type SharedWith<'a, T> = (
    &'a str,
    &'a std::collections::HashSet<String>,
    &'a pipeline::SharedFinish<'a, T>,
);

impl<T> Default for Link<'_, T> {
    fn default() -> Self {
        Self {
            from: None,
            record: false,
            shared: None,
            prepared: None,
            parsed: None,
        }
    }
}

/// A unit's objects checked (built-in kinds exist; identities kept for the duplicate rule), then
/// made into `finish`'s output when they pass.
fn check_unit<T>(
    objs: Vec<Value>,
    finish: &(impl Fn(Vec<Value>) -> Result<T, Diagnostic> + ?Sized),
) -> Result<Checked<T>, Diagnostic> {
    let mut problems = crate::inventory::check_rendered(&objs);
    problems.extend(crate::names::check_namespaces(&objs));
    let ids = objs.iter().filter_map(identity).collect();
    if !problems.is_empty() {
        return Ok(Checked {
            out: None,
            ids,
            problems,
        });
    }
    Ok(Checked {
        out: Some(finish(objs)?),
        ids,
        problems,
    })
}

/// What one rendered side keeps for the other side of a diff: the context its kro instances
/// were rendered in ([`context_of`]), and the index and identities of each instance's unit by
/// the instance's key ([`pipeline::instance_key`]).
#[derive(Debug)]
pub(crate) struct Earlier {
    context: String,
    units: std::collections::HashMap<String, (usize, Vec<Identity>)>,
}

fn render_units_from<T, F>(
    req: &Request,
    owned: Option<Vec<Input>>,
    access: Option<Access>,
    finish: F,
    link: Link<'_, T>,
) -> Result<(Rendered<T>, Option<Earlier>), Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    // Every unit's objects are checked on the worker that rendered them, before `finish` sees
    // them: kinds of built-in groups must exist, and identities are kept for the duplicate rule.
    let checked = |objs: Vec<Value>| check_unit(objs, &finish);
    let Link {
        from,
        record,
        shared,
        prepared,
        parsed,
    } = link;
    // The instances the other side takes from this one are made with their own `finish`,
    // checked alike.
    let shared_finish = shared.map(|(_, _, f)| move |objs: Vec<Value>| check_unit(objs, f));
    // An unchanged instance's unit as the other side rendered it: its objects passed the checks
    // there (that side rendered without an error), and its identities join this side's
    // duplicate check below like any unit's.
    let earlier = from.map(|(e, unit_at)| {
        let hook = move |key: &str| -> Option<Checked<T>> {
            let (i, ids) = e.units.get(key)?;
            Some(Checked {
                out: Some(unit_at(*i)),
                ids: ids.clone(),
                problems: Vec::new(),
            })
        };
        (e.context.as_str(), hook)
    });
    let reusing = Reusing {
        record,
        earlier: earlier
            .as_ref()
            .map(|(c, h)| (*c, h as &pipeline::EarlierUnit<'_, Checked<T>>)),
        shared: match (shared, &shared_finish) {
            (Some((context, keys, _)), Some(f)) => Some((
                context,
                pipeline::Shared {
                    keys,
                    finish: f as &pipeline::SharedFinish<'_, Checked<T>>,
                },
            )),
            _ => None,
        },
        prepared,
        parsed,
    };
    let (r, recorded) = render_checked(req, owned, access, checked, reusing)?;
    let mut problems = Vec::new();
    let ids: Vec<&[Identity]> = r.units.iter().map(|c| c.ids.as_slice()).collect();
    let mut repeats = duplicate_ids(&ids).into_iter().peekable();
    // Per directory: the first unit of each (identity, directory) among the repeated ones.
    let mut in_dir: std::collections::HashMap<(&Identity, &str), usize> = Default::default();
    for (i, c) in r.units.iter().enumerate() {
        // A rendered object's problem is placed on the input it came from.
        problems.extend(c.problems.iter().map(|d| match d.file {
            Some(_) => d.clone(),
            None => d.clone().in_file(r.origins[i].file.clone()),
        }));
        while let Some((_, j, mut first)) = repeats.next_if(|(at, _, _)| *at == i) {
            let id = &c.ids[j];
            if req.duplicates_per_directory {
                in_dir
                    .entry((id, dir_of(&r.origins[first])))
                    .or_insert(first);
                match in_dir.entry((id, dir_of(&r.origins[i]))) {
                    std::collections::hash_map::Entry::Occupied(o) => first = *o.get(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(i);
                        continue;
                    }
                }
            }
            let (a, b) = (&r.origins[first], &r.origins[i]);
            let per_environment = |k: OriginKind| {
                matches!(
                    k,
                    OriginKind::Component | OriginKind::Project | OriginKind::Resource
                )
            };
            let other_environment = per_environment(a.kind)
                && per_environment(b.kind)
                && a.detail.is_some()
                && b.detail.is_some()
                && a.detail != b.detail;
            if !(req.environments_apart && other_environment) {
                problems.push(duplicate(id, a, b));
            }
        }
    }
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
    let mut kept = None;
    if let Some((context, keys)) = recorded {
        let mut units = std::collections::HashMap::new();
        for (i, (c, key)) in r.units.iter().zip(keys).enumerate() {
            if let Some(k) = key {
                units.insert(k, (i, c.ids.clone()));
            }
        }
        kept = Some(Earlier { context, units });
    }
    let rendered = Rendered {
        units: if crate::process::exits_soon() {
            // Each object's identity is left to the process's exit (`process::discard`):
            // freeing them, even on the workers, cost 1.1 ms at 10 000 instances.
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
    Ok((rendered, kept))
}

/// What [`render_checked`] does for a diff: record the context and instance keys of this run
/// for the other side, and take the units of unchanged instances from the other side when the
/// context is the same as its.
struct Reusing<'a, T> {
    record: bool,
    /// The other side's context and its units by instance key.
    earlier: Option<(&'a str, &'a pipeline::EarlierUnit<'a, T>)>,
    /// The other side's context, and the instances it will take from this one (made with
    /// their own `finish`).
    shared: Option<(&'a str, pipeline::Shared<'a, T>)>,
    /// This run already read and checked (or failed to).
    prepared: Option<Result<Prepared, Failed>>,
    /// Documents the other side parsed, to take instead of parsing the same files again.
    parsed: Option<&'a crate::source::Parsed<'a>>,
}

/// Everything the render of a kro instance can read besides its own document, as text: the
/// request (but its inputs and root: where documents come from is not what they say), every
/// document of the run that is not a kro instance (definitions, CRDs, component documents,
/// pass-through documents: more than an instance reads, so that the rule is plainly safe), the
/// `--crds` CRDs and the observed state. Two runs with the same context render the same
/// objects for instance documents of the same value. kurel packages are not in it: they are
/// read apart from the documents and cannot reach a kro instance (and each side renders its
/// own).
fn context_of(req: &Request, documents: &[Document], opts: &Options) -> String {
    use std::fmt::Write as _;
    let mut bare = req.clone();
    bare.inputs = Vec::new();
    bare.root = None;
    let mut out = format!("{bare:?}\n");
    let declared = pipeline::declared_kinds(documents);
    for d in documents {
        let instance = is_instance(d, &declared);
        if !instance {
            let _ = writeln!(out, "{}", d.value);
        }
    }
    out.push_str("--crds\n");
    for d in &opts.crds {
        let _ = writeln!(out, "{}", d.value);
    }
    let _ = write!(out, "--observed\n{:?}", opts.observed);
    out
}

/// Whether a document is a kro instance: its group, version and kind are declared by an RGD of
/// the run, and it is neither an RGD nor a component document.
fn is_instance(
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

/// Every object whose identity an earlier object of the output has: `(unit, index of the object
/// in the unit, unit of the first object with that identity)`, in output order.
///
/// A hash map of identities, split by hash into one table per worker, each filled on its own
/// core: at 10 000 web-app instances one table of 70 000 identities took 1.5–2.5 ms of the main
/// thread alone. An identity always lands in the same table, which sees the objects in output
/// order, so each table finds what one table would.
fn duplicate_ids(units: &[&[Identity]]) -> Vec<(usize, usize, usize)> {
    use std::collections::hash_map::Entry;
    let tables = rayon::current_num_threads().clamp(1, 8) as u64;
    let objects: usize = units.iter().map(|ids| ids.len()).sum();
    let mut found: Vec<(usize, usize, usize)> = (0..tables)
        .into_par_iter()
        .flat_map_iter(|table| {
            // Only lookups, never iterated; the identity's own hash (`Identity::hash`) is what
            // the map hashes.
            let mut seen: std::collections::HashMap<&Identity, usize, foldhash::fast::FixedState> =
                std::collections::HashMap::with_capacity_and_hasher(
                    objects / tables as usize + 1,
                    Default::default(),
                );
            let mut repeats = Vec::new();
            for (i, ids) in units.iter().enumerate() {
                for (j, id) in ids.iter().enumerate() {
                    if id.hash % tables != table {
                        continue;
                    }
                    match seen.entry(id) {
                        Entry::Vacant(v) => {
                            v.insert(i);
                        }
                        Entry::Occupied(o) => repeats.push((i, j, *o.get())),
                    }
                }
            }
            repeats
        })
        .collect();
    found.sort_unstable();
    found
}

/// A unit's output with what the whole-output checks need of it.
struct Checked<T> {
    out: Option<T>,
    ids: Vec<Identity>,
    problems: Vec<Diagnostic>,
}

/// What makes an object unique in a cluster: API group, kind, namespace, name.
///
/// The four parts are kept in one string with the ends of the first three beside it (equal
/// identities have equal parts, and no two different ones share both text and ends): every
/// rendered object has one, and they are all held until the duplicate check at the end of the
/// run, where four strings each were a tenth of the peak memory of 10 000 web-app instances.
///
/// Each carries its text's hash, computed where the identity is made (on the worker that
/// rendered the object): the duplicate check then hashes one number per object on the main
/// thread, where hashing 70 000 texts was a fifth of what it did alone at 10 000 instances.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Identity {
    text: String,
    ends: [u32; 3],
    hash: u64,
}

impl std::hash::Hash for Identity {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // Equal identities have equal texts, so equal hashes: the Eq/Hash contract holds.
        state.write_u64(self.hash);
    }
}

impl Identity {
    fn new(group: &str, kind: &str, namespace: &str, name: &str) -> Option<Self> {
        let mut text =
            String::with_capacity(group.len() + kind.len() + namespace.len() + name.len());
        let mut ends = [0u32; 3];
        for (end, part) in ends.iter_mut().zip([group, kind, namespace]) {
            text.push_str(part);
            *end = u32::try_from(text.len()).ok()?;
        }
        text.push_str(name);
        let hash = {
            use std::hash::BuildHasher;
            foldhash::fast::FixedState::default().hash_one((&text, ends))
        };
        Some(Self { text, ends, hash })
    }

    /// Group, kind, namespace, name.
    fn parts(&self) -> (&str, &str, &str, &str) {
        let [a, b, c] = self.ends.map(|e| e as usize);
        (
            &self.text[..a],
            &self.text[a..b],
            &self.text[b..c],
            &self.text[c..],
        )
    }
}

/// The identity of a rendered object, read with plain lookups: this runs for every object of
/// the output, on the worker that rendered it.
fn identity(o: &Value) -> Option<Identity> {
    let top = |k: &str| o.get(k).and_then(Value::as_str);
    let meta = o.get("metadata");
    let meta = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
    Identity::new(
        crate::scope::group_of(top("apiVersion")?),
        top("kind")?,
        meta("namespace").unwrap_or(""),
        meta("name")?,
    )
}

fn describe(o: &Origin) -> String {
    let what = match o.kind {
        OriginKind::Passthrough => "a document",
        OriginKind::Instance => "the instance",
        OriginKind::Component | OriginKind::ComponentPassthrough => "the component",
        OriginKind::Project => "the project binding",
        OriginKind::Resource => "the resource binding",
        OriginKind::Kurel => "the kurel package",
        OriginKind::Definition => "the definition",
    };
    let mut s = format!("{what} in {}", o.file);
    if o.kind != OriginKind::Kurel {
        s.push_str(&format!(" (document {})", o.index + 1));
    }
    if let Some(d) = &o.detail {
        s.push_str(&format!(" [{d}]"));
    }
    s
}

/// The directory of an origin's file (`""` at the top).
fn dir_of(o: &Origin) -> &str {
    o.file.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Two objects of one output with one identity: applied together, one overwrites the other.
fn duplicate(id: &Identity, first: &Origin, second: &Origin) -> Diagnostic {
    let (group, kind, ns, name) = id.parts();
    let gk = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    let at = if ns.is_empty() {
        name.to_string()
    } else {
        format!("{ns}/{name}")
    };
    Diagnostic::error(
        codes::DUPLICATE_OBJECT,
        format!(
            "{gk} {at} is rendered twice: by {} and by {}",
            describe(first),
            describe(second)
        ),
    )
    .in_file(second.file.clone())
    .with_hint(match (&first.detail, &second.detail) {
        // Releases of different environments: the run renders every environment at once.
        (Some(x), Some(y)) if x != y && is_release(first.kind) && is_release(second.kind) => format!(
            "the releases of environments {x} and {y} hold the same object, and one output cannot hold both: render one environment at a time with --env"
        ),
        _ => "each object of one output must be unique (group, kind, namespace, name): applied together, one would overwrite the other; rename one, or render them in separate runs".to_string(),
    })
}

/// Whether a unit is released per environment.
fn is_release(kind: OriginKind) -> bool {
    matches!(
        kind,
        OriginKind::Component | OriginKind::Project | OriginKind::Resource
    )
}

/// The documents that are not kustomize's configuration, and the files those came from: a file
/// named as kustomize names its configuration (`kustomization.yaml`, `kustomization.yml`,
/// `Kustomization`), or any document of the `kustomize.config.k8s.io` group (a Kustomization or
/// a kustomize Component), written with an apiVersion or not.
fn without_kustomizations(documents: Vec<Document>) -> (Vec<Document>, Vec<String>) {
    use rayon::prelude::*;
    // Which documents are kustomizations, on every core (a pass over every document read).
    let kustomization: Vec<bool> = documents
        .par_iter()
        .map(|d| {
            crate::kustomize_paths::is_kustomization_file(&d.source.name)
                || d.api_version()
                    .is_some_and(|v| v.starts_with("kustomize.config.k8s.io/"))
        })
        .collect();
    if !kustomization.contains(&true) {
        return (documents, Vec::new());
    }
    // The files the kustomizations name as kustomize's own (patches, generator files): not
    // objects, and named with them as not applied.
    let own: std::collections::HashSet<String> = documents
        .iter()
        .zip(&kustomization)
        .filter(|(_, k)| **k)
        .flat_map(|(d, _)| {
            let dir = d.source.name.rsplit_once('/').map_or("", |(dir, _)| dir);
            crate::kustomize_paths::own_files(&d.value)
                .into_iter()
                .filter_map(move |p| crate::kustomize_paths::join_lexically(dir, &p))
        })
        .collect();
    let mut files: Vec<String> = Vec::new();
    let kept = documents
        .into_iter()
        .zip(kustomization)
        .filter_map(|(d, k)| {
            if k || own.contains(&d.source.name) {
                if !files.contains(&d.source.name) {
                    files.push(d.source.name.clone());
                }
                return None;
            }
            Some(d)
        })
        .collect();
    (kept, files)
}

/// What [`render_checked`] records for the other side of a diff: its context, and each unit's
/// instance key (`None` for units that are not kro instances).
type Recorded = (String, Vec<Option<String>>);

/// A run read and checked, not rendered yet: what [`prepare`] gives [`render_checked`]. A diff
/// prepares the head side first, to know its context and kro instances before the base renders
/// (`pair`).
pub(crate) struct Prepared {
    /// The documents of its files, kept for the other side of a diff ([`Parse::keep`]).
    pub(crate) parsed: Option<ParsedFiles>,
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
    context: Option<String>,
}

impl Prepared {
    /// The key of every kro instance document of the run ([`pipeline::instance_key`]), when it
    /// has a context: what the run would look up in, or record for, the other side of a diff.
    /// The keys are kept, by document, for this run's render (not made twice).
    pub(crate) fn instance_keys(&mut self) -> std::collections::HashSet<String> {
        if self.context.is_none() || self.opts.kro.is_some() {
            return Default::default();
        }
        let declared = pipeline::declared_kinds(&self.documents);
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
    pub(crate) fn context(&self) -> Option<&str> {
        self.context.as_deref()
    }
}

/// How [`prepare`] parses the files it reads, for a diff: keeping a copy of their documents for
/// the other side, or taking the documents the other side kept.
#[derive(Clone, Copy, Default)]
pub(crate) struct Parse<'a> {
    /// Keep a copy of the documents of every file ([`Prepared::parsed`]).
    pub(crate) keep: bool,
    /// Documents to take instead of parsing a file of the same name and text.
    pub(crate) taking: Option<&'a crate::source::Parsed<'a>>,
}

/// The documents of a run's files by file name, each handed out once to the other side of a
/// diff when it reads a file of the same name and text ([`crate::source::Parsed`]). Files that
/// parsed with a warning, or hold a list (whose items a load expands), are not kept: they are
/// parsed again.
pub(crate) struct ParsedFiles(std::sync::Mutex<FileDocuments>);

/// Each file's text and documents, by the file's name.
type FileDocuments = std::collections::HashMap<String, (Arc<SourceFile>, Vec<Document>)>;

impl ParsedFiles {
    fn of(loaded: &crate::source::Loaded) -> ParsedFiles {
        let warned: std::collections::HashSet<&str> = loaded
            .diagnostics
            .iter()
            .filter_map(|d| d.file.as_deref())
            .collect();
        let mut by_file = FileDocuments::with_capacity(loaded.files.len());
        let mut listed = std::collections::HashSet::new();
        for d in &loaded.documents {
            let name = &d.source.name;
            if d.item.is_some() {
                listed.insert(name.clone());
            }
            if warned.contains(name.as_str()) || listed.contains(name) {
                continue;
            }
            by_file
                .entry(name.clone())
                .or_insert_with(|| (d.source.clone(), Vec::new()))
                .1
                .push(d.clone());
        }
        // A name read twice (the same file named by two inputs) is left to parse.
        let mut seen = std::collections::HashSet::new();
        for f in &loaded.files {
            if !seen.insert(f.name.as_str()) {
                listed.insert(f.name.clone());
            }
        }
        by_file.retain(|name, _| !listed.contains(name));
        ParsedFiles(std::sync::Mutex::new(by_file))
    }

    /// The documents of the file `name` when its text is `text`, once.
    pub(crate) fn take(&self, name: &str, text: &str) -> Option<Vec<Document>> {
        let mut files = self.0.lock().ok()?;
        match files.get(name) {
            Some((f, _)) if f.text == text => files.remove(name).map(|(_, docs)| docs),
            _ => None,
        }
    }
}

/// Read the request's inputs and check them, up to the render: every diagnostic a render would
/// give before it renders anything. With `context`, the run's context is computed too.
fn prepare(
    req: &Request,
    owned: Option<Vec<Input>>,
    access: Option<Access>,
    context: bool,
    parse: Parse<'_>,
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
    let access = match (access, &req.root) {
        (Some(a), _) => a,
        (None, None) => Access::AsGiven,
        (None, Some(dir)) => match Access::within(dir) {
            Ok(a) => a,
            Err(d) => return Err(Failed::new(vec![d], Vec::new(), &extra)),
        },
    };
    let limits = &req.limits;
    let inputs = owned.unwrap_or_else(|| req.inputs.clone());
    let loaded =
        crate::source::load_owned_inputs_reusing(inputs, &access, &limits.yaml, true, parse.taking);
    let kept = (parse.keep && !loaded.diagnostics.has_errors()).then(|| ParsedFiles::of(&loaded));
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
    })
}

/// Render a request: read and check it ([`prepare`], unless `prepared` already holds that),
/// then render its units.
fn render_checked<T, F>(
    req: &Request,
    owned: Option<Vec<Input>>,
    access: Option<Access>,
    finish: F,
    reusing: Reusing<'_, T>,
) -> Result<(Rendered<T>, Option<Recorded>), Failed>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let wants_context = reusing.record || reusing.earlier.is_some();
    let prepared = match reusing.prepared {
        Some(p) => p?,
        None => prepare(
            req,
            owned,
            access,
            wants_context,
            Parse {
                keep: false,
                taking: reusing.parsed,
            },
        )?,
    };
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
    } = prepared;
    let reuse = pipeline::Reuse {
        record: reusing.record,
        earlier: match (&context, reusing.earlier) {
            (Some(here), Some((there, hook))) if *here == there => Some(hook),
            _ => None,
        },
        known: known.as_deref(),
        // Units the other side will take: only when it has this context.
        shared: match (&context, reusing.shared) {
            (Some(here), Some((there, shared))) if *here == there => Some(shared),
            _ => None,
        },
    };
    let mut keys = Vec::new();

    // kro instances, pass-through documents and component releases.
    let mut units = Vec::new();
    let mut origins = Vec::new();
    let mut warnings = Vec::new();
    let mut errors = Diagnostics::new();
    if !documents.is_empty() || packages.is_empty() {
        match pipeline::render_units_moving(&mut documents, &opts, &finish, &reuse) {
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
    for found in &packages {
        match render_package(req, &access, found, &run_crds, &finish) {
            Ok(p) => {
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
                    if reusing.record {
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
            // Left to the process's exit in kiln's executables (`process::discard`); freeing
            // them on the workers still took 1.4 ms at 10 000 instances.
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
    let recorded = if reusing.record {
        context.map(|c| (c, keys))
    } else {
        None
    };
    Ok((rendered, recorded))
}

fn fail(diags: Diagnostics, files: Vec<Arc<SourceFile>>, extra: &[Value]) -> Failed {
    Failed::new(diags.0, files, extra)
}

/// Only the bundled Kubernetes version has schemas; asking for another is an error rather than
/// a silent check against the wrong one.
/// The request's own options that no input can make right ([`prepare`] checks them first).
fn check_options(req: &Request) -> Vec<Diagnostic> {
    let mut found = kurel::values::too_deep_sets(&req.sets, req.limits.yaml.max_depth);
    // Written into every namespaced object that sets none: the API server's rule, with its
    // words (a door's vocabulary names its own option for `--namespace`).
    if let Some(problem) = req
        .namespace
        .as_deref()
        .and_then(crate::names::namespace_problem)
    {
        found.push(
            Diagnostic::error(codes::REQUEST_INVALID, format!("--namespace: {problem}"))
                .with_hint(crate::names::NAMESPACE_RULE),
        );
    }
    found
}

/// Whether a Kubernetes version names the bundled schemas' minor: `1.37`, `v1.37.2` and
/// `1.37.2+k3s1` all do (Argo CD's KUBE_VERSION carries a patch).
fn is_bundled_minor(v: &str) -> bool {
    let minor = v
        .trim_start_matches('v')
        .splitn(3, '.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".");
    minor == crate::openapi::Schemas::kubernetes_version()
}

fn check_kube_version(v: Option<&str>) -> Option<Diagnostic> {
    let v = v?;
    if is_bundled_minor(v) {
        return None;
    }
    let bundled = crate::openapi::Schemas::kubernetes_version();
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "Kubernetes version {}: no bundled schemas for this version",
                crate::diag::quote(v)
            ),
        )
        .with_hint(format!(
            "bundled: {bundled} (the only Kubernetes version whose schemas kiln carries): pass --kube-version {bundled} or leave it out"
        )),
    )
}

/// The warning for a cluster whose version is not the bundled schemas' (Argo CD's KUBE_VERSION,
/// which it sets for every plugin to the destination cluster's version): the run still renders,
/// checked against the bundled schemas, and says so with both versions. It is the cluster's
/// version, not a choice of the Application, so it is never an error: an upgrade of the cluster
/// must not fail every sync, nor silently check against another version's schemas.
pub fn cluster_version_warning(v: &str, name: &str) -> Option<Diagnostic> {
    if v.trim().is_empty() || is_bundled_minor(v) {
        return None;
    }
    let bundled = crate::openapi::Schemas::kubernetes_version();
    Some(
        Diagnostic::warning(
            codes::REQUEST_INVALID,
            format!(
                "the cluster runs Kubernetes {}, but the output is checked against kiln's \
                 bundled Kubernetes {bundled} schemas",
                crate::diag::quote(v)
            ),
        )
        .in_file(name)
        .with_hint(format!(
            "fields and API versions that Kubernetes {bundled} and the cluster's version \
             disagree on are not caught here; use a kiln-cmp whose bundled schemas are the \
             cluster's minor version"
        )),
    )
}

/// `emit_crds` and `sync_waves` shape kro mode's output; in direct mode they would do nothing.
fn check_mode(req: &Request) -> Option<Diagnostic> {
    if req.mode == Mode::Kro {
        return None;
    }
    let what = match (req.emit_crds, req.sync_waves) {
        (false, false) => return None,
        (true, false) => "--emit-crds",
        (false, true) => "--sync-waves",
        (true, true) => "--emit-crds and --sync-waves",
    };
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("{what} given in direct mode, where there is nothing for it to do"),
        )
        .with_hint("they shape the output of kro mode: add mode kro (--mode kro), or drop them"),
    )
}

/// `values`, `sets` and `instances` belong to exactly one kurel package.
/// Warnings that fail a run because it is strict, saying so: a warning that ends a run with
/// nothing else said reads like a bug.
pub fn fatal_in_strict_mode(warnings: Vec<Diagnostic>) -> Vec<Diagnostic> {
    warnings
        .into_iter()
        .map(|mut w| {
            w.message.push_str(" (fatal in strict mode)");
            w
        })
        .collect()
}

/// A package with values files beside it, rendered with none of them: its parameters' defaults
/// are what it renders, which a team that keeps `values/prod.yaml` beside it rarely means.
fn unused_values(found: &FoundPackage) -> Diagnostic {
    Diagnostic::warning(
        codes::KUREL_VALUES,
        format!(
            "kurel package {} has values files beside it ({}), and this render uses none of them: it renders the defaults of parameters.yaml",
            found.name,
            found.values_beside.join(", ")
        ),
    )
    .in_file(found.name.clone())
    .with_hint("name the values file to render with --values (a values file is never read as a manifest)")
}

fn check_package_overrides(req: &Request, packages: &[FoundPackage]) -> Option<Diagnostic> {
    let mut given = Vec::new();
    if !req.values.is_empty() {
        given.push("values files");
    }
    if !req.sets.is_empty() {
        given.push("set values");
    }
    if req.instances.is_some() {
        given.push("an instances directory");
    }
    if given.is_empty() || packages.len() == 1 {
        return None;
    }
    let what = given.join(" and ");
    Some(if packages.is_empty() {
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("{what} given, but the inputs hold no kurel package for them to apply to"),
        )
        .with_hint("values, set and instances override a kurel package's parameters; name the package directory (NAME.kurel/) among the inputs, or drop them")
    } else {
        let names: Vec<&str> = packages.iter().map(|p| p.name.as_str()).collect();
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "{what} given, but the inputs hold {} kurel packages ({}): which one they are for is ambiguous",
                packages.len(),
                names.join(", ")
            ),
        )
        .with_hint("render one package at a time to override its values, or put each package's overrides in its local extension beside it (NAME.local.kurel/parameters.yaml)")
    })
}

/// A values file that sits in a walked directory (an application's `values/prod.yaml`) is read as
/// values, not as a manifest.
fn without_values_files(
    documents: Vec<Document>,
    access: &Access,
    values: &[PathBuf],
) -> Vec<Document> {
    if values.is_empty() {
        return documents;
    }
    let named: std::collections::HashSet<PathBuf> = values
        .iter()
        .filter_map(|v| access.resolve(v).ok())
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    let mut seen: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
    documents
        .into_iter()
        .filter(|d| {
            let file = d.file().to_string();
            !*seen
                .entry(file)
                .or_insert_with_key(|f| access.real_of_name(f).is_some_and(|r| named.contains(&r)))
        })
        .collect()
}

/// `--env` acts on components only: with none among the inputs, it would silently do nothing.
fn check_environment(req: &Request, documents: &[Document]) -> Option<Diagnostic> {
    let env = req.environment.as_deref()?;
    if documents.iter().any(component::is_component_document) {
        return None;
    }
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!("environment {} given, but the inputs hold no component to render for it", quote(env)),
        )
        .with_hint("an environment selects component releases (ComponentDeployment, ReleaseBinding, snapshots); kro instances and kurel packages have none: drop it, or add the component's definitions to the inputs"),
    )
}

/// Inputs that hold nothing at all (an empty directory, a mistyped path in a script, stdin that
/// was never read) would print an empty stream, which a GitOps tool applies as "delete
/// everything". Refused unless the request says empty is expected.
fn check_not_empty(
    req: &Request,
    documents: &[Document],
    packages: &[FoundPackage],
    kustomizations: &[String],
) -> Option<Diagnostic> {
    if req.allow_empty || !documents.is_empty() || !packages.is_empty() {
        return None;
    }
    let named: Vec<String> = req
        .inputs
        .iter()
        .map(|i| match i {
            Input::Path(p) => p.display().to_string(),
            Input::Stdin => "<stdin>".into(),
            Input::Text { name, .. } | Input::Parsed { name, .. } => name.clone(),
        })
        .collect();
    Some(
        Diagnostic::error(
            codes::REQUEST_INVALID,
            format!(
                "nothing to render: {} hold{} no Kubernetes documents and no kurel package",
                if named.is_empty() { "the inputs".to_string() } else { named.join(", ") },
                if named.len() == 1 { "s" } else { "" }
            ),
        )
        .with_hint(if kustomizations.is_empty() {
            "name the files or directories to render (`-` reads stdin); an empty result is accepted only when asked for (--allow-empty)".to_string()
        } else {
            // An overlay: what it renders is in the bases it names, which kustomize reads.
            format!(
                "it holds only kustomize's configuration ({}): render what its kustomization names with kustomize around kiln (kiln-flux build --kustomization, kiln-cmp, or kiln-krm in the kustomization), or name its bases here",
                kustomizations.join(", ")
            )
        }),
    )
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

/// One kurel package rendered.
struct PackageOutput<T> {
    units: Vec<T>,
    instance_names: Vec<String>,
    warnings: Vec<Diagnostic>,
    log: Vec<String>,
    details: Vec<String>,
    files: Vec<Arc<SourceFile>>,
    summary: PackageSummary,
}

type PackageFailure = (Vec<Diagnostic>, Vec<Arc<SourceFile>>);

fn render_package<T, F>(
    req: &Request,
    access: &Access,
    found: &FoundPackage,
    run_crds: &[Value],
    finish: &F,
) -> Result<PackageOutput<T>, PackageFailure>
where
    T: Send,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    let limits = &req.limits;
    let package = match kurel::load_with_limits(&found.path, &limits.yaml) {
        Ok(p) => p,
        Err(e) => {
            // Broken patch files do not hide the rest: the package without them is checked
            // too. A patch that requires a broken one is explained by the broken one's errors.
            let mut diags = e.diagnostics.0;
            if let Some(partial) = e.partial {
                let options = kurel::Options {
                    namespace: req.namespace.clone(),
                    max_depth: req.kurel_max_depth.unwrap_or(limits.variable_depth),
                    crds: run_crds.to_vec(),
                    provenance: false,
                };
                let rest = kurel::Prepared::new(&partial, &kurel::Instance::default(), &options)
                    .and_then(|p| p.render(None).map(|_| ()));
                if let Err(more) = rest {
                    diags.extend(
                        more.0
                            .into_iter()
                            .filter(|d| d.is_error() && d.code != codes::KUREL_PATCH_REFERENCE),
                    );
                }
            }
            return Err((diags, e.files));
        }
    };
    let mut files = package.files.clone();
    // The request's overrides: checked above to belong to this package alone.
    let (values, vfiles, mut diags) = read_values(access, &req.values, &limits.yaml);
    files.extend(vfiles);
    let mut instances = Vec::new();
    if let Some(dir) = &req.instances {
        let (docs, ifiles, idiags) = read_instances(access, dir, &limits.yaml);
        instances = docs;
        files.extend(ifiles);
        diags.extend(idiags);
    }
    if diags.has_errors() {
        return Err((diags.0, files));
    }
    let read_warnings = diags.0;
    let options = kurel::Options {
        namespace: req.namespace.clone(),
        max_depth: req.kurel_max_depth.unwrap_or(limits.variable_depth),
        crds: run_crds.to_vec(),
        provenance: !req.no_provenance,
    };
    let common = kurel::Instance {
        values,
        sets: req.sets.clone(),
    };
    let prepared = match kurel::Prepared::new(&package, &common, &options) {
        Ok(p) => p,
        Err(ds) => {
            let mut all = read_warnings;
            all.extend(ds.0);
            return Err((all, files));
        }
    };
    let fail = |ds: Diagnostics, files: Vec<Arc<SourceFile>>| {
        let mut all = read_warnings.clone();
        all.extend(ds.0);
        (all, files)
    };
    if req.instances.is_none() {
        let r = prepared
            .render(None)
            .map_err(|ds| fail(ds, files.clone()))?;
        let applied = r
            .details
            .iter()
            .filter(|l| l.starts_with("applying "))
            .count();
        let summary = PackageSummary {
            name: package.metadata.name.clone(),
            version: package.metadata.version.clone(),
            objects: r.objects.len(),
            patches: package.patches.len(),
            applied: Some(applied),
            instances: None,
        };
        let unit = finish(r.objects).map_err(|d| (vec![d], files.clone()))?;
        let mut warnings = read_warnings.clone();
        warnings.extend(r.warnings);
        return Ok(PackageOutput {
            units: vec![unit],
            instance_names: Vec::new(),
            warnings,
            log: r.log,
            details: r.details,
            files,
            summary,
        });
    }
    let r = kurel::render_instances(&prepared, &instances, finish)
        .map_err(|ds| fail(ds, files.clone()))?;
    let mut warnings = read_warnings.clone();
    warnings.extend(r.warnings);
    Ok(PackageOutput {
        instance_names: instances.iter().map(|d| d.file().to_string()).collect(),
        summary: PackageSummary {
            name: package.metadata.name.clone(),
            version: package.metadata.version.clone(),
            objects: r.objects,
            patches: package.patches.len(),
            applied: None,
            instances: Some(instances.len()),
        },
        units: r.units,
        warnings,
        log: r.log,
        details: r.details,
        files,
    })
}

fn read_values(
    access: &Access,
    paths: &[PathBuf],
    limits: &crate::document::YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let mut docs = Vec::new();
    let mut files = Vec::new();
    let mut diags = Diagnostics::new();
    for p in paths {
        let name = access.display_name(p);
        match access.read_to_string(p, limits.max_input_bytes) {
            Err(d) => diags.push(d.with_hint(values_hint(access))),
            Ok(text) => {
                let file = Arc::new(SourceFile { name, text });
                let (doc, ds) = kurel::values::parse_values_file(&file, limits);
                docs.extend(doc);
                files.push(file);
                diags.extend(ds);
            }
        }
    }
    (docs, files, diags)
}

fn values_hint(access: &Access) -> &'static str {
    match access {
        Access::AsGiven => "check the path of the values file",
        Access::Within(_) => {
            "values files are read inside the root this run was given, which they may not leave"
        }
    }
}

fn read_instances(
    access: &Access,
    dir: &Path,
    limits: &crate::document::YamlLimits,
) -> (Vec<Document>, Vec<Arc<SourceFile>>, Diagnostics) {
    let display = access.display_name(dir);
    match access.resolve(dir) {
        Err(d) => {
            let mut diags = Diagnostics::new();
            diags.push(d.with_hint(
                "the instances directory is read inside the root this run was given, which it may not leave",
            ));
            (Vec::new(), Vec::new(), diags)
        }
        Ok(real) => {
            // The directory itself is the root its files may not leave (a symlinked instance
            // file pointing elsewhere is refused), whoever named it.
            match crate::source::Root::named(&real, PathBuf::from(&display)) {
                Err(d) => {
                    let mut diags = Diagnostics::new();
                    diags.push(d);
                    (Vec::new(), Vec::new(), diags)
                }
                Ok(root) => kurel::values::read_instances_dir(&root, "", limits),
            }
        }
    }
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
    let access = match &req.root {
        None => Access::AsGiven,
        Some(dir) => Access::within(dir).map_err(|d| Failed::new(vec![d], Vec::new(), &[]))?,
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The duplicate check finds the same repeats, in output order, with one table or several
    /// (`duplicate_ids` splits the identities by hash into one table per worker): the first
    /// object of each identity is the one every later repeat is reported against.
    #[test]
    fn duplicates_are_found_alike_on_any_number_of_workers() {
        let id = |ns: &str, name: &str| Identity::new("apps", "Deployment", ns, name).unwrap();
        // 40 units of 3 objects; every fifth unit repeats an object of unit 0, every seventh
        // one of the unit before it, and unit 9 holds the same object twice.
        let units: Vec<Vec<Identity>> = (0..40)
            .map(|i| {
                let mut ids = vec![
                    id("a", &format!("x{i}")),
                    id("b", &format!("y{i}")),
                    id("c", &format!("z{i}")),
                ];
                if i > 0 && i % 5 == 0 {
                    ids[1] = id("a", "x0");
                }
                if i % 7 == 0 && i > 0 {
                    ids[2] = id("b", &format!("y{}", i - 1));
                }
                if i == 9 {
                    ids[2] = ids[0].clone();
                }
                ids
            })
            .collect();
        let slices: Vec<&[Identity]> = units.iter().map(Vec::as_slice).collect();
        // The plain check: one pass, one table of every identity.
        let mut first = std::collections::HashMap::new();
        let mut expected = Vec::new();
        for (i, ids) in units.iter().enumerate() {
            for (j, id) in ids.iter().enumerate() {
                match first.get(&id.text) {
                    Some(&f) => expected.push((i, j, f)),
                    None => {
                        first.insert(id.text.clone(), i);
                    }
                }
            }
        }
        // Unit 21 repeats nothing: the object of unit 20 it names was replaced by x0.
        assert!(expected.contains(&(9, 2, 9)) && expected.contains(&(35, 1, 0)));
        assert!(expected.contains(&(14, 2, 13)) && !expected.iter().any(|r| r.0 == 21 && r.1 == 2));
        assert_eq!(expected.len(), 7 + 4 + 1);
        for threads in [1, 2, 3, 8] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let found = pool.install(|| duplicate_ids(&slices));
            assert_eq!(found, expected, "{threads} worker(s)");
        }
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
            root: Some(d.join("root")),
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
        let req = Request {
            inputs: vec![Input::Path(PathBuf::new())],
            values: vec!["values/prod.yaml".into()],
            ..Request::default()
        };
        let out = render_units_within(&req, &root, Ok).expect("renders");
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
        let out = render_snapshot(&req, &snap, Ok).expect("renders");
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
        let req = Request {
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
        let from_memory = render_snapshot(&req, &snap, Ok).unwrap();
        let tree = snap.materialize().unwrap();
        let from_disk = render_units_within(&req, tree.root(), Ok).unwrap();
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

    #[test]
    fn identities_differ_where_their_parts_do() {
        let id = |g, k, ns, n| Identity::new(g, k, ns, n).unwrap();
        let a = id("apps", "Deployment", "shop", "web");
        assert_eq!(a.parts(), ("apps", "Deployment", "shop", "web"));
        assert_eq!(a, id("apps", "Deployment", "shop", "web"));
        // The same letters split differently are other objects.
        assert_ne!(
            id("", "ConfigMap", "ab", "c"),
            id("", "ConfigMap", "a", "bc")
        );
        assert_ne!(id("a", "bKind", "", "x"), id("ab", "Kind", "", "x"));
        let obj = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "c", "namespace": "ns"}});
        assert_eq!(
            identity(&obj).unwrap().parts(),
            ("", "ConfigMap", "ns", "c")
        );
        let cluster = serde_json::json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                             "metadata": {"name": "r"}});
        let parts = identity(&cluster).unwrap();
        assert_eq!(
            parts.parts(),
            ("rbac.authorization.k8s.io", "ClusterRole", "", "r")
        );
        assert!(identity(&serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap"})).is_none());
    }
}
