//! The component types and kurel front-ends, for the editor.

use super::cursor::Cursor;
use super::tree::Node;
use super::{Completion, Hover, Location, Symbol, Texts};
use std::ops::Range;

/// Hover in a document that is not an RGD.
pub fn hover(_texts: &Texts, _cur: &Cursor<'_>, _root: &Node) -> Option<Hover> {
    None
}

/// Completion inside a `${…}` of a document that is not an RGD.
pub fn complete(
    _texts: &Texts,
    _cur: &Cursor<'_>,
    _root: &Node,
    _receiver: Option<&str>,
    _replace: &Range<usize>,
) -> Vec<Completion> {
    Vec::new()
}

/// What the cursor names in a document that is not an RGD.
pub fn target(
    _texts: &Texts,
    _file: &str,
    _cur: &Cursor<'_>,
    _root: &Node,
) -> Option<Vec<Location>> {
    None
}

/// The outline of a document that is not an RGD.
pub fn symbols(_file: &str, _root: &Node) -> Option<Symbol> {
    None
}
