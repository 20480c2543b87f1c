//! What an editor asks of kiln, answered from the same analysis `kiln validate` runs: the
//! language server (`kiln lsp`) is a door that translates these answers into the protocol.
//!
//! Everything here speaks byte offsets into a file's text (UTF-8), never the protocol's
//! UTF-16 positions: converting is the door's job. Files are named the way diagnostics name
//! them, and the texts are the editor's (unsaved buffers win over what is on disk).
//!
//! - [`workspace`]: the request `kiln validate` would read for a folder, kept in memory, and
//!   its diagnostics with exact ranges.
//! - [`hover`](fn@hover), [`complete`](fn@complete), [`definition`], [`references`],
//!   [`symbols`](fn@symbols), [`actions`](fn@actions): the questions asked at a position of
//!   one file, over the texts of the whole workspace.

use std::collections::BTreeMap;
use std::ops::Range;

mod actions;
mod complete;
mod component;
mod cursor;
mod expression;
mod goto;
mod hover;
mod kro;
mod kurel;
mod symbols;
mod tree;
pub mod workspace;

pub use actions::actions;
pub use complete::complete;
pub use goto::{definition, references};
pub use hover::hover;
pub use symbols::symbols;

/// The texts of the workspace: file (as diagnostics name it) → its current text.
pub type Texts = BTreeMap<String, String>;

/// What to show for the thing under the cursor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hover {
    /// The span the answer is about (the whole `${…}` part, the field, the id).
    pub range: Range<usize>,
    /// Markdown.
    pub markdown: String,
}

/// What a completion item is, for the editor's icon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionKind {
    /// A field of an object (`spec.replicas`).
    Field,
    /// A resource id of a graph or a ComponentType.
    Resource,
    /// A CEL function or macro.
    Function,
    /// A variable in scope (`schema`, `parameters`, `values`, …).
    Variable,
    /// A SimpleSchema marker (`default=`, `minimum=`, …).
    Marker,
}

/// One completion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    /// What the list shows.
    pub label: String,
    /// Its kind.
    pub kind: CompletionKind,
    /// One line: its type or declaration.
    pub detail: Option<String>,
    /// The span the insertion replaces (the partial word typed so far).
    pub replace: Range<usize>,
    /// The text inserted.
    pub insert: String,
}

/// A span of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// The file, as diagnostics name it.
    pub file: String,
    /// Byte range.
    pub range: Range<usize>,
}

/// What a document symbol is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SymbolKind {
    /// A definition (an RGD, a ComponentType, a Trait, a kurel package).
    Definition,
    /// A resource of a graph, a ComponentType or a package.
    Resource,
    /// A trait of a ComponentType.
    Trait,
    /// A kurel patch.
    Patch,
    /// A declared parameter or schema field.
    Parameter,
}

/// One entry of a file's outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    /// The name shown (a resource id, a definition's name).
    pub name: String,
    /// One line beside it (a kind).
    pub detail: Option<String>,
    /// Its kind.
    pub kind: SymbolKind,
    /// The whole entry.
    pub range: Range<usize>,
    /// The part to select (the name).
    pub selection: Range<usize>,
    /// Entries inside it.
    pub children: Vec<Symbol>,
}

/// One replacement of text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edit {
    /// Where.
    pub location: Location,
    /// The new text.
    pub text: String,
}

/// A mechanical fix the editor can apply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Action {
    /// What the menu shows ("Replace with `replicas`").
    pub title: String,
    /// The diagnostic code it fixes.
    pub code: Option<String>,
    /// The edits, applied together.
    pub edits: Vec<Edit>,
}

#[cfg(test)]
mod component_tests;
#[cfg(test)]
mod kurel_tests;
#[cfg(test)]
mod tests;
