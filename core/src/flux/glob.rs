//! Shell patterns of the trim operators (`${v#p}`, `${v##p}`, `${v%p}`, `${v%%p}`), as Flux's
//! fork of Go's `path.Match` reads them (fluxcd/pkg `envsubst/path/match.go`), which drops the
//! standard library's special case of `/`: its own test table has `${filename##*/}` on
//! `path/to/file` give `file`.
//!
//! - `*` matches any run of bytes, `/` included; `?` any one character, `/` included;
//! - `[abc]`, `[a-z]`, `[^…]` one character in (or not in) the class; `\c` a literal `c`;
//! - anything else matches itself, byte for byte.
//!
//! Go's matcher tries one candidate prefix at a time, and the trim operators call it for every
//! prefix of the value: quadratic in the value's length. Here the pattern is a small NFA run once
//! over the value, recording every prefix length it accepts: `O(len × states / 64)`, charged to
//! a work budget so that a hostile pattern and value cannot run away. Values are bytes, and
//! characters are decoded as Go decodes them (an invalid byte is U+FFFD, one byte wide), so
//! prefixes that end inside a multi-byte character are judged as Go judges them.

/// One element of a compiled pattern.
#[derive(Debug, Clone, PartialEq)]
enum Elem {
    /// `*` (runs of stars are one).
    Star,
    /// `?`.
    Any,
    /// One literal byte.
    Byte(u8),
    /// `[...]`: negated, and inclusive character ranges.
    Class(bool, Vec<(char, char)>),
}

/// A compiled pattern.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    elems: Vec<Elem>,
    /// Bitset words per state set (states are `0..=elems.len()`).
    words: usize,
    stars: Vec<u64>,
    anys: Vec<u64>,
    /// For each byte, the states that are that literal byte (`None` if the pattern lacks it).
    bytes: Vec<Option<Vec<u64>>>,
    /// States that are classes.
    classes: Vec<usize>,
}

/// Decode one character of `b` (not empty) as Go does: an invalid or truncated sequence is
/// U+FFFD, one byte wide.
pub(crate) fn decode(b: &[u8]) -> (char, usize) {
    let Some(&first) = b.first() else {
        return (char::REPLACEMENT_CHARACTER, 0);
    };
    if first < 0x80 {
        return (first as char, 1);
    }
    let width = match first {
        0xC2..=0xDF => 2,
        0xE0..=0xEF => 3,
        0xF0..=0xF4 => 4,
        _ => return (char::REPLACEMENT_CHARACTER, 1),
    };
    match b.get(..width).map(std::str::from_utf8) {
        Some(Ok(s)) => match s.chars().next() {
            Some(c) => (c, width),
            None => (char::REPLACEMENT_CHARACTER, 1),
        },
        _ => (char::REPLACEMENT_CHARACTER, 1),
    }
}

