//! The files of a committed revision that a render of some paths reads, taken from a
//! repository's objects: `kiln diff`'s revision sides (docs/diff.md).
//!
//! Git stores a tree once however often it is referenced, so a small repository can name
//! millions of entries: a tree of 5,000 files referenced 5,000 times from one directory is 25
//! million paths in a few hundred kilobytes. A revision is therefore never walked whole. What
//! [`read`] takes is what a render of the named paths reads, and no more:
//!
//! - each named path (a file, or a directory and everything below it), found by name from the
//!   top without listing the directories on the way;
//! - the kurel local extensions beside each named path (`*.local.kurel/` in the directory
//!   holding it: a package named on the command line reads its extension from there);
//! - the target of every symlink in what is taken (and of a symlink on the way to a named path),
//!   found the same way, until nothing new comes (at most [`MAX_LINK_HOPS`] links in a chain,
//!   as Linux follows).
//!
//! Version-control data (`source::VCS_DIRS`) is never an input: a vendored `.svn/` or `.hg/`
//! committed to the tree is left out, and a link's target inside one is not read.
//!
//! Every tree entry read (listed, or looked up by name) counts against `tree-entries` before it
//! is, and every file read against `tree-bytes` (in path order) before any is read: a revision that expands
//! past either is a diagnostic naming the limit, not an allocation. A file over `input-bytes`
//! is not read (the render refuses it on its size). A submodule in what is taken, an entry
//! whose name is not a file name, or two entries of one name are errors: a revision is read
//! exactly or not at all.
//!
//! The objects come through [`Objects`] (the CLI's is git2's object database; the tests' and
//! the fuzz target's are in memory), so that this is plain logic over data.

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use rayon::prelude::*;

use crate::diag::{codes, quote, Diagnostic};
use crate::limits::Limit;
use crate::source::{is_vcs_name, vcs_component, Snapshot, SnapshotEntry};

/// Most symbolic links followed in one chain (Linux's `MAXSYMLINKS`).
pub const MAX_LINK_HOPS: usize = 40;

/// The longest symlink target read, and the longest path taken (Linux's `PATH_MAX`): a longer
/// one cannot be made on disk. It also bounds how deep trees nest in what is read.
pub const MAX_LINK_BYTES: u64 = 4096;

/// What a tree entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory (a tree object).
    Tree,
    /// A regular file (a blob; executable or not).
    File,
    /// A symbolic link (a blob holding the target).
    Symlink,
    /// A submodule: only a commit id, its files are in another repository.
    Submodule,
}

/// One entry of a tree object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry<Id> {
    /// Its name, as stored.
    pub name: Vec<u8>,
    /// What it is.
    pub kind: Kind,
    /// The object it names.
    pub id: Id,
}

/// A repository's objects, as [`read`] needs them. Errors are the object store's messages.
pub trait Objects: Sync {
    /// An object id.
    type Id: Copy + Send + Sync;
    /// The entry `name` of the tree `tree`, found without listing the tree.
    fn entry(&self, tree: Self::Id, name: &[u8]) -> Result<Option<Entry<Self::Id>>, String>;
    /// The entries of the tree `tree`; `None` when it holds more than `max` (nothing is
    /// listed then).
    fn entries(&self, tree: Self::Id, max: usize) -> Result<Option<Vec<Entry<Self::Id>>>, String>;
    /// The size of the blob `blob`, without reading it.
    fn size(&self, blob: Self::Id) -> Result<u64, String>;
    /// The bytes of the blob `blob`.
    fn read(&self, blob: Self::Id) -> Result<Vec<u8>, String>;
}

/// The bounds of one read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most tree entries read, listed or looked up (`tree-entries`).
    pub max_entries: usize,
    /// Most bytes of files read, all together (`tree-bytes`).
    pub max_bytes: usize,
    /// Largest file read (`input-bytes`); a larger one is taken by its size only.
    pub max_file_bytes: usize,
}

impl Limits {
    /// The bounds a run's limits give.
    pub fn of(limits: &crate::limits::Limits) -> Self {
        Self {
            max_entries: limits.tree_entries,
            max_bytes: limits.tree_bytes,
            max_file_bytes: limits.yaml.max_input_bytes,
        }
    }
}

