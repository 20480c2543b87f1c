//! The whole-output checks of a run: each unit's objects checked as they are made (built-in
//! kinds exist, namespaces are valid), and no object rendered twice (KLN1012).

use rayon::prelude::*;
use serde_json::Value;

use super::{Origin, OriginKind, Request};
use crate::diag::{codes, Diagnostic};

/// A unit's objects checked (built-in kinds exist; identities kept for the duplicate rule), then
/// made into `finish`'s output when they pass.
pub(super) fn check_unit<T>(
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

/// Every object whose identity an earlier object of the output has: `(unit, index of the object
/// in the unit, unit of the first object with that identity)`, in output order.
///
/// A hash map of identities, split by hash into one table per worker, each filled on its own
/// core, because one table of every identity of a large fleet is a serial step of the main
/// thread. An identity always lands in the same table, which sees the objects in output
/// order, so each table finds what one table would.
pub(super) fn duplicate_ids(units: &[&[Identity]]) -> Vec<(usize, usize, usize)> {
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
pub(crate) struct Checked<T> {
    pub(super) out: Option<T>,
    pub(super) ids: Vec<Identity>,
    pub(super) problems: Vec<Diagnostic>,
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
pub(crate) struct Identity {
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
pub(super) fn identity(o: &Value) -> Option<Identity> {
    // Small maps, read for every rendered object: scanned, not hashed (`crate::lookup`).
    let field = crate::lookup::field;
    let top = |k: &str| field(o, k).and_then(Value::as_str);
    let meta = field(o, "metadata");
    let meta = |k: &str| meta.and_then(|m| field(m, k)).and_then(Value::as_str);
    Identity::new(
        crate::scope::group_of(top("apiVersion")?),
        top("kind")?,
        meta("namespace").unwrap_or(""),
        meta("name")?,
    )
}

pub(super) fn describe(o: &Origin) -> String {
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
pub(super) fn dir_of(o: &Origin) -> &str {
    o.file.rsplit_once('/').map_or("", |(d, _)| d)
}

/// Two objects of one output with one identity: applied together, one overwrites the other.
pub(super) fn duplicate(id: &Identity, first: &Origin, second: &Origin) -> Diagnostic {
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
pub(super) fn is_release(kind: OriginKind) -> bool {
    matches!(
        kind,
        OriginKind::Component | OriginKind::Project | OriginKind::Resource
    )
}

/// The problems of a run's units: each unit's own (placed on the input it came from), and
/// every object an earlier one has the identity of (per directory with
/// [`Request::duplicates_per_directory`]; releases of different environments apart with
/// [`Request::environments_apart`]).
pub(super) fn problems<T>(
    req: &Request,
    units: &[Checked<T>],
    origins: &[Origin],
) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let ids: Vec<&[Identity]> = units.iter().map(|c| c.ids.as_slice()).collect();
    let mut repeats = duplicate_ids(&ids).into_iter().peekable();
    // Per directory: the first unit of each (identity, directory) among the repeated ones.
    let mut in_dir: std::collections::HashMap<(&Identity, &str), usize> = Default::default();
    for (i, c) in units.iter().enumerate() {
        // A rendered object's problem is placed on the input it came from.
        problems.extend(c.problems.iter().map(|d| match d.file {
            Some(_) => d.clone(),
            None => d.clone().in_file(origins[i].file.clone()),
        }));
        while let Some((_, j, mut first)) = repeats.next_if(|(at, _, _)| *at == i) {
            let id = &c.ids[j];
            if req.duplicates_per_directory {
                in_dir.entry((id, dir_of(&origins[first]))).or_insert(first);
                match in_dir.entry((id, dir_of(&origins[i]))) {
                    std::collections::hash_map::Entry::Occupied(o) => first = *o.get(),
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert(i);
                        continue;
                    }
                }
            }
            let (a, b) = (&origins[first], &origins[i]);
            let other_environment = is_release(a.kind)
                && is_release(b.kind)
                && a.detail.is_some()
                && b.detail.is_some()
                && a.detail != b.detail;
            if !(req.environments_apart && other_environment) {
                problems.push(duplicate(id, a, b));
            }
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

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
