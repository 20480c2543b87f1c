//! ResourceGraphDefinition → graph IR.
//!
//! Follows kro's builder (docs/kro.md; kro pkg/graph/builder.go, validation.go): CRD defaults (`group: kro.run`, `scope:
//! Namespaced`), naming rules for kinds, ids and iterators, SimpleSchema, template shape, `${…}`
//! scanning, reference checks, dependencies, cycles and kro's stable topological order. Every problem
//! is reported, not only the first; a definition with errors yields no graph.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::expr::cel::ExprLimits;
use crate::fieldpath::FieldPath;
use crate::graph::{format_cycle, Graph};
use crate::ir::{Expr, GraphDef, Node, NodeKind, Template};
use crate::openapi::Schemas;
use crate::schema;
use crate::scope::Scopes;
use crate::template::Compiler;

use super::typecheck;

/// The group of kro's own API.
pub const KRO_GROUP: &str = "kro.run";
/// The kind of a ResourceGraphDefinition.
pub const RGD_KIND: &str = "ResourceGraphDefinition";

/// Words CEL reserves; not usable as ids or iterator names.
const CEL_RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// Words kro reserves; not usable as ids or iterator names.
const KRO_RESERVED: &[&str] = &[
    "apiVersion",
    "context",
    "dependency",
    "dependencies",
    "each",
    "externalRef",
    "externalReference",
    "externalRefs",
    "externalReferences",
    "graph",
    "instance",
    "item",
    "items",
    "kind",
    "kro",
    "metadata",
    "namespace",
    "object",
    "resource",
    "resourcegraphdefinition",
    "resourceGraphDefinition",
    "resources",
    "root",
    "runtime",
    "schema",
    "self",
    "serviceAccountName",
    "spec",
    "status",
    "this",
    "variables",
    "vars",
    "version",
];

/// The hint for a problem that has no more specific one.
fn default_hint(code: crate::diag::Code) -> &'static str {
    match code {
        c if c == codes::RESOURCE_SHAPE => {
            "each resource has an id and exactly one of template or externalRef"
        }
        c if c == codes::FOREACH_INVALID => {
            "write forEach as a list of single-entry maps: - name: ${schema.spec.names}"
        }
        c if c == codes::NOT_STANDALONE => "write each entry as one ${...} expression",
        c if c == codes::TEMPLATE_OBJECT => {
            "a template is a Kubernetes object with apiVersion, kind and metadata"
        }
        _ => "see the ResourceGraphDefinition reference in docs/kro.md",
    }
}

/// Whether a document is a ResourceGraphDefinition.
pub fn is_rgd(doc: &Document) -> bool {
    doc.kind() == Some(RGD_KIND) && doc.api_version().is_some_and(|v| v.starts_with("kro.run/"))
}

/// Whether a value (not yet a [`Document`]) is a ResourceGraphDefinition.
pub fn is_rgd_value(v: &Value) -> bool {
    let field = |k| crate::lookup::field(v, k).and_then(Value::as_str);
    field("kind") == Some(RGD_KIND)
        && field("apiVersion").is_some_and(|a| a.starts_with("kro.run/"))
}

/// The kind a ResourceGraphDefinition defines, as (group, kind), read from a document's value
/// without lowering it (the group defaults to `kro.run`, as kro's does).
pub fn defined_kind(v: &Value) -> Option<(String, String)> {
    if !is_rgd_value(v) {
        return None;
    }
    let schema = v.get("spec")?.get("schema")?;
    let kind = schema.get("kind")?.as_str()?;
    let group = schema
        .get("group")
        .and_then(Value::as_str)
        .unwrap_or("kro.run");
    Some((group.to_string(), kind.to_string()))
}

/// A ResourceGraphDefinition, lowered and checked.
#[derive(Debug)]
pub struct Rgd {
    /// The resources as a graph.
    pub graph: GraphDef,
    /// The instance kind's group (defaulted to `kro.run`).
    pub group: String,
    /// The instance kind's version (`v1alpha1`).
    pub version: String,
    /// The instance kind.
    pub kind: String,
    /// Whether instances are namespaced.
    pub namespaced: bool,
    /// OpenAPI schema of the instance `spec`.
    pub spec_schema: Value,
    /// The schema instances are defaulted and validated with: an object whose `spec` property is
    /// `spec_schema`. Built once here rather than per instance.
    pub instance_schema: Value,
    /// `instance_schema` reduced to what defaulting reads, applied to every instance.
    pub instance_defaults: crate::schema::DefaultsPlan,
    /// OpenAPI schema of the instance `status`, inferred from the status expressions' types plus
    /// kro's `state` and `conditions`.
    pub status_schema: Value,
    /// The status expressions (`spec.schema.status`), compiled: what `kiln status` evaluates.
    pub status: Option<Template>,
    /// The author's status conditions (`spec.schema.status.conditions`), compiled: each returns
    /// a condition or a list of them. Empty when kro's built-in conditions are written.
    pub conditions: Vec<Expr>,
    /// Warnings found while loading (no errors: those prevent an `Rgd`).
    pub warnings: Vec<Diagnostic>,
}

// kro states these rules as regular expressions; they are checked byte by byte here because
// compiling the four regexes was 4.5% of a small app's whole run (357,161 of 8.0M instructions,
// callgrind). A test holds each check to its regex on generated names.

/// `^[A-Z][a-zA-Z0-9]*$`
fn is_upper_camel(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_uppercase) && b[1..].iter().all(u8::is_ascii_alphanumeric)
}

/// `^[a-z][a-zA-Z0-9]*$`
fn is_lower_camel(s: &str) -> bool {
    let b = s.as_bytes();
    b.first().is_some_and(u8::is_ascii_lowercase) && b[1..].iter().all(u8::is_ascii_alphanumeric)
}

