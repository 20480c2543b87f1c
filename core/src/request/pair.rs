//! The two sides of a diff, each kro instance that did not change rendered once.
//!
//! `kiln diff` renders one request at two points (two revisions, two environments). A pull
//! request changes a few instances of thousands, and the render of a kro instance is a pure
//! function of its document's value and of the run's *context* ([`super::context_of`]: the
//! request but its inputs, every document that is not a kro instance, the `--crds` CRDs, the
//! observed state). So:
//!
//! 1. the base side renders in full, and keeps its context and, for each kro instance, its
//!    unit's index and identities by the instance's value ([`crate::pipeline::instance_key`]);
//! 2. the head side reads and checks its own inputs and renders everything as usual, except that
//!    when its context is the base's, byte for byte, a kro instance whose value the base also
//!    holds takes the base's unit instead of rendering again (a copy of what the base's `finish`
//!    made of it). Its identities still join the head's duplicate check.
//!
//! Everything else on the head side is its own: reading (and its warnings), definitions,
//! component releases, kurel packages, pass-through documents, the whole-output checks. When
//! anything but instances differs (a definition, a CRD, an option, an environment), nothing is
//! taken and the head renders in full; when the base fails, there is nothing to take. Either
//! way each side's result is what a render of that side alone gives.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::reuse::{KurelTake, PackageContext};
use super::{
    prepare, render_units, render_units_from, render_with, snapshot, take_inputs, Checked, Context,
    Failed, Files, Kept, Prepared, Rendered, Request, Reuse,
};
use crate::diag::Diagnostic;
use crate::document::{Document, SourceFile};
use crate::pipeline::InstanceCache;

/// What the units of the instances the head will take from the base are made into, on the base
/// side, instead of the run's `finish` (see [`render_pair`]).
pub type SharedFinish<'a, T> = dyn Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync + 'a;

/// Both sides of a diff.
#[derive(Debug)]
pub struct Pair<T> {
    /// The base side, as a render of it alone gives it.
    pub base: Result<Rendered<T>, Failed>,
    /// The head side, as a render of it alone gives it.
    pub head: Result<Rendered<T>, Failed>,
    /// kro and kurel instances of the head side taken from the base instead of rendered again.
    pub reused: usize,
}

/// Render the base side, then the head side taking the units of the base's unchanged kro
/// instances (module docs); each request says where its files are ([`Request::files`]).
/// `reuse: false` renders both in full, at the same time: the plain path that the reusing one
/// must always equal.
///
/// With `shared`, the units of the instances the head will take are made with it instead of
/// `finish`, on the base side (and the head takes those): a caller that compares the two sides
/// can make nothing of objects that are the same on both by construction (see `kiln diff`'s
/// comparison, [`crate::diff::Unit`]). That needs the head's context and instances before the
/// base renders: the head is read and checked first, when it can be read apart from its render
/// (a tree on disk, or a revision read from memory); otherwise nothing is made with `shared`.
pub fn render_pair<T, F>(
    base: &Request,
    head: &Request,
    finish: F,
    shared: Option<&SharedFinish<'_, T>>,
    reuse: bool,
) -> Pair<T>
where
    T: Clone + Send + Sync,
    F: Fn(Vec<Value>) -> Result<T, Diagnostic> + Sync,
{
    if !reuse {
        let (b, h) = rayon::join(
            || render_units(base, &finish),
            || render_units(head, &finish),
        );
        return Pair {
            base: b,
            head: h,
            reused: 0,
        };
    }
    // The head read and checked first, when it can be: its context and instance keys say which
    // of the base's units it will take.
    let mut early = shared.and_then(|_| Early::prepare(head));
    let head_prepared = early.as_mut().and_then(|e| e.prepared.as_mut().ok());
    let (keys, component_keys, parsed) = match head_prepared {
        // The documents of the head's files, for the base to take those of the same files (same
        // name, same text, same limits) instead of parsing them again.
        Some(p) => (
            p.instance_keys(),
            p.component_keys(),
            p.parsed
                .take()
                .filter(|_| base.limits.yaml == head.limits.yaml),
        ),
        None => Default::default(),
    };
    // The base first (its units render in parallel inside), then the head with what it kept.
    let made = AtomicUsize::new(0);
    let head_context = early
        .as_ref()
        .and_then(|e| e.prepared.as_ref().ok()?.context());
    // Units are made with `shared` for the head's kro instances (when it has a context) and
    // for its components' releases.
    let sharing = shared.is_some() && (head_context.is_some() || !component_keys.is_empty());
    let (base_result, kept) = {
        let side = Base {
            head: head_context,
            keys: &keys,
            component_keys: &component_keys,
            shared,
            made: &made,
            parsed: parsed.as_ref(),
            kept: Mutex::new(None),
        };
        let r = render_with(base, None, &finish, Some(&side), None);
        (r, side.kept.into_inner().ok().flatten())
    };
    let taken: Vec<AtomicBool> = match &base_result {
        Ok(b) => b.units.iter().map(|_| Default::default()).collect(),
        Err(_) => Vec::new(),
    };
    let counted = AtomicUsize::new(0);
    let head_result = {
        let side = Head {
            kept: base_result.as_ref().ok().zip(kept.as_ref()),
            taken: &taken,
            counted: &counted,
        };
        let prepared = early
            .as_mut()
            .map(|e| std::mem::replace(&mut e.prepared, Err(Failed::default())));
        match early.as_ref().and_then(|e| e.own.as_ref()) {
            // A revision read from memory: its own request, inputs taken out.
            Some(own) => render_units_from(own, None, None, &finish, Some(&side), prepared),
            None => render_with(head, None, &finish, Some(&side), prepared),
        }
    };
    // Every unit made with `shared` must have been taken by the head, or the base's side of the
    // comparison would lack its objects. It always is (the head renders from what it was read
    // as, in the same context, and takes each instance of a key it holds); should it ever not
    // be, both sides render in full.
    if let (Ok(_), Ok(_), true) = (&base_result, &head_result, sharing) {
        let taken = taken.iter().filter(|t| t.load(Ordering::Relaxed)).count();
        if made.load(Ordering::Relaxed) != taken {
            return render_pair(base, head, finish, None, false);
        }
    }
    Pair {
        base: base_result,
        head: head_result,
        reused: counted.into_inner(),
    }
}

