//! `${path}` variables: scanning and resolution against the parameters.
//!
//! A variable is a plain path into the parameters (`${app.replicas}`, `${hosts[0].name}`,
//! `${kurel.appVersion}`); there are no expressions and no inline defaults, because every default
//! lives in `parameters.yaml`. A string that is exactly one reference takes the referenced value
//! with its type; a reference inside other text is formatted into the string, and only strings,
//! numbers and booleans may be (Go's `map[k:v]` is never what anybody wanted). Values are resolved
//! again when they contain references themselves, up to a maximum depth; each followed reference
//! counts one. `$${` writes a literal `${`, for shell snippets in ConfigMaps.
//!
//! Resolution is memoised per path, so hostile inputs (every parameter referencing the previous one
//! many times) cost linear time, not exponential.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use serde_json::{Map, Value};

use crate::diag::{bounded, codes, quote, Code};
use crate::expr::scan::has_open;
use crate::fieldpath::{FieldPath, Segment};
/// Default bound on nested references (defined with every other limit in [`crate::limits`]).
pub use crate::limits::DEFAULT_VARIABLE_DEPTH as DEFAULT_MAX_DEPTH;

/// Longest string a resolution may produce; stops exponential growth through mixed text.
const MAX_STRING_BYTES: usize = 1 << 20;

/// Where a template's references are, found once for every instance rendered from it
/// ([`Resolver::resolve_planned`]): each string that holds one, in the order a walk of the
/// template meets it, with its place, its pieces and whether its field is a string.
#[derive(Debug, Clone)]
pub struct TreePlan {
    holes: Vec<Hole>,
}

#[derive(Debug, Clone)]
struct Hole {
    at: FieldPath,
    /// `at` as positions: the template is copied for every instance with its maps in the same
    /// order, so the string is found by stepping to the nth entry, without hashing a key.
    pos: Vec<Pos>,
    text: String,
    pieces: Result<Vec<Piece>, VarError>,
    wants_string: bool,
}

impl TreePlan {
    /// The plan of template `v` (from its root); `wants_string` as for
    /// [`Resolver::resolve_tree_typed`]. `None` when a mapping key holds a reference: such a map
    /// is made again at every resolution, and the template is walked instead.
    pub fn of(v: &Value, wants_string: &dyn Fn(&FieldPath) -> bool) -> Option<TreePlan> {
        fn collect(
            v: &Value,
            at: &mut FieldPath,
            pos: &mut Vec<Pos>,
            wants: &dyn Fn(&FieldPath) -> bool,
            holes: &mut Vec<Hole>,
        ) -> Option<()> {
            match v {
                Value::String(s) if has_open(s) => holes.push(Hole {
                    at: at.clone(),
                    pos: pos.clone(),
                    text: s.clone(),
                    pieces: scan(s),
                    wants_string: wants(at),
                }),
                Value::Array(items) => {
                    for (i, x) in items.iter().enumerate() {
                        at.0.push(Segment::Index(i));
                        pos.push(Pos::Item(i));
                        collect(x, at, pos, wants, holes)?;
                        pos.pop();
                        at.0.pop();
                    }
                }
                Value::Object(m) if m.keys().any(|k| has_open(k)) => return None,
                Value::Object(m) => {
                    for (i, (k, x)) in m.iter().enumerate() {
                        at.0.push(Segment::Key(k.clone()));
                        pos.push(Pos::Entry(i));
                        collect(x, at, pos, wants, holes)?;
                        pos.pop();
                        at.0.pop();
                    }
                }
                _ => {}
            }
            Some(())
        }
        let mut holes = Vec::new();
        collect(
            v,
            &mut FieldPath::root(),
            &mut Vec::new(),
            wants_string,
            &mut holes,
        )?;
        Some(TreePlan { holes })
    }
}

/// One step of a [`Hole`]'s place: the nth entry of a map, the nth item of a list.
#[derive(Debug, Clone, Copy)]
enum Pos {
    Entry(usize),
    Item(usize),
}

/// The value at `pos` below `v`.
fn at_mut<'v>(v: &'v mut Value, pos: &[Pos]) -> Option<&'v mut Value> {
    pos.iter().try_fold(v, |v, p| match *p {
        Pos::Entry(i) => v.as_object_mut()?.values_mut().nth(i),
        Pos::Item(i) => v.as_array_mut()?.get_mut(i),
    })
}

