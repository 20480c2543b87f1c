//! Nested compositions: an object whose kind another RGD of the run defines is that RGD's
//! instance, rendered in place of the object.
//!
//! What nesting reads of the run is handed in by the pipeline, which owns it: the run's loaded
//! definitions through [`Catalog`], its options as [`Settings`].

use serde_json::Value;

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::observed::Observed;
use crate::render::{render_unit, Nested, Provenance, RenderLimits, Unit};

use super::rgd::Rgd;

/// The run's loaded RGDs, as nesting reads them.
pub trait Catalog: Sync {
    /// The loaded RGDs, in input order.
    fn rgds(&self) -> &[Rgd];
    /// The RGD defining this apiVersion and kind.
    fn find(&self, api_version: &str, kind: &str) -> Option<&Rgd>;
    /// Whether the RGDs instantiate each other in a cycle (reported; nothing is nested then).
    fn nesting_cycle(&self) -> bool;
}

/// The run's options an instance's render reads.
#[derive(Debug, Clone, Copy)]
pub struct Settings<'a> {
    /// Namespace for instances that name none.
    pub namespace: Option<&'a str>,
    /// Live objects that externalRefs and status reads resolve against.
    pub observed: Option<&'a Observed>,
    /// Evaluation limits.
    pub render: &'a RenderLimits,
    /// Annotate rendered objects with the definition, instance and node that produced them.
    pub provenance: bool,
    /// kro mode: a node whose expressions need a cluster waits instead of failing the run.
    pub pending_ok: bool,
}

/// The resources of `rgd` that create instances of other RGDs of the run (nested compositions),
/// with the RGD each instantiates.
pub fn nested_definitions<'a>(
    rgd: &'a Rgd,
    defs: &'a dyn Catalog,
) -> Vec<(&'a crate::ir::Node, &'a Rgd)> {
    rgd.graph
        .nodes
        .iter()
        .filter_map(|n| {
            let crate::ir::NodeKind::Template(t) = &n.kind else {
                return None;
            };
            let s = |k: &str| t.value.get(k).and_then(Value::as_str).unwrap_or("");
            defs.find(s("apiVersion"), s("kind")).map(|r| (n, r))
        })
        .collect()
}

/// ResourceGraphDefinitions that create each other's instances, around a loop, would expand
/// forever: the shortest such chain is an error.
pub fn nesting_cycle(defs: &dyn Catalog) -> Option<Diagnostic> {
    let names: Vec<String> = defs.rgds().iter().map(|r| r.graph.name.clone()).collect();
    let mut g = crate::graph::Graph::new(names);
    let index = |of: &Rgd| defs.rgds().iter().position(|r| std::ptr::eq(r, of));
    for (i, r) in defs.rgds().iter().enumerate() {
        for (_, nested) in nested_definitions(r, defs) {
            if let Some(j) = index(nested) {
                g.add_dependency(i, j);
            }
        }
    }
    let cycle = g.topological_order().err()?;
    let first = &defs.rgds()[cycle[0]];
    let next = &defs.rgds()[cycle[1]];
    let (node, _) = nested_definitions(first, defs)
        .into_iter()
        .find(|(_, n)| std::ptr::eq(*n, next))?;
    let chain: Vec<String> = cycle
        .iter()
        .map(|&i| {
            let r = &defs.rgds()[i];
            format!("{} ({})", r.graph.name, r.kind)
        })
        .collect();
    Some(first.graph.document.diag(
        Diagnostic::error(
            codes::NESTING_CYCLE,
            format!(
                "ResourceGraphDefinitions instantiate each other in a cycle: {}",
                chain.join(" -> ")
            ),
        )
        .with_hint("a nested composition must end: remove the resource that creates an instance of an enclosing definition"),
        &node.path,
    ))
}

/// Nested compositions: an object whose kind another RGD of the run defines is that RGD's
/// instance, rendered in place of the object (load-time checks rule out cycles, so this ends).
pub struct Nesting<'a> {
    /// The run's definitions.
    pub defs: &'a dyn Catalog,
    /// The run's options.
    pub settings: Settings<'a>,
}