/// The base side's exchange: it takes nothing; it makes the units of the instances the head
/// holds with `shared`, takes the documents of the files the head parsed, and keeps its units
/// for the head.
struct Base<'a, T> {
    /// The head's context, when it was read first.
    head: Option<&'a Context>,
    /// The head's instance keys.
    keys: &'a HashSet<String>,
    /// The head's component keys ([`crate::component::document_keys`]).
    component_keys: &'a HashSet<String>,
    shared: Option<&'a SharedFinish<'a, T>>,
    /// Units made with `shared`.
    made: &'a AtomicUsize,
    parsed: Option<&'a ParsedFiles>,
    kept: Mutex<Option<Kept>>,
}

impl<T> InstanceCache<Checked<T>> for Base<'_, T> {
    fn take(&self, _key: &str) -> Option<Checked<T>> {
        None
    }

    fn shares(&self, key: &str) -> bool {
        self.shared.is_some() && self.keys.contains(key)
    }

    fn make(&self, objects: Vec<Value>) -> Result<Checked<T>, Diagnostic> {
        let shared = self.shared.expect("only asked for when `shares`");
        self.made.fetch_add(1, Ordering::Relaxed);
        super::check_unit(objects, shared)
    }
}

impl<T> Reuse<T> for Base<'_, T> {
    fn parsed(&self, name: &str, text: &str) -> Option<Vec<Document>> {
        self.parsed?.take(name, text)
    }

    fn applies(&self, here: &Context) -> bool {
        self.head == Some(here)
    }

    fn keep(&self, kept: Kept) {
        if let Ok(mut k) = self.kept.lock() {
            *k = Some(kept);
        }
    }

    fn keeps_kurel(&self) -> bool {
        true
    }

    fn kurel<'s>(&'s self, _here: &PackageContext, _holder: &str) -> Option<Box<KurelTake<'s, T>>> {
        None
    }

    fn component_shares(&self, key: &str) -> bool {
        self.shared.is_some() && self.component_keys.contains(key)
    }
}

/// The head side's exchange: it takes the base's unit of each instance the base kept (a copy
/// of what the base's `finish`, or `shared`, made of it), and notes which it took.
struct Head<'a, T> {
    kept: Option<(&'a Rendered<T>, &'a Kept)>,
    taken: &'a [AtomicBool],
    counted: &'a AtomicUsize,
}

