//! What a run is asked to do: the Application's parameters over its plugin env, over the
//! defaults, which are the ones [`crate::parameters`] announces (Argo CD does not send announced
//! defaults: "it is up to the plugin to apply the same defaults").
//!
//! [`OPTIONS`] is the one list of kiln-cmp's options: the plugin env names read ([`crate::env`]),
//! the parameters taken and announced ([`crate::parameters`]), the static list of
//! `deploy/argocd/plugin.yaml` and `helm-values.yaml` and the options table of docs/argocd.md all
//! come from it ([`crate::kit`]; a test checks the committed files against it).

use kiln_core::diag::{codes, quote, Diagnostic};
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

/// How an option's value is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text (a parameter's `string`; the plugin env value).
    Text,
    /// A list (a parameter's `array`; the plugin env value split at commas).
    List,
    /// `path: value` pairs (a parameter's `map`; no plugin env).
    Map,
    /// `"true"` or `"false"`; default false.
    Bool,
    /// One of these words; the first is the default.
    Choice(&'static [&'static str]),
}

impl Kind {
    /// Argo CD's `collectionType`: the parameter's shape.
    pub fn collection(self) -> &'static str {
        match self {
            Kind::Text | Kind::Bool | Kind::Choice(_) => "string",
            Kind::List => "array",
            Kind::Map => "map",
        }
    }

    /// Argo CD's `itemType`: how the UI presents the value.
    pub fn item_type(self) -> &'static str {
        match self {
            Kind::Bool => "boolean",
            _ => "string",
        }
    }

    /// The default applied (and announced) for a `string` option, if any.
    pub fn default_text(self) -> Option<&'static str> {
        match self {
            Kind::Bool => Some("false"),
            Kind::Choice(words) => words.first().copied(),
            _ => None,
        }
    }
}

/// One option of kiln-cmp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opt {
    /// The parameter name (`spec.source.plugin.parameters[].name`).
    pub param: &'static str,
    /// The plugin env name (`spec.source.plugin.env[].name`, read as `ARGOCD_ENV_NAME`), if any.
    pub env: Option<&'static str>,
    /// The `kiln` command-line flag it stands for (hints written for the CLI are reworded).
    pub flag: &'static str,
    /// How its value is written.
    pub kind: Kind,
    /// The title the UI shows.
    pub title: &'static str,
    /// The tooltip the UI shows (the announcement may make it specific to the directory).
    pub tooltip: &'static str,
    /// What it does, for docs/argocd.md (Markdown).
    pub doc: &'static str,
}

/// Every option kiln-cmp takes, in the order announced and documented.
pub const OPTIONS: &[Opt] = &[
    Opt {
        param: "environment",
        env: Some("ENVIRONMENT"),
        flag: "--env",
        kind: Kind::Text,
        title: "Environment",
        tooltip: "Environment component releases are rendered for.",
        doc: "environment component releases are rendered for; an environment nothing mentions, or one given for a directory without components, is an error",
    },
    Opt {
        param: "values",
        env: Some("VALUES"),
        flag: "--values",
        kind: Kind::List,
        title: "Values files",
        tooltip: "kurel values files, relative to the application directory, in order.",
        doc: "kurel values files, relative to the application directory; they may not leave the repository checkout (`../shared/prod.yaml` is fine, `../../../etc/passwd` is KLN1002)",
    },
    Opt {
        param: "set",
        env: None,
        flag: "--set",
        kind: Kind::Map,
        title: "Set",
        tooltip: "kurel parameter overrides, path: value, after the values files.",
        doc: "kurel `path: value` overrides",
    },
    Opt {
        param: "strict",
        env: Some("STRICT"),
        flag: "--strict",
        kind: Kind::Bool,
        title: "Strict",
        tooltip: "true: warnings fail the render.",
        doc: "warnings fail the render",
    },
    Opt {
        param: "allowEmpty",
        env: Some("ALLOW_EMPTY"),
        flag: "--allow-empty",
        kind: Kind::Bool,
        title: "Allow empty",
        tooltip: "true: an application that renders no objects is accepted (with auto-prune, that deletes its resources).",
        doc: "accept an application that renders no objects",
    },
    Opt {
        param: "passThrough",
        env: Some("PASS_THROUGH"),
        flag: "--pass-through",
        kind: Kind::List,
        title: "Pass-through groups",
        tooltip: "API groups whose custom resources pass through unrendered (* for all); the cluster's own groups (KUBE_API_VERSIONS) always do.",
        doc: "API groups whose custom resources pass through unrendered (`*`: all)",
    },
    Opt {
        param: "mode",
        env: Some("MODE"),
        flag: "--mode",
        kind: Kind::Choice(&["direct", "kro"]),
        title: "kro mode",
        tooltip: "direct: render every object here. kro: check everything the same way, then ship the ResourceGraphDefinitions and defaulted instances to the kro controller.",
        doc: "kro: check everything, then ship the RGDs and defaulted instances to the kro controller (docs/strategies.md)",
    },
    Opt {
        param: "emitCRDs",
        env: Some("EMIT_CRDS"),
        flag: "--emit-crds",
        kind: Kind::Bool,
        title: "Emit instance CRDs",
        tooltip: "kro mode, true: also emit each RGD's generated instance CRD, first.",
        doc: "kro mode: also emit each RGD's generated instance CRD, first",
    },
    Opt {
        param: "syncWaves",
        env: Some("SYNC_WAVES"),
        flag: "--sync-waves",
        kind: Kind::Bool,
        title: "Sync waves",
        tooltip: "kro mode, true: sync waves on CRDs (-2) and RGDs (-1), and SkipDryRunOnMissingResource on instances whose CRD kro creates.",
        doc: "kro mode: sync waves -2 on CRDs, -1 on RGDs; `SkipDryRunOnMissingResource=true` on instances whose CRD kro creates",
    },
    Opt {
        param: "observed",
        env: Some("OBSERVED"),
        flag: "--observed",
        kind: Kind::List,
        title: "Observed state",
        tooltip: "Files or directories of live objects (kubectl get -o yaml output), relative to the application directory: externalRefs and status reads resolve against them.",
        doc: "live objects (files or directories, relative to the application directory, inside the checkout) that externalRefs and status reads resolve against",
    },
    Opt {
        param: "noProvenance",
        env: Some("NO_PROVENANCE"),
        flag: "--no-provenance",
        kind: Kind::Bool,
        title: "No provenance",
        tooltip: "true: leave out the kiln.dev/definition, kiln.dev/instance and kiln.dev/node annotations.",
        doc: "leave out the `kiln.dev/*` provenance annotations",
    },
];

