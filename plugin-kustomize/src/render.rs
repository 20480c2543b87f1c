//! Items in, items out: the one call into kiln-core and what is done with its answer.
//!
//! Every item goes to kiln-core as an in-memory file (without the orchestrators' bookkeeping
//! annotations); kiln-core decides which are definitions, instances, components and which pass
//! through, and says so in the origin of each unit it returns. Pass-through items are then handed
//! back exactly as they were received (every annotation, key order and id intact), not as
//! kiln-core's copies; rendered objects are new items placed in files.
//!
//! **Two ways an orchestrator uses the answer.** kpt (and `kpt fn source | … | kpt fn sink`)
//! writes the items back to the files their path annotation names: if kiln consumed the
//! definitions and instances there, they would be deleted from the user's package. So when the
//! items carry path annotations, the sources stay where they are, rendered objects are written
//! beside them marked with [`RENDERED_FROM`], and the next run
//! replaces what that mark says it rendered. kustomize keeps resources in memory and applies what
//! comes out: there the sources are consumed, as `kiln render` consumes them, so neither a
//! ResourceGraphDefinition nor an instance of a kind no cluster knows reaches the output.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::limits::Limits;
use kiln_core::request::{self, OriginKind, Request};
use kiln_core::source::Input;
use rayon::prelude::*;
use serde_json::Value;

use crate::annotations::{self, RENDERED_FROM};
use crate::config::Options;
use crate::kustomize;
use crate::packages::{self, Packages};
use crate::results::{self, Location};

/// Where and how to render.
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// The directory `paths` and `values` are resolved in and may not leave (the working
    /// directory: the kustomization root under kustomize, kpt's working directory under kpt).
    pub root: PathBuf,
    /// Reading and evaluation limits.
    pub limits: Limits,
}

/// One item as received, with the name kiln-core reads it under.
#[derive(Debug, Clone)]
pub struct Item {
    /// The object exactly as received.
    pub value: Value,
    /// Where it came from when it has no path annotation (standalone mode: `FILE` or
    /// `FILE (document N)`), for diagnostics.
    pub origin: Option<String>,
    /// Its text as a YAML document, when the input had it (read again by kiln-core instead of
    /// writing the value out).
    pub text: Option<String>,
}

/// An item of the answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// The input item of this index, unchanged.
    Input(usize),
    /// An object kiln rendered, placed in a file.
    New(Value),
}

/// The answer: the items to write back and the results, in order.
#[derive(Debug, Clone, Default)]
pub struct Answer {
    /// Items to hand back (empty on failure: the caller decides what to send then).
    pub items: Vec<Output>,
    /// Results: diagnostics, then info lines.
    pub results: Vec<Value>,
    /// Human text for stderr, one line each.
    pub stderr: Vec<String>,
    /// Whether any result is an error.
    pub failed: bool,
}