impl<T: Clone + Sync> InstanceCache<Checked<T>> for Head<'_, T> {
    // An unchanged instance's (or component release's: same key, same documents, same
    // context) unit as the base rendered it: its objects passed the checks there (that side
    // rendered without an error), and its identities join this side's duplicate check like any
    // unit's.
    fn take(&self, key: &str) -> Option<Checked<T>> {
        let (base, kept) = self.kept?;
        let (i, ids) = kept.units.get(key)?;
        self.counted.fetch_add(1, Ordering::Relaxed);
        self.taken[*i].store(true, Ordering::Relaxed);
        Some(Checked {
            out: Some(base.units[*i].clone()),
            ids: ids.clone(),
            problems: Vec::new(),
        })
    }

    fn shares(&self, _key: &str) -> bool {
        false
    }

    fn make(&self, _objects: Vec<Value>) -> Result<Checked<T>, Diagnostic> {
        unreachable!("the head makes no unit for the base")
    }
}

impl<T: Clone + Sync> Reuse<T> for Head<'_, T> {
    fn parsed(&self, _name: &str, _text: &str) -> Option<Vec<Document>> {
        None
    }

    fn applies(&self, here: &Context) -> bool {
        self.kept
            .is_some_and(|(_, k)| k.context.as_ref() == Some(here))
    }

    fn keep(&self, _kept: Kept) {}

    fn keeps_kurel(&self) -> bool {
        false
    }

    // An unchanged kurel instance (same file name and text, in a package of the same context)
    // as the base rendered it, with its warnings and log lines: as for a kro instance, its
    // objects passed the checks there, and its identities join this side's checks.
    fn kurel<'s>(&'s self, here: &PackageContext, holder: &str) -> Option<Box<KurelTake<'s, T>>> {
        let (base, kept) = self.kept?;
        let package = kept.kurel.iter().find(|p| p.context == *here)?;
        let holder = holder.to_string();
        Some(Box::new(move |file: &SourceFile| {
            let (kept_file, i, ids, record) = package.instances.get(&file.name)?;
            if kept_file.text != file.text {
                return None;
            }
            let record = record.relocated(&package.holder, &holder)?;
            // Not marked `taken`: that counts the units made with `shared`, which kurel's
            // never are.
            self.counted.fetch_add(1, Ordering::Relaxed);
            let unit = Checked {
                out: Some(base.units[*i].clone()),
                ids: ids.clone(),
                problems: Vec::new(),
            };
            Some((unit, record))
        }))
    }

    fn component_shares(&self, _key: &str) -> bool {
        false
    }
}

/// A side read and checked before the other renders (see [`render_pair`]), keeping a copy of its
/// documents for the other side, which takes those of the files it holds unchanged instead of
/// parsing them again.
struct Early {
    /// The request it renders with, when that is not the caller's (a revision read from memory:
    /// its inputs are the revision's texts, taken out into the preparation).
    own: Option<Request>,
    prepared: Result<Prepared, Failed>,
}

impl Early {
    /// The side read and checked, when it can be apart from its render: a tree on disk, or a
    /// revision that needs no files (a revision written out for its run is read in it).
    fn prepare(req: &Request) -> Option<Early> {
        match &req.files {
            Files::Revision(s) => {
                let mut own = snapshot::in_memory(req, s)?;
                let inputs = take_inputs(&mut own);
                let prepared = prepare(&own, Some(inputs), None, true, true, None);
                Some(Early {
                    own: Some(own),
                    prepared,
                })
            }
            _ => Some(Early {
                own: None,
                prepared: prepare(req, None, None, true, true, None),
            }),
        }
    }
}

/// The documents of a run's files by file name, each handed out once to the other side of a
/// diff when it reads a file of the same name and text ([`crate::source::Parsed`]). Files that
/// parsed with a warning, or hold a list (whose items a load expands), are not kept: they are
/// parsed again.
pub(crate) struct ParsedFiles(std::sync::Mutex<FileDocuments>);

/// Each file's text and documents, by the file's name.
type FileDocuments = std::collections::HashMap<String, (Arc<SourceFile>, Vec<Document>)>;

