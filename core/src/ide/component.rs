//! What the editor needs of component types (OpenChoreo): the variables a definition's templates
//! see, typed as the component checker types them
//! ([`crate::component::typecheck::definition_scope`]), the parameter declarations, and the
//! definitions a Component names (its type, its traits).

use super::tree::{Body, Node};
use super::{Location, Symbol, SymbolKind, Texts};
use crate::expr::check::Scope;
use crate::fieldpath::{FieldPath, Segment};

/// The functions component templates may call besides the shared environment's.
pub(super) use crate::component::functions::FUNCTIONS;

/// The scope of an expression at `path` of a definition document, `None` when the document is
/// not a definition: the definition's variables, and the `var` of the forEach of the entry the
/// path is in (its list's element).
pub fn scope(root: &Node, path: &FieldPath) -> Option<Scope> {
    let mut scope = crate::component::typecheck::definition_scope(&root.value())?;
    if let [Segment::Key(s), Segment::Key(list), Segment::Index(i), rest @ ..] = path.0.as_slice() {
        let in_for_each = matches!(rest.first(), Some(Segment::Key(k)) if k == "forEach");
        let entry = root
            .get(s)
            .and_then(|s| s.get(list))
            .and_then(|l| l.items().get(*i));
        if let (false, Some(entry)) = (in_for_each, entry) {
            let default = if list == "patches" || list == "removes" {
                Some("item")
            } else {
                None
            };
            let var = entry.get("var").and_then(Node::str).or(default);
            let each = entry
                .get("forEach")
                .and_then(Node::str)
                .and_then(|f| crate::expr::scan::scan(f).ok()?.pop().map(|m| m.expr));
            if let (Some(var), Some(src)) = (var, each) {
                let t = type_of(&src, &mut scope.clone())
                    .map_or(crate::expr::types::Type::Dyn, |t| {
                        crate::component::typecheck::loop_var_type(&t)
                    });
                scope.declare(var, t);
            }
        }
    }
    Some(scope)
}

/// The type of a component template's CEL source.
pub fn type_of(src: &str, scope: &mut Scope) -> Result<crate::expr::types::Type, String> {
    super::kro::type_of_with(src, scope, FUNCTIONS)
}

/// The declaration of `parameters.<path>` (or `envOverrides.` / `environmentConfigs.`) as
/// written: in the shorthand `spec.schema`, or in upstream's `openAPIV3Schema` sections.
pub fn declaration<'n>(root: &'n Node, chain: &str) -> Option<(&'n Node, String)> {
    let mut parts = chain.split('.');
    let var = parts.next()?;
    let fields: Vec<&str> = parts.collect();
    if fields.is_empty() {
        return None;
    }
    let spec = root.get("spec")?;
    let mut node = if let Some(schema) = spec.get("schema") {
        let sections: &[&str] = match var {
            "parameters" => &["parameters", "envOverrides"],
            "envOverrides" | "environmentConfigs" => &["envOverrides"],
            _ => return None,
        };
        let found = sections.iter().find_map(|s| {
            let mut n = schema.get(s)?;
            for f in &fields {
                n = n.get(f)?;
            }
            Some(n)
        })?;
        return Some((found, format!("{}: {}", fields.last()?, written(found))));
    } else {
        let section = match var {
            "parameters" => "parameters",
            "environmentConfigs" => "environmentConfigs",
            _ => return None,
        };
        spec.get(section)?.get("openAPIV3Schema")?
    };
    for f in &fields {
        node = node.get("properties")?.get(f)?;
    }
    Some((node, format!("{}: {}", fields.last()?, written(node))))
}

fn written(n: &Node) -> String {
    match &n.body {
        Body::Scalar(s, _) => s.clone(),
        _ => {
            let v = n.value();
            let s = serde_json::to_string(&v).unwrap_or_default();
            s.chars().take(400).collect()
        }
    }
}

/// What a name of a definition refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// A component type (`componentType`).
    Type,
    /// An addon or trait (`addons[].name`, `traits[].name`).
    Trait,
}

impl Family {
    fn kinds(self) -> &'static [&'static str] {
        match self {
            Family::Type => &[
                "ComponentTypeDefinition",
                "ComponentType",
                "ClusterComponentType",
            ],
            Family::Trait => &["Addon", "Trait", "ClusterTrait"],
        }
    }
}