/// Render the items with the configuration's options.
pub fn render(items: &mut [Item], opts: &Options, ctx: &Context) -> Answer {
    // Each item's text goes to kiln-core as it is (moved: kiln-core reads it, the answer is
    // made of the values and the raw entries).
    let texts: Vec<Option<String>> = items.iter_mut().map(|i| i.text.take()).collect();
    // What these first steps read of each item, read on every core in one pass (at thousands of
    // items, each pass of its own over the items cost a millisecond or two).
    let facts: Vec<Facts<'_>> = items.par_iter().map(|i| Facts::of(&i.value)).collect();
    let writes_back = facts.iter().any(|f| f.path.is_some());
    // Under `kpt fn render`, the packages the items come from (see `packages`).
    let packages = if facts.iter().any(|f| f.package.is_some()) {
        let seen: Vec<packages::Seen<'_>> = facts
            .iter()
            .zip(items.iter())
            .map(|(f, i)| (f.package, f.path, &i.value))
            .collect();
        Packages::of(&seen)
    } else {
        Packages::default()
    };
    // The items of a subpackage with a kiln step of its own are that step's: rendered with its
    // options before this step runs, they pass through untouched and unjudged.
    let owned: Vec<bool> = facts
        .iter()
        .map(|f| packages.owned_below(f.package))
        .collect();
    let names = input_names(items, &facts, &packages);

    let mut inputs: Vec<Input> = opts
        .paths
        .iter()
        .map(|p| Input::Path(PathBuf::from(p)))
        .collect();
    // What kiln-core does not see: configuration that is never applied (local-config items,
    // the Kptfile), which passes through untouched, and the output of an earlier run that this
    // run replaces (sent along, it would be the same object twice, KLN1012): every object kiln
    // marked as rendered from a file of its package or under this run's `paths`. This run
    // renders again what those sources still render; what they no longer render (an instance
    // removed, its file emptied, renamed or deleted) is gone with them.
    let stale: Vec<bool> = {
        let sources: HashSet<(Option<&str>, &str)> = facts
            .iter()
            .filter(|f| f.rendered_from.is_none())
            .filter_map(|f| Some((packages.key(f.package), f.path?)))
            .collect();
        facts
            .iter()
            .zip(&owned)
            .map(|(f, &owned)| {
                writes_back
                    && !owned
                    && f.rendered_from.is_some_and(|s| {
                        let package = packages.key(f.package);
                        // Another step's source is one whose objects would be written here.
                        sources.contains(&(package, s))
                            || packages.receiving(&ctx.root, s).as_deref() != package
                            || !foreign_source(s, &opts.paths, &ctx.root)
                    })
            })
            .collect()
    };
    // A source marked local-config (so that `kpt live apply` leaves it out) is still rendered.
    let defined = defined_kinds(&facts);
    let aside: Vec<bool> = items
        .iter()
        .zip(&facts)
        .zip(stale.iter().zip(&owned))
        .map(|((i, f), (&st, &own))| {
            st || own
                || (f.configuration
                    && !kiln_core::request::is_source(&i.value, |g, k| {
                        defined.contains(&(g.to_string(), k.to_string()))
                    }))
        })
        .collect();
    drop(facts);
    // Made on every core (at thousands of items this was the largest serial step of a
    // pass-through): each item's input for kiln-core, in the items' order.
    let made: Vec<Result<Input, Diagnostic>> = items
        .par_iter_mut()
        .zip(&names)
        .zip(&aside)
        .zip(texts)
        .filter(|((_, &a), _)| !a)
        .map(|(((item, name), _), text)| to_input(item, name, text))
        .collect();
    let mut unwritable = None;
    for m in made {
        match m {
            Ok(i) => inputs.push(i),
            Err(d) => {
                unwritable = Some(d);
                break;
            }
        }
    }
    let items: &[Item] = items;
    let at = Lookup {
        items,
        by_name: names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i))
            .collect(),
        packages: &packages,
        root: &ctx.root,
        limits: &ctx.limits.yaml,
        kustomized: std::cell::OnceCell::new(),
    };
    if let Some(d) = unwritable {
        return failure(vec![d], &at);
    }
    let req = Request {
        inputs,
        files: request::Files::Within(ctx.root.clone()),
        environment: opts.environment.clone(),
        values: opts.values.iter().map(PathBuf::from).collect(),
        sets: opts.sets.clone(),
        namespace: opts.namespace.clone(),
        limits: ctx.limits,
        strict: opts.strict,
        pass_through: opts.pass_through.clone(),
        mode: if opts.kro_mode {
            request::Mode::Kro
        } else {
            request::Mode::Direct
        },
        emit_crds: opts.emit_crds,
        sync_waves: opts.sync_waves,
        observed: opts
            .observed
            .iter()
            .map(|p| kiln_core::source::Input::Path(PathBuf::from(p)))
            .collect(),
        no_provenance: opts.no_provenance,
        // A function handed nothing kiln reads (only configuration items, or no items) hands the
        // items back: the orchestrator owns the empty case.
        allow_empty: true,
        ..Request::default()
    };

    let rendered = match request::render_units_owned(req, Ok) {
        Ok(r) => r,
        Err(f) => {
            let diags = f
                .redacted(&[])
                .into_iter()
                .map(|d| where_paths_are(d, opts, &packages, &ctx.root))
                .collect();
            return failure(diags, &at);
        }
    };

    // Which items kiln-core passed through, and the new objects with the source they came from.
    // In kiln-core's order too: where nothing is written back, the answer is `kiln render`'s.
    let mut passed = vec![false; items.len()];
    // Each new object with the package it goes to (`None`: the running one, or none is named),
    // the directory there, and the source it was rendered from.
    let mut new_objects: Vec<(Value, Target, Option<String>)> = Vec::new();
    // Each unit's objects in order: the item it came from, and whether it is a new object (else
    // that item, passed through).
    let mut order: Vec<(Option<usize>, bool)> = Vec::new();
    for (unit, origin) in rendered.units.iter().zip(&rendered.origins) {
        let item = at.by_name.get(origin.file.as_str()).copied();
        let passthrough = matches!(
            origin.kind,
            OriginKind::Passthrough | OriginKind::ComponentPassthrough
        );
        match (item, passthrough) {
            (Some(k), true) => {
                passed[k] = true;
                order.push((Some(k), false));
            }
            _ => {
                // Rendered objects, or documents of a `paths` file passed through (new here).
                let (target, from) = match item {
                    // Beside the item, in its package.
                    Some(k) => {
                        let v = &items[k].value;
                        match annotations::source_path(v) {
                            Some(p) => (
                                Target {
                                    package: packages::of_item(v).map(String::from),
                                    dir: annotations::dir_of(p).to_string(),
                                },
                                Some(p.to_string()),
                            ),
                            None => (Target::default(), None),
                        }
                    }
                    None => {
                        let file = relative(&origin.file, &ctx.root);
                        let dir = if origin.kind == OriginKind::Kurel {
                            // The package directory itself: its objects go beside it.
                            annotations::dir_of(file.trim_end_matches('/'))
                        } else {
                            annotations::dir_of(&file)
                        };
                        // Beside the source, in the kpt package that holds it; a source outside
                        // every package (or where kpt does not say where the package is, as
                        // under `kpt fn eval`) at its directory relative to the working
                        // directory, in the package.
                        let target = match packages.holding(&ctx.root, dir) {
                            Some((package, dir)) => Target {
                                package: Some(package),
                                dir,
                            },
                            None => Target {
                                package: None,
                                dir: dir.to_string(),
                            },
                        };
                        (target, Some(file))
                    }
                };
                for obj in unit {
                    order.push((item, true));
                    new_objects.push((obj.clone(), target.clone(), from.clone()));
                }
            }
        }
    }

    // Under kustomize, the inputs kiln consumed must be as the user wrote them: rendering what
    // kustomize already transformed would lose its transformations (see `kustomize`).
    if !writes_back {
        let consumed: Vec<usize> = (0..items.len())
            .filter(|&k| !aside[k] && !passed[k])
            .collect();
        let mut diags: Vec<Diagnostic> = consumed
            .iter()
            .filter_map(|&k| kustomize::renamed(&items[k].value, &names[k]))
            .collect();
        // kustomize hands a transformer its resources with their ids; whatever kiln renders
        // then (from the items or from `paths`) comes after the kustomization's own
        // transformers.
        let transformer = items
            .iter()
            .any(|i| annotations::get(&i.value, kustomize::ID).is_some());
        if transformer && !new_objects.is_empty() {
            if let Some((file, fields)) =
                kustomize::builtin_transformers(&ctx.root, &ctx.limits.yaml)
            {
                if !fields.is_empty() {
                    // The cause of any rename records too: one diagnostic says it.
                    diags = vec![kustomize::transformed_before(&file, &fields)];
                }
            }
        }
        if !diags.is_empty() {
            return failure(diags, &at);
        }
    }

    let mut out = Vec::with_capacity(items.len() + new_objects.len());
    for k in 0..items.len() {
        let keep = if stale[k] {
            false
        } else {
            // Configuration and pass-through items stay; a source kiln-core consumed stays
            // where kpt writes files back.
            aside[k] || passed[k] || writes_back
        };
        if keep {
            out.push(Output::Input(k));
        }
    }
    // Place the new objects after whatever already sits in their file.
    // (Only where new objects are placed: a pass-through of thousands of items places none.)
    // Files are named by their package and their path in it.
    let mut next_index: BTreeMap<(Option<String>, String), usize> = BTreeMap::new();
    for o in out
        .iter()
        .filter(|_| writes_back && !new_objects.is_empty())
    {
        let Output::Input(k) = o else { continue };
        let v = &items[*k].value;
        if let Some(p) = annotations::source_path(v) {
            let package = packages.key(packages::of_item(v));
            let n = next_index
                .entry((package.map(String::from), p.to_string()))
                .or_default();
            *n = (*n).max(annotations::source_index(v) + 1);
        }
    }
    // A generator with nothing to render fails, as the other doors do: an empty output applied
    // by a GitOps tool deletes what it manages. Items a subpackage's step owns are items handed
    // back, not configuration.
    let generator = !opts.paths.is_empty() || aside.iter().zip(&owned).all(|(&a, &own)| a && !own);
    if new_objects.is_empty() && generator && !opts.allow_empty {
        let message = if opts.paths.is_empty() {
            "nothing to render: the function was given no items to render and no `paths`"
                .to_string()
        } else {
            format!(
                "nothing to render: `paths` ({}) hold no definition with instances, no component and no kurel package that renders an object",
                opts.paths.join(", ")
            )
        };
        return failure(
            vec![Diagnostic::error(codes::REQUEST_INVALID, message)
            .in_file("functionConfig")
            .at(if opts.paths.is_empty() { "spec" } else { "spec.paths" })
            .with_hint("name what to render in spec.paths (or send it as items); an empty result is accepted only when asked for (spec.allowEmpty: true)")],
            &at,
        );
    }
    let mut new_values = Vec::with_capacity(new_objects.len());
    for (obj, target, from) in new_objects {
        // A template may copy an instance's annotations: its file, index and ids are not the
        // child's.
        let mut obj = annotations::without_bookkeeping(&obj);
        // Files only where kpt writes them: elsewhere the output is `kiln render`'s, byte for
        // byte (kustomize would remove them anyway).
        if writes_back {
            let file = annotations::file_for(&obj, &target.dir);
            let package = target.package.as_deref();
            let n = next_index
                .entry((packages.key(package).map(String::from), file.clone()))
                .or_default();
            annotations::place(&mut obj, package, &file, *n, from.as_deref());
            *n += 1;
        }
        new_values.push(obj);
    }
    let mut answer = Answer::default();
    for d in rendered.redacted_warnings(&[], &new_values) {
        let here = locate(&d, &at);
        answer.stderr.push(results::human(&d, &here));
        answer.results.push(results::from_diagnostic(&d, &here));
    }
    for line in &rendered.log {
        answer.stderr.push(line.clone());
        answer.results.push(results::info(line));
    }
    if writes_back {
        out.extend(new_values.into_iter().map(Output::New));
    } else {
        // kiln-core's order, with the items it did not see (configuration) where they were.
        let mut new_values = new_values.into_iter();
        let mut aside_items = (0..items.len()).filter(|&k| aside[k]).peekable();
        out = Vec::with_capacity(order.len() + items.len());
        for (item, new) in order {
            if let Some(k) = item {
                while let Some(a) = aside_items.next_if(|&a| a < k) {
                    out.push(Output::Input(a));
                }
            }
            out.push(match (new, item) {
                (false, Some(k)) => Output::Input(k),
                _ => Output::New(new_values.next().expect("one value per new object")),
            });
        }
        out.extend(aside_items.map(Output::Input));
    }
    answer.items = out;
    kiln_core::process::discard(rendered);
    answer
}