impl ParsedFiles {
    pub(super) fn of(loaded: &crate::source::Loaded) -> ParsedFiles {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diff::{compare_units, Options, Unit};
    use crate::redact::Secrets;
    use crate::source::{Input, Root, Snapshot, SnapshotEntry};
    use std::path::{Path, PathBuf};

    /// `inner` makes a ConfigMap; `outer` makes a ConfigMap and an `Inner` instance (a nested
    /// composition), both from the instance's `size`.
    fn rgds(inner_data_key: &str) -> String {
        format!(
            "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: inner}}\nspec:\n  schema: {{apiVersion: v1alpha1, kind: Inner, spec: {{size: string}}}}\n  resources:\n  - id: cm\n    template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{schema.metadata.name}}-inner'}}, data: {{{inner_data_key}: '${{schema.spec.size}}'}}}}\n---\napiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: outer}}\nspec:\n  schema: {{apiVersion: v1alpha1, kind: Outer, spec: {{size: string}}}}\n  resources:\n  - id: cm\n    template: {{apiVersion: v1, kind: ConfigMap, metadata: {{name: '${{schema.metadata.name}}'}}, data: {{size: '${{schema.spec.size}}'}}}}\n  - id: nested\n    template: {{apiVersion: kro.run/v1alpha1, kind: Inner, metadata: {{name: '${{schema.metadata.name}}'}}, spec: {{size: '${{schema.spec.size}}'}}}}\n"
        )
    }

    fn outer(name: &str, size: &str) -> String {
        format!("apiVersion: kro.run/v1alpha1\nkind: Outer\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{size: '{size}'}}\n")
    }

    fn snapshot(files: &[(&str, String)]) -> Snapshot {
        let mut s = Snapshot::new();
        for (p, t) in files {
            s.add(Path::new(p), SnapshotEntry::File(t.clone().into_bytes()))
                .unwrap();
        }
        s
    }

    fn request() -> Request {
        Request {
            inputs: vec![Input::Path(PathBuf::from("apps"))],
            ..Request::default()
        }
    }

    /// `req` over a revision.
    fn at(req: &Request, s: &Snapshot) -> Request {
        Request {
            files: Files::Revision(Arc::new(s.clone())),
            ..req.clone()
        }
    }

    /// `req` over a tree on disk.
    fn on(req: &Request, root: &Root) -> Request {
        Request {
            files: Files::Tree(root.clone()),
            ..req.clone()
        }
    }

    /// One unit per kro instance or document, as `kiln diff` keeps it: the comparison entries
    /// of its objects (and the objects, kept whole here), or only their number for a unit the
    /// head takes from the base.
    fn finish(objs: Vec<Value>) -> Result<Unit, Diagnostic> {
        Ok(Unit::compared(&objs, objs.clone()))
    }

    fn shared(objs: Vec<Value>) -> Result<Unit, Diagnostic> {
        Ok(Unit::shared(&objs, objs.clone()))
    }

    /// What `kiln diff` prints of a pair: text, JSON and markdown.
    fn printed(p: &Pair<Unit>) -> (String, String, String) {
        let units = |r: &'_ Result<Rendered<Unit>, Failed>| -> Vec<Unit> {
            r.as_ref().expect("renders").units.clone()
        };
        let d = compare_units(
            &units(&p.base),
            &units(&p.head),
            &Secrets::default(),
            &Options::default(),
        )
        .unwrap();
        (d.text(false), d.json().to_string(), d.markdown(60_000))
    }

    /// Render the pair three ways: reusing with shared units (what `kiln diff` does), reusing
    /// with every unit compared, and in full. Both sides must be what each renders alone
    /// (units, origins, warnings; a shared unit is the full render's unit counted, not
    /// compared), and the printed diff the same.
    fn both_ways(base: &Request, head: &Request) -> (Pair<Unit>, Pair<Unit>) {
        let fast = render_pair(base, head, finish, Some(&shared), true);
        let reusing = render_pair(base, head, finish, None, true);
        let full = render_pair(base, head, finish, None, false);
        assert_eq!(fast.reused, reusing.reused);
        for (a, r, b) in [
            (&fast.base, &reusing.base, &full.base),
            (&fast.head, &reusing.head, &full.head),
        ] {
            let (a, r, b) = (
                a.as_ref().unwrap(),
                r.as_ref().unwrap(),
                b.as_ref().unwrap(),
            );
            assert_eq!(r.units, b.units);
            assert_eq!(a.units.len(), b.units.len());
            for (x, y) in a.units.iter().zip(&b.units) {
                if x.shared > 0 || x.entries.is_empty() {
                    assert_eq!(x.shared, y.entries.len());
                    assert_eq!(x.kept, y.kept);
                } else {
                    assert_eq!(x, y);
                }
            }
            for u in [a, r] {
                assert_eq!(u.origins, b.origins);
                assert_eq!(u.warnings, b.warnings);
            }
        }
        assert_eq!(printed(&fast), printed(&full));
        assert_eq!(printed(&reusing), printed(&full));
        (fast, full)
    }

