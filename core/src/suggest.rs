//! "Did you mean …?": the one helper every stage uses to name the nearest known word (a kind, an
//! environment, an id, a field) when the user's is unknown.
//!
//! Words are compared without regard to case (`Webapp` is `WebApp` mistyped, not another kind),
//! by the optimal-string-alignment distance, where swapping two neighbouring letters
//! (`Deploymnet`) costs one edit. A word is near when it is at most one edit away, or two for
//! words of six letters or more: close enough to be a slip of the keyboard, far enough that
//! `Secret` is never offered for `Service`.

/// The candidate nearest to `word`, if one is near enough; ties go to the first candidate given.
pub fn nearest<'a, I>(word: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let w = word.to_lowercase();
    let limit = if w.chars().count() >= 6 { 2 } else { 1 };
    let mut best: Option<(usize, &'a str)> = None;
    for c in candidates {
        if c == word {
            continue;
        }
        let d = distance(&w, &c.to_lowercase());
        if d <= limit && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

/// The hint text for a suggestion: `did you mean "X"?`.
pub fn did_you_mean(s: &str) -> String {
    format!("did you mean {s:?}?")
}

/// The word a text suggests with [`did_you_mean`] (a message that carries the suggestion of a
/// stage below, such as the CEL checker's undefined field), when it is written plainly.
pub fn suggested_in(text: &str) -> Option<String> {
    let start = text.find("did you mean \"")? + "did you mean \"".len();
    let rest = &text[start..];
    let end = rest.find("\"?")?;
    let word = &rest[..end];
    (!word.is_empty() && !word.contains('\\')).then(|| word.to_string())
}

/// `d` with the word its hint suggests ([`did_you_mean`]) kept whole, for an editor's quick fix
/// that replaces the misspelt word with it.
pub fn suggesting(d: crate::diag::Diagnostic, s: Option<&str>) -> crate::diag::Diagnostic {
    crate::diag::Diagnostic {
        suggestion: s.map(str::to_string),
        ..d
    }
}

/// Optimal string alignment distance (Levenshtein plus adjacent transpositions).
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    // Three rows: the one two back is needed for transpositions.
    let mut prev2 = vec![0usize; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0usize; b.len() + 1];
    for i in 1..=a.len() {
        cur[0] = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
        }
        std::mem::swap(&mut prev2, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_suggestion_is_read_back_from_a_message() {
        let msg = format!("undefined field 'replica' ({})", did_you_mean("replicas"));
        assert_eq!(suggested_in(&msg).as_deref(), Some("replicas"));
        assert_eq!(suggested_in("undefined field 'x'"), None);
        // Escaped by the quoting: not a word an editor can put back as written.
        assert_eq!(suggested_in(&did_you_mean("a\"b")), None);
        assert_eq!(suggested_in(&did_you_mean("")), None);
    }

    #[test]
    fn slips_of_the_keyboard_are_near() {
        let kinds = ["Deployment", "Service", "Secret", "ConfigMap", "WebApp"];
        assert_eq!(nearest("Deploymnet", kinds), Some("Deployment"));
        assert_eq!(nearest("service", kinds), Some("Service"));
        assert_eq!(nearest("Configmap", kinds), Some("ConfigMap"));
        assert_eq!(nearest("Webapp", kinds), Some("WebApp"));
        assert_eq!(
            nearest("prodution", ["development", "production"]),
            Some("production")
        );
    }

    #[test]
    fn other_words_are_not() {
        let kinds = ["Deployment", "Service", "Secret"];
        assert_eq!(nearest("Database", kinds), None);
        assert_eq!(nearest("Servers", ["Secret"]), None);
        assert_eq!(
            nearest("Service", ["Service"]),
            None,
            "the word itself is no suggestion"
        );
        assert_eq!(nearest("ab", ["xy"]), None);
    }

    #[test]
    fn distance_counts_a_transposition_once() {
        assert_eq!(distance("ab", "ba"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("same", "same"), 0);
    }
}