impl Pattern {
    /// Compile a pattern; `None` when Go's matcher would report it malformed (an unclosed or
    /// empty class, a range without an end, a trailing `\`, invalid UTF-8 inside a class).
    ///
    /// Go checks a pattern lazily, while matching, so a malformed part the match never reaches
    /// goes unnoticed there; here the whole pattern is checked first (what Go's own `path.Match`
    /// does since Go 1.16). Either way a malformed pattern leaves the value unchanged.
    pub(crate) fn compile(p: &[u8]) -> Option<Pattern> {
        let mut elems = Vec::new();
        let mut i = 0;
        while i < p.len() {
            match p[i] {
                b'*' => {
                    if elems.last() != Some(&Elem::Star) {
                        elems.push(Elem::Star);
                    }
                    i += 1;
                }
                b'?' => {
                    elems.push(Elem::Any);
                    i += 1;
                }
                b'[' => {
                    i += 1;
                    let negated = p.get(i) == Some(&b'^');
                    if negated {
                        i += 1;
                    }
                    let mut ranges = Vec::new();
                    loop {
                        if p.get(i) == Some(&b']') && !ranges.is_empty() {
                            i += 1;
                            break;
                        }
                        let lo = class_char(p, &mut i)?;
                        let hi = if p.get(i) == Some(&b'-') {
                            i += 1;
                            class_char(p, &mut i)?
                        } else {
                            lo
                        };
                        ranges.push((lo, hi));
                    }
                    elems.push(Elem::Class(negated, ranges));
                }
                b'\\' => {
                    let &b = p.get(i + 1)?;
                    elems.push(Elem::Byte(b));
                    i += 2;
                }
                b => {
                    elems.push(Elem::Byte(b));
                    i += 1;
                }
            }
        }
        let words = (elems.len() + 1).div_ceil(64);
        let mut stars = vec![0u64; words];
        let mut anys = vec![0u64; words];
        let mut bytes: Vec<Option<Vec<u64>>> = vec![None; 256];
        let mut classes = Vec::new();
        for (j, e) in elems.iter().enumerate() {
            match e {
                Elem::Star => set(&mut stars, j),
                Elem::Any => set(&mut anys, j),
                Elem::Byte(b) => set(
                    bytes[usize::from(*b)].get_or_insert_with(|| vec![0u64; words]),
                    j,
                ),
                Elem::Class(..) => classes.push(j),
            }
        }
        Some(Pattern {
            elems,
            words,
            stars,
            anys,
            bytes,
            classes,
        })
    }

    /// Work units one scan of `len` bytes costs: bitset words and class tests per byte.
    pub(crate) fn cost(&self, len: usize) -> u64 {
        (len as u64 + 1).saturating_mul((self.words + self.classes.len()) as u64 * 4 + 1)
    }

    /// The shortest and the longest non-empty prefix of `s` that the whole pattern matches (the
    /// prefix judged on its own, as `path.Match(pattern, s[..k])` judges it).
    pub(crate) fn matching_prefixes(&self, s: &[u8]) -> Option<(usize, usize)> {
        let m = self.elems.len();
        // Sets of states by position, in a ring: three positions back (for prefixes that end
        // inside a character) and four ahead (the widest character). Positions ahead collect
        // states until they are reached, then are closed over stars.
        const RING: usize = 8;
        let mut ring: Vec<Vec<u64>> = vec![vec![0u64; self.words]; RING];
        set(&mut ring[0], 0);
        self.close(&mut ring[0]);
        let mut cur = vec![0u64; self.words];
        let (mut t, mut n) = (cur.clone(), cur.clone());
        let mut found: Option<(usize, usize)> = None;
        let mut live_until = 0usize; // the last position that has received states
        for i in 0..s.len() {
            cur.copy_from_slice(&ring[i % RING]);
            if i > live_until && is_empty(&cur) {
                break;
            }
            let b = s[i];
            let (c, w) = decode(&s[i..]);
            let k = i + 1;
            self.step_unit(&cur, c, &mut ring[(i + w) % RING]);
            if !is_empty(&ring[(i + w) % RING]) {
                live_until = live_until.max(i + w);
            }
            self.step_byte(&cur, b, &mut ring[k % RING]);
            self.close(&mut ring[k % RING]);
            if !is_empty(&ring[k % RING]) {
                live_until = live_until.max(k);
            }
            let accepts = match self.truncated_start(s, k) {
                // The prefix ends inside the character that starts at `start`: judged on its
                // own, that character is invalid, so replay the last steps with one-byte U+FFFD.
                Some(start) => {
                    t.copy_from_slice(&ring[start % RING]);
                    for x in start..k {
                        n.copy_from_slice(&ring[(x + 1) % RING]);
                        self.step_byte(&t, s[x], &mut n);
                        self.step_unit(&t, char::REPLACEMENT_CHARACTER, &mut n);
                        self.close(&mut n);
                        std::mem::swap(&mut t, &mut n);
                    }
                    get(&t, m)
                }
                None => get(&ring[k % RING], m),
            };
            if accepts {
                found = Some(found.map_or((k, k), |(lo, _)| (lo, k)));
            }
            // The slot three positions back becomes the one four positions ahead.
            if i >= 3 {
                ring[(i + RING - 3) % RING].iter_mut().for_each(|w| *w = 0);
            }
        }
        found
    }