/// A resolved value in its field: a lone reference to a number or boolean is written as text
/// where the field is a string.
fn typed(v: Value, wants_string: bool) -> Value {
    match v {
        Value::Number(n) if wants_string => Value::String(n.to_string()),
        Value::Bool(b) if wants_string => Value::String(b.to_string()),
        other => other,
    }
}

/// One step of a variable path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A mapping key.
    Key(String),
    /// A list index.
    Index(usize),
}

/// A piece of a scanned string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text (with `$${` already turned into `${`).
    Text(String),
    /// A `${path}` reference: the path as written.
    Ref(String),
}

/// A problem with a variable, located by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VarError {
    /// Which KLN7xxx code applies.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub hint: String,
}

impl VarError {
    fn new(code: Code, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// Split a string into literal text and references.
pub fn scan(s: &str) -> Result<Vec<Piece>, VarError> {
    let mut out = Vec::new();
    let mut text = String::new();
    let mut rest = s;
    while let Some(at) = crate::delimiter::find_open(rest) {
        // `$${` is an escaped `${`.
        if at > 0 && rest[..at].ends_with('$') {
            text.push_str(&rest[..at - 1]);
            text.push_str("${");
            rest = &rest[at + 2..];
            continue;
        }
        text.push_str(&rest[..at]);
        let body_start = at + 2;
        let Some(len) = rest[body_start..].find('}') else {
            return Err(VarError::new(
                codes::KUREL_VARIABLE_SYNTAX,
                format!("unterminated variable reference in {s:?}"),
                "close the reference with `}`, or write `$${` for a literal `${`",
            ));
        };
        let body = &rest[body_start..body_start + len];
        check_body(body)?;
        if !text.is_empty() {
            out.push(Piece::Text(std::mem::take(&mut text)));
        }
        out.push(Piece::Ref(body.to_string()));
        rest = &rest[body_start + len + 1..];
    }
    text.push_str(rest);
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    Ok(out)
}

/// `${body}` as a message shows it: a reference in a values file or a `--set` value is the
/// user's text, so a long one is cut to a bounded prefix ([`bounded`]).
fn reference(body: &str) -> String {
    bounded(&format!("${{{body}}}"))
}

fn check_body(body: &str) -> Result<(), VarError> {
    // Every reference of every template string of every instance is checked: the common
    // spelling is answered without building its steps.
    if is_plain_path(body) {
        return Ok(());
    }
    if let Some((var, default)) = body.split_once('|') {
        return Err(VarError::new(
            codes::KUREL_VARIABLE_SYNTAX,
            format!(
                "{}: inline defaults are not supported (`|{}` after {})",
                reference(body),
                bounded(default.trim()),
                bounded(var.trim())
            ),
            format!(
                "define the default of {} in parameters.yaml and write {}",
                bounded(var.trim()),
                reference(var.trim())
            ),
        ));
    }
    parse_path(body).map(|_| ())
}

/// Whether `body` is keys of letters, digits, `_` and `-` separated by single dots, without
/// indexes: a path [`parse_path`] accepts (it accepts more, and says why it refuses the rest).
fn is_plain_path(body: &str) -> bool {
    let mut key_len = 0;
    for b in body.bytes() {
        match b {
            b'.' if key_len > 0 => key_len = 0,
            b if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' => key_len += 1,
            _ => return false,
        }
    }
    key_len > 0
}

/// Parse a variable path: keys of letters, digits, `_` and `-`, separated by dots, each optionally
/// followed by `[N]` indexes.
pub fn parse_path(body: &str) -> Result<Vec<Step>, VarError> {
    let bad = |why: &str| {
        VarError::new(
            codes::KUREL_VARIABLE_SYNTAX,
            format!("{} is not a variable path: {why}", reference(body)),
            "kurel variables are plain parameter paths such as ${app.replicas} or ${hosts[0]}; \
             expressions are not supported",
        )
    };
    if body.trim().is_empty() {
        return Err(bad("it is empty"));
    }
    let mut steps = Vec::new();
    for part in body.split('.') {
        let (key, mut idx) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if key.is_empty()
            || !key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(bad(&format!("{} is not a key", quote(part))));
        }
        steps.push(Step::Key(key.to_string()));
        while !idx.is_empty() {
            let Some(close) = idx.find(']') else {
                return Err(bad("unclosed `[`"));
            };
            let digits = &idx[1..close];
            let n: usize = digits
                .bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| digits.parse().ok())
                .flatten()
                .ok_or_else(|| bad(&format!("{} is not a list index", quote(digits))))?;
            steps.push(Step::Index(n));
            idx = &idx[close + 1..];
            if !idx.is_empty() && !idx.starts_with('[') {
                return Err(bad("unexpected text after `]`"));
            }
        }
    }
    Ok(steps)
}