/// The files of the tree `top` that a render of `named` (paths relative to the top, as the
/// user named them: inputs, values files, CRDs, instance directories) reads. See the module.
pub fn read<O: Objects>(
    objects: &O,
    top: O::Id,
    named: &[PathBuf],
    limits: &Limits,
) -> Result<Snapshot, Diagnostic> {
    let mut r = Reader {
        objects,
        top,
        limits,
        listed: 0,
        held: 0,
        taken: BTreeMap::new(),
        whole: HashSet::new(),
        seen: HashSet::new(),
        queue: VecDeque::new(),
    };
    for p in named {
        let Some(p) = normal(p) else { continue };
        // A kurel package's local extension sits beside it (`NAME.local.kurel/`).
        if let Some(dir) = p.parent().filter(|_| !p.as_os_str().is_empty()) {
            r.queue.push_back(Want::Extensions(dir.to_path_buf(), 0));
        }
        r.queue.push_back(Want::Path(p, 0));
    }
    while let Some(want) = r.queue.pop_front() {
        match want {
            Want::Path(p, hops) => r.path(p, hops)?,
            Want::Extensions(dir, hops) => r.extensions(dir, hops)?,
        }
    }
    r.snapshot()
}

/// What is taken at a path.
#[derive(Debug, Clone)]
enum Taken<Id> {
    File(Id),
    Link(PathBuf),
}

/// What is still to take, with the links followed to reach it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Want {
    /// A path: a file, or a directory whole.
    Path(PathBuf, usize),
    /// The `*.local.kurel` entries of a directory.
    Extensions(PathBuf, usize),
}

/// What a path names.
enum Found<Id> {
    /// Nothing (the render says so when it reads it).
    Nothing,
    /// A tree.
    Tree(Id),
    /// A file.
    File(Id),
}

struct Reader<'a, O: Objects> {
    objects: &'a O,
    top: O::Id,
    limits: &'a Limits,
    /// Tree entries read so far (listed, or looked up by name).
    listed: usize,
    /// Bytes of the paths of the entries listed, which are held until the end.
    held: u64,
    /// Files and symlinks taken, by path.
    taken: BTreeMap<PathBuf, Taken<O::Id>>,
    /// Directories taken whole.
    whole: HashSet<PathBuf>,
    /// What was already asked for (with no hops: a path is taken once however it is reached).
    seen: HashSet<Want>,
    /// What is still to take.
    queue: VecDeque<Want>,
}

