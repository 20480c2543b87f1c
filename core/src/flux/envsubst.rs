//! `${…}` substitution in a text, with the grammar and the quirks of `fluxcd/pkg/envsubst` (a
//! fork of `drone/envsubst`), which kustomize-controller runs over each object's YAML.
//!
//! - Top level: `${` starts an expression, `$$` is one literal `$` (so `$${v}` is the text `${v}`),
//!   any other character (a lone `$`, `$v`, `\`) is itself.
//! - Expressions: `${v}`, `${#v}`, `${v^}`, `${v^^}`, `${v,}`, `${v,,}`, `${v:n}`, `${v:n:len}`,
//!   `${v#p}`, `${v##p}`, `${v%p}`, `${v%%p}`, `${v/p/r}`, `${v//p/r}`, `${v/#p/r}`, `${v/%p/r}`,
//!   and the default operators `${v-d}`, `${v=d}`, `${v:-d}`, `${v:=d}`, `${v:?d}`, `${v:+d}`,
//!   which all give `d` when the value is *empty* (set or not). Arguments may hold expressions.
//! - Trim patterns are shell globs (Flux's fork of Go's `path.Match`, in which `*` and `?` match `/`; `flux/glob.rs`); replace patterns are
//!   plain text.
//! - Strict mode: an expression that reads a variable that is not set fails with
//!   `variable not set (strict mode): "NAME"` unless its operator is a default operator. All
//!   arguments are evaluated first, so `${set:-${unset}}` fails too.
//! - Values are bytes, as in Go: `${#v}` counts bytes, `${v:1:2}` slices bytes. A result that is
//!   not valid UTF-8 is an error (Flux's YAML reader rejects it too).
//!
//! Work is bounded: every byte any expression produces (the output and intermediate values)
//! counts against [`Options::max_output_bytes`], trim patterns against a fixed matching budget,
//! and expressions nest at most [`MAX_NESTING`] deep.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kiln_core::flux::envsubst::{substitute, Options};
//!
//! let vars = BTreeMap::from([("app".to_string(), "shop.v2".to_string())]);
//! let opts = Options::default();
//! assert_eq!(substitute("${app%.*}-${app^^} $${app}", &vars, &opts).unwrap(), "shop-SHOP.V2 ${app}");
//! let err = substitute("${region}", &vars, &opts).unwrap_err();
//! assert_eq!(err.to_string(), r#"variable not set (strict mode): "region""#);
//! ```

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::OnceLock;

use super::glob::{decode, Pattern};

/// How deep expressions may nest inside each other's arguments.
pub const MAX_NESTING: usize = 64;

/// Work units (bitset words) that trim-pattern matching may spend in one substitution: about a
/// second of work, far beyond what real manifests need.
pub const MAX_MATCH_WORK: u64 = 1 << 28;

/// Where variables come from.
pub trait Lookup {
    /// The value of a variable, `None` when it is not set.
    fn lookup(&self, name: &str) -> Option<&str>;
}

impl Lookup for BTreeMap<String, String> {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

impl Lookup for HashMap<String, String> {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.get(name).map(String::as_str)
    }
}

/// Settings of one substitution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Fail on a variable that is not set (unless a default operator reads it). Without it, a
    /// variable that is not set is empty.
    pub strict: bool,
    /// Most bytes the substitution may produce, the result and intermediate values together.
    pub max_output_bytes: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            strict: true,
            max_output_bytes: crate::limits::DEFAULT_OUTPUT_BYTES,
        }
    }
}

/// Why a substitution failed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// What went wrong.
    pub kind: ErrorKind,
    /// Byte offset in the text: the `${` of the expression (unset variables, limits) or where
    /// parsing stopped (syntax).
    pub offset: usize,
}

/// The kinds of failure. Messages name variables, never their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorKind {
    /// Strict mode: the expression reads this variable and it is not set.
    Unset(String),
    /// The text does not parse.
    Syntax(Syntax),
    /// The substitution would produce more than this many bytes.
    TooLarge(usize),
    /// Trim patterns need more than [`MAX_MATCH_WORK`].
    TooMuchWork,
    /// A substring or trim cut a multi-byte character, so the result is not valid UTF-8.
    NotUtf8,
}

/// Syntax errors, with the messages Flux prints for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Syntax {
    /// An operator is not followed by what it needs (`${#v:1}`, `${v^x}`, `${v/a}`).
    BadSubstitution,
    /// A name is followed by something that is not an operator (`${AUTH[@]}`, `${v+d}`).
    MissingClosingBrace,
    /// `${` is not followed by a name (`${}`, `${ v}`, `${@}`).
    VariableName,
    /// An operator's argument is missing (`${v#}`, `${v:-…` without `}`).
    FunctionArgument,
    /// Expressions nest deeper than [`MAX_NESTING`].
    TooDeep,
}

impl fmt::Display for Syntax {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Syntax::BadSubstitution => "bad substitution",
            Syntax::MissingClosingBrace => "missing closing brace",
            Syntax::VariableName => "unable to parse variable name",
            Syntax::FunctionArgument => "unable to parse substitution within function",
            Syntax::TooDeep => "expressions nest too deeply",
        })
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ErrorKind::Unset(name) => write!(f, "variable not set (strict mode): {name:?}"),
            ErrorKind::Syntax(Syntax::TooDeep) => {
                write!(f, "expressions nest more than {MAX_NESTING} levels deep")
            }
            ErrorKind::Syntax(s) => s.fmt(f),
            ErrorKind::TooLarge(limit) => write!(
                f,
                "substitution would produce more than {limit} bytes (the output limit)"
            ),
            ErrorKind::TooMuchWork => f.write_str(
                "trim patterns (${v#p}, ${v%p}) need more matching work than allowed",
            ),
            ErrorKind::NotUtf8 => f.write_str(
                "a substring or trim operator cut a multi-byte character: the result is not valid UTF-8",
            ),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.kind.fmt(f)
    }
}

impl std::error::Error for Error {}

/// Substitute every `${…}` of `text` from `vars`: [`Template::size`], then [`Template::render`].
pub fn substitute<L: Lookup + ?Sized>(
    text: &str,
    vars: &L,
    options: &Options,
) -> Result<String, Error> {
    let template = Template::parse(text)?;
    let size = template.size(vars, options)?;
    template.render(vars, options, size)
}

/// A text parsed once, measured before it is built: the size of the result is known, and
/// counted against the limit, before any of it is (a value used forty times is forty borrowed
/// slices of one string until the result has been measured; a caller substituting many texts
/// adds their sizes up first).
#[derive(Debug, Clone)]
pub struct Template {
    nodes: Vec<Node>,
}

impl Template {
    /// Parse `text`.
    pub fn parse(text: &str) -> Result<Self, Error> {
        Ok(Self {
            nodes: parse(text)?,
        })
    }

