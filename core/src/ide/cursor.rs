//! What is under the cursor: the file's text parsed once, the document the offset is in, the
//! YAML field path there, and the `${…}` around it, if any.

use super::expression::{floor, hole_at, line_around, Hole};
use super::tree::{contains, doc_at, parse, place, Body, Doc, Node, Place};
use super::Texts;

/// A file's text, parsed, and an offset into it (moved back to a character boundary and into
/// the text, so any offset an editor sends is usable).
pub struct Cursor<'t> {
    /// The text.
    pub text: &'t str,
    /// Its documents, as far as they parse.
    pub docs: Vec<Doc>,
    /// The offset.
    pub offset: usize,
}

impl<'t> Cursor<'t> {
    /// The cursor at `offset` of `file`, `None` when the workspace has no such file.
    pub fn new(texts: &'t Texts, file: &str, offset: usize) -> Option<Self> {
        let text = texts.get(file)?.as_str();
        Some(Self {
            text,
            docs: parse(text),
            offset: floor(text, offset),
        })
    }

    /// The root of the document the offset is in.
    pub fn root(&self) -> Option<&Node> {
        doc_at(&self.docs, self.offset).map(|(_, d)| &d.root)
    }

    /// Where the offset is in its document.
    pub fn place(&self) -> Option<Place<'_>> {
        self.root().map(|r| place(r, self.offset))
    }

    /// The `${…}` around the offset: looked for in the scalar the offset is in, or in its line
    /// when the YAML does not parse that far.
    pub fn hole(&self) -> Option<Hole> {
        let region = match self.place() {
            Some(Place {
                node:
                    n @ Node {
                        body: Body::Scalar(..),
                        ..
                    },
                key: None,
                ..
            }) if contains(&n.range, self.offset) && !n.range.is_empty() => n.range.clone(),
            _ => line_around(self.text, self.offset),
        };
        hole_at(self.text, region, self.offset)
    }
}