impl<O: Objects> Reader<'_, O> {
    /// Find `path` by name from the top, without listing the directories on the way. A symlink
    /// on the way is taken, and what it points to (with the rest of the path) asked for through
    /// `again`, instead: `Nothing` is returned then.
    fn find(
        &mut self,
        path: &Path,
        hops: usize,
        again: fn(PathBuf, usize) -> Want,
    ) -> Result<Found<O::Id>, Diagnostic> {
        let names: Vec<&OsStr> = path.iter().collect();
        let mut found = Found::Tree(self.top);
        let mut at = PathBuf::new();
        for (i, name) in names.iter().enumerate() {
            let Found::Tree(tree) = found else {
                // A file on the way: nothing is below it.
                return Ok(Found::Nothing);
            };
            let Some(e) = self.entry(tree, &at, name)? else {
                return Ok(Found::Nothing);
            };
            self.hold(&at, name)?;
            at.push(name);
            found = match e.kind {
                Kind::Tree => Found::Tree(e.id),
                Kind::File => Found::File(e.id),
                Kind::Symlink => {
                    let rest: PathBuf = names[i + 1..].iter().collect();
                    self.link(at, e.id, &rest, hops, again)?;
                    return Ok(Found::Nothing);
                }
                Kind::Submodule => return Err(submodule(&at)),
            };
        }
        Ok(found)
    }

    /// Take what `path` names: a file, or a directory and everything below it. Version-control
    /// data is never an input: a path into it (a link's target) takes nothing.
    fn path(&mut self, path: PathBuf, hops: usize) -> Result<(), Diagnostic> {
        if self.covered(&path)
            || vcs_component(&path).is_some()
            || !self.seen.insert(Want::Path(path.clone(), 0))
        {
            return Ok(());
        }
        match self.find(&path, hops, Want::Path)? {
            Found::Nothing => Ok(()),
            Found::Tree(id) => self.walk(id, path),
            Found::File(id) => {
                self.taken.insert(path, Taken::File(id));
                Ok(())
            }
        }
    }

    /// Take every `*.local.kurel` entry of the directory `dir`.
    fn extensions(&mut self, dir: PathBuf, hops: usize) -> Result<(), Diagnostic> {
        if self.covered(&dir) || !self.seen.insert(Want::Extensions(dir.clone(), 0)) {
            return Ok(());
        }
        if let Found::Tree(id) = self.find(&dir, hops, Want::Extensions)? {
            for e in self.list(id, &dir)? {
                if e.name.ends_with(b".local.kurel") {
                    self.queue
                        .push_back(Want::Path(dir.join(os_name(&e.name)), hops));
                }
            }
        }
        Ok(())
    }

    /// Whether `path` is inside a directory already taken whole.
    fn covered(&self, path: &Path) -> bool {
        path.ancestors().any(|a| self.whole.contains(a))
    }

    /// Look an entry up by name; it counts as one entry read (links whose targets run deep
    /// would otherwise be work without a bound).
    fn entry(
        &mut self,
        tree: O::Id,
        at: &Path,
        name: &OsStr,
    ) -> Result<Option<Entry<O::Id>>, Diagnostic> {
        if self.listed >= self.limits.max_entries {
            return Err(too_many(&at.join(name), self.limits.max_entries));
        }
        self.listed += 1;
        self.objects
            .entry(tree, name.as_encoded_bytes())
            .map_err(unreadable)
    }

    /// List a tree at `at`, counting its entries first and checking its names.
    fn list(&mut self, tree: O::Id, at: &Path) -> Result<Vec<Entry<O::Id>>, Diagnostic> {
        let left = self.limits.max_entries.saturating_sub(self.listed);
        let Some(entries) = self.objects.entries(tree, left).map_err(unreadable)? else {
            return Err(too_many(at, self.limits.max_entries));
        };
        if entries.len() > left {
            return Err(too_many(at, self.limits.max_entries));
        }
        self.listed += entries.len();
        let mut names = HashSet::with_capacity(entries.len());
        for e in &entries {
            if !is_file_name(&e.name) {
                return Err(bad_name(at, &e.name));
            }
            if !names.insert(e.name.as_slice()) {
                return Err(Diagnostic::error(
                    codes::GIT_REVISION,
                    format!(
                        "cannot read the revision: {} holds two entries named {}",
                        shown(at),
                        quote(&String::from_utf8_lossy(&e.name))
                    ),
                )
                .with_hint("the repository is damaged or crafted (`git fsck` reports it): kiln reads a revision exactly or not at all"));
            }
        }
        Ok(entries)
    }

    /// Take the directory `tree` at `at` and everything below it.
    fn walk(&mut self, tree: O::Id, at: PathBuf) -> Result<(), Diagnostic> {
        let mut stack = vec![(tree, at)];
        while let Some((tree, at)) = stack.pop() {
            if !self.whole.insert(at.clone()) {
                continue;
            }
            for e in self.list(tree, &at)? {
                let name = os_name(&e.name);
                // Another system's version-control data committed to the tree (`vendor/.svn/`)
                // is left out, as a walk of the working tree leaves it out.
                if name.to_str().is_some_and(is_vcs_name) {
                    continue;
                }
                self.hold(&at, name)?;
                let p = at.join(name);
                match e.kind {
                    Kind::Tree => stack.push((e.id, p)),
                    Kind::File => {
                        self.taken.insert(p, Taken::File(e.id));
                    }
                    Kind::Symlink => self.link(p, e.id, Path::new(""), 0, Want::Path)?,
                    Kind::Submodule => return Err(submodule(&p)),
                }
            }
        }
        Ok(())
    }

    /// Count the path `at/name` of an entry against `tree-bytes` (every path taken is held until
    /// the end, and a tree nested a thousand deep makes every path below it long), refusing
    /// one longer than a path can be.
    fn hold(&mut self, at: &Path, name: &OsStr) -> Result<(), Diagnostic> {
        let len = (at.as_os_str().len() + 1 + name.len()) as u64;
        if len > MAX_LINK_BYTES {
            return Err(Diagnostic::error(
                codes::GIT_REVISION,
                format!(
                    "cannot read the revision: the path {} is longer than any path can be ({MAX_LINK_BYTES} bytes)",
                    quote(&at.join(name).to_string_lossy())
                ),
            )
            .with_hint("trees nested that deep cannot be written out: name paths inside them, or flatten the directories"));
        }
        self.held += len;
        if self.held > self.limits.max_bytes as u64 {
            return Err(too_large(&at.join(name), self.limits.max_bytes));
        }
        Ok(())
    }

    /// Take the symlink at `at` and ask for what it points to (with `rest` below it) through
    /// `again`: a target inside the tree, reached in at most [`MAX_LINK_HOPS`] links. An
    /// absolute target, or one that climbs out, is taken as a link only: the render refuses it
    /// when it reads it.
    fn link(
        &mut self,
        at: PathBuf,
        blob: O::Id,
        rest: &Path,
        hops: usize,
        again: fn(PathBuf, usize) -> Want,
    ) -> Result<(), Diagnostic> {
        let size = self.objects.size(blob).map_err(unreadable)?;
        if size > MAX_LINK_BYTES {
            return Err(Diagnostic::error(
                codes::GIT_REVISION,
                format!(
                    "cannot read the revision: the symbolic link {} points to a path of {size} bytes, longer than any path can be ({MAX_LINK_BYTES})",
                    shown(&at)
                ),
            )
            .with_hint("the repository is damaged or crafted: kiln reads a revision exactly or not at all"));
        }
        let target = PathBuf::from(os_name(&self.objects.read(blob).map_err(unreadable)?));
        let joined = at
            .parent()
            .unwrap_or(Path::new(""))
            .join(&target)
            .join(rest);
        if let Some(to) = normal(&joined).filter(|_| hops < MAX_LINK_HOPS && !target.is_absolute())
        {
            self.queue.push_back(again(to, hops + 1));
        }
        self.taken.insert(at, Taken::Link(target));
        Ok(())
    }

    /// The snapshot of what was taken: sizes first, added up in path order within the limit,
    /// then the files read (on every core).
    fn snapshot(self) -> Result<Snapshot, Diagnostic> {
        let files: Vec<(&PathBuf, O::Id)> = self
            .taken
            .iter()
            .filter_map(|(p, t)| match t {
                Taken::File(id) => Some((p, *id)),
                Taken::Link(_) => None,
            })
            .collect();
        let sizes: Vec<u64> = files
            .par_iter()
            .map(|(_, id)| self.objects.size(*id))
            .collect::<Result<_, _>>()
            .map_err(unreadable)?;
        let mut total = self.held;
        for ((p, _), size) in files.iter().zip(&sizes) {
            if *size > self.limits.max_file_bytes as u64 {
                continue;
            }
            total += size;
            if total > self.limits.max_bytes as u64 {
                return Err(too_large(p, self.limits.max_bytes));
            }
        }
        let max = self.limits.max_file_bytes as u64;
        let read: Vec<SnapshotEntry> = files
            .par_iter()
            .zip(&sizes)
            .map(|((_, id), size)| {
                if *size > max {
                    Ok(SnapshotEntry::Oversized(*size))
                } else {
                    self.objects.read(*id).map(SnapshotEntry::File)
                }
            })
            .collect::<Result<_, _>>()
            .map_err(unreadable)?;
        let mut read = read.into_iter();
        let mut snap = Snapshot::new();
        for (p, t) in self.taken {
            let entry = match t {
                Taken::File(_) => read.next().unwrap_or(SnapshotEntry::File(Vec::new())),
                Taken::Link(target) => SnapshotEntry::Symlink(target),
            };
            snap.add(&p, entry)?;
        }
        Ok(snap)
    }
}

