//! What postBuild substitution would change in an object kiln renders, and how to keep it from
//! doing so.
//!
//! Flux substitutes every `${` of an object that does not opt out, and turns every `$$` into
//! `$`. Output that holds `${` (a shell script, an nginx template, OpenTelemetry's `${env:X}`)
//! must therefore carry the opt-out (`kustomize.toolkit.fluxcd.io/substitute: disabled`) or be
//! escaped. [`lint`] finds the fields at risk; [`escape`] rewrites an object so that
//! substitution gives back exactly the original.
//!
//! ```
//! use serde_json::json;
//! use kiln_core::flux::lint::{escape, escape_text, lint, Hazard};
//!
//! let obj = json!({"kind": "ConfigMap", "metadata": {"name": "s"}, "data": {"run.sh": "echo ${HOME} $$"}});
//! let found = lint(&obj);
//! assert_eq!(found[0].path.to_string(), "data[\"run.sh\"]");
//! assert_eq!(found[0].hazard, Hazard::Reference);
//! assert_eq!(escape_text("echo ${HOME} $$"), "echo $${HOME} $$$");
//! // What is left are the escapes themselves: `$$` runs that substitution halves, on purpose.
//! assert!(lint(&escape(&obj)).iter().all(|f| f.hazard == Hazard::DoubleDollar));
//! ```

use serde_json::{Map, Value};

use super::postbuild::{opted_out, strings};
use super::{DISABLED, SUBSTITUTE_KEY};
use crate::diag::{codes, Diagnostic};
use crate::fieldpath::At;
use crate::fieldpath::FieldPath;

/// What substitution would do to a field.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Hazard {
    /// A `${` that would be read as a substitution (or fail to parse as one).
    Reference,
    /// A `$$` (not before `{`) that would become `$`.
    DoubleDollar,
}

/// One field at risk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// The field; for a mapping key, the path of its value.
    pub path: FieldPath,
    /// The text at risk is the key, not the value.
    pub in_key: bool,
    /// What would happen.
    pub hazard: Hazard,
}

/// The hazards of one text: whether it holds an unescaped `${` and whether it holds a `$$` that
/// would collapse. A run of `n` dollars before `{` starts a substitution when `n` is odd (the
/// pairs before it are escapes); any run of two or more elsewhere loses half its dollars.
pub fn text_hazards(text: &str) -> (bool, bool) {
    let b = text.as_bytes();
    let (mut reference, mut double) = (false, false);
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'$' {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && b[i] == b'$' {
            i += 1;
        }
        let n = i - start;
        if b.get(i) == Some(&b'{') {
            reference |= n % 2 == 1;
        } else {
            double |= n >= 2;
        }
    }
    (reference, double)
}

/// The fields of `object` that substitution would change, in the order kiln writes them; none
/// when the object opts out. Meant for output before it is escaped: escaped text still shows
/// its `$$` runs (the escapes) as [`Hazard::DoubleDollar`].
pub fn lint(object: &Value) -> Vec<Finding> {
    let mut out = Vec::new();
    if !opted_out(object) {
        strings(object, &mut |at, s, in_key| check(s, at, in_key, &mut out));
    }
    out
}

fn check(s: &str, at: &At<'_, '_>, in_key: bool, out: &mut Vec<Finding>) {
    let (reference, double) = text_hazards(s);
    for (on, hazard) in [
        (reference, Hazard::Reference),
        (double, Hazard::DoubleDollar),
    ] {
        if on {
            out.push(Finding {
                path: at.path(),
                in_key,
                hazard,
            });
        }
    }
}

