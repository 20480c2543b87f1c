//! Which patches apply, and in what order.
//!
//! The design's processing order: evaluate each patch's `enabled` against the final parameters →
//! build the `requires` graph (cycles are errors) and auto-enable requirements transitively,
//! logging each → check `conflicts` between enabled patches → order. The order is the load order
//! (package patches by numeric prefix then path, then local patches the same way), except that a
//! patch always comes after the patches it requires.

use std::collections::VecDeque;

use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::graph::{format_cycle, Graph};

use super::package::{Enabled, Loc, Origin, PatchFile, PatchRef};
use super::variables::Resolver;

/// Why a patch is or is not applied.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Decision {
    /// Whether it applies.
    pub enabled: bool,
    /// Human explanation: `no enabled condition`, `monitoring.enabled = true`, `required by 10-x`.
    pub why: String,
}

/// The outcome of enablement.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Indices (into the package's patches) of the patches to apply, in order.
    pub order: Vec<usize>,
    /// One decision per patch, by index.
    pub decisions: Vec<Decision>,
    /// Log lines (`enabling 05-metrics (required by 10-monitoring)`).
    pub log: Vec<String>,
    /// Warnings (a conflict naming a patch that does not exist).
    pub warnings: Vec<Diagnostic>,
}

/// Resolve a reference to a patch index. Package patches see package patches only; local patches
/// see both. A reference is a path under `patches/` with or without extension, or a bare name
/// when that is unique.
fn resolve_ref(patches: &[PatchFile], from: usize, r: &PatchRef) -> Result<usize, Diagnostic> {
    let origin = patches[from].origin;
    let visible = |p: &PatchFile| origin == Origin::Local || p.origin == Origin::Package;
    let want = r
        .name
        .trim_start_matches("./")
        .trim_start_matches("patches/");
    let strip = |id: &str| -> String {
        match id.rsplit_once('.') {
            Some((s, _)) => s.to_string(),
            None => id.to_string(),
        }
    };
    let mut found: Vec<usize> = patches
        .iter()
        .enumerate()
        .filter(|(_, p)| visible(p) && p.id == want)
        .map(|(i, _)| i)
        .collect();
    if found.is_empty() {
        found = patches
            .iter()
            .enumerate()
            .filter(|(_, p)| visible(p) && strip(&p.id) == want)
            .map(|(i, _)| i)
            .collect();
    }
    if found.is_empty() {
        found = patches
            .iter()
            .enumerate()
            .filter(|(_, p)| visible(p) && p.name == want)
            .map(|(i, _)| i)
            .collect();
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => {
            let mut names: Vec<&str> = patches
                .iter()
                .filter(|p| visible(p))
                .map(|p| p.id.as_str())
                .collect();
            names.truncate(12);
            let hint = if names.is_empty() {
                "the package has no patches".to_string()
            } else {
                format!(
                    "patches are named by their path under patches/: {}",
                    names.join(", ")
                )
            };
            // A package patch naming a local one: the patch exists, but the package cannot
            // depend on what one site adds to it.
            let local = patches.iter().any(|p| {
                p.origin == Origin::Local
                    && (p.id == want || strip(&p.id) == want || p.name == want)
            });
            let message = if local {
                format!(
                    "{} names patch {:?}, which is a local patch: a package's patches see the package's patches only",
                    patches[from].id, r.name
                )
            } else {
                format!(
                    "{} names patch {:?}, which does not exist",
                    patches[from].id, r.name
                )
            };
            let hint = if local {
                "move the requirement into the local patch (a local patch may require package patches), or move the patch into the package".to_string()
            } else {
                hint
            };
            Err(r
                .loc
                .place(Diagnostic::error(codes::KUREL_PATCH_REFERENCE, message).with_hint(hint)))
        }
        many => Err(r.loc.place(
            Diagnostic::error(
                codes::KUREL_PATCH_REFERENCE,
                format!(
                    "{:?} is ambiguous: {}",
                    r.name,
                    many.iter()
                        .map(|&i| patches[i].id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with_hint("name the patch by its path under patches/"),
        )),
    }
}

/// What the `requires` / `conflicts` references of a package's patches say, whatever the
/// instance: which patch requires and conflicts with which, and the apply order before
/// enablement. Worked out once per package and shared by every instance rendered from it.
#[derive(Debug, Clone, Default)]
pub struct Structure {
    /// `requires[i]`: indices of the patches patch `i` requires.
    requires: Vec<Vec<usize>>,
    /// `conflicts[i]`: indices of the patches patch `i` conflicts with, with where it says so.
    conflicts: Vec<Vec<(usize, Loc)>>,
    /// Every patch in apply order (requirements first); empty when `requires` has a cycle.
    topo: Vec<usize>,
    /// Missing, ambiguous and self references, cycles: package bugs, the same for every instance.
    pub errors: Diagnostics,
    /// A conflict naming a patch that does not exist.
    pub warnings: Vec<Diagnostic>,
}

/// Resolve every `requires` / `conflicts` reference and order the patches. Problems are
/// recorded in the result, not returned: enablement of an instance can still be checked.
pub fn structure(patches: &[PatchFile]) -> Structure {
    let n = patches.len();
    let mut diags = Diagnostics::new();
    let mut warnings = Vec::new();
    let mut requires: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut conflicts: Vec<Vec<(usize, Loc)>> = vec![Vec::new(); n];
    for (i, p) in patches.iter().enumerate() {
        for r in &p.meta.requires {
            match resolve_ref(patches, i, r) {
                Ok(j) if j == i => diags.push(
                    r.loc.place(
                        Diagnostic::error(
                            codes::KUREL_PATCH_REFERENCE,
                            format!("{} requires itself", p.id),
                        )
                        .with_hint("remove the patch from its own requires"),
                    ),
                ),
                Ok(j) => requires[i].push(j),
                Err(d) => diags.push(d),
            }
        }
        for r in &p.meta.conflicts {
            match resolve_ref(patches, i, r) {
                Ok(j) if j == i => diags.push(
                    r.loc.place(
                        Diagnostic::error(
                            codes::KUREL_PATCH_REFERENCE,
                            format!("{} conflicts with itself", p.id),
                        )
                        .with_hint("remove the patch from its own conflicts"),
                    ),
                ),
                Ok(j) => conflicts[i].push((j, r.loc.clone())),
                // A conflict with a patch that does not exist cannot happen; say so but go on.
                Err(mut d) => {
                    d.severity = crate::diag::Severity::Warning;
                    warnings.push(d);
                }
            }
        }
    }

    // Cycles in requires, over all patches (a cycle is a package bug even while disabled).
    let mut graph = Graph::new(patches.iter().map(|p| p.name.clone()).collect());
    for (i, rs) in requires.iter().enumerate() {
        for &j in rs {
            graph.add_dependency(i, j);
        }
    }
    let topo = match graph.topological_order() {
        Ok(o) => o,
        Err(cycle) => {
            let at = cycle.first().copied().unwrap_or(0);
            let loc = patches
                .get(at)
                .and_then(|p| p.meta.requires.first().map(|r| r.loc.clone()))
                .unwrap_or_default();
            diags.push(
                loc.place(
                    Diagnostic::error(
                        codes::KUREL_PATCH_CYCLE,
                        format!(
                            "patches require each other in a cycle: {}",
                            format_cycle(&graph, &cycle)
                        ),
                    )
                    .with_hint("remove one of the requires so the patches form a chain"),
                ),
            );
            Vec::new()
        }
    };
    Structure {
        requires,
        conflicts,
        topo,
        errors: diags,
        warnings,
    }
}

/// Decide which patches apply. All problems are reported together.
pub fn plan(patches: &[PatchFile], resolver: &Resolver) -> Result<Plan, Diagnostics> {
    let s = structure(patches);
    let decided = decide(patches, &s, resolver);
    match decided {
        Ok(mut p) if !s.errors.has_errors() => {
            p.warnings = s.warnings;
            Ok(p)
        }
        other => {
            let mut diags = s.errors;
            if let Err(ds) = other {
                diags.extend(ds);
            }
            diags.extend(s.warnings);
            Err(diags)
        }
    }
}

/// Decide which patches apply for one instance, given the package's [`Structure`]. Errors are
/// the instance's own (a condition that is not a boolean, two enabled patches that conflict);
/// when the structure itself has errors the result is an error too, possibly without any
/// diagnostics of its own (the structure's are reported once by the caller). The plan's
/// `warnings` are left empty: they are the structure's.
pub fn decide(
    patches: &[PatchFile],
    structure: &Structure,
    resolver: &Resolver,
) -> Result<Plan, Diagnostics> {
    let n = patches.len();
    let mut diags = Diagnostics::new();
    let Structure {
        requires,
        conflicts,
        topo,
        ..
    } = structure;
    // Evaluate enabled.
    let mut decisions = Vec::with_capacity(n);
    for p in patches {
        let d = match &p.meta.enabled {
            Enabled::Always => Decision {
                enabled: true,
                why: "no enabled condition".into(),
            },
            Enabled::Literal(b) => Decision {
                enabled: *b,
                why: format!("enabled: {b}"),
            },
            Enabled::Variable(path) => match resolver.resolve_path(path) {
                Ok(Value::Bool(b)) => Decision {
                    enabled: b,
                    why: format!("{path} = {b}"),
                },
                Ok(other) => {
                    diags.push(
                        p.meta.enabled_loc.place(
                            Diagnostic::error(
                                codes::KUREL_PATCH_ENABLED,
                                format!(
                                    "enabled: ${{{path}}} is {} ({other}), not a boolean",
                                    super::variables::type_name(&other)
                                ),
                            )
                            .with_hint(format!("set {path} to true or false in parameters.yaml")),
                        ),
                    );
                    Decision {
                        enabled: false,
                        why: "invalid condition".into(),
                    }
                }
                Err(e) => {
                    diags.push(
                        p.meta.enabled_loc.place(
                            Diagnostic::error(e.code, format!("enabled: {}", e.message))
                                .with_hint(e.hint),
                        ),
                    );
                    Decision {
                        enabled: false,
                        why: "invalid condition".into(),
                    }
                }
            },
        };
        decisions.push(d);
    }

    // Auto-enable requirements transitively, in patch order.
    let mut log = Vec::new();
    let mut queue: VecDeque<usize> = (0..n).filter(|&i| decisions[i].enabled).collect();
    while let Some(i) = queue.pop_front() {
        for &j in &requires[i] {
            if !decisions[j].enabled {
                decisions[j] = Decision {
                    enabled: true,
                    why: format!("required by {}", patches[i].name),
                };
                log.push(format!(
                    "enabling {} (required by {})",
                    patches[j].name, patches[i].name
                ));
                queue.push_back(j);
            }
        }
    }

    // Conflicts between enabled patches, each pair once.
    for i in 0..n {
        for (j, loc) in &conflicts[i] {
            let j = *j;
            let pair_seen = conflicts[j].iter().any(|(k, _)| *k == i) && j < i;
            if decisions[i].enabled && decisions[j].enabled && !pair_seen {
                diags.push(
                    loc.place(
                        Diagnostic::error(
                            codes::KUREL_PATCH_CONFLICT,
                            format!(
                                "{} and {} cannot both be enabled ({}: {}; {}: {})",
                                patches[i].id,
                                patches[j].id,
                                patches[i].name,
                                decisions[i].why,
                                patches[j].name,
                                decisions[j].why
                            ),
                        )
                        .with_hint("disable one of them through its enabled parameter"),
                    ),
                );
            }
        }
    }

    if diags.has_errors() || structure.errors.has_errors() {
        return Err(diags);
    }
    let order = topo
        .iter()
        .copied()
        .filter(|&i| decisions[i].enabled)
        .collect();
    Ok(Plan {
        order,
        decisions,
        log,
        warnings: Vec::new(),
    })
}
