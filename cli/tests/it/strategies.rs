//! Direct and kro mode agree, over every case of the kro corpus: rendering what `--mode kro`
//! emits (the RGDs and the defaulted instances) in direct mode gives the same objects as rendering
//! the originals; and kro mode's output, generated CRDs included, passes
//! `kubernetes-validate --strict` for the kinds it knows. Also the usage rules of the mode flags
//! and of `kiln status`.

use crate::common;
use crate::common::KILN;

use common::validator;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn kiln_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut c = Command::new(KILN);
    c.current_dir(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("kiln runs");
    if let Some(input) = stdin {
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
    } else {
        drop(child.stdin.take());
    }
    child.wait_with_output().unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).to_string()
}

/// The corpus cases that render: every folder with an instance and an expected output.
fn corpus_cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = ["testdata/corpus/kro", "testdata/corpus/kro-extra"]
        .iter()
        .flat_map(|d| std::fs::read_dir(root().join(d)).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected.yaml").exists())
        .collect();
    cases.sort();
    cases
}

/// The case's input files, as the golden harness names them.
fn inputs(case: &Path) -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(case)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| !n.starts_with("expected") && (n.ends_with(".yaml") || n.ends_with(".yml")))
        .collect();
    files.sort();
    files
}

/// `kiln render --namespace default FLAGS... FILES...` in a corpus case; it must succeed.
fn render_case(case: &Path, flags: &[&str]) -> Output {
    let files = inputs(case);
    let mut args: Vec<&str> = vec!["render", "--namespace", "default"];
    args.extend(flags);
    args.extend(files.iter().map(String::as_str));
    let o = kiln_in(case, &args, None);
    assert!(
        o.status.success(),
        "{} {flags:?}: {}",
        case.display(),
        text(&o.stderr)
    );
    o
}

