//! `kiln-cmp` as Argo CD's repo-server runs it (docs/argocd.md; the contract is CMP v2): a fresh
//! copy of the repository for every call, the application's path as working directory, stdin
//! closed, and only the environment Argo CD builds (`newEnv()`): the app's name, destination
//! namespace, revision, source, the cluster's version and API groups, `ARGOCD_ENV_*` from the
//! Application's plugin env, and `ARGOCD_APP_PARAMETERS` (JSON, or `null`).
//!
//! The upstream files each part follows (argoproj/argo-cd): the environment,
//! reposerver/repository/repository.go (`newEnv`, `getPluginEnvs`, `getPluginParamEnvs`); the
//! checkout, util/io/files/tar.go (`Untgz`: symlinks kept, made relative, never leaving it); the
//! commands and their output, cmpserver/plugin/plugin.go (`runCommand`, `matchRepository`,
//! `getParametersAnnouncement`); the choice of plugin, util/app/discovery/discovery.go
//! (`DetectConfigManagementPlugin`, `cmpSupports`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

#[cfg(target_os = "linux")]
use kiln_test_support::answering;
use kiln_test_support::{copy_dir, text};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/argocd/repo")
}

/// Write `files` (path relative to the checkout, text) into a checkout.
fn write_files(checkout: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let p = checkout.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

/// One call of a plugin command on a fresh checkout, as the CMP server makes it.
struct Call<'a> {
    app: &'a str,
    command: &'a str,
    parameters: Option<&'a str>,
    plugin_env: &'a [(&'a str, &'a str)],
    extra_env: &'a [(&'a str, &'a str)],
    /// Files added to the checkout before the call.
    files: &'a [(&'a str, &'a str)],
    /// Relative symlinks (path, target) added to the checkout, as Argo CD's `Untgz` makes them.
    links: &'a [(&'a str, &'a str)],
    /// The repository checked out (default: testdata/argocd/repo).
    checkout: Option<&'a Path>,
}

impl<'a> Call<'a> {
    fn generate(app: &'a str) -> Self {
        Call {
            app,
            command: "generate",
            parameters: None,
            plugin_env: &[],
            extra_env: &[],
            files: &[],
            links: &[],
            checkout: None,
        }
    }

    fn run(&self) -> Output {
        self.run_with(|c| c.output().unwrap())
    }

    /// Run the command as `run` does, but let `go` start it (and see its output).
    fn run_with<T>(&self, go: impl FnOnce(&mut Command) -> T) -> T {
        let checkout = tempfile::tempdir().unwrap();
        copy_dir(self.checkout.unwrap_or(&repo()), checkout.path());
        write_files(checkout.path(), self.files);
        for (path, target) in self.links {
            std::os::unix::fs::symlink(target, checkout.path().join(path)).unwrap();
        }
        let dir = checkout.path().join(self.app);
        let mut c = Command::new(env!("CARGO_BIN_EXE_kiln-cmp"));
        c.arg(self.command)
            .current_dir(&dir)
            .env_clear()
            .stdin(Stdio::null())
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("ARGOCD_APP_NAME", self.app.rsplit('/').next().unwrap())
            .env("ARGOCD_APP_NAMESPACE", "team-a")
            .env(
                "ARGOCD_APP_REVISION",
                "8c7c4b3a0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a",
            )
            .env("ARGOCD_APP_REVISION_SHORT", "8c7c4b3")
            .env("ARGOCD_APP_SOURCE_PATH", self.app)
            .env(
                "ARGOCD_APP_SOURCE_REPO_URL",
                "https://git.example.com/platform/gitops.git",
            )
            .env("ARGOCD_APP_SOURCE_TARGET_REVISION", "HEAD")
            .env("KUBE_VERSION", "1.37.1")
            .env(
                "KUBE_API_VERSIONS",
                "v1,apps/v1,networking.k8s.io/v1,autoscaling/v2,policy/v1,cert-manager.io/v1",
            )
            .env("ARGOCD_APP_PARAMETERS", self.parameters.unwrap_or("null"));
        for (k, v) in self.plugin_env {
            c.env(format!("ARGOCD_ENV_{k}"), v);
        }
        for (k, v) in self.extra_env {
            c.env(k, v);
        }
        go(&mut c)
    }
}

/// Stdout is only Kubernetes objects: every document a mapping with apiVersion, kind and a name.
fn objects(stdout: &str) -> Vec<(String, String)> {
    assert!(!stdout.trim().is_empty(), "empty output");
    stdout
        .split("\n---\n")
        .map(|doc| {
            let field = |k: &str| {
                doc.lines()
                    .find_map(|l| l.strip_prefix(&format!("{k}: ")))
                    .unwrap_or_else(|| panic!("no {k} in\n{doc}"))
                    .to_string()
            };
            let name = doc
                .lines()
                .find_map(|l| l.strip_prefix("  name: "))
                .unwrap_or_else(|| panic!("no metadata.name in\n{doc}"));
            field("apiVersion");
            (field("kind"), name.to_string())
        })
        .collect()
}

fn ok(o: &Output) -> String {
    assert_eq!(o.status.code(), Some(0), "stderr:\n{}", text(&o.stderr));
    text(&o.stdout)
}

#[test]
fn a_kro_app_renders_into_the_destination_namespace() {
    let out = ok(&Call::generate("apps/web-kro").run());
    let objs = objects(&out);
    assert!(
        objs.contains(&("Deployment".into(), "shop".into())),
        "{objs:?}"
    );
    assert!(!out.contains("kind: ResourceGraphDefinition") && !out.contains("kind: WebApp"));
    // The instance sets no namespace: the Application's destination applies.
    assert!(out.contains("namespace: team-a"), "{out}");
}