    /// The length of the result, every expression evaluated and every error found, and nothing
    /// of the result built: values are borrowed from the variables wherever they are used as
    /// they are (`${v}`, substrings, trims), and what must be made (case changes, replacements,
    /// defaults of several parts) is counted against the limit before it is made, and dropped
    /// once measured.
    pub fn size<L: Lookup + ?Sized>(&self, vars: &L, options: &Options) -> Result<usize, Error> {
        let mut ev = Eval::new(vars, options);
        let mut total = 0;
        for n in &self.nodes {
            total += ev.piece(n)?.len();
        }
        Ok(total)
    }

    /// The result, in one buffer of `size` bytes (what [`Template::size`] gave with the same
    /// variables and options).
    pub fn render<L: Lookup + ?Sized>(
        &self,
        vars: &L,
        options: &Options,
        size: usize,
    ) -> Result<String, Error> {
        let mut ev = Eval::new(vars, options);
        let mut out = Vec::with_capacity(size.min(options.max_output_bytes));
        for n in &self.nodes {
            out.extend_from_slice(&ev.piece(n)?);
        }
        String::from_utf8(out).map_err(|_| Error {
            kind: ErrorKind::NotUtf8,
            offset: 0,
        })
    }
}

/// Whether `text` holds anything substitution would change: an expression or a `$$`.
pub fn is_affected(text: &str) -> bool {
    let b = text.as_bytes();
    b.windows(2)
        .any(|w| w[0] == b'$' && (w[1] == b'{' || w[1] == b'$'))
}

// ---------------------------------------------------------------------------------------------
// Syntax tree

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Text(String),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
struct Expr {
    /// Offset of its `${`.
    start: usize,
    name: String,
    op: Op,
    args: Vec<Node>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `${v}`.
    Value,
    /// `${#v}`.
    Length,
    /// `${v^^}`, `${v,,}`.
    Case { upper: bool },
    /// `${v^}`, `${v,}`.
    CaseFirst { upper: bool },
    /// `${v,^}`, `${v^,}`: accepted by the parser, change nothing.
    CaseNone,
    /// `${v:n}`, `${v:n:len}`.
    Substring,
    /// `${v#p}`, `${v##p}`.
    TrimPrefix { longest: bool },
    /// `${v%p}`, `${v%%p}`.
    TrimSuffix { longest: bool },
    /// `${v/p/r}`, `${v//p/r}`, `${v/#p/r}`, `${v/%p/r}`.
    Replace(Replace),
    /// `${v-d}`, `${v=d}`, `${v:-d}`, `${v:=d}`, `${v:?d}`, `${v:+d}`.
    Default,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Replace {
    First,
    All,
    Prefix,
    Suffix,
}

// ---------------------------------------------------------------------------------------------
// Parser

struct Parser<'a> {
    s: &'a str,
    pos: usize,
    depth: usize,
}

fn parse(text: &str) -> Result<Vec<Node>, Error> {
    let mut p = Parser {
        s: text,
        pos: 0,
        depth: 0,
    };
    let b = text.as_bytes();
    let mut nodes = Vec::new();
    let mut lit = String::new();
    while p.pos < b.len() {
        let Some(d) = text[p.pos..].find('$') else {
            lit.push_str(&text[p.pos..]);
            break;
        };
        lit.push_str(&text[p.pos..p.pos + d]);
        p.pos += d;
        match b.get(p.pos + 1) {
            Some(b'{') => {
                if !lit.is_empty() {
                    nodes.push(Node::Text(std::mem::take(&mut lit)));
                }
                let start = p.pos;
                p.pos += 2;
                nodes.push(Node::Expr(p.expr(start)?));
            }
            Some(b'$') => {
                lit.push('$');
                p.pos += 2;
            }
            _ => {
                lit.push('$');
                p.pos += 1;
            }
        }
    }
    if !lit.is_empty() {
        nodes.push(Node::Text(lit));
    }
    Ok(nodes)
}

/// Letters and decimal digits of any script, and `_` (Go's `unicode.IsLetter`, `IsDigit`).
fn is_name_char(c: char) -> bool {
    if c.is_ascii() {
        return c.is_ascii_alphanumeric() || c == '_';
    }
    static RE: OnceLock<Option<regex::Regex>> = OnceLock::new();
    let mut buf = [0u8; 4];
    RE.get_or_init(|| regex::Regex::new(r"^[\p{L}\p{Nd}]$").ok())
        .as_ref()
        .is_some_and(|re| re.is_match(c.encode_utf8(&mut buf)))
}