/// The option named `param`.
pub fn option(param: &str) -> Option<&'static Opt> {
    OPTIONS.iter().find(|o| o.param == param)
}

/// A value read for an option.
enum Read {
    Text(Option<String>),
    List(Vec<String>),
    Map(Vec<String>),
    Bool(bool),
    Choice(&'static str),
}

fn error(message: String, hint: &str) -> Diagnostic {
    Diagnostic::error(codes::REQUEST_INVALID, message)
        .in_file("ARGOCD_APP_PARAMETERS")
        .with_hint(hint)
}

/// Read the text `s` of option `o` (a parameter's `string`, or a plugin env value); `name` is
/// how the user wrote the option. `None` when it is invalid (the error is added to `errs`).
fn read_text(o: &Opt, name: &str, s: &str, file: &str, errs: &mut Vec<Diagnostic>) -> Option<Read> {
    match o.kind {
        Kind::Text => Some(Read::Text(Some(s.to_string()).filter(|s| !s.is_empty()))),
        Kind::List => Some(Read::List(list(s))),
        Kind::Map => None,
        Kind::Bool => match s.trim() {
            "true" => Some(Read::Bool(true)),
            "false" | "" => Some(Read::Bool(false)),
            other => {
                errs.push(
                    error(
                        format!(
                            "{name} is {}; it must be \"true\" or \"false\"",
                            quote(other)
                        ),
                        "write true or false",
                    )
                    .in_file(file),
                );
                None
            }
        },
        Kind::Choice(words) => {
            let t = s.trim();
            if t.is_empty() {
                return words.first().map(|w| Read::Choice(w));
            }
            match words.iter().find(|w| **w == t) {
                Some(w) => Some(Read::Choice(w)),
                None => {
                    let one_of = words
                        .iter()
                        .map(|w| format!("{w:?}"))
                        .collect::<Vec<_>>()
                        .join(" or ");
                    errs.push(
                        error(
                            format!("{name} is {}; it must be {one_of}", quote(t)),
                            &match suggest::nearest(t, words.iter().copied()) {
                                Some(w) => suggest::did_you_mean(w),
                                None => format!("write {one_of}"),
                            },
                        )
                        .in_file(file),
                    );
                    None
                }
            }
        }
    }
}

fn apply(o: &mut Options, param: &str, read: Read) {
    match (param, read) {
        ("environment", Read::Text(s)) => o.environment = s,
        ("values", Read::List(l)) => o.values = l,
        ("set", Read::Map(m)) => o.sets = m,
        ("strict", Read::Bool(b)) => o.strict = b,
        ("allowEmpty", Read::Bool(b)) => o.allow_empty = b,
        ("passThrough", Read::List(l)) => o.pass_through = l,
        ("mode", Read::Choice(c)) => o.kro_mode = c == "kro",
        ("emitCRDs", Read::Bool(b)) => o.emit_crds = b,
        ("syncWaves", Read::Bool(b)) => o.sync_waves = b,
        ("observed", Read::List(l)) => o.observed = l,
        ("noProvenance", Read::Bool(b)) => o.no_provenance = b,
        // Every option of OPTIONS has its arm (tests::every_option_takes_effect).
        _ => {}
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
    for opt in OPTIONS {
        let Some(name) = opt.env else { continue };
        if let Some(v) = env.plugin_env.get(name) {
            let file = format!("ARGOCD_ENV_{name}");
            if let Some(read) = read_text(opt, name, v, &file, &mut errs) {
                apply(&mut o, opt.param, read);
            }
        }
    }
    for p in &env.parameters {
        let shape = match &p.value {
            ParamValue::String(_) => "string",
            ParamValue::Array(_) => "array",
            ParamValue::Map(_) => "map",
        };
        let Some(opt) = option(&p.name) else {
            // A misspelt parameter would silently do nothing.
            errs.push(error(
                format!("unknown parameter {}", quote(&p.name)),
                &match suggest::nearest(&p.name, OPTIONS.iter().map(|o| o.param)) {
                    Some(n) => suggest::did_you_mean(n),
                    None => format!(
                        "kiln takes {}",
                        OPTIONS
                            .iter()
                            .map(|o| o.param)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                },
            ));
            continue;
        };
        let read = match (&p.value, opt.kind) {
            (ParamValue::String(s), Kind::Text | Kind::Bool | Kind::Choice(_)) => {
                read_text(opt, &p.name, s, "ARGOCD_APP_PARAMETERS", &mut errs)
            }
            (ParamValue::Array(a), Kind::List) => Some(Read::List(a.clone())),
            (ParamValue::Map(m), Kind::Map) => Some(Read::Map(
                m.iter().map(|(k, v)| format!("{k}={v}")).collect(),
            )),
            _ => {
                errs.push(error(
                    format!(
                        "parameter {:?} is given as {}; kiln takes it as {}",
                        opt.param,
                        article(shape),
                        article(opt.kind.collection())
                    ),
                    "see the parameters kiln-cmp announces (kiln-cmp parameters)",
                ));
                None
            }
        };
        if let Some(read) = read {
            apply(&mut o, opt.param, read);
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

    /// Every option, as a parameter and as plugin env, changes the options: none is listed but
    /// ignored (the fault of the door before the table: MODE and four others were documented
    /// plugin env names that did nothing).
    #[test]
    fn every_option_takes_effect_as_parameter_and_as_plugin_env() {
        for o in OPTIONS {
            let (param, text) = match o.kind {
                Kind::Text => (json_param(o.param, r#""string":"x""#), "x"),
                Kind::List => (json_param(o.param, r#""array":["x"]"#), "x"),
                Kind::Map => (json_param(o.param, r#""map":{"x":"1"}"#), ""),
                Kind::Bool => (json_param(o.param, r#""string":"true""#), "true"),
                Kind::Choice(w) => (
                    json_param(o.param, &format!(r#""string":"{}""#, w[w.len() - 1])),
                    w[w.len() - 1],
                ),
            };
            let got = from_env(&env(&param, &[])).unwrap();
            assert_ne!(got, Options::default(), "parameter {}", o.param);
            if let Some(name) = o.env {
                let got = from_env(&env("null", &[(name, text)])).unwrap();
                assert_ne!(got, Options::default(), "plugin env {name}");
            }
            // The default is what nothing given means.
            if let Some(d) = o.kind.default_text() {
                let got = from_env(&env(
                    &json_param(o.param, &format!(r#""string":"{d}""#)),
                    &[],
                ));
                assert_eq!(got.unwrap(), Options::default(), "{}", o.param);
            }
        }
    }

    fn json_param(name: &str, value: &str) -> String {
        format!(r#"[{{"name":"{name}",{value}}}]"#)
    }

    #[test]
    fn an_invalid_plugin_env_value_is_an_error_naming_the_variable() {
        let errs = from_env(&env("null", &[("MODE", "bogus"), ("STRICT", "yes")])).unwrap_err();
        assert_eq!(errs.len(), 2, "{errs:?}");
        assert_eq!(errs[0].file.as_deref(), Some("ARGOCD_ENV_STRICT"));
        assert_eq!(errs[1].file.as_deref(), Some("ARGOCD_ENV_MODE"));
        assert!(
            errs[1].message.contains("\"direct\" or \"kro\""),
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