/// An item as kiln-core reads it. Bookkeeping annotations are left in (they do not change what
/// an item is) and removed from whatever kiln renders (see [`render`]).
fn to_input(item: &mut Item, name: &str, text: Option<String>) -> Result<Input, Diagnostic> {
    if name.ends_with(".json") {
        let text = serde_json::to_string(&item.value).expect("JSON values always serialise");
        return Ok(Input::Text {
            name: name.to_string(),
            text,
        });
    }
    match text {
        // Parsed once, by the envelope reader: the value moves to kiln-core, and the item keeps
        // what the answer and the results read of it (its identity and annotations; a
        // passed-through item is written back from its raw entry).
        Some(text) => {
            let stub = kiln_core::document::identity_stub(&item.value, true);
            let value = std::mem::replace(&mut item.value, stub);
            Ok(Input::Parsed {
                name: name.to_string(),
                text,
                value,
            })
        }
        None => kiln_core::output::to_yaml(&item.value).map(|text| Input::Text {
            name: name.to_string(),
            text,
        }),
    }
}

/// Where a new object goes: a package (`None`: the running one, or none is named) and a
/// directory in it.
#[derive(Debug, Clone, Default)]
struct Target {
    package: Option<String>,
    dir: String,
}

/// What diagnostics are located by: the items, the name each was read under, the packages.
struct Lookup<'a> {
    items: &'a [Item],
    by_name: HashMap<&'a str, usize>,
    packages: &'a Packages,
    root: &'a Path,
    limits: &'a kiln_core::document::YamlLimits,
    /// The files kustomize's items came from ([`kustomize::origins`]), found when a diagnostic
    /// first needs them.
    kustomized: std::cell::OnceCell<Vec<Option<(String, usize)>>>,
}

