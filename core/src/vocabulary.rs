//! Diagnostics in a door's own words.
//!
//! Core writes its hints for the `kiln` command line (`say so with --pass-through acme.io`). A
//! door is driven by something else (Argo CD parameters and plugin env, a KRM function's
//! `Render` spec, a Flux Kustomization), so a hint naming a command-line flag points its user
//! at an option they cannot set. A door gives a [`Vocabulary`]: for each flag, what its user
//! writes instead; [`Vocabulary::speak`] rewrites a diagnostic's message, hint and file with it.
//! A replacement holding `{}` takes the flag's argument there (`--env NAME` with
//! `spec.environment: {}` is `spec.environment: NAME`); [`Vocabulary::forms`] gives a flag one
//! form without an argument and one with (`{key}` and `{value}` split a `PATH=VALUE` argument),
//! and [`Vocabulary::phrases`] whole phrases a door says differently.
//! [`cli_flags`] finds the flags a text still names, so a door's test can hold that none is left.
//!
//! ```
//! use kiln_core::diag::{codes, Diagnostic};
//! use kiln_core::vocabulary::{cli_flags, Vocabulary};
//!
//! let words = Vocabulary::new([("--pass-through", "spec.passThrough")]);
//! let d = Diagnostic::error(codes::REQUEST_INVALID, "unknown kind")
//!     .with_hint("say so with --pass-through acme.io");
//! let d = words.speak(d);
//! assert_eq!(d.hint.as_deref(), Some("say so with spec.passThrough acme.io"));
//! assert!(cli_flags(d.hint.as_deref().unwrap()).is_empty());
//! ```

use crate::diag::Diagnostic;

/// What a door's user writes for each command-line flag.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vocabulary {
    words: Vec<Word>,
    phrases: Vec<(String, String)>,
}

/// One flag's replacements.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    flag: String,
    /// Without an argument (and for a replacement that takes none).
    bare: String,
    /// With the argument: `{}` stands for it, or `{key}` and `{value}` for the two sides of a
    /// `KEY=VALUE` argument (an argument without `=` gives `bare ARG`). `None`: the flag takes
    /// no argument here, and a following word stays as it is.
    with_arg: Option<String>,
}

impl Vocabulary {
    /// A vocabulary of `(flag, replacement)` pairs; a flag is written with its dashes
    /// (`--pass-through`). A `{}` in a replacement stands for the flag's argument: the word
    /// after it (up to white space, without closing punctuation); with no argument, the `{}`
    /// and a space beside it are left out.
    pub fn new<I, F, R>(words: I) -> Self
    where
        I: IntoIterator<Item = (F, R)>,
        F: Into<String>,
        R: Into<String>,
    {
        Self {
            words: words
                .into_iter()
                .map(|(f, r)| {
                    let r: String = r.into();
                    if r.contains("{}") {
                        Word {
                            flag: f.into(),
                            bare: r.replacen(" {}", "", 1).replacen("{}", "", 1),
                            with_arg: Some(r),
                        }
                    } else {
                        Word {
                            flag: f.into(),
                            bare: r,
                            with_arg: None,
                        }
                    }
                })
                .collect(),
            phrases: Vec::new(),
        }
    }

    /// A vocabulary of `(flag, without an argument, with one)` triples: `("--pass-through",
    /// "passThrough", "passThrough: [{}]")` says `--pass-through acme.io` as
    /// `passThrough: [acme.io]` and a bare `--pass-through` as `passThrough`; `{key}` and
    /// `{value}` split a `KEY=VALUE` argument (`set: {{key}: {value}}`).
    pub fn forms<I, F, B, W>(words: I) -> Self
    where
        I: IntoIterator<Item = (F, B, W)>,
        F: Into<String>,
        B: Into<String>,
        W: Into<String>,
    {
        Self {
            words: words
                .into_iter()
                .map(|(f, b, w)| Word {
                    flag: f.into(),
                    bare: b.into(),
                    with_arg: Some(w.into()),
                })
                .collect(),
            phrases: Vec::new(),
        }
    }

    /// These words too (a flag given twice: the first wins).
    pub fn and(mut self, other: Vocabulary) -> Self {
        self.words.extend(other.words);
        self.phrases.extend(other.phrases);
        self
    }

    /// Whole phrases said differently, replaced before the flags (`" (or --crds)"` by `""` for
    /// a door whose CRDs are its inputs).
    pub fn phrases<I, F, T>(mut self, phrases: I) -> Self
    where
        I: IntoIterator<Item = (F, T)>,
        F: Into<String>,
        T: Into<String>,
    {
        self.phrases
            .extend(phrases.into_iter().map(|(f, t)| (f.into(), t.into())));
        self
    }

    /// The replacement of `flag` (without an argument), if the vocabulary has one.
    pub fn word(&self, flag: &str) -> Option<&str> {
        self.entry(flag).map(|w| w.bare.as_str())
    }

    fn entry(&self, flag: &str) -> Option<&Word> {
        self.words.iter().find(|w| w.flag == flag)
    }

