//! The graph IR every front-end lowers into, and the evaluator walks.
//!
//! A [`GraphDef`] is one definition (a kro ResourceGraphDefinition, and later a component type or a
//! kurel package): its resource templates with their `${…}` holes already compiled, the conditions and
//! collections around each, the dependencies between them, and the order to evaluate them in. It is
//! built once per definition and shared, read-only, by every unit (instance) rendered from it.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::document::Document;
use crate::expr::cel::Compiled;
use crate::fieldpath::FieldPath;

/// A compiled expression and where it was written.
#[derive(Debug, Clone)]
pub struct Expr {
    /// The compiled CEL.
    pub compiled: Arc<Compiled>,
    /// The whole string it came from (`"${a}-${b}"`), for messages.
    pub written: String,
    /// Where the string is, from the document root.
    pub path: FieldPath,
}

impl Expr {
    /// The CEL source.
    pub fn source(&self) -> &str {
        &self.compiled.source
    }
}

/// A piece of an interpolated string.
#[derive(Debug, Clone)]
pub enum Part {
    /// Literal text.
    Text(String),
    /// An expression whose result must be a string.
    Expr(Expr),
}

/// A string value in a template that holds expressions.
#[derive(Debug, Clone)]
pub enum HoleKind {
    /// The whole value is one `${…}`: its result replaces the value, whatever its type.
    Standalone(Expr),
    /// Text with expressions inside: the result is a string.
    Interpolated(Vec<Part>),
}

/// One place in a template to fill in.
#[derive(Debug, Clone)]
pub struct Hole {
    /// Path from the template root.
    pub path: FieldPath,
    /// What fills it.
    pub kind: HoleKind,
}

impl Hole {
    /// The expressions of this hole.
    pub fn exprs(&self) -> Vec<&Expr> {
        match &self.kind {
            HoleKind::Standalone(e) => vec![e],
            HoleKind::Interpolated(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    Part::Expr(e) => Some(e),
                    Part::Text(_) => None,
                })
                .collect(),
        }
    }
}

/// A resource template: the literal object plus the holes to fill.
#[derive(Debug, Clone)]
pub struct Template {
    /// The object as written; holes still hold their `${…}` strings.
    pub value: Value,
    /// Holes in document order.
    pub holes: Vec<Hole>,
}

/// What a node produces.
#[derive(Debug, Clone)]
pub enum NodeKind {
    /// Rendered from a template.
    Template(Template),
    /// An object that already exists in the cluster (kro `externalRef`): never rendered, and any
    /// expression reading it needs a live cluster.
    External(Value),
}

/// One resource of a definition.
#[derive(Debug, Clone)]
pub struct Node {
    /// Its id, the variable other expressions read it by.
    pub id: String,
    /// What it produces.
    pub kind: NodeKind,
    /// All must be true for the node to be rendered.
    pub include_when: Vec<Expr>,
    /// Readiness conditions: checked statically, never evaluated offline.
    pub ready_when: Vec<Expr>,
    /// Collection dimensions: iterator name and list expression; cartesian product, first outermost.
    pub for_each: Vec<(String, Expr)>,
    /// Indices of the nodes this one depends on.
    pub dependencies: BTreeSet<usize>,
    /// Whether the kind is namespaced (namespace inheritance applies).
    pub namespaced: bool,
    /// Path of the node's declaration in the definition document (`spec.resources[3]`).
    pub path: FieldPath,
}

/// One definition, lowered.
#[derive(Debug)]
pub struct GraphDef {
    /// The definition's name (`metadata.name`).
    pub name: String,
    /// The document it came from, for diagnostics.
    pub document: Document,
    /// Nodes in declaration order.
    pub nodes: Vec<Node>,
    /// Evaluation order (indices into `nodes`).
    pub order: Vec<usize>,
}

impl GraphDef {
    /// A diagnostic located in the definition document.
    pub fn diag(&self, d: Diagnostic, path: &FieldPath) -> Diagnostic {
        self.document.diag(d, path)
    }

    /// The index of the node with this id.
    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }
}