/// Documents of a YAML stream, each as canonical JSON, sorted: the same objects in any order.
fn objects(yaml: &str) -> Vec<String> {
    let docs = kiln_core::document::parse_file("out.yaml", yaml.to_string(), &Default::default())
        .expect("kiln prints YAML it can read");
    let mut v: Vec<String> = docs
        .into_iter()
        .map(|d| serde_json::to_string(&d.value).unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn kro_mode_round_trips_to_the_same_objects_over_the_corpus() {
    let cases = corpus_cases();
    assert!(cases.len() >= 30, "{} corpus cases", cases.len());
    for case in &cases {
        let direct = render_case(case, &[]);
        let shipped = render_case(case, &["--mode", "kro"]);
        let shipped_text = text(&shipped.stdout);
        // Nothing is rendered client-side: the RGDs and instances are what ships.
        assert!(
            !shipped_text.contains("kiln.dev/node"),
            "{}: kro mode rendered objects:\n{shipped_text}",
            case.display()
        );
        assert!(shipped_text.contains("kind: ResourceGraphDefinition"));

        let again = kiln_in(
            case,
            &["render", "--namespace", "default", "-"],
            Some(&shipped.stdout),
        );
        assert!(
            again.status.success(),
            "{}: {}",
            case.display(),
            text(&again.stderr)
        );
        assert_eq!(
            objects(&text(&again.stdout)),
            objects(&text(&direct.stdout)),
            "{}: rendering the shipped RGDs and instances differs from rendering the originals",
            case.display()
        );
    }
}

#[test]
fn kro_mode_output_passes_kubernetes_validate() {
    let exe = validator();
    let out = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    let mut cases = corpus_cases();
    cases.push(root().join("testdata/strategies/kro-mode"));
    for (i, case) in cases.iter().enumerate() {
        let o = render_case(case, &["--mode", "kro", "--emit-crds", "--sync-waves"]);
        let f = out.path().join(format!("kro-{i:02}.yaml"));
        std::fs::write(&f, &o.stdout).unwrap();
        files.push(f);
    }
    let o = Command::new(&exe)
        .arg("--strict")
        .args(&files)
        .output()
        .expect("kubernetes-validate runs");
    let report = text(&o.stdout) + &text(&o.stderr);
    assert!(o.status.success(), "{report}");
    // Every generated CRD was recognised and checked, not skipped.
    let passed = report
        .lines()
        .filter(|l| l.contains("passed for resource customresourcedefinition/"))
        .count();
    assert!(passed >= cases.len(), "{passed} CRDs checked:\n{report}");
}

#[test]
fn kro_mode_orders_crds_then_definitions_then_instances() {
    let case = root().join("testdata/strategies/kro-mode");
    let o = kiln_in(
        &case,
        &[
            "render",
            "--namespace",
            "default",
            "--mode",
            "kro",
            "--emit-crds",
            "--sync-waves",
            "--output-format",
            "json",
            "rgds.yaml",
            "shop.yaml",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let list: Value = serde_json::from_slice(&o.stdout).unwrap();
    let kinds: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "CustomResourceDefinition",
            "ResourceGraphDefinition",
            "ResourceGraphDefinition",
            "ResourceGraphDefinition",
            "ResourceGraphDefinition",
            "Shop"
        ]
    );
}

#[test]
fn mode_flags_without_kro_mode_are_a_usage_error() {
    let case = root().join("testdata/strategies/kro-mode");
    let o = kiln_in(
        &case,
        &["render", "--emit-crds", "rgds.yaml", "shop.yaml"],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("emit-crds given in direct mode"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn observed_state_and_inputs_cannot_both_be_stdin() {
    let case = root().join("testdata/strategies/external-refs");
    let o = kiln_in(
        &case,
        &["render", "--observed", "-", "rgd.yaml", "-"],
        Some(b""),
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("both name stdin"));
    // Observed state from stdin alone is fine.
    let live = std::fs::read(case.join("observed/configmaps.yaml")).unwrap();
    let mut all = live;
    all.extend_from_slice(b"---\n");
    all.extend(std::fs::read(case.join("observed/services.yaml")).unwrap());
    let o = kiln_in(
        &case,
        &["render", "--observed", "-", "rgd.yaml", "instance.yaml"],
        Some(&all),
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("domain: acme.example.com"));
}

#[test]
fn status_needs_observed_state_and_instances() {
    let case = root().join("testdata/strategies/status");
    // clap refuses a missing --observed.
    let o = kiln_in(&case, &["status", "rgd.yaml", "instances.yaml"], None);
    assert_eq!(o.status.code(), Some(2));
    // Definitions without instances: nothing to hydrate.
    let o = kiln_in(
        &case,
        &["status", "--observed", "observed", "rgd.yaml"],
        None,
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    // stderr names what is not ready, for people.
    let o = kiln_in(
        &case,
        &[
            "status",
            "-n",
            "default",
            "--observed",
            "observed",
            "rgd.yaml",
            "instances.yaml",
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(err.contains("WebApp default/green: IN_PROGRESS"), "{err}");
    assert!(
        err.contains("not ready: service: not observed: Service/default/green"),
        "{err}"
    );
}

#[test]
fn provenance_is_on_by_default_and_off_with_a_flag() {
    let case = root().join("testdata/strategies/nested-two-level");
    let args = [
        "render",
        "-n",
        "default",
        "--observed",
        "observed",
        "rgds.yaml",
        "shop.yaml",
    ];
    let on = kiln_in(&case, &args, None);
    assert!(on.status.success(), "{}", text(&on.stderr));
    let on = text(&on.stdout);
    assert!(
        on.contains("kiln.dev/nested-in: Shop/default/books#web"),
        "{on}"
    );
    let mut off_args = args.to_vec();
    off_args.push("--no-provenance");
    let off = kiln_in(&case, &off_args, None);
    assert!(off.status.success());
    assert!(!text(&off.stdout).contains("kiln.dev/"));
}

#[test]
fn graph_shows_which_resources_are_nested_instances() {
    let case = root().join("testdata/strategies/nested-two-level");
    let o = kiln_in(&case, &["graph", "--format", "json", "rgds.yaml"], None);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let nested = |name: &str| -> Vec<(String, String)> {
        v["graphs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["name"] == name)
            .unwrap()["nested"]
            .as_array()
            .unwrap()
            .iter()
            .map(|n| {
                (
                    n["node"].as_str().unwrap().to_string(),
                    n["definition"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        nested("shop"),
        [
            ("database".to_string(), "database".to_string()),
            ("web".to_string(), "storefront".to_string())
        ]
    );
    assert_eq!(
        nested("storefront"),
        [("cache".to_string(), "cache".to_string())]
    );
    assert!(nested("cache").is_empty());
}