/// `p` without `.`, `..` resolved lexically; `None` when it is absolute or climbs out.
fn normal(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

/// A name git itself writes: not empty, not `.` or `..`, no `/` and no NUL.
fn is_file_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.iter().any(|b| *b == b'/' || *b == 0)
}

fn shown(p: &Path) -> String {
    if p.as_os_str().is_empty() {
        ".".to_string()
    } else {
        p.display().to_string()
    }
}

fn too_many(at: &Path, max: usize) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!(
            "cannot read the revision: its trees under the paths named hold more than {max} entries, the limit ({}), at {}",
            Limit::TreeEntries,
            shown(at)
        ),
    )
    .with_hint(Limit::TreeEntries.hint(
        "git stores a tree once however often it is named, so a small repository can name millions of paths; name the directories to compare",
    ))
}

fn too_large(at: &Path, max: usize) -> Diagnostic {
    Diagnostic::error(
        codes::YAML_BUDGET,
        format!(
            "cannot read the revision: its files under the paths named, with their paths, are more than {max} bytes together, the limit ({}), at {}",
            Limit::TreeBytes,
            shown(at)
        ),
    )
    .with_hint(Limit::TreeBytes.hint("name fewer or smaller paths to compare"))
}

fn bad_name(at: &Path, name: &[u8]) -> Diagnostic {
    Diagnostic::error(
        codes::GIT_REVISION,
        format!(
            "cannot read the revision: {} holds an entry named {}, which is not a file name",
            shown(at),
            quote(&String::from_utf8_lossy(name))
        ),
    )
    .with_hint("the repository is damaged or crafted (`git fsck` reports it): kiln reads a revision exactly or not at all")
}

