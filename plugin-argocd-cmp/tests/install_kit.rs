//! The install kit in deploy/argocd/: the ConfigManagementPlugin Argo CD reads, the sidecar patch
//! and the Helm values (their Kubernetes objects pass `kubernetes-validate --strict`, installed by
//! scripts/kubernetes-validate.sh), and the example Applications.

use std::path::{Path, PathBuf};
use std::process::Command;

use kiln_core::document::{parse_file, YamlLimits};
use kiln_test_support::{tool, validator};
use serde_json::{json, Value};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn kit(name: &str) -> PathBuf {
    root().join("deploy/argocd").join(name)
}

fn yaml(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    parse_file(&path.display().to_string(), text, &YamlLimits::default())
        .unwrap()
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn validate_strict(files: &[PathBuf]) {
    let o = Command::new(validator())
        .arg("--strict")
        .args(files)
        .output()
        .unwrap();
    let report =
        String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{report}");
    assert_eq!(
        report.matches(" passed for resource ").count(),
        files.len(),
        "every file validated, none skipped:\n{report}"
    );
}

/// The fields of `spec` Argo CD's cmpserver reads (protocols: config.go).
const SPEC_FIELDS: &[&str] = &[
    "init",
    "generate",
    "discover",
    "parameters",
    "preserveFileMode",
    "provideGitCreds",
    "lockRepo",
    "allowConcurrency",
    "version",
];

#[test]
fn plugin_yaml_is_a_config_management_plugin_argo_cd_accepts() {
    let docs = yaml(&kit("plugin.yaml"));
    assert_eq!(docs.len(), 1);
    let p = &docs[0];
    assert_eq!(p["apiVersion"], "argoproj.io/v1alpha1");
    assert_eq!(p["kind"], "ConfigManagementPlugin");
    assert!(p["metadata"]["name"]
        .as_str()
        .is_some_and(|n| !n.is_empty()));
    let spec = p["spec"].as_object().unwrap();
    for k in spec.keys() {
        assert!(SPEC_FIELDS.contains(&k.as_str()), "unknown spec field {k}");
    }
    // No spec.version: it would change the plugin and socket names.
    assert!(spec.get("version").is_none());
    assert_eq!(
        p["spec"]["generate"]["command"],
        json!(["kiln-cmp", "generate"])
    );
    // No discovery: only Applications that name the plugin use it (see
    // repo_server::discovery_never_takes_over_an_application_it_should_not).
    assert!(spec.get("discover").is_none());
    assert_eq!(
        p["spec"]["parameters"]["dynamic"]["command"],
        json!(["kiln-cmp", "parameters"])
    );
    // The static list is the table's, in its order, with the defaults the binary applies.
    assert_eq!(
        p["spec"]["parameters"]["static"],
        kiln_cmp::parameters::static_announcement()
    );
    // The binary prints the same file.
    let o = Command::new(env!("CARGO_BIN_EXE_kiln-cmp"))
        .arg("plugin-yaml")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8(o.stdout).unwrap(),
        std::fs::read_to_string(kit("plugin.yaml")).unwrap()
    );
}

#[test]
fn the_helm_values_configure_the_same_plugin() {
    let plugin = &yaml(&kit("plugin.yaml"))[0];
    let values = &yaml(&kit("helm-values.yaml"))[0];
    let name = plugin["metadata"]["name"].as_str().unwrap();
    let cmp = &values["configs"]["cmp"]["plugins"][name];
    // The whole spec: commands, no discovery, the static parameters.
    assert_eq!(cmp, &plugin["spec"]);
}

/// The options table (kiln_cmp::options::OPTIONS) is the one source of the static parameters of
/// plugin.yaml and helm-values.yaml and of the options table of docs/argocd.md; the committed
/// files equal what kiln_cmp::kit writes from it (`KILN_BLESS=1` rewrites them).
#[test]
fn the_kit_and_docs_are_written_from_the_options_table() {
    let bless = std::env::var_os("KILN_BLESS").is_some();
    assert!(
        !(bless && std::env::var_os("CI").is_some()),
        "KILN_BLESS is refused under CI: it would turn every mismatch into a pass"
    );
    for file in [
        kit("plugin.yaml"),
        kit("helm-values.yaml"),
        root().join("docs/argocd.md"),
    ] {
        let text = std::fs::read_to_string(&file).unwrap();
        assert!(
            text.contains(kiln_cmp::kit::BEGIN),
            "{} has no generated part",
            file.display()
        );
        let want = kiln_cmp::kit::regenerate(&text).unwrap();
        if bless {
            std::fs::write(&file, &want).unwrap();
        } else {
            assert!(
                text == want,
                "{} differs from what kiln_cmp::kit writes from the options table: run KILN_BLESS=1 cargo test -p kiln-cmp --test install_kit",
                file.display()
            );
        }
    }
    // The docs table lists every parameter and plugin env name the binary reads.
    let docs = std::fs::read_to_string(root().join("docs/argocd.md")).unwrap();
    for o in kiln_cmp::options::OPTIONS {
        assert!(docs.contains(&format!("| `{}` (", o.param)), "{}", o.param);
        if let Some(e) = o.env {
            assert!(docs.contains(&format!("| `{e}`")), "{e}");
        }
    }
}