impl<'a> Nesting<'a> {
    /// The unit of a prepared instance of `rgd`, as the run renders it: the run's observed
    /// state, nested instances through `self`, kro mode's leniency, no provenance, at the top.
    pub fn unit(
        &'a self,
        rgd: &'a Rgd,
        doc: &'a Document,
        prepared: super::instance::PreparedInstance,
    ) -> Unit<'a> {
        let schema = self
            .settings
            .observed
            .and_then(|o| super::instance::as_observed(rgd, &prepared, o))
            .unwrap_or(prepared.schema);
        Unit {
            graph: &rgd.graph,
            variables: vec![("schema".into(), schema)],
            namespace: prepared.namespace,
            origin: doc,
            observed: self.settings.observed,
            nested: Some(self),
            pending_ok: self.settings.pending_ok,
            provenance: None,
            depth: 0,
        }
    }
}

impl Nested for Nesting<'_> {
    fn expand(
        &self,
        obj: &Value,
        origin: &Document,
        _limits: &RenderLimits,
        nested_in: &dyn Fn() -> Option<String>,
        depth: usize,
    ) -> Option<Result<Vec<Value>, Vec<Diagnostic>>> {
        let rgd = self
            .defs
            .find(obj.get("apiVersion")?.as_str()?, obj.get("kind")?.as_str()?)?;
        // A cycle among the definitions is reported when they load (and nothing is nested);
        // one through a kind computed by an expression shows only here.
        if self.defs.nesting_cycle() {
            return None;
        }
        if depth > MAX_NESTING {
            return Some(Err(vec![origin.diag(
                Diagnostic::error(
                    codes::NESTING_CYCLE,
                    format!(
                        "nested {} {:?}: compositions nest more than {MAX_NESTING} levels deep",
                        rgd.kind,
                        obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("")
                    ),
                )
                .with_hint("a nested composition must end: an instance creates, through its definitions, an instance of itself"),
                &FieldPath::root(),
            )]));
        }
        // Diagnostics point at the outermost instance, the document the user wrote (its value
        // is not read: the nested instance's is `obj`).
        let doc = Document {
            source: origin.source.clone(),
            index: origin.index,
            item: origin.item,
            value: Value::Null,
        };
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        Some(
            render_instance_value(rgd, &doc, obj.clone(), self, nested_in(), depth).map_err(|ds| {
                ds.into_iter()
                    .map(|mut d| {
                        d.message = format!("nested {} {name:?}: {}", rgd.kind, d.message);
                        d
                    })
                    .collect()
            }),
        )
    }
}

/// Deepest nesting of compositions (instances creating instances) a run renders.
pub const MAX_NESTING: usize = 16;

/// `KIND/NAMESPACE/NAME` (or `KIND/NAME`) of an object.
pub fn object_ref(v: &Value) -> String {
    fn s<'v>(v: Option<&'v Value>, k: &str) -> Option<&'v str> {
        v.and_then(|v| v.get(k)).and_then(Value::as_str)
    }
    let md = v.get("metadata");
    let (kind, name) = (
        s(Some(v), "kind").unwrap_or(""),
        s(md, "name").unwrap_or(""),
    );
    match s(md, "namespace").unwrap_or("") {
        "" => format!("{kind}/{name}"),
        ns => format!("{kind}/{ns}/{name}"),
    }
}

/// Default, validate and render one kro instance (nested instances included).
pub fn render_instance(
    rgd: &Rgd,
    doc: &Document,
    nesting: &Nesting<'_>,
    nested_in: Option<String>,
    depth: usize,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    render_instance_value(rgd, doc, doc.value.clone(), nesting, nested_in, depth)
}

/// [`render_instance`] of the instance's content `value`, taken out of `doc` (which still places
/// the diagnostics): the value is consumed, so the run need not keep it once the unit is done.
pub fn render_instance_value(
    rgd: &Rgd,
    doc: &Document,
    value: Value,
    nesting: &Nesting<'_>,
    nested_in: Option<String>,
    depth: usize,
) -> Result<Vec<Value>, Vec<Diagnostic>> {
    let settings = nesting.settings;
    let prepared = super::instance::prepare_value(rgd, doc, value, settings.namespace)?;
    let provenance = settings.provenance.then(|| Provenance {
        definition: format!("{}/{}", super::rgd::RGD_KIND, rgd.graph.name),
        instance: object_ref(&prepared.schema),
        nested_in,
    });
    let unit = Unit {
        provenance: provenance.as_ref(),
        depth,
        ..nesting.unit(rgd, doc, prepared)
    };
    render_unit(&unit, settings.render)
}
