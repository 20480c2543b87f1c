//! The Kubernetes regex library (`k8s.io/apiserver/pkg/cel/library/regex.go`): `<string>.find(re)`,
//! `<string>.findAll(re)` and `<string>.findAll(re, n)`.
//!
//! Patterns are RE2 (Go's `regexp`). The `regex` crate's syntax is nearly the same; the differences
//! that change what matches are bridged before compiling: Go's `\d`, `\w`, `\s` and `\b` are ASCII
//! (the crate's are Unicode), Go accepts octal escapes and `\Q…\E` quoting. A pattern Go refuses
//! and the crate would accept (stacked repetition operators, `x**`, `x++`) is refused.
//!
//! The standard `matches` is routed here too (`@kiln_matches`, see `expr::macros`): the crate's own
//! compiles the pattern as the `regex` crate's syntax, where `\d` also matches `١`.
//!
//! A pattern is compiled once per thread and kept ([`compile`]), and its price is worked out from
//! its parsed form: compiling costs in proportion to the automaton's size, and a search in
//! proportion to the text times that size (the regex crate's guarantee for its slowest engine).
//! Each evaluation pays to compile each pattern it uses once, cached or not, so what it is charged
//! does not depend on what ran before it on the thread.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use regex::{Regex, RegexBuilder};
use regex_syntax::hir::{Class, Hir, HirKind};

use cel::common::types::Kind;
use cel::{ExecutionError, Value};

use super::{list_value, string_value, Call};
use crate::expr::budget::{self, admit, charge};
use crate::expr::weight::Weight;

/// `<string>.find(re) -> string`: the leftmost match, or `""`.
pub(super) fn find(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, [re]) = call.member::<1>()?;
    let (s, re) = (call.string(this)?, compile(call, call.string(re)?)?);
    re.search("find()", s)?;
    let found = re.regex.find(s).map_or("", |m| m.as_str());
    admit(
        "find()",
        Kind::String,
        Weight::bytes(found.len()),
        true,
        true,
    )?;
    Ok(string_value(found))
}

/// `<string>.findAll(re [, n]) -> list(string)`: successive non-overlapping matches, at most `n`
/// when `n >= 0`.
pub(super) fn find_all(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let (this, re, limit) = match call.args.as_slice() {
        [_] => {
            let (this, [re]) = call.member::<1>()?;
            (this, re, -1)
        }
        _ => {
            let (this, [re, n]) = call.member::<2>()?;
            (this, re, call.int(n)?)
        }
    };
    let (s, re) = (call.string(this)?, compile(call, call.string(re)?)?);
    re.search("findAll()", s)?;
    let found = go_find_all(&re.regex, s, limit, &mut |w| {
        // The list is checked as it grows, before each match is kept: a match per character of a
        // long string would otherwise be a list of millions of entries before any check.
        if budget::metered() && w.over(budget::caps()) {
            admit("findAll()", Kind::List, w, false, true)?;
        }
        Ok(())
    })?;
    let w = Weight {
        bytes: found.iter().map(|m| m.len()).sum(),
        entries: found.len(),
    };
    admit("findAll()", Kind::List, w, false, true)?;
    Ok(list_value(found.into_iter().map(string_value).collect()))
}

/// `matches(string, re) -> bool` and `<string>.matches(re)`, with RE2's syntax: whether `re`
/// matches anywhere in the string. Reached as `@kiln_matches(s, re)`, what kiln's macros make of
/// both spellings; errors are reported under the name the template wrote.
pub(super) fn matches(call: &Call<'_>) -> Result<Value, ExecutionError> {
    let call = Call {
        name: "matches",
        this: None,
        args: call.args.clone(),
    };
    let [s, re] = call.global::<2>()?;
    let (s, re) = (call.string(s)?, compile(&call, call.string(re)?)?);
    re.search("matches()", s)?;
    Ok(Value::Bool(re.regex.is_match(s)))
}

/// A compiled pattern, and the size of its automaton as [`states`] estimates it.
struct Pattern {
    regex: Regex,
    states: u64,
}

