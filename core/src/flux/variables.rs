//! The variables of a postBuild substitution: `substituteFrom` sources merged in order, then the
//! inline `substitute` map over them, with newlines removed from every value.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kiln_core::flux::variables::{Variables, VariableSource};
//!
//! let cluster = VariableSource::config_map(BTreeMap::from([
//!     ("region".to_string(), "eu-1".to_string()),
//!     ("env".to_string(), "dev".to_string()),
//! ]));
//! let creds = VariableSource::secret(BTreeMap::from([("token".to_string(), "s3\ncret".to_string())]));
//! let inline = BTreeMap::from([("env".to_string(), "prod".to_string())]);
//! let vars = Variables::merge(&[cluster, creds], &inline);
//! assert_eq!(vars.get("env"), Some("prod"));
//! assert_eq!(vars.get("token"), Some("s3cret"));
//! assert!(vars.is_secret("token"));
//! ```

use std::collections::{BTreeMap, BTreeSet};

use super::envsubst::Lookup;
use crate::redact::Secrets;

/// The rule variable names must follow, as Flux writes it.
pub const NAME_PATTERN: &str = "^[_[:alpha:]][_[:alpha:][:digit:]]*$";

/// Whether `name` matches [`NAME_PATTERN`] (`[:alpha:]` and `[:digit:]` are ASCII classes).
pub fn is_valid_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b == b'_' || b.is_ascii_alphabetic())
        && bytes.all(|b| b == b'_' || b.is_ascii_alphanumeric())
}

/// One `substituteFrom` entry's data: a ConfigMap's `data`, or a Secret's `data` decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VariableSource {
    /// Whether the values are secret (the source is a Secret).
    pub secret: bool,
    /// Variable names and values.
    pub data: BTreeMap<String, String>,
}

impl VariableSource {
    /// A ConfigMap's data.
    pub fn config_map(data: BTreeMap<String, String>) -> Self {
        Self {
            secret: false,
            data,
        }
    }

    /// A Secret's (decoded) data.
    pub fn secret(data: BTreeMap<String, String>) -> Self {
        Self { secret: true, data }
    }
}

/// Variable names and values, ordered by name, and which of them are secret.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variables {
    values: BTreeMap<String, String>,
    secret: BTreeSet<String>,
}

impl Variables {
    /// No variables.
    pub fn new() -> Self {
        Self::default()
    }

    /// Flux's precedence: the sources in order (a later one overrides an earlier one), then the
    /// inline `substitute` map over all of them.
    pub fn merge(
        substitute_from: &[VariableSource],
        substitute: &BTreeMap<String, String>,
    ) -> Self {
        let mut vars = Self::new();
        for src in substitute_from {
            for (k, v) in &src.data {
                if src.secret {
                    vars.insert_secret(k, v);
                } else {
                    vars.insert(k, v);
                }
            }
        }
        for (k, v) in substitute {
            vars.insert(k, v);
        }
        vars
    }

    /// Set a variable; newlines are removed from the value (as Flux does).
    pub fn insert(&mut self, name: impl Into<String>, value: &str) {
        let name = name.into();
        self.secret.remove(&name);
        self.values.insert(name, value.replace('\n', ""));
    }

    /// Set a variable whose value is secret.
    pub fn insert_secret(&mut self, name: impl Into<String>, value: &str) {
        let name = name.into();
        self.secret.insert(name.clone());
        self.values.insert(name, value.replace('\n', ""));
    }

    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.values.get(name).map(String::as_str)
    }

    /// Whether the variable's value came from a Secret.
    pub fn is_secret(&self, name: &str) -> bool {
        self.secret.contains(name)
    }

    /// How many variables there are.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// Names and values, by name.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.values.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// Names that do not match [`NAME_PATTERN`], by name.
    pub fn invalid_names(&self) -> impl Iterator<Item = &str> {
        self.values
            .keys()
            .map(String::as_str)
            .filter(|n| !is_valid_name(n))
    }

    /// Add the secret values to a door's redaction list, so that no diagnostic, snippet or log
    /// line shows them (kiln's own messages name variables, never their values).
    pub fn add_secrets_to(&self, secrets: &mut Secrets) {
        for name in &self.secret {
            if let Some(v) = self.values.get(name).filter(|v| !v.is_empty()) {
                secrets.add_value(v.clone());
            }
        }
    }
}

impl Lookup for Variables {
    fn lookup(&self, name: &str) -> Option<&str> {
        self.get(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn names() {
        for ok in ["a", "_", "_a1", "APP_NAME", "x9"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        for bad in ["", "1a", "a-b", "a.b", "é", "a b", "a\n", "$a"] {
            assert!(!is_valid_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn precedence_newlines_and_secrets() {
        let first = VariableSource::config_map(map(&[("a", "1"), ("b", "1"), ("c", "1")]));
        let second = VariableSource::secret(map(&[("b", "2\n"), ("c", "2")]));
        let inline = map(&[("c", "3\nx\n")]);
        let v = Variables::merge(&[first, second], &inline);
        assert_eq!(v.get("a"), Some("1"));
        assert_eq!(v.get("b"), Some("2"));
        assert_eq!(v.get("c"), Some("3x"));
        assert!(v.is_secret("b"));
        assert!(
            !v.is_secret("c"),
            "an inline value overrides the secret one"
        );
        assert_eq!(v.len(), 3);
        let mut s = Secrets::default();
        v.add_secrets_to(&mut s);
        assert_eq!(
            s.iter().map(|s| s.value.as_str()).collect::<Vec<_>>(),
            ["2"]
        );
        // `\r` is kept, as in Flux.
        let mut w = Variables::new();
        w.insert("a", "x\r\ny");
        assert_eq!(w.get("a"), Some("x\ry"));
    }

    #[test]
    fn invalid_names_in_order() {
        let v = Variables::merge(&[], &map(&[("ok", ""), ("2x", ""), ("a-b", "")]));
        assert_eq!(v.invalid_names().collect::<Vec<_>>(), ["2x", "a-b"]);
    }
}
