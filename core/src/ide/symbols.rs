//! The outline of a file: an RGD's resources, a ComponentType's resources and traits, a kurel
//! package's resources and patches.

use super::kro;
use super::tree::{parse, Node};
use super::{Symbol, SymbolKind, Texts};

/// The outline of `file`.
pub fn symbols(texts: &Texts, file: &str) -> Vec<Symbol> {
    let Some(text) = texts.get(file) else {
        return Vec::new();
    };
    if let Some(pkg) = super::kurel::package(texts, file) {
        let within = file
            .strip_prefix(&pkg.dir)
            .unwrap_or(file)
            .trim_start_matches('/');
        if within.starts_with("resources/") {
            return super::kurel::resource_symbols(text);
        }
        if [".kpatch", ".patch", ".toml"]
            .iter()
            .any(|e| file.ends_with(e))
        {
            return super::kurel::patch_symbols(text);
        }
        if file == pkg.parameters {
            return super::kurel::parameter_symbols(text);
        }
        return Vec::new();
    }
    parse(text)
        .iter()
        .filter_map(|d| {
            if kro::is_rgd(&d.root) {
                Some(rgd(&d.root))
            } else {
                super::component::symbols(&d.root)
            }
        })
        .collect()
}

/// An RGD: its name, and its resources as children.
fn rgd(root: &Node) -> Symbol {
    let children = kro::resources(root)
        .into_iter()
        .map(|r| Symbol {
            name: r.id.clone(),
            detail: r.kind.clone(),
            kind: SymbolKind::Resource,
            range: r.entry.range.clone(),
            selection: r.id_node.range.clone(),
            children: Vec::new(),
        })
        .collect();
    let name_node = root.get("metadata").and_then(|m| m.get("name"));
    let kind = root
        .get("spec")
        .and_then(|s| s.get("schema"))
        .and_then(|s| s.get("kind"))
        .and_then(Node::str);
    definition(root, name_node, kind.map(str::to_string), children)
}

/// A definition document as a symbol named by its `metadata.name` (or its kind).
pub(super) fn definition(
    root: &Node,
    name: Option<&Node>,
    detail: Option<String>,
    children: Vec<Symbol>,
) -> Symbol {
    let kind = root.get("kind").and_then(Node::str).unwrap_or_default();
    Symbol {
        name: name
            .and_then(Node::str)
            .filter(|n| !n.is_empty())
            .unwrap_or(kind)
            .to_string(),
        detail: detail.or_else(|| Some(kind.to_string())),
        kind: SymbolKind::Definition,
        range: root.range.clone(),
        selection: name.map_or(root.range.clone(), |n| n.range.clone()),
        children,
    }
}
