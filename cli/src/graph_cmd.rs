//! `kiln graph`: the resource graph of each ResourceGraphDefinition as text, DOT, Mermaid or JSON.
//!
//! An edge goes from a resource to a resource that reads it (`from` is created first), so arrows
//! follow creation order.

use std::process::ExitCode;

use kiln_core::kro::Rgd;
use kiln_core::pipeline::{nested_definitions, Definitions};
use serde_json::json;

/// Formats of `kiln graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GraphFormat {
    /// Readable summary.
    Text,
    /// Graphviz DOT.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
    /// `{"graphs": [{"name", "nodes", "edges", "topologicalOrder"}]}`.
    Json,
}

/// What `kiln graph` shows of one resource besides its id.
struct Resource {
    /// The template's `kind` (as written: it may be an expression).
    kind: String,
    /// It has `includeWhen` conditions.
    conditional: bool,
    /// It has `forEach` dimensions.
    collection: bool,
    /// An `externalRef`: read, never rendered.
    external: bool,
}

impl Resource {
    /// `Deployment, includeWhen, forEach`: the kind, then what makes the node special.
    fn describe(&self) -> String {
        let mut parts = vec![if self.kind.is_empty() {
            "?".to_string()
        } else {
            self.kind.clone()
        }];
        if self.external {
            parts.push("externalRef".into());
        }
        if self.conditional {
            parts.push("includeWhen".into());
        }
        if self.collection {
            parts.push("forEach".into());
        }
        parts.join(", ")
    }
}

struct Flat {
    name: String,
    kind: String,
    nodes: Vec<String>,
    resources: Vec<Resource>,
    edges: Vec<(String, String)>,
    order: Vec<String>,
    /// Resources that are nested instances: (resource id, the RGD's name, its instance kind).
    nests: Vec<(String, String, String)>,
}

fn flatten(r: &Rgd, defs: &Definitions) -> Flat {
    let g = &r.graph;
    let nodes: Vec<String> = g.nodes.iter().map(|n| n.id.clone()).collect();
    let resources = g
        .nodes
        .iter()
        .map(|n| {
            let (template, external) = match &n.kind {
                kiln_core::ir::NodeKind::Template(t) => (t, false),
                kiln_core::ir::NodeKind::External(t) => (t, true),
            };
            Resource {
                kind: template.value["kind"].as_str().unwrap_or("").to_string(),
                conditional: !n.include_when.is_empty(),
                collection: !n.for_each.is_empty(),
                external,
            }
        })
        .collect();
    let mut edges = Vec::new();
    for n in &g.nodes {
        for &d in &n.dependencies {
            edges.push((g.nodes[d].id.clone(), n.id.clone()));
        }
    }
    edges.sort();
    Flat {
        name: g.name.clone(),
        kind: format!("{}/{} {}", r.group, r.version, r.kind),
        nodes,
        resources,
        edges,
        order: g.order.iter().map(|&i| g.nodes[i].id.clone()).collect(),
        nests: nested_definitions(r, defs)
            .into_iter()
            .map(|(node, n)| (node.id.clone(), n.graph.name.clone(), n.kind.clone()))
            .collect(),
    }
}