/// Look up a path of keys separated by dots ([`is_plain_path`]).
fn lookup_plain<'a>(params: &'a Value, path: &str) -> Option<&'a Value> {
    // Parameter maps are small: scanned, not hashed ([`crate::lookup`]).
    path.split('.')
        .try_fold(params, |v, k| crate::lookup::field(v, k))
}

/// Look a path up in the parameters.
pub fn lookup<'a>(params: &'a Value, steps: &[Step]) -> Option<&'a Value> {
    steps.iter().try_fold(params, |v, s| match s {
        Step::Key(k) => v.as_object()?.get(k),
        Step::Index(i) => v.as_array()?.get(*i),
    })
}

/// A resolved reference: the value, and the longest chain of references below and including it.
#[derive(Debug, Clone)]
struct Resolved {
    value: Value,
    chain: Vec<String>,
}

/// The value of a resolution, taken out when nothing else holds it (the memo usually does).
fn value_of(r: Rc<Resolved>) -> Value {
    Rc::try_unwrap(r).map_or_else(|r| r.value.clone(), |r| r.value)
}

/// Resolves `${…}` against one set of parameters. Cheap to create; memoises per path.
#[derive(Debug)]
pub struct Resolver<'p> {
    params: &'p Value,
    max_depth: usize,
    /// Shared with the strings that use them: text that embeds a reference reads it in place,
    /// and only a value placed in the output is copied.
    memo: RefCell<BTreeMap<String, Result<Rc<Resolved>, VarError>>>,
}

impl<'p> Resolver<'p> {
    /// A resolver over `params` following at most `max_depth` nested references.
    pub fn new(params: &'p Value, max_depth: usize) -> Self {
        Self {
            params,
            max_depth,
            memo: RefCell::new(BTreeMap::new()),
        }
    }

