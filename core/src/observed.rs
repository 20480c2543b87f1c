//! Observed state: live objects given offline (`--observed`, e.g. `kubectl get -o yaml` output).
//!
//! A renderer has no cluster. What kro reads from one, an external reference and the status of
//! the objects it created, is looked up here instead. Objects are identified as the API server
//! identifies them: API group (not version: `kubectl get` prints the preferred version, which
//! need not be the one a template names), kind, namespace and name. Nothing observed is ever part
//! of the output.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::diag::{codes, Diagnostic, Diagnostics};
use crate::document::Document;
use crate::fieldpath::FieldPath;
use crate::scope::group_of;

/// The fields of `metadata` that the API server sets on an object it stores (an instance, a
/// created resource), which no file or template gives: offline they exist only in observed state.
pub const SERVER_SET_METADATA: &[&str] = &[
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "managedFields",
    "selfLink",
    "ownerReferences",
];

/// `(group, kind, namespace, name)`.
type Key = (String, String, String, String);

/// Live objects by identity.
#[derive(Debug, Clone, Default)]
pub struct Observed {
    objects: BTreeMap<Key, Value>,
}

fn key_of(v: &Value) -> Option<Key> {
    let api = v.get("apiVersion")?.as_str()?;
    let kind = v.get("kind")?.as_str()?;
    let md = v.get("metadata")?;
    let name = md.get("name")?.as_str()?;
    let ns = md.get("namespace").and_then(Value::as_str).unwrap_or("");
    Some((
        group_of(api).to_string(),
        kind.to_string(),
        ns.to_string(),
        name.to_string(),
    ))
}

impl Observed {
    /// The objects as JSON, in identity order, key order kept: what tells two runs' observed
    /// states apart (`kiln diff` takes an instance's unit from the other side only when they
    /// are the same).
    pub fn to_json(&self) -> String {
        serde_json::to_string(&self.objects.values().collect::<Vec<_>>()).unwrap_or_default()
    }

    /// Index observed documents. Each must be an object with apiVersion, kind and
    /// metadata.name, and no identity may appear twice (which of two live objects is the real
    /// one is not kiln's guess to make).
    pub fn from_documents(docs: &[Document]) -> Result<Self, Diagnostics> {
        let mut objects = BTreeMap::new();
        let mut diags = Diagnostics::new();
        for d in docs {
            let Some(key) = key_of(&d.value) else {
                diags.push(
                    d.diag(
                        Diagnostic::error(
                            codes::OBSERVED_INVALID,
                            "observed object has no apiVersion, kind or metadata.name",
                        )
                        .with_hint(
                            "observed state is live objects, as `kubectl get -o yaml` prints them",
                        ),
                        &FieldPath::root(),
                    ),
                );
                continue;
            };
            if objects.insert(key.clone(), d.value.clone()).is_some() {
                let (group, kind, ns, name) = key;
                diags.push(
                    d.diag(
                        Diagnostic::error(
                            codes::OBSERVED_INVALID,
                            format!(
                                "observed object {kind}{} {}{name} appears twice",
                                if group.is_empty() {
                                    String::new()
                                } else {
                                    format!(".{group}")
                                },
                                if ns.is_empty() {
                                    String::new()
                                } else {
                                    format!("{ns}/")
                                }
                            ),
                        )
                        .with_hint(
                            "give each live object once: which copy is current is ambiguous",
                        ),
                        &FieldPath::root(),
                    ),
                );
            }
        }
        if diags.has_errors() {
            Err(diags)
        } else {
            Ok(Self { objects })
        }
    }

    /// Whether nothing was observed.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The live object with this identity (`namespace` empty for cluster-scoped kinds).
    pub fn get(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: &str,
    ) -> Option<&Value> {
        self.objects.get(&(
            group_of(api_version).to_string(),
            kind.to_string(),
            namespace.to_string(),
            name.to_string(),
        ))
    }

    /// The live object with the identity of `obj` (a rendered object).
    pub fn get_like(&self, obj: &Value) -> Option<&Value> {
        self.objects.get(&key_of(obj)?)
    }