/// Units of work to search `n` bytes with an automaton of `states` states: the slowest engine
/// keeps a set of states per byte.
fn search_units(n: usize, states: u64) -> u64 {
    (Weight::bytes(n).work() + 1).saturating_mul(1 + states / STATES_PER_SEARCH_FACTOR)
}

/// States an automaton may have before a search costs one more time the text.
const STATES_PER_SEARCH_FACTOR: u64 = 4;

/// Units of work to compile an automaton of `states` states.
fn compile_units(states: u64) -> u64 {
    1 + states / STATES_PER_COMPILE_UNIT
}

/// States compiled per unit of work.
const STATES_PER_COMPILE_UNIT: u64 = 1;

impl Pattern {
    /// Charge searching `text` (`what` names the function for the message).
    fn search(&self, what: &str, text: &str) -> Result<(), ExecutionError> {
        charge(what, search_units(text.len(), self.states))
    }
}

/// The most automaton states the compiled patterns of one thread may hold together; past it the
/// cache starts again (each pattern is bounded by the regex crate's size limit).
const CACHED_STATES: u64 = 250_000;

thread_local! {
    static CACHE: RefCell<HashMap<Box<str>, Rc<Pattern>>> = RefCell::new(HashMap::new());
}

/// The pattern compiled, from this thread's cache or now. Compiling is charged once per
/// evaluation (see the module documentation), after it is done: a pattern the regex crate
/// refuses is reported as such, and one compilation is bounded by the crate's size limit.
fn compile(call: &Call<'_>, pattern: &str) -> Result<Rc<Pattern>, ExecutionError> {
    let what = call.name;
    // Looking the pattern up reads it.
    charge(what, Weight::bytes(pattern.len()).work())?;
    let cached = CACHE.with(|c| c.borrow().get(pattern).cloned());
    let compiled = match cached {
        Some(p) => p,
        None => {
            let p = Rc::new(compile_new(call, pattern)?);
            CACHE.with(|c| {
                let mut c = c.borrow_mut();
                let held: u64 = c.values().map(|p| p.states).sum();
                if held.saturating_add(p.states) > CACHED_STATES {
                    c.clear();
                }
                c.insert(pattern.into(), Rc::clone(&p));
            });
            p
        }
    };
    if budget::first_use(pattern) {
        charge(
            &format!("compiling the pattern of {what}()"),
            compile_units(compiled.states),
        )?;
    }
    Ok(compiled)
}

fn compile_new(call: &Call<'_>, pattern: &str) -> Result<Pattern, ExecutionError> {
    if let Some(op) = stacked_repetition(pattern) {
        return Err(call.error(format!(
            "Illegal regex: invalid nested repetition operator: `{op}`"
        )));
    }
    let translated = translate(pattern);
    let illegal = |e: regex::Error| call.error(format!("Illegal regex: {e}"));
    let parsed = regex_syntax::ParserBuilder::new()
        .octal(true)
        .build()
        .parse(&translated);
    // A pattern the parser refuses is reported by the regex crate, in its words.
    let states = match parsed {
        Ok(hir) => states(&hir),
        Err(_) => {
            return Err(build(&translated).err().map_or_else(
                || call.error("Illegal regex: the pattern does not parse"),
                illegal,
            ))
        }
    };
    let regex = build(&translated).map_err(illegal)?;
    Ok(Pattern { regex, states })
}

fn build(translated: &str) -> Result<Regex, regex::Error> {
    RegexBuilder::new(translated).octal(true).build()
}

/// An estimate of the states of the automaton compiled from `hir`: a literal byte, a class
/// range and an assertion are a state each, a repetition repeats its body up to its bound.
/// Recursion as deep as the parser's nesting limit allows.
fn states(hir: &Hir) -> u64 {
    match hir.kind() {
        HirKind::Empty | HirKind::Look(_) => 1,
        HirKind::Literal(l) => l.0.len() as u64,
        // A range of code points is a few states of UTF-8 bytes.
        HirKind::Class(Class::Unicode(c)) => 4 * c.ranges().len() as u64,
        HirKind::Class(Class::Bytes(c)) => c.ranges().len() as u64,
        HirKind::Repetition(r) => {
            let times = u64::from(r.max.unwrap_or(r.min).max(r.min).max(1));
            states(&r.sub).saturating_mul(times).saturating_add(1)
        }
        HirKind::Capture(c) => states(&c.sub).saturating_add(2),
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs
            .iter()
            .fold(xs.len() as u64, |n, x| n.saturating_add(states(x))),
    }
}