impl Lookup<'_> {
    /// The file and document an item without a path annotation came from: kustomize's, found
    /// again, or where standalone mode read it.
    fn origin(&self, k: usize) -> Option<(String, usize)> {
        let item = &self.items[k];
        let found = annotations::get(&item.value, kustomize::ID).and_then(|_| {
            self.kustomized
                .get_or_init(|| {
                    let values: Vec<&Value> = self.items.iter().map(|i| &i.value).collect();
                    kustomize::origins(&values, self.root, self.limits)
                })
                .get(k)
                .cloned()
                .flatten()
        });
        found.or_else(|| item.origin.clone().map(|o| (o, 0)))
    }
}

fn failure(diags: Vec<Diagnostic>, at: &Lookup<'_>) -> Answer {
    // Failed also when the diagnostics are warnings alone (`strict: true`): answered as a
    // success, the run would hand back no items, an empty package.
    let mut a = Answer {
        failed: true,
        ..Answer::default()
    };
    for d in &diags {
        let here = locate(d, at);
        a.stderr.push(results::human(d, &here));
        a.results.push(results::from_diagnostic(d, &here));
    }
    a
}

/// The orchestrator's view of where a diagnostic points: an item's file relative to the package
/// whose pipeline runs.
fn locate(d: &Diagnostic, at: &Lookup<'_>) -> Location {
    let Some(file) = d.file.as_deref() else {
        return Location::default();
    };
    match at.by_name.get(file) {
        Some(&k) => {
            let v = &at.items[k].value;
            let package = packages::of_item(v);
            Location {
                file: annotations::source_path(v)
                    .map(|p| (at.packages.shown(package, p), annotations::source_index(v)))
                    .or_else(|| at.origin(k)),
                resource: results::resource_ref(v),
            }
        }
        None => Location {
            file: Some((relative(file, at.root), d.document.unwrap_or(0))),
            resource: None,
        },
    }
}