    /// Where the character that a prefix of length `k` cuts starts, if it cuts one.
    fn truncated_start(&self, s: &[u8], k: usize) -> Option<usize> {
        if k >= s.len() {
            return None;
        }
        (1..=3).filter_map(|d| k.checked_sub(d)).find(|&b| {
            let (_, w) = decode(&s[b..]);
            w > 1 && b + w > k
        })
    }

    /// Star skips and literal bytes from `cur` over byte `b`, into the next position's set.
    fn step_byte(&self, cur: &[u64], b: u8, next: &mut [u64]) {
        for (n, (c, s)) in next.iter_mut().zip(cur.iter().zip(&self.stars)) {
            *n |= c & s;
        }
        if let Some(mask) = &self.bytes[usize::from(b)] {
            shift_or(cur, mask, next);
        }
    }

    /// `?` and classes from `cur` over the character `c` (first byte `b`), into the set of the
    /// position after it.
    fn step_unit(&self, cur: &[u64], c: char, next: &mut [u64]) {
        shift_or(cur, &self.anys, next);
        for &j in &self.classes {
            if get(cur, j) {
                if let Elem::Class(negated, ranges) = &self.elems[j] {
                    let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                    if inside != *negated {
                        set(next, j + 1);
                    }
                }
            }
        }
    }

    /// A star may match nothing: every set state that is a star also sets the state after it
    /// (stars never follow each other, so one step is enough).
    fn close(&self, set_: &mut [u64]) {
        let mut carry = 0u64;
        for (w, s) in set_.iter_mut().zip(&self.stars) {
            let add = *w & s;
            let shifted = (add << 1) | carry;
            carry = add >> 63;
            *w |= shifted;
        }
    }
}

/// Read one class character (escaped with `\` or not) at `*i`; `None` where Go reports a bad
/// pattern, including when nothing follows it.
fn class_char(p: &[u8], i: &mut usize) -> Option<char> {
    match p.get(*i) {
        None | Some(b'-') | Some(b']') => return None,
        Some(b'\\') => *i += 1,
        _ => {}
    }
    let rest = p.get(*i..).filter(|r| !r.is_empty())?;
    let (c, w) = decode(rest);
    if c == char::REPLACEMENT_CHARACTER && w == 1 {
        return None;
    }
    *i += w;
    (*i < p.len()).then_some(c)
}

fn set(bits: &mut [u64], j: usize) {
    if let Some(w) = bits.get_mut(j / 64) {
        *w |= 1 << (j % 64);
    }
}

fn get(bits: &[u64], j: usize) -> bool {
    bits.get(j / 64).is_some_and(|w| w & (1 << (j % 64)) != 0)
}

fn is_empty(bits: &[u64]) -> bool {
    bits.iter().all(|&w| w == 0)
}