/// `^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$`
fn is_kro_version(s: &str) -> bool {
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|c| c.is_ascii_digit());
    let Some(rest) = s.strip_prefix('v') else {
        return false;
    };
    let number = rest.bytes().take_while(u8::is_ascii_digit).count();
    if number == 0 {
        return false;
    }
    let tail = &rest[number..];
    tail.is_empty()
        || tail.strip_prefix("alpha").is_some_and(digits)
        || tail.strip_prefix("beta").is_some_and(digits)
}

/// apimachinery's IsDNS1035Label: `[a-z]([-a-z0-9]*[a-z0-9])?`, at most 63 characters.
fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() <= 63
        && b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

fn is_reserved(s: &str) -> bool {
    CEL_RESERVED.contains(&s) || KRO_RESERVED.contains(&s)
}

/// Where a name is checked: an id or a forEach iterator.
fn check_name(name: &str, what: &str) -> Option<String> {
    if is_reserved(name) {
        Some(format!(
            "naming convention violation: {what} {name} is a reserved keyword in KRO"
        ))
    } else if !is_lower_camel(name) {
        Some(format!(
            "naming convention violation: {what} {name} is not a valid KRO resource id: must be lower camelCase"
        ))
    } else {
        None
    }
}

/// Load an RGD document. Returns the lowered definition, or every error found.
pub fn load(
    doc: &Document,
    scopes: &Scopes,
    schemas: &Schemas,
    limits: &ExprLimits,
) -> Result<Rgd, Vec<Diagnostic>> {
    let mut l = Loader {
        doc,
        schemas,
        errors: Vec::new(),
        warnings: Vec::new(),
        compiler: Compiler::new(doc, *limits),
        condition_exprs: Vec::new(),
    };
    let rgd = l.load(scopes);
    match rgd {
        Some(mut r) if l.errors.is_empty() => {
            r.warnings = l.warnings;
            Ok(r)
        }
        _ => {
            let mut all = l.errors;
            all.extend(l.warnings);
            Err(all)
        }
    }
}

struct Loader<'d> {
    doc: &'d Document,
    schemas: &'d Schemas,
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    compiler: Compiler<'d>,
    /// The author's status conditions, compiled.
    condition_exprs: Vec<Expr>,
}

/// The JSON type of a value, for messages.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

/// What an expression may reference, by where it is written.
struct Scope<'a> {
    ids: &'a [String],
    iterators: &'a [String],
}

impl<'d> Loader<'d> {
    fn err(
        &mut self,
        code: crate::diag::Code,
        msg: impl Into<String>,
        path: &FieldPath,
        hint: Option<&str>,
    ) {
        let d = Diagnostic::error(code, msg).with_hint(hint.unwrap_or_else(|| default_hint(code)));
        self.errors.push(self.doc.diag(d, path));
    }

    fn load(&mut self, scopes: &Scopes) -> Option<Rgd> {
        let root = FieldPath::root();
        let v = &self.doc.value;
        let name = match v
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
        {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => {
                self.err(
                    codes::RGD_INVALID,
                    "metadata.name is required",
                    &root.key("metadata"),
                    Some("give the ResourceGraphDefinition a name"),
                );
                String::new()
            }
        };
        let spec_path = root.key("spec");
        let Some(spec) = v.get("spec").and_then(Value::as_object) else {
            self.err(
                codes::RGD_INVALID,
                "spec must be a mapping",
                &spec_path,
                None,
            );
            return None;
        };
        let schema_path = spec_path.key("schema");
        let Some(sch) = spec.get("schema").and_then(Value::as_object) else {
            self.err(
                codes::RGD_INVALID,
                "spec.schema is required and must be a mapping",
                &schema_path,
                Some("declare the instance kind: spec.schema.apiVersion, spec.schema.kind and spec.schema.spec"),
            );
            return None;
        };

        let kind = self.required_str(sch, "kind", &schema_path);
        if let Some(k) = &kind {
            if !is_upper_camel(k) {
                self.err(
                    codes::RGD_KIND_NAME,
                    format!("naming convention violation: kind '{k}' is not a valid KRO kind name: must be UpperCamelCase"),
                    &schema_path.key("kind"),
                    Some("use UpperCamelCase, e.g. WebApp"),
                );
            }
        }
        let version = self.required_str(sch, "apiVersion", &schema_path);
        if let Some(ver) = &version {
            if !is_kro_version(ver) {
                self.err(
                    codes::RGD_KIND_NAME,
                    format!("spec.schema.apiVersion {ver:?} must match ^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$"),
                    &schema_path.key("apiVersion"),
                    Some("use a Kubernetes version such as v1alpha1 (the group goes in spec.schema.group)"),
                );
            }
        }
        let group = match sch.get("group") {
            None | Some(Value::Null) => KRO_GROUP.to_string(),
            Some(Value::String(g)) if !g.is_empty() => g.clone(),
            Some(_) => {
                self.err(
                    codes::RGD_INVALID,
                    "spec.schema.group must be a non-empty string",
                    &schema_path.key("group"),
                    None,
                );
                KRO_GROUP.to_string()
            }
        };
        let namespaced = match sch.get("scope") {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) if s == "Namespaced" => true,
            Some(Value::String(s)) if s == "Cluster" => false,
            Some(other) => {
                self.err(
                    codes::RGD_INVALID,
                    format!("spec.schema.scope must be Namespaced or Cluster, got {other}"),
                    &schema_path.key("scope"),
                    None,
                );
                true
            }
        };