impl Parser<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.pos..].chars().next()
    }

    fn byte_at(&self, i: usize) -> Option<u8> {
        self.s.as_bytes().get(i).copied()
    }

    fn fail(&self, s: Syntax) -> Error {
        Error {
            kind: ErrorKind::Syntax(s),
            offset: self.pos,
        }
    }

    fn starts_expr(&self) -> bool {
        self.s[self.pos..].starts_with("${")
    }

    /// After `${`.
    fn expr(&mut self, start: usize) -> Result<Expr, Error> {
        self.depth += 1;
        let r = if self.depth > MAX_NESTING {
            Err(self.fail(Syntax::TooDeep))
        } else {
            self.expr_body(start)
        };
        self.depth -= 1;
        r
    }

    fn expr_body(&mut self, start: usize) -> Result<Expr, Error> {
        let mk = |name: String, op: Op, args: Vec<Node>| Expr {
            start,
            name,
            op,
            args,
        };
        if self.peek() == Some('#') {
            self.pos += 1;
            let name = self.name();
            if name.is_empty() {
                return Err(self.fail(Syntax::BadSubstitution));
            }
            self.close()?;
            return Ok(mk(name, Op::Length, Vec::new()));
        }
        let name = self.name();
        if name.is_empty() {
            return Err(self.fail(Syntax::VariableName));
        }
        match self.peek() {
            Some('}') => {
                self.pos += 1;
                Ok(mk(name, Op::Value, Vec::new()))
            }
            Some(':') => match self.s[self.pos + 1..].chars().next() {
                Some('=' | '-' | '?' | '+') => {
                    self.pos += 2;
                    Ok(mk(name, Op::Default, self.default_args()?))
                }
                // Go's scanner steps back by the width of this character instead of the
                // colon's and then fails; a colon at the end fails as well.
                None => {
                    self.pos += 1;
                    Err(self.fail(Syntax::BadSubstitution))
                }
                Some(c) if !c.is_ascii() => Err(self.fail(Syntax::BadSubstitution)),
                Some(_) => {
                    self.pos += 1;
                    let mut args = vec![self.arg(|c| c == ':' || c == '}', false)?];
                    match self.peek() {
                        Some('}') => {
                            self.pos += 1;
                            return Ok(mk(name, Op::Substring, args));
                        }
                        Some(':') => {
                            while self.peek() == Some(':') {
                                self.pos += 1;
                            }
                        }
                        _ => return Err(self.fail(Syntax::BadSubstitution)),
                    }
                    args.push(self.arg(|c| c == '}', false)?);
                    self.close()?;
                    Ok(mk(name, Op::Substring, args))
                }
            },
            // `-` directly after the name is kiln's addition: Flux's parser stops at it with
            // "missing closing brace" although its evaluator treats `-` as a default operator.
            Some('=' | '-') => {
                self.pos += 1;
                Ok(mk(name, Op::Default, self.default_args()?))
            }
            Some(',' | '^') => {
                let start_op = self.pos;
                while self.pos - start_op < 2 && matches!(self.peek(), Some(',' | '^')) {
                    self.pos += 1;
                }
                let op = match &self.s[start_op..self.pos] {
                    "^^" => Op::Case { upper: true },
                    ",," => Op::Case { upper: false },
                    "^" => Op::CaseFirst { upper: true },
                    "," => Op::CaseFirst { upper: false },
                    _ => Op::CaseNone,
                };
                self.close()?;
                Ok(mk(name, op, Vec::new()))
            }
            Some('/') => {
                self.pos += 1;
                let kind = match self.peek() {
                    Some('/') => Replace::All,
                    Some('#') => Replace::Prefix,
                    Some('%') => Replace::Suffix,
                    _ => Replace::First,
                };
                if kind != Replace::First {
                    self.pos += 1;
                }
                let pattern = if self.peek() == Some('/') {
                    Node::Text(String::new())
                } else {
                    self.arg(|c| c == '/', true)?
                };
                if self.peek() != Some('/') {
                    return Err(self.fail(Syntax::BadSubstitution));
                }
                while self.peek() == Some('/') {
                    self.pos += 1;
                }
                let mut args = vec![pattern];
                if self.peek() == Some('}') {
                    self.pos += 1;
                } else {
                    args.push(self.arg(|c| c == '}', true)?);
                    self.close()?;
                }
                Ok(mk(name, Op::Replace(kind), args))
            }
            Some(c @ ('#' | '%')) => {
                self.pos += 1;
                let longest = self.peek() == Some(c);
                if longest {
                    self.pos += 1;
                }
                let op = if c == '#' {
                    Op::TrimPrefix { longest }
                } else {
                    Op::TrimSuffix { longest }
                };
                let arg = self.arg(|c| c == '}', false)?;
                self.close()?;
                Ok(mk(name, op, vec![arg]))
            }
            _ => Err(self.fail(Syntax::MissingClosingBrace)),
        }
    }

    /// A name: letters, digits and `_`.
    fn name(&mut self) -> String {
        let start = self.pos;
        while let Some(c) = self.peek() {
            if !is_name_char(c) {
                break;
            }
            self.pos += c.len_utf8();
        }
        self.s[start..self.pos].to_string()
    }

    fn close(&mut self) -> Result<(), Error> {
        if self.peek() == Some('}') {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.fail(Syntax::BadSubstitution))
        }
    }

    /// The arguments of a default operator, up to its `}`: text and expressions, joined.
    fn default_args(&mut self) -> Result<Vec<Node>, Error> {
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Some('}') => {
                    self.pos += 1;
                    return Ok(args);
                }
                None => return Err(self.fail(Syntax::FunctionArgument)),
                Some(_) => args.push(self.arg(|c| c == '}', false)?),
            }
        }
    }

    /// One argument: an expression, or text up to a `stop` character or the next `${` (at
    /// least one character). With `escapes` (replace patterns and replacements), `$$` is `$`,
    /// `\/` is `/` and `\\` is `\`.
    fn arg(&mut self, stop: impl Fn(char) -> bool, escapes: bool) -> Result<Node, Error> {
        if self.starts_expr() {
            let start = self.pos;
            self.pos += 2;
            return Ok(Node::Expr(self.expr(start)?));
        }
        let mut text = String::new();
        let mut first = true;
        while let Some(c) = self.peek() {
            if !first && self.starts_expr() {
                break;
            }
            if escapes {
                let next = self.byte_at(self.pos + 1);
                let escaped = match c {
                    '$' => next == Some(b'$'),
                    '\\' => matches!(next, Some(b'/' | b'\\')),
                    _ => false,
                };
                if escaped {
                    if let Some(n) = next {
                        text.push(char::from(n));
                    }
                    self.pos += 2;
                    first = false;
                    continue;
                }
            }
            if stop(c) {
                break;
            }
            text.push(c);
            self.pos += c.len_utf8();
            first = false;
        }
        if text.is_empty() {
            return Err(self.fail(Syntax::FunctionArgument));
        }
        Ok(Node::Text(text))
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

struct Eval<'v, L: ?Sized> {
    vars: &'v L,
    strict: bool,
    limit: usize,
    produced: usize,
    work: u64,
}

impl<'v, L: Lookup + ?Sized> Eval<'v, L> {
    fn new(vars: &'v L, options: &Options) -> Self {
        Self {
            vars,
            strict: options.strict,
            limit: options.max_output_bytes,
            produced: 0,
            work: 0,
        }
    }

    /// Count `n` more produced bytes.
    fn charge(&mut self, n: usize, at: usize) -> Result<(), Error> {
        match self.produced.checked_add(n) {
            Some(total) if total <= self.limit => {
                self.produced = total;
                Ok(())
            }
            _ => Err(Error {
                kind: ErrorKind::TooLarge(self.limit),
                offset: at,
            }),
        }
    }

    /// Whether `n` more bytes still fit, before building them.
    fn fits(&self, n: u128, at: usize) -> Result<(), Error> {
        if self.produced as u128 + n <= self.limit as u128 {
            Ok(())
        } else {
            Err(Error {
                kind: ErrorKind::TooLarge(self.limit),
                offset: at,
            })
        }
    }