/// Go's `Regexp.FindAllString`: an empty match right after the previous match is skipped, and the
/// search then moves on by one character. `grown` sees the weight of the list so far before each
/// match is kept, and may stop the search.
fn go_find_all<'s>(
    re: &Regex,
    s: &'s str,
    limit: i64,
    grown: &mut dyn FnMut(Weight) -> Result<(), ExecutionError>,
) -> Result<Vec<&'s str>, ExecutionError> {
    let limit = if limit < 0 {
        usize::MAX
    } else {
        limit as usize
    };
    let mut out = Vec::new();
    let mut w = Weight::default();
    let mut pos = 0;
    let mut prev_end: Option<usize> = None;
    while out.len() < limit && pos <= s.len() {
        let Some(m) = re.find_at(s, pos) else { break };
        let mut accept = true;
        if m.end() == pos {
            if Some(m.start()) == prev_end {
                accept = false;
            }
            pos += s[pos..].chars().next().map_or(1, char::len_utf8);
        } else {
            pos = m.end();
        }
        prev_end = Some(m.end());
        if accept {
            w.entries += 1;
            w.bytes += m.len();
            grown(w)?;
            out.push(m.as_str());
        }
    }
    Ok(out)
}

/// The first repetition operator applied straight to another one (`**`, `+*`, `{2}{3}`, `*??`),
/// which Go's parser refuses ("invalid nested repetition operator") and the `regex` crate reads
/// as a repetition of a repetition. A lazy `?` right after an operator is part of it.
fn stacked_repetition(pattern: &str) -> Option<String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut i = 0;
    // The end of the last repetition operator, when nothing has come after it.
    let mut after_repeat = false;
    let mut last_start = 0;
    while i < chars.len() {
        let start = i;
        let repeat_end = match chars[i] {
            '\\' => {
                // `\Q…\E` quotes everything up to `\E`; any other escape is one atom.
                if chars.get(i + 1) == Some(&'Q') {
                    i += 2;
                    while i < chars.len() && !(chars[i] == '\\' && chars.get(i + 1) == Some(&'E')) {
                        i += 1;
                    }
                    i += 2;
                } else {
                    i += 2;
                }
                None
            }
            '[' => {
                // A class: `]` first (after an optional `^`) is a member, escapes skip a char.
                i += 1;
                if chars.get(i) == Some(&'^') {
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    i += 1;
                }
                while i < chars.len() && chars[i] != ']' {
                    i += if chars[i] == '\\' { 2 } else { 1 };
                }
                i += 1;
                None
            }
            '(' => {
                // `(?flags` and `(?P<name>`: that `?` is no operator.
                i += if chars.get(i + 1) == Some(&'?') { 2 } else { 1 };
                None
            }
            '*' | '+' | '?' => Some(i + 1),
            '{' => counted_repeat_end(&chars, i),
            _ => None,
        };
        match repeat_end {
            Some(mut end) => {
                if chars.get(end) == Some(&'?') {
                    end += 1;
                }
                if after_repeat {
                    return Some(chars[last_start..end].iter().collect());
                }
                after_repeat = true;
                last_start = start;
                i = end;
            }
            None => {
                after_repeat = false;
                if i == start {
                    i += 1;
                }
            }
        }
    }
    None
}

/// The end of `{n}`, `{n,}` or `{n,m}` starting at `i`; `None` when the brace is a literal, as
/// in Go.
fn counted_repeat_end(chars: &[char], i: usize) -> Option<usize> {
    let mut j = i + 1;
    let digits = |j: &mut usize| {
        let from = *j;
        while chars.get(*j).is_some_and(char::is_ascii_digit) {
            *j += 1;
        }
        *j > from
    };
    if !digits(&mut j) {
        return None;
    }
    if chars.get(j) == Some(&',') {
        j += 1;
        digits(&mut j);
    }
    (chars.get(j) == Some(&'}')).then_some(j + 1)
}