        // kro's RGD CRD (api/v1alpha1 Schema): shortNames and categories are sets of at most 32
        // DNS-1035 labels.
        for key in ["shortNames", "categories"] {
            let p = schema_path.key(key);
            match sch.get(key) {
                None | Some(Value::Null) => {}
                Some(Value::Array(items)) => {
                    if items.len() > 32 {
                        self.err(
                            codes::RGD_INVALID,
                            format!(
                                "spec.schema.{key} must have at most 32 items, has {}",
                                items.len()
                            ),
                            &p,
                            Some("keep the aliases a kubectl user needs"),
                        );
                    }
                    let mut seen = BTreeSet::new();
                    for (i, item) in items.iter().enumerate() {
                        let ok = item.as_str().is_some_and(is_dns1035_label);
                        if !ok {
                            self.err(
                                codes::RGD_INVALID,
                                format!("spec.schema.{key}[{i}] {item} must be a lowercase name of at most 63 characters matching ^[a-z]([-a-z0-9]*[a-z0-9])?$"),
                                &p.index(i),
                                Some("use lowercase letters, digits and dashes, starting with a letter, e.g. wa"),
                            );
                        } else if !seen.insert(item.as_str().unwrap_or_default()) {
                            self.err(
                                codes::RGD_INVALID,
                                format!("spec.schema.{key}[{i}]: duplicate value {item}"),
                                &p.index(i),
                                Some("list each value once (the field is a set)"),
                            );
                        }
                    }
                }
                Some(other) => self.err(
                    codes::RGD_INVALID,
                    format!("spec.schema.{key} must be a list of strings, got {other}"),
                    &p,
                    None,
                ),
            }
        }

        // SimpleSchema → OpenAPI.
        let empty = Value::Object(Map::new());
        let spec_simple = sch.get("spec").unwrap_or(&empty);
        let spec_schema = match schema::simple_to_openapi(spec_simple, sch.get("types")) {
            Ok(s) => s,
            Err(errs) => {
                for e in errs {
                    let p = FieldPath::parse(&e.path)
                        .map(|p| schema_path.join(&p))
                        .unwrap_or_else(|| schema_path.clone());
                    self.err(
                        codes::SIMPLE_SCHEMA,
                        format!("failed to build OpenAPI schema for instance: {}", e.message),
                        &p,
                        Some("see the SimpleSchema reference: TYPE | marker=value ..."),
                    );
                }
                Value::Null
            }
        };

        let nodes = self.resources(spec, &spec_path, scopes, namespaced);
        let status = self.status(sch, &schema_path, &nodes);

        let ids: Vec<String> = nodes.iter().map(|n| n.id.clone()).collect();
        let order = self.order(&nodes, &ids);

        // Types are checked only on a graph that is otherwise sound: an unknown id or a cycle
        // would only add noise here. A template field outside its kind's schema (KLN2010) leaves
        // the graph sound, so the expressions are still checked in the same run; so does a status
        // field without an expression or one that reads nothing (KLN2011), and an expression that
        // does not compile (KLN3001, KLN3002, KLN3004, KLN3006): it is left out of its template,
        // so one unknown function does not hide a misspelt field in another expression.
        let mut status_schema = Value::Null;
        if self.errors.iter().all(|d| {
            [
                codes::TEMPLATE_SCHEMA,
                codes::STATUS_STATIC,
                codes::TEMPLATE_SYNTAX,
                codes::CEL_SYNTAX,
                codes::UNKNOWN_FUNCTION,
                codes::EXPRESSION_LIMIT,
            ]
            .contains(&d.code)
        }) {
            let typed = typecheck::check(&typecheck::Input {
                doc: self.doc,
                nodes: &nodes,
                spec_schema: &spec_schema,
                status: status.as_ref(),
                conditions: &self.condition_exprs,
                schemas: self.schemas,
            });
            self.errors.extend(typed.errors);
            status_schema = typed.status_schema;
        }