/// A file kiln-core names (inside the root, displayed under it) as a slash path relative to the
/// root: what kpt's path annotations and results want (kpt refuses absolute paths).
fn relative(file: &str, root: &Path) -> String {
    let p = Path::new(file);
    let rel = p.strip_prefix(root).unwrap_or(p);
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    parts.join("/")
}

/// The name each item is read under: its file (path annotation, or where standalone mode read
/// it), made unique with the document index when a file holds several items. Names say where
/// the user's object is, so kiln-core's diagnostics name it.
fn input_names(items: &[Item], facts: &[Facts<'_>], packages: &Packages) -> Vec<String> {
    let base: Vec<std::borrow::Cow<'_, str>> = items
        .iter()
        .zip(facts)
        .enumerate()
        .map(|(i, (item, f))| match (f.path, &item.origin) {
            // Relative to the package whose pipeline runs: a subpackage's `cm.yaml` is not the
            // parent's.
            (Some(p), _) if f.package.is_some() => packages.shown(f.package, p).into(),
            (Some(p), _) => p.into(),
            (None, Some(o)) => o.as_str().into(),
            (None, None) => format!("items[{i}]").into(),
        })
        .collect();
    let mut count: HashMap<&str, usize> = HashMap::with_capacity(base.len());
    for b in &base {
        *count.entry(b.as_ref()).or_default() += 1;
    }
    let mut names: Vec<String> = base
        .iter()
        .enumerate()
        .map(|(i, b)| {
            if count[b.as_ref()] > 1 {
                format!("{b}#{}", annotations::source_index(&items[i].value))
            } else {
                b.to_string()
            }
        })
        .collect();
    // Indexes may repeat (hand-made lists); the position settles it.
    let repeated: Vec<usize> = {
        let mut seen = HashSet::with_capacity(names.len());
        (0..names.len())
            .filter(|&i| !seen.insert(names[i].as_str()))
            .collect()
    };
    for i in repeated {
        names[i] = format!("{}#item{i}", base[i]);
    }
    names
}

/// What the first steps of [`render`] read of an item.
struct Facts<'a> {
    /// [`annotations::source_path`].
    path: Option<&'a str>,
    /// Its [`packages::PACKAGE_PATH`] (`kpt fn render`).
    package: Option<&'a str>,
    /// Its [`RENDERED_FROM`] mark.
    rendered_from: Option<&'a str>,
    /// [`is_configuration`].
    configuration: bool,
    /// For a ResourceGraphDefinition, the kind it defines ([`defined_kinds`]).
    defines: Option<(String, String)>,
}