/// Rewrites the RE2 constructs whose meaning differs in the `regex` crate into equivalent ones.
fn translate(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(e) = chars.next() else {
            // A trailing backslash: leave it for the compiler to reject.
            out.push('\\');
            break;
        };
        match e {
            // Nested classes are valid inside a bracket expression too, so one spelling serves both.
            'd' => out.push_str("[0-9]"),
            'D' => out.push_str("[^0-9]"),
            'w' => out.push_str("[0-9A-Za-z_]"),
            'W' => out.push_str("[^0-9A-Za-z_]"),
            's' => out.push_str(r"[\t\n\x0C\r ]"),
            'S' => out.push_str(r"[^\t\n\x0C\r ]"),
            'b' => out.push_str(r"(?-u:\b)"),
            'B' => out.push_str(r"(?-u:\B)"),
            'Q' => {
                let mut literal = String::new();
                while let Some(q) = chars.next() {
                    if q == '\\' && chars.peek() == Some(&'E') {
                        chars.next();
                        break;
                    }
                    literal.push(q);
                }
                out.push_str(&regex::escape(&literal));
            }
            other => {
                out.push('\\');
                out.push(other);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(re: &str, s: &str, n: i64) -> Vec<String> {
        let re = RegexBuilder::new(&translate(re))
            .octal(true)
            .build()
            .unwrap();
        go_find_all(&re, s, n, &mut |_| Ok(()))
            .unwrap()
            .into_iter()
            .map(String::from)
            .collect()
    }

    #[test]
    fn find_all_skips_empty_matches_after_a_match_like_go() {
        // What Go's allMatches loop yields: the empty match at 4 abuts "aaa" and is dropped.
        assert_eq!(all("a*", "baaab", -1), ["", "aaa", ""]);
        assert_eq!(all("[0-9]+", "123 abc 456", -1), ["123", "456"]);
        assert_eq!(all("[0-9]+", "123 abc 456", 1), ["123"]);
        assert_eq!(all("[0-9]+", "123 abc 456", 0), Vec::<String>::new());
        assert_eq!(all("", "ab", -1), ["", "", ""]);
    }

    #[test]
    fn stacked_repetitions_are_refused_as_in_go() {
        // Go's regexp/syntax: "invalid nested repetition operator".
        for (re, op) in [
            ("x**", "**"),
            ("x++", "++"),
            ("a*+", "*+"),
            ("a?*", "?*"),
            ("a{2}{3}", "{2}{3}"),
            ("a{2}*", "{2}*"),
            ("a*??", "*??"),
            ("(ab)+*", "+*"),
        ] {
            assert_eq!(stacked_repetition(re).as_deref(), Some(op), "{re}");
        }
        // Lazy operators, groups, classes, escapes and literal braces are not stacking.
        for re in [
            "x*?",
            "x+?",
            "x??",
            "(x+)+",
            "[*+]+",
            r"\*+",
            r"a\Q**\E+",
            "a{,2}*",
            "a{x}*",
            "(?i)a+",
            "(?P<n>a)+",
            r"[\]*]+",
            "[]*]+",
            "a|*",
        ] {
            assert_eq!(stacked_repetition(re), None, "{re}");
        }
    }

    #[test]
    fn perl_classes_are_ascii() {
        assert_eq!(all(r"\d+", "a١٢3", -1), ["3"]);
        assert_eq!(all(r"\w+", "héllo", -1), ["h", "llo"]);
        assert_eq!(all(r"[\d.]+", "v1.2", -1), ["1.2"]);
        assert_eq!(all(r"\Qa.b\E", "a.b axb", -1), ["a.b"]);
        assert_eq!(all(r"\101", "A", -1), ["A"]);
        assert_eq!(all(r"\bx\b", "x éx x", -1), ["x", "x", "x"]);
        assert_eq!(all(r"\Bx", "ax éx", -1), ["x"]);
    }
}
