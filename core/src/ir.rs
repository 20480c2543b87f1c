//! The graph IR every front-end lowers into, and the evaluator walks.
//!
//! A [`GraphDef`] is one definition (a kro ResourceGraphDefinition, and later a component type or a
//! kurel package): its resource templates with their `${…}` holes already compiled, the conditions and
//! collections around each, the dependencies between them, and the order to evaluate them in. It is
//! built once per definition and shared, read-only, by every unit (instance) rendered from it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::document::Document;
use crate::expr::cel::Compiled;
use crate::expr::reads::{reads, Reads};
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
    /// The same place by position: the index of each map entry or list item on the way. A copy
    /// of the template has the same positions, and following them costs no hashing (finding
    /// every hole by key was the renderer's largest single cost after evaluation).
    pub position: Vec<usize>,
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
    /// An object that already exists in the cluster (kro `externalRef`): never rendered. Its
    /// name, namespace and selector may hold expressions; it resolves against observed state
    /// (`--observed`), and without it any expression reading it needs a live cluster.
    External(Template),
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

impl Node {
    /// Whether other expressions see this node as a list: a forEach collection, or an
    /// externalRef by selector (every object it selects).
    pub fn is_collection(&self) -> bool {
        match &self.kind {
            NodeKind::Template(_) => !self.for_each.is_empty(),
            NodeKind::External(t) => t
                .value
                .pointer("/metadata/selector")
                .is_some_and(|s| !s.is_null()),
        }
    }
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
    /// What the evaluated expressions read of each variable (`schema`, node ids): a unit binds
    /// only that (see [`crate::expr::reads`]). Computed by [`GraphDef::new`].
    pub reads: BTreeMap<String, Reads>,
}

impl GraphDef {
    /// A definition of these nodes, evaluated in `order`.
    pub fn new(name: String, document: Document, nodes: Vec<Node>, order: Vec<usize>) -> Self {
        let reads = variable_reads(&nodes);
        Self {
            name,
            document,
            nodes,
            order,
            reads,
        }
    }

    /// What the expressions read of variable `name` (nothing when none reads it).
    pub fn reads_of(&self, name: &str) -> &Reads {
        static NOTHING: std::sync::OnceLock<Reads> = std::sync::OnceLock::new();
        self.reads
            .get(name)
            .unwrap_or_else(|| NOTHING.get_or_init(Reads::nothing))
    }

    /// A diagnostic located in the definition document.
    pub fn diag(&self, d: Diagnostic, path: &FieldPath) -> Diagnostic {
        self.document.diag(d, path)
    }

    /// The index of the node with this id.
    pub fn node_index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }
}

/// What the expressions a unit evaluates in CEL (conditions, collections, template holes; not
/// `readyWhen`, which is never evaluated offline) read of each variable.
fn variable_reads(nodes: &[Node]) -> BTreeMap<String, Reads> {
    let mut out: BTreeMap<String, Reads> = BTreeMap::new();
    let mut add = |e: &Expr| {
        for (root, r) in reads(e.compiled.program.expression()) {
            match out.get_mut(&root) {
                Some(have) => have.merge(r),
                None => {
                    out.insert(root, r);
                }
            }
        }
    };
    // Plain field paths in conditions and holes are read from the JSON directly; the renderer
    // binds their variable whole in the rare case it falls back to CEL for them (to report
    // what is wrong), so they need nothing bound here. forEach lists are always evaluated in
    // CEL.
    let mut add_unless_direct = |e: &Expr| {
        if e.compiled.field_path.is_none() {
            add(e);
        }
    };
    for n in nodes {
        n.include_when.iter().for_each(&mut add_unless_direct);
        let (NodeKind::Template(t) | NodeKind::External(t)) = &n.kind;
        for h in &t.holes {
            h.exprs().into_iter().for_each(&mut add_unless_direct);
        }
    }
    for n in nodes {
        n.for_each.iter().for_each(|(_, e)| add(e));
    }
    out
}