    /// Objects of a side's units counted, not compared.
    fn shared_objects(r: &Result<Rendered<Unit>, Failed>) -> usize {
        r.as_ref().unwrap().units.iter().map(|u| u.shared).sum()
    }

    #[test]
    fn unchanged_instances_render_once_and_the_diff_is_the_full_renders() {
        let base = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
            ("apps/b.yaml", outer("b", "1")),
            ("apps/c.yaml", outer("c", "1")),
            ("apps/d.yaml", outer("d", "1")),
            (
                "apps/two.yaml",
                format!("{}---\n{}", outer("e", "1"), outer("f", "1")),
            ),
        ]);
        // a unchanged; b changed; c removed; d moved to another file; e reformatted (the same
        // value); f moved out of a stream into a file of its own; g added.
        let head = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
            ("apps/b.yaml", outer("b", "2")),
            ("apps/moved/d.yaml", outer("d", "1")),
            (
                "apps/two.yaml",
                "# reformatted\napiVersion: kro.run/v1alpha1\nkind: Outer\nmetadata:\n  name: e\n  namespace: ns\nspec:\n  size: \"1\"\n".into(),
            ),
            ("apps/f.yaml", outer("f", "1")),
            ("apps/g.yaml", outer("g", "1")),
        ]);
        // The head side as a working tree on disk, the base as a revision in memory.
        let written = head.materialize().unwrap();
        let req = request();
        let (fast, _) = both_ways(&at(&req, &base), &on(&req, written.root()));
        // a, d, e, f (nested instances inside them included) come from the base, counted and
        // not compared: two objects each, on both sides.
        taken(
            &fast,
            4,
            8,
            "2 changed, 2 added, 2 removed, 8 unchanged",
            "apps/moved/d.yaml",
        );
    }

    /// `fast` took `reused` units from the base, whose `shared` objects were counted and not
    /// compared on both sides; its diff ends with `summary`; and the head's origins are its own
    /// (the moved unit is in its new file, `moved`).
    fn taken(fast: &Pair<Unit>, reused: usize, shared: usize, summary: &str, moved: &str) {
        assert_eq!(fast.reused, reused);
        assert_eq!(shared_objects(&fast.base), shared);
        assert_eq!(shared_objects(&fast.head), shared);
        let (text, _, _) = printed(fast);
        assert!(text.ends_with(&format!("{summary}\n")), "{text}");
        let head = fast.head.as_ref().unwrap();
        assert!(head.origins.iter().any(|o| o.file == moved));
    }

    #[test]
    fn a_changed_definition_renders_the_head_in_full() {
        let files = |key: &str| {
            snapshot(&[
                ("apps/rgds.yaml", rgds(key)),
                ("apps/a.yaml", outer("a", "1")),
                ("apps/b.yaml", outer("b", "1")),
            ])
        };
        let (base, head) = (files("size"), files("renamed"));
        let req = request();
        let (fast, _) = both_ways(&at(&req, &base), &at(&req, &head));
        assert_eq!(fast.reused, 0);
        let (text, _, _) = printed(&fast);
        // Every nested ConfigMap changed, though no instance did.
        assert!(
            text.ends_with("2 changed, 0 added, 0 removed, 2 unchanged\n"),
            "{text}"
        );
    }

    #[test]
    fn other_options_or_documents_render_the_head_in_full() {
        let tree = |extra: &str| {
            snapshot(&[
                ("apps/rgds.yaml", rgds("size")),
                ("apps/a.yaml", outer("a", "1")),
                ("apps/plain.yaml", format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain, namespace: ns}}\ndata: {{k: '{extra}'}}\n")),
            ])
        };
        let (one, two) = (tree("1"), tree("2"));
        let req = request();
        // Another namespace for instances that name none: an option the render reads.
        let mut other = request();
        other.namespace = Some("elsewhere".into());
        let (fast, _) = both_ways(&at(&req, &one), &at(&other, &one));
        assert_eq!(fast.reused, 0);
        // Another document that is not an instance.
        let (fast, _) = both_ways(&at(&req, &one), &at(&req, &two));
        assert_eq!(fast.reused, 0);
        // The same: everything reused, the instance's two objects counted, not compared.
        let (fast, _) = both_ways(&at(&req, &one), &at(&req, &one));
        assert_eq!(fast.reused, 1);
        assert_eq!(shared_objects(&fast.head), 2);
        // Other observed state: what externalRefs and status reads resolve against.
        let mut observed = request();
        observed.observed = vec![Input::Text {
            name: "live.yaml".into(),
            text: "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: live, namespace: ns}\n".into(),
        }];
        let (fast, _) = both_ways(&at(&req, &one), &at(&observed, &one));
        assert_eq!(fast.reused, 0);
        // Options no instance reads ([`super::Context`]): taken still.
        let mut apart = request();
        apart.strict = true;
        apart.pass_through = vec!["example.com".into()];
        apart.secrets = vec!["data.k".parse().unwrap()];
        let (fast, _) = both_ways(&at(&req, &one), &at(&apart, &one));
        assert_eq!(fast.reused, 1);
    }

    /// The base takes the documents of the head's files of the same name and text instead of
    /// parsing them again; a file that parsed with a warning (a duplicate key) or holds a list
    /// is parsed on each side, and a file of the same name with another text is the base's own.
    #[test]
    fn the_base_takes_the_documents_of_the_heads_files_of_the_same_text() {
        let dup = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dup, namespace: ns}\ndata: {k: '1', k: '2'}\n";
        let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: l1, namespace: ns}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: l2, namespace: ns}}\n";
        let files = |size: &str| {
            snapshot(&[
                ("apps/rgds.yaml", rgds("size")),
                ("apps/a.yaml", outer("a", size)),
                ("apps/b.yaml", outer("b", "1")),
                ("apps/dup.yaml", dup.into()),
                ("apps/list.yaml", list.into()),
            ])
        };
        let (base, head) = (files("1"), files("2"));
        let written = head.materialize().unwrap();
        let req = request();
        let (fast, _) = both_ways(&at(&req, &base), &on(&req, written.root()));
        assert_eq!(fast.reused, 1);
        let (text, _, _) = printed(&fast);
        assert!(
            text.ends_with("2 changed, 0 added, 0 removed, 5 unchanged\n"),
            "{text}"
        );
        let warnings = &fast.base.as_ref().unwrap().warnings;
        assert!(
            warnings
                .iter()
                .any(|w| w.file.as_deref() == Some("apps/dup.yaml")),
            "{warnings:?}"
        );
    }

    /// The whole-output checks hold over the head's own units and those taken from the base: an
    /// instance copied into a second file renders its objects twice (KLN1012), though both
    /// copies are units of the base.
    #[test]
    fn objects_taken_from_the_base_join_the_duplicate_check() {
        let base = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
        ]);
        let head = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
            ("apps/copy.yaml", outer("a", "1")),
        ]);
        let req = request();
        let (base, head) = (at(&req, &base), at(&req, &head));
        let fast = render_pair(&base, &head, finish, Some(&shared), true);
        let full = render_pair(&base, &head, finish, None, false);
        assert_eq!(fast.reused, 2);
        let (f, g) = (fast.head.unwrap_err(), full.head.unwrap_err());
        assert_eq!(f.diagnostics, g.diagnostics);
        assert!(f.diagnostics.iter().all(|d| d.code.id == "KLN1012"));
        assert_eq!(f.diagnostics.len(), 2, "{:?}", f.diagnostics);
    }

    /// A kurel package rendered with `--instances`: `big` enables a patch, which auto-enables
    /// the one it requires (a log line) and applies both (`-v` details); an undeclared parameter
    /// is a warning in the instance's own file.
    fn kurel_tree(default: &str, b: &str) -> Snapshot {
        snapshot(&[
            (
                "shop/web.kurel/parameters.yaml",
                format!("kurel: {{name: web, version: 1.0.0, appVersion: '1'}}\nname: x\nsize: {default}\nbig: false\n"),
            ),
            (
                "shop/web.kurel/resources/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: '${name}', namespace: ns}\ndata: {size: 's${size}'}\n".into(),
            ),
            ("shop/web.kurel/patches/10-base.kpatch", "[configmap.${name}]\ndata.base: 'yes'\n".into()),
            ("shop/web.kurel/patches/10-base.yaml", "enabled: false\n".into()),
            ("shop/web.kurel/patches/20-big.kpatch", "[configmap.${name}]\ndata.big: 'yes'\n".into()),
            ("shop/web.kurel/patches/20-big.yaml", "enabled: ${big}\nrequires: [10-base.kpatch]\n".into()),
            ("shop/instances/a.yaml", "name: a\nsize: 1\nbig: true\n".into()),
            ("shop/instances/b.yaml", format!("name: b\nsize: {b}\n")),
            ("shop/instances/c.yaml", "name: c\nsize: 1\nsurprise: 1\n".into()),
        ])
    }

    fn kurel_request() -> Request {
        Request {
            inputs: vec![Input::Path(PathBuf::from("shop/web.kurel"))],
            instances: Some(PathBuf::from("shop/instances")),
            ..Request::default()
        }
    }

    /// kurel instances whose file (name and text) is the same on both sides, in a package of the
    /// same context, are taken from the base with their warnings, log lines and details; a
    /// changed instance, package or `--set` renders again.
    #[test]
    fn unchanged_kurel_instances_render_once() {
        let req = kurel_request();
        let (base, head) = (kurel_tree("1", "1"), kurel_tree("1", "2"));
        let written = head.materialize().unwrap();
        let (fast, full) = both_ways(&at(&req, &base), &on(&req, written.root()));
        assert_eq!(fast.reused, 2);
        // The head's `-v` lines name its patch files where it read them (a revision's, where
        // each run wrote it), as a render of it alone does.
        let (f, g) = (fast.head.as_ref().unwrap(), full.head.as_ref().unwrap());
        assert_eq!(f.details, g.details);
        for (f, g) in [(&fast.base, &full.base), (&fast.head, &full.head)] {
            let (f, g) = (f.as_ref().unwrap(), g.as_ref().unwrap());
            assert_eq!(f.log, g.log);
            assert_eq!(f.packages, g.packages);
        }
        let head = fast.head.as_ref().unwrap();
        assert!(
            head.log.iter().any(|l| l.contains("enabling 10-base")),
            "{:?}",
            head.log
        );
        assert!(
            head.details
                .iter()
                .any(|l| l.starts_with("shop/instances/a.yaml: applying")),
            "{:?}",
            head.details
        );
        assert!(
            head.warnings
                .iter()
                .any(|w| w.file.as_deref() == Some("shop/instances/c.yaml")),
            "{:?}",
            head.warnings
        );
        let (text, _, _) = printed(&fast);
        assert!(
            text.ends_with("1 changed, 0 added, 0 removed, 2 unchanged\n"),
            "{text}"
        );
        // Another package (a default every instance reads): nothing is taken.
        let (fast, _) = both_ways(&at(&req, &base), &at(&req, &kurel_tree("2", "1")));
        assert_eq!(fast.reused, 0);
        // Another `--set`: nothing is taken.
        let mut set = kurel_request();
        set.sets = vec!["size=3".into()];
        let (fast, _) = both_ways(&at(&req, &base), &at(&set, &base));
        assert_eq!(fast.reused, 0);
        // The same: every instance is taken.
        let (fast, _) = both_ways(&at(&req, &base), &at(&req, &base));
        assert_eq!(fast.reused, 3);
    }

    #[test]
    fn a_base_that_fails_leaves_nothing_to_take() {
        let base = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
            ("apps/a2.yaml", outer("a", "1")),
        ]);
        let head = snapshot(&[
            ("apps/rgds.yaml", rgds("size")),
            ("apps/a.yaml", outer("a", "1")),
        ]);
        let req = request();
        let (base, head) = (at(&req, &base), at(&req, &head));
        let fast = render_pair(&base, &head, finish, Some(&shared), true);
        let full = render_pair(&base, &head, finish, None, false);
        assert_eq!(fast.reused, 0);
        assert_eq!(
            fast.base.as_ref().unwrap_err().diagnostics,
            full.base.as_ref().unwrap_err().diagnostics
        );
        assert_eq!(fast.head.unwrap().units, full.head.unwrap().units);
    }

    /// A component type with one resource, read from the Component's parameters (`port`, of
    /// default `port`) and its binding's overrides (`replicas`).
    fn component_type(port: u32) -> String {
        format!("apiVersion: openchoreo.dev/v1alpha1\nkind: ComponentTypeDefinition\nmetadata: {{name: web}}\nspec:\n  workloadType: deployment\n  schema:\n    parameters: {{port: integer | default={port}}}\n    envOverrides: {{replicas: integer | default=1}}\n  resources:\n    - id: deployment\n      template:\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata: {{name: '${{metadata.name}}'}}\n        spec:\n          replicas: ${{parameters.replicas}}\n          template:\n            spec:\n              containers: [{{name: app, image: '${{workload.containers.app.image}}', ports: [{{containerPort: '${{parameters.port}}'}}]}}]\n")
    }

    /// A component's Component, Workload and production binding (`replicas` overridden).
    fn component(name: &str, replicas: u32) -> String {
        format!("apiVersion: openchoreo.dev/v1alpha1\nkind: Component\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{componentType: deployment/web}}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: Workload\nmetadata: {{name: {name}, namespace: ns}}\nspec: {{containers: {{app: {{image: 'nginx:1'}}}}}}\n---\napiVersion: openchoreo.dev/v1alpha1\nkind: ComponentDeployment\nmetadata: {{name: {name}-prod, namespace: ns}}\nspec: {{owner: {{componentName: {name}}}, environment: prod, overrides: {{replicas: {replicas}}}}}\n")
    }

    fn component_request() -> Request {
        Request {
            environment: Some("prod".into()),
            ..request()
        }
    }

    #[test]
    fn unchanged_component_releases_render_once_and_the_diff_is_the_full_renders() {
        let base = snapshot(&[
            ("apps/types.yaml", component_type(8080)),
            ("apps/a.yaml", component("a", 1)),
            ("apps/b.yaml", component("b", 1)),
            ("apps/c.yaml", component("c", 1)),
            ("apps/d.yaml", component("d", 1)),
        ]);
        // a unchanged; b changed; c moved to another file; d removed; e added.
        let head = snapshot(&[
            ("apps/types.yaml", component_type(8080)),
            ("apps/a.yaml", component("a", 1)),
            ("apps/b.yaml", component("b", 2)),
            ("apps/moved/c.yaml", component("c", 1)),
            ("apps/e.yaml", component("e", 1)),
        ]);
        let written = head.materialize().unwrap();
        let req = component_request();
        let (fast, _) = both_ways(&at(&req, &base), &on(&req, written.root()));
        // a and c come from the base, counted and not compared.
        taken(
            &fast,
            2,
            2,
            "1 changed, 1 added, 1 removed, 2 unchanged",
            "apps/moved/c.yaml",
        );
    }

    #[test]
    fn a_changed_component_type_or_option_renders_the_releases_in_full() {
        let files = |port: u32, extra: &str| {
            snapshot(&[
                ("apps/types.yaml", component_type(port)),
                ("apps/a.yaml", component("a", 1)),
                ("apps/b.yaml", component("b", 1)),
                ("apps/plain.yaml", format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: plain, namespace: ns}}\ndata: {{k: '{extra}'}}\n")),
            ])
        };
        let req = component_request();
        let same = files(8080, "1");
        let (fast, _) = both_ways(&at(&req, &same), &at(&req, &same));
        assert_eq!(fast.reused, 2, "the rule takes what it may");
        // The definition.
        let (fast, _) = both_ways(&at(&req, &same), &at(&req, &files(8081, "1")));
        assert_eq!(fast.reused, 0);
        // Another document of the run.
        let (fast, _) = both_ways(&at(&req, &same), &at(&req, &files(8080, "2")));
        assert_eq!(fast.reused, 0);
        // Another option a release reads.
        let other = Request {
            namespace: Some("elsewhere".into()),
            ..component_request()
        };
        let (fast, _) = both_ways(&at(&req, &same), &at(&other, &same));
        assert_eq!(fast.reused, 0);
    }

    /// Upstream's dependencies: `frontend` reads the service of `orders`, rendered in the same
    /// run. A change to `orders` changes `frontend`'s objects though none of its documents
    /// changed, so a run whose releases depend on each other's takes none.
    #[test]
    fn releases_that_read_each_others_services_render_in_full() {
        const PLATFORM: &str = include_str!(
            "../../../testdata/component/upstream-dependencies-in-run/00-platform.yaml"
        );
        const INPUTS: &str =
            include_str!("../../../testdata/component/upstream-dependencies-in-run/inputs.yaml");
        let files = |inputs: String| {
            snapshot(&[
                ("apps/00-platform.yaml", PLATFORM.to_string()),
                ("apps/inputs.yaml", inputs),
            ])
        };
        let changed = INPUTS.replace("port: 8080", "port: 8081");
        assert_ne!(changed, INPUTS);
        let req = Request {
            environment: Some("dev".into()),
            ..request()
        };
        let (fast, _) = both_ways(&at(&req, &files(INPUTS.into())), &at(&req, &files(changed)));
        assert_eq!(fast.reused, 0);
        let (text, _, _) = printed(&fast);
        assert!(text.contains("ORDERS_PORT"), "{text}");
    }
}