    /// What one node produces, counted: text as written, an expression's value (borrowed from
    /// the template or the variables where it can be).
    fn piece<'a>(&mut self, n: &'a Node) -> Result<Cow<'a, [u8]>, Error>
    where
        'v: 'a,
    {
        let (piece, at) = match n {
            Node::Text(t) => (Cow::Borrowed(t.as_bytes()), 0),
            Node::Expr(e) => (self.expr(e)?, e.start),
        };
        self.charge(piece.len(), at)?;
        Ok(piece)
    }

    /// `n` bytes made by `make`, counted against the limit before they are.
    fn made<'a>(
        &self,
        n: usize,
        at: usize,
        make: impl FnOnce() -> Vec<u8>,
    ) -> Result<Cow<'a, [u8]>, Error> {
        self.fits(n as u128, at)?;
        Ok(Cow::Owned(make()))
    }

    fn expr<'a>(&mut self, e: &'a Expr) -> Result<Cow<'a, [u8]>, Error>
    where
        'v: 'a,
    {
        let mut args = Vec::with_capacity(e.args.len());
        for a in &e.args {
            args.push(self.piece(a)?);
        }
        let value: &'v [u8] = match self.vars.lookup(&e.name) {
            Some(v) => v.as_bytes(),
            None if self.strict && e.op != Op::Default => {
                return Err(Error {
                    kind: ErrorKind::Unset(e.name.clone()),
                    offset: e.start,
                })
            }
            None => b"",
        };
        let arg = |i: usize| args.get(i).map(|a| &**a);
        let at = e.start;
        Ok(match e.op {
            Op::Value | Op::CaseNone => Cow::Borrowed(value),
            Op::Length => Cow::Owned(value.len().to_string().into_bytes()),
            Op::Case { upper } => {
                let n = case_mapped(value, upper).map(char::len_utf8).sum();
                self.made(n, at, || map_case(value, upper))?
            }
            Op::CaseFirst { upper } => {
                if value.is_empty() {
                    Cow::Borrowed(value)
                } else {
                    let (c, w) = decode(value);
                    let first = change_case(c, upper);
                    self.made(value.len() - w + first.len_utf8(), at, || {
                        let mut out = Vec::with_capacity(value.len() + 3);
                        push_char(&mut out, first);
                        out.extend_from_slice(&value[w..]);
                        out
                    })?
                }
            }
            Op::Substring => Cow::Borrowed(substring(value, arg(0), arg(1))),
            Op::TrimPrefix { longest } => match arg(0) {
                Some(p) => Cow::Borrowed(&value[self.trim(value, p, longest, at)?..]),
                None => Cow::Borrowed(value),
            },
            Op::TrimSuffix { longest } => match arg(0) {
                // Go reverses the characters of value and pattern, trims a prefix, and
                // reverses back; so does this, to give the same answers (`[a-z]` reversed is
                // no longer a class, and the value's invalid bytes become U+FFFD).
                Some(p) => {
                    self.fits((go_len(value) + go_len(p)) as u128, at)?;
                    let r = reverse(value);
                    let cut = self.trim(&r, &reverse(p), longest, at)?;
                    // A cut between characters of a value (valid UTF-8: it is a `str`) leaves
                    // the value's own prefix; one inside a character is reversed as Go does.
                    let whole = r.get(cut).is_none_or(|b| b & 0xC0 != 0x80);
                    match value.len().checked_sub(cut) {
                        Some(keep) if whole && r.len() == value.len() => {
                            Cow::Borrowed(&value[..keep])
                        }
                        _ => Cow::Owned(reverse(&r[cut..])),
                    }
                }
                None => Cow::Borrowed(value),
            },
            Op::Replace(kind) => {
                let old = arg(0).unwrap_or_default();
                let new = arg(1).unwrap_or_default();
                match kind {
                    Replace::First => self.replace(value, old, new, Some(1), at)?,
                    Replace::All => self.replace(value, old, new, None, at)?,
                    Replace::Prefix if args.len() == 2 && value.starts_with(old) => {
                        self.replace(value, old, new, Some(1), at)?
                    }
                    Replace::Suffix if args.len() == 2 && value.ends_with(old) => {
                        let keep = &value[..value.len() - old.len()];
                        self.made(keep.len() + new.len(), at, || [keep, new].concat())?
                    }
                    Replace::Prefix | Replace::Suffix => Cow::Borrowed(value),
                }
            }
            Op::Default if value.is_empty() && !args.is_empty() => {
                if args.len() == 1 {
                    args.swap_remove(0)
                } else {
                    let n = args.iter().map(|a| a.len()).sum();
                    self.made(n, at, || args.concat())?
                }
            }
            Op::Default => Cow::Borrowed(value),
        })
    }

    /// Where the shortest or longest non-empty prefix of `value` that `pattern` matches ends
    /// (0 when the pattern is malformed or nothing matches).
    fn trim(
        &mut self,
        value: &[u8],
        pattern: &[u8],
        longest: bool,
        at: usize,
    ) -> Result<usize, Error> {
        let Some(p) = Pattern::compile(pattern) else {
            return Ok(0);
        };
        self.work = self.work.saturating_add(p.cost(value.len()));
        if self.work > MAX_MATCH_WORK {
            return Err(Error {
                kind: ErrorKind::TooMuchWork,
                offset: at,
            });
        }
        Ok(match p.matching_prefixes(value) {
            Some((short, long)) => {
                if longest {
                    long
                } else {
                    short
                }
            }
            None => 0,
        })
    }

    /// Go's `strings.Replace`: the first `n` (all with `None`) non-overlapping occurrences of
    /// `old`; an empty `old` matches before every character and at the end.
    fn replace<'a>(
        &self,
        s: &'a [u8],
        old: &[u8],
        new: &[u8],
        n: Option<usize>,
        at: usize,
    ) -> Result<Cow<'a, [u8]>, Error> {
        if old == new {
            return Ok(Cow::Borrowed(s));
        }
        let limit = n.unwrap_or(usize::MAX);
        // Count first, so that a result over the limit is refused before it is built.
        let mut count = 0usize;
        each_occurrence(s, old, limit, |_| count += 1);
        if count == 0 {
            return Ok(Cow::Borrowed(s));
        }
        let len =
            s.len() as u128 + count as u128 * new.len() as u128 - count as u128 * old.len() as u128;
        self.fits(len, at)?;
        let mut out = Vec::with_capacity(len as usize);
        let mut from = 0;
        each_occurrence(s, old, limit, |st| {
            out.extend_from_slice(&s[from..st]);
            out.extend_from_slice(new);
            from = st + old.len();
        });
        out.extend_from_slice(&s[from..]);
        Ok(Cow::Owned(out))
    }
}

/// Call `f` with the start of each of the first `limit` occurrences of `needle` in `hay`, as
/// Go's `strings.Replace` finds them: non-overlapping, left to right; an empty needle occurs
/// before every character and at the end.
fn each_occurrence(hay: &[u8], needle: &[u8], limit: usize, mut f: impl FnMut(usize)) {
    if limit == 0 {
        return;
    }
    let mut n = 0;
    if needle.is_empty() {
        let mut i = 0;
        loop {
            f(i);
            n += 1;
            if n >= limit || i >= hay.len() {
                return;
            }
            i += decode(&hay[i..]).1;
        }
    }
    find_all(hay, needle, limit, f);
}

