//! The first check of every run: each document is a Kubernetes object (a mapping with a
//! non-empty string apiVersion and kind), before any front-end classifies it.

use rayon::prelude::*;
use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::fieldpath::FieldPath;

use super::Document;

/// Check that every document is an object with a string apiVersion and kind.
pub fn check_objects(docs: &[Document]) -> Diagnostics {
    // On every core, in document order: this reads every document of the run.
    let each: Vec<Vec<Diagnostic>> = docs.par_iter().map(check_document).collect();
    let mut diags = Diagnostics::new();
    for d in each {
        diags.extend(d);
    }
    diags
}

/// [`check_objects`] of one document.
fn check_document(d: &Document) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    let root = FieldPath::root();
    if !d.value.is_object() {
        diags.push(
            d.diag(
                Diagnostic::error(codes::NOT_AN_OBJECT, "document is not a mapping").with_hint(
                    "every document must be a Kubernetes object with apiVersion and kind",
                ),
                &root,
            ),
        );
        return diags;
    }
    for key in ["apiVersion", "kind"] {
        match d.value.get(key) {
            Some(Value::String(s)) if !s.is_empty() => {}
            Some(_) => diags.push(
                d.diag(
                    Diagnostic::error(
                        codes::NOT_AN_OBJECT,
                        format!("{key} must be a non-empty string"),
                    )
                    .with_hint(if key == "kind" {
                        "e.g. kind: ConfigMap"
                    } else {
                        "e.g. apiVersion: apps/v1"
                    }),
                    &root.key(key),
                ),
            ),
            None => diags.push(
                d.diag(
                    Diagnostic::error(codes::NOT_AN_OBJECT, format!("document has no {key}"))
                        .with_hint(
                            "every document must be a Kubernetes object with apiVersion and kind",
                        ),
                    &root,
                ),
            ),
        }
    }
    diags
}
