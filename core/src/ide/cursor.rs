//! What is under the cursor: the file's text parsed once, the document the offset is in, the
//! YAML field path there, and the `${…}` around it, if any.

use super::expression::{floor, hole_at, line_around, unquote, Hole};
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
        self.hole_in().map(|(h, _)| h)
    }

    /// The CEL source of a part of the hole under the cursor as the reader decodes it: in a
    /// double-quoted scalar, `\"` is a quote (the part's offsets stay the written ones).
    pub fn decoded(&self, part: std::ops::Range<usize>) -> String {
        let written = &self.text[part];
        let quoted = self.hole_in().is_some_and(|(_, q)| q);
        if !quoted || !written.contains('\\') {
            return written.to_string();
        }
        // The reader's own decoding, on the part alone.
        match parse(&format!("\"{written}\""))
            .first()
            .map(|d| &d.root.body)
        {
            Some(Body::Scalar(s, _)) => s.clone(),
            _ => written.to_string(),
        }
    }

    /// The hole, and whether its scalar is double-quoted.
    fn hole_in(&self) -> Option<(Hole, bool)> {
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
            _ => {
                let line = line_around(self.text, self.offset);
                // A comment is no expression.
                if self.text[line.clone()].trim_start().starts_with('#') {
                    return None;
                }
                line
            }
        };
        let quoted = self.text.as_bytes().get(region.start) == Some(&b'"');
        let raw = &self.text[region.clone()];
        if quoted && raw.contains('\\') {
            if let Some((decoded, map)) = unquote(raw) {
                // Scanned as the reader decodes it, then mapped back to where it is written.
                let local = self.offset - region.start;
                let at = map
                    .iter()
                    .position(|&m| m >= local)
                    .unwrap_or(decoded.len());
                let at = at.min(decoded.len());
                let h = hole_at(&decoded, 0..decoded.len(), at)?;
                let back = |d: usize| region.start + map[d.min(map.len() - 1)];
                return Some((
                    Hole {
                        range: back(h.range.start)..back(h.range.end),
                        source: back(h.source.start)..back(h.source.end),
                    },
                    true,
                ));
            }
        }
        hole_at(self.text, region, self.offset).map(|h| (h, quoted))
    }
}