/// `next |= (cur & mask) << 1` over the whole bitset.
fn shift_or(cur: &[u64], mask: &[u64], next: &mut [u64]) {
    let mut carry = 0u64;
    for (n, (c, m)) in next.iter_mut().zip(cur.iter().zip(mask)) {
        let v = c & m;
        *n |= (v << 1) | carry;
        carry = v >> 63;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the whole of `s` matches `p`, by a plain recursive reading of the same rules
    /// (exponential, for tiny inputs only): the reference the NFA is checked against.
    fn naive(p: &[Elem], s: &[u8]) -> bool {
        match p.split_first() {
            None => s.is_empty(),
            Some((Elem::Star, rest)) => (0..=s.len()).any(|k| naive(rest, &s[k..])),
            Some((Elem::Byte(b), rest)) => s.first() == Some(b) && naive(rest, &s[1..]),
            Some((Elem::Any, rest)) => !s.is_empty() && naive(rest, &s[decode(s).1..]),
            Some((Elem::Class(neg, ranges), rest)) => {
                if s.is_empty() {
                    return false;
                }
                let (c, w) = decode(s);
                let inside = ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi);
                inside != *neg && naive(rest, &s[w..])
            }
        }
    }

    fn prefixes(p: &str, s: &str) -> Option<(usize, usize)> {
        Pattern::compile(p.as_bytes())
            .unwrap()
            .matching_prefixes(s.as_bytes())
    }

    #[test]
    fn shortest_and_longest_prefixes() {
        assert_eq!(prefixes("*.", "bash.string.txt"), Some((5, 12)));
        // `*` crosses `/` (Flux's fork of path.Match).
        assert_eq!(prefixes("*/", "path/to/file"), Some((5, 8)));
        assert_eq!(prefixes("*/", "/path/to/file"), Some((1, 9)));
        assert_eq!(prefixes("*", "abc"), Some((1, 3)));
        assert_eq!(prefixes("*", "a/c"), Some((1, 3)));
        assert_eq!(prefixes("a?c", "a/c"), Some((3, 3)));
        assert_eq!(prefixes("x", "abc"), None);
        assert_eq!(prefixes("a?c", "abcd"), Some((3, 3)));
        assert_eq!(prefixes("[a-c]*", "cab/"), Some((1, 4)));
        assert_eq!(prefixes("[^a]", "ab"), None);
        assert_eq!(prefixes("[^a]", "ba"), Some((1, 1)));
        assert_eq!(prefixes("\\*", "*x"), Some((1, 1)));
        assert_eq!(prefixes("", "abc"), None);
    }

    #[test]
    fn prefixes_inside_a_character_are_judged_as_go_judges_them() {
        // "é" is two bytes; the one-byte prefix is an invalid character, which `?` matches.
        assert_eq!(prefixes("?", "é"), Some((1, 2)));
        assert_eq!(prefixes("é", "éa"), Some((2, 2)));
        assert_eq!(prefixes("[é]", "é"), Some((2, 2)));
        assert_eq!(prefixes("[^x]", "€"), Some((1, 3)));
    }

    #[test]
    fn malformed_patterns() {
        let bad = [
            "[", "[]", "[]]", "[]a]", "[a", "[a-", "[a-]", "[a-]]", "[-a]", "\\", "a[^]", "[z-\\",
        ];
        for p in bad {
            assert!(Pattern::compile(p.as_bytes()).is_none(), "{p}");
        }
        assert!(Pattern::compile(b"[\xff]").is_none());
        assert!(Pattern::compile(b"[\\]]").is_some());
        assert!(Pattern::compile(b"[*]").is_some());
    }

    #[test]
    fn many_states_cross_word_boundaries() {
        let p = "a".repeat(70) + "*";
        let s = "a".repeat(80);
        assert_eq!(prefixes(&p, &s), Some((70, 80)));
        let p = "?".repeat(64) + "[b]";
        let s = "a".repeat(64) + "b";
        assert_eq!(prefixes(&p, &s), Some((65, 65)));
    }

    #[test]
    fn agrees_with_the_naive_matcher() {
        let alphabet = ["a", "b", "/", "é", "*", "?", "[ab]", "[^a]", "\\*"];
        let subjects = [
            "",
            "a",
            "ab",
            "ba/b",
            "aé",
            "é/a",
            "*a",
            "abab",
            "a/é*",
            "b\u{20ac}a",
        ];
        let mut patterns = vec![String::new()];
        for _ in 0..3 {
            let mut next = Vec::new();
            for p in &patterns {
                for a in alphabet {
                    next.push(format!("{p}{a}"));
                }
            }
            patterns.extend(next);
        }
        for p in &patterns {
            let compiled = Pattern::compile(p.as_bytes()).unwrap();
            for s in subjects {
                let sb = s.as_bytes();
                let want: Vec<usize> = (1..=sb.len())
                    .filter(|&k| naive(&compiled.elems, &sb[..k]))
                    .collect();
                let want = want.first().map(|&lo| (lo, *want.last().unwrap_or(&lo)));
                assert_eq!(compiled.matching_prefixes(sb), want, "{p:?} on {s:?}");
            }
        }
    }
}
