//! What a run is asked to do: the Application's parameters over its plugin env, over the
//! defaults, which are the ones [`crate::parameters`] announces (Argo CD does not send announced
//! defaults: "it is up to the plugin to apply the same defaults").

use kiln_core::diag::{codes, Diagnostic};
use kiln_core::suggest;

use crate::env::{Env, ParamValue};

/// The options of a run.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The environment components are rendered for (`environment` / `ENVIRONMENT`).
    pub environment: Option<String>,
    /// kurel values files, relative to the application directory (`values` / `VALUES`).
    pub values: Vec<String>,
    /// kurel `path=value` overrides (`set`).
    pub sets: Vec<String>,
    /// Warnings fail the run (`strict` / `STRICT`); default false.
    pub strict: bool,
    /// An empty result is printed instead of refused (`allowEmpty` / `ALLOW_EMPTY`); default false.
    pub allow_empty: bool,
    /// Groups whose unknown kinds pass through (`passThrough` / `PASS_THROUGH`).
    pub pass_through: Vec<String>,
    /// Ship kro definitions to the controller (`mode` / `MODE`: `kro`); default `direct`.
    pub kro_mode: bool,
    /// kro mode: also emit the generated instance CRDs (`emitCRDs` / `EMIT_CRDS`).
    pub emit_crds: bool,
    /// kro mode: sync waves on CRDs and RGDs (`syncWaves` / `SYNC_WAVES`).
    pub sync_waves: bool,
    /// Live objects, relative to the application directory (`observed` / `OBSERVED`).
    pub observed: Vec<String>,
    /// Leave out the provenance annotations (`noProvenance` / `NO_PROVENANCE`).
    pub no_provenance: bool,
}

/// The parameters kiln takes, with their shape.
pub const PARAMETERS: &[(&str, &str)] = &[
    ("environment", "string"),
    ("values", "array"),
    ("set", "map"),
    ("strict", "string"),
    ("allowEmpty", "string"),
    ("passThrough", "array"),
    ("mode", "string"),
    ("emitCRDs", "string"),
    ("syncWaves", "string"),
    ("observed", "array"),
    ("noProvenance", "string"),
];

fn mode(name: &str, s: &str, errs: &mut Vec<Diagnostic>) -> bool {
    match s.trim() {
        "kro" => true,
        "direct" | "" => false,
        other => {
            errs.push(error(
                format!("{name} is {other:?}; it must be \"direct\" or \"kro\""),
                "direct renders every object here; kro ships the RGDs and instances to the controller",
            ));
            false
        }
    }
}

fn error(message: String, hint: &str) -> Diagnostic {
    Diagnostic::error(codes::REQUEST_INVALID, message)
        .in_file("ARGOCD_APP_PARAMETERS")
        .with_hint(hint)
}

fn boolean(name: &str, s: &str, errs: &mut Vec<Diagnostic>) -> bool {
    match s.trim() {
        "true" => true,
        "false" | "" => false,
        other => {
            errs.push(error(
                format!("{name} is {other:?}; it must be \"true\" or \"false\""),
                "write true or false",
            ));
            false
        }
    }
}

fn article(shape: &str) -> String {
    match shape {
        "array" => "an array".into(),
        other => format!("a {other}"),
    }
}

fn list(s: &str) -> Vec<String> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(String::from)
        .collect()
}

