//! A fast reader for the common subset of block YAML, tried before serde-saphyr.
//!
//! Profiling a fleet of small instance files showed YAML parsing to be a third of kiln's
//! instructions, split between the general parser's scanner and serde's visitor layers. Almost
//! every file kiln reads is plain block YAML: mappings, sequences, one-line scalars, the odd flow
//! list. This module reads exactly that, straight into `serde_json::Value`, in one pass over the
//! lines, several times faster.
//!
//! The contract: [`parse`](crate::document::fast::parse) returns `Some(docs)` only when `docs` is what serde-saphyr (with the
//! options of `document::parse_yaml`) returns for the same text, value for value and key order
//! included, with null documents dropped as `parse_yaml` drops them. For anything it is not sure
//! about it returns `None` ("not sure"), and the caller parses the whole text with serde-saphyr
//! as before, so every diagnostic (syntax, duplicate keys, limits) still comes from there.
//! "Not sure" covers everything outside the subset below and everything near a reading limit.
//! `core/tests/yaml_fast.rs` and the `yaml_fast` fuzz target hold it to that.
//!
//! The subset:
//! - documents separated by `---` lines (alone or followed by a comment); no directives, no `...`;
//!   the root of a document is a block mapping or a block sequence (or nothing: a null document);
//! - full-line comments, blank lines, trailing comments after whitespace; `\n` or `\r\n` line
//!   ends; indentation by spaces only, no tabs outside quoted scalars and comments;
//! - block mappings whose keys are plain (`[A-Za-z0-9_./$-]`, not starting with `.`, `/` or `-`)
//!   or quoted, on one line; block sequences, including the compact `- key: value` and `- - x`
//!   forms and sequences in the same column as their parent key;
//! - one-line scalars: plain, single-quoted, double-quoted (every YAML escape but surrogates);
//! - one-line flow collections (`[a, "b", {k: v}]`, `[]`, `{}`), without implicit pairs.
//!
//! Not in it (so "not sure"): anchors and aliases, tags, merge keys, block scalars (`|`, `>`),
//! scalars spanning lines, complex keys (`?`), keys with other characters (spaces, `${…}`).
//!
//! Plain scalars are typed as serde-saphyr types them: null spellings, then YAML 1.1 booleans
//! (`yes`, `on`, `y`, any case), then integers, then floats, else text. Numbers are taken only in
//! the spellings whose value is plain (canonical decimals within 64 bits, legacy octal `0777`,
//! `-?d+.d+`); any other text some number syntax might accept (`1e3`, `0x1F`, `1_000`, `08`,
//! `.inf`, `1:30`) is "not sure". Text no number syntax accepts is a string (`1.0.0`, `cc-4`).

use serde_json::{Map, Number, Value};

use super::YamlLimits;

/// Why the fast path gave up. It carries nothing: the caller only needs to know to fall back.
struct NotSure;

type Res<T> = Result<T, NotSure>;

/// Deepest nesting the reader follows, whatever the limits say: it recurses once per level, and
/// real manifests (even CRD schemas) stay far below this. Deeper input goes to serde-saphyr.
const MAX_NESTING: usize = 100;

/// serde-saphyr buffers the comments between a `key:` or `-` and the node that follows them, and
/// refuses more than 32 (its `max_buffered_comment_events`). Well below that, to stay clear of it.
const MAX_PENDING_COMMENTS: usize = 16;

/// The scanner refuses implicit keys longer than 1,024 characters; bytes are at least as many.
const MAX_KEY_BYTES: usize = 512;

/// Read `text` as a YAML stream if it lies in the subset this module handles; `None` when it does
/// not (or when it comes near a limit of `limits`). See the module documentation for the
/// contract: a `Some` is exactly what serde-saphyr would return.
pub fn parse(text: &str, limits: &YamlLimits) -> Option<Vec<Value>> {
    let budget = limits.saphyr_budget();
    // Without aliases, scalar and comment bytes are bounded by the input size; keeping the input
    // below every byte budget means none of them can trip.
    let max_bytes = limits
        .max_input_bytes
        .min(budget.max_total_scalar_bytes)
        .min(budget.max_total_comment_bytes);
    if text.len() >= max_bytes {
        return None;
    }
    let newlines = newlines(text.as_bytes())?;
    let mut p = Reader {
        src: text,
        b: text.as_bytes(),
        pos: 0,
        newlines,
        line: 0,
        peeked: None,
        entries: Vec::new(),
        items: Vec::new(),
        run: 0,
        comments: 0,
        nodes: 0,
        docs: 1,
        max_nodes: budget.max_nodes,
        max_docs: budget.max_documents,
        max_depth: budget.max_depth.min(MAX_NESTING),
    };
    let docs = p.stream().ok()?;
    // serde-saphyr counts every event, comments included; this bounds its count from above.
    let events = p
        .nodes
        .saturating_mul(2)
        .saturating_add(p.docs.saturating_mul(2))
        .saturating_add(p.comments)
        .saturating_add(2);
    (events < budget.max_events).then_some(docs)
}

/// How [`newlines`] treats each byte: 0 passes as it is, 1 is a line feed, 2 needs a closer look.
static BYTE_CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut c = 0;
    while c < 0x20 {
        t[c] = 2;
        c += 1;
    }
    t[b'\t' as usize] = 0;
    t[b'\n' as usize] = 1;
    t[0x7F] = 2;
    // The lead bytes of the characters checked in `special_ok`.
    t[0xC2] = 2;
    t[0xE2] = 2;
    t[0xEF] = 2;
    t
};

/// The offsets of the line feeds of `b`, or `None` if a character is one the reader does not
/// pass on as it is (see [`special_ok`]). Done once up front, so that the reader finds each
/// line's end without scanning for it.
fn newlines(b: &[u8]) -> Option<Vec<usize>> {
    let mut out = Vec::with_capacity(b.len() / 24 + 1);
    for (i, &c) in b.iter().enumerate() {
        match BYTE_CLASS[usize::from(c)] {
            0 => {}
            1 => out.push(i),
            _ if special_ok(b, i) => {}
            _ => return None,
        }
    }
    Some(out)
}

/// Whether the byte at `i`, flagged by [`BYTE_CLASS`], starts a character the reader can pass
/// on. Control characters (other than tab and line ends), a `\r` not followed by `\n`, the
/// byte-order mark, C1 controls, the Unicode line and paragraph separators and the noncharacters
/// U+FFFE/U+FFFF are each either refused or given a meaning by the YAML scanner; files with them
/// go to serde-saphyr.
fn special_ok(b: &[u8], i: usize) -> bool {
    match b[i] {
        b'\r' => b.get(i + 1) == Some(&b'\n'),
        0xC2 => b.get(i + 1).is_some_and(|&n| n >= 0xA0),
        0xE2 => !(b.get(i + 1) == Some(&0x80) && matches!(b.get(i + 2), Some(0xA8 | 0xA9))),
        0xEF => match (b.get(i + 1), b.get(i + 2)) {
            (Some(0xBB), Some(0xBF)) => false,
            (Some(0xBF), Some(&n)) => n < 0xBE,
            _ => true,
        },
        _ => false,
    }
}