impl<'a> Facts<'a> {
    fn of(v: &'a Value) -> Self {
        Facts {
            path: annotations::source_path(v),
            package: packages::of_item(v),
            rendered_from: annotations::get(v, RENDERED_FROM),
            configuration: is_configuration(v),
            defines: kiln_core::kro::rgd::defined_kind(v),
        }
    }
}

/// Whether objects marked as rendered from `source`, which is not a file of their package (no
/// item comes from it), belong to another configuration, and stay: the source is not under this
/// run's `paths`, and still a file with documents under the root (another function's `paths`). A
/// package file emptied, or deleted, or a source this run names, is not foreign.
fn foreign_source(source: &str, paths: &[String], root: &Path) -> bool {
    let under = |p: &String| {
        let p = p.trim_start_matches("./").trim_end_matches('/');
        p.is_empty() || p == "." || source == p || source.starts_with(&format!("{p}/"))
    };
    if paths.iter().any(under) {
        return false;
    }
    // The mark is the package's text: only a plain relative path is looked up.
    let rel = Path::new(source.trim_end_matches('/'));
    if !rel
        .components()
        .all(|c| matches!(c, std::path::Component::Normal(_)))
    {
        return false;
    }
    // Looked up as any path of the package is read: inside the root, never in `.git`.
    let Ok(file) = kiln_core::source::Root::new(root).and_then(|r| r.resolve(rel)) else {
        return false;
    };
    match std::fs::metadata(&file) {
        // A kurel package (a directory) named by another configuration.
        Ok(m) if m.is_dir() => true,
        Ok(m) if m.is_file() => std::fs::File::open(&file)
            .ok()
            .and_then(|f| crate::read_input(f, source, 1 << 20).ok())
            .is_none_or(|t| {
                t.lines().any(|l| {
                    let l = l.trim();
                    !l.is_empty() && !l.starts_with('#') && l != "---" && l != "..."
                })
            }),
        _ => false,
    }
}

/// The kinds the ResourceGraphDefinitions among the items define, as (group, kind).
fn defined_kinds(facts: &[Facts<'_>]) -> HashSet<(String, String)> {
    facts.iter().filter_map(|f| f.defines.clone()).collect()
}

/// Items that configure the tools rather than describe the cluster: kustomize and kpt drop or
/// keep them themselves, and kiln passes them through without judging their kinds.
fn is_configuration(v: &Value) -> bool {
    annotations::get(v, "config.kubernetes.io/local-config") == Some("true")
        || packages::is_kptfile(v)
}

/// A `paths`, `values` or `observed` entry that does not exist says what the entries are relative
/// to: kiln-krm's working directory, which is kpt's, not the package's (or, under kustomize, the
/// kustomization's directory). Under `kpt fn render`, an entry that names something in the package
/// is written out as it should be.
fn where_paths_are(d: Diagnostic, opts: &Options, packages: &Packages, root: &Path) -> Diagnostic {
    if d.code != codes::IO_READ {
        return d;
    }
    let Some(file) = d.file.as_deref().map(|f| relative(f, root)) else {
        return d;
    };
    let same = |e: &String| Path::new(e).components().eq(Path::new(&file).components());
    let Some(field) = [
        ("paths", &opts.paths),
        ("values", &opts.values),
        ("observed", &opts.observed),
    ]
    .into_iter()
    .find_map(|(field, entries)| entries.iter().any(same).then_some(field)) else {
        return d;
    };
    // Looked up only inside the root, as the entry itself is.
    let in_package = packages
        .running()
        .and_then(|p| Path::new(p).strip_prefix(root).ok())
        .map(|p| p.join(&file))
        .filter(|rel| kiln_core::source::Root::new(root).is_ok_and(|r| r.resolve(rel).is_ok()));
    let hint = match in_package {
        Some(rel) => format!(
            "`{field}` are relative to kpt's working directory ({}), not to the package: from there this is {}",
            root.display(),
            rel.display()
        ),
        None => format!(
            "`{field}` are relative to the working directory kiln-krm runs in ({}): kpt's working directory, or the kustomization's directory under kustomize; they may not leave it",
            root.display()
        ),
    };
    d.with_hint(hint)
}
