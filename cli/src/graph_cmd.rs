//! `kiln graph`: the resource graph of each ResourceGraphDefinition as text, DOT, Mermaid or JSON.
//!
//! An edge goes from a resource to a resource that reads it (`from` is created first), so arrows
//! follow creation order.

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

struct Flat {
    name: String,
    kind: String,
    nodes: Vec<String>,
    edges: Vec<(String, String)>,
    order: Vec<String>,
    /// Resources that are nested instances: (resource id, the RGD's name, its instance kind).
    nests: Vec<(String, String, String)>,
}

fn flatten(r: &Rgd, defs: &Definitions) -> Flat {
    let g = &r.graph;
    let nodes: Vec<String> = g.nodes.iter().map(|n| n.id.clone()).collect();
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
                out.push_str(&format!("  nodes: {}\n", f.nodes.join(", ")));
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
        GraphFormat::Dot => {
            for f in &flats {
                out.push_str(&format!("digraph {} {{\n", quote(&f.name)));
                for n in &f.nodes {
                    out.push_str(&format!("  {};\n", quote(n)));
                }
                for (a, b) in &f.edges {
                    out.push_str(&format!("  {} -> {};\n", quote(a), quote(b)));
                }
                for (id, name, _) in &f.nests {
                    out.push_str(&format!(
                        "  {} -> {} [style=dashed, label=\"nests\"];\n",
                        quote(id),
                        quote(&format!("rgd:{name}"))
                    ));
                }
                out.push_str("}\n");
            }
        }
        GraphFormat::Mermaid => {
            for f in &flats {
                out.push_str(&format!("%% {}\nflowchart TD\n", f.name));
                for n in &f.nodes {
                    out.push_str(&format!("  {n}\n"));
                }
                for (a, b) in &f.edges {
                    out.push_str(&format!("  {a} --> {b}\n"));
                }
                for (id, name, _) in &f.nests {
                    out.push_str(&format!(
                        "  {id} -.->|nests| rgd_{}\n",
                        name.replace(['-', '.'], "_")
                    ));
                }
            }
        }
    }
    out
}
