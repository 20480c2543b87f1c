//! Dependency order of the custom types in `spec.schema.types`.
//!
//! kro adds the types to a DAG one by one and rejects the dependency set that closes a cycle
//! (`cyclic dependency in type B: graph contains a cycle: B -> A -> B`), then builds the types
//! in topological order so each one can inline the types it uses. kro ranges over a Go map, so
//! which type of a cycle gets blamed varies between runs; here types are added in name order,
//! and the path search visits neighbours in sorted order like kro's `findSortedPath`, so the
//! report is stable.

use std::collections::{BTreeMap, BTreeSet};

/// Why a type could not be added to the graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GraphError {
    pub(crate) type_name: String,
    pub(crate) message: String,
}

/// The accepted dependency graph and the errors of the types whose dependencies were rejected.
#[derive(Debug, Default)]
pub(crate) struct TypeOrder {
    /// Types in build order (dependencies first; ties broken by name).
    pub(crate) order: Vec<String>,
    pub(crate) errors: Vec<GraphError>,
}

/// Order `deps` (type name → referenced names). References to names that are not types are
/// left out of the graph; building the referencing field reports them as `unknown type`.
pub(crate) fn order_types(deps: &BTreeMap<String, BTreeSet<String>>) -> TypeOrder {
    let mut edges: BTreeMap<&str, BTreeSet<&str>> =
        deps.keys().map(|k| (k.as_str(), BTreeSet::new())).collect();
    let mut errors = Vec::new();

    for (name, wanted) in deps {
        let wanted: Vec<&str> = wanted
            .iter()
            .map(String::as_str)
            .filter(|d| deps.contains_key(*d))
            .collect();
        if wanted.contains(&name.as_str()) {
            errors.push(GraphError {
                type_name: name.clone(),
                message: "self references are not allowed".to_string(),
            });
            continue;
        }
        if let Some(path) = find_path(&edges, &wanted, name) {
            let mut cycle = vec![name.as_str()];
            cycle.extend(path);
            errors.push(GraphError {
                type_name: name.clone(),
                message: format!(
                    "cyclic dependency in type {name}: graph contains a cycle: {}",
                    cycle.join(" -> ")
                ),
            });
            continue;
        }
        if let Some(set) = edges.get_mut(name.as_str()) {
            set.extend(wanted);
        }
    }

    TypeOrder {
        order: topological(&edges),
        errors,
    }
}

/// A path from one of `starts` to `target` along dependency edges, ending in `target`,
/// searched like kro's `findSortedPath` (sorted starts, depth-first with an explicit stack).
fn find_path<'a>(
    edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    starts: &[&'a str],
    target: &'a str,
) -> Option<Vec<&'a str>> {
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut stack: Vec<&str> = Vec::new();
    let mut sorted: Vec<&str> = starts.to_vec();
    sorted.sort_unstable();
    for s in sorted {
        if !parent.contains_key(s) {
            parent.insert(s, s);
            stack.push(s);
        }
    }
    while let Some(node) = stack.pop() {
        for &next in edges.get(node).into_iter().flatten() {
            if next == target {
                let mut path = vec![target, node];
                let mut cur = node;
                while parent[cur] != cur {
                    cur = parent[cur];
                    path.push(cur);
                }
                path.reverse();
                return Some(path);
            }
            if !parent.contains_key(next) {
                parent.insert(next, node);
                stack.push(next);
            }
        }
    }
    None
}

/// Kahn's algorithm with the ready set ordered by name (kro's heap orders equal-rank
/// vertices by id).
fn topological(edges: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    let mut remaining: BTreeMap<&str, usize> = edges.iter().map(|(k, v)| (*k, v.len())).collect();
    let mut unlocks: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, tos) in edges {
        for to in tos {
            unlocks.entry(*to).or_default().push(*from);
        }
    }
    let mut ready: BTreeSet<&str> = remaining
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(k, _)| *k)
        .collect();
    let mut order = Vec::with_capacity(edges.len());
    while let Some(next) = ready.pop_first() {
        order.push(next.to_string());
        for dependent in unlocks.get(next).into_iter().flatten() {
            if let Some(n) = remaining.get_mut(dependent) {
                *n -= 1;
                if *n == 0 {
                    ready.insert(dependent);
                }
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(pairs: &[(&str, &[&str])]) -> BTreeMap<String, BTreeSet<String>> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.iter().map(|s| s.to_string()).collect()))
            .collect()
    }

    #[test]
    fn dependencies_come_first() {
        let o = order_types(&graph(&[
            ("A", &["B"]),
            ("B", &["C"]),
            ("C", &[]),
            ("D", &[]),
        ]));
        assert!(o.errors.is_empty());
        assert_eq!(o.order, vec!["C", "B", "A", "D"]);
    }

    #[test]
    fn two_cycle_blames_the_type_that_closes_it() {
        let o = order_types(&graph(&[("A", &["B"]), ("B", &["A"])]));
        assert_eq!(
            o.errors,
            vec![GraphError {
                type_name: "B".into(),
                message: "cyclic dependency in type B: graph contains a cycle: B -> A -> B".into()
            }]
        );
        // The rejected edges are rolled back, so both types still get an order.
        assert_eq!(o.order, vec!["B", "A"]);
    }

    #[test]
    fn longer_cycle_prints_the_whole_path() {
        let o = order_types(&graph(&[("A", &["B"]), ("B", &["C"]), ("C", &["A"])]));
        assert_eq!(o.errors.len(), 1);
        assert_eq!(
            o.errors[0].message,
            "cyclic dependency in type C: graph contains a cycle: C -> A -> B -> C"
        );
    }

    #[test]
    fn self_reference_is_its_own_error() {
        let o = order_types(&graph(&[("Node", &["Node"])]));
        assert_eq!(o.errors[0].message, "self references are not allowed");
        assert_eq!(o.order, vec!["Node"]);
    }

    #[test]
    fn unknown_references_are_left_to_the_builder() {
        let o = order_types(&graph(&[("A", &["number"])]));
        assert!(o.errors.is_empty());
        assert_eq!(o.order, vec!["A"]);
    }
}