/// Call `f` with the start of each of the first `limit` non-overlapping occurrences of `needle`
/// (not empty) in `hay`, left to right, in linear time (Knuth–Morris–Pratt).
fn find_all(hay: &[u8], needle: &[u8], limit: usize, mut f: impl FnMut(usize)) {
    let m = needle.len();
    let mut fail = vec![0usize; m];
    let mut k = 0;
    for i in 1..m {
        while k > 0 && needle[i] != needle[k] {
            k = fail[k - 1];
        }
        if needle[i] == needle[k] {
            k += 1;
        }
        fail[i] = k;
    }
    let (mut q, mut found) = (0, 0);
    for (i, &b) in hay.iter().enumerate() {
        while q > 0 && b != needle[q] {
            q = fail[q - 1];
        }
        if b == needle[q] {
            q += 1;
        }
        if q == m {
            f(i + 1 - m);
            found += 1;
            if found >= limit {
                return;
            }
            // Non-overlapping: start afresh after the match.
            q = 0;
        }
    }
}

/// `${v:pos}` and `${v:pos:len}`, with Go's `strconv.Atoi` reading the numbers: a number that
/// does not parse leaves the value unchanged; a negative position counts from the end; a
/// negative length ends that many bytes before the end.
fn substring<'a>(v: &'a [u8], pos: Option<&[u8]>, len: Option<&[u8]>) -> &'a [u8] {
    let num = |a: &[u8]| -> Option<i128> {
        std::str::from_utf8(a)
            .ok()?
            .parse::<i64>()
            .ok()
            .map(i128::from)
    };
    let n = v.len() as i128;
    let Some(mut pos) = pos.and_then(num) else {
        return v;
    };
    if pos < 0 {
        pos = (n + pos).max(0);
    }
    let tail = |p: i128| if p < n { &v[p as usize..] } else { &v[..0] };
    let Some(len) = len else {
        return tail(pos);
    };
    let Some(len) = num(len) else {
        return v;
    };
    if len < 0 {
        let end = n + len;
        if end < pos {
            return &v[..0];
        }
        return &v[pos as usize..end as usize];
    }
    if pos + len >= n {
        return tail(pos);
    }
    &v[pos as usize..(pos + len) as usize]
}

/// Go's reversal of a string: its characters (an invalid byte is U+FFFD) in reverse order.
fn reverse(v: &[u8]) -> Vec<u8> {
    let mut chars = Vec::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        let (c, w) = decode(&v[i..]);
        chars.push(c);
        i += w;
    }
    let mut out = Vec::with_capacity(v.len());
    for &c in chars.iter().rev() {
        push_char(&mut out, c);
    }
    out
}

/// The length of `v` once Go has read it as characters (an invalid byte is U+FFFD, 3 bytes):
/// what [`reverse`] makes of it.
fn go_len(v: &[u8]) -> usize {
    let (mut i, mut n) = (0, 0);
    while i < v.len() {
        let (c, w) = decode(&v[i..]);
        n += c.len_utf8();
        i += w;
    }
    n
}

fn push_char(out: &mut Vec<u8>, c: char) {
    if c.is_ascii() {
        out.push(c as u8);
    } else {
        let mut buf = [0u8; 4];
        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
    }
}

/// The characters of `v` in upper or lower case (Go's `strings.ToUpper`/`ToLower`: an invalid
/// byte becomes U+FFFD).
fn case_mapped(v: &[u8], upper: bool) -> impl Iterator<Item = char> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let b = *v.get(i)?;
        if b.is_ascii() {
            i += 1;
            return Some(char::from(if upper {
                b.to_ascii_uppercase()
            } else {
                b.to_ascii_lowercase()
            }));
        }
        let (c, w) = decode(&v[i..]);
        i += w;
        Some(change_case(c, upper))
    })
}

/// Every character in upper or lower case ([`case_mapped`]).
fn map_case(v: &[u8], upper: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(v.len());
    for c in case_mapped(v, upper) {
        push_char(&mut out, c);
    }
    out
}

