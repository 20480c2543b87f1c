//! The environment Argo CD gives a plugin command, read into plain data.
//!
//! Only the variables listed here are read (docs/argocd.md): nothing else of the sidecar's
//! environment reaches rendering, so a secret in the sidecar's environment cannot end up in a
//! manifest, and the output is a function of (repository, these variables) alone, which is what
//! Argo CD's manifest cache assumes.

use std::collections::BTreeMap;

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::suggest;
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
    /// The sidecar's settings for applications with a kustomization ([`Sidecar`]).
    pub sidecar: Sidecar,
}

/// Settings of the sidecar itself, for applications whose directory holds a kustomization: set
/// on the sidecar container only (unprefixed names; an Application cannot set them, and an
/// `ARGOCD_ENV_KILN_…` is an unknown plugin env).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sidecar {
    /// `KILN_KUSTOMIZE`: the program that builds (`kustomize`, or `kubectl`, run as
    /// `kubectl kustomize`); unset: `kustomize`, else `kubectl`, found on `PATH`.
    pub kustomize: Option<String>,
    /// `KILN_KUSTOMIZE_BUILD_OPTIONS`: options added to every build, split at whitespace, as Argo
    /// CD's `kustomize.buildOptions` in `argocd-cm`.
    pub build_options: Vec<String>,
    /// `KILN_ALLOW_REMOTE_BASES=true`: let kustomizations name remote bases and files (refused
    /// otherwise: the trust boundary is the checkout).
    pub allow_remote_bases: bool,
    /// `KILN_KUSTOMIZE_TIMEOUT`: how long a build may run (unset: a minute, below Argo CD's own
    /// 90 s, so that kiln's diagnostic reaches Argo CD first).
    pub kustomize_timeout: Option<std::time::Duration>,
}

/// The names of the sidecar's settings ([`Sidecar`]).
pub const SIDECAR_NAMES: &[&str] = &[
    "KILN_KUSTOMIZE",
    "KILN_KUSTOMIZE_BUILD_OPTIONS",
    "KILN_ALLOW_REMOTE_BASES",
    kiln_core::kustomize_build::TIMEOUT_VARIABLE,
];

/// The plugin env names kiln reads (as `ARGOCD_ENV_NAME`, or `NAME` set on the sidecar): the
/// ones of [`crate::options::OPTIONS`].
pub fn plugin_env_names() -> impl Iterator<Item = &'static str> {
    crate::options::OPTIONS.iter().filter_map(|o| o.env)
}

/// Argo CD's prefix for the Application's plugin env (reposerver/repository/repository.go,
/// `getPluginParamEnvs`: `ARGOCD_ENV_<name>` for each `spec.source.plugin.env` entry, the name
/// exactly as written).
pub const PLUGIN_ENV_PREFIX: &str = "ARGOCD_ENV_";

impl Env {
    /// Read the documented variables from `vars` (the process environment, or a test's). Argo
    /// CD passes exactly the plugin env names the Application writes, so an `ARGOCD_ENV_*` name
    /// kiln does not read is the user's typo: an error, with the name meant.
    pub fn read<I>(vars: I) -> Result<Self, Vec<Diagnostic>>
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let (env, errs) = Self::read_all(vars);
        if errs.is_empty() {
            Ok(env)
        } else {
            Err(errs)
        }
    }

    /// [`Env::read`] that also returns what could be read when there are errors (a variable
    /// that cannot be read is left out).
    pub fn read_all<I>(vars: I) -> (Self, Vec<Diagnostic>)
    where
        I: IntoIterator<Item = (String, String)>,
    {
        let vars: BTreeMap<String, String> = vars.into_iter().collect();
        // Argo CD v2 drops variables with empty values; v3 passes them: read both alike.
        let get = |k: &str| vars.get(k).filter(|v| !v.is_empty()).cloned();
        let mut plugin_env = BTreeMap::new();
        for name in plugin_env_names() {
            if let Some(v) = get(&format!("{PLUGIN_ENV_PREFIX}{name}")).or_else(|| get(name)) {
                plugin_env.insert(name.to_string(), v);
            }
        }
        let mut errs: Vec<Diagnostic> = vars
            .keys()
            .filter_map(|k| k.strip_prefix(PLUGIN_ENV_PREFIX))
            .filter(|n| !plugin_env_names().any(|k| k == *n))
            .map(unknown_plugin_env)
            .collect();
        let env = Env {
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
                Some(text) => match parse_parameters(&text) {
                    Ok(p) => p,
                    Err(message) => {
                        errs.push(
                            Diagnostic::error(codes::REQUEST_INVALID, message)
                                .in_file("ARGOCD_APP_PARAMETERS")
                                .with_hint("Argo CD writes spec.source.plugin.parameters here as a JSON array"),
                        );
                        Vec::new()
                    }
                },
            },
            plugin_env,
            sidecar: Sidecar {
                kustomize: get("KILN_KUSTOMIZE"),
                build_options: get("KILN_KUSTOMIZE_BUILD_OPTIONS")
                    .map(|s| s.split_whitespace().map(String::from).collect())
                    .unwrap_or_default(),
                allow_remote_bases: match get("KILN_ALLOW_REMOTE_BASES").as_deref() {
                    None | Some("false") => false,
                    Some("true") => true,
                    Some(other) => {
                        errs.push(
                            Diagnostic::error(
                                codes::REQUEST_INVALID,
                                format!(
                                    "KILN_ALLOW_REMOTE_BASES is {}, not true or false",
                                    kiln_core::diag::quote(other)
                                ),
                            )
                            .in_file("KILN_ALLOW_REMOTE_BASES")
                            .with_hint("set it on the kiln sidecar container to true or false"),
                        );
                        false
                    }
                },
                kustomize_timeout: get(kiln_core::kustomize_build::TIMEOUT_VARIABLE).and_then(
                    |v| match kiln_core::kustomize_build::parse_timeout(&v) {
                        Ok(t) => Some(t),
                        Err(e) => {
                            errs.push(
                                Diagnostic::error(
                                    codes::REQUEST_INVALID,
                                    format!("{e}: it is {}", kiln_core::diag::quote(&v)),
                                )
                                .in_file(kiln_core::kustomize_build::TIMEOUT_VARIABLE)
                                .with_hint("set it on the kiln sidecar container to the seconds a kustomize build may take"),
                            );
                            None
                        }
                    },
                ),
            },
        };
        (env, errs)
    }
}

