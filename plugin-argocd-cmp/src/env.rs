//! The environment Argo CD gives a plugin command, read into plain data.
//!
//! Only the variables listed here are read (docs/argocd.md): nothing else of the sidecar's
//! environment reaches rendering, so a secret in the sidecar's environment cannot end up in a
//! manifest, and the output is a function of (repository, these variables) alone, which is what
//! Argo CD's manifest cache assumes.

use std::collections::BTreeMap;

use serde_json::Value;

/// A parameter as Argo CD sends it in `ARGOCD_APP_PARAMETERS`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamValue {
    /// `{"name": …, "string": …}`
    String(String),
    /// `{"name": …, "array": […]}`
    Array(Vec<String>),
    /// `{"name": …, "map": {…}}`
    Map(BTreeMap<String, String>),
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Param {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: ParamValue,
}

/// The variables kiln reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Env {
    /// `ARGOCD_APP_NAME`.
    pub app_name: Option<String>,
    /// `ARGOCD_APP_NAMESPACE`: the destination namespace.
    pub app_namespace: Option<String>,
    /// `ARGOCD_APP_REVISION`.
    pub revision: Option<String>,
    /// `ARGOCD_APP_SOURCE_PATH`: the application's path in the repository.
    pub source_path: Option<String>,
    /// `ARGOCD_APP_SOURCE_REPO_URL`.
    pub repo_url: Option<String>,
    /// `ARGOCD_APP_SOURCE_TARGET_REVISION`.
    pub target_revision: Option<String>,
    /// `KUBE_VERSION`.
    pub kube_version: Option<String>,
    /// `KUBE_API_VERSIONS`, split at commas.
    pub kube_api_versions: Vec<String>,
    /// `ARGOCD_APP_PARAMETERS`, parsed (`null` or absent: none).
    pub parameters: Vec<Param>,
    /// The plugin env entries kiln documents, by their name without `ARGOCD_ENV_` (the
    /// prefixed variable wins over an unprefixed one of the same name).
    pub plugin_env: BTreeMap<String, String>,
}

/// The plugin env names kiln reads (as `ARGOCD_ENV_NAME`, or `NAME` set on the sidecar).
pub const PLUGIN_ENV: &[&str] = &[
    "ENVIRONMENT",
    "VALUES",
    "STRICT",
    "ALLOW_EMPTY",
    "PASS_THROUGH",
];

/// A variable that could not be read, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvError {
    /// The variable.
    pub variable: String,
    /// What is wrong.
    pub message: String,
}

impl Env {
    /// Read the documented variables from `vars` (the process environment, or a test's).
    pub fn read<I>(vars: I) -> Result<Self, EnvError>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let vars: BTreeMap<String, String> = vars.into_iter().collect();
        // Argo CD v2 drops variables with empty values; v3 passes them: read both alike.
        let get = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
        let mut plugin_env = BTreeMap::new();
        for name in PLUGIN_ENV {
            if let Some(v) = get(&format!("ARGOCD_ENV_{name}")).or_else(|| get(name)) {
                plugin_env.insert((*name).to_string(), v);
            }
        }
        Ok(Env {
            app_name: get("ARGOCD_APP_NAME"),
            app_namespace: get("ARGOCD_APP_NAMESPACE"),
            revision: get("ARGOCD_APP_REVISION"),
            source_path: get("ARGOCD_APP_SOURCE_PATH"),
            repo_url: get("ARGOCD_APP_SOURCE_REPO_URL"),
            target_revision: get("ARGOCD_APP_SOURCE_TARGET_REVISION"),
            kube_version: get("KUBE_VERSION"),
            kube_api_versions: get("KUBE_API_VERSIONS")
                .map(|s| {
                    s.split(',')
                        .map(str::trim)
                        .filter(|x| !x.is_empty())
                        .map(String::from)
                        .collect()
                })
                .unwrap_or_default(),
            parameters: match get("ARGOCD_APP_PARAMETERS") {
                None => Vec::new(),
                Some(text) => parse_parameters(&text).map_err(|message| EnvError {
                    variable: "ARGOCD_APP_PARAMETERS".into(),
                    message,
                })?,
            },
            plugin_env,
        })
    }
}

