//! Diagnostics in a door's own words.
//!
//! Core writes its hints for the `kiln` command line (`say so with --pass-through acme.io`). A
//! door is driven by something else (Argo CD parameters and plugin env, a KRM function's
//! `Render` spec, a Flux Kustomization), so a hint naming a command-line flag points its user
//! at an option they cannot set. A door gives a [`Vocabulary`]: for each flag, what its user
//! writes instead; [`Vocabulary::speak`] rewrites a diagnostic's message, hint and file with it.
//! A replacement holding `{}` takes the flag's argument there (`--env NAME` with
//! `spec.environment: {}` is `spec.environment: NAME`).
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
    words: Vec<(String, String)>,
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
                .map(|(f, r)| (f.into(), r.into()))
                .collect(),
        }
    }

    /// The replacement of `flag`, if the vocabulary has one.
    pub fn word(&self, flag: &str) -> Option<&str> {
        self.words
            .iter()
            .find(|(f, _)| f == flag)
            .map(|(_, r)| r.as_str())
    }

    /// `text` with every flag the vocabulary knows replaced; other text, and flags it does not
    /// know, are left as they are.
    pub fn text(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = 0;
        for (at, flag) in flag_spans(text) {
            if at < rest {
                // Taken as the argument of the flag before.
                continue;
            }
            if let Some(r) = self.word(flag) {
                out.push_str(&text[rest..at]);
                rest = at + flag.len();
                if r.contains("{}") {
                    let arg = argument(&text[rest..]);
                    if arg.is_empty() {
                        out.push_str(&r.replacen(" {}", "", 1).replacen("{}", "", 1));
                    } else {
                        out.push_str(&r.replacen("{}", arg, 1));
                        rest += 1 + arg.len();
                    }
                } else {
                    out.push_str(r);
                }
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
/// not start with `-` or `(`, up to white space, without closing punctuation.
fn argument(rest: &str) -> &str {
    let Some(after) = rest.strip_prefix(' ') else {
        return "";
    };
    if after.starts_with(['-', '(', ' ']) {
        return "";
    }
    let word = after.split(char::is_whitespace).next().unwrap_or("");
    word.trim_end_matches([')', ',', ';', ':', '.'])
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
}