/// A line with content (neither blank nor a comment).
#[derive(Clone, Copy)]
struct Line {
    /// Byte offset of the line's first character.
    start: usize,
    /// Column of the first non-space character.
    indent: usize,
    /// End of the content: before `\r\n` or `\n`.
    end: usize,
    /// A `---` document marker.
    doc: bool,
}

struct Reader<'a> {
    src: &'a str,
    b: &'a [u8],
    /// Start of the first line not yet looked at.
    pos: usize,
    /// Offsets of the line feeds, and the index of the one that ends the line at `pos`.
    newlines: Vec<usize>,
    line: usize,
    /// The next content line, looked at but not yet consumed.
    peeked: Option<Line>,
    /// Entries and items of the collections being read, innermost last: each collection is
    /// built at its end, at its exact size, instead of growing (and rehashing) as it is read.
    entries: Vec<(String, Value)>,
    items: Vec<Value>,
    /// Comment lines skipped since the last consumed content line.
    run: usize,
    /// Comments seen (full lines and trailing), for the event estimate.
    comments: usize,
    /// Nodes created: keys, scalars and collections.
    nodes: usize,
    /// Documents started (an upper bound: one more than the markers).
    docs: usize,
    max_nodes: usize,
    max_docs: usize,
    max_depth: usize,
}