    /// The parameters resolved against.
    pub fn params(&self) -> &'p Value {
        self.params
    }

    /// Resolve every string (and mapping key) of a value. Errors come with the field path (below
    /// `at`) where the reference was written.
    pub fn resolve_tree(
        &self,
        v: &Value,
        at: &FieldPath,
        errors: &mut Vec<(FieldPath, VarError)>,
    ) -> Value {
        self.resolve_tree_typed(v, at, &|_| false, errors)
    }

    /// [`Resolver::resolve_tree`], writing a lone reference to a number or boolean as a string
    /// where `wants_string(path)` says the field is a string (an annotation, an env value): there
    /// is no other way to write `"${port}"` as text, since a lone reference keeps its type.
    pub fn resolve_tree_typed(
        &self,
        v: &Value,
        at: &FieldPath,
        wants_string: &dyn Fn(&FieldPath) -> bool,
        errors: &mut Vec<(FieldPath, VarError)>,
    ) -> Value {
        // A copy resolved in place: most of a template is plain text, and a copied map keeps
        // its keys' hashes where a map built again would hash every key.
        let mut out = v.clone();
        let mut stack = Vec::new();
        self.tree(&mut out, &mut at.clone(), wants_string, &mut stack, errors);
        out
    }

    /// [`Resolver::resolve_tree_typed`] of a template from the root, by its [`TreePlan`]: the
    /// same value and errors, but only the strings that hold a reference are visited, as they
    /// were scanned once for every instance.
    pub fn resolve_planned(
        &self,
        v: &Value,
        plan: &TreePlan,
        errors: &mut Vec<(FieldPath, VarError)>,
    ) -> Value {
        let mut out = v.clone();
        let mut stack = Vec::new();
        for h in &plan.holes {
            let Some(x) = at_mut(&mut out, &h.pos) else {
                continue;
            };
            let r = match &h.pieces {
                Ok(pieces) => self.pieces(&h.text, pieces, &mut stack),
                Err(e) => Err(e.clone()),
            };
            *x = match r {
                Ok(r) => typed(value_of(r), h.wants_string),
                Err(e) => {
                    errors.push((h.at.clone(), e));
                    Value::Null
                }
            };
        }
        out
    }

    /// `at` is the path of `v`; it is extended and restored on the way down rather than copied
    /// per node, since most nodes hold no reference and never need it.
    fn tree(
        &self,
        v: &mut Value,
        at: &mut FieldPath,
        wants_string: &dyn Fn(&FieldPath) -> bool,
        stack: &mut Vec<String>,
        errors: &mut Vec<(FieldPath, VarError)>,
    ) {
        match v {
            Value::String(s) if !has_open(s) => {}
            Value::String(s) => {
                *v = match self.string(s, stack) {
                    Ok(r) => {
                        let wants = matches!(r.value, Value::Number(_) | Value::Bool(_))
                            && wants_string(at);
                        typed(value_of(r), wants)
                    }
                    Err(e) => {
                        errors.push((at.clone(), e));
                        Value::Null
                    }
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter_mut().enumerate() {
                    at.0.push(Segment::Index(i));
                    self.tree(x, at, wants_string, stack, errors);
                    at.0.pop();
                }
            }
            Value::Object(m) if !m.keys().any(|k| has_open(k)) => {
                for (k, x) in m.iter_mut() {
                    at.0.push(Segment::Key(k.clone()));
                    self.tree(x, at, wants_string, stack, errors);
                    at.0.pop();
                }
            }
            Value::Object(m) => {
                // Keys with references: the map is made again, each key resolved before its
                // value (a key that resolves to an earlier one takes its place).
                let old = std::mem::take(m);
                let mut out = Map::with_capacity(old.len());
                for (k, mut x) in old {
                    at.0.push(Segment::Key(k.clone()));
                    let key = match self.text(&k, stack) {
                        Ok(k2) => k2,
                        Err(e) => {
                            errors.push((at.clone(), e));
                            k
                        }
                    };
                    self.tree(&mut x, at, wants_string, stack, errors);
                    at.0.pop();
                    out.insert(key, x);
                }
                *m = out;
            }
            _ => {}
        }
    }

    /// Resolve one string: a lone reference keeps the type of its value.
    pub fn resolve_str(&self, s: &str) -> Result<Value, VarError> {
        self.string(s, &mut Vec::new()).map(value_of)
    }

    /// Resolve one string into text (for headers, keys, selectors): the result must be a scalar.
    pub fn resolve_text(&self, s: &str) -> Result<String, VarError> {
        self.text(s, &mut Vec::new())
    }

    /// Resolve a single reference path (as in `enabled: ${path}`).
    pub fn resolve_path(&self, path: &str) -> Result<Value, VarError> {
        self.reference(path, &mut Vec::new()).map(value_of)
    }

    fn text(&self, s: &str, stack: &mut Vec<String>) -> Result<String, VarError> {
        if !has_open(s) {
            return Ok(s.to_string());
        }
        let r = self.string(s, stack)?;
        match &r.value {
            Value::String(t) => Ok(t.clone()),
            Value::Number(n) => Ok(n.to_string()),
            Value::Bool(b) => Ok(b.to_string()),
            other => Err(embed_error(s, other)),
        }
    }

    fn string(&self, s: &str, stack: &mut Vec<String>) -> Result<Rc<Resolved>, VarError> {
        if !has_open(s) {
            return Ok(Rc::new(Resolved {
                value: Value::String(s.to_string()),
                chain: Vec::new(),
            }));
        }
        let pieces = scan(s)?;
        self.pieces(s, &pieces, stack)
    }

    /// [`Resolver::string`] of a string `s` scanned into `pieces`.
    fn pieces(
        &self,
        s: &str,
        pieces: &[Piece],
        stack: &mut Vec<String>,
    ) -> Result<Rc<Resolved>, VarError> {
        if let [Piece::Ref(p)] = pieces {
            return self.reference(p, stack);
        }
        let mut out = String::new();
        // The reference with the longest chain, whose chain becomes this string's.
        let mut longest: Option<Rc<Resolved>> = None;
        for piece in pieces {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::Ref(p) => {
                    let r = self.reference(p, stack)?;
                    match &r.value {
                        Value::String(t) => out.push_str(t),
                        Value::Number(n) => out.push_str(&n.to_string()),
                        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
                        other => {
                            return Err(VarError::new(
                                codes::KUREL_VARIABLE_TYPE,
                                format!(
                                    "${{{p}}} is {} and cannot be part of the text {s:?}",
                                    describe(other)
                                ),
                                "only strings, numbers and booleans can be embedded in text; \
                                 reference a scalar, or make the whole value the reference",
                            ))
                        }
                    }
                    if r.chain.len() > longest.as_ref().map_or(0, |l| l.chain.len()) {
                        longest = Some(r);
                    }
                }
            }
            if out.len() > MAX_STRING_BYTES {
                return Err(VarError::new(
                    codes::KUREL_VARIABLE_DEPTH,
                    format!("resolving {s:?} produces more than {MAX_STRING_BYTES} bytes"),
                    "parameters that embed each other many times grow exponentially; simplify them",
                ));
            }
        }
        Ok(Rc::new(Resolved {
            value: Value::String(out),
            chain: longest.map(|l| l.chain.clone()).unwrap_or_default(),
        }))
    }

    fn reference(&self, path: &str, stack: &mut Vec<String>) -> Result<Rc<Resolved>, VarError> {
        if let Some(pos) = stack.iter().position(|p| p == path) {
            let mut cycle: Vec<&str> = stack[pos..].iter().map(String::as_str).collect();
            cycle.push(path);
            return Err(VarError::new(
                codes::KUREL_VARIABLE_CYCLE,
                format!("cyclic variable reference: {}", cycle.join(" → ")),
                "break the cycle: one of these parameters must hold a value, not a reference",
            ));
        }
        if stack.len() >= self.max_depth {
            return Err(self.too_deep(stack, &[path.to_string()]));
        }
        let memo = self.memo.borrow().get(path).cloned();
        let r = match memo {
            Some(r) => r?,
            None => {
                stack.push(path.to_string());
                let r = self.compute(path, stack).map(Rc::new);
                stack.pop();
                // Errors that depend on the stack (cycles, depth) are not memoised: the same path can
                // be fine when reached along a shorter chain.
                let cacheable = match &r {
                    Ok(_) => true,
                    Err(e) => {
                        e.code != codes::KUREL_VARIABLE_CYCLE
                            && e.code != codes::KUREL_VARIABLE_DEPTH
                    }
                };
                if cacheable {
                    self.memo.borrow_mut().insert(path.to_string(), r.clone());
                }
                r?
            }
        };
        if stack.len() + r.chain.len() > self.max_depth {
            return Err(self.too_deep(stack, &r.chain));
        }
        Ok(r)
    }

    fn too_deep(&self, stack: &[String], below: &[String]) -> VarError {
        let mut chain: Vec<&str> = stack.iter().map(String::as_str).collect();
        chain.extend(below.iter().map(String::as_str));
        VarError::new(
            codes::KUREL_VARIABLE_DEPTH,
            format!(
                "variable references nest deeper than the maximum depth of {}: {}",
                self.max_depth,
                chain.join(" → ")
            ),
            "shorten the chain of parameters that reference other parameters",
        )
    }

    fn compute(&self, path: &str, stack: &mut Vec<String>) -> Result<Resolved, VarError> {
        // The common spelling is looked up without building its steps; what it does not find
        // takes the general way, which also explains why.
        let plain = is_plain_path(path)
            .then(|| {
                lookup_plain(self.params, path).or_else(|| match path.strip_prefix("values.") {
                    Some(rest) if self.params.get("values").is_none() => {
                        lookup_plain(self.params, rest)
                    }
                    _ => None,
                })
            })
            .flatten();
        let raw = match plain {
            Some(raw) => raw,
            None => self.find(path, stack)?,
        };
        let mut longest: Vec<String> = Vec::new();
        let value = self.deep(raw, stack, &mut longest)?;
        let mut chain = vec![path.to_string()];
        chain.extend(longest);
        Ok(Resolved { value, chain })
    }

    /// The parameter at `path`, by its steps.
    fn find(&self, path: &str, stack: &[String]) -> Result<&'p Value, VarError> {
        let steps = parse_path(path)?;
        lookup(self.params, &steps)
            .or_else(|| {
                // The prototype exposed parameters under `values.` in patches; accept that spelling
                // when no parameter is actually called `values`.
                match steps.split_first() {
                    Some((Step::Key(k), rest))
                        if k == "values" && self.params.get("values").is_none() =>
                    {
                        lookup(self.params, rest)
                    }
                    _ => None,
                }
            })
            .ok_or_else(|| self.undefined(path, &steps, stack))
    }

    /// A parameter's value with its own references resolved, `longest` the longest chain met.
    fn deep(
        &self,
        v: &Value,
        stack: &mut Vec<String>,
        longest: &mut Vec<String>,
    ) -> Result<Value, VarError> {
        // A copy resolved in place, as a template is ([`Resolver::resolve_tree_typed`]).
        let mut out = v.clone();
        self.deep_in_place(&mut out, stack, longest)?;
        Ok(out)
    }

    fn deep_in_place(
        &self,
        v: &mut Value,
        stack: &mut Vec<String>,
        longest: &mut Vec<String>,
    ) -> Result<(), VarError> {
        match v {
            Value::String(s) if !has_open(s) => {}
            Value::String(s) => {
                let r = self.string(s, stack)?;
                if r.chain.len() > longest.len() {
                    longest.clone_from(&r.chain);
                }
                *v = value_of(r);
            }
            Value::Array(items) => {
                for x in items {
                    self.deep_in_place(x, stack, longest)?;
                }
            }
            Value::Object(m) if !m.keys().any(|k| has_open(k)) => {
                for x in m.values_mut() {
                    self.deep_in_place(x, stack, longest)?;
                }
            }
            Value::Object(m) => {
                // Each key resolved before its value; a key that resolves to an earlier one
                // takes its place.
                let old = std::mem::take(m);
                let mut out = Map::with_capacity(old.len());
                for (k, mut x) in old {
                    let key = self.text(&k, stack)?;
                    self.deep_in_place(&mut x, stack, longest)?;
                    out.insert(key, x);
                }
                *m = out;
            }
            _ => {}
        }
        Ok(())
    }

    fn undefined(&self, path: &str, steps: &[Step], stack: &[String]) -> VarError {
        // Name the deepest existing map and its keys: the usual cause is a typo.
        let mut have = self.params;
        let mut known = String::new();
        for s in steps {
            let next = match s {
                Step::Key(k) => have.as_object().and_then(|m| m.get(k)),
                Step::Index(i) => have.as_array().and_then(|a| a.get(*i)),
            };
            match next {
                Some(n) => {
                    have = n;
                    match s {
                        Step::Key(k) if known.is_empty() => known.push_str(k),
                        Step::Key(k) => {
                            known.push('.');
                            known.push_str(k)
                        }
                        Step::Index(i) => known.push_str(&format!("[{i}]")),
                    }
                }
                None => break,
            }
        }
        // The stack ends with this path itself.
        let through = stack.split_last().map(|(_, rest)| rest).unwrap_or(&[]);
        let via = if through.is_empty() {
            String::new()
        } else {
            let through: Vec<String> = through.iter().map(|p| bounded(p)).collect();
            format!(" (referenced through {})", through.join(" → "))
        };
        let hint = match have {
            Value::Object(m) if !m.is_empty() => {
                let keys: Vec<String> = m.keys().map(|k| bounded(k)).take(12).collect();
                let at = if known.is_empty() {
                    "the top level".to_string()
                } else {
                    bounded(&known)
                };
                format!(
                    "define it in parameters.yaml (inline defaults are not supported); {at} has: {}",
                    keys.join(", ")
                )
            }
            Value::Array(a) => format!(
                "{} is a list of {} item(s); indexes start at 0",
                bounded(&known),
                a.len()
            ),
            _ => "define it in parameters.yaml (inline defaults are not supported)".to_string(),
        };
        VarError::new(
            codes::KUREL_VARIABLE_UNDEFINED,
            format!("undefined variable {}{via}", reference(path)),
            hint,
        )
    }
}

fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "a map",
    }
}

fn embed_error(s: &str, v: &Value) -> VarError {
    VarError::new(
        codes::KUREL_VARIABLE_TYPE,
        format!(
            "{} resolves to {}, but text is needed here",
            quote(s),
            describe(v)
        ),
        "reference a string, number or boolean here",
    )
}

/// JSON-ish type name of a value, for messages.
pub fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn r(params: Value, s: &str) -> Result<Value, VarError> {
        Resolver::new(&params, DEFAULT_MAX_DEPTH).resolve_str(s)
    }

    /// A template resolved by its plan is the template walked: the same value, the same errors
    /// in the same order, numbers and booleans written as text in string fields alike.
    #[test]
    fn planned_resolution_is_the_walk() {
        let params = json!({
            "name": "web", "port": 8080, "on": true, "labels": {"a": "1"},
            "nested": "${name}-x", "loop": "${loop}",
        });
        let template = json!({
            "metadata": {"name": "${name}", "labels": "${labels}", "annotations": {"port": "${port}", "on": "${on}"}},
            "spec": {
                "ports": [{"port": "${port}", "name": "p-${port}"}, {"name": "$${literal}"}],
                "text": "${nested}",
                "broken": "${missing}", "syntax": "${ bad path", "cycle": "${loop}",
                "whole": "${labels}-x", "plain": "no reference", "n": 3,
            },
        });
        let strings = |p: &FieldPath| {
            let p = p.to_string();
            p == "metadata.annotations.port"
                || p == "metadata.annotations.on"
                || p == "spec.ports[0].port"
        };
        let resolver = Resolver::new(&params, DEFAULT_MAX_DEPTH);
        let (mut walked_errors, mut planned_errors) = (Vec::new(), Vec::new());
        let walked = resolver.resolve_tree_typed(
            &template,
            &FieldPath::root(),
            &strings,
            &mut walked_errors,
        );
        let plan = TreePlan::of(&template, &strings).expect("no reference in a key");
        // A fresh resolver: nothing memoised from the walk.
        let planned = Resolver::new(&params, DEFAULT_MAX_DEPTH).resolve_planned(
            &template,
            &plan,
            &mut planned_errors,
        );
        assert_eq!(planned, walked);
        assert_eq!(planned_errors, walked_errors);
        assert_eq!(walked["metadata"]["annotations"]["port"], json!("8080"));
        assert_eq!(walked["spec"]["ports"][0]["port"], json!("8080"));
        assert_eq!(walked_errors.len(), 4, "{walked_errors:?}");
        // A reference in a mapping key: no plan, the template is walked.
        assert!(TreePlan::of(&json!({"data": {"${name}": "v"}}), &strings).is_none());
    }

    proptest::proptest! {
        /// The shortcut of `check_body` accepts only paths `parse_path` parses, so no reference
        /// it passes would have had a diagnostic; and it takes the common spellings.
        #[test]
        fn plain_paths_are_paths(body in "[a-c_.|\\[\\]0-9 -]{0,8}") {
            if is_plain_path(&body) {
                proptest::prop_assert!(parse_path(&body).is_ok(), "{body:?}");
            }
        }

        /// `find_open` is `str::find("${")`.
        #[test]
        fn find_open_is_find(s in "[$${}a]{0,10}") {
            proptest::prop_assert_eq!(crate::delimiter::find_open(&s), s.find("${"));
        }
    }

    #[test]
    fn common_paths_are_plain() {
        for p in ["a", "app.replicas", "a-b.c_d.E9"] {
            assert!(is_plain_path(p), "{p}");
        }
        for p in ["", ".", "a.", ".a", "a..b", "a[0]", "a|b", " a", "a b"] {
            assert!(!is_plain_path(p), "{p:?}");
        }
    }

    #[test]
    fn lone_reference_keeps_its_type() {
        let p = json!({"app": {"replicas": 3, "on": true, "labels": {"a": "b"}}});
        assert_eq!(r(p.clone(), "${app.replicas}").unwrap(), json!(3));
        assert_eq!(r(p.clone(), "${app.on}").unwrap(), json!(true));
        assert_eq!(r(p, "${app.labels}").unwrap(), json!({"a": "b"}));
    }

    #[test]
    fn mixed_text_is_a_string_and_rejects_maps() {
        let p = json!({"img": {"repo": "nginx", "tag": 1.21}, "m": {"a": 1}, "n": null});
        assert_eq!(
            r(p.clone(), "${img.repo}:${img.tag}").unwrap(),
            json!("nginx:1.21")
        );
        let e = r(p.clone(), "x-${m}").unwrap_err();
        assert_eq!(e.code, codes::KUREL_VARIABLE_TYPE);
        assert!(e.message.contains("a map"), "{}", e.message);
        assert_eq!(r(p, "x-${n}").unwrap_err().code, codes::KUREL_VARIABLE_TYPE);
    }

    #[test]
    fn indexes_and_nested_references() {
        let p = json!({"hosts": [{"name": "a"}, {"name": "${d}"}], "d": "${e}.example", "e": "b"});
        assert_eq!(
            r(p.clone(), "${hosts[1].name}").unwrap(),
            json!("b.example")
        );
        assert_eq!(
            r(p, "${hosts[5].name}").unwrap_err().code,
            codes::KUREL_VARIABLE_UNDEFINED
        );
    }

    #[test]
    fn inline_defaults_and_expressions_are_errors() {
        let p = json!({"a": 1});
        let e = r(p.clone(), "${a|2}").unwrap_err();
        assert!(e.message.contains("inline defaults are not supported"));
        assert_eq!(
            r(p.clone(), "${a == 1}").unwrap_err().code,
            codes::KUREL_VARIABLE_SYNTAX
        );
        assert_eq!(
            r(p.clone(), "${a").unwrap_err().code,
            codes::KUREL_VARIABLE_SYNTAX
        );
        assert_eq!(r(p, "${}").unwrap_err().code, codes::KUREL_VARIABLE_SYNTAX);
    }

    #[test]
    fn escape_writes_a_literal() {
        assert_eq!(
            r(json!({}), "echo $${HOME}").unwrap(),
            json!("echo ${HOME}")
        );
    }

    #[test]
    fn cycles_name_the_chain() {
        let p = json!({"a": "${b}", "b": "x${c}", "c": "${a}"});
        let e = r(p, "${a}").unwrap_err();
        assert_eq!(e.code, codes::KUREL_VARIABLE_CYCLE);
        assert!(e.message.contains("a → b → c → a"), "{}", e.message);
    }

    #[test]
    fn depth_is_bounded_and_configurable() {
        let mut p = serde_json::Map::new();
        for i in 0..12 {
            p.insert(format!("v{i}"), json!(format!("${{v{}}}", i + 1)));
        }
        p.insert("v12".into(), json!("end"));
        let p = Value::Object(p);
        // v2 → … → v12 is 11 references.
        let ok = Resolver::new(&p, 11).resolve_str("${v2}").unwrap();
        assert_eq!(ok, json!("end"));
        let e = Resolver::new(&p, 10).resolve_str("${v2}").unwrap_err();
        assert_eq!(e.code, codes::KUREL_VARIABLE_DEPTH);
        assert!(e.message.contains("v2 → v3"), "{}", e.message);
        let e = Resolver::new(&p, 0).resolve_str("${v12}").unwrap_err();
        assert_eq!(e.code, codes::KUREL_VARIABLE_DEPTH);
    }

    #[test]
    fn exponential_fan_out_is_cheap() {
        let mut p = serde_json::Map::new();
        for i in 0..9 {
            p.insert(
                format!("v{i}"),
                json!(format!("${{v{}}}${{v{}}}", i + 1, i + 1)),
            );
        }
        p.insert("v9".into(), json!("x"));
        let p = Value::Object(p);
        let v = Resolver::new(&p, 10).resolve_str("${v0}").unwrap();
        assert_eq!(v.as_str().unwrap().len(), 512);
    }

    #[test]
    fn undefined_names_known_keys() {
        let p = json!({"app": {"replicas": 1, "name": "x"}});
        let e = r(p, "${app.replica}").unwrap_err();
        assert!(e.hint.contains("app has: replicas, name"), "{}", e.hint);
    }

    #[test]
    fn values_prefix_is_accepted() {
        assert_eq!(r(json!({"a": 1}), "${values.a}").unwrap(), json!(1));
    }
}
