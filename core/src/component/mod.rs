//! Component types front-end (`openchoreo.dev/v1alpha1`): ComponentTypeDefinitions, Addons,
//! Components, Workloads, ComponentDeployments and ComponentEnvSnapshots rendered into one Release
//! per environment. See `docs/component-types.md`.

use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::Document;

/// Settings of a component render.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The environment to render (`kiln render --env NAME`).
    pub env: Option<String>,
}

/// What a component render produced.
#[derive(Debug, Clone, Default)]
pub struct Rendered {
    /// Objects to print, in the documented order.
    pub objects: Vec<Value>,
    /// Warnings (errors fail the render instead).
    pub warnings: Vec<Diagnostic>,
}

/// Whether a document belongs to this front-end.
pub fn is_component_document(d: &Document) -> bool {
    d.api_version()
        .is_some_and(|v| v.starts_with("openchoreo.dev/"))
}

/// Render every Component (or snapshot) in the documents.
pub fn render(docs: &[&Document], _opts: &Options) -> Result<Rendered, Diagnostics> {
    if docs.is_empty() {
        return Ok(Rendered::default());
    }
    Err(Diagnostics::from(Diagnostic::error(
        codes::INTERNAL,
        "component types are not implemented yet",
    )))
}

/// The JSON Schema of each ComponentTypeDefinition's or Addon's parameters, by name.
pub fn json_schemas(_docs: &[Document]) -> Result<Vec<(String, Value)>, Diagnostics> {
    Ok(Vec::new())
}