/// The options of `env`: every problem at once.
pub fn from_env(env: &Env) -> Result<Options, Vec<Diagnostic>> {
    let mut o = Options::default();
    let mut errs = Vec::new();
    // The plugin env first; parameters override it.
    let pe = &env.plugin_env;
    o.environment = pe.get("ENVIRONMENT").cloned();
    if let Some(v) = pe.get("VALUES") {
        o.values = list(v);
    }
    if let Some(v) = pe.get("STRICT") {
        o.strict = boolean("STRICT", v, &mut errs);
    }
    if let Some(v) = pe.get("ALLOW_EMPTY") {
        o.allow_empty = boolean("ALLOW_EMPTY", v, &mut errs);
    }
    if let Some(v) = pe.get("PASS_THROUGH") {
        o.pass_through = list(v);
    }
    if let Some(v) = pe.get("MODE") {
        o.kro_mode = mode("MODE", v, &mut errs);
    }
    if let Some(v) = pe.get("EMIT_CRDS") {
        o.emit_crds = boolean("EMIT_CRDS", v, &mut errs);
    }
    if let Some(v) = pe.get("SYNC_WAVES") {
        o.sync_waves = boolean("SYNC_WAVES", v, &mut errs);
    }
    if let Some(v) = pe.get("OBSERVED") {
        o.observed = list(v);
    }
    if let Some(v) = pe.get("NO_PROVENANCE") {
        o.no_provenance = boolean("NO_PROVENANCE", v, &mut errs);
    }
    for p in &env.parameters {
        let shape = match &p.value {
            ParamValue::String(_) => "string",
            ParamValue::Array(_) => "array",
            ParamValue::Map(_) => "map",
        };
        match (p.name.as_str(), &p.value) {
            ("environment", ParamValue::String(s)) => {
                o.environment = Some(s.clone()).filter(|s| !s.is_empty())
            }
            ("values", ParamValue::Array(a)) => o.values = a.clone(),
            ("set", ParamValue::Map(m)) => {
                o.sets = m.iter().map(|(k, v)| format!("{k}={v}")).collect()
            }
            ("strict", ParamValue::String(s)) => o.strict = boolean("strict", s, &mut errs),
            ("allowEmpty", ParamValue::String(s)) => {
                o.allow_empty = boolean("allowEmpty", s, &mut errs)
            }
            ("passThrough", ParamValue::Array(a)) => o.pass_through = a.clone(),
            ("mode", ParamValue::String(s)) => o.kro_mode = mode("mode", s, &mut errs),
            ("emitCRDs", ParamValue::String(s)) => o.emit_crds = boolean("emitCRDs", s, &mut errs),
            ("syncWaves", ParamValue::String(s)) => {
                o.sync_waves = boolean("syncWaves", s, &mut errs)
            }
            ("observed", ParamValue::Array(a)) => o.observed = a.clone(),
            ("noProvenance", ParamValue::String(s)) => {
                o.no_provenance = boolean("noProvenance", s, &mut errs)
            }
            (name, _) => match PARAMETERS.iter().find(|(n, _)| *n == name) {
                Some((_, want)) => errs.push(error(
                    format!(
                        "parameter {name:?} is given as {}; kiln takes it as {}",
                        article(shape),
                        article(want)
                    ),
                    "see the parameters kiln-cmp announces (kiln-cmp parameters)",
                )),
                // A misspelt parameter would silently do nothing.
                None => errs.push(error(
                    format!("unknown parameter {name:?}"),
                    &match suggest::nearest(name, PARAMETERS.iter().map(|(n, _)| *n)) {
                        Some(n) => suggest::did_you_mean(n),
                        None => format!(
                            "kiln takes {}",
                            PARAMETERS
                                .iter()
                                .map(|(n, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    },
                )),
            },
        }
    }
    if errs.is_empty() {
        Ok(o)
    } else {
        Err(errs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::parse_parameters;

    fn env(params: &str, plugin: &[(&str, &str)]) -> Env {
        Env {
            parameters: parse_parameters(params).unwrap(),
            plugin_env: plugin
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..Env::default()
        }
    }

    #[test]
    fn a_parameter_wins_over_the_plugin_env() {
        let o = from_env(&env(
            r#"[{"name":"environment","string":"production"},{"name":"set","map":{"b":"2","a":"1"}}]"#,
            &[("ENVIRONMENT", "development"), ("VALUES", "v/a.yaml, v/b.yaml"), ("STRICT", "true")],
        ))
        .unwrap();
        assert_eq!(o.environment.as_deref(), Some("production"));
        assert_eq!(o.values, ["v/a.yaml", "v/b.yaml"]);
        assert_eq!(o.sets, ["a=1", "b=2"]);
        assert!(o.strict && !o.allow_empty);
        assert_eq!(from_env(&env("null", &[])).unwrap(), Options::default());
    }

    #[test]
    fn strategy_parameters() {
        let o = from_env(&env(
            r#"[{"name":"mode","string":"kro"},{"name":"syncWaves","string":"true"},{"name":"observed","array":["live"]}]"#,
            &[("EMIT_CRDS", "true"), ("NO_PROVENANCE", "true")],
        ))
        .unwrap();
        assert!(o.kro_mode && o.sync_waves && o.emit_crds && o.no_provenance);
        assert_eq!(o.observed, ["live"]);
        let errs = from_env(&env(r#"[{"name":"mode","string":"helm"}]"#, &[])).unwrap_err();
        assert!(
            errs[0].message.contains("\"direct\" or \"kro\""),
            "{errs:?}"
        );
    }

    #[test]
    fn unknown_and_misshapen_parameters_are_errors() {
        let errs = from_env(&env(
            r#"[{"name":"enviroment","string":"prod"},{"name":"values","string":"a.yaml"},{"name":"strict","string":"yes"}]"#,
            &[],
        ))
        .unwrap_err();
        assert_eq!(errs.len(), 3);
        assert_eq!(
            errs[0].hint.as_deref(),
            Some("did you mean \"environment\"?")
        );
        assert!(errs[1]
            .message
            .contains("given as a string; kiln takes it as an array"));
        assert!(errs[2].message.contains("\"yes\""));
    }
}