/// Parse `ARGOCD_APP_PARAMETERS`: a JSON array of `{name, string | array | map}`, or `null`.
pub fn parse_parameters(text: &str) -> Result<Vec<Param>, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
    let items = match v {
        Value::Null => return Ok(Vec::new()),
        Value::Array(a) => a,
        _ => return Err("must be a JSON array of parameters, or null".into()),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Some(m) = item.as_object() else {
            return Err(format!("item {i} is not an object"));
        };
        let Some(name) = m.get("name").and_then(Value::as_str) else {
            return Err(format!("item {i} has no string name"));
        };
        let strings = |v: &Value, what: &str| -> Result<Vec<String>, String> {
            v.as_array()
                .ok_or_else(|| format!("parameter {name:?}: {what} must be an array of strings"))?
                .iter()
                .map(|x| {
                    x.as_str()
                        .map(String::from)
                        .ok_or_else(|| format!("parameter {name:?}: {what} must hold strings only"))
                })
                .collect()
        };
        let value = if let Some(s) = m.get("string") {
            ParamValue::String(
                s.as_str()
                    .ok_or_else(|| format!("parameter {name:?}: string must be a string"))?
                    .to_string(),
            )
        } else if let Some(a) = m.get("array") {
            ParamValue::Array(strings(a, "array")?)
        } else if let Some(mp) = m.get("map") {
            let Some(obj) = mp.as_object() else {
                return Err(format!(
                    "parameter {name:?}: map must be an object of strings"
                ));
            };
            let mut map = BTreeMap::new();
            for (k, v) in obj {
                let s = v
                    .as_str()
                    .ok_or_else(|| format!("parameter {name:?}: map values must be strings"))?;
                map.insert(k.clone(), s.to_string());
            }
            ParamValue::Map(map)
        } else {
            // A parameter announced but left unset carries only its name.
            continue;
        };
        out.push(Param {
            name: name.to_string(),
            value,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn parameters_of_every_shape_and_null() {
        let p = parse_parameters(
            r#"[{"name":"environment","string":"prod"},{"name":"values","array":["a.yaml","b.yaml"]},{"name":"set","map":{"app.replicas":"3"}},{"name":"unset"}]"#,
        )
        .unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p[0].value, ParamValue::String("prod".into()));
        assert_eq!(
            p[1].value,
            ParamValue::Array(vec!["a.yaml".into(), "b.yaml".into()])
        );
        assert_eq!(
            p[2].value,
            ParamValue::Map([("app.replicas".to_string(), "3".to_string())].into())
        );
        assert!(parse_parameters("null").unwrap().is_empty());
        assert!(parse_parameters("[]").unwrap().is_empty());
        for bad in [
            "{",
            "{}",
            "[1]",
            r#"[{"name":"x","array":[1]}]"#,
            r#"[{"string":"x"}]"#,
        ] {
            assert!(parse_parameters(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn only_documented_variables_are_read() {
        let e = Env::read(vars(&[
            ("ARGOCD_APP_NAME", "shop"),
            ("ARGOCD_APP_NAMESPACE", ""),
            ("ARGOCD_ENV_ENVIRONMENT", "prod"),
            ("ENVIRONMENT", "dev"),
            ("STRICT", "true"),
            ("ARGOCD_ENV_SECRET_TOKEN", "hunter2"),
            ("KUBE_API_VERSIONS", "v1,apps/v1, cert-manager.io/v1"),
        ]))
        .unwrap();
        assert_eq!(e.app_name.as_deref(), Some("shop"));
        assert_eq!(e.app_namespace, None, "empty is unset");
        assert_eq!(e.plugin_env["ENVIRONMENT"], "prod", "the prefixed one wins");
        assert_eq!(e.plugin_env["STRICT"], "true", "unprefixed fallback");
        assert!(!e.plugin_env.contains_key("SECRET_TOKEN"));
        assert_eq!(e.kube_api_versions, ["v1", "apps/v1", "cert-manager.io/v1"]);
        let bad = Env::read(vars(&[("ARGOCD_APP_PARAMETERS", "{oops")])).unwrap_err();
        assert_eq!(bad.variable, "ARGOCD_APP_PARAMETERS");
    }
}
