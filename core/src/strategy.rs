//! kro mode: ship the ResourceGraphDefinitions and their instances to the in-cluster controller
//! instead of rendering the instances here.
//!
//! Everything is checked as in direct mode: each instance is defaulted, validated and rendered,
//! and the objects are dropped. What only a cluster can answer (a created resource's status, an
//! externalRef without observed state) leaves that resource to the controller instead of
//! failing. The output is ordered so a GitOps tool can apply it in one pass: CustomResource
//! Definitions first (those of the inputs, then, on request, each RGD's generated instance CRD),
//! then the RGDs, then everything else in input order. Component types and kurel packages have
//! no controller: they are rendered as in direct mode.

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::document::Document;
use crate::kro::Rgd;
use crate::render::{render_unit, RenderLimits, Unit};

/// Settings of kro mode.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KroMode {
    /// Emit each RGD's generated instance CRD before the RGDs.
    pub emit_crds: bool,
    /// Annotate with Argo CD sync waves (see [`CRD_WAVE`], [`RGD_WAVE`]).
    pub sync_waves: bool,
}

/// Argo CD's sync-wave annotation.
pub const SYNC_WAVE: &str = "argocd.argoproj.io/sync-wave";
/// Argo CD's per-resource sync options annotation.
pub const SYNC_OPTIONS: &str = "argocd.argoproj.io/sync-options";
/// The wave of CustomResourceDefinitions: before everything.
pub const CRD_WAVE: &str = "-2";
/// The wave of ResourceGraphDefinitions: after CRDs, before instances (wave 0).
pub const RGD_WAVE: &str = "-1";

/// Check an instance by rendering its unit (as the pipeline builds it, nested compositions
/// included), then give the instance as the controller should receive it: `instance` is its
/// prepared value, defaulted, in its namespace, without status. The pipeline builds the unit, so
/// that this module does not import the pipeline that calls it.
pub fn ship_instance(
    unit: Unit<'_>,
    mut instance: Value,
    limits: &RenderLimits,
    mode: &KroMode,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    let unit = Unit {
        pending_ok: true,
        ..unit
    };
    render_unit(&unit, limits)?;
    // Without the generated CRD in the same sync, Argo CD's dry run cannot know the kind
    // until kro has created it.
    if mode.sync_waves && !mode.emit_crds {
        add_sync_option(&mut instance, "SkipDryRunOnMissingResource=true");
    }
    Ok(vec![instance])
}

/// An RGD as shipped: unchanged but for the sync wave on request.
pub fn ship_definition(doc: &Document, mode: &KroMode) -> Value {
    let mut v = doc.value.clone();
    if mode.sync_waves {
        set_wave(&mut v, RGD_WAVE);
    }
    v
}

/// The generated instance CRD of an RGD, as shipped.
pub fn ship_crd(rgd: &Rgd, mode: &KroMode) -> Value {
    let mut v = crate::kro::crd::instance_crd(rgd);
    if mode.sync_waves {
        set_wave(&mut v, CRD_WAVE);
    }
    v
}

/// A CustomResourceDefinition of the inputs, as shipped (its own wave, if any, wins).
pub fn ship_input_crd(doc: &Document, mode: &KroMode) -> Value {
    let mut v = doc.value.clone();
    if mode.sync_waves {
        set_wave(&mut v, CRD_WAVE);
    }
    v
}

/// Whether a document is a CustomResourceDefinition.
pub fn is_crd(doc: &Document) -> bool {
    doc.kind() == Some("CustomResourceDefinition")
        && doc
            .api_version()
            .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
}

fn annotations(v: &mut Value) -> Option<&mut serde_json::Map<String, Value>> {
    let md = v
        .as_object_mut()?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Default::default()));
    let ann = md
        .as_object_mut()?
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if ann.is_null() {
        *ann = Value::Object(Default::default());
    }
    ann.as_object_mut()
}

/// Set the sync wave unless the author set one.
fn set_wave(v: &mut Value, wave: &str) {
    if let Some(a) = annotations(v) {
        a.entry(SYNC_WAVE)
            .or_insert_with(|| Value::String(wave.to_string()));
    }
}

/// Add one Argo CD sync option, keeping the author's.
fn add_sync_option(v: &mut Value, option: &str) {
    if let Some(a) = annotations(v) {
        let have = a.get(SYNC_OPTIONS).and_then(Value::as_str).unwrap_or("");
        if have.split(',').any(|o| o.trim() == option) {
            return;
        }
        let joined = if have.trim().is_empty() {
            option.to_string()
        } else {
            format!("{have},{option}")
        };
        a.insert(SYNC_OPTIONS.into(), Value::String(joined));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_authors_wave_and_options_are_kept() {
        let mut v =
            json!({"metadata": {"annotations": {SYNC_WAVE: "5", SYNC_OPTIONS: "Prune=false"}}});
        set_wave(&mut v, CRD_WAVE);
        add_sync_option(&mut v, "SkipDryRunOnMissingResource=true");
        add_sync_option(&mut v, "SkipDryRunOnMissingResource=true");
        assert_eq!(v["metadata"]["annotations"][SYNC_WAVE], "5");
        assert_eq!(
            v["metadata"]["annotations"][SYNC_OPTIONS],
            "Prune=false,SkipDryRunOnMissingResource=true"
        );
        let mut bare = json!({"kind": "X"});
        set_wave(&mut bare, RGD_WAVE);
        assert_eq!(bare["metadata"]["annotations"][SYNC_WAVE], "-1");
    }
}
