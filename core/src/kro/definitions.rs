//! The RGDs of one run, loaded together: the kinds their documents declare, the spec-only CRDs
//! nested compositions are checked against, one definition per kind, and the kinds their
//! resources name that no schema of the run describes.

use std::collections::{BTreeMap, BTreeSet};

use rayon::prelude::*;
use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::cel::ExprLimits;
use crate::fieldpath::FieldPath;
use crate::inventory::Known;
use crate::openapi::Schemas;
use crate::scope::Scopes;

use super::rgd::Rgd;

/// `(group, version, kind)` of a kind.
pub type Gvk = (String, String, String);

/// Load the RGD documents of a run (in input order), after the CRDs of the run (`crd_kinds`,
/// their schemas in `schemas`) and every definition's scope (`scopes`) are known: the loaded
/// RGDs, the index of each by the `(group, version, kind)` of its instances, and what loading
/// found (errors and warnings). `schemas` gains each RGD's spec-only instance CRD.
pub fn load_all(
    rgd_docs: &[&Document],
    scopes: &Scopes,
    schemas: &mut Schemas,
    crd_kinds: &BTreeSet<Gvk>,
    expr: &ExprLimits,
) -> (Vec<Rgd>, BTreeMap<Gvk, usize>, Vec<Diagnostic>) {
    // What templates' kinds are checked against, as input documents' are (`inventory`).
    let known = Known {
        rgd_kinds: rgd_docs.iter().copied().filter_map(declared_kind).collect(),
        crd_kinds: crd_kinds.clone(),
        pass_through: Vec::new(),
    };
    // Nested compositions: a template whose kind is another RGD's instance kind is checked
    // against that RGD's instance schema when the graph is built, as kro does (it resolves the
    // generated CRD's schema). Only the spec is known before the RGD is loaded; its status is
    // left open.
    for d in rgd_docs {
        if let Some(crd) = super::crd::spec_only_crd(&d.value) {
            let sch = &d.value["spec"]["schema"];
            let group = sch["group"].as_str().unwrap_or(super::rgd::KRO_GROUP);
            let av = format!("{group}/{}", sch["apiVersion"].as_str().unwrap_or(""));
            if schemas
                .lookup(&av, sch["kind"].as_str().unwrap_or(""))
                .is_none()
            {
                // A definition whose schema does not build reports that itself when it loads.
                let _ = schemas.add_crd(&crd);
            }
        }
    }
    let loaded: Vec<Result<Rgd, Vec<Diagnostic>>> = rgd_docs
        .par_iter()
        .map(|d| super::load(d, scopes, schemas, expr))
        .collect();
    let mut rgds = Vec::new();
    let mut by_gvk = BTreeMap::new();
    let mut diags = Vec::new();
    for (res, doc) in loaded.into_iter().zip(rgd_docs.iter().copied()) {
        match res {
            Ok(r) => {
                diags.extend(r.warnings.iter().cloned());
                let key = (r.group.clone(), r.version.clone(), r.kind.clone());
                if let Some(&prev) = by_gvk.get(&key) {
                    let other: &Rgd = &rgds[prev];
                    diags.push(doc.diag(
                        Diagnostic::error(
                            codes::DUPLICATE_KIND,
                            format!(
                                "kind {}/{} {} is already defined by ResourceGraphDefinition {:?} in {}",
                                key.0, key.1, key.2, other.graph.name, other.graph.document.file()
                            ),
                        )
                        .with_hint("each kind may be defined once"),
                        &FieldPath::root().key("spec").key("schema").key("kind"),
                    ));
                    continue;
                }
                by_gvk.insert(key, rgds.len());
                rgds.push(r);
            }
            Err(ds) => diags.extend(ds),
        }
    }
    diags.extend(unchecked_kinds(&rgds, schemas, &known));
    (rgds, by_gvk, diags)
}

/// `(group, version, kind)` of every instance kind the RGD documents declare, loaded or not.
pub fn declared_kinds(docs: &[Document]) -> BTreeSet<Gvk> {
    // Asked of every document, on every core.
    let rgds: Vec<&Document> = docs.par_iter().filter(|d| super::is_rgd(d)).collect();
    rgds.into_iter().filter_map(declared_kind).collect()
}

/// `(group, version, kind)` an RGD document declares, loaded or not.
pub fn declared_kind(d: &Document) -> Option<Gvk> {
    let sch = &d.value["spec"]["schema"];
    Some((
        sch["group"]
            .as_str()
            .unwrap_or(super::rgd::KRO_GROUP)
            .to_string(),
        sch["apiVersion"].as_str()?.to_string(),
        sch["kind"].as_str()?.to_string(),
    ))
}

/// Kinds that resources of the loaded RGDs create or reference but that no schema of the run
/// describes (not a bundled kind, no CRD in the inputs or `--crds`, no RGD). A near miss of a
/// kind the run does define is an error on each such resource, as an input document of that
/// kind is (kro refuses the RGD). Any other such kind gets one warning: its fields and the
/// expressions reading them went unchecked, where kro, without the CRD in the cluster, refuses
/// the RGD. Under `--strict` the run fails.
fn unchecked_kinds(rgds: &[Rgd], schemas: &Schemas, known: &Known) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let mut first: BTreeMap<(String, String), (&Rgd, &crate::ir::Node)> = BTreeMap::new();
    let mut ids: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
    for r in rgds {
        for n in &r.graph.nodes {
            let (crate::ir::NodeKind::Template(t) | crate::ir::NodeKind::External(t)) = &n.kind;
            let s = |k: &str| t.value.get(k).and_then(Value::as_str).unwrap_or("");
            let (av, kind) = (s("apiVersion"), s("kind"));
            if av.is_empty() || kind.is_empty() || schemas.lookup(av, kind).is_some() {
                continue;
            }
            if let Some(mut d) = crate::inventory::check_template_kind(av, kind, known) {
                d.message = format!("resource {:?}: {}", n.id, d.message);
                let field = match &n.kind {
                    crate::ir::NodeKind::Template(_) => "template",
                    crate::ir::NodeKind::External(_) => "externalRef",
                };
                out.push(r.graph.document.diag(d, &n.path.key(field).key("kind")));
                continue;
            }
            let key = (av.to_string(), kind.to_string());
            first.entry(key.clone()).or_insert((r, n));
            ids.entry(key)
                .or_default()
                .push(format!("{}/{}", r.graph.name, n.id));
        }
    }
    out.extend(first.into_iter().map(|((av, kind), (r, n))| {
            let used = &ids[&(av.clone(), kind.clone())];
            r.graph.document.diag(
                Diagnostic::warning(
                    codes::UNCHECKED_KIND,
                    format!(
                        "{av} {kind} has no schema in this run: the fields of its resources ({}) and the expressions reading them were not checked (kro refuses a ResourceGraphDefinition whose kinds the cluster has no CRD for)",
                        used.join(", ")
                    ),
                )
                .with_hint(format!(
                    "supply its CustomResourceDefinition among the inputs or with --crds FILE (e.g. kubectl get crd <plural>.{} -o yaml); --strict makes this an error",
                    crate::scope::group_of(&av)
                )),
                &n.path,
            )
        }));
    out
}