impl Reader<'_> {
    fn stream(&mut self) -> Res<Vec<Value>> {
        let mut docs = Vec::new();
        while let Some(line) = self.peek()? {
            self.take();
            if line.doc {
                self.docs += 1;
                if self.docs >= self.max_docs {
                    return Err(NotSure);
                }
                continue;
            }
            docs.push(self.node(line, 1)?);
            // A document holds one node; what follows it must start a new document.
            match self.peek()? {
                None => break,
                Some(l) if l.doc => {}
                Some(_) => return Err(NotSure),
            }
        }
        Ok(docs)
    }

    /// The next content line, skipping blank and comment lines (counted in `run`).
    fn peek(&mut self) -> Res<Option<Line>> {
        if let Some(l) = self.peeked {
            return Ok(Some(l));
        }
        let b = self.b;
        while self.pos < b.len() {
            let start = self.pos;
            let nl = self.newlines.get(self.line).copied().unwrap_or(b.len());
            self.line += 1;
            self.pos = nl + 1;
            let mut end = nl;
            if end > start && b[end - 1] == b'\r' {
                end -= 1;
            }
            let mut i = start;
            while i < end && b[i] == b' ' {
                i += 1;
            }
            if i == end {
                continue;
            }
            match b[i] {
                // Tabs are not indentation in YAML, and the rules for them elsewhere are subtle.
                b'\t' => return Err(NotSure),
                b'#' => {
                    self.comments += 1;
                    self.run += 1;
                    continue;
                }
                _ => {}
            }
            let mut doc = false;
            if i == start {
                let rest = &b[start..end];
                if rest.starts_with(b"---") {
                    match rest.get(3) {
                        None => doc = true,
                        Some(b' ') => {
                            // Content after the marker (`--- value`) is outside the subset.
                            let after = skip_spaces(b, start + 3, end)?;
                            if after < end && b[after] != b'#' {
                                return Err(NotSure);
                            }
                            self.comments += usize::from(after < end);
                            doc = true;
                        }
                        Some(b'\t') => return Err(NotSure),
                        Some(_) => {}
                    }
                } else if rest.starts_with(b"...") || rest[0] == b'%' {
                    return Err(NotSure);
                }
            }
            let line = Line {
                start,
                indent: i - start,
                end,
                doc,
            };
            self.peeked = Some(line);
            return Ok(Some(line));
        }
        Ok(None)
    }

    /// Consume the peeked line.
    fn take(&mut self) {
        self.peeked = None;
        self.run = 0;
    }

    /// Count one node.
    fn bump(&mut self) -> Res<()> {
        self.nodes += 1;
        if self.nodes >= self.max_nodes {
            return Err(NotSure);
        }
        Ok(())
    }

    /// Count a collection at nesting `depth` (the root is 1).
    fn enter(&mut self, depth: usize) -> Res<()> {
        if depth >= self.max_depth {
            return Err(NotSure);
        }
        self.bump()
    }

    /// The block collection that starts on `line` (consumed), at nesting `depth`.
    fn node(&mut self, line: Line, depth: usize) -> Res<Value> {
        if is_dash(self.b, line.start + line.indent, line.end) {
            self.seq(line, line.indent, depth)
        } else {
            self.map(line, line.start + line.indent, depth, None)
        }
    }

    /// A block mapping whose first key starts at `pos` on `line` (consumed); its keys are all in
    /// that column. `first` is the first key when the caller has already read it.
    fn map(
        &mut self,
        line: Line,
        pos: usize,
        depth: usize,
        first: Option<(String, usize)>,
    ) -> Res<Value> {
        self.enter(depth)?;
        let indent = pos - line.start;
        let base = self.entries.len();
        let (mut line, mut pos, mut first) = (line, pos, first);
        loop {
            let (key, after) = match first.take() {
                Some(k) => k,
                None => self.key(line, pos)?.ok_or(NotSure)?,
            };
            let value = self.value(line, after, indent, depth, true)?;
            self.entries.push((key, value));
            match self.peek()? {
                Some(l) if !l.doc && l.indent == indent => {
                    self.take();
                    line = l;
                    pos = l.start + l.indent;
                }
                Some(l) if !l.doc && l.indent > indent => return Err(NotSure),
                _ => break,
            }
        }
        self.finish_map(base)
    }

    /// The mapping of the entries from `base` on.
    fn finish_map(&mut self, base: usize) -> Res<Value> {
        let mut m = Map::with_capacity(self.entries.len() - base);
        for (k, v) in self.entries.drain(base..) {
            // serde-saphyr refuses duplicate keys (and compares some spellings as numbers);
            // either way the answer is its diagnostic, not ours.
            if m.insert(k, v).is_some() {
                return Err(NotSure);
            }
        }
        Ok(Value::Object(m))
    }

    /// The sequence of the items from `base` on.
    fn finish_seq(&mut self, base: usize) -> Value {
        Value::Array(self.items.drain(base..).collect())
    }

    /// A block sequence whose first `-` is in column `indent` of `line` (consumed); its dashes
    /// are all in that column.
    fn seq(&mut self, line: Line, indent: usize, depth: usize) -> Res<Value> {
        self.enter(depth)?;
        let base = self.items.len();
        let mut line = line;
        loop {
            let item = self.item(line, indent, depth)?;
            self.items.push(item);
            match self.peek()? {
                Some(l)
                    if !l.doc && l.indent == indent && is_dash(self.b, l.start + indent, l.end) =>
                {
                    self.take();
                    line = l;
                }
                Some(l) if !l.doc && l.indent > indent => return Err(NotSure),
                _ => break,
            }
        }
        Ok(self.finish_seq(base))
    }

    /// The item after the `-` in column `indent` of `line`, in a sequence at nesting `depth`.
    fn item(&mut self, line: Line, indent: usize, depth: usize) -> Res<Value> {
        let b = self.b;
        let after = line.start + indent + 1;
        let q = skip_spaces(b, after, line.end)?;
        if q == line.end || b[q] == b'#' {
            return self.value(line, after, indent, depth, false);
        }
        if is_dash(b, q, line.end) {
            // `- - x`: a sequence whose dashes line up with this second one.
            return self.seq(line, q - line.start, depth + 1);
        }
        if let Some(key) = self.key(line, q)? {
            // `- key: value`: a mapping whose keys line up with this first one.
            return self.map(line, q, depth + 1, Some(key));
        }
        self.inline(line, q, depth + 1)
    }

    /// The value after a `key:` or a `-` that ends at `after` on `line`, in a collection whose
    /// keys or dashes are in column `indent`, at nesting `depth`. `same_column_seq`: a sequence
    /// may start in that same column (only under a mapping key).
    fn value(
        &mut self,
        line: Line,
        after: usize,
        indent: usize,
        depth: usize,
        same_column_seq: bool,
    ) -> Res<Value> {
        let b = self.b;
        let q = skip_spaces(b, after, line.end)?;
        if q < line.end && b[q] != b'#' {
            return self.inline(line, q, depth + 1);
        }
        // Nothing on this line: the value is the block below, or null.
        let trailing = usize::from(q < line.end);
        self.comments += trailing;
        let next = self.peek()?;
        if self.run + trailing > MAX_PENDING_COMMENTS {
            return Err(NotSure);
        }
        match next {
            Some(l) if !l.doc && l.indent > indent => {
                self.take();
                self.node(l, depth + 1)
            }
            Some(l)
                if same_column_seq
                    && !l.doc
                    && l.indent == indent
                    && is_dash(b, l.start + indent, l.end) =>
            {
                self.take();
                self.seq(l, indent, depth + 1)
            }
            _ => {
                self.bump()?;
                Ok(Value::Null)
            }
        }
    }

    /// A scalar or flow collection starting at `pos`, which must end the line (but for a
    /// comment); `depth` is the nesting a collection here would have.
    fn inline(&mut self, line: Line, pos: usize, depth: usize) -> Res<Value> {
        let (v, end) = match self.b[pos] {
            b'[' | b'{' => self.flow_node(line, pos, depth)?,
            _ => self.scalar(line, pos, false)?,
        };
        self.tail(line, end)?;
        Ok(v)
    }

    /// After a value: only spaces, then the end of the line or a comment.
    fn tail(&mut self, line: Line, pos: usize) -> Res<()> {
        let q = skip_spaces(self.b, pos, line.end)?;
        if q == line.end {
            return Ok(());
        }
        // A comment must be separated from the value by whitespace.
        if self.b[q] == b'#' && q > pos {
            self.comments += 1;
            return Ok(());
        }
        Err(NotSure)
    }

    /// A mapping key at `pos` followed by `:` and a space or the end of the line: the key and
    /// the position after the `:`. `None` when there is no key here.
    fn key(&mut self, line: Line, pos: usize) -> Res<Option<(String, usize)>> {
        let b = self.b;
        let end = line.end;
        let (key, colon) = match b[pos] {
            b'"' | b'\'' => {
                let (s, close) = quoted(self.src, pos, end)?;
                (s, close)
            }
            c if c.is_ascii_alphanumeric() || c == b'_' || c == b'$' => {
                let mut i = pos + 1;
                while i < end && is_key_byte(b[i]) {
                    i += 1;
                }
                if !is_indicator(b, i, end) {
                    return Ok(None);
                }
                let text = &self.src[pos..i];
                plain_key(text)?;
                (text.to_string(), i)
            }
            _ => return Ok(None),
        };
        if !is_indicator(b, colon, end) {
            return Ok(None);
        }
        if colon - pos > MAX_KEY_BYTES {
            return Err(NotSure);
        }
        self.bump()?;
        Ok(Some((key, colon + 1)))
    }

    /// A scalar at `pos`: quoted, or plain (`flow`: inside `[]`/`{}`, where `,]}` end it). Returns
    /// the value and the position after it.
    fn scalar(&mut self, line: Line, pos: usize, flow: bool) -> Res<(Value, usize)> {
        self.bump()?;
        let b = self.b;
        let end = line.end;
        if matches!(b[pos], b'"' | b'\'') {
            let (s, after) = quoted(self.src, pos, end)?;
            return Ok((Value::String(s), after));
        }
        let ok_start = match b[pos] {
            c if c.is_ascii_alphanumeric() || c >= 0x80 => true,
            b'/' | b'_' | b'$' | b'(' | b'~' | b'^' | b';' | b'<' | b'=' | b'+' | b'.' | b'\\' => {
                true
            }
            // `-x` is a plain scalar, `- x` a sequence entry.
            b'-' => {
                b.get(pos + 1)
                    .is_some_and(|&n| n.is_ascii_alphanumeric() || n == b'-' || n == b'.')
                    && pos + 1 < end
            }
            _ => false,
        };
        if !ok_start {
            return Err(NotSure);
        }
        let mut i = pos;
        let mut last = pos;
        while i < end {
            match b[i] {
                b' ' => {
                    if b.get(i + 1) == Some(&b'#') {
                        break;
                    }
                }
                b'\t' => return Err(NotSure),
                b':' => {
                    // `: ` would make this a key, which is not allowed here; in flow context any
                    // `:` has rules of its own.
                    if flow || is_indicator(b, i, end) {
                        return Err(NotSure);
                    }
                    last = i + 1;
                }
                b',' | b']' | b'}' if flow => break,
                b'[' | b'{' | b'#' if flow => return Err(NotSure),
                _ => last = i + 1,
            }
            i += 1;
        }
        Ok((plain(&self.src[pos..last])?, last))
    }

    /// A scalar or a flow collection inside a flow collection; `depth` is the nesting a
    /// collection here would have.
    fn flow_node(&mut self, line: Line, pos: usize, depth: usize) -> Res<(Value, usize)> {
        match self.b[pos] {
            b'[' => self.flow_seq(line, pos, depth),
            b'{' => self.flow_map(line, pos, depth),
            _ => self.scalar(line, pos, true),
        }
    }

    /// `[a, b]` on one line.
    fn flow_seq(&mut self, line: Line, pos: usize, depth: usize) -> Res<(Value, usize)> {
        self.enter(depth)?;
        let b = self.b;
        let end = line.end;
        let base = self.items.len();
        let mut i = skip_spaces(b, pos + 1, end)?;
        if b.get(i) == Some(&b']') && i < end {
            return Ok((Value::Array(Vec::new()), i + 1));
        }
        loop {
            if i >= end {
                return Err(NotSure);
            }
            let (v, after) = self.flow_node(line, i, depth + 1)?;
            self.items.push(v);
            i = skip_spaces(b, after, end)?;
            match b.get(i) {
                Some(b',') if i < end => i = skip_spaces(b, i + 1, end)?,
                Some(b']') if i < end => return Ok((self.finish_seq(base), i + 1)),
                _ => return Err(NotSure),
            }
        }
    }

    /// `{k: v, k2: v2}` on one line, keys scalars.
    fn flow_map(&mut self, line: Line, pos: usize, depth: usize) -> Res<(Value, usize)> {
        self.enter(depth)?;
        let b = self.b;
        let end = line.end;
        let base = self.entries.len();
        let mut i = skip_spaces(b, pos + 1, end)?;
        if b.get(i) == Some(&b'}') && i < end {
            return Ok((Value::Object(Map::new()), i + 1));
        }
        loop {
            if i >= end {
                return Err(NotSure);
            }
            // In flow context a key needs `: ` too (`{a:b}` is the single key `a:b`).
            let (key, after) = self.key(line, i)?.ok_or(NotSure)?;
            if b.get(after) != Some(&b' ') || after >= end {
                return Err(NotSure);
            }
            let v_at = skip_spaces(b, after, end)?;
            if v_at >= end {
                return Err(NotSure);
            }
            let (v, after) = self.flow_node(line, v_at, depth + 1)?;
            self.entries.push((key, v));
            i = skip_spaces(b, after, end)?;
            match b.get(i) {
                Some(b',') if i < end => i = skip_spaces(b, i + 1, end)?,
                Some(b'}') if i < end => return Ok((self.finish_map(base)?, i + 1)),
                _ => return Err(NotSure),
            }
        }
    }
}