/// [`lint`] as warnings (KLN8008), one per field, for a door to print.
pub fn diagnostics(object: &Value) -> Vec<Diagnostic> {
    let id = {
        let s = |p: &str| object.pointer(p).and_then(Value::as_str);
        match (s("/kind"), s("/metadata/name")) {
            (Some(k), Some(n)) => match s("/metadata/namespace") {
                Some(ns) if !ns.is_empty() => format!("{k} {ns}/{n}"),
                _ => format!("{k} {n}"),
            },
            _ => "object".to_string(),
        }
    };
    lint(object)
        .into_iter()
        .map(|f| {
            let what = if f.in_key { "key" } else { "field" };
            let msg = match f.hazard {
                Hazard::Reference => format!(
                    "{id}: this {what} holds `${{`, which Flux postBuild would substitute"
                ),
                Hazard::DoubleDollar => {
                    format!("{id}: this {what} holds `$$`, which Flux postBuild would turn into `$`")
                }
            };
            Diagnostic::warning(codes::FLUX_UNESCAPED, msg)
                .at(f.path.to_string())
                .with_hint(format!(
                    "escape it (`$${{` for `${{`, `$$$` for `$$`; kiln's flux::lint::escape does this), or label or annotate the object {SUBSTITUTE_KEY}: {DISABLED}"
                ))
        })
        .collect()
}

/// `text` written so that substitution gives `text` back: a run of `n` dollars becomes `2n`
/// before `{` (each pair is one literal `$`, and no odd one starts an expression), `2n - 1`
/// elsewhere (the pairs and a lone `$`, which stays as it is). Text without `$` is unchanged.
pub fn escape_text(text: &str) -> String {
    if !text.contains('$') {
        return text.to_string();
    }
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let mut i = 0;
    while i < b.len() {
        let Some(d) = text[i..].find('$') else {
            out.push_str(&text[i..]);
            break;
        };
        out.push_str(&text[i..i + d]);
        i += d;
        let start = i;
        while i < b.len() && b[i] == b'$' {
            i += 1;
        }
        let n = i - start;
        let dollars = if b.get(i) == Some(&b'{') {
            2 * n
        } else {
            2 * n - 1
        };
        out.extend(std::iter::repeat_n('$', dollars));
    }
    out
}

/// The object with every string (keys included) escaped with [`escape_text`], so that Flux's
/// substitution, whatever its variables, gives back the original. An object that opts out is
/// returned as it is (Flux does not substitute it). Note that Flux skips substitution entirely
/// when a Kustomization has no variables and strategy `WithVariables`: escape output only for
/// Kustomizations that substitute.
pub fn escape(object: &Value) -> Value {
    if opted_out(object) {
        return object.clone();
    }
    escape_value(object)
}

