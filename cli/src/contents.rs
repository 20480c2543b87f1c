//! What a tree read by the request walk holds, by kind of input, for the commands that act on
//! some kinds and say which they skipped (`kiln info` describes kurel packages, `kiln snapshot
//! create` reads component documents).

use kiln_core::request::Definitions;

/// A kind of input a tree may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ResourceGraphDefinitions and their instances.
    Kro,
    /// Documents of the component-type front-end (`openchoreo.dev`).
    Components,
    /// kurel package directories.
    Kurel,
    /// Everything else that would pass through a render.
    Plain,
    /// kustomize's configuration files (never rendered).
    Kustomizations,
}

/// The kinds of input in `defs` other than `acted_on`, each as a phrase (`2 ResourceGraph
/// Definition(s) and their instances`, `kurel package(s) packages/web.kurel`), in a fixed order.
pub fn skipped(defs: &Definitions, acted_on: Kind) -> Vec<String> {
    let mut rgds = 0;
    let mut instances = 0;
    let mut components = 0;
    let mut plain = 0;
    for d in &defs.documents {
        if kiln_core::component::is_component_document(d) {
            components += 1;
        } else if kiln_core::kro::is_rgd(d) {
            rgds += 1;
        } else if d
            .api_version()
            .zip(d.kind())
            .is_some_and(|(api, kind)| defs.definitions.find(api, kind).is_some())
        {
            instances += 1;
        } else {
            plain += 1;
        }
    }
    let mut out = Vec::new();
    if acted_on != Kind::Kro && rgds + instances > 0 {
        out.push(format!(
            "{rgds} ResourceGraphDefinition(s) and {instances} instance(s)"
        ));
    }
    if acted_on != Kind::Components && components > 0 {
        out.push(format!("{components} component document(s)"));
    }
    if acted_on != Kind::Kurel && !defs.packages.is_empty() {
        let names: Vec<&str> = defs.packages.iter().map(|p| p.name.as_str()).collect();
        out.push(format!("kurel package(s) {}", names.join(", ")));
    }
    if acted_on != Kind::Plain && plain > 0 {
        out.push(format!("{plain} plain manifest(s)"));
    }
    if acted_on != Kind::Kustomizations && !defs.kustomizations.is_empty() {
        out.push(format!(
            "kustomization(s) {}",
            defs.kustomizations.join(", ")
        ));
    }
    out
}