/// Skip spaces from `i` (not past `end`); a tab is "not sure".
fn skip_spaces(b: &[u8], mut i: usize, end: usize) -> Res<usize> {
    while i < end {
        match b[i] {
            b' ' => i += 1,
            b'\t' => return Err(NotSure),
            _ => break,
        }
    }
    Ok(i)
}

/// Characters of plain keys after the first: what Kubernetes keys are made of (`$` for JSON
/// Schema's `$ref`, `$defs`).
fn is_key_byte(c: u8) -> bool {
    static KEY_BYTE: [bool; 256] = {
        let mut t = [false; 256];
        let mut c = 0;
        while c < 256 {
            let b = c as u8;
            t[c] = b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-' | b'$');
            c += 1;
        }
        t
    };
    KEY_BYTE[usize::from(c)]
}

/// A `-` at `i` followed by a space or the end of the line: a sequence entry.
fn is_dash(b: &[u8], i: usize, end: usize) -> bool {
    i < end && b[i] == b'-' && (i + 1 == end || b[i + 1] == b' ')
}

/// A `:` at `i` followed by a space or the end of the line: a mapping value indicator.
fn is_indicator(b: &[u8], i: usize, end: usize) -> bool {
    i < end && b[i] == b':' && (i + 1 == end || b[i + 1] == b' ')
}

/// A quoted scalar starting at `pos` (on `'` or `"`) and closed on the same line: its value and
/// the position after the closing quote.
fn quoted(src: &str, pos: usize, end: usize) -> Res<(String, usize)> {
    let b = src.as_bytes();
    if b[pos] == b'\'' {
        let mut out = String::new();
        let mut seg = pos + 1;
        let mut i = seg;
        loop {
            if i >= end {
                return Err(NotSure);
            }
            if b[i] == b'\'' {
                if i + 1 < end && b[i + 1] == b'\'' {
                    // `''` is one quote.
                    out.push_str(&src[seg..=i]);
                    i += 2;
                    seg = i;
                    continue;
                }
                out.push_str(&src[seg..i]);
                return Ok((out, i + 1));
            }
            i += 1;
        }
    }
    let mut out = String::new();
    let mut seg = pos + 1;
    let mut i = seg;
    loop {
        if i >= end {
            return Err(NotSure);
        }
        match b[i] {
            b'"' => {
                out.push_str(&src[seg..i]);
                return Ok((out, i + 1));
            }
            b'\\' => {
                out.push_str(&src[seg..i]);
                let Some(&e) = b.get(i + 1).filter(|_| i + 1 < end) else {
                    return Err(NotSure);
                };
                i += 2;
                let c = match e {
                    b'0' => '\0',
                    b'a' => '\x07',
                    b'b' => '\x08',
                    b't' | b'\t' => '\t',
                    b'n' => '\n',
                    b'v' => '\x0b',
                    b'f' => '\x0c',
                    b'r' => '\r',
                    b'e' => '\x1b',
                    b' ' => ' ',
                    b'"' => '"',
                    b'/' => '/',
                    b'\\' => '\\',
                    b'N' => '\u{85}',
                    b'_' => '\u{a0}',
                    b'L' => '\u{2028}',
                    b'P' => '\u{2029}',
                    b'x' | b'u' | b'U' => {
                        let n = match e {
                            b'x' => 2,
                            b'u' => 4,
                            _ => 8,
                        };
                        let digits = b.get(i..i + n).filter(|_| i + n <= end).ok_or(NotSure)?;
                        let mut code = 0u32;
                        for &d in digits {
                            let v = (d as char).to_digit(16).ok_or(NotSure)?;
                            code = code * 16 + v;
                        }
                        i += n;
                        // Surrogates (which the scanner pairs up) and out-of-range codes: not sure.
                        char::from_u32(code).ok_or(NotSure)?
                    }
                    _ => return Err(NotSure),
                };
                out.push(c);
                seg = i;
            }
            _ => i += 1,
        }
    }
}

/// The value of a plain scalar, typed as serde-saphyr types it: null spellings, then YAML 1.1
/// booleans, then integers, then floats, else text. Integers and floats are taken only in the
/// spellings whose value is plain (canonical decimals, legacy octal `0[0-7]+`, `-?d+.d+`); other
/// spellings that may be numbers are "not sure".
fn plain(s: &str) -> Res<Value> {
    match s {
        "~" | "null" | "Null" | "NULL" => return Ok(Value::Null),
        // `<<` is a merge key and `=` a YAML 1.1 "value" key; neither is worth the risk.
        "<<" | "=" => return Err(NotSure),
        _ => {}
    }
    if let Some(v) = yaml11_bool(s) {
        return Ok(Value::Bool(v));
    }
    let b = s.as_bytes();
    let unsigned = b.strip_prefix(b"-").or(b.strip_prefix(b"+")).unwrap_or(b);
    // `.inf`, `-.NaN`: the floats without digits (serde-saphyr refuses them as non-finite).
    if unsigned.eq_ignore_ascii_case(b".inf") || unsigned.eq_ignore_ascii_case(b".nan") {
        return Err(NotSure);
    }
    // Every other number has a digit.
    if b.iter().any(u8::is_ascii_digit) {
        if let Some(n) = canonical_int(s) {
            return Ok(Value::Number(n));
        }
        if let Some(octal) = b.strip_prefix(b"0") {
            // Legacy octal (`legacy_octal_numbers`): `0777` is 511, as Kubernetes reads it.
            if octal.iter().all(|c| matches!(c, b'0'..=b'7')) {
                let v = u64::from_str_radix(&s[1..], 8).map_err(|_| NotSure)?;
                return Ok(Value::Number(v.into()));
            }
        }
        if simple_decimal(b) {
            // serde-saphyr parses floats with `str::parse::<f64>` too.
            let v: f64 = s.parse().map_err(|_| NotSure)?;
            return Number::from_f64(v).map(Value::Number).ok_or(NotSure);
        }
        if may_be_number(b) {
            return Err(NotSure);
        }
    }
    Ok(Value::String(s.to_string()))
}