        let instance_schema =
            serde_json::json!({"type": "object", "properties": {"spec": spec_schema.clone()}});
        Some(Rgd {
            graph: GraphDef::new(name, self.doc.clone(), nodes, order.unwrap_or_default()),
            group,
            version: version.unwrap_or_default(),
            kind: kind.unwrap_or_default(),
            namespaced,
            instance_defaults: crate::schema::DefaultsPlan::new(&instance_schema),
            instance_schema,
            spec_schema,
            status_schema,
            status,
            conditions: std::mem::take(&mut self.condition_exprs),
            warnings: Vec::new(),
        })
    }

    fn required_str(
        &mut self,
        m: &Map<String, Value>,
        key: &str,
        base: &FieldPath,
    ) -> Option<String> {
        match m.get(key) {
            Some(Value::String(s)) if !s.is_empty() => Some(s.clone()),
            _ => {
                self.err(
                    codes::RGD_INVALID,
                    format!("{base}.{key} is required and must be a string"),
                    &base.key(key),
                    None,
                );
                None
            }
        }
    }

    fn resources(
        &mut self,
        spec: &Map<String, Value>,
        spec_path: &FieldPath,
        scopes: &Scopes,
        instance_namespaced: bool,
    ) -> Vec<Node> {
        let list_path = spec_path.key("resources");
        let items: &[Value] = match spec.get("resources") {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(_) => {
                self.err(
                    codes::RGD_INVALID,
                    "spec.resources must be a list",
                    &list_path,
                    None,
                );
                &[]
            }
        };

        // Ids first: every expression is checked against the full set.
        let mut ids: Vec<String> = Vec::new();
        let mut seen = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let p = list_path.index(i);
            match item.get("id").and_then(Value::as_str) {
                Some(id) => {
                    if let Some(msg) = check_name(id, "id") {
                        self.err(codes::RESOURCE_ID, msg, &p.key("id"), Some("ids are lowerCamelCase and not reserved words, e.g. deployment, webService"));
                    } else if !seen.insert(id.to_string()) {
                        self.err(
                            codes::RESOURCE_ID,
                            format!(
                                "naming convention violation: found duplicate resource IDs {id}"
                            ),
                            &p.key("id"),
                            Some("give every resource its own id"),
                        );
                    }
                    ids.push(id.to_string());
                }
                None => {
                    self.err(
                        codes::RESOURCE_SHAPE,
                        "resource id is required and must be a string",
                        &p,
                        None,
                    );
                    ids.push(format!("#{i}"));
                }
            }
        }

        let mut nodes = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = list_path.index(i);
            let Some(m) = item.as_object() else {
                self.err(
                    codes::RESOURCE_SHAPE,
                    "each resource must be a mapping",
                    &p,
                    None,
                );
                continue;
            };
            if let Some(n) = self.resource(m, &ids[i], &p, &ids, scopes, instance_namespaced) {
                nodes.push(n);
            }
        }
        nodes
    }

    #[allow(clippy::too_many_arguments)]
    fn resource(
        &mut self,
        m: &Map<String, Value>,
        id: &str,
        p: &FieldPath,
        ids: &[String],
        scopes: &Scopes,
        instance_namespaced: bool,
    ) -> Option<Node> {
        let template = m.get("template").filter(|v| !v.is_null());
        let external = m.get("externalRef").filter(|v| !v.is_null());
        let has_for_each = m.get("forEach").is_some_and(|v| !v.is_null());
        match (template, external) {
            (Some(_), Some(_)) => {
                self.err(codes::RESOURCE_SHAPE, format!("invalid combination of resource fields: resource {id:?}: cannot use externalRef with template"), p, Some("keep either template or externalRef"));
                return None;
            }
            (None, None) => {
                self.err(codes::RESOURCE_SHAPE, format!("invalid combination of resource fields: resource {id:?}: exactly one of template or externalRef must be provided"), p, None);
                return None;
            }
            (None, Some(_)) if has_for_each => {
                self.err(codes::RESOURCE_SHAPE, format!("invalid combination of resource fields: resource {id:?}: cannot use externalRef with forEach"), p, None);
                return None;
            }
            _ => {}
        }

        // forEach dimensions.
        let mut for_each: Vec<(String, Expr)> = Vec::new();
        let mut iterators: Vec<String> = Vec::new();
        if let Some(fe) = m.get("forEach").filter(|v| !v.is_null()) {
            let fp = p.key("forEach");
            match fe.as_array() {
                None => self.err(
                    codes::FOREACH_INVALID,
                    "forEach must be a list of {iterator: ${expression}} entries",
                    &fp,
                    None,
                ),
                Some(dims) => {
                    for (j, dim) in dims.iter().enumerate() {
                        let dp = fp.index(j);
                        let Some(dm) = dim.as_object().filter(|o| o.len() == 1) else {
                            self.err(codes::FOREACH_INVALID, format!("resource {id:?}: each forEach entry must have exactly one iterator"), &dp, Some("write - name: ${schema.spec.names}"));
                            continue;
                        };
                        let (it, expr) = dm.iter().next().expect("one entry");
                        if let Some(msg) = check_name(it, "forEach iterator name") {
                            self.err(
                                codes::FOREACH_INVALID,
                                format!("resource {id:?}: {msg}"),
                                &dp.key(it),
                                None,
                            );
                        } else if ids.iter().any(|x| x == it) {
                            self.err(codes::FOREACH_INVALID, format!("resource {id:?}: forEach iterator name {it:?} conflicts with resource ID"), &dp.key(it), None);
                        } else if iterators.iter().any(|x| x == it) {
                            self.err(
                                codes::FOREACH_INVALID,
                                format!("resource {id:?}: duplicate forEach iterator name {it:?}"),
                                &dp.key(it),
                                None,
                            );
                        }
                        iterators.push(it.clone());
                        match self.compiler.standalone(
                            expr,
                            &dp.key(it),
                            &format!("forEach dimension {it:?}"),
                        ) {
                            Ok(e) => for_each.push((it.clone(), e)),
                            Err(d) => self.errors.push(d),
                        }
                    }
                }
            }
        }

        let include_when = self.conditions(m, "includeWhen", p);
        let ready_when = self.conditions(m, "readyWhen", p);

        let (kind, namespaced) = if let Some(t) = template {
            let tp = p.key("template");
            let namespaced = self.check_template_object(t, id, &tp, scopes, instance_namespaced);
            let (tmpl, diags) = self.compiler.template(t, &tp);
            self.errors.extend(diags);
            // kro's buildResourceNode: a CustomResourceDefinition template is parsed without a
            // schema, and expressions are allowed only in its metadata.
            let is_crd = t.get("apiVersion").and_then(Value::as_str)
                == Some("apiextensions.k8s.io/v1")
                && t.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition");
            if is_crd {
                for h in &tmpl.holes {
                    if !matches!(h.path.0.first(), Some(crate::fieldpath::Segment::Key(k)) if k == "metadata")
                        || h.path.0.len() < 2
                    {
                        self.err(
                            codes::TEMPLATE_OBJECT,
                            format!("CEL expressions in CRDs are only supported for metadata fields, found in path {:?}, resource {id}", h.path.to_string()),
                            &tp.join(&h.path),
                            Some("a CustomResourceDefinition is applied as written: compute only its metadata (name, labels, annotations)"),
                        );
                    }
                }
            }
            (NodeKind::Template(tmpl), namespaced.unwrap_or(true))
        } else {
            let e = external.expect("checked above");
            let ep = p.key("externalRef");
            let namespaced = self.check_external(e, id, &ep, scopes);
            // Expressions in an externalRef (name, namespace, selector) are compiled like a
            // template's.
            let (tmpl, diags) = self.compiler.template(e, &ep);
            self.errors.extend(diags);
            (NodeKind::External(tmpl), namespaced)
        };

        let mut node = Node {
            id: id.to_string(),
            kind,
            include_when,
            ready_when,
            for_each,
            dependencies: BTreeSet::new(),
            namespaced,
            path: p.clone(),
        };
        self.check_references(&mut node, ids, &iterators);
        Some(node)
    }

    fn conditions(&mut self, m: &Map<String, Value>, key: &str, p: &FieldPath) -> Vec<Expr> {
        let mut out = Vec::new();
        let cp = p.key(key);
        match m.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) => {
                for (j, item) in items.iter().enumerate() {
                    match self.compiler.standalone(item, &cp.index(j), key) {
                        Ok(e) => out.push(e),
                        Err(d) => self.errors.push(d),
                    }
                }
            }
            Some(_) => self.err(
                codes::NOT_STANDALONE,
                format!("{key} must be a list of ${{...}} expressions"),
                &cp,
                None,
            ),
        }
        out
    }

    /// kro's "is a valid Kubernetes object" check, GVK literal, reserved labels. Returns the scope.
    fn check_template_object(
        &mut self,
        t: &Value,
        id: &str,
        tp: &FieldPath,
        scopes: &Scopes,
        instance_namespaced: bool,
    ) -> Option<bool> {
        let Some(obj) = t.as_object() else {
            self.err(
                codes::TEMPLATE_OBJECT,
                format!(
                    "resource {id} is not a valid Kubernetes object: template must be a mapping"
                ),
                tp,
                None,
            );
            return None;
        };
        let hint = Some("a template is a Kubernetes object with apiVersion, kind and metadata");
        let api_version = match obj.get("apiVersion") {
            None => {
                self.err(codes::TEMPLATE_OBJECT, format!("resource {id} is not a valid Kubernetes object: apiVersion field not found"), tp, hint);
                None
            }
            Some(Value::String(s)) if s.contains("${") => {
                self.err(
                    codes::TEMPLATE_OBJECT,
                    format!("resource {id}: apiVersion must be a literal, not an expression"),
                    &tp.key("apiVersion"),
                    Some("kro needs to know the kind of every resource before evaluating anything"),
                );
                None
            }
            // kro's ExtractGVKFromUnstructured parses it with apimachinery's ParseGroupVersion:
            // `version` or `group/version`, no more than one slash.
            Some(Value::String(s)) if s.matches('/').count() > 1 => {
                self.err(
                    codes::TEMPLATE_OBJECT,
                    format!("failed to extract GVK from resource {id}: invalid apiVersion format {s:?}: unexpected GroupVersion string: {s}"),
                    &tp.key("apiVersion"),
                    Some("write apiVersion as group/version (apps/v1) or a core version (v1)"),
                );
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.err(codes::TEMPLATE_OBJECT, format!("resource {id} is not a valid Kubernetes object: apiVersion field is not a string"), &tp.key("apiVersion"), hint);
                None
            }
        };
        let kind = match obj.get("kind") {
            None => {
                self.err(
                    codes::TEMPLATE_OBJECT,
                    format!("resource {id} is not a valid Kubernetes object: kind field not found"),
                    tp,
                    hint,
                );
                None
            }
            Some(Value::String(s)) if s.contains("${") => {
                self.err(
                    codes::TEMPLATE_OBJECT,
                    format!("resource {id}: kind must be a literal, not an expression"),
                    &tp.key("kind"),
                    None,
                );
                None
            }
            // kro's ExtractGVKFromUnstructured: the kind, lowercased, is a DNS-1035 label.
            Some(Value::String(s)) if !is_dns1035_label(&s.to_lowercase()) => {
                self.err(
                    codes::TEMPLATE_OBJECT,
                    format!("failed to extract GVK from resource {id}: invalid kind {s:?} (must be a valid DNS-1035 label when lowercased)"),
                    &tp.key("kind"),
                    Some("a kind is a name such as ConfigMap: a letter, then letters, digits or dashes, at most 63"),
                );
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => {
                self.err(codes::TEMPLATE_OBJECT, format!("resource {id} is not a valid Kubernetes object: kind field is not a string"), &tp.key("kind"), hint);
                None
            }
        };
        match obj.get("metadata") {
            None => self.err(
                codes::TEMPLATE_OBJECT,
                format!("resource {id} is not a valid Kubernetes object: metadata field not found"),
                tp,
                hint,
            ),
            Some(Value::Object(md)) => {
                for key in ["labels", "annotations"] {
                    if let Some(Value::Object(entries)) = md.get(key) {
                        for k in entries.keys() {
                            if k.starts_with("kro.run/") || k.starts_with("internal.kro.run/") {
                                let what = if key == "labels" {
                                    "label"
                                } else {
                                    "annotation"
                                };
                                self.err(
                                    codes::RESERVED_LABEL,
                                    format!("invalid {what} for resource {id:?}. {key} with prefix \"kro.run/\" (or \"internal.kro.run/\") are reserved for internal use"),
                                    &tp.key("metadata").key(key).key(k),
                                    Some("use another prefix"),
                                );
                            }
                        }
                    }
                }
            }
            Some(Value::String(s)) if s.contains("${") => {}
            Some(_) => self.err(
                codes::TEMPLATE_OBJECT,
                format!(
                    "resource {id} is not a valid Kubernetes object: metadata field is not a map"
                ),
                &tp.key("metadata"),
                hint,
            ),
        }
        let (Some(av), Some(k)) = (api_version, kind) else {
            return None;
        };
        let schema = self.schemas.lookup(&av, &k);
        if let Some(ks) = &schema {
            for (path, msg) in ks.check_literal(t) {
                self.err(
                    codes::TEMPLATE_SCHEMA,
                    format!(
                        "failed to extract CEL expressions from schema for resource {id}: {msg}"
                    ),
                    &tp.join(&path),
                    Some(&format!(
                        "check the field against the {k} ({av}) API schema"
                    )),
                );
            }
        }
        let namespaced = schema
            .map(|ks| ks.namespaced)
            .unwrap_or_else(|| scopes.is_namespaced(&av, &k));
        // kro's validateTemplateConstraints: a cluster-scoped resource must not have the key at
        // all; a namespaced one of a cluster-scoped instance needs a non-blank string there.
        let namespace = obj.get("metadata").and_then(|m| m.get("namespace"));
        let has_namespace = namespace.is_some();
        let sets_namespace = namespace
            .and_then(Value::as_str)
            .is_some_and(|n| !n.trim().is_empty());
        if !namespaced && has_namespace {
            self.err(
                codes::NAMESPACE,
                format!("resource {id:?} is cluster-scoped and must not set metadata.namespace"),
                &tp.key("metadata").key("namespace"),
                Some("remove metadata.namespace"),
            );
        }
        if namespaced && !instance_namespaced && !sets_namespace {
            self.err(
                codes::NAMESPACE,
                format!("resource {id:?} is namespaced and must set metadata.namespace when the instance CRD is cluster-scoped"),
                &tp.key("metadata"),
                Some("set metadata.namespace on the template"),
            );
        }
        Some(namespaced)
    }

    fn check_external(&mut self, e: &Value, id: &str, ep: &FieldPath, scopes: &Scopes) -> bool {
        let av = e.get("apiVersion").and_then(Value::as_str);
        let kind = e.get("kind").and_then(Value::as_str);
        if av.is_none() || kind.is_none() {
            self.err(
                codes::RESOURCE_SHAPE,
                format!("resource {id:?}: externalRef needs apiVersion and kind"),
                ep,
                None,
            );
        }
        let md = e.get("metadata");
        let has_name = md.and_then(|m| m.get("name")).is_some_and(|v| !v.is_null());
        let has_selector = md
            .and_then(|m| m.get("selector"))
            .is_some_and(|v| !v.is_null());
        if has_name == has_selector {
            self.err(codes::RESOURCE_SHAPE, format!("resource {id:?}: externalRef: exactly one of name or selector must be provided"), &ep.key("metadata"), None);
        }
        match (av, kind) {
            (Some(a), Some(k)) => scopes.is_namespaced(a, k),
            _ => true,
        }
    }

    /// Unknown identifiers, iterator rules, dependencies, forEach identity.
    fn check_references(&mut self, node: &mut Node, ids: &[String], iterators: &[String]) {
        let id = node.id.clone();
        let all = Scope { ids, iterators };
        let no_iter = Scope {
            ids,
            iterators: &[],
        };
        let mut deps = BTreeSet::new();

        let record = |this: &mut Self,
                      e: &Expr,
                      scope: &Scope<'_>,
                      what: &str,
                      deps: &mut BTreeSet<usize>| {
            let mut unknown = Vec::new();
            for root in &e.compiled.refs.roots {
                if root == "schema" || scope.iterators.contains(root) {
                    continue;
                }
                if let Some(i) = scope.ids.iter().position(|x| x == root) {
                    deps.insert(i);
                } else {
                    unknown.push(root.clone());
                }
            }
            if !unknown.is_empty() {
                let near = unknown.iter().find_map(|u| {
                    crate::suggest::nearest(
                        u,
                        scope
                            .ids
                            .iter()
                            .map(String::as_str)
                            .chain(std::iter::once("schema")),
                    )
                });
                let hint = if unknown
                    .iter()
                    .any(|u| u == crate::expr::library::runtime::VAR)
                {
                    "runtime is only available in status.conditions expressions".to_string()
                } else if iterators.iter().any(|it| unknown.contains(it)) {
                    "forEach iterators are independent: one dimension cannot read another"
                        .to_string()
                } else if let Some(n) = near {
                    format!(
                        "{} (expressions may reference schema and the ids of other resources)",
                        crate::suggest::did_you_mean(n)
                    )
                } else {
                    "expressions may reference schema and the ids of other resources".to_string()
                };
                let code = if iterators.iter().any(|it| unknown.contains(it))
                    && what.starts_with("forEach")
                {
                    codes::FOREACH_ITERATOR_REFERENCE
                } else {
                    codes::UNKNOWN_IDENTIFIER
                };
                // Only when the hint names it (not the runtime or iterator hints).
                let suggested = near.filter(|n| hint.starts_with(&crate::suggest::did_you_mean(n)));
                this.errors.push(this.doc.diag(
                    crate::suggest::suggesting(
                        Diagnostic::error(code, format!("resource {id:?} {what}: expression {:?} references unknown identifiers: [{}]", e.source(), unknown.join(", ")))
                            .with_hint(hint),
                        suggested,
                    ),
                    &e.path,
                ));
            }
        };

        if let NodeKind::Template(t) = &node.kind {
            for h in &t.holes {
                for e in h.exprs() {
                    record(self, e, &all, "template", &mut deps);
                }
            }
        }
        if let NodeKind::External(t) = &node.kind {
            for h in &t.holes {
                for e in h.exprs() {
                    record(self, e, &no_iter, "externalRef", &mut deps);
                }
            }
        }
        for (_, e) in &node.for_each {
            record(self, e, &no_iter, "forEach", &mut deps);
        }
        for e in &node.include_when {
            record(self, e, &no_iter, "includeWhen", &mut deps);
        }
        // readyWhen sees only the resource itself (`each` for a collection); it adds no dependency.
        for e in &node.ready_when {
            let own: &str = if !node.is_collection() { &id } else { "each" };
            let unknown: Vec<_> = e
                .compiled
                .refs
                .roots
                .iter()
                .filter(|r| r.as_str() != own)
                .cloned()
                .collect();
            if !unknown.is_empty() {
                self.errors.push(
                    self.doc.diag(
                        Diagnostic::error(
                            codes::UNKNOWN_IDENTIFIER,
                            format!(
                                "resource {id:?} readyWhen: references unknown identifiers: [{}]",
                                unknown.join(", ")
                            ),
                        )
                        .with_hint(if node.for_each.is_empty() {
                            "readyWhen may only reference the resource itself"
                        } else {
                            "readyWhen of a collection reads each item as `each`"
                        }),
                        &e.path,
                    ),
                );
            }
        }

        // Every forEach dimension must show up in the name (or namespace) so items are distinct.
        if let NodeKind::Template(t) = &node.kind {
            let identity_roots: BTreeSet<&String> = t
                .holes
                .iter()
                .filter(|h| {
                    let s = h.path.to_string();
                    s == "metadata.name" || (node.namespaced && s == "metadata.namespace")
                })
                .flat_map(|h| {
                    h.exprs()
                        .into_iter()
                        .flat_map(|e| e.compiled.refs.roots.iter())
                })
                .collect();
            let missing: Vec<&str> = node
                .for_each
                .iter()
                .map(|(it, _)| it.as_str())
                .filter(|it| !identity_roots.contains(&it.to_string()))
                .collect();
            if !missing.is_empty() {
                self.errors.push(self.doc.diag(
                    Diagnostic::error(codes::FOREACH_IDENTITY, format!("node {id:?}: all forEach dimensions must be used to produce a unique resource identity, missing: [{}]", missing.join(", ")))
                        .with_hint("use every iterator in metadata.name, e.g. ${schema.spec.name + '-' + region}"),
                    &node.path.key("template").key("metadata").key("name"),
                ));
            }
        }
        node.dependencies = deps;
    }

    /// Status expressions are not rendered offline, but they are checked: syntax and references.
    fn status(
        &mut self,
        sch: &Map<String, Value>,
        schema_path: &FieldPath,
        nodes: &[Node],
    ) -> Option<Template> {
        let written = sch.get("status").filter(|v| !v.is_null())?;
        let sp = schema_path.key("status");
        // kro's extractConditionExpressions: the author's `conditions` are taken out of the status
        // before anything else looks at it; they are expressions returning conditions, not fields.
        let mut status = written.clone();
        if let Some(c) = status
            .as_object_mut()
            .and_then(|m| m.shift_remove("conditions"))
        {
            self.status_conditions(&c, &sp.key("conditions"), nodes);
        }
        let status = &status;
        let fixed = typecheck::static_status_fields(status);
        if !fixed.is_empty() {
            let list: Vec<String> = fixed.iter().map(|p| p.to_string()).collect();
            self.err(
                codes::STATUS_STATIC,
                format!(
                    "failed to build instance status schema: status fields without expressions are not supported: [{}]",
                    list.join(", ")
                ),
                &sp.join(&fixed[0]),
                Some("status is computed from resources: write each field as ${...}"),
            );
        }
        let (t, diags) = self.compiler.template(status, &sp);
        self.errors.extend(diags);
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        for h in &t.holes {
            // kro's buildInstanceNode: a status field reads a resource or the schema (`${true}`
            // is a fixed value written as an expression).
            // (A root that is neither is reported below as unknown.)
            let reads_something = h.exprs().iter().any(|e| !e.compiled.refs.roots.is_empty());
            let first = h.exprs().first().map(|e| e.path.clone());
            if !reads_something {
                self.err(
                    codes::STATUS_STATIC,
                    format!(
                        "failed to create instance node: instance status field must refer to a resource or schema: status.{}",
                        h.path
                    ),
                    &first.unwrap_or_else(|| sp.join(&h.path)),
                    Some("status is computed from resources: read a resource or schema in the expression, or drop the field"),
                );
            }
            for e in h.exprs() {
                let unknown: Vec<_> = e
                    .compiled
                    .refs
                    .roots
                    .iter()
                    .filter(|r| r.as_str() != "schema" && !ids.contains(&r.as_str()))
                    .cloned()
                    .collect();
                if !unknown.is_empty() {
                    let near = unknown.iter().find_map(|u| {
                        crate::suggest::nearest(u, ids.iter().copied().chain(["schema"]))
                    });
                    let hint = match near {
                        _ if unknown
                            .iter()
                            .any(|u| u == crate::expr::library::runtime::VAR) =>
                        {
                            "runtime is only available in status.conditions expressions".into()
                        }
                        Some(n) => format!(
                            "{} (status expressions may reference schema and resource ids)",
                            crate::suggest::did_you_mean(n)
                        ),
                        None => "status expressions may reference schema and resource ids".into(),
                    };
                    let suggested =
                        near.filter(|n| hint.starts_with(&crate::suggest::did_you_mean(n)));
                    self.errors.push(self.doc.diag(
                        crate::suggest::suggesting(
                            Diagnostic::error(codes::UNKNOWN_IDENTIFIER, format!("status field {:?} expression {:?}: references unknown identifiers: [{}]", h.path.to_string(), e.source(), unknown.join(", ")))
                                .with_hint(hint),
                            suggested,
                        ),
                        &e.path,
                    ));
                }
            }
        }
        Some(t)
    }

    /// `spec.schema.status.conditions`: a list of standalone expressions, each returning a
    /// condition or a list of them (kro's `extractConditionExpressions` and `buildConditions`).
    fn status_conditions(&mut self, v: &Value, cp: &FieldPath, nodes: &[Node]) {
        let hint = "write each entry as one ${runtime.newCondition({type: 'Name', status: 'True', reason: 'Why', message: 'What'})}";
        let Some(items) = v.as_array() else {
            self.err(
                codes::STATUS_CONDITION,
                format!(
                    "failed to build instance status schema: failed to extract conditions block: status.conditions must be a list, got {}",
                    json_kind(v)
                ),
                cp,
                Some(hint),
            );
            return;
        };
        let mut exprs = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let p = cp.index(i);
            if !item.is_string() {
                self.err(
                    codes::STATUS_CONDITION,
                    format!("failed to build instance status schema: failed to extract conditions block: status.conditions[{i}] must be a CEL expression string, got {}", json_kind(item)),
                    &p,
                    Some(hint),
                );
                continue;
            }
            match self
                .compiler
                .standalone(item, &p, "invalid conditions block")
            {
                Ok(e) => exprs.push(e),
                Err(d) => self.errors.push(d),
            }
        }
        let ids: Vec<&str> = nodes.iter().map(|n| n.id.as_str()).collect();
        let mut sound = true;
        for e in &exprs {
            let unknown: Vec<_> = e
                .compiled
                .refs
                .roots
                .iter()
                .filter(|r| {
                    !["schema", crate::expr::library::runtime::VAR].contains(&r.as_str())
                        && !ids.contains(&r.as_str())
                })
                .cloned()
                .collect();
            if !unknown.is_empty() {
                sound = false;
                self.errors.push(self.doc.diag(
                    Diagnostic::error(
                        codes::UNKNOWN_IDENTIFIER,
                        format!(
                            "failed to build instance conditions: condition {:?}: references unknown identifiers: [{}]",
                            e.source(),
                            unknown.join(", ")
                        ),
                    )
                    .with_hint("condition expressions may reference runtime, schema and resource ids"),
                    &e.path,
                ));
            }
        }
        if sound {
            for (i, msg) in super::conditions::validate(&exprs) {
                self.err(
                    codes::STATUS_CONDITION,
                    format!("failed to build instance conditions: {msg}"),
                    &exprs[i].path,
                    Some("each conditions entry declares its own types; read kro's built-in ones (InstanceManaged, GraphResolved, ResourcesReady, Ready) with runtime.condition(schema, 'Ready')"),
                );
            }
        }
        self.condition_exprs = exprs;
    }

    fn order(&mut self, nodes: &[Node], ids: &[String]) -> Option<Vec<usize>> {
        // Diagnostics from missing nodes (errors above) would make indices disagree.
        if nodes.len() != ids.len() {
            return None;
        }
        let mut g = Graph::new(ids.to_vec());
        for (i, n) in nodes.iter().enumerate() {
            for &d in &n.dependencies {
                if d == i {
                    self.err(
                        codes::SELF_REFERENCE,
                        format!("resource {:?}: self references are not allowed", n.id),
                        &n.path,
                        Some("a resource cannot read its own fields; compute the value from schema instead"),
                    );
                } else {
                    g.add_dependency(i, d);
                }
            }
        }
        match g.topological_order() {
            Ok(o) => Some(o),
            Err(cycle) => {
                let first = &nodes[cycle[0]];
                self.err(
                    codes::CYCLE,
                    format!("graph contains a cycle: {}", format_cycle(&g, &cycle)),
                    &first.path,
                    Some("resources may not depend on each other in a loop; move the shared value into schema"),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod name_rule_tests {
    use regex::Regex;

    /// Each byte-wise check accepts exactly what kro's regular expression accepts.
    fn agree(check: fn(&str) -> bool, pattern: &str, s: &str) -> Result<(), String> {
        let want = Regex::new(pattern).unwrap().is_match(s);
        if check(s) == want {
            Ok(())
        } else {
            Err(format!("{pattern} on {s:?}: regex says {want}"))
        }
    }

    const UPPER: &str = r"^[A-Z][a-zA-Z0-9]*$";
    const LOWER: &str = r"^[a-z][a-zA-Z0-9]*$";
    const VERSION: &str = r"^v[0-9]+(alpha[0-9]+|beta[0-9]+)?$";
    const DNS1035: &str = r"^[a-z]([-a-z0-9]*[a-z0-9])?$";

    #[test]
    fn chosen_names() {
        for s in [
            "",
            "A",
            "a",
            "Ab9",
            "aB9",
            "9a",
            "A-b",
            "a_b",
            "Aé",
            "v",
            "v1",
            "v1alpha",
            "v1alpha1",
            "v10beta22",
            "v1gamma1",
            "v1alpha1beta1",
            "V1",
            "x1",
            "v1beta",
            "-a",
            "a-",
            "a-b",
            "a--b",
            "a1",
            "1",
            "ab\n",
            "web-app",
        ] {
            agree(super::is_upper_camel, UPPER, s).unwrap();
            agree(super::is_lower_camel, LOWER, s).unwrap();
            agree(super::is_kro_version, VERSION, s).unwrap();
            if s.len() <= 63 {
                agree(super::is_dns1035_label, DNS1035, s).unwrap();
            }
        }
        assert!(super::is_dns1035_label(&"a".repeat(63)));
        assert!(!super::is_dns1035_label(&"a".repeat(64)));
    }

    proptest::proptest! {
        #[test]
        fn generated_names(s in "[a-zA-Z0-9_é-]{0,8}|v[0-9]{0,2}(alpha|beta|gamma)?[0-9]{0,2}[a-z]?") {
            agree(super::is_upper_camel, UPPER, &s).map_err(proptest::test_runner::TestCaseError::fail)?;
            agree(super::is_lower_camel, LOWER, &s).map_err(proptest::test_runner::TestCaseError::fail)?;
            agree(super::is_kro_version, VERSION, &s).map_err(proptest::test_runner::TestCaseError::fail)?;
            agree(super::is_dns1035_label, DNS1035, &s).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }
}