    /// `text` with every flag the vocabulary knows replaced; other text, and flags it does not
    /// know, are left as they are.
    pub fn text(&self, text: &str) -> String {
        let mut phrased;
        let text = if self.phrases.iter().any(|(f, _)| text.contains(f.as_str())) {
            phrased = text.to_string();
            for (f, t) in &self.phrases {
                phrased = phrased.replace(f.as_str(), t);
            }
            phrased.as_str()
        } else {
            text
        };
        let mut out = String::with_capacity(text.len());
        let mut rest = 0;
        for (at, flag) in flag_spans(text) {
            if at < rest {
                // Taken as the argument of the flag before.
                continue;
            }
            let Some(w) = self.entry(flag) else {
                continue;
            };
            out.push_str(&text[rest..at]);
            rest = at + flag.len();
            let arg = argument(&text[rest..]);
            match &w.with_arg {
                Some(form) if !arg.is_empty() => {
                    let said = if form.contains("{key}") {
                        match arg.split_once('=') {
                            Some((k, v)) => form.replacen("{key}", k, 1).replacen("{value}", v, 1),
                            None => format!("{} {arg}", w.bare),
                        }
                    } else {
                        form.replacen("{}", arg, 1)
                    };
                    out.push_str(&said);
                    rest += 1 + arg.len();
                }
                _ => out.push_str(&w.bare),
            }
        }
        out.push_str(&text[rest..]);
        out
    }

    /// `d` with its message, hint and file in the door's words.
    pub fn speak(&self, mut d: Diagnostic) -> Diagnostic {
        d.message = self.text(&d.message);
        d.hint = d.hint.map(|h| self.text(&h));
        d.file = d.file.map(|f| self.text(&f));
        d
    }
}

/// The argument at the start of `rest` (what follows a flag): after one space, a word that does
/// not start with `-`, `(` or a quote, up to white space, without closing punctuation, and not
/// one of the sentence's own words (`or`, `and`, `to`, `is`, `with`).
fn argument(rest: &str) -> &str {
    let Some(after) = rest.strip_prefix(' ') else {
        return "";
    };
    if after.starts_with(['-', '(', ' ', '"', '`']) {
        return "";
    }
    let word = after.split(char::is_whitespace).next().unwrap_or("");
    let word = word.trim_end_matches([')', ',', ';', ':', '.']);
    // A word of the sentence, not an argument.
    if matches!(word, "or" | "and" | "to" | "is" | "with") {
        return "";
    }
    word
}

/// The command-line flags `text` names (`--word`, at the start of a word), in order.
pub fn cli_flags(text: &str) -> Vec<&str> {
    flag_spans(text).into_iter().map(|(_, f)| f).collect()
}

/// Each flag of `text` with its byte offset: `--` not preceded by a letter, digit or dash, then
/// a lowercase letter, then letters, digits and dashes.
fn flag_spans(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'-';
    let mut out = Vec::new();
    let mut i = 0;
    while i + 2 < b.len() {
        if b[i] == b'-'
            && b[i + 1] == b'-'
            && b[i + 2].is_ascii_lowercase()
            && (i == 0 || !word(b[i - 1]))
        {
            let mut j = i + 2;
            while j < b.len() && word(b[j]) {
                j += 1;
            }
            // A trailing dash ends a sentence dash, not the flag.
            let mut end = j;
            while b[end - 1] == b'-' {
                end -= 1;
            }
            out.push((i, &text[i..end]));
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::codes;

    #[test]
    fn finds_flags_at_word_starts_only() {
        assert_eq!(
            cli_flags("pass --env NAME (or --crds); <--set> x--y --Big -- a --limit a=1"),
            ["--env", "--crds", "--set", "--limit"]
        );
        assert!(cli_flags("kustomize-build --- no").is_empty());
    }

    #[test]
    fn rewrites_known_flags_in_message_hint_and_file() {
        let v = Vocabulary::new([("--set", "the parameter set"), ("--env", "ENVIRONMENT")]);
        let d = Diagnostic::error(codes::REQUEST_INVALID, "--set \"a\" is not path=value")
            .in_file("<--set>")
            .with_hint("write --set a=1, or pass --env NAME; --settings and --limit stay");
        let d = v.speak(d);
        assert_eq!(d.message, "the parameter set \"a\" is not path=value");
        assert_eq!(d.file.as_deref(), Some("<the parameter set>"));
        assert_eq!(
            d.hint.as_deref(),
            Some("write the parameter set a=1, or pass ENVIRONMENT NAME; --settings and --limit stay")
        );
    }

    #[test]
    fn a_replacement_takes_the_flags_argument() {
        let v = Vocabulary::new([
            ("--env", "spec.environment: {}"),
            ("--limit", "a higher {} (not settable here)"),
        ]);
        assert_eq!(
            v.text("pass --env NAME or add one; (--env) or --env, then --limit output-bytes=2Gi)."),
            "pass spec.environment: NAME or add one; (spec.environment:) or spec.environment:, then a higher output-bytes=2Gi (not settable here))."
        );
    }

    #[test]
    fn forms_with_and_without_an_argument_and_phrases() {
        let v = Vocabulary::forms([
            ("--pass-through", "passThrough", "passThrough: [{}]"),
            ("--set", "set", "set: {{key}: {value}}"),
        ])
        .and(Vocabulary::new([("--allow-empty", "allowEmpty: true")]))
        .phrases([(" (or --crds)", "")]);
        assert_eq!(
            v.text("say so with --pass-through acme.io (or --crds); or --pass-through, or --pass-through to them"),
            "say so with passThrough: [acme.io]; or passThrough, or passThrough to them"
        );
        assert_eq!(
            v.text("write --set a.b=3, --set \"x=1\" or --set x; (--allow-empty) --allow-empty x"),
            "write set: {a.b: 3}, set \"x=1\" or set x; (allowEmpty: true) allowEmpty: true x"
        );
    }
}
