//! The secret values a kurel patch file writes, for redaction ([`crate::redact`]).
//!
//! Redaction reads YAML and JSON documents itself; a `.kpatch` file is kurel's own format, so
//! kurel reads it: [`secret_lines`] is the [`FileSecrets`](crate::redact::FileSecrets) reader the
//! request layer hands to [`Secrets::collect`](crate::redact::Secrets::collect).

use std::sync::Arc;

use crate::document::SourceFile;
use crate::redact::scalars;

use super::kpatch::{parse_kpatch, Action, Seg};

/// The lines of a kurel patch file (`.kpatch`, `.patch`, `.toml`) that write into a Secret's
/// `data` or `stringData`, with their values; `None` for any other file. A patch that does not
/// parse still has its lines under a `[secret.…]` header blanked.
pub fn secret_lines(f: &SourceFile) -> Option<Vec<(usize, Vec<String>)>> {
    let name = f.name.as_str();
    [".kpatch", ".patch", ".toml"]
        .iter()
        .any(|e| name.ends_with(e))
        .then(|| kpatch_secrets(f))
}

/// Lines of a kurel patch that write into a Secret's `data` or `stringData`, with their values.
fn kpatch_secrets(f: &SourceFile) -> Vec<(usize, Vec<String>)> {
    let Ok((ops, _)) = parse_kpatch(&Arc::new(SourceFile {
        name: f.name.clone(),
        text: f.text.clone(),
    })) else {
        return unparsed_kpatch_lines(&f.text);
    };
    let mut out = Vec::new();
    for op in ops {
        let Some(line) = op.line else {
            continue;
        };
        if !op.target.kind.eq_ignore_ascii_case("secret") {
            continue;
        }
        let (into_data, whole) = match op.path.first() {
            Some(Seg::Key(k)) if k == "data" || k == "stringData" => (true, op.path.len() == 1),
            None => (false, true),
            _ => (false, false),
        };
        let value = match &op.action {
            Action::Set(v) | Action::Append(v) | Action::Merge(v) => v,
            Action::Insert { value, .. } => value,
            _ => continue,
        };
        let mut values = Vec::new();
        if into_data {
            if whole {
                // A value holding a variable (`${db.password}`) is not itself secret; what it
                // reads is found where the package's parameters are read.
                values.extend(scalars(value).into_iter().filter(|v| !v.contains("${")));
            } else {
                values.extend(scalars(value));
            }
        } else if whole {
            // A patch of the whole object: its data.
            for key in ["data", "stringData"] {
                if let Some(d) = value.get(key) {
                    values.extend(scalars(d));
                }
            }
        }
        if !values.is_empty() {
            out.push((line, values));
        }
    }
    out
}

/// A kpatch file that did not parse: lines under a `[secret.…]` header.
fn unparsed_kpatch_lines(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_secret = false;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.starts_with('[') && !t.starts_with("[-") && !t.starts_with("[+") {
            in_secret = t[1..].to_ascii_lowercase().starts_with("secret.");
            continue;
        }
        if in_secret {
            if let Some((_, v)) = t.split_once(':') {
                let v = v.trim().trim_matches(['"', '\'']);
                if !v.is_empty() {
                    out.push((i + 1, vec![v.to_string()]));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::Secrets;

    #[test]
    fn kpatch_lines_writing_a_secret_are_secret() {
        let p = Arc::new(SourceFile {
            name: "10-pw.kpatch".into(),
            text: "[secret.db]\nstringData.password: kpatch-password\n[deployment.web]\nspec.replicas: 3\n"
                .into(),
        });
        let s = Secrets::collect(std::slice::from_ref(&p), &[], &[], &[secret_lines]);
        let values: Vec<&str> = s.iter().map(|x| x.value.as_str()).collect();
        assert_eq!(values, ["kpatch-password"]);
        let src = s.redact_source(&p);
        assert!(src.contains("stringData.password: [redacted]"), "{src}");
        assert!(src.contains("spec.replicas: 3"), "{src}");
    }

    #[test]
    fn a_patch_that_does_not_parse_still_has_its_secret_lines_blanked() {
        let p = Arc::new(SourceFile {
            name: "10-pw.kpatch".into(),
            text:
                "[secret.db]\nstringData.extra: patched-extra-secret\nstringData.other: [unclosed\n"
                    .into(),
        });
        let s = Secrets::collect(std::slice::from_ref(&p), &[], &[], &[secret_lines]);
        let src = s.redact_source(&p);
        assert!(!src.contains("patched-extra-secret"), "{src}");
    }

    #[test]
    fn only_patch_files_are_read() {
        let f = SourceFile {
            name: "parameters.yaml".into(),
            text: "[secret.db]\npassword: x\n".into(),
        };
        assert_eq!(secret_lines(&f), None);
    }
}
