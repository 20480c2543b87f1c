//! A YAML text as nodes with byte ranges, read as far as it parses.
//!
//! The editor's text is often half-typed: the reader (`document`) refuses it whole, but an editor
//! still needs the part before the mistake. This walks the same parser's events, keeps every node
//! it sees with its span, and closes whatever is still open where the parser gives up.

use std::ops::Range;

use serde_json::{Map, Value};
use serde_saphyr::granit_parser::{Event, Parser, ScalarStyle};

use crate::fieldpath::{FieldPath, Segment};

/// One node with where it is written.
#[derive(Debug, Clone, PartialEq)]
pub struct Node {
    /// From its first to its last character (a scalar's quotes included).
    pub range: Range<usize>,
    /// What it is.
    pub body: Body,
}

/// A node's contents.
#[derive(Debug, Clone, PartialEq)]
pub enum Body {
    /// A scalar, decoded, and whether it was written plain (so `1` is a number).
    Scalar(String, bool),
    /// Key–value entries in order.
    Map(Vec<(Node, Node)>),
    /// Items in order.
    Seq(Vec<Node>),
    /// An alias (`*x`): nothing the editor follows.
    Alias,
}

/// One document of a text: where it starts and its root node.
#[derive(Debug, Clone, PartialEq)]
pub struct Doc {
    /// Byte offset of its first event (its `---`, or its first node).
    pub start: usize,
    /// Its root node.
    pub root: Node,
}

/// An open collection while reading.
enum Open {
    Map(usize, Vec<(Node, Node)>, Option<Node>),
    Seq(usize, Vec<Node>),
}

/// The documents of `text`, as far as it parses (a document cut by a syntax error keeps the
/// nodes before it).
pub fn parse(text: &str) -> Vec<Doc> {
    let offset = |m: &serde_saphyr::granit_parser::Marker| {
        m.byte_offset()
            .unwrap_or_else(|| {
                text.char_indices()
                    .nth(m.index())
                    .map_or(text.len(), |(b, _)| b)
            })
            .min(text.len())
    };
    let mut docs = Vec::new();
    let mut stack: Vec<Open> = Vec::new();
    let mut doc_start: Option<usize> = None;
    let mut last_end = 0usize;
    let mut parser = Parser::new_from_str(text);
    // The parser stops at its first error: what came before is kept.
    while let Some(Ok((event, span))) = parser.next() {
        let (start, end) = (
            offset(&span.start),
            offset(&span.end).max(offset(&span.start)),
        );
        let done = match event {
            Event::StreamEnd => break,
            Event::DocumentStart(..) => {
                doc_start = Some(start);
                None
            }
            Event::Scalar(v, style, ..) => {
                last_end = end;
                Some(Node {
                    range: start..end,
                    body: Body::Scalar(v.into_owned(), style == ScalarStyle::Plain),
                })
            }
            Event::Alias(_) => {
                last_end = end;
                Some(Node {
                    range: start..end,
                    body: Body::Alias,
                })
            }
            Event::MappingStart(..) => {
                stack.push(Open::Map(start, Vec::new(), None));
                None
            }
            Event::SequenceStart(..) => {
                stack.push(Open::Seq(start, Vec::new()));
                None
            }
            Event::MappingEnd | Event::SequenceEnd => stack.pop().map(|o| close(o, last_end)),
            _ => None,
        };
        if let Some(node) = done {
            add(&mut stack, &mut docs, &mut doc_start, node);
        }
    }
    // Whatever the parser did not finish ends where its last node did.
    while let Some(o) = stack.pop() {
        let node = close(o, last_end);
        add(&mut stack, &mut docs, &mut doc_start, node);
    }
    docs
}

fn close(o: Open, last_end: usize) -> Node {
    match o {
        Open::Map(start, mut entries, key) => {
            if let Some(k) = key {
                // A key without its value yet: an empty scalar after it.
                let at = k.range.end;
                entries.push((
                    k,
                    Node {
                        range: at..at,
                        body: Body::Scalar(String::new(), true),
                    },
                ));
            }
            let end = entries
                .last()
                .map_or(last_end, |(_, v)| v.range.end)
                .max(start);
            Node {
                range: start..end,
                body: Body::Map(entries),
            }
        }
        Open::Seq(start, items) => {
            let end = items.last().map_or(last_end, |v| v.range.end).max(start);
            Node {
                range: start..end,
                body: Body::Seq(items),
            }
        }
    }
}

fn add(stack: &mut [Open], docs: &mut Vec<Doc>, doc_start: &mut Option<usize>, node: Node) {
    match stack.last_mut() {
        Some(Open::Map(_, entries, key)) => match key.take() {
            Some(k) => entries.push((k, node)),
            None => *key = Some(node),
        },
        Some(Open::Seq(_, items)) => items.push(node),
        None => {
            // An empty document is not counted, as the reader does not count it.
            if !matches!(&node.body, Body::Scalar(s, _) if s.is_empty()) {
                docs.push(Doc {
                    start: doc_start.take().unwrap_or(node.range.start),
                    root: node,
                });
            }
        }
    }
}

impl Node {
    /// A scalar's text.
    pub fn str(&self) -> Option<&str> {
        match &self.body {
            Body::Scalar(s, _) => Some(s),
            _ => None,
        }
    }