fn quote(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// `kiln graph PATH`: the graphs of the tree's RGDs on stdout, and on stderr what the tree holds
/// that has no resource graph (components, kurel packages, kustomizations). A tree with no RGD
/// is an error rather than an empty graph.
pub fn run(
    path: &str,
    defs: &kiln_core::request::Definitions,
    format: GraphFormat,
    common: &crate::Common,
) -> ExitCode {
    let components = defs
        .documents
        .iter()
        .filter(|d| kiln_core::component::is_component_document(d))
        .count();
    let mut skipped = Vec::new();
    if components > 0 {
        skipped.push(format!("{components} component document(s)"));
    }
    if !defs.packages.is_empty() {
        let names: Vec<&str> = defs.packages.iter().map(|p| p.name.as_str()).collect();
        skipped.push(format!("kurel package(s) {}", names.join(", ")));
    }
    if !defs.kustomizations.is_empty() {
        skipped.push(format!(
            "kustomization(s) {}",
            defs.kustomizations.join(", ")
        ));
    }
    if defs.definitions.rgds.is_empty() {
        let d = kiln_core::diag::Diagnostic::error(
            kiln_core::diag::codes::REQUEST_INVALID,
            format!("{path}: no ResourceGraphDefinition to graph"),
        )
        .with_hint(if skipped.is_empty() {
            "kiln graph shows the resource graphs of ResourceGraphDefinitions".to_string()
        } else {
            format!(
                "kiln graph shows ResourceGraphDefinitions only; the inputs hold {}",
                skipped.join(", ")
            )
        });
        crate::report::print(&[d], &defs.files, common.diagnostics);
        return ExitCode::from(1);
    }
    if !skipped.is_empty() && common.diagnostics == crate::report::DiagFormat::Human {
        eprintln!(
            "note: kiln graph shows ResourceGraphDefinitions; skipped {}",
            skipped.join(", ")
        );
    }
    crate::emit(&render(&defs.definitions, format))
}

/// Render all graphs. A resource that is an instance of another RGD of the inputs (a nested
/// composition) is shown with the definition it expands into.
pub fn render(defs: &Definitions, format: GraphFormat) -> String {
    let flats: Vec<Flat> = defs.rgds.iter().map(|r| flatten(r, defs)).collect();
    let mut out = String::new();
    match format {
        GraphFormat::Json => {
            let graphs: Vec<_> = flats
                .iter()
                .map(|f| {
                    json!({
                        "name": f.name,
                        "kind": f.kind,
                        "nodes": f.nodes,
                        "resources": f.nodes.iter().zip(&f.resources).map(|(id, r)| json!({
                            "id": id,
                            "kind": r.kind,
                            "includeWhen": r.conditional,
                            "forEach": r.collection,
                            "externalRef": r.external,
                        })).collect::<Vec<_>>(),
                        "edges": f.edges.iter().map(|(a, b)| json!({"from": a, "to": b})).collect::<Vec<_>>(),
                        "topologicalOrder": f.order,
                        "nested": f.nests.iter().map(|(id, name, kind)| json!({"node": id, "definition": name, "kind": kind})).collect::<Vec<_>>(),
                    })
                })
                .collect();
            out = serde_json::to_string_pretty(&json!({ "graphs": graphs })).expect("json");
            out.push('\n');
        }
        GraphFormat::Text => {
            for f in &flats {
                out.push_str(&format!("{} ({})\n", f.name, f.kind));
                let nodes: Vec<String> = f
                    .nodes
                    .iter()
                    .zip(&f.resources)
                    .map(|(id, r)| format!("{id} ({})", r.describe()))
                    .collect();
                out.push_str(&format!("  nodes: {}\n", nodes.join(", ")));
                out.push_str("  edges:\n");
                for (a, b) in &f.edges {
                    out.push_str(&format!("    {a} -> {b}\n"));
                }
                out.push_str(&format!("  order: {}\n", f.order.join(", ")));
                if !f.nests.is_empty() {
                    out.push_str("  nested:\n");
                    for (id, name, kind) in &f.nests {
                        out.push_str(&format!("    {id} => {name} ({kind})\n"));
                    }
                }
            }
        }
        GraphFormat::Dot => out = dot(&flats),
        GraphFormat::Mermaid => out = mermaid(&flats),
    }
    out
}

/// The index of the graph of the RGD called `name`, if it is among the inputs.
fn graph_of(flats: &[Flat], name: &str) -> Option<usize> {
    flats.iter().position(|f| f.name == name)
}

/// One Graphviz digraph for all definitions: a `cluster_N` subgraph per RGD, holding its instance
/// (the root a nested composition expands into) and its resources. Every id is a quoted string,
/// so keywords (`node`, `edge`, `graph`, `subgraph`) and any character are safe.
fn dot(flats: &[Flat]) -> String {
    let mut out = String::from("digraph kiln {\n  compound=true;\n  node [shape=box];\n");
    let id = |g: usize, node: &str| quote(&format!("{g}/{node}"));
    for (g, f) in flats.iter().enumerate() {
        out.push_str(&format!("  subgraph cluster_{g} {{\n"));
        out.push_str(&format!(
            "    label={};\n",
            quote(&format!("{} ({})", f.name, f.kind))
        ));
        out.push_str(&format!(
            "    {} [label={}, shape=doubleoctagon];\n",
            quote(&format!("{g}")),
            quote(&f.kind)
        ));
        for (n, r) in f.nodes.iter().zip(&f.resources) {
            let shape = match (r.external, r.conditional, r.collection) {
                (true, _, _) => "note",
                (_, _, true) => "box3d",
                (_, true, _) => "diamond",
                _ => "box",
            };
            out.push_str(&format!(
                "    {} [label={}, shape={shape}];\n",
                id(g, n),
                quote(&format!("{n}\n{}", r.describe()))
            ));
        }
        for (a, b) in &f.edges {
            out.push_str(&format!("    {} -> {};\n", id(g, a), id(g, b)));
        }
        out.push_str("  }\n");
    }
    for (g, f) in flats.iter().enumerate() {
        for (node, name, _) in &f.nests {
            if let Some(h) = graph_of(flats, name) {
                out.push_str(&format!(
                    "  {} -> {} [style=dashed, label=\"nests\", lhead=cluster_{h}];\n",
                    id(g, node),
                    quote(&format!("{h}"))
                ));
            }
        }
    }
    out.push_str("}\n");
    out
}

/// Text for a Mermaid label: in `["…"]` only `"` needs escaping, as an entity.
fn mermaid_label(s: &str) -> String {
    s.replace('"', "#quot;")
}

/// One Mermaid flowchart for all definitions: a subgraph per RGD. Node ids are generated
/// (`g0_n1`), never the resource ids, so a resource called `end`, `graph` or `subgraph` cannot
/// end a block; the id and what the node is are in its quoted label.
fn mermaid(flats: &[Flat]) -> String {
    let mut out = String::from("flowchart TD\n");
    for (g, f) in flats.iter().enumerate() {
        out.push_str(&format!(
            "  subgraph g{g} [\"{}\"]\n",
            mermaid_label(&format!("{} ({})", f.name, f.kind))
        ));
        out.push_str(&format!(
            "    g{g}_instance{{{{\"{}\"}}}}\n",
            mermaid_label(&f.kind)
        ));
        for (i, (n, r)) in f.nodes.iter().zip(&f.resources).enumerate() {
            let label = mermaid_label(&format!("{n}<br/>{}", r.describe()));
            let shaped = match (r.external, r.conditional, r.collection) {
                (true, _, _) => format!("[/\"{label}\"/]"),
                (_, _, true) => format!("[[\"{label}\"]]"),
                (_, true, _) => format!("{{\"{label}\"}}"),
                _ => format!("[\"{label}\"]"),
            };
            out.push_str(&format!("    g{g}_n{i}{shaped}\n"));
        }
        let index = |id: &str| f.nodes.iter().position(|n| n == id).unwrap_or(0);
        for (a, b) in &f.edges {
            out.push_str(&format!("    g{g}_n{} --> g{g}_n{}\n", index(a), index(b)));
        }
        out.push_str("  end\n");
    }
    for (g, f) in flats.iter().enumerate() {
        let index = |id: &str| f.nodes.iter().position(|n| n == id).unwrap_or(0);
        for (node, name, _) in &f.nests {
            if let Some(h) = graph_of(flats, name) {
                out.push_str(&format!("  g{g}_n{} -.->|nests| g{h}\n", index(node)));
            }
        }
    }
    out
}
