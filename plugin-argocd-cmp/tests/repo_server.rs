//! `kiln-cmp` as Argo CD's repo-server runs it (docs/argocd.md; the contract is CMP v2): a fresh
//! copy of the repository for every call, the application's path as working directory, stdin
//! closed, and only the environment Argo CD builds (`newEnv()`): the app's name, destination
//! namespace, revision, source, the cluster's version and API groups, `ARGOCD_ENV_*` from the
//! Application's plugin env, and `ARGOCD_APP_PARAMETERS` (JSON, or `null`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/argocd/repo")
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// One call of a plugin command on a fresh checkout, as the CMP server makes it.
struct Call<'a> {
    app: &'a str,
    command: &'a str,
    parameters: Option<&'a str>,
    plugin_env: &'a [(&'a str, &'a str)],
    extra_env: &'a [(&'a str, &'a str)],
}

impl<'a> Call<'a> {
    fn generate(app: &'a str) -> Self {
        Call {
            app,
            command: "generate",
            parameters: None,
            plugin_env: &[],
            extra_env: &[],
        }
    }

    fn run(&self) -> Output {
        let checkout = tempfile::tempdir().unwrap();
        copy_tree(&repo(), checkout.path());
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
        c.output().unwrap()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
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

#[test]
fn output_is_deterministic_and_no_undocumented_variable_reaches_it() {
    let a = ok(&Call {
        extra_env: &[
            ("SECRET_TOKEN", "s3cr3t-value"),
            ("ARGOCD_ENV_SECRET_TOKEN", "s3cr3t-value"),
        ],
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

#[test]
fn discover_matches_kiln_apps_only() {
    for app in ["apps/web-kro", "apps/checkout", "apps/cache"] {
        let o = Call {
            command: "discover",
            ..Call::generate(app)
        }
        .run();
        assert_eq!(o.status.code(), Some(0));
        assert!(!o.stdout.is_empty(), "{app}");
    }
    let o = Call {
        command: "discover",
        ..Call::generate("shared")
    }
    .run();
    assert_eq!(o.status.code(), Some(0));
    assert!(o.stdout.is_empty());
}