/// Whether some integer or float syntax of serde-saphyr might read this text as a number (a
/// superset of them). After an optional sign, integers are digits and `_` separators (decimal
/// and legacy octal) or start with a radix prefix (`0x`, `0o`, `0b`); floats are what
/// `str::parse::<f64>` takes: digits with a point and an exponent, or the words `inf`/`nan`,
/// which serde-saphyr refuses as floats and keeps as text. Any `:` counts as a possible number
/// too (YAML 1.1 base 60, `1:30`), to be safe.
fn may_be_number(b: &[u8]) -> bool {
    let u = b.strip_prefix(b"-").or(b.strip_prefix(b"+")).unwrap_or(b);
    // Every number spelling starts with a digit or a point (after its sign).
    if !u.first().is_some_and(|&c| c.is_ascii_digit() || c == b'.') {
        return false;
    }
    if let [b'0', b'x' | b'X' | b'o' | b'O' | b'b' | b'B', ..] = u {
        return true;
    }
    if u.contains(&b':') {
        return true;
    }
    if !u.is_empty() && u.iter().all(|&c| c.is_ascii_digit() || c == b'_') {
        return true;
    }
    // `Digit+ ['.' Digit*] [Exp] | '.' Digit+ [Exp]`, `Exp = [eE] [+-]? Digit+`.
    let digits = |i: usize| u[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    let whole = digits(0);
    let mut i = whole;
    let mut fraction = 0;
    if u.get(i) == Some(&b'.') {
        fraction = digits(i + 1);
        i += 1 + fraction;
    }
    if whole + fraction == 0 {
        return false;
    }
    if matches!(u.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(u.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        let exponent = digits(i);
        if exponent == 0 {
            return false;
        }
        i += exponent;
    }
    i == u.len()
}

/// A plain key must be one whose text serde-saphyr passes through unchanged and whose duplicate
/// check is by text: null keys are refused, and integer keys are compared by value (`0777` and
/// `511` clash), so among keys that may be numbers only canonical integers are taken.
fn plain_key(s: &str) -> Res<()> {
    match s {
        "~" | "null" | "Null" | "NULL" => return Err(NotSure),
        _ => {}
    }
    let b = s.as_bytes();
    if b.first().is_some_and(u8::is_ascii_digit) && may_be_number(b) && canonical_int(s).is_none() {
        return Err(NotSure);
    }
    Ok(())
}

/// YAML 1.1 booleans, as serde-saphyr reads them (any case).
fn yaml11_bool(s: &str) -> Option<bool> {
    if s.len() > 5 {
        return None;
    }
    for t in ["true", "yes", "y", "on"] {
        if s.eq_ignore_ascii_case(t) {
            return Some(true);
        }
    }
    for f in ["false", "no", "n", "off"] {
        if s.eq_ignore_ascii_case(f) {
            return Some(false);
        }
    }
    None
}

/// `0`, `[1-9][0-9]*` within u64, or `-[1-9][0-9]*` within i64: the integers whose value does
/// not depend on the reader's number syntax.
fn canonical_int(s: &str) -> Option<Number> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let db = digits.as_bytes();
    if db.is_empty() || !db.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if db[0] == b'0' && (db.len() > 1 || neg) {
        return None;
    }
    if neg {
        s.parse::<i64>().ok().map(Number::from)
    } else {
        digits.parse::<u64>().ok().map(Number::from)
    }
}

/// `-?[0-9]+\.[0-9]+`.
fn simple_decimal(b: &[u8]) -> bool {
    let b = b.strip_prefix(b"-").unwrap_or(b);
    let Some(dot) = b.iter().position(|&c| c == b'.') else {
        return false;
    };
    dot > 0
        && dot + 1 < b.len()
        && b[..dot].iter().all(u8::is_ascii_digit)
        && b[dot + 1..].iter().all(u8::is_ascii_digit)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The fast reader's answer, after checking the contract: when it answers, serde-saphyr
    /// accepts the text and gives the same documents, key order and number kinds included
    /// (compared as JSON text: `Value`'s equality ignores the order of keys).
    fn check_with(text: &str, limits: &YamlLimits) -> Option<Vec<Value>> {
        let fast = parse(text, limits);
        if let Some(docs) = &fast {
            match crate::document::parse_yaml_reference("t.yaml", text, limits) {
                Ok(want) => assert_eq!(
                    serde_json::to_string(docs).unwrap(),
                    serde_json::to_string(&want).unwrap(),
                    "{text:?}"
                ),
                Err(e) => panic!("fast path accepted {text:?}, which serde-saphyr refuses: {e:?}"),
            }
        }
        fast
    }

    fn check(text: &str) -> Option<Vec<Value>> {
        check_with(text, &YamlLimits::default())
    }

    /// The fast reader answers, with `want` (the documents as a JSON array).
    #[track_caller]
    fn accepts(text: &str, want: Value) {
        match check(text) {
            Some(docs) => assert_eq!(
                serde_json::to_string(&docs).unwrap(),
                serde_json::to_string(&want).unwrap(),
                "{text:?}"
            ),
            None => panic!("fast path declined {text:?}"),
        }
    }

    #[track_caller]
    fn declines(text: &str) {
        assert!(check(text).is_none(), "fast path accepted {text:?}");
    }

    const SAMPLE: &str = "apiVersion: bench.kiln.dev/v1alpha1
kind: BenchApp
metadata:
  name: app-00000
  namespace: team-00
spec:
  image: ghcr.io/example/service-0
  tag: \"1.5.12\"
  replicas: 1
  port: 8005
  regions: [us-east-1]
  labels:
    cost-center: cc-4
  ingress:
    enabled: true
    host: app-00000.example.com
";

    #[test]
    fn the_benchmark_instance_takes_the_fast_path() {
        accepts(
            SAMPLE,
            json!([{
                "apiVersion": "bench.kiln.dev/v1alpha1",
                "kind": "BenchApp",
                "metadata": {"name": "app-00000", "namespace": "team-00"},
                "spec": {
                    "image": "ghcr.io/example/service-0",
                    "tag": "1.5.12",
                    "replicas": 1,
                    "port": 8005,
                    "regions": ["us-east-1"],
                    "labels": {"cost-center": "cc-4"},
                    "ingress": {"enabled": true, "host": "app-00000.example.com"}
                }
            }]),
        );
    }

    #[test]
    fn nested_mappings_keep_key_order() {
        accepts(
            "z: 1\na:\n  y: 2\n  b:\n      x: 3\n  c: 4\nm: 5\n",
            json!([{"z": 1, "a": {"y": 2, "b": {"x": 3}, "c": 4}, "m": 5}]),
        );
    }

    #[test]
    fn sequences_in_every_layout() {
        // Indented under the key, at the key's own column, compact mappings, dash on its own line.
        let text = "\
a:
  - x
  - z
b:
- x
- z
c:
- name: app
  image: nginx
  env:
  - name: A
    value: \"1\"
  ports:
    - containerPort: 80
-
  name: second
- - nested
";
        accepts(
            text,
            json!([{
                "a": ["x", "z"],
                "b": ["x", "z"],
                "c": [
                    {"name": "app", "image": "nginx",
                     "env": [{"name": "A", "value": "1"}],
                     "ports": [{"containerPort": 80}]},
                    {"name": "second"},
                    ["nested"]
                ]
            }]),
        );
        accepts("- a\n- b\n", json!([["a", "b"]]));
        accepts(
            "- a: 1\n  b: 2\n- c: 3\n",
            json!([[{"a": 1, "b": 2}, {"c": 3}]]),
        );
        accepts("-\n- x\n", json!([[null, "x"]]));
        accepts("- a:\n  - x\n  b: 1\n", json!([[{"a": ["x"], "b": 1}]]));
        accepts("- a:\n    b: 1\n", json!([[{"a": {"b": 1}}]]));
        accepts("-   a: 1\n    b: 2\n", json!([[{"a": 1, "b": 2}]]));
        // Sequences nested on one line, as kiln's own emitter writes them.
        accepts(
            "- - a\n  - b\n- c\n- -   - d\n      - e\n  - f\n",
            json!([[["a", "b"], "c", [["d", "e"], "f"]]]),
        );
        accepts(
            "a:\n- - a\n  - b: 1\n    c: 2\n",
            json!([{"a": [["a", {"b": 1, "c": 2}]]}]),
        );
        declines("- - a\n - b\n");
        declines("- - a\n   - b\n");
    }

    #[test]
    fn empty_values_are_null() {
        accepts(
            "a:\nb:\nc: # comment\n  d: 1\ne:   \n",
            json!([{"a": null, "b": null, "c": {"d": 1}, "e": null}]),
        );
        accepts("a:\n---\nb: 1\n", json!([{"a": null}, {"b": 1}]));
    }

    #[test]
    fn comments_and_blank_lines() {
        accepts(
            "# head\n\n  # indented\na: 1 # trailing\n# between\nb:\n# at column 0 inside\n  c: x#not-a-comment\n\n   \n",
            json!([{"a": 1, "b": {"c": "x#not-a-comment"}}]),
        );
        accepts("# only a comment\n", json!([]));
        accepts("", json!([]));
        accepts("\n\n", json!([]));
    }

    #[test]
    fn documents() {
        accepts(
            "---\na: 1\n--- # second\nb: 2\n---\n---\n# empty\n---\n- c\n",
            json!([{"a": 1}, {"b": 2}, ["c"]]),
        );
        accepts("a: 1\n---\n", json!([{"a": 1}]));
        accepts("---\n", json!([]));
        accepts("  a: 1\n  b: 2\n", json!([{"a": 1, "b": 2}]));
    }

    #[test]
    fn quoted_scalars() {
        accepts(
            r#"a: 'it''s'
b: ''
c: ""
d: "tab\there \"q\" \\ \/ \n"
e: "\x41\u00e9\U0001F600\N\_\L\P\e\0\a\b\v\f\ end"
f: 'no \escapes here'
g: "null"
h: 'true'
i: "0777"
j: "  spaced  "
"quoted key": 1
'single key': 2
"": 3
"#,
            json!([{
                "a": "it's", "b": "", "c": "",
                "d": "tab\there \"q\" \\ / \n",
                "e": "A\u{e9}\u{1F600}\u{85}\u{a0}\u{2028}\u{2029}\u{1b}\u{0}\u{7}\u{8}\u{b}\u{c} end",
                "f": "no \\escapes here",
                "g": "null", "h": "true", "i": "0777", "j": "  spaced  ",
                "quoted key": 1, "single key": 2, "": 3
            }]),
        );
        accepts("- 'a'\n- \"b\": 1\n", json!([["a", {"b": 1}]]));
        accepts(
            "a: \"x\" # c\nb: 'y'    # c\n",
            json!([{"a": "x", "b": "y"}]),
        );
        accepts("a: \"tab\tinside\"\n", json!([{"a": "tab\tinside"}]));
    }

    #[test]
    fn flow_collections_of_scalars() {
        accepts(
            "a: [a, b c, 'd', \"e\", 1, true, ~, null, -1]\nb: []\nc: {}\nd: {x: w, z: 1, 'q': \"r\"}\ne: [ ]\nf: { }\ng: [$x, a/b]\n",
            json!([{
                "a": ["a", "b c", "d", "e", 1, true, null, null, -1],
                "b": [], "c": {}, "d": {"x": "w", "z": 1, "q": "r"},
                "e": [], "f": {}, "g": ["$x", "a/b"]
            }]),
        );
        accepts("- []\n- {}\n- [x] # c\n", json!([[[], {}, ["x"]]]));
        // Nested, still on one line.
        accepts(
            "spec: {containers: {app: {image: \"nginx:1\"}}}\nc: [{name: app, image: \"${x}\"}, [], [[a]], {}]\n",
            json!([{
                "spec": {"containers": {"app": {"image": "nginx:1"}}},
                "c": [{"name": "app", "image": "${x}"}, [], [["a"]], {}]
            }]),
        );
        declines("a: [[x]\n");
        declines("a: [{x: y]}\n");
        declines("a: {x: [y}]\n");
    }

    #[test]
    fn plain_scalar_typing_matches_serde_saphyr() {
        // Each spelling here was checked against serde-saphyr (`accepts` compares with it).
        let cases: &[(&str, Value)] = &[
            ("~", json!(null)),
            ("null", json!(null)),
            ("Null", json!(null)),
            ("NULL", json!(null)),
            ("true", json!(true)),
            ("True", json!(true)),
            ("TRUE", json!(true)),
            ("tRuE", json!(true)),
            ("false", json!(false)),
            ("FALSE", json!(false)),
            ("yes", json!(true)),
            ("Yes", json!(true)),
            ("y", json!(true)),
            ("Y", json!(true)),
            ("on", json!(true)),
            ("ON", json!(true)),
            ("no", json!(false)),
            ("n", json!(false)),
            ("N", json!(false)),
            ("off", json!(false)),
            ("oFf", json!(false)),
            ("0", json!(0)),
            ("7", json!(7)),
            ("8005", json!(8005)),
            ("-1", json!(-1)),
            ("18446744073709551615", json!(18446744073709551615u64)),
            ("-9223372036854775808", json!(i64::MIN)),
            ("0.5", json!(0.5)),
            ("-1.25", json!(-1.25)),
            ("10.0", json!(10.0)),
            ("00.5", json!(0.5)),
            ("cc-4", json!("cc-4")),
            ("v1", json!("v1")),
            ("e5", json!("e5")),
            ("abc12", json!("abc12")),
            ("12hz", json!("12hz")),
            ("12abc", json!("12abc")),
            ("--1", json!("--1")),
            ("_1", json!("_1")),
            ("(x)", json!("(x)")),
            (";x", json!(";x")),
            ("^x", json!("^x")),
            ("\\x", json!("\\x")),
            ("<x>", json!("<x>")),
            ("+x", json!("+x")),
            ("$ref", json!("$ref")),
            ("---", json!("---")),
            ("-.-", json!("-.-")),
            ("a1:30", json!("a1:30")),
            ("0777", json!(511)),
            ("007", json!(7)),
            ("0400", json!(256)),
            ("00", json!(0)),
            ("1.0.0", json!("1.0.0")),
            ("v1.16.2", json!("v1.16.2")),
            ("2001-12-14", json!("2001-12-14")),
            ("1-2-3", json!("1-2-3")),
            ("1e", json!("1e")),
            ("1e+", json!("1e+")),
            ("1.5.12", json!("1.5.12")),
            ("123e4567-e89", json!("123e4567-e89")),
            (".foo", json!(".foo")),
            (".spec.clusterName", json!(".spec.clusterName")),
            (".", json!(".")),
            ("-.foo", json!("-.foo")),
            (".infinity", json!(".infinity")),
            (
                "9f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f",
                json!("9f1c2d3e-4a5b-4c6d-8e7f-0a1b2c3d4e5f"),
            ),
            ("1.5.12-rc.1", json!("1.5.12-rc.1")),
            ("1e3x", json!("1e3x")),
            ("1f", json!("1f")),
            ("1.5.12-rc1", json!("1.5.12-rc1")),
            ("8080/TCP", json!("8080/TCP")),
            ("100m", json!("100m")),
            ("512Mi", json!("512Mi")),
            ("0.5Gi", json!("0.5Gi")),
            ("inf", json!("inf")),
            ("nan", json!("nan")),
            ("infinity", json!("infinity")),
            ("-inf", json!("-inf")),
            ("+nan", json!("+nan")),
            ("-x", json!("-x")),
            ("--port=8080", json!("--port=8080")),
            ("~foo", json!("~foo")),
            ("=foo", json!("=foo")),
            ("yes-please", json!("yes-please")),
            ("nullable", json!("nullable")),
            ("a[0]", json!("a[0]")),
            ("b]", json!("b]")),
            ("x{y}", json!("x{y}")),
            ("f,g", json!("f,g")),
            (
                "${schema.spec.name}-config",
                json!("${schema.spec.name}-config"),
            ),
            (
                "http://example.com:8080/x",
                json!("http://example.com:8080/x"),
            ),
            ("a:b", json!("a:b")),
            ("it's \"ok\"", json!("it's \"ok\"")),
            ("a - b ? c", json!("a - b ? c")),
            ("trailing   ", json!("trailing")),
            ("héllo wörld", json!("héllo wörld")),
            ("日本語", json!("日本語")),
            (
                "a & b * c ! d | e > f % g @ h ` i",
                json!("a & b * c ! d | e > f % g @ h ` i"),
            ),
        ];
        for (plain, want) in cases {
            accepts(&format!("k: {plain}\n"), json!([{ "k": want }]));
            accepts(&format!("- {plain}\n"), json!([[want]]));
        }
    }

    #[test]
    fn numeric_spellings_outside_the_subset_decline() {
        for plain in [
            "08",
            "-01",
            "1e3",
            "1E3",
            "1e+3",
            "0x1F",
            "0o17",
            "0b101",
            "1_000",
            "+1",
            "-0",
            ".5",
            "1.",
            "-.5",
            ".inf",
            "-.inf",
            ".nan",
            ".NaN",
            "1:30",
            ".Inf",
            "+.INF",
            ".nAn",
            "0xZZ",
            "0b2",
            "0o9",
            "+.5",
            "1__0",
            "1_",
            "0_1",
            "0x_1",
            "-0777",
            "0_7",
            "-_1",
            "-0x1",
            "+0x1",
            "0.",
            "1.5e3",
            "18446744073709551616",
            "-9223372036854775809",
            "1e400",
            "=",
            "<<",
        ] {
            declines(&format!("k: {plain}\n"));
            declines(&format!("- {plain}\n"));
            declines(&format!("k: [{plain}]\n"));
        }
    }

    #[test]
    fn keys() {
        accepts(
            "1: a\n42: b\ntrue: c\non: d\ny: e\napp.kubernetes.io/name: f\nk_8-s: g\n$ref: h\n1.0.0: i\n",
            json!([{"1": "a", "42": "b", "true": "c", "on": "d", "y": "e",
                    "app.kubernetes.io/name": "f", "k_8-s": "g", "$ref": "h", "1.0.0": "i"}]),
        );
        for key in [
            "null", "~", "0777", "1.5", "0x1F", "-a", ".a", "a b", "a@b", "<<", "? a", "[a]",
            "{a: b}", "*a", "&a b", "!t a", "/a", "${a}", "a${b}c", "08", "1_0", "1e3",
        ] {
            declines(&format!("{key}: v\n"));
        }
        declines(&format!("{}: v\n", "k".repeat(600)));
        declines(&format!("\"{}\": v\n", "k".repeat(600)));
        accepts(
            &format!("{}: v\n", "k".repeat(500)),
            json!([{ "k".repeat(500): "v" }]),
        );
    }

    #[test]
    fn duplicate_keys_decline() {
        declines("a: 1\na: 2\n");
        declines("a: 1\n'a': 2\n");
        declines("\"1\": x\n1: y\n");
        declines("m:\n  a: 1\n  b: 2\n  a: 3\n");
        declines("a: {x: 1, x: 2}\n");
        declines("- a: 1\n  a: 2\n");
    }

    #[test]
    fn line_ends() {
        accepts("a: 1\r\nb:\r\n  - x\r\n", json!([{"a": 1, "b": ["x"]}]));
        declines("a: 1\rb: 2\n");
        accepts("a: 1", json!([{"a": 1}]));
    }

    #[test]
    fn constructs_outside_the_subset_decline() {
        for text in [
            // Tabs
            "a:\n\tb: 1\n",
            "a:\tb\n",
            "a: b\tc\n",
            "a: b \t\n",
            "a: 1\n\t\nb: 2\n",
            // Anchors, aliases, tags, merge keys
            "a: &x 1\nb: *x\n",
            "a: !!str 1\n",
            "a: !custom x\n",
            "<<: {a: 1}\nb: 2\n",
            // Block scalars, multi-line scalars
            "a: |\n  x\n",
            "a: >\n  x\n",
            "a: x\n  y\n",
            "a:\n  x\n",
            "a: \"x\n  y\"\n",
            "a: 'x\n  y'\n",
            "a: \"x\\\n  y\"\n",
            // Complex keys, directives, document ends, content after the marker, root scalars
            "? a\n: b\n",
            "%YAML 1.2\n---\na: 1\n",
            "a: 1\n...\n",
            "--- a\n",
            "--- {a: 1}\n",
            "hello\n",
            "'hello'\n",
            "[a, b]\n",
            "{a: b}\n",
            // A byte-order mark and other characters the scanner treats specially
            "\u{feff}a: 1\n",
            "a: x\u{85}y\n",
            "a: x\u{2028}y\n",
            "a: x\u{1}y\n",
            "a: \"x\u{7f}\"\n",
            // Structure errors and ambiguities
            "a: b: c\n",
            "a: b:\n",
            "a: \"b\": c\n",
            "a: \"h\"#i\n",
            "a: [x]y\n",
            "a: - b\n",
            "a: 1\n- x\n",
            "- x\na: 1\n",
            "a: 1\n  b: 2\n",
            "a:\n    b: 1\n  c: 2\n",
            "  a: 1\nb: 2\n",
            "a:\n  - x\n - y\n",
            "- a\n  b\n",
            "- - a\n  b\n",
            "-x: 1\n",
            "a : b\n",
            "a:b\n",
            // Flow collections beyond one line of scalars
            "a: [x, y,]\n",
            "a: [x, , y]\n",
            "a: [x\n",
            "a: [x,\n  y]\n",
            "a: {x}\n",
            "a: {x:y}\n",
            "a: {x: }\n",
            "a: [a:b]\n",
            "a: [a: b]\n",
            "a: [a#b]\n",
            "a: [x] [y]\n",
            // Escapes the reader does not take
            "a: \"\\ud800\"\n",
            "a: \"\\ud83d\\ude00\"\n",
            "a: \"\\q\"\n",
            "a: \"\\x4\"\n",
            "a: \"\\U00110000\"\n",
            "a: \"\\\u{e9}\"\n",
        ] {
            declines(text);
        }
    }

    #[test]
    fn long_comment_runs_after_an_open_value_decline() {
        // serde-saphyr refuses more than 32 comments between `key:` or `-` and the node.
        for (open, node) in [("a:\n", "  b: 1\n"), ("-\n", "  b: 1\n"), ("a:\n", "- b\n")] {
            let within = format!("{open}{}{node}", "# c\n".repeat(MAX_PENDING_COMMENTS));
            assert!(check(&within).is_some(), "{within}");
            let over = format!("{open}{}{node}", "# c\n".repeat(MAX_PENDING_COMMENTS + 1));
            declines(&over);
            let way_over = format!("{open}{}{node}", "# c\n".repeat(40));
            declines(&way_over);
            let refused =
                crate::document::parse_yaml_reference("t.yaml", &way_over, &YamlLimits::default())
                    .expect_err("an error");
            // serde-saphyr's own refusal, which kiln reports as a YAML error.
            assert_eq!(
                refused.code,
                crate::diag::codes::YAML_SYNTAX,
                "{}",
                refused.message
            );
            assert!(
                refused.message.contains("too many buffered comments"),
                "{}",
                refused.message
            );
        }
        // Elsewhere comments are unlimited (a licence header, commented-out blocks).
        let c = "# c\n".repeat(100);
        accepts(
            &format!("{c}a: 1\n{c}b:\n  x: 1\n{c}---\n{c}- z\n{c}"),
            json!([{"a": 1, "b": {"x": 1}}, ["z"]]),
        );
    }

    #[test]
    fn every_limit_is_left_to_serde_saphyr() {
        let limits = YamlLimits {
            max_input_bytes: 1000,
            max_documents: 3,
            max_depth: 4,
            max_nodes: 50,
            max_alias_nodes: 20,
            max_aliases: 5,
        };
        // Depth: the root mapping is level 1.
        for depth in 1..=6 {
            let mut text = String::new();
            for d in 0..depth {
                text.push_str(&format!("{}k{d}:\n", "  ".repeat(d)));
            }
            text.push_str(&format!("{}leaf: 1\n", "  ".repeat(depth)));
            let fast = check_with(&text, &limits);
            assert_eq!(
                fast.is_some(),
                depth + 1 < limits.max_depth,
                "depth {depth}"
            );
        }
        assert!(check_with("a: [1]\n", &limits).is_some());
        assert!(check_with("a:\n  b: [1]\n", &limits).is_some());
        assert!(check_with("a:\n  b:\n    c: [1]\n", &limits).is_none());
        // Nodes
        for n in [10, 20, 23, 24, 25, 30, 60] {
            let text = format!("a: [{}]\n", vec!["1"; n].join(", "));
            let fast = check_with(&text, &limits);
            // Key, list and items: n + 2 nodes.
            assert_eq!(fast.is_some(), n + 2 < limits.max_nodes, "{n} items");
        }
        let text = format!(
            "{}\n",
            (0..60)
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        );
        assert!(check_with(&text, &limits).is_none());
        // Documents
        assert!(check_with("a: 1\n---\nb: 1\n", &limits).is_some());
        assert!(check_with("a: 1\n---\nb: 1\n---\nc: 1\n", &limits).is_none());
        assert!(check_with("a: 1\n---\nb: 1\n---\nc: 1\n---\nd: 1\n", &limits).is_none());
        // Input size
        let text = format!("a: {}\n", "x".repeat(996));
        assert_eq!(text.len(), limits.max_input_bytes);
        assert!(check_with(&text, &limits).is_none());
        let text = format!("a: {}\n", "x".repeat(995));
        assert!(check_with(&text, &limits).is_some());
        // Events: comments count too.
        let text = format!("a: 1\n{}", "# c\n".repeat(150));
        assert!(check_with(&text, &limits).is_none());
        // The reference parser refuses it for the same reason (its budget), not for another.
        let refused =
            crate::document::parse_yaml_reference("t.yaml", &text, &limits).expect_err("an error");
        assert_eq!(
            refused.code,
            crate::diag::codes::YAML_BUDGET,
            "{}",
            refused.message
        );
        let text = format!("a: 1\n{}", "# c\n".repeat(100));
        assert!(check_with(&text, &limits).is_some());
    }

    #[test]
    fn a_deep_input_is_declined_without_recursing_far() {
        let mut text = String::new();
        for d in 0..200 {
            text.push_str(&format!("{}k:\n", " ".repeat(d)));
        }
        let limits = YamlLimits {
            max_depth: 10_000,
            ..YamlLimits::default()
        };
        assert!(parse(&text, &limits).is_none());
        let text = format!("a: {}{}\n", "[".repeat(200), "]".repeat(200));
        assert!(parse(&text, &limits).is_none());
        let text = format!("a: {}1{}\n", "{a: ".repeat(200), "}".repeat(200));
        assert!(parse(&text, &limits).is_none());
        // Just within the reader's own nesting limit, it answers.
        let text = format!("a: {}{}\n", "[".repeat(98), "]".repeat(98));
        assert!(parse(&text, &limits).is_some());
    }
}
