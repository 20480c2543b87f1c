//! What the editor needs of a ResourceGraphDefinition: its resources (ids, kinds, where they are
//! written, what they read) and the variables an expression at a path sees, typed the way the
//! kro front-end types them ([`crate::kro::typecheck::instance_type`], [`Type::of_node`]).

use std::collections::BTreeSet;
use std::ops::Range;

use serde_json::Value;

use super::tree::{Body, Node};
use super::Texts;
use crate::expr::cel::{compile, compile_with, CompileError};
use crate::expr::check::{infer, Scope};
use crate::expr::types::Type;
use crate::fieldpath::{FieldPath, Segment};
use crate::limits::ExprLimits;
use crate::openapi::Schemas;

/// Whether a document's root is a ResourceGraphDefinition.
pub fn is_rgd(root: &Node) -> bool {
    root.get("kind").and_then(Node::str) == Some("ResourceGraphDefinition")
        && root
            .get("apiVersion")
            .and_then(Node::str)
            .is_some_and(|a| a.starts_with("kro.run/"))
}

/// One entry of `spec.resources`.
#[derive(Debug, Clone)]
pub struct Resource<'a> {
    /// Its index in `spec.resources`.
    pub index: usize,
    /// Its id.
    pub id: String,
    /// The `id:` value as written.
    pub id_node: &'a Node,
    /// The whole entry.
    pub entry: &'a Node,
    /// `apiVersion` and `kind` of its template or externalRef, as written.
    pub api_version: Option<String>,
    /// Its kind.
    pub kind: Option<String>,
    /// Whether it is a collection (`forEach`).
    pub collection: bool,
}

/// The resources of an RGD, in order.
pub fn resources(root: &Node) -> Vec<Resource<'_>> {
    let Some(list) = root.get("spec").and_then(|s| s.get("resources")) else {
        return Vec::new();
    };
    list.items()
        .iter()
        .enumerate()
        .filter_map(|(index, entry)| {
            let id_node = entry.get("id")?;
            let id = id_node.str()?.to_string();
            let object = entry.get("template").or_else(|| entry.get("externalRef"));
            let field = |k| {
                object
                    .and_then(|o| o.get(k))
                    .and_then(Node::str)
                    .map(str::to_string)
            };
            Some(Resource {
                index,
                id,
                id_node,
                entry,
                api_version: field("apiVersion"),
                kind: field("kind"),
                collection: entry.get("forEach").is_some(),
            })
        })
        .collect()
}

/// Every `${…}` written in the strings under `node`, as (its CEL source, its range in the text).
pub fn holes(node: &Node, text: &str, out: &mut Vec<(String, Range<usize>)>) {
    match &node.body {
        Body::Scalar(s, _) if crate::delimiter::has_open(s) => {
            if let Ok(ms) = crate::expr::scan::scan(s) {
                for m in ms {
                    // The decoded value's offsets are the text's when the scalar is written as
                    // is; otherwise the whole scalar stands for the expression.
                    let raw = text.get(node.range.clone()).unwrap_or_default();
                    let range = match raw.find(&s[m.start..m.end]) {
                        Some(at) => {
                            node.range.start + at..node.range.start + at + (m.end - m.start)
                        }
                        None => node.range.clone(),
                    };
                    out.push((m.expr, range));
                }
            }
        }
        Body::Map(entries) => entries.iter().for_each(|(_, v)| holes(v, text, out)),
        Body::Seq(items) => items.iter().for_each(|v| holes(v, text, out)),
        _ => {}
    }
}

/// The variables an expression reads (`roots`), when it compiles.
pub fn roots(source: &str) -> BTreeSet<String> {
    compile(source, &ExprLimits::default())
        .map(|c| c.refs.roots)
        .unwrap_or_default()
}

/// The ids a resource's expressions read, in id order.
pub fn dependencies(r: &Resource<'_>, all: &[Resource<'_>], text: &str) -> Vec<String> {
    let mut found = Vec::new();
    holes(r.entry, text, &mut found);
    let read: BTreeSet<String> = found.iter().flat_map(|(s, _)| roots(s)).collect();
    let mut deps: Vec<String> = all
        .iter()
        .filter(|o| o.id != r.id && read.contains(&o.id))
        .map(|o| o.id.clone())
        .collect();
    deps.dedup();
    deps
}

