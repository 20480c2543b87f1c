//! What a request is checked for before anything renders: options no input can make right, and
//! inputs that would render nothing or something else than asked (module docs of `request`).

use std::path::PathBuf;

use super::{Mode, Request};
use crate::component;
use crate::diag::{codes, quote, Diagnostic};
use crate::document::Document;
use crate::kurel;
use crate::source::{Access, FoundPackage, Input};

/// The documents that are not kustomize's configuration, and the files those came from: a file
/// named as kustomize names its configuration (`kustomization.yaml`, `kustomization.yml`,
/// `Kustomization`), or any document of the `kustomize.config.k8s.io` group (a Kustomization or
/// a kustomize Component), written with an apiVersion or not.
pub(super) fn without_kustomizations(documents: Vec<Document>) -> (Vec<Document>, Vec<String>) {
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

/// The request's own options that no input can make right ([`super::prepare`] checks them first).
pub(super) fn check_options(req: &Request) -> Vec<Diagnostic> {
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

/// Only the bundled Kubernetes version has schemas; asking for another is an error rather than
/// a silent check against the wrong one.
pub(super) fn check_kube_version(v: Option<&str>) -> Option<Diagnostic> {
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
pub(super) fn check_mode(req: &Request) -> Option<Diagnostic> {
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
pub(super) fn unused_values(found: &FoundPackage) -> Diagnostic {
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

/// `values`, `sets` and `instances` belong to exactly one kurel package.
pub(super) fn check_package_overrides(
    req: &Request,
    packages: &[FoundPackage],
) -> Option<Diagnostic> {
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
pub(super) fn without_values_files(
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
pub(super) fn check_environment(req: &Request, documents: &[Document]) -> Option<Diagnostic> {
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
pub(super) fn check_not_empty(
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