fn submodule(at: &Path) -> Diagnostic {
    Diagnostic::error(
        codes::GIT_REVISION,
        format!(
            "cannot read the revision: {} is a git submodule, and kiln diff does not read submodules (a revision holds only their commit id)",
            shown(at)
        ),
    )
    .with_hint("name paths outside it, or diff inside the submodule's own repository")
}

fn unreadable(e: String) -> Diagnostic {
    Diagnostic::error(
        codes::GIT_REVISION,
        format!("cannot read the revision: {e}"),
    )
    .with_hint("check the repository with `git fsck`")
}

#[cfg(unix)]
fn os_name(b: &[u8]) -> &OsStr {
    use std::os::unix::ffi::OsStrExt;
    OsStr::from_bytes(b)
}

#[cfg(not(unix))]
fn os_name(b: &[u8]) -> &OsStr {
    OsStr::new(std::str::from_utf8(b).unwrap_or("\u{fffd}"))
}

/// An object store in memory: what the tests and the fuzz target read revisions from. An id is
/// an index into [`MemoryObjects::objects`].
#[derive(Debug, Clone, Default)]
pub struct MemoryObjects {
    /// Every object: a tree's entries or a blob's bytes.
    pub objects: Vec<MemoryObject>,
}

/// One object of a [`MemoryObjects`].
#[derive(Debug, Clone)]
pub enum MemoryObject {
    /// A tree.
    Tree(Vec<Entry<usize>>),
    /// A blob.
    Blob(Vec<u8>),
}

impl MemoryObjects {
    /// Add a blob; its id.
    pub fn blob(&mut self, bytes: &[u8]) -> usize {
        self.objects.push(MemoryObject::Blob(bytes.to_vec()));
        self.objects.len() - 1
    }

    /// Add a tree of `(name, kind, id)` entries; its id.
    pub fn tree(&mut self, entries: &[(&str, Kind, usize)]) -> usize {
        let entries = entries
            .iter()
            .map(|(n, kind, id)| Entry {
                name: n.as_bytes().to_vec(),
                kind: *kind,
                id: *id,
            })
            .collect();
        self.objects.push(MemoryObject::Tree(entries));
        self.objects.len() - 1
    }

    fn get(&self, id: usize) -> Result<&MemoryObject, String> {
        self.objects
            .get(id)
            .ok_or_else(|| format!("object {id} does not exist"))
    }