fn unknown_plugin_env(name: &str) -> Diagnostic {
    let known: Vec<&str> = plugin_env_names().collect();
    let hint = match suggest::nearest(name, known.iter().copied()) {
        Some(k) if k.eq_ignore_ascii_case(name) => format!(
            "{} (plugin env names are case-sensitive)",
            suggest::did_you_mean(k)
        ),
        Some(k) => suggest::did_you_mean(k),
        None => format!("kiln-cmp reads the plugin env {}", known.join(", ")),
    };
    Diagnostic::error(
        codes::REQUEST_INVALID,
        format!("unknown plugin env {}", kiln_core::diag::quote(name)),
    )
    .in_file("spec.source.plugin.env")
    .with_hint(hint)
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
                .ok_or_else(|| {
                    format!(
                        "parameter {}: {what} must be an array of strings",
                        kiln_core::diag::quote(name)
                    )
                })?
                .iter()
                .map(|x| {
                    x.as_str().map(String::from).ok_or_else(|| {
                        format!(
                            "parameter {}: {what} must hold strings only",
                            kiln_core::diag::quote(name)
                        )
                    })
                })
                .collect()
        };
        let value = if let Some(s) = m.get("string") {
            ParamValue::String(
                s.as_str()
                    .ok_or_else(|| {
                        format!(
                            "parameter {}: string must be a string",
                            kiln_core::diag::quote(name)
                        )
                    })?
                    .to_string(),
            )
        } else if let Some(a) = m.get("array") {
            ParamValue::Array(strings(a, "array")?)
        } else if let Some(mp) = m.get("map") {
            let Some(obj) = mp.as_object() else {
                return Err(format!(
                    "parameter {}: map must be an object of strings",
                    kiln_core::diag::quote(name)
                ));
            };
            let mut map = BTreeMap::new();
            for (k, v) in obj {
                let s = v.as_str().ok_or_else(|| {
                    format!(
                        "parameter {}: map values must be strings",
                        kiln_core::diag::quote(name)
                    )
                })?;
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
        for (bad, why) in [
            ("{", "not JSON"),
            ("{}", "must be a JSON array of parameters, or null"),
            ("[1]", "item 0 is not an object"),
            (
                r#"[{"name":"x","array":[1]}]"#,
                "array must hold strings only",
            ),
            (r#"[{"string":"x"}]"#, "item 0 has no string name"),
        ] {
            let refused = parse_parameters(bad).expect_err("an error");
            assert!(refused.contains(why), "{bad}: {refused}");
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
            ("SECRET_TOKEN", "hunter2"),
            ("KUBE_API_VERSIONS", "v1,apps/v1, cert-manager.io/v1"),
        ]))
        .unwrap();
        assert_eq!(e.app_name.as_deref(), Some("shop"));
        assert_eq!(e.app_namespace, None, "empty is unset");
        assert_eq!(e.plugin_env["ENVIRONMENT"], "prod", "the prefixed one wins");
        assert_eq!(e.plugin_env["STRICT"], "true", "unprefixed fallback");
        assert!(!e.plugin_env.contains_key("SECRET_TOKEN"));
        assert_eq!(e.plugin_env.len(), 2);
        assert_eq!(e.kube_api_versions, ["v1", "apps/v1", "cert-manager.io/v1"]);
        let bad = Env::read(vars(&[("ARGOCD_APP_PARAMETERS", "{oops")])).unwrap_err();
        assert_eq!(bad[0].file.as_deref(), Some("ARGOCD_APP_PARAMETERS"));
    }

    #[test]
    fn an_unknown_plugin_env_name_is_a_typo_with_the_name_meant() {
        let errs = Env::read(vars(&[
            ("ARGOCD_ENV_ENVIRONMNT", "prod"),
            ("ARGOCD_ENV_environment", "prod"),
            ("ARGOCD_ENV_SECRET_TOKEN", ""),
            ("ARGOCD_ENV_STRICT", "true"),
        ]))
        .unwrap_err();
        let hints: Vec<&str> = errs.iter().map(|d| d.hint.as_deref().unwrap()).collect();
        assert_eq!(errs.len(), 3, "{errs:?}");
        assert_eq!(hints[0], "did you mean \"ENVIRONMENT\"?");
        assert!(
            hints[1].starts_with("kiln-cmp reads the plugin env ENVIRONMENT, VALUES"),
            "{}",
            hints[1]
        );
        assert_eq!(
            hints[2],
            "did you mean \"ENVIRONMENT\"? (plugin env names are case-sensitive)"
        );
        assert!(errs[2].message.contains("\"environment\""));
    }
}