#[test]
fn the_sidecar_patch_and_helm_container_pass_kubernetes_validate_strict() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let k = tmp.path().join("k");
    std::fs::create_dir(&k).unwrap();
    std::fs::copy(
        root().join("testdata/argocd/install/repo-server.yaml"),
        k.join("repo-server.yaml"),
    )
    .unwrap();
    std::fs::copy(kit("repo-server-patch.yaml"), k.join("patch.yaml")).unwrap();
    std::fs::write(
        k.join("kustomization.yaml"),
        "resources: [repo-server.yaml]\npatches:\n- path: patch.yaml\n",
    )
    .unwrap();
    let o = Command::new(kubectl)
        .arg("kustomize")
        .arg(&k)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let patched = tmp.path().join("patched.yaml");
    std::fs::write(&patched, &o.stdout).unwrap();
    let d = &yaml(&patched)[0];
    let sidecar = d["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "kiln")
        .expect("the kiln sidecar");
    assert_eq!(
        sidecar["command"],
        json!(["/var/run/argocd/argocd-cmp-server"])
    );
    assert_eq!(sidecar["securityContext"]["runAsUser"], 999);
    let mounts: Vec<&str> = sidecar["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap())
        .collect();
    for m in ["/var/run/argocd", "/home/argocd/cmp-server/plugins", "/tmp"] {
        assert!(mounts.contains(&m), "{m} in {mounts:?}");
    }
    // The Helm chart's extra container, as a Pod with the chart's volumes.
    let values = &yaml(&kit("helm-values.yaml"))[0];
    let mut volumes = values["repoServer"]["volumes"].as_array().unwrap().clone();
    volumes.push(json!({"name": "var-files", "emptyDir": {}}));
    volumes.push(json!({"name": "plugins", "emptyDir": {}}));
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "kiln-sidecar"},
        "spec": {"containers": values["repoServer"]["extraContainers"], "volumes": volumes}});
    let pod_file = tmp.path().join("pod.json");
    std::fs::write(&pod_file, serde_json::to_string(&pod).unwrap()).unwrap();
    validate_strict(&[patched, pod_file]);
}

#[test]
fn the_example_applications_name_the_plugin_and_its_parameters() {
    let plugin = &yaml(&kit("plugin.yaml"))[0];
    let known: Vec<&str> = kiln_cmp::options::OPTIONS.iter().map(|o| o.param).collect();
    let mut envs = Vec::new();
    for e in std::fs::read_dir(kit("applications")).unwrap() {
        let a = &yaml(&e.unwrap().path())[0];
        assert_eq!(a["kind"], "Application");
        let p = &a["spec"]["source"]["plugin"];
        assert_eq!(p["name"], plugin["metadata"]["name"]);
        for param in p["parameters"].as_array().unwrap() {
            assert!(known.contains(&param["name"].as_str().unwrap()));
            if param["name"] == "environment" {
                envs.push(param["string"].as_str().unwrap().to_string());
            }
        }
    }
    envs.sort();
    assert_eq!(envs, ["development", "production"]);
}

use kiln_test_support::readme;

/// Issue 23.18: the install kit's README runs as it says: kiln-cmp installed from the checkout
/// prints the shipped plugin configuration and renders an application directory as the
/// repo-server runs it. `docker build` is not run here (no daemon): the Dockerfile it names is
/// checked to build kiln-cmp and ship kubectl and the plugin configuration.
#[test]
fn the_install_kit_runs_as_its_readme_says() {
    let d = tempfile::tempdir().unwrap();
    readme::copy_in("examples/webapp", d.path());
    let ran = readme::run(
        "deploy/argocd/README.md",
        d.path(),
        &[("kiln-cmp", env!("CARGO_BIN_EXE_kiln-cmp").into())],
        &["plugin-argocd-cmp"],
        &["docker"],
        &[],
    );
    assert_eq!(ran.len(), 2, "plugin-yaml and generate");
    assert_eq!(
        String::from_utf8_lossy(&ran[0].output.stdout),
        kiln_cmp::PLUGIN_YAML
    );
    let out = String::from_utf8_lossy(&ran[1].output.stdout);
    assert!(out.contains("kind: Deployment"), "{out}");
    let text =
        std::fs::read_to_string(kiln_test_support::repo().join("deploy/argocd/README.md")).unwrap();
    let docker = readme::sh_lines(&text)
        .into_iter()
        .find(|l| l.starts_with("docker build"))
        .expect("the README builds the image");
    assert!(docker.contains("-f deploy/argocd/Dockerfile"), "{docker}");
    let dockerfile =
        std::fs::read_to_string(kiln_test_support::repo().join("deploy/argocd/Dockerfile"))
            .unwrap();
    for needed in [
        "cargo build --release --locked -p kiln-cmp",
        "/usr/local/bin/kiln-cmp",
        "/usr/local/bin/kubectl",
        "COPY deploy/argocd/plugin.yaml /home/argocd/cmp-server/config/plugin.yaml",
    ] {
        assert!(dockerfile.contains(needed), "the Dockerfile lacks {needed}");
    }
}