    fn tree_of(&self, id: usize) -> Result<&[Entry<usize>], String> {
        match self.get(id)? {
            MemoryObject::Tree(t) => Ok(t),
            MemoryObject::Blob(_) => Err(format!("object {id} is not a tree")),
        }
    }

    fn blob_of(&self, id: usize) -> Result<&[u8], String> {
        match self.get(id)? {
            MemoryObject::Blob(b) => Ok(b),
            MemoryObject::Tree(_) => Err(format!("object {id} is not a blob")),
        }
    }
}

impl Objects for MemoryObjects {
    type Id = usize;

    fn entry(&self, tree: usize, name: &[u8]) -> Result<Option<Entry<usize>>, String> {
        Ok(self.tree_of(tree)?.iter().find(|e| e.name == name).cloned())
    }

    fn entries(&self, tree: usize, max: usize) -> Result<Option<Vec<Entry<usize>>>, String> {
        let t = self.tree_of(tree)?;
        Ok((t.len() <= max).then(|| t.to_vec()))
    }

    fn size(&self, blob: usize) -> Result<u64, String> {
        Ok(self.blob_of(blob)?.len() as u64)
    }

    fn read(&self, blob: usize) -> Result<Vec<u8>, String> {
        Ok(self.blob_of(blob)?.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Kind::{File, Submodule, Symlink, Tree};

    fn limits() -> Limits {
        Limits::of(&crate::limits::Limits::default())
    }

    fn paths(s: &Snapshot) -> Vec<String> {
        let m = s.materialize().unwrap();
        let mut out = Vec::new();
        let mut stack = vec![m.path().to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let p = e.path();
                let rel = p.strip_prefix(m.path()).unwrap().display().to_string();
                if e.file_type().unwrap().is_dir() {
                    stack.push(p);
                } else {
                    out.push(rel);
                }
            }
        }
        out.sort();
        out
    }

    /// A tree of 5,000 files referenced 5,000 times: 25 million paths in a store of 10,000
    /// entries. Beside it, an application.
    fn bomb() -> (MemoryObjects, usize) {
        let mut m = MemoryObjects::default();
        let cm = m.blob(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n");
        let names: Vec<String> = (0..5000).map(|i| format!("f{i}.yaml")).collect();
        let files: Vec<(&str, Kind, usize)> =
            names.iter().map(|n| (n.as_str(), File, cm)).collect();
        let inner = m.tree(&files);
        let dirs: Vec<(&str, Kind, usize)> =
            names.iter().map(|n| (n.as_str(), Tree, inner)).collect();
        let bomb = m.tree(&dirs);
        let app = m.tree(&[("cm.yaml", File, cm)]);
        let apps = m.tree(&[("bomb", Tree, bomb), ("web", Tree, app)]);
        let top = m.tree(&[("apps", Tree, apps), ("README.md", File, cm)]);
        (m, top)
    }

    #[test]
    fn only_the_named_paths_are_read_and_an_expanding_tree_ends_at_the_limit() {
        let (m, top) = bomb();
        let s = read(&m, top, &[PathBuf::from("apps/web")], &limits()).unwrap();
        assert_eq!(paths(&s), ["apps/web/cm.yaml"]);
        let l = Limits {
            max_entries: 100_000,
            ..limits()
        };
        let e = read(&m, top, &[PathBuf::from("apps/bomb")], &l).unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET);
        assert!(
            e.message
                .contains("more than 100000 entries, the limit (tree-entries), at apps/bomb/f"),
            "{e}"
        );
        assert!(
            e.hint
                .as_deref()
                .unwrap_or("")
                .contains("--limit tree-entries=N"),
            "{e}"
        );
        // The whole revision holds the bomb too.
        assert!(read(&m, top, &[PathBuf::from(".")], &l).is_err());
        // A file of it, named, is one file.
        let s = read(
            &m,
            top,
            &[PathBuf::from("apps/bomb/f7.yaml/f9.yaml")],
            &limits(),
        )
        .unwrap();
        assert_eq!(paths(&s), ["apps/bomb/f7.yaml/f9.yaml"]);
    }

    #[test]
    fn a_blob_read_many_times_ends_at_the_bytes_limit() {
        let mut m = MemoryObjects::default();
        let big = m.blob(&[b'a'; 1000]);
        let names: Vec<String> = (0..100).map(|i| format!("f{i}")).collect();
        let files: Vec<(&str, Kind, usize)> =
            names.iter().map(|n| (n.as_str(), File, big)).collect();
        let dir = m.tree(&files);
        let top = m.tree(&[("d", Tree, dir)]);
        let mut l = limits();
        l.max_bytes = 50_000;
        let e = read(&m, top, &[PathBuf::from("d")], &l).unwrap_err();
        assert!(
            e.message.contains("with their paths, are more than 50000 bytes together, the limit (tree-bytes), at d/f"),
            "{e}"
        );
        l.max_bytes = 101_000;
        assert_eq!(read(&m, top, &[PathBuf::from("d")], &l).unwrap().len(), 100);
        // A file over input-bytes is known by its size, and not counted.
        l.max_file_bytes = 999;
        l.max_bytes = 10;
        let s = read(&m, top, &[PathBuf::from("d/f3")], &l).unwrap();
        let m = s.materialize().unwrap();
        assert_eq!(
            std::fs::metadata(m.path().join("d/f3")).unwrap().len(),
            1000
        );
    }

    #[test]
    fn links_bring_their_targets_and_local_extensions_come_with_their_package() {
        let mut m = MemoryObjects::default();
        let cm = m.blob(b"a: 1\n");
        let to_shared = m.blob(b"../../shared");
        let to_self = m.blob(b"loop/x");
        let out = m.blob(b"../../etc");
        let abs = m.blob(b"/etc");
        let shared = m.tree(&[("s.yaml", File, cm)]);
        let params = m.tree(&[("parameters.yaml", File, cm)]);
        let app = m.tree(&[
            ("cm.yaml", File, cm),
            ("shared", Symlink, to_shared),
            ("loop", Symlink, to_self),
            ("out", Symlink, out),
            ("abs", Symlink, abs),
        ]);
        let apps = m.tree(&[
            ("web", Tree, app),
            ("pkg.kurel", Tree, params),
            ("pkg.local.kurel", Tree, params),
            ("other", Tree, params),
        ]);
        let top = m.tree(&[
            ("apps", Tree, apps),
            ("shared", Tree, shared),
            ("link", Symlink, to_shared),
        ]);
        let s = read(&m, top, &[PathBuf::from("apps/web")], &limits()).unwrap();
        // Every local extension beside the path named comes (a package reached through a link
        // looks for its extension by the package's own name).
        assert_eq!(
            paths(&s),
            [
                "apps/pkg.local.kurel/parameters.yaml",
                "apps/web/abs",
                "apps/web/cm.yaml",
                "apps/web/loop",
                "apps/web/out",
                "apps/web/shared",
                "shared/s.yaml"
            ]
        );
        let s = read(&m, top, &[PathBuf::from("apps/pkg.kurel")], &limits()).unwrap();
        assert_eq!(
            paths(&s),
            [
                "apps/pkg.kurel/parameters.yaml",
                "apps/pkg.local.kurel/parameters.yaml"
            ]
        );
        // A link on the way to a named path: `apps/web/shared/s.yaml` is `shared/s.yaml`;
        // `link/s.yaml` is `../../shared/s.yaml`, which climbs out of the top.
        let s = read(
            &m,
            top,
            &[PathBuf::from("apps/web/shared/s.yaml")],
            &limits(),
        )
        .unwrap();
        assert_eq!(paths(&s), ["apps/web/shared", "shared/s.yaml"]);
        let s = read(&m, top, &[PathBuf::from("link/s.yaml")], &limits()).unwrap();
        assert_eq!(paths(&s), ["link"]);
    }

    /// Trees nested deep make every path below them long: a path longer than a path can be is
    /// refused, and the bytes of the paths held count against `tree-bytes`. A store whose tree
    /// holds itself (git's hashes make that impossible, a store in memory can) ends there too.
    #[test]
    fn deep_trees_end_at_the_longest_path_and_their_paths_count_as_bytes() {
        let mut m = MemoryObjects::default();
        let cm = m.blob(b"a: 1\n");
        let mut t = m.tree(&[("cm.yaml", File, cm)]);
        for _ in 0..3000 {
            t = m.tree(&[("d", Tree, t)]);
        }
        let top = m.tree(&[("deep", Tree, t), ("x.yaml", File, cm)]);
        let e = read(&m, top, &[PathBuf::from("deep")], &limits()).unwrap_err();
        assert_eq!(e.code, codes::GIT_REVISION);
        assert!(
            e.message
                .contains("longer than any path can be (4096 bytes)"),
            "{e}"
        );
        assert!(e.message.len() < 300, "{e}");
        let l = Limits {
            max_bytes: 1000,
            ..limits()
        };
        let e = read(&m, top, &[PathBuf::from("deep")], &l).unwrap_err();
        assert_eq!(e.code, codes::YAML_BUDGET, "{e}");
        // A tree that holds itself, twice over.
        m.objects.push(MemoryObject::Tree(Vec::new()));
        let me = m.objects.len() - 1;
        m.objects[me] = MemoryObject::Tree(vec![
            Entry {
                name: b"a".to_vec(),
                kind: Tree,
                id: me,
            },
            Entry {
                name: b"b".to_vec(),
                kind: Tree,
                id: me,
            },
        ]);
        let top = m.tree(&[("loop", Tree, me)]);
        assert!(read(&m, top, &[PathBuf::from("loop")], &limits()).is_err());
    }

    #[test]
    fn version_control_data_is_left_out() {
        let mut m = MemoryObjects::default();
        let cm = m.blob(b"a: 1\n");
        let to_svn = m.blob(b"vendor/.svn");
        let svn = m.tree(&[("entries.yaml", File, cm)]);
        let vendor = m.tree(&[
            (".svn", Tree, svn),
            (".HG", Tree, svn),
            ("x.yaml", File, cm),
        ]);
        let top = m.tree(&[("vendor", Tree, vendor), ("link", Symlink, to_svn)]);
        let s = read(&m, top, &[PathBuf::from(".")], &limits()).unwrap();
        let taken: Vec<&Path> = s.entries().iter().map(|(p, _)| p.as_path()).collect();
        assert_eq!(taken, [Path::new("link"), Path::new("vendor/x.yaml")]);
    }

    #[test]
    fn what_a_revision_cannot_hold_is_an_error() {
        let mut m = MemoryObjects::default();
        let cm = m.blob(b"a: 1\n");
        let long = m.blob(&[b'a'; 5000]);
        for (entries, why) in [
            (
                vec![("vendor", Submodule, cm)],
                "apps/vendor is a git submodule",
            ),
            (
                vec![("..", File, cm)],
                "holds an entry named \"..\", which is not a file name",
            ),
            (vec![("a/b", File, cm)], "holds an entry named \"a/b\""),
            (vec![("", File, cm)], "holds an entry named \"\""),
            (
                vec![("a", File, cm), ("a", Tree, cm)],
                "apps holds two entries named \"a\"",
            ),
            (
                vec![("l", Symlink, long)],
                "the symbolic link apps/l points to a path of 5000 bytes",
            ),
        ] {
            let apps = m.tree(&entries);
            let top = m.tree(&[("apps", Tree, apps)]);
            let e = read(&m, top, &[PathBuf::from("apps")], &limits()).unwrap_err();
            assert_eq!(e.code, codes::GIT_REVISION, "{why}");
            assert!(e.message.contains(why), "{why}: {e}");
        }
        let top = m.tree(&[("vendor", Submodule, cm)]);
        let e = read(&m, top, &[PathBuf::from("vendor/x")], &limits()).unwrap_err();
        assert!(e.message.contains("vendor is a git submodule"), "{e}");
        // Not there: nothing is taken (the render says the path does not exist).
        assert!(read(&m, top, &[PathBuf::from("nope/x")], &limits())
            .unwrap()
            .is_empty());
    }
}