/// The names in `root` that refer to a definition, with where they are written: a Component's
/// `componentType` (`wt/name`, or `{kind, name}`: the part after `/`) and its addons' and
/// traits' `name` (also a type's embedded traits).
fn names(root: &Node) -> Vec<(Family, &Node, &str)> {
    let mut out = Vec::new();
    let Some(spec) = root.get("spec") else {
        return out;
    };
    if let Some(ct) = spec.get("componentType") {
        let name = match &ct.body {
            Body::Map(_) => ct.get("name"),
            _ => Some(ct),
        };
        if let Some((n, full)) = name.and_then(|n| Some((n, n.str()?))) {
            out.push((
                Family::Type,
                n,
                full.rsplit_once('/').map_or(full, |(_, n)| n),
            ));
        }
    }
    for list in ["addons", "traits"] {
        for item in spec.get(list).map(Node::items).unwrap_or_default() {
            if let Some((n, name)) = item.get("name").and_then(|n| Some((n, n.str()?))) {
                out.push((Family::Trait, n, name));
            }
        }
    }
    out
}

/// The definition named at the cursor: by a Component's (or a type's) reference to it, or by
/// the definition's own `metadata.name`.
pub fn subject(root: &Node, offset: usize) -> Option<(Family, String)> {
    let on = |n: &Node| super::tree::contains(&n.range, offset);
    if let Some((f, _, name)) = names(root).into_iter().find(|(_, n, _)| on(n)) {
        return Some((f, name.to_string()));
    }
    let kind = root.get("kind").and_then(Node::str)?;
    let family = [Family::Type, Family::Trait]
        .into_iter()
        .find(|f| f.kinds().contains(&kind))?;
    let name = root.get("metadata")?.get("name").filter(|n| on(n))?;
    Some((family, name.str()?.to_string()))
}

/// The `metadata.name` of every definition of the workspace of `family` named `name`.
pub fn definitions(texts: &Texts, family: Family, name: &str) -> Vec<Location> {
    let mut out = Vec::new();
    for (f, root) in documents(texts, name) {
        let kind = root.get("kind").and_then(Node::str).unwrap_or_default();
        if !family.kinds().contains(&kind) {
            continue;
        }
        if let Some(n) = root.get("metadata").and_then(|m| m.get("name")) {
            if n.str() == Some(name) {
                out.push(Location {
                    file: f.clone(),
                    range: n.range.clone(),
                });
            }
        }
    }
    out
}

/// Every reference of the workspace to the definition of `family` named `name`.
pub fn uses(texts: &Texts, family: Family, name: &str) -> Vec<Location> {
    let mut out = Vec::new();
    for (f, root) in documents(texts, name) {
        for (fam, n, named) in names(&root) {
            if fam == family && named == name {
                out.push(Location {
                    file: f.clone(),
                    range: n.range.clone(),
                });
            }
        }
    }
    out
}

/// The documents of the texts that may mention an OpenChoreo definition called `name`.
fn documents<'t>(texts: &'t Texts, name: &str) -> Vec<(&'t String, Node)> {
    texts
        .iter()
        .filter(|(_, t)| t.contains("openchoreo.dev") && t.contains(name))
        .flat_map(|(f, t)| super::tree::parse(t).into_iter().map(move |d| (f, d.root)))
        .collect()
}

/// The outline of a definition: a type's resources and embedded traits, a trait's creates,
/// patches and removes.
pub fn symbols(root: &Node) -> Option<Symbol> {
    crate::component::typecheck::definition_scope(&root.value())?;
    let spec = root.get("spec");
    let mut children = Vec::new();
    for (list, kind) in [
        ("resources", SymbolKind::Resource),
        ("creates", SymbolKind::Resource),
        ("patches", SymbolKind::Patch),
        ("removes", SymbolKind::Patch),
        ("traits", SymbolKind::Trait),
    ] {
        for (i, item) in spec
            .and_then(|s| s.get(list))
            .map(Node::items)
            .unwrap_or_default()
            .iter()
            .enumerate()
        {
            let template = item.get("template");
            let target = item.get("target");
            let name_node = item
                .get("id")
                .or_else(|| item.get("instanceName"))
                .or_else(|| item.get("name"))
                .or_else(|| {
                    template
                        .and_then(|t| t.get("metadata"))
                        .and_then(|m| m.get("name"))
                });
            let detail = template
                .or(target)
                .or(Some(item))
                .and_then(|t| t.get("kind"))
                .and_then(Node::str)
                .map(str::to_string);
            children.push(Symbol {
                name: name_node
                    .and_then(Node::str)
                    .map_or_else(|| format!("{list}[{i}]"), str::to_string),
                detail,
                kind,
                range: item.range.clone(),
                selection: name_node.map_or(item.range.clone(), |n| n.range.clone()),
                children: Vec::new(),
            });
        }
    }
    let name = root.get("metadata").and_then(|m| m.get("name"));
    Some(super::symbols::definition(root, name, None, children))
}