/// The schemas of the kinds the resources of `root` use: the bundled ones, and for the others
/// the CRDs and RGDs of the workspace (an RGD's instance kind as kro resolves it, from its
/// SimpleSchema: [`crate::kro::crd::spec_only_crd`]). Only texts that name one of those other
/// kinds are parsed, so a graph of built-in kinds reads no other file.
pub fn schemas(texts: &Texts, root: &Node) -> Schemas {
    let mut s = Schemas::bundled();
    let others: Vec<String> = resources(root)
        .into_iter()
        .filter_map(|r| match (r.api_version, r.kind) {
            (Some(av), Some(k)) if s.lookup(&av, &k).is_none() => Some(k),
            _ => None,
        })
        .collect();
    if others.is_empty() {
        return s;
    }
    for text in texts.values() {
        let defines =
            text.contains("CustomResourceDefinition") || text.contains("ResourceGraphDefinition");
        if !defines || !others.iter().any(|k| text.contains(k.as_str())) {
            continue;
        }
        for doc in super::tree::parse(text) {
            let v = doc.root.value();
            let crd = if is_rgd(&doc.root) {
                crate::kro::crd::spec_only_crd(&v)
            } else {
                (v.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition"))
                    .then_some(v)
            };
            // A definition that does not convert is its own diagnostics' business.
            if let Some(crd) = crd {
                let _ = s.add_crd(&crd);
            }
        }
    }
    s
}

/// The OpenAPI schema of the instance `spec` (kro's SimpleSchema conversion), `None` when the
/// schema does not convert yet.
pub fn spec_schema(root: &Node) -> Option<Value> {
    let schema = root.get("spec")?.get("schema")?;
    let spec = schema.get("spec").map_or(Value::Null, Node::value);
    let types = schema.get("types").map(Node::value);
    crate::schema::simple_to_openapi(&spec, types.as_ref()).ok()
}

/// The variables an expression written at `path` of the RGD sees, typed: `schema`, every
/// resource (a collection as a list), and a resource's own forEach iterators; in `readyWhen`,
/// only the resource itself (`each` for a collection), as kro's checker declares them.
pub fn scope(root: &Node, path: &FieldPath, schemas: &Schemas) -> Scope {
    let all = resources(root);
    let object = |r: &Resource<'_>| match (&r.api_version, &r.kind) {
        (Some(av), Some(k)) if !av.contains("${") && !k.contains("${") => schemas
            .lookup(av, k)
            .map_or(Type::Dyn, |k| Type::Object(k.node())),
        _ => Type::Dyn,
    };
    let mut scope = Scope::new();
    let here = match path.0.as_slice() {
        [Segment::Key(s), Segment::Key(r), Segment::Index(i), ..]
            if s == "spec" && r == "resources" =>
        {
            all.iter().find(|r| r.index == *i)
        }
        _ => None,
    };
    let in_ready_when = matches!(path.0.get(3), Some(Segment::Key(k)) if k == "readyWhen");
    if let (Some(r), true) = (here, in_ready_when) {
        scope.declare(if r.collection { "each" } else { r.id.as_str() }, object(r));
        return scope;
    }
    let spec = spec_schema(root).unwrap_or(Value::Null);
    scope.declare(
        "schema",
        crate::kro::typecheck::instance_type(&spec, schemas),
    );
    for r in &all {
        let t = object(r);
        scope.declare(r.id.clone(), if r.collection { Type::list(t) } else { t });
    }
    if let Some(r) = here {
        let in_for_each = matches!(path.0.get(3), Some(Segment::Key(k)) if k == "forEach");
        if !in_for_each {
            let dims: Vec<(String, String)> = r
                .entry
                .get("forEach")
                .map(|f| f.items())
                .unwrap_or_default()
                .iter()
                .filter_map(|d| match &d.body {
                    Body::Map(e) => e.first().and_then(|(k, v)| {
                        let src = crate::expr::scan::scan(v.str()?).ok()?.pop()?.expr;
                        Some((k.str()?.to_string(), src))
                    }),
                    _ => None,
                })
                .collect();
            let mut outer = scope.clone();
            for (name, src) in dims {
                let el = type_of(&src, &mut outer).map_or(Type::Dyn, |t| t.element());
                scope.declare(name, el);
            }
        }
    }
    scope
}

/// The type of a CEL source in a scope: `Err` with the parser's or the checker's message.
pub fn type_of(source: &str, scope: &mut Scope) -> Result<Type, String> {
    type_of_with(source, scope, &[])
}

/// [`type_of`], also accepting calls to a front-end's own `functions`.
pub fn type_of_with(source: &str, scope: &mut Scope, functions: &[&str]) -> Result<Type, String> {
    let c = compile_with(source, &ExprLimits::default(), functions).map_err(|e| match e {
        CompileError::Syntax { message, .. } => message,
        CompileError::UnknownFunctions(f) => format!("unknown functions: {}", f.join(", ")),
        CompileError::Limit(m) => m,
    })?;
    infer(c.program.expression(), scope)
}