fn escape_value(v: &Value) -> Value {
    match v {
        Value::String(s) => Value::String(escape_text(s)),
        Value::Array(a) => Value::Array(a.iter().map(escape_value).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, x)| (escape_text(k), escape_value(x)))
                .collect::<Map<String, Value>>(),
        ),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flux::envsubst::{substitute, Options};
    use crate::flux::postbuild::{apply, PostBuild, Strategy as When};
    use crate::flux::variables::Variables;
    use proptest::prelude::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[test]
    fn hazards_of_texts() {
        assert_eq!(text_hazards("plain $ text $x"), (false, false));
        assert_eq!(text_hazards("${a}"), (true, false));
        assert_eq!(text_hazards("$${a}"), (false, false));
        assert_eq!(text_hazards("$$${a}"), (true, false));
        assert_eq!(text_hazards("$$$${a}"), (false, false));
        assert_eq!(text_hazards("pid $$"), (false, true));
        assert_eq!(text_hazards("$$ ${a}"), (true, true));
        assert_eq!(text_hazards("a$"), (false, false));
    }

    #[test]
    fn finds_fields_and_keys() {
        let o = json!({"kind": "ConfigMap", "metadata": {"name": "a"}, "data": {
            "${k}": "x", "list": ["ok", "$$"], "esc": "$${fine}"
        }});
        let f = lint(&o);
        assert_eq!(
            f,
            [
                Finding {
                    path: FieldPath::root().key("data").key("${k}"),
                    in_key: true,
                    hazard: Hazard::Reference
                },
                Finding {
                    path: FieldPath::root().key("data").key("list").index(1),
                    in_key: false,
                    hazard: Hazard::DoubleDollar
                }
            ]
        );
        let ds = diagnostics(&o);
        assert_eq!(ds.len(), 2);
        assert!(ds.iter().all(|d| !d.is_error() && d.hint.is_some()));
        assert_eq!(
            ds[0].message,
            "ConfigMap a: this key holds `${`, which Flux postBuild would substitute"
        );
        let off = json!({"metadata": {"annotations": {SUBSTITUTE_KEY: "disabled"}}, "data": {"a": "${x}"}});
        assert!(lint(&off).is_empty());
        assert_eq!(escape(&off), off);
    }

    #[test]
    fn escaping_examples() {
        assert_eq!(escape_text("no dollars"), "no dollars");
        assert_eq!(escape_text("${a}"), "$${a}");
        assert_eq!(escape_text("$${a}"), "$$$${a}");
        assert_eq!(escape_text("$a $ a$"), "$a $ a$");
        assert_eq!(escape_text("$$"), "$$$");
        assert_eq!(escape_text("$$$x"), "$$$$$x");
        assert_eq!(escape_text("${a[@]} ${#b}"), "$${a[@]} $${#b}");
    }

    fn round_trips(s: &str) -> Result<(), TestCaseError> {
        let e = escape_text(s);
        prop_assert!(
            !text_hazards(&e).0,
            "escaped text still has a reference: {e:?}"
        );
        let vars = BTreeMap::from([("a".to_string(), "X".to_string())]);
        for strict in [true, false] {
            let opts = Options {
                strict,
                ..Options::default()
            };
            let back = substitute(&e, &vars, &opts);
            prop_assert_eq!(back.as_deref(), Ok(s), "escaped: {:?}", e);
        }
        Ok(())
    }

    /// Strings that exercise dollars, braces and what YAML treats specially.
    fn text() -> impl Strategy<Value = String> {
        proptest::collection::vec(
            prop_oneof![
                4 => Just("$".to_string()),
                2 => Just("{".to_string()),
                2 => Just("}".to_string()),
                1 => Just("${a}".to_string()),
                1 => Just("${b:-x}".to_string()),
                1 => Just("\\".to_string()),
                1 => Just(": ".to_string()),
                1 => Just("#".to_string()),
                1 => Just("\n".to_string()),
                1 => Just(" ".to_string()),
                1 => Just("'\"".to_string()),
                1 => Just("é".to_string()),
                3 => "[a-z0-9]{1,3}",
            ],
            0..12,
        )
        .prop_map(|parts| parts.concat())
    }

    fn object() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            text().prop_map(Value::String),
            any::<i32>().prop_map(|n| json!(n)),
            any::<bool>().prop_map(Value::Bool),
            Just(Value::Null),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map(text(), inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
        .prop_map(|data| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": data}))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn escaped_text_substitutes_back(s in text()) {
            round_trips(&s)?;
        }

        #[test]
        fn escaped_arbitrary_text_substitutes_back(s in "\\PC*") {
            round_trips(&s)?;
        }

        #[test]
        fn escaped_objects_substitute_back(o in object(), always in any::<bool>(), strict in any::<bool>()) {
            let mut vars = Variables::new();
            if !always {
                vars.insert("a", "1");
                vars.insert("b", "two: 2");
            }
            let mut settings = PostBuild::new(vars);
            settings.strict = strict;
            if always {
                settings.strategy = When::Always;
            }
            let escaped = escape(&o);
            prop_assert!(lint(&escaped).iter().all(|f| f.hazard != Hazard::Reference));
            let back = apply(escaped.clone(), &settings);
            prop_assert_eq!(back.as_ref().ok(), Some(&o), "escaped: {}, got {:?}", escaped, back);
        }
    }
}
