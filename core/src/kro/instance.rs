//! Instances of the kinds RGDs define: defaulting and validation, as the API server would apply
//! the generated CRD, before anything is evaluated.

use serde_json::{json, Value};

use crate::diag::{codes, Diagnostic};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::observed::{Observed, SERVER_SET_METADATA};
use crate::schema;

use super::rgd::Rgd;

/// An instance ready to render: the value of `schema` in expressions and the namespace its children
/// inherit.
#[derive(Debug, Clone, PartialEq)]
pub struct PreparedInstance {
    /// The instance without `status`, with defaults applied.
    pub schema: Value,
    /// The namespace children inherit, if the instance has one.
    pub namespace: Option<String>,
}

/// Default and validate an instance. `default_namespace` stands in for the namespace a GitOps tool
/// would apply the instance in when the instance does not name one.
pub fn prepare(
    rgd: &Rgd,
    doc: &Document,
    default_namespace: Option<&str>,
) -> Result<PreparedInstance, Vec<Diagnostic>> {
    prepare_value(rgd, doc, doc.value.clone(), default_namespace)
}

/// [`prepare`] of `value`, the instance's content taken out of `doc` by a caller that has no
/// further use for it (no copy); `doc` places the diagnostics.
pub fn prepare_value(
    rgd: &Rgd,
    doc: &Document,
    mut v: Value,
    default_namespace: Option<&str>,
) -> Result<PreparedInstance, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let obj = v
        .as_object_mut()
        .expect("documents are checked to be mappings");
    obj.remove("status");

    let name_ok = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !name_ok {
        errors.push(
            doc.diag(
                Diagnostic::error(
                    codes::INSTANCE_INVALID,
                    format!("{} instance has no metadata.name", rgd.kind),
                )
                .with_hint("give the instance a name"),
                &FieldPath::root().key("metadata"),
            ),
        );
    }

    let namespace = if rgd.namespaced {
        let own = obj
            .get("metadata")
            .and_then(|m| m.get("namespace"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        // Its children inherit it: the API server's rule before anything is rendered in it.
        if let Some(problem) = own.as_deref().and_then(crate::names::namespace_problem) {
            errors.push(
                doc.diag(
                    Diagnostic::error(codes::NAMESPACE, problem)
                        .with_hint(crate::names::NAMESPACE_RULE),
                    &FieldPath::root().key("metadata").key("namespace"),
                ),
            );
        }
        let ns = own.or_else(|| default_namespace.map(str::to_string));
        if let (Some(ns), Some(Value::Object(md))) = (&ns, obj.get_mut("metadata")) {
            md.entry("namespace").or_insert_with(|| json!(ns));
        }
        ns
    } else {
        None
    };

    // Defaults, then validation, over the spec only: metadata and the rest are the API server's.
    rgd.instance_defaults.apply(&mut v);
    // An instance without spec is validated as an empty spec, so required fields are reported.
    let empty = json!({});
    let spec = v.get("spec").filter(|s| !s.is_null()).unwrap_or(&empty);
    let violations = schema::validate_at(&rgd.spec_schema, spec, &["spec"]);
    for viol in violations {
        errors.push(instance_violation(doc, viol));
    }
    if errors.is_empty() {
        Ok(PreparedInstance {
            schema: v,
            namespace,
        })
    } else {
        Err(errors)
    }
}

/// The value of `schema` in expressions: the prepared instance with, when observed state holds
/// its live counterpart (same group, kind, namespace and name), the metadata the API server set
/// on it (`uid`, `generation`, ...) that the file does not give. kro reads the instance from
/// the API server, so its expressions see those fields (kro `pkg/graph/builder.go` types
/// `schema.metadata` as the whole ObjectMeta); the file cannot have them. A value the file gives
/// is kept. Only expressions see this: the instance kiln ships (`--mode kro`) is the file's.
pub fn as_observed(rgd: &Rgd, prepared: &PreparedInstance, observed: &Observed) -> Option<Value> {
    let name = prepared.schema.pointer("/metadata/name")?.as_str()?;
    let api = format!("{}/{}", rgd.group, rgd.version);
    let ns = prepared.namespace.as_deref().unwrap_or("");
    let from = observed
        .get(&api, &rgd.kind, ns, name)?
        .get("metadata")?
        .as_object()?;
    let mut v = prepared.schema.clone();
    let md = v.get_mut("metadata")?.as_object_mut()?;
    for key in SERVER_SET_METADATA {
        if let Some(val) = from.get(*key) {
            md.entry(*key).or_insert_with(|| val.clone());
        }
    }
    Some(v)
}

fn instance_violation(doc: &Document, viol: schema::Violation) -> Diagnostic {
    let path = FieldPath::parse(&viol.path).unwrap_or_default();
    // The diagnostic carries the path; do not repeat it in the message.
    let message = viol
        .message
        .strip_prefix(&format!("{}: ", viol.path))
        .unwrap_or(&viol.message)
        .to_string();
    let hint = match viol.rule.as_str() {
        "required" => "set the field: the definition's schema marks it required=true".to_string(),
        "unknown field" | "additionalProperties" => {
            "the definition's schema has no such field: check the spelling".to_string()
        }
        rule => format!("the definition's schema constrains this field with {rule}"),
    };
    doc.diag(
        Diagnostic::error(codes::INSTANCE_INVALID, message).with_hint(hint),
        &path,
    )
}