#[test]
fn two_environments_of_one_component_and_a_parameter_overriding_the_plugin_env() {
    let dev = ok(&Call {
        plugin_env: &[("ENVIRONMENT", "development")],
        ..Call::generate("apps/checkout")
    }
    .run());
    let prod = ok(&Call {
        plugin_env: &[("ENVIRONMENT", "development")],
        parameters: Some(r#"[{"name":"environment","string":"production"}]"#),
        ..Call::generate("apps/checkout")
    }
    .run());
    assert!(
        dev.contains("openchoreo.org/environment: development"),
        "{dev}"
    );
    assert!(
        prod.contains("openchoreo.org/environment: production"),
        "{prod}"
    );
    assert!(!prod.contains("environment: development"));
    assert_ne!(dev, prod);
    // Production's overrides applied (the seed's production ComponentDeployment).
    assert!(prod.contains("cpu: 500m"), "{prod}");
}

#[test]
fn a_kurel_app_with_array_and_map_parameters() {
    let out = ok(&Call {
        parameters: Some(
            r#"[{"name":"values","array":["values/prod.yaml","../../shared/values/big.yaml"]},{"name":"set","map":{"image":"nginx:1.28"}}]"#,
        ),
        ..Call::generate("apps/cache")
    }
    .run());
    let objs = objects(&out);
    assert_eq!(objs, [("Deployment".to_string(), "cache".to_string())]);
    for want in [
        "replicas: 3",
        "image: nginx:1.28",
        "value: prod-eu",
        "memory: 512Mi",
    ] {
        assert!(out.contains(want), "{want} in\n{out}");
    }
}

#[test]
fn values_outside_the_checkout_are_refused() {
    for path in ["../../../outside.yaml", "/etc/hostname"] {
        let params = format!(r#"[{{"name":"values","array":["{path}"]}}]"#);
        let o = Call {
            parameters: Some(&params),
            ..Call::generate("apps/cache")
        }
        .run();
        assert_eq!(o.status.code(), Some(1), "{path}");
        assert!(o.stdout.is_empty());
        assert!(text(&o.stderr).contains("KLN1002"), "{}", text(&o.stderr));
    }
}

#[test]
fn a_broken_definition_fails_with_a_concise_message_and_no_output() {
    let o = Call::generate("apps/broken").run();
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = text(&o.stderr);
    // One line per problem, the file named inside the repository (not the temporary checkout).
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error[KLN3008]: apps/broken/rgd.yaml:18:"),
        "{err}"
    );
}

#[test]
fn an_app_that_renders_nothing_is_refused_unless_empty_is_allowed() {
    let o = Call::generate("apps/empty").run();
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("allowEmpty"),
        "{}",
        text(&o.stderr)
    );
    let o = Call {
        parameters: Some(r#"[{"name":"allowEmpty","string":"true"}]"#),
        ..Call::generate("apps/empty")
    }
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// An application directory that holds no manifest at all is refused like one that renders
/// nothing, and `allowEmpty` lets both through (issue 30: a mutant that dropped `allowEmpty`
/// from the door's request survived: the request, not only the door's guard, must carry it).
#[test]
fn an_app_without_manifests_is_refused_unless_empty_is_allowed() {
    let o = Call::generate("apps/nothing").run();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    let o = Call {
        parameters: Some(r#"[{"name":"allowEmpty","string":"true"}]"#),
        ..Call::generate("apps/nothing")
    }
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// `strict` (parameter or `STRICT`) turns warnings into a failure: without it the app renders
/// with its warning on stderr, with it nothing is printed and the exit is 1 (issue 30: a mutant
/// that dropped `strict` from the door's request survived).
#[test]
fn strict_turns_a_warning_into_a_failure() {
    let o = Call::generate("apps/warns").run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("kind: ConfigMap"));
    assert!(text(&o.stderr).contains("KLN1008"), "{}", text(&o.stderr));
    for strict in [
        Call {
            parameters: Some(r#"[{"name":"strict","string":"true"}]"#),
            ..Call::generate("apps/warns")
        },
        Call {
            plugin_env: &[("STRICT", "true")],
            ..Call::generate("apps/warns")
        },
    ] {
        let o = strict.run();
        assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
        assert!(o.stdout.is_empty(), "no partial output");
        assert!(text(&o.stderr).contains("KLN1008"), "{}", text(&o.stderr));
    }
}

#[test]
fn output_is_deterministic_and_no_undocumented_variable_reaches_it() {
    let a = ok(&Call {
        // The sidecar's own environment (an unknown ARGOCD_ENV_ name is an error: see
        // a_misspelt_or_miscased_plugin_env_name_is_an_error_naming_the_one_meant).
        extra_env: &[("SECRET_TOKEN", "s3cr3t-value")],
        ..Call::generate("apps/web-kro")
    }
    .run());
    let b = ok(&Call::generate("apps/web-kro").run());
    assert_eq!(a, b, "same revision, parameters and env: same bytes");
    assert!(!a.contains("s3cr3t"));
}

#[test]
fn a_misspelt_parameter_is_an_error_naming_the_one_meant() {
    let o = Call {
        parameters: Some(r#"[{"name":"enviroment","string":"production"}]"#),
        ..Call::generate("apps/checkout")
    }
    .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("did you mean \"environment\"?"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn parameters_announce_what_the_app_directory_holds() {
    let o = Call {
        command: "parameters",
        ..Call::generate("apps/checkout")
    }
    .run();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let env = &v[0];
    assert_eq!(env["name"], "environment");
    assert!(
        env["tooltip"]
            .as_str()
            .unwrap()
            .contains("development, production"),
        "{env}"
    );
    let o = Call {
        command: "parameters",
        ..Call::generate("apps/cache")
    }
    .run();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert!(v[1]["tooltip"]
        .as_str()
        .unwrap()
        .contains("values/prod.yaml"));
    assert!(v[2]["tooltip"].as_str().unwrap().contains("cache"));
}

/// The plugin configuration Argo CD's cmp-server reads: the `spec` of deploy/argocd/plugin.yaml.
fn shipped_spec() -> serde_json::Value {
    let text = kiln_cmp::PLUGIN_YAML;
    let docs = kiln_core::document::parse_file(
        "plugin.yaml",
        text.to_string(),
        &kiln_core::document::YamlLimits::default(),
    )
    .unwrap();
    docs[0].value["spec"].clone()
}

/// Whether Argo CD hands the application to the plugin configured with `spec`, as
/// util/app/discovery/discovery.go (`cmpSupports`) and cmpserver/plugin/plugin.go
/// (`isDiscoveryConfigured`, `matchRepository`) decide: a plugin without discovery serves
/// exactly the Applications that name it; one with discovery serves those whose directory
/// matches, named or not (a named Application that does not match fails with "could not find
/// cmp-server plugin with name … supporting the given repository").
fn argo_cd_uses_plugin(spec: &serde_json::Value, named: bool, call: &Call) -> bool {
    let d = &spec["discover"];
    let file_name = d["fileName"].as_str().unwrap_or("");
    let glob = d["find"]["glob"].as_str().unwrap_or("");
    let command = d["find"]["command"].as_array().cloned().unwrap_or_default();
    if file_name.is_empty() && glob.is_empty() && command.is_empty() {
        return named;
    }
    assert!(glob.is_empty(), "this model has no ** glob matcher");
    if !file_name.is_empty() {
        // filepath.Glob(filepath.Join(appPath, fileName)): a name without glob characters
        // matches the entry of that name (found with lstat).
        assert!(!file_name.contains(['*', '?', '[']), "{file_name}");
        return call.run_with(|c| {
            let dir = c.get_current_dir().unwrap().to_path_buf();
            std::fs::symlink_metadata(dir.join(file_name)).is_ok()
        });
    }
    // find.command: supported when it exits 0 with non-empty output.
    assert_eq!(command[0], "kiln-cmp");
    let o = Call {
        command: command[1].as_str().unwrap(),
        ..Call { ..*call }
    }
    .run();
    o.status.success() && !text(&o.stdout).trim_end_matches('\n').is_empty()
}

/// A directory of ResourceGraphDefinitions meant for the in-cluster kro controller (no
/// Application names kiln), and kiln inputs a text match misses: a quoted kind, JSON.
const KRO_CONTROLLER_APP: &[(&str, &str)] = &[(
    "apps/platform-rgds/rgd.yaml",
    "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {name: later}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Later\n    spec: {name: string}\n  resources:\n  - id: c\n    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: x}}\n",
)];
const QUOTED_AND_JSON_APP: &[(&str, &str)] = &[
    (
        "apps/quoted/rgd.yaml",
        "apiVersion: \"kro.run/v1alpha1\"\nkind: \"ResourceGraphDefinition\"\nmetadata: {name: notes}\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Note\n    spec: {text: string}\n  resources:\n  - id: c\n    template: {apiVersion: v1, kind: ConfigMap, metadata: {name: '${schema.metadata.name}'}, data: {text: '${schema.spec.text}'}}\n",
    ),
    (
        "apps/quoted/note.json",
        r#"{"apiVersion":"kro.run/v1alpha1","kind":"Note","metadata":{"name":"hello"},"spec":{"text":"hi"}}"#,
    ),
];

/// Item 23.3: the shipped configuration has no discovery, so an Application that names no
/// plugin is never taken over (its RGDs stay in its manifests for the kro controller), and one
/// that names kiln-v1alpha1 always gets it, whatever a text match would have made of its files.
#[test]
fn discovery_never_takes_over_an_application_it_should_not() {
    let spec = shipped_spec();
    let unnamed_rgds = Call {
        files: KRO_CONTROLLER_APP,
        ..Call::generate("apps/platform-rgds")
    };
    assert!(!argo_cd_uses_plugin(&spec, false, &unnamed_rgds));
    for app in ["apps/web-kro", "apps/checkout", "apps/cache"] {
        assert!(
            !argo_cd_uses_plugin(&spec, false, &Call::generate(app)),
            "{app}"
        );
        assert!(
            argo_cd_uses_plugin(&spec, true, &Call::generate(app)),
            "{app}"
        );
    }
    let named = Call {
        files: QUOTED_AND_JSON_APP,
        ..Call::generate("apps/quoted")
    };
    assert!(argo_cd_uses_plugin(&spec, true, &named));
    let out = ok(&named.run());
    assert!(out.contains("text: hi"), "{out}");
}

/// Item 23.3, the opt-in: `discover.fileName: .kiln-cmp` (docs/argocd.md) serves the directories
/// holding the marker, named or not, and no other; `kiln-cmp discover` (for a
/// `discover.find.command` configuration) answers the same.
#[test]
fn discovery_opt_in_is_the_marker_file_only() {
    let mut by_name = shipped_spec();
    by_name["discover"] = serde_json::json!({"fileName": kiln_cmp::discover::MARKER});
    let mut by_command = shipped_spec();
    by_command["discover"] = serde_json::json!({"find": {"command": ["kiln-cmp", "discover"]}});
    let marked: &[(&str, &str)] = &[("apps/web-kro/.kiln-cmp", "")];
    for spec in [&by_name, &by_command] {
        let with = Call {
            files: marked,
            ..Call::generate("apps/web-kro")
        };
        assert!(argo_cd_uses_plugin(spec, false, &with), "{spec}");
        assert!(argo_cd_uses_plugin(spec, true, &with), "{spec}");
        // The marker is not an input: the render is the same as without it.
        assert_eq!(ok(&with.run()), ok(&Call::generate("apps/web-kro").run()));
        let without = Call {
            files: KRO_CONTROLLER_APP,
            ..Call::generate("apps/platform-rgds")
        };
        assert!(!argo_cd_uses_plugin(spec, false, &without), "{spec}");
        // With discovery configured, Argo CD checks it for a named plugin too.
        assert!(!argo_cd_uses_plugin(spec, true, &without), "{spec}");
    }
}

/// Item 23.1: every plugin env name of the options table is read by the binary (before the
/// table, `MODE`, `EMIT_CRDS`, `SYNC_WAVES`, `OBSERVED` and `NO_PROVENANCE` were documented and
/// ignored: `ARGOCD_ENV_MODE=kro` rendered directly, `MODE=bogus` exited 0).
#[test]
fn every_documented_plugin_env_name_takes_effect() {
    let base = ok(&Call::generate("apps/web-kro").run());
    for o in kiln_cmp::options::OPTIONS {
        let Some(name) = o.env else { continue };
        let with = |app: &'static str, value: &'static str| -> Output {
            Call {
                plugin_env: &[(name, value)][..],
                ..Call::generate(app)
            }
            .run_with(|c| c.output().unwrap())
        };
        // Each name changes what a run does: an invalid value fails naming the variable, a
        // valid one changes the output.
        match name {
            "ENVIRONMENT" => {
                let o = with("apps/checkout", "production");
                assert!(ok(&o).contains("environment: production"));
            }
            "VALUES" => {
                let o = with("apps/cache", "values/prod.yaml");
                assert!(ok(&o).contains("replicas: 3"), "{name}");
            }
            "PASS_THROUGH" => {
                assert_eq!(Call::generate("apps/foreign").run().status.code(), Some(1));
                assert!(ok(&with("apps/foreign", "acme.io")).contains("kind: Widget"));
            }
            "OBSERVED" => {
                let o = with("apps/web-kro", "no-such-file.yaml");
                assert_eq!(o.status.code(), Some(1), "{name}");
            }
            "MODE" => {
                let o = with("apps/web-kro", "kro");
                assert!(ok(&o).contains("kind: ResourceGraphDefinition"), "{name}");
            }
            "NO_PROVENANCE" => {
                assert!(base.contains("kiln.dev/"));
                assert!(!ok(&with("apps/web-kro", "true")).contains("kiln.dev/"));
            }
            "STRICT" | "ALLOW_EMPTY" | "EMIT_CRDS" | "SYNC_WAVES" => {}
            other => panic!("add a case for the plugin env {other}"),
        }
        if matches!(
            o.kind,
            kiln_cmp::options::Kind::Bool | kiln_cmp::options::Kind::Choice(_)
        ) {
            let o = with("apps/web-kro", "bogus");
            assert_eq!(o.status.code(), Some(1), "{name}=bogus");
            assert!(o.stdout.is_empty());
            assert!(
                text(&o.stderr).contains(&format!("ARGOCD_ENV_{name}")),
                "{}",
                text(&o.stderr)
            );
        }
    }
    let o = Call {
        plugin_env: &[
            ("MODE", "kro"),
            ("EMIT_CRDS", "true"),
            ("SYNC_WAVES", "true"),
        ],
        ..Call::generate("apps/web-kro")
    };
    let out = ok(&o.run());
    assert!(out.contains("kind: CustomResourceDefinition"), "{out}");
    assert!(out.contains("argocd.argoproj.io/sync-wave"), "{out}");
    let o = Call {
        plugin_env: &[("ALLOW_EMPTY", "true")],
        ..Call::generate("apps/empty")
    };
    assert_eq!(o.run().status.code(), Some(0));
}

/// Item 23.2: Argo CD passes exactly the names the Application writes (repository.go,
/// `getPluginParamEnvs`: `ARGOCD_ENV_<name>`), so an unknown one is a typo.
#[test]
fn a_misspelt_or_miscased_plugin_env_name_is_an_error_naming_the_one_meant() {
    for (typo, hint) in [
        ("ENVIRONMNT", "did you mean \"ENVIRONMENT\"?"),
        (
            "environment",
            "did you mean \"ENVIRONMENT\"? (plugin env names are case-sensitive)",
        ),
    ] {
        let o = Call {
            plugin_env: &[(typo, "production")],
            ..Call::generate("apps/checkout")
        }
        .run();
        assert_eq!(o.status.code(), Some(1), "{typo}");
        assert!(o.stdout.is_empty());
        let err = text(&o.stderr);
        assert!(
            err.contains(&format!("unknown plugin env \"{typo}\"")),
            "{err}"
        );
        assert!(err.contains(hint), "{err}");
    }
    // Every problem at once: the typo, and an invalid value of a known name.
    let o = Call {
        plugin_env: &[("ENVIRONMNT", "production"), ("MODE", "bogus")],
        ..Call::generate("apps/checkout")
    }
    .run();
    let err = text(&o.stderr);
    assert_eq!(err.lines().count(), 2, "{err}");
    assert!(err.contains("ARGOCD_ENV_MODE: MODE is \"bogus\""), "{err}");
}

/// Item 23.8: the trust boundary is the checkout. A symlink to another directory of it (kept by
/// Argo CD's `Untgz`, made relative) is followed; one that leaves it is refused.
#[test]
fn a_symlink_inside_the_checkout_is_followed_and_one_leaving_it_is_refused() {
    let files: &[(&str, &str)] = &[
        (
            "lib/webapp/rgd.yaml",
            include_str!("../../testdata/argocd/repo/apps/web-kro/rgd.yaml"),
        ),
        (
            "apps/linked/instances.yaml",
            include_str!("../../testdata/argocd/repo/apps/web-kro/instances.yaml"),
        ),
    ];
    let linked = Call {
        files,
        links: &[("apps/linked/definitions", "../../lib/webapp")],
        ..Call::generate("apps/linked")
    };
    let out = ok(&linked.run());
    assert!(
        objects(&out).contains(&("Deployment".into(), "shop".into())),
        "{out}"
    );
    for target in ["../../..", "/etc"] {
        let o = Call {
            links: &[("apps/web-kro/escape", target)],
            ..Call::generate("apps/web-kro")
        }
        .run();
        assert_eq!(o.status.code(), Some(1), "{target}");
        assert!(o.stdout.is_empty());
        let err = text(&o.stderr);
        assert!(
            err.starts_with("error[KLN1002]: apps/web-kro/escape:"),
            "{err}"
        );
        no_temporary_path(&err);
    }
}

/// The temporary directories a checkout lives in never appear in what Argo CD shows.
fn no_temporary_path(s: &str) {
    let tmp = std::env::temp_dir().display().to_string();
    assert!(!s.contains(&tmp) && !s.contains("/tmp/"), "{s}");
}

/// Item 23.4: errors and tooltips name files relative to the repository.
#[test]
fn errors_and_tooltips_name_files_in_the_repository_not_the_checkout() {
    let o = Call::generate("apps/broken").run();
    no_temporary_path(&text(&o.stderr));
    let o = Call {
        command: "parameters",
        ..Call::generate("apps/cache")
    }
    .run();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    no_temporary_path(&v.to_string());
    assert!(
        v[2]["tooltip"]
            .as_str()
            .unwrap()
            .contains("apps/cache/cache.kurel"),
        "{v}"
    );
    let o = Call {
        parameters: Some(r#"[{"name":"values","array":["missing.yaml"]}]"#),
        ..Call::generate("apps/cache")
    }
    .run();
    assert_eq!(o.status.code(), Some(1));
    no_temporary_path(&text(&o.stderr));
}

/// Item 23.5: a large invalid value is quoted by a short prefix, never whole.
#[test]
fn a_large_invalid_value_is_quoted_by_a_short_prefix() {
    let big = "y".repeat(100 * 1024);
    for params in [
        format!(r#"[{{"name":"strict","string":"{big}"}}]"#),
        format!(r#"[{{"name":"mode","string":"{big}"}}]"#),
        format!(r#"[{{"name":"{big}","string":"x"}}]"#),
        format!(r#"[{{"name":"environment","string":"{big}"}}]"#),
        format!(r#"[{{"name":"values","array":["/{big}"]}}]"#),
        format!(r#"[{{"name":"values","array":["{big}.yaml"]}}]"#),
    ] {
        let o = Call {
            parameters: Some(&params),
            ..Call::generate("apps/checkout")
        }
        .run();
        assert_eq!(o.status.code(), Some(1));
        let err = text(&o.stderr);
        assert!(err.len() < 4096, "{} bytes: {}", err.len(), &err[..200]);
    }
    let o = Call {
        plugin_env: &[("STRICT", &big[..])],
        ..Call::generate("apps/checkout")
    }
    .run();
    assert!(text(&o.stderr).len() < 1024);
}

/// docs/argocd.md: "a value quoted in an error is cut to its first 48 characters (with its
/// length)". A 100-character value of every parameter that can be refused is quoted exactly so,
/// whether kiln-cmp or kiln-core refuses it (issue 39: an environment, a set value or key and a
/// values path were quoted whole, up to the 1 KiB cut of a message).
#[test]
fn a_quoted_value_is_cut_to_its_first_48_characters() {
    let v = "e".repeat(100);
    let cut = format!("\"{}\"… (100 bytes)", "e".repeat(48));
    let values = r#"{"name":"values","array":["values/prod.yaml"]}"#;
    for params in [
        format!(r#"[{{"name":"environment","string":"{v}"}}]"#),
        format!(r#"[{{"name":"mode","string":"{v}"}}]"#),
        format!(r#"[{{"name":"{v}","string":"x"}}]"#),
        format!(r#"[{values},{{"name":"set","map":{{"{v}":"1"}}}}]"#),
        format!(r#"[{values},{{"name":"set","map":{{"replicas":"{v}"}}}}]"#),
    ] {
        let o = Call {
            parameters: Some(&params),
            ..Call::generate("apps/cache")
        }
        .run();
        let err = text(&o.stderr);
        assert!(err.contains(&cut), "{params}: {err}");
        assert!(!err.contains(&"e".repeat(49)), "{params}: {err}");
    }
    let o = Call {
        plugin_env: &[("ENVIRONMENT", &v)],
        ..Call::generate("apps/cache")
    }
    .run();
    assert!(text(&o.stderr).contains(&cut), "{}", text(&o.stderr));
    // A set value that is a kurel reference (`${image.eee…}`, issue 40: KLN7007 named the
    // undefined variable whole): the reference is quoted by its first 48 characters too.
    for reference in [
        format!("${{image.{v}}}"),
        format!("${{{v}|x}}"),
        format!("${{{v} +}}"),
    ] {
        let params = format!(r#"[{values},{{"name":"set","map":{{"image":"{reference}"}}}}]"#);
        let o = Call {
            parameters: Some(&params),
            ..Call::generate("apps/cache")
        }
        .run();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{params}: {err}");
        assert!(err.contains(" bytes)"), "{params}: {err}");
        assert!(!err.contains(&"e".repeat(49)), "{params}: {err}");
    }
}

/// Item 23.6: a hint names the parameter or plugin env the user sets, not a `kiln` flag.
#[test]
fn hints_name_parameters_and_plugin_env_not_cli_flags() {
    for (call, want) in [
        (
            Call::generate("apps/foreign"),
            "the parameter passThrough (or plugin env PASS_THROUGH) acme.io",
        ),
        (
            Call {
                parameters: Some(r#"[{"name":"emitCRDs","string":"true"}]"#),
                ..Call::generate("apps/web-kro")
            },
            "the parameter emitCRDs (or plugin env EMIT_CRDS) given in direct mode",
        ),
        (
            Call {
                parameters: Some(
                    r#"[{"name":"values","array":["values/prod.yaml"]},{"name":"set","map":{"kurel.name":"other"}}]"#,
                ),
                ..Call::generate("apps/cache")
            },
            "the parameter set",
        ),
    ] {
        let o = call.run();
        assert_eq!(o.status.code(), Some(1));
        let err = text(&o.stderr);
        assert!(err.contains(want), "{want} in {err}");
        assert_eq!(
            kiln_core::vocabulary::cli_flags(&err),
            Vec::<&str>::new(),
            "{err}"
        );
    }
}

/// Item 30.3: the empty-output guard counts rendered objects, not instances: an application
/// whose instances all render nothing (every resource excluded by includeWhen) is refused.
#[test]
fn an_app_whose_instances_all_render_nothing_is_refused() {
    let o = Call::generate("apps/excluded").run();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("renders no objects"),
        "{}",
        text(&o.stderr)
    );
    let o = Call {
        parameters: Some(r#"[{"name":"allowEmpty","string":"true"}]"#),
        ..Call::generate("apps/excluded")
    }
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
}

/// Item 24.6: a failed write of the manifests is exit 1 with a message (a full device); a
/// closed pipe is exit 141 (as SIGPIPE would end it) without one. Argo CD (plugin.go, `runCommand`) takes exit 0 as a
/// complete stream.
#[test]
fn a_failed_write_is_reported_and_a_closed_pipe_exits_quietly() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = Call::generate("apps/web-kro").run_with(|c| c.stdout(full).output().unwrap());
    assert_eq!(o.status.code(), Some(1));
    let err = text(&o.stderr);
    assert!(err.contains("error: cannot write output:"), "{err}");
    let (status, err) = Call::generate("apps/web-kro").run_with(|c| {
        let mut child = c
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let o = child.wait_with_output().unwrap();
        (o.status, text(&o.stderr))
    });
    assert_eq!(status.code(), Some(141));
    assert_eq!(err, "");
}

/// Item 23.7: kiln-cmp does not run kustomize; a kustomization in the application directory
/// (any name Argo CD takes for one: util/kustomize/kustomize.go, `KustomizationNames`) is refused
/// with what to do, instead of "document has no apiVersion" or a render that leaves it out.
fn kubectl() -> PathBuf {
    kiln_test_support::tool("kubectl")
}

/// An overlay in the application directory: Argo CD would build the directory with kustomize
/// (util/kustomize/kustomize.go, `Build`: `kustomize build <path>`), so kiln-cmp renders the
/// directory in place and builds it with the real kustomize: the overlay's namePrefix and its
/// patch of a rendered Deployment reach the output, and the consumed definition is gone.
#[test]
fn a_kustomization_in_the_app_directory_is_rendered_in_place_and_built() {
    let kubectl = kubectl();
    for name in kiln_cmp::generate::KUSTOMIZATION_NAMES {
        let path = format!("apps/web-kro/{name}");
        let overlay = "namePrefix: prod-
resources:
- rgd.yaml
- instances.yaml
- extra
patches:
- target: {kind: Deployment, name: shop}
  patch: |
    - op: replace
      path: /spec/replicas
      value: 5
";
        let files = [
            (path.as_str(), overlay),
            (
                "apps/web-kro/extra/kustomization.yaml",
                "resources: [cm.yaml]\n",
            ),
            (
                "apps/web-kro/extra/cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra}\ndata: {a: b}\n",
            ),
        ];
        let kubectl = kubectl.display().to_string();
        let extra_env = [("KILN_KUSTOMIZE", kubectl.as_str())];
        let o = Call {
            files: &files,
            extra_env: &extra_env,
            ..Call::generate("apps/web-kro")
        }
        .run();
        let out = ok(&o);
        let objs = objects(&out);
        assert!(
            objs.contains(&("Deployment".into(), "prod-shop".into())),
            "{name}: {objs:?}\n{out}"
        );
        assert!(
            objs.contains(&("Service".into(), "prod-shop".into())),
            "{objs:?}"
        );
        assert!(
            objs.contains(&("ConfigMap".into(), "prod-extra".into())),
            "{objs:?}"
        );
        assert!(
            !objs
                .iter()
                .any(|(k, _)| k == "ResourceGraphDefinition" || k == "WebApp"),
            "{objs:?}"
        );
        let deployment = out
            .split("\n---\n")
            .find(|d| d.contains("kind: Deployment"))
            .unwrap();
        assert!(deployment.contains("replicas: 5"), "{deployment}");
        assert!(deployment.contains("namespace: team-a"), "{deployment}");
        // Same input, same bytes.
        let again = Call {
            files: &files,
            extra_env: &extra_env,
            ..Call::generate("apps/web-kro")
        }
        .run();
        assert_eq!(ok(&again), out);
    }
}

/// Without KILN_KUSTOMIZE, kustomize (or kubectl) is found on PATH; with neither there, the run
/// fails saying what to install, and prints nothing.
#[test]
fn kustomize_is_found_on_path_or_its_absence_is_an_error() {
    let bin = kubectl();
    let files = [(
        "apps/web-kro/kustomization.yaml",
        "resources: [rgd.yaml, instances.yaml]\n",
    )];
    let o = Call {
        files: &files,
        ..Call::generate("apps/web-kro")
    }
    .run();
    assert!(ok(&o).contains("kind: Deployment"));
    let empty = tempfile::tempdir().unwrap();
    let o = Call {
        files: &files,
        ..Call::generate("apps/web-kro")
    }
    .run_with(|c| c.env("PATH", empty.path()).output().unwrap());
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
    let err = text(&o.stderr);
    assert!(
        err.contains("neither kustomize nor kubectl is on PATH"),
        "{err}"
    );
    let _ = bin;
}

/// kustomize runs on the real disk, and with its default load restrictor it loads a base
/// directory from anywhere: every path a kustomization names is checked to stay in the checkout
/// before kustomize runs (KLN1002), and nothing is printed.
#[test]
fn a_kustomization_leaving_the_checkout_is_refused_before_kustomize_runs() {
    let kubectl = kubectl().display().to_string();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(
        outside.path().join("kustomization.yaml"),
        "resources: [secret.yaml]\n",
    )
    .unwrap();
    std::fs::write(
        outside.path().join("secret.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: leaked}\ndata: {token: s3cr3t}\n",
    )
    .unwrap();
    let absolute = format!(
        "resources: [rgd.yaml, instances.yaml, {}]\n",
        outside.path().display()
    );
    let climbing = "resources: [rgd.yaml, instances.yaml]\nconfigMapGenerator:\n- name: c\n  files: [../../../../../../../../etc/hostname]\n";
    for k in [absolute.as_str(), climbing] {
        let files = [("apps/web-kro/kustomization.yaml", k)];
        let o = Call {
            files: &files,
            extra_env: &[("KILN_KUSTOMIZE", kubectl.as_str())],
            ..Call::generate("apps/web-kro")
        }
        .run();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(o.stdout.is_empty(), "{}", text(&o.stdout));
        assert!(err.contains("error[KLN1002]"), "{err}");
        assert!(!err.contains("s3cr3t"), "{err}");
        no_temporary_path(&err);
    }
}

/// Issue 38.1: an overlay over a base outside the application directory (`apps/overlay` over
/// `../base`), the most common kustomize layout. kiln-cmp used to hand the base to kustomize as
/// written, so its ResourceGraphDefinition and instances would have reached Argo CD unrendered
/// (it refused them). The base's inputs are now rendered first, and the overlay's
/// transformations apply to kiln's objects as to hand-written ones.
#[test]
fn an_overlay_over_a_base_outside_the_app_directory_renders_the_base() {
    let kubectl = kubectl().display().to_string();
    let rgd = std::fs::read_to_string(repo().join("apps/web-kro/rgd.yaml")).unwrap();
    let inst = std::fs::read_to_string(repo().join("apps/web-kro/instances.yaml")).unwrap();
    let files = [
        ("apps/base/rgd.yaml", rgd.as_str()),
        ("apps/base/instances.yaml", inst.as_str()),
        (
            "apps/base/kustomization.yaml",
            "resources: [rgd.yaml, instances.yaml]\n",
        ),
        (
            "apps/overlay/kustomization.yaml",
            "resources: [../base]\nnamePrefix: p-\n",
        ),
    ];
    let o = Call {
        files: &files,
        extra_env: &[("KILN_KUSTOMIZE", kubectl.as_str())],
        ..Call::generate("apps/overlay")
    }
    .run();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let out = text(&o.stdout);
    assert!(out.contains("kind: Deployment"), "{out}");
    assert!(!out.contains("kind: ResourceGraphDefinition"), "{out}");
    assert!(!out.contains("kind: WebApp"), "{out}");
    let names: Vec<&str> = out
        .lines()
        .filter_map(|l| l.strip_prefix("  name: "))
        .collect();
    assert!(
        !names.is_empty() && names.iter().all(|n| n.starts_with("p-")),
        "{names:?}"
    );
}

/// KILN_KUSTOMIZE_BUILD_OPTIONS are added to the build as Argo CD adds `kustomize.buildOptions`:
/// a file beside the application directory (inside the checkout) is refused by kustomize's
/// default load restrictor and read with `--load-restrictor LoadRestrictionsNone`.
#[test]
fn the_sidecars_build_options_reach_kustomize() {
    let kubectl = kubectl().display().to_string();
    let files = [
        (
            "apps/web-kro/kustomization.yaml",
            "resources: [rgd.yaml, instances.yaml, ../shared-cm.yaml]\n",
        ),
        (
            "apps/shared-cm.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared}\n",
        ),
    ];
    let run = |options: &str| {
        Call {
            files: &files,
            extra_env: &[
                ("KILN_KUSTOMIZE", kubectl.as_str()),
                ("KILN_KUSTOMIZE_BUILD_OPTIONS", options),
            ],
            ..Call::generate("apps/web-kro")
        }
        .run()
    };
    let o = run("");
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("kustomize build failed"), "{err}");
    no_temporary_path(&err);
    // Argo CD caches errors too: the same failure is the same message (no log time or pid).
    assert_eq!(text(&run("").stderr), err);
    let o = run("--load-restrictor  LoadRestrictionsNone");
    assert!(ok(&o).contains("name: shared"));
}

/// A remote base is refused unless the sidecar allows it (the trust boundary is the checkout).
#[test]
fn a_remote_base_is_refused_unless_the_sidecar_allows_it() {
    let files = [(
        "apps/web-kro/kustomization.yaml",
        "resources: [rgd.yaml, instances.yaml, 'https://github.com/example/base//deploy?ref=v1']\n",
    )];
    let o = Call {
        files: &files,
        ..Call::generate("apps/web-kro")
    }
    .run();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    assert!(err.contains("error[KLN1014]"), "{err}");
    assert!(err.contains("KILN_ALLOW_REMOTE_BASES=true"), "{err}");
    // The Application cannot allow it: only the sidecar's own environment can.
    let o = Call {
        files: &files,
        plugin_env: &[("KILN_ALLOW_REMOTE_BASES", "true")],
        ..Call::generate("apps/web-kro")
    }
    .run();
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("unknown plugin env"),
        "{}",
        text(&o.stderr)
    );
}

/// A kustomization below the application directory, with none at its top, is not what Argo CD
/// builds: refused, saying what to do.
#[test]
fn a_kustomization_below_the_app_directory_is_refused_with_what_to_do() {
    for name in kiln_cmp::generate::KUSTOMIZATION_NAMES {
        let path = format!("apps/web-kro/overlay/{name}");
        let files = [(path.as_str(), "resources:\n- ../rgd.yaml\n")];
        let o = Call {
            files: &files,
            ..Call::generate("apps/web-kro")
        }
        .run();
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(o.stdout.is_empty());
        let err = text(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.starts_with(&format!(
                "error[KLN1010]: {path}: a kustomization below the application directory is not built"
            )),
            "{err}"
        );
        assert!(err.contains("source.path"), "{err}");
    }
}

/// generate renders a small application (at most 32 KiB of files) on its main thread alone and
/// a larger one on a worker a core (`kiln_core::process::worker_pool`): an Argo CD refresh of a
/// small app pays for no threads.
#[cfg(target_os = "linux")]
#[test]
fn generate_starts_threads_only_for_a_larger_application() {
    let instances = |n: usize| -> String {
        (0..n)
            .map(|i| format!("---\napiVersion: example.com/v1alpha1\nkind: WebApp\nmetadata:\n  name: app-{i}\nspec:\n  image: ghcr.io/example/app:1.{i}.0\n  regions: [eu-west-1, us-east-1]\n"))
            .collect()
    };
    for (n, threads) in [(12, 1), (300, answering::a_worker_a_core())] {
        let more = instances(n);
        let files = [("apps/web-kro/more.yaml", more.as_str())];
        let a = Call {
            files: &files,
            ..Call::generate("apps/web-kro")
        }
        .run_with(|c| answering::while_answering(c, b""));
        assert!(a.output.status.success(), "{}", text(&a.output.stderr));
        assert_eq!(a.threads, threads, "{n} instances ({} bytes)", more.len());
        assert_eq!(
            objects(&text(&a.output.stdout))
                .iter()
                .filter(|(kind, _)| kind == "Deployment")
                .count(),
            n + 1
        );
    }
}

/// A values file named in the options is read too, and its path is not followed to measure it:
/// with one, generate does not take the run for small (`kiln_core::process::small_input`).
#[cfg(target_os = "linux")]
#[test]
fn generate_with_values_files_is_not_taken_for_small() {
    let data: String = (0..300)
        .map(|i| format!("  key-{i:03}: a value long enough to fill the output\n"))
        .collect();
    let resources = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: \"${{name}}\"}}\ndata:\n{data}"
    );
    let files = [
        (
            "apps/kapp/app.kurel/parameters.yaml",
            "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nname: app\n",
        ),
        ("apps/kapp/app.kurel/resources/cm.yaml", resources.as_str()),
        ("apps/kapp-values.yaml", "name: other\n"),
    ];
    for (plugin_env, threads) in [
        (&[][..], 1),
        (
            &[("VALUES", "../kapp-values.yaml")][..],
            answering::a_worker_a_core(),
        ),
    ] {
        let a = Call {
            files: &files,
            plugin_env,
            ..Call::generate("apps/kapp")
        }
        .run_with(|c| answering::while_answering(c, b""));
        assert!(a.output.status.success(), "{}", text(&a.output.stderr));
        assert_eq!(a.threads, threads, "{plugin_env:?}");
    }
}

fn layout(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/layouts")
        .join(name)
}

/// Objects of a YAML stream sorted by (kind, name).
fn sorted_objects(stream: &str) -> Vec<serde_json::Value> {
    let docs = kiln_core::document::parse_file(
        "stream",
        stream.to_string(),
        &kiln_core::document::YamlLimits::default(),
    )
    .unwrap();
    let mut v: Vec<serde_json::Value> = docs.into_iter().map(|d| d.value).collect();
    v.sort_by_key(|o| (o["kind"].to_string(), o["metadata"]["name"].to_string()));
    v
}

/// Issue 38.2: Argo CD's kustomize example layout (testdata/layouts/argocd-apps, after
/// argoproj's argocd-example-apps `kustomize-guestbook` with an overlay per environment, and its
/// app-of-apps root). Each Application's path builds as Argo CD's repo-server would run the
/// plugin there: the base's kro instance rendered, then the overlay's prefix, labels, image and
/// patch applied by kustomize (checked against `kubectl kustomize` of the base rendered by
/// hand: the same objects as the base's instance rendered alone, transformed). The app-of-apps
/// root's Applications pass through.
#[test]
fn the_argocd_example_layout_renders_each_application() {
    let kubectl = kubectl().display().to_string();
    let root = layout("argocd-apps");
    for (env, prefix, replicas, image) in [
        (
            "staging",
            "staging-",
            1,
            "gcr.io/google-samples/gb-frontend:v5",
        ),
        ("prod", "prod-", 3, "gcr.io/google-samples/gb-frontend:v6"),
    ] {
        let app = format!("guestbook/overlays/{env}");
        let o = Call {
            extra_env: &[("KILN_KUSTOMIZE", kubectl.as_str())],
            checkout: Some(&root),
            ..Call::generate(&app)
        }
        .run();
        assert_eq!(o.status.code(), Some(0), "{env}: {}", text(&o.stderr));
        let objs = sorted_objects(&text(&o.stdout));
        let kinds: Vec<&str> = objs.iter().map(|o| o["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["Deployment", "Service"], "{env}");
        for o in &objs {
            assert_eq!(
                o["metadata"]["name"],
                format!("{prefix}guestbook-ui"),
                "{env}"
            );
            assert_eq!(o["metadata"]["labels"]["env"], env, "{env}");
            assert_eq!(
                o["metadata"]["annotations"]["kiln.dev/instance"],
                "GuestbookUI/team-a/guestbook-ui",
                "{env}: rendered by kiln from the base's instance"
            );
        }
        assert_eq!(objs[0]["spec"]["replicas"], replicas, "{env}");
        assert_eq!(
            objs[0]["spec"]["template"]["spec"]["containers"][0]["image"], image,
            "{env}"
        );
    }
    // The app-of-apps root: Applications, which the cluster's API serves, pass through.
    let o = Call {
        extra_env: &[("KUBE_API_VERSIONS", "v1,apps/v1,argoproj.io/v1alpha1")],
        checkout: Some(&root),
        ..Call::generate("apps")
    }
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names: Vec<String> = sorted_objects(&text(&o.stdout))
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "Application/guestbook-prod",
            "Application/guestbook-staging"
        ]
    );
}

/// Issue 38.2: a monorepo with an `environments/` folder of component deployments
/// (testdata/layouts/component-environments): each environment's kustomization reaches the
/// shared `platform/` (types, environments) and `components/` folders and holds its own
/// ReleaseBinding. The Application of an environment renders that environment's release, with
/// the platform objects kept where they are, and nothing of the other environment.
#[test]
fn the_component_environments_layout_renders_one_release_per_application() {
    let kubectl = kubectl().display().to_string();
    let root = layout("component-environments");
    for (env, replicas) in [("dev", 1), ("prod", 4)] {
        let app = format!("environments/{env}");
        let o = Call {
            extra_env: &[("KILN_KUSTOMIZE", kubectl.as_str())],
            checkout: Some(&root),
            ..Call::generate(&app)
        }
        .run();
        assert_eq!(o.status.code(), Some(0), "{env}: {}", text(&o.stderr));
        let objs = sorted_objects(&text(&o.stdout));
        let deployments: Vec<&serde_json::Value> =
            objs.iter().filter(|o| o["kind"] == "Deployment").collect();
        assert_eq!(deployments.len(), 1, "{env}: one release");
        let d = deployments[0];
        assert_eq!(d["metadata"]["labels"]["openchoreo.dev/environment"], env);
        assert_eq!(d["spec"]["replicas"], replicas, "{env}");
        let platform: Vec<&str> = objs
            .iter()
            .filter(|o| o["kind"] != "Deployment")
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            platform,
            ["ClusterDataPlane", "Environment", "Environment", "Project"],
            "{env}: the platform objects the kustomization names are kept"
        );
    }
}

/// Issue 38.2: Flux's monorepo layout through Argo CD: an Application whose path is
/// `apps/production` (an overlay over `../base/podinfo`, with a component in `components/`).
#[test]
fn the_flux_monorepo_layout_renders_through_argo_cd() {
    let kubectl = kubectl().display().to_string();
    let root = layout("flux-monorepo");
    let o = Call {
        extra_env: &[("KILN_KUSTOMIZE", kubectl.as_str())],
        checkout: Some(&root),
        ..Call::generate("apps/production")
    }
    .run();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names: Vec<String> = sorted_objects(&text(&o.stdout))
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            "Deployment/podinfo",
            "Deployment/podinfo-canary",
            "Namespace/podinfo",
            "Service/podinfo",
            "Service/podinfo-canary"
        ]
    );
}

/// An application holding a Secret whose values are escaped when written (`\x01`), and a kurel
/// package whose secret parameter (a Secret template reads it) draws a warning quoting it.
const SECRET_APP: &[(&str, &str)] = &[
    (
        "apps/secrets/s.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  pw: \"Hunter2-Escaped\\x01-secret\"\n",
    ),
    (
        "apps/secrets/pkg.kurel/parameters.yaml",
        "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\ndb:\n  password: \"{{ Hunter2-Template-secret }}\"\n",
    ),
    (
        "apps/secrets/pkg.kurel/resources/s.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  pw: \"${db.password}\"\n",
    ),
];

/// No secret value reaches what kiln-cmp prints about an application with a kustomization
/// (issue 39): the warnings of the render in place (they were printed unredacted), and
/// kustomize's own failure, which quotes the node it fails on (`node contents: [1,
/// "Hunter2-Escaped\x01-secret"]`, in the escaped form).
#[test]
fn secret_values_never_reach_warnings_or_kustomize_messages() {
    let good = "resources: [s.yaml, pkg.kurel]\n";
    let bad = "resources: [s.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: s}\n    stringData:\n      pw: [1, \"Hunter2-Escaped\\x01-secret\"]\n";
    for (kustomization, code) in [(None, 0), (Some(good), 0), (Some(bad), 1)] {
        let mut files = SECRET_APP.to_vec();
        if let Some(k) = kustomization {
            files.push(("apps/secrets/kustomization.yaml", k));
        }
        let o = Call {
            files: &files,
            ..Call::generate("apps/secrets")
        }
        .run();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{kustomization:?}: {err}");
        assert!(err.contains("[redacted]"), "{kustomization:?}: {err}");
        assert!(!err.contains("Hunter2"), "{kustomization:?}: {err}");
        let expected = if code == 0 {
            "KLN7028"
        } else {
            "node contents"
        };
        assert!(err.contains(expected), "{kustomization:?}: {err}");
    }
}

/// The kustomize build of an application directory is bounded (issue 39): one that runs past
/// the sidecar's time limit (`KILN_KUSTOMIZE_TIMEOUT`) or prints past what kiln reads back is
/// stopped, KLN1018, nothing on stdout; a time limit that is not a number is an error naming
/// the variable.
#[test]
fn the_kustomize_build_is_bounded_in_time_and_bytes() {
    use std::os::unix::fs::PermissionsExt;
    let d = tempfile::tempdir().unwrap();
    let files = [(
        "apps/web-kro/kustomization.yaml",
        "resources: [rgd.yaml, instances.yaml]\n",
    )];
    for (body, timeout, why) in [
        (
            "sleep 600",
            "1",
            "kustomize build did not finish within 1 s",
        ),
        (
            "yes 'a: 1'",
            "2m",
            "kustomize build printed more than 67108864 bytes, the limit (input-bytes)",
        ),
    ] {
        let fake = d.path().join("kustomize");
        std::fs::write(&fake, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let fake = fake.display().to_string();
        let extra_env = [
            ("KILN_KUSTOMIZE", fake.as_str()),
            ("KILN_KUSTOMIZE_TIMEOUT", timeout),
        ];
        let o = Call {
            files: &files,
            extra_env: &extra_env,
            ..Call::generate("apps/web-kro")
        }
        .run();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{body}: {err}");
        assert!(o.stdout.is_empty(), "{body}: {}", text(&o.stdout));
        assert!(
            err.contains("error[KLN1018]") && err.contains(why),
            "{body}: {err}"
        );
        assert!(!err.contains("--limit"), "{body}: {err}");
        no_temporary_path(&err);
    }
    let o = Call {
        files: &files,
        extra_env: &[("KILN_KUSTOMIZE_TIMEOUT", "soon")],
        ..Call::generate("apps/web-kro")
    }
    .run();
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(o.stdout.is_empty());
    assert!(
        err.contains("KILN_KUSTOMIZE_TIMEOUT") && err.contains("\"soon\""),
        "{err}"
    );
}

/// KUBE_VERSION is the destination cluster's version, which Argo CD sets for every plugin
/// (Argo CD's user guide, "Build Environment": `KUBE_VERSION`, "the version of Kubernetes"). A
/// cluster on another minor than kiln's bundled schemas renders (an upgrade of the cluster must
/// not fail every sync, under `strict` too: it is not the Application's choice) with a warning
/// naming both versions, so nobody believes the output was checked against the cluster's own
/// schemas (issue 40: docs/errors.md called it KLN1010 while kiln-cmp ignored it silently).
#[test]
fn a_cluster_on_another_version_renders_with_a_warning_naming_both() {
    let bundled = kiln_core::openapi::Schemas::kubernetes_version();
    for strict in ["false", "true"] {
        let params = format!(r#"[{{"name":"strict","string":"{strict}"}}]"#);
        let o = Call {
            parameters: Some(&params),
            extra_env: &[("KUBE_VERSION", "1.99.3")],
            ..Call::generate("apps/web-kro")
        }
        .run();
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "strict {strict}: {err}");
        assert!(!o.stdout.is_empty());
        assert!(err.contains("KLN1010"), "{err}");
        assert!(
            err.contains("\"1.99.3\"") && err.contains(&format!("Kubernetes {bundled}")),
            "{err}"
        );
    }
    // The bundled minor, with any patch, is no news.
    let patch = format!("v{bundled}.9");
    let o = Call {
        extra_env: &[("KUBE_VERSION", &patch)],
        ..Call::generate("apps/web-kro")
    }
    .run();
    assert_eq!(o.status.code(), Some(0));
    assert!(
        !text(&o.stderr).contains("KUBE_VERSION"),
        "{}",
        text(&o.stderr)
    );
}
