//! What produced the output: the [`Origin`] of each unit (the input file and document, and what
//! kind of input it is), by which a door that writes files places the unit's objects, and the
//! provenance annotations every front-end writes on the objects it renders (`--provenance`).
//!
//! These describe a unit of output rather than how it is made, so they live below the
//! front-ends: kro (through `render`), component types and kurel packages write the same names,
//! and the pipeline and the doors read the same origins.

use serde_json::Value;

use crate::document::Document;

/// What produced a unit of output: a door that writes files (kpt, Flux) places the unit's objects
/// by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// What kind of input it is.
    pub kind: OriginKind,
    /// The input file (display name), or the kurel package directory.
    pub file: String,
    /// The document's index in its file (0 for a package).
    pub index: usize,
    /// The environment a component release is for; a kurel instance file's name with
    /// `--instances`.
    pub detail: Option<String>,
}

/// The kinds of [`Origin`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OriginKind {
    /// A document that passes through unchanged (the unit is that one document).
    Passthrough,
    /// A kro instance, replaced by its objects.
    Instance,
    /// A component rendered for one environment (the release's objects).
    Component,
    /// A project deployed to one environment by a ProjectReleaseBinding (upstream's project
    /// pipeline: the project's cell namespace and the rest of its type's objects).
    Project,
    /// A resource deployed to one environment by a ResourceReleaseBinding (upstream's resource
    /// pipeline: its type's objects).
    Resource,
    /// Documents of the component front-end that it passes through (not rendering inputs).
    ComponentPassthrough,
    /// A kurel package (one instance of it).
    Kurel,
    /// kro mode: a ResourceGraphDefinition shipped as it is, or its generated instance CRD.
    Definition,
}

impl Origin {
    /// The origin of a document of an input file.
    pub fn of(kind: OriginKind, doc: &Document) -> Self {
        Self {
            kind,
            file: doc.file().to_string(),
            index: doc.index,
            detail: None,
        }
    }
}

/// Annotation naming the definition that produced an object (`ResourceGraphDefinition/webapp`).
pub const PROVENANCE_DEFINITION: &str = "kiln.dev/definition";

/// Annotation naming the instance that produced an object (`WebApp/prod/shop`).
pub const PROVENANCE_INSTANCE: &str = "kiln.dev/instance";

/// Annotation naming the resource (node) of the definition that produced an object.
pub const PROVENANCE_NODE: &str = "kiln.dev/node";

/// Annotation on the objects of a nested instance: the enclosing instances and their nodes,
/// outermost first.
pub const PROVENANCE_NESTED_IN: &str = "kiln.dev/nested-in";

/// Add the provenance annotations to a rendered object (existing values are replaced: the
/// object's origin is a fact, not an author's choice).
pub fn annotate(obj: &mut Value, entries: &[(&str, &str)]) {
    let Some(md) = obj.as_object_mut().and_then(|o| {
        o.entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()))
            .as_object_mut()
    }) else {
        return;
    };
    // Sized for the entries: a map grown one entry at a time reallocates its entries and its
    // index table on the way (this runs for every rendered object).
    let fresh = || Value::Object(serde_json::Map::with_capacity(entries.len()));
    let ann = md.entry("annotations").or_insert_with(fresh);
    if !ann.is_object() {
        *ann = fresh();
    }
    let ann = ann.as_object_mut().expect("made an object above");
    for (k, v) in entries {
        ann.insert((*k).to_string(), Value::String((*v).to_string()));
    }
}