/// Go's `unicode.ToUpper`/`ToLower`: the *simple* case mapping, one character to one. Rust
/// gives full mappings (`ß` → `SS`); where that is several characters the simple mapping is
/// either none or one of the few spelled out here.
fn change_case(c: char, upper: bool) -> char {
    if upper {
        let simple = match c {
            '\u{1F80}'..='\u{1F87}' | '\u{1F90}'..='\u{1F97}' | '\u{1FA0}'..='\u{1FA7}' => {
                char::from_u32(c as u32 + 8)
            }
            '\u{1FB3}' => Some('\u{1FBC}'),
            '\u{1FC3}' => Some('\u{1FCC}'),
            '\u{1FF3}' => Some('\u{1FFC}'),
            _ => None,
        };
        if let Some(s) = simple {
            return s;
        }
        let mut it = c.to_uppercase();
        match (it.next(), it.next()) {
            (Some(u), None) => u,
            _ => c,
        }
    } else {
        if c == '\u{130}' {
            return 'i';
        }
        let mut it = c.to_lowercase();
        match (it.next(), it.next()) {
            (Some(l), None) => l,
            _ => c,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn sub(text: &str, pairs: &[(&str, &str)]) -> Result<String, ErrorKind> {
        substitute(text, &vars(pairs), &Options::default()).map_err(|e| e.kind)
    }

    fn lax(text: &str, pairs: &[(&str, &str)]) -> Result<String, ErrorKind> {
        let o = Options {
            strict: false,
            ..Options::default()
        };
        substitute(text, &vars(pairs), &o).map_err(|e| e.kind)
    }

    fn ok(text: &str, pairs: &[(&str, &str)]) -> String {
        sub(text, pairs).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn syntax(text: &str) -> Syntax {
        match lax(text, &[]) {
            Err(ErrorKind::Syntax(s)) => s,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn plain_text_and_escapes() {
        assert_eq!(ok("abcdEFGH28ij", &[]), "abcdEFGH28ij");
        assert_eq!(ok("$${v}", &[("v", "x")]), "${v}");
        assert_eq!(ok("$$v $v $ \\$", &[]), "$v $v $ \\$");
        assert_eq!(ok("$$$${v}", &[]), "$${v}");
        assert_eq!(ok("$$${v}", &[("v", "x")]), "$x");
        assert_eq!(ok("$$$", &[]), "$$");
        assert_eq!(ok("a$", &[]), "a$");
        assert_eq!(ok("}text", &[]), "}text");
        assert_eq!(ok(r"\\.\pipe\x", &[]), r"\\.\pipe\x");
        assert_eq!(
            ok("some text ${v}$${var$${v}$v${v}", &[("v", "X")]),
            "some text X${var${v}$vX"
        );
        assert_eq!(
            ok("something $${var=${d}}", &[("d", "foo")]),
            "something ${var=foo}"
        );
    }

    #[test]
    fn value_and_length() {
        assert_eq!(ok("${v}", &[("v", "abc")]), "abc");
        assert_eq!(ok("x${v}y${v}", &[("v", "")]), "xy");
        assert_eq!(ok("${#v}", &[("v", "abcdEFGH28ij")]), "12");
        assert_eq!(ok("${#v}", &[("v", "é")]), "2");
        assert_eq!(
            ok("${é}", &[("é", "unicode names parse")]),
            "unicode names parse"
        );
        assert_eq!(ok("${1}", &[("1", "digit first")]), "digit first");
    }

    #[test]
    fn case_operators() {
        let v = [("v", "abcdEFGH28ij")];
        assert_eq!(ok("${v^}", &v), "AbcdEFGH28ij");
        assert_eq!(ok("${v^^}", &v), "ABCDEFGH28IJ");
        assert_eq!(ok("${v,}", &[("v", "ABC")]), "aBC");
        assert_eq!(ok("${v,,}", &v), "abcdefgh28ij");
        assert_eq!(ok("${v,^}", &v), "abcdEFGH28ij");
        assert_eq!(ok("${v^}", &[("v", "")]), "");
        assert_eq!(ok("${v^^}", &[("v", "straße ǆ")]), "STRAßE Ǆ");
        assert_eq!(ok("${v^}", &[("v", "éa")]), "Éa");
        assert_eq!(ok("${v,,}", &[("v", "İSTANBUL")]), "istanbul");
        assert_eq!(ok("${v^^}", &[("v", "\u{1F80}")]), "\u{1F88}");
        assert_eq!(syntax("${v^^^}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${v^x}"), Syntax::BadSubstitution);
    }

    #[test]
    fn substring_operators() {
        let p = [("p", "/home/bozo/ideas/thoughts.for.today")];
        assert_eq!(ok("${p:11}", &p), "ideas/thoughts.for.today");
        assert_eq!(ok("${p:11:5}", &p), "ideas");
        let v = [("v", "abcdef")];
        assert_eq!(ok("${v:0}", &v), "abcdef");
        assert_eq!(ok("${v:10}", &v), "");
        assert_eq!(ok("${v:2:100}", &v), "cdef");
        assert_eq!(ok("${v:10:2}", &v), "");
        assert_eq!(ok("${v:1:-1}", &v), "bcde");
        assert_eq!(ok("${v:4:-3}", &v), "");
        assert_eq!(ok("${v:+2}", &v), "abcdef", ":+ is a default operator");
        assert_eq!(ok("${v: -2}", &v), "abcdef", "Atoi rejects the space");
        assert_eq!(ok("${v:x}", &v), "abcdef");
        assert_eq!(ok("${v:1:x}", &v), "abcdef");
        assert_eq!(ok("${v:1:2:3}", &v), "abcdef", "the length is `2:3`");
        assert_eq!(ok("${v:1:::2}", &v), "bc");
        assert_eq!(ok("${v:99999999999999999999}", &v), "abcdef");
        assert_eq!(
            ok("${v:-9223372036854775808:-9223372036854775808}", &v),
            "abcdef",
            "`:-` is a default operator"
        );
        assert_eq!(ok("${v:${n}}", &[("v", "abcdef"), ("n", "4")]), "ef");
        assert_eq!(
            ok(
                "${v:${s:0:1}:${t,,}}",
                &[("v", "abcdef"), ("s", "2x"), ("t", "3")]
            ),
            "cde"
        );
        assert_eq!(syntax("${v:}"), Syntax::FunctionArgument);
        assert_eq!(syntax("${v::2}"), Syntax::FunctionArgument);
        assert_eq!(syntax("${v:1"), Syntax::BadSubstitution);
        assert_eq!(syntax("${v:1:"), Syntax::FunctionArgument);
        assert_eq!(syntax("${v:1:2"), Syntax::BadSubstitution);
        assert_eq!(syntax("${v:"), Syntax::BadSubstitution);
        assert_eq!(syntax("${v:é}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${v:1${n}}"), Syntax::BadSubstitution);
        // Cutting a character in two is an error, not invalid output.
        assert_eq!(sub("${v:1}", &[("v", "é")]), Err(ErrorKind::NotUtf8));
    }

    #[test]
    fn trim_operators() {
        let f = [("f", "bash.string.txt")];
        assert_eq!(ok("${f#*.}", &f), "string.txt");
        assert_eq!(ok("${f##*.}", &f), "txt");
        assert_eq!(ok("${f%.*}", &f), "bash.string");
        assert_eq!(ok("${f%%.*}", &f), "bash");
        let p = [("f", "path/to/file")];
        assert_eq!(ok("${f#*/}", &p), "to/file");
        // `*` crosses `/` in Flux's fork of path.Match (fluxcd/pkg envsubst/path/match.go).
        assert_eq!(ok("${f##*/}", &p), "file");
        assert_eq!(ok("${f%/*}", &p), "path/to");
        assert_eq!(ok("${f%%/*}", &p), "path");
        assert_eq!(ok("${f#?}", &[("f", "/a")]), "a");
        assert_eq!(ok("${f#*/}", &[("f", "/path/to/file")]), "path/to/file");
        // The empty prefix never counts: `*` alone removes one character.
        assert_eq!(ok("${f#*}", &[("f", "abc")]), "bc");
        assert_eq!(ok("${f##*}", &[("f", "abc")]), "");
        assert_eq!(ok("${f%?}", &[("f", "abc")]), "ab");
        assert_eq!(ok("${f#[a-b]}", &[("f", "abc")]), "bc");
        // Reversed, `[ab]` is `]ba[`: malformed, so nothing is removed (as in Go).
        assert_eq!(ok("${f%[bc]}", &[("f", "abc")]), "abc");
        assert_eq!(ok("${f#x}", &[("f", "abc")]), "abc");
        assert_eq!(ok("${f#[}", &[("f", "[abc")]), "[abc", "malformed pattern");
        assert_eq!(ok("${f#\\*}", &[("f", "*a")]), "a");
        assert_eq!(ok("${f#$%:*{}", &[("f", "$%:xy{z")]), "z");
        assert_eq!(ok("${f###}", &[("f", "#a")]), "a");
        assert_eq!(ok("${f#${p}}", &[("f", "v1.2"), ("p", "v")]), "1.2");
        assert_eq!(ok("${f#${p}}", &[("f", "v1.2"), ("p", "")]), "v1.2");
        assert_eq!(ok("${f%%.*}", &[("f", "")]), "");
        // `?` takes half of `é` when that is the shortest match: not UTF-8.
        assert_eq!(sub("${f#?}", &[("f", "éa")]), Err(ErrorKind::NotUtf8));
        assert_eq!(ok("${f##?}", &[("f", "éa")]), "a");
        assert_eq!(syntax("${f#}"), Syntax::FunctionArgument);
        assert_eq!(syntax("${f#a"), Syntax::BadSubstitution);
        assert_eq!(syntax("${f#a${p}}"), Syntax::BadSubstitution);
    }

    #[test]
    fn replace_operators() {
        let z = [("z", "abcABC123ABCabc")];
        assert_eq!(ok("${z/abc/xyz}", &z), "xyzABC123ABCabc");
        assert_eq!(ok("${z//abc/xyz}", &z), "xyzABC123ABCxyz");
        assert_eq!(ok("${z/#abc/XYZ}", &z), "XYZABC123ABCabc");
        assert_eq!(ok("${z/%abc/XYZ}", &z), "abcABC123ABCXYZ");
        assert_eq!(ok("${z/#ABC/XYZ}", &z), "abcABC123ABCabc");
        assert_eq!(
            syntax("${z//abc}"),
            Syntax::BadSubstitution,
            "the delimiter is required"
        );
        assert_eq!(ok("${z//abc/}", &z), "ABC123ABC");
        // Prefix and suffix replacement need a replacement, else nothing changes.
        assert_eq!(ok("${z/#abc/}", &z), "abcABC123ABCabc");
        assert_eq!(ok("${z/#/pre-}", &[("z", "v")]), "pre-v");
        assert_eq!(ok("${z/%/-suf}", &[("z", "v")]), "v-suf");
        assert_eq!(ok("${z///x}", &[("z", "ab")]), "xaxbx");
        assert_eq!(ok("${z//ab/x}", &[("z", "ab")]), "x");
        assert_eq!(ok("${z//aa/b}", &[("z", "aaaaa")]), "bba");
        // Patterns are text, not globs.
        assert_eq!(ok("${z//*/x}", &[("z", "a*b")]), "axb");
        assert_eq!(ok(r"${z/\//-}", &[("z", "foo/bar")]), "foo-bar");
        assert_eq!(ok(r"${z//\//-}", &[("z", "foo/bar/baz")]), "foo-bar-baz");
        assert_eq!(ok(r"${z/a/\\}", &[("z", "a")]), r"\");
        assert_eq!(ok(r"${z/a/$$}", &[("z", "a")]), "$");
        assert_eq!(ok("${z/./}", &[("z", "foo.bar")]), "foobar");
        assert_eq!(
            ok("${z/a//b}", &[("z", "a")]),
            "b",
            "the delimiter may be repeated"
        );
        assert_eq!(
            ok("${z/}/x}", &[("z", "a}")]),
            "ax",
            "a pattern may hold `}}`"
        );
        assert_eq!(
            ok("${z//${a}/${b}}", &[("z", "1-2"), ("a", "-"), ("b", "+")]),
            "1+2"
        );
        assert_eq!(syntax("${z/a}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${z/"), Syntax::FunctionArgument);
        assert_eq!(syntax("${z/a/"), Syntax::FunctionArgument);
        assert_eq!(syntax("${z/a/b"), Syntax::BadSubstitution);
        assert_eq!(syntax("${z/a/b${c}}"), Syntax::BadSubstitution);
    }

    #[test]
    fn default_operators_use_the_default_when_empty() {
        for op in ["-", "=", ":-", ":=", ":?", ":+"] {
            let t = format!("${{v{op}dflt}}");
            assert_eq!(ok(&t, &[("v", "abc")]), "abc", "{t}");
            assert_eq!(ok(&t, &[("v", "")]), "dflt", "{t}");
            assert_eq!(ok(&t, &[]), "dflt", "{t}");
        }
        assert_eq!(ok("${v:=}", &[]), "");
        assert_eq!(ok("${v==x}", &[]), "=x");
        assert_eq!(ok("${v=${d}}", &[("d", "foo")]), "foo");
        assert_eq!(ok("${v=${d}-suffix}", &[("d", "foo1")]), "foo1-suffix");
        assert_eq!(ok("${v=prefix${d}-s}", &[("d", "foo1")]), "prefixfoo1-s");
        assert_eq!(ok("${v=${v2^^}}", &[("v2", "ab")]), "AB");
        assert_eq!(ok("${v:-a:b/c#d}", &[]), "a:b/c#d");
        // No escapes inside defaults: `$$` stays, and `$${x}` is `$` then `${x}`.
        assert_eq!(ok("${v:-a$$b}", &[]), "a$$b");
        assert_eq!(ok("${v:-$${x}}", &[("x", "X")]), "$X");
        assert_eq!(syntax("${v:-abc"), Syntax::FunctionArgument);
        assert_eq!(syntax("${v+d}"), Syntax::MissingClosingBrace);
        assert_eq!(syntax("${v?d}"), Syntax::MissingClosingBrace);
    }

    #[test]
    fn strict_and_non_strict() {
        assert_eq!(
            sub("${missing}", &[]),
            Err(ErrorKind::Unset("missing".into()))
        );
        assert_eq!(lax("${missing}", &[]), Ok(String::new()));
        assert_eq!(ok("${empty}", &[("empty", "")]), "");
        for t in [
            "${#m}",
            "${m^}",
            "${m^^}",
            "${m,}",
            "${m,,}",
            "${m,^}",
            "${m:0}",
            "${m:0:10}",
            "${m/a/b}",
            "${m//a/b}",
            "${m/#a/b}",
            "${m/%a/b}",
            "${m#a}",
            "${m##a}",
            "${m%a}",
            "${m%%a}",
        ] {
            assert_eq!(sub(t, &[]), Err(ErrorKind::Unset("m".into())), "{t}");
            assert!(lax(t, &[]).is_ok(), "{t}");
        }
        assert_eq!(ok("${m:-fallback}", &[]), "fallback");
        assert_eq!(ok("${m:=assigned}", &[]), "assigned");
        // Arguments are evaluated even when the default is not needed.
        assert_eq!(
            sub("${set:-${unset}}", &[("set", "x")]),
            Err(ErrorKind::Unset("unset".into()))
        );
        // The first failure in text order is reported.
        assert_eq!(sub("${a} ${b}", &[]), Err(ErrorKind::Unset("a".into())));
        let e = substitute("ab ${x}", &vars(&[]), &Options::default()).unwrap_err();
        assert_eq!(e.offset, 3);
        assert_eq!(e.to_string(), r#"variable not set (strict mode): "x""#);
    }

    #[test]
    fn malformed_expressions_are_errors() {
        assert_eq!(syntax("${AUTH[@]}"), Syntax::MissingClosingBrace);
        assert_eq!(syntax("${arr[0]}"), Syntax::MissingClosingBrace);
        assert_eq!(syntax("${#arr[@]}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${}"), Syntax::VariableName);
        assert_eq!(syntax("${"), Syntax::VariableName);
        assert_eq!(syntax("${ v}"), Syntax::VariableName);
        assert_eq!(syntax("${@}"), Syntax::VariableName);
        assert_eq!(syntax("${!v}"), Syntax::VariableName);
        assert_eq!(syntax("${v"), Syntax::MissingClosingBrace);
        assert_eq!(syntax("${v w}"), Syntax::MissingClosingBrace);
        assert_eq!(syntax("${#}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${#v:1}"), Syntax::BadSubstitution);
        assert_eq!(syntax("${##v}"), Syntax::BadSubstitution);
        // OpenTelemetry's `${env:VAR}` reads `env` with a substring operator.
        assert_eq!(sub("${env:HOME}", &[]), Err(ErrorKind::Unset("env".into())));
        assert_eq!(lax("${env:HOME}", &[]), Ok(String::new()));
        let deep = "${a:-".repeat(MAX_NESTING + 1);
        assert_eq!(syntax(&deep), Syntax::TooDeep);
        let ok_deep = format!(
            "{}x{}",
            "${a:-".repeat(MAX_NESTING),
            "}".repeat(MAX_NESTING)
        );
        assert_eq!(lax(&ok_deep, &[]), Ok("x".into()));
        let e = substitute("ab ${AUTH[@]}", &vars(&[]), &Options::default()).unwrap_err();
        assert_eq!(e.to_string(), "missing closing brace");
        assert_eq!(e.offset, 9);
    }

    #[test]
    fn output_is_bounded() {
        let small = Options {
            strict: true,
            max_output_bytes: 100,
        };
        let v = vars(&[("v", &"x".repeat(60))]);
        assert!(substitute("${v}", &v, &small).is_ok());
        assert_eq!(
            substitute("${v}${v}", &v, &small).unwrap_err().kind,
            ErrorKind::TooLarge(100)
        );
        // Replacing the empty pattern would multiply the value: refused before building it.
        let big = vars(&[("v", &"x".repeat(1 << 16)), ("r", &"y".repeat(1 << 16))]);
        let o = Options {
            strict: true,
            max_output_bytes: 1 << 20,
        };
        assert_eq!(
            substitute("${v///${r}}", &big, &o).unwrap_err().kind,
            ErrorKind::TooLarge(1 << 20)
        );
        assert_eq!(
            substitute(&"a".repeat(101), &v, &small).unwrap_err().kind,
            ErrorKind::TooLarge(100)
        );
    }

    /// A template's size is its result's length, found with every error the result would
    /// have, before the result is built; values used as they are cost nothing until then.
    #[test]
    fn the_size_comes_before_the_result() {
        let v = vars(&[("v", "Ab.é"), ("e", ""), ("big", &"y".repeat(1000))]);
        let o = Options::default();
        for text in [
            "${v}-${v^^}-${v,}-${#v}-${v:1:2}-${v#*.}-${v%.*}-${v/./:}-${v//b/bb}-${v/%é/E}",
            "${e:-a${v}b}|${e:-${v}}|${v:-x}|${v%é}|${v%%[a-z]*}|${big:998}",
            "plain $$ text",
        ] {
            let t = Template::parse(text).unwrap();
            let size = t.size(&v, &o).unwrap();
            let out = t.render(&v, &o, size).unwrap();
            assert_eq!(out.len(), size, "{text}");
            assert_eq!(substitute(text, &v, &o).unwrap(), out);
        }
        // 1,000 bytes used 2,000 times: measured, refused, nothing built.
        let small = Options {
            strict: true,
            max_output_bytes: 1 << 20,
        };
        let t = Template::parse(&"${big}".repeat(2000)).unwrap();
        assert_eq!(
            t.size(&v, &small).unwrap_err().kind,
            ErrorKind::TooLarge(1 << 20)
        );
        // What must be made is counted before it is: an upper-cased copy, a default of parts.
        let tight = Options {
            strict: true,
            max_output_bytes: 1500,
        };
        assert_eq!(
            substitute("${big}${big^^}", &v, &tight).unwrap_err().kind,
            ErrorKind::TooLarge(1500)
        );
        assert_eq!(
            substitute(
                "${big}${e:-${v}${v}}",
                &v,
                &Options {
                    max_output_bytes: 1010,
                    ..tight
                }
            )
            .unwrap_err()
            .kind,
            ErrorKind::TooLarge(1010)
        );
    }

    #[test]
    fn long_inputs_take_linear_time() {
        let n = 1 << 20;
        let long = vars(&[("v", &"a".repeat(n)), ("p", &"a".repeat(n / 2))]);
        let t = std::time::Instant::now();
        let o = Options::default();
        // Quadratic algorithms would take minutes here.
        assert_eq!(substitute("${v//${p}/b}", &long, &o).unwrap(), "bb");
        assert_eq!(substitute("${#v}", &long, &o).unwrap(), n.to_string());
        assert_eq!(substitute("${v%%*b}", &long, &o).unwrap().len(), n);
        assert_eq!(substitute("${v#*a}", &long, &o).unwrap().len(), n - 1);
        assert_eq!(substitute("${v##a*}", &long, &o).unwrap().len(), 0);
        let text = "${v%a}".repeat(1000);
        let short = vars(&[("v", "xa")]);
        assert_eq!(substitute(&text, &short, &o).unwrap(), "x".repeat(1000));
        assert!(t.elapsed() < std::time::Duration::from_secs(20));
        // A pattern of many states over a long value runs out of matching budget instead.
        let hostile = vars(&[("v", &"a".repeat(n)), ("p", &"?".repeat(1 << 16))]);
        assert_eq!(
            substitute("${v#${p}}", &hostile, &o).unwrap_err().kind,
            ErrorKind::TooMuchWork
        );
    }

    /// Text made of the pieces the grammar cares about, so that random inputs reach every
    /// branch of the parser rather than stopping at the first `${`.
    fn template() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        proptest::collection::vec(
            prop_oneof![
                Just("${"),
                Just("$"),
                Just("}"),
                Just("{"),
                Just("#"),
                Just("%"),
                Just("/"),
                Just(":"),
                Just("-"),
                Just("="),
                Just("^"),
                Just(","),
                Just("\\"),
                Just("*"),
                Just("?"),
                Just("["),
                Just("]"),
                Just("v"),
                Just("w"),
                Just("1"),
                Just("é"),
                Just(" "),
            ],
            0..40,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

        #[test]
        fn substitute_never_panics(text in template(), raw in "\\PC*", v in "\\PC{0,8}", strict in proptest::bool::ANY) {
            let vars = vars(&[("v", &v), ("w", "a/b.c"), ("1", "-1")]);
            let opts = Options { strict, max_output_bytes: 1 << 16 };
            for t in [&text, &raw] {
                if let Ok(out) = substitute(t, &vars, &opts) {
                    proptest::prop_assert!(out.len() <= 1 << 16);
                }
            }
        }
    }

    #[test]
    fn is_affected_finds_expressions_and_escapes() {
        assert!(is_affected("a ${b}"));
        assert!(is_affected("$$"));
        assert!(!is_affected("$a $ {b} $"));
    }
}