    /// The value of a key of a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.entry(key).map(|(_, v)| v)
    }

    /// The key and value of a key of a mapping.
    pub fn entry(&self, key: &str) -> Option<(&Node, &Node)> {
        match &self.body {
            Body::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.str() == Some(key))
                .map(|(k, v)| (k, v)),
            _ => None,
        }
    }

    /// The items of a sequence (none for anything else).
    pub fn items(&self) -> &[Node] {
        match &self.body {
            Body::Seq(items) => items,
            _ => &[],
        }
    }

    /// The node at a path of keys and indexes.
    pub fn at(&self, path: &[Segment]) -> Option<&Node> {
        path.iter().try_fold(self, |n, seg| match seg {
            Segment::Key(k) => n.get(k),
            Segment::Index(i) => n.items().get(*i),
        })
    }

    /// The value as JSON, plain scalars resolved the way YAML's core schema does for the types
    /// the front-ends read (null, booleans, numbers).
    pub fn value(&self) -> Value {
        match &self.body {
            Body::Scalar(s, true) => plain(s),
            Body::Scalar(s, false) => Value::String(s.clone()),
            Body::Map(entries) => {
                let mut m = Map::new();
                for (k, v) in entries {
                    if let Some(k) = k.str() {
                        m.insert(k.to_string(), v.value());
                    }
                }
                Value::Object(m)
            }
            Body::Seq(items) => Value::Array(items.iter().map(Node::value).collect()),
            Body::Alias => Value::Null,
        }
    }
}

fn plain(s: &str) -> Value {
    match s {
        "" | "~" | "null" | "Null" | "NULL" => Value::Null,
        "true" | "True" | "TRUE" => Value::Bool(true),
        "false" | "False" | "FALSE" => Value::Bool(false),
        _ => {
            if let Ok(i) = s.parse::<i64>() {
                Value::from(i)
            } else if let Some(f) = s
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite() && s.bytes().any(|b| b.is_ascii_digit()))
            {
                serde_json::Number::from_f64(f).map_or(Value::String(s.to_string()), Value::Number)
            } else {
                Value::String(s.to_string())
            }
        }
    }
}

/// Where an offset is in a document: the path of the deepest node containing it, and whether it
/// is on that node's key (the last segment) rather than its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Place<'a> {
    /// The path from the root.
    pub path: FieldPath,
    /// The node at the path.
    pub node: &'a Node,
    /// The key node when the offset is on a key.
    pub key: Option<&'a Node>,
}

/// The place of `offset` in `root`.
pub fn place(root: &Node, offset: usize) -> Place<'_> {
    let mut path = FieldPath::root();
    let mut node = root;
    loop {
        let next = match &node.body {
            Body::Map(entries) => entries.iter().find_map(|(k, v)| {
                if contains(&k.range, offset) {
                    let key = k.str()?;
                    Some((Segment::Key(key.to_string()), v, Some(k)))
                } else if contains(&v.range, offset) {
                    Some((Segment::Key(k.str()?.to_string()), v, None))
                } else {
                    None
                }
            }),
            Body::Seq(items) => items
                .iter()
                .enumerate()
                .find(|(_, v)| contains(&v.range, offset))
                .map(|(i, v)| (Segment::Index(i), v, None)),
            _ => None,
        };
        match next {
            Some((seg, v, Some(k))) => {
                path.0.push(seg);
                return Place {
                    path,
                    node: v,
                    key: Some(k),
                };
            }
            Some((seg, v, None)) => {
                path.0.push(seg);
                node = v;
            }
            None => {
                return Place {
                    path,
                    node,
                    key: None,
                }
            }
        }
    }
}

/// Whether a range holds an offset, its end included (the cursor after the last character).
pub fn contains(r: &Range<usize>, offset: usize) -> bool {
    r.start <= offset && offset <= r.end
}

/// The document of `docs` that `offset` is in: the last one starting at or before it.
pub fn doc_at(docs: &[Doc], offset: usize) -> Option<(usize, &Doc)> {
    docs.iter()
        .enumerate()
        .take_while(|(_, d)| d.start <= offset)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_have_the_spans_they_are_written_at() {
        let text = "a: 1\nb:\n  - x\n  - 'y'\n";
        let docs = parse(text);
        assert_eq!(docs.len(), 1);
        let root = &docs[0].root;
        let b = root.get("b").unwrap();
        assert_eq!(&text[b.items()[1].range.clone()], "'y'");
        assert_eq!(root.value(), serde_json::json!({"a": 1, "b": ["x", "y"]}));
        let p = place(root, text.find('x').unwrap());
        assert_eq!(p.path.to_string(), "b[0]");
    }

    #[test]
    fn a_broken_text_keeps_what_came_before_the_mistake() {
        let text = "kind: X\nspec:\n  a: 1\n  b: [\n";
        let docs = parse(text);
        assert_eq!(docs.len(), 1);
        let root = &docs[0].root;
        assert_eq!(root.get("kind").and_then(Node::str), Some("X"));
        assert_eq!(
            root.at(&[Segment::Key("spec".into()), Segment::Key("a".into())])
                .map(Node::value),
            Some(serde_json::json!(1))
        );
    }

    #[test]
    fn documents_are_found_by_offset() {
        let text = "a: 1\n---\nb: 2\n";
        let docs = parse(text);
        assert_eq!(docs.len(), 2);
        assert_eq!(doc_at(&docs, text.find('b').unwrap()).map(|d| d.0), Some(1));
        assert_eq!(doc_at(&docs, 0).map(|d| d.0), Some(0));
    }
}