    /// Live objects of a kind matching a label selector, in one namespace or (`None`) in all,
    /// ordered by namespace and name.
    pub fn select(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
        selector: &Value,
    ) -> Result<Vec<&Value>, String> {
        let group = group_of(api_version);
        let mut out = Vec::new();
        for ((g, k, ns, _), v) in &self.objects {
            if g != group || k != kind || namespace.is_some_and(|n| n != ns) {
                continue;
            }
            let labels = v
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            if selector_matches(selector, &labels)? {
                out.push(v);
            }
        }
        Ok(out)
    }
}

/// Whether labels satisfy a Kubernetes `LabelSelector` (`matchLabels` and `matchExpressions`,
/// all terms ANDed; an empty selector matches everything).
pub fn selector_matches(
    selector: &Value,
    labels: &serde_json::Map<String, Value>,
) -> Result<bool, String> {
    let Some(sel) = selector.as_object() else {
        return Err("selector must be a mapping with matchLabels and/or matchExpressions".into());
    };
    for (k, _) in sel {
        if k != "matchLabels" && k != "matchExpressions" {
            return Err(format!("selector has unknown field {k:?}"));
        }
    }
    if let Some(ml) = sel.get("matchLabels").filter(|v| !v.is_null()) {
        let ml = ml.as_object().ok_or("matchLabels must be a map")?;
        for (k, want) in ml {
            if labels.get(k) != Some(want) {
                return Ok(false);
            }
        }
    }
    if let Some(me) = sel.get("matchExpressions").filter(|v| !v.is_null()) {
        let me = me.as_array().ok_or("matchExpressions must be a list")?;
        for term in me {
            let key = term["key"]
                .as_str()
                .ok_or("a matchExpressions term needs a key")?;
            let values: Vec<&str> = term["values"]
                .as_array()
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let have = labels.get(key).and_then(Value::as_str);
            let ok = match term["operator"].as_str() {
                Some("In") => have.is_some_and(|h| values.contains(&h)),
                Some("NotIn") => have.is_none_or(|h| !values.contains(&h)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                other => {
                    return Err(format!(
                        "matchExpressions operator {other:?} is not one of In, NotIn, Exists, DoesNotExist"
                    ))
                }
            };
            if !ok {
                return Ok(false);
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn selectors_follow_kubernetes() {
        let labels = json!({"app": "db", "tier": "backend"});
        let labels = labels.as_object().unwrap();
        let m = |s: Value| selector_matches(&s, labels).unwrap();
        assert!(m(json!({})));
        assert!(m(json!({"matchLabels": {"app": "db"}})));
        assert!(!m(json!({"matchLabels": {"app": "web"}})));
        assert!(m(
            json!({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["backend", "x"]}]})
        ));
        assert!(!m(
            json!({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["backend"]}]})
        ));
        assert!(m(
            json!({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]})
        ));
        assert!(!m(
            json!({"matchLabels": {"app": "db"}, "matchExpressions": [{"key": "zone", "operator": "Exists"}]})
        ));
        let refused = selector_matches(
            &json!({"matchExpressions": [{"key": "a", "operator": "Near"}]}),
            labels,
        )
        .expect_err("an error");
        assert!(refused.to_string().contains("Near"), "{refused}");
    }

    #[test]
    fn identity_ignores_the_version() {
        let docs = crate::document::parse_file(
            "o.yaml",
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: prod}\nstatus: {readyReplicas: 2}\n".into(),
            &Default::default(),
        )
        .unwrap();
        let o = Observed::from_documents(&docs).unwrap();
        assert!(o.get("apps/v1beta2", "Deployment", "prod", "web").is_some());
        assert!(o.get("apps/v1", "Deployment", "dev", "web").is_none());
    }

    #[test]
    fn the_same_object_twice_is_an_error() {
        let docs = crate::document::parse_file(
            "o.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n".into(),
            &Default::default(),
        )
        .unwrap();
        let err = Observed::from_documents(&docs).unwrap_err();
        assert_eq!(err.0[0].code, codes::OBSERVED_INVALID);
    }
}
