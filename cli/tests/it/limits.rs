//! `--limit NAME=VALUE` through the real `kiln` binary: every limit, lowered, stops a run that
//! passes with the defaults, with its own code, exit 1 and nothing on stdout (or in `-o DIR`);
//! raised, it lets a run through that the default stops; a bad setting is a usage error (exit 2)
//! on every command. The defaults themselves are covered by the golden cases under
//! `testdata/bad/`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;
use common::{copy_dir, kiln, text, write};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The codes of the errors in a `--diagnostics json` report.
fn codes(out: &Output) -> Vec<String> {
    let v: serde_json::Value = serde_json::from_slice(&out.stderr)
        .unwrap_or_else(|e| panic!("stderr is not JSON ({e}): {}", text(&out.stderr)));
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

/// `args` succeed as they are; with `--limit limit` they fail with `code` (and only that code),
/// exit 1, nothing on stdout, and a message that gives the lowered number.
fn stops(dir: &Path, args: &[&str], limit: &str, code: &str) -> Output {
    let ok = kiln(dir, args);
    assert_eq!(
        ok.status.code(),
        Some(0),
        "{args:?} fails without --limit: {}",
        text(&ok.stderr)
    );
    let mut all = args.to_vec();
    all.extend(["--limit", limit, "--diagnostics", "json"]);
    let out = kiln(dir, &all);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{limit}: {err}");
    assert!(out.stdout.is_empty(), "{limit}: partial output");
    let got = codes(&out);
    assert!(
        !got.is_empty() && got.iter().all(|c| c == code),
        "{limit}: expected {code}, got {got:?}: {err}"
    );
    out
}

const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: apps}
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    group: example.com
    spec:
      items: "[]string | default=[\"a\", \"b\", \"c\"]"
  resources:
    - id: config
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data:
          joined: ${schema.spec.items.map(i, i + "-x").join(",")}
          nested: ${string(size([[[[[1]]]]]))}
    - id: perItem
      forEach:
        - entry: ${schema.spec.items}
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name + '-' + entry}"}
"#;

const INSTANCE: &str = "apiVersion: example.com/v1alpha1
kind: App
metadata: {name: shop, namespace: web}
spec: {}
";

/// A kro definition and instance, plus a plain document with nesting, nodes and aliases.
fn kro_inputs() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "rgd.yaml", RGD);
    write(tmp.path(), "instance.yaml", INSTANCE);
    write(
        tmp.path(),
        "plain.yaml",
        "apiVersion: v1
kind: Pod
metadata: {name: plain, namespace: web}
spec:
  containers:
  - name: a
    image: busybox
    env: &x [{name: A, valueFrom: {fieldRef: {fieldPath: metadata.name}}}]
  - {name: b, image: busybox, env: *x}
  - {name: c, image: busybox, env: *x}
",
    );
    tmp
}

#[test]
fn every_reading_limit_stops_kro_inputs() {
    let tmp = kro_inputs();
    let d = tmp.path();
    let args = ["render", "."];
    let out = stops(d, &args, "input-bytes=200", "KLN1005");
    assert!(text(&out.stderr).contains("limit of 200 bytes"));
    let out = stops(d, &args, "documents=2", "KLN1005");
    assert!(text(&out.stderr).contains("more than the limit of 2"));
    let out = stops(d, &args, "yaml-depth=4", "KLN1005");
    assert!(text(&out.stderr).contains("limit of 4 levels"));
    stops(d, &args, "yaml-nodes=12", "KLN1005");
    let out = stops(d, &args, "alias-nodes=5", "KLN1005");
    assert!(text(&out.stderr).contains("more than 5 nodes"));
    let out = stops(d, &args, "aliases=1", "KLN1005");
    assert!(text(&out.stderr).contains("more than 1 aliases"));
    // The hint names the limit to raise.
    let out = stops(d, &args, "aliases=1", "KLN1005");
    assert!(text(&out.stderr).contains("--limit aliases=N"));
    // --crds is read with the same limits (the inputs are smaller than the CRD file).
    let padding = format!("# {}\n", "x".repeat(2000));
    write(
        d,
        "crds/crd.yaml",
        &format!("{padding}apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c}}\n"),
    );
    let args = ["render", "rgd.yaml", "instance.yaml", "--crds", "crds"];
    let out = stops(d, &args, "input-bytes=1500", "KLN1005");
    assert!(text(&out.stderr).contains("crd.yaml"));
}

#[test]
fn every_expression_limit_stops_kro() {
    let tmp = kro_inputs();
    let d = tmp.path();
    let args = ["render", "."];
    let out = text(&kiln(d, &args).stdout);
    assert!(
        out.contains("joined: a-x,b-x,c-x") && out.contains("name: shop-c"),
        "{out}"
    );
    // Only the `map(…).join(…)` expression is longer than 40 bytes.
    let out = stops(d, &args, "expression-length=40", "KLN3006");
    assert!(text(&out.stderr).contains("over the limit of 40"));
    let out = stops(d, &args, "expression-nesting=3", "KLN3006");
    assert!(text(&out.stderr).contains("limit of 3 levels"));
    // `string(size([[[[[1]]]]]))` is eight levels deep, the `map(…).join(…)` nine.
    let out = stops(d, &args, "expression-depth=7", "KLN3006");
    assert!(text(&out.stderr).contains("more than 7 levels deep"));
    // `map` over three items, then join: a few units of work and a string of 11 bytes.
    let out = stops(d, &args, "eval-cost=2", "KLN5007");
    assert!(text(&out.stderr).contains("(the evaluation budget)"));
    stops(d, &args, "value-bytes=8", "KLN5007");
    let out = stops(d, &args, "collection-size=2", "KLN5005");
    assert!(text(&out.stderr).contains("maximum collection size of 2"));
    // validate and graph load the same definitions with the same limits.
    let out = kiln(
        d,
        &[
            "validate",
            ".",
            "--limit",
            "expression-length=40",
            "--diagnostics",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(codes(&out).iter().all(|c| c == "KLN3006"));
    let out = kiln(
        d,
        &[
            "graph",
            "rgd.yaml",
            "--limit",
            "expression-nesting=3",
            "--diagnostics",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(codes(&out).iter().all(|c| c == "KLN3006"));
}

#[test]
fn raising_a_limit_lets_the_run_through() {
    let case = root().join("testdata/bad/hostile/foreach-over-cap");
    let out = kiln(&case, &["render", "--namespace", "default", "."]);
    assert_eq!(out.status.code(), Some(1));
    let out = kiln(
        &case,
        &[
            "render",
            "--namespace",
            "default",
            ".",
            "--limit",
            "collection-size=2000",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout).matches("kind: ConfigMap").count(), 1001);
    // A later setting of the same limit wins.
    let out = kiln(
        &case,
        &[
            "render",
            "--namespace",
            "default",
            ".",
            "--limit",
            "collection-size=2000",
            "--limit",
            "collection-size=10",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn component_types_take_the_same_limits() {
    let case = root().join("testdata/component/foreach-and-schema");
    let args = [
        "render",
        "--env",
        "dev",
        "--namespace",
        "default",
        "inputs.yaml",
    ];
    stops(&case, &args, "input-bytes=100", "KLN1005");
    stops(&case, &args, "expression-length=10", "KLN3006");
    stops(&case, &args, "collection-size=1", "KLN5005");
    // `${tag.value.join(",")}`: the joined string is over 2 bytes.
    stops(&case, &args, "value-bytes=2", "KLN5007");
    stops(&case, &args, "output-bytes=100", "KLN1009");
}

#[test]
fn snapshots_take_the_same_limits() {
    let seed = root().join("testdata/component/seed-web-app");
    let tmp = tempfile::tempdir().unwrap();
    for f in ["01-web-app.yaml", "02-addons.yaml", "03-component.yaml"] {
        fs::copy(seed.join(f), tmp.path().join(f)).unwrap();
    }
    let create = [
        "snapshot",
        "create",
        "--component",
        "checkout-service",
        "--env",
        "production",
        ".",
    ];
    stops(tmp.path(), &create, "output-bytes=1Ki", "KLN1009");
    stops(tmp.path(), &create, "documents=2", "KLN1005");
    // Into a file: nothing is written either.
    let mut to_file = create.to_vec();
    to_file.extend(["-o", "snap.yaml"]);
    stops(tmp.path(), &to_file, "output-bytes=1Ki", "KLN1009");
    fs::remove_file(tmp.path().join("snap.yaml")).unwrap();
    let mut again = to_file.clone();
    again.extend(["--limit", "output-bytes=1Ki"]);
    assert_eq!(kiln(tmp.path(), &again).status.code(), Some(1));
    assert!(!tmp.path().join("snap.yaml").exists());
}

#[test]
fn kurel_packages_take_the_same_limits() {
    let case = root().join("testdata/kurel/variables");
    let args = ["render", "app.kurel"];
    stops(&case, &args, "input-bytes=50", "KLN1005");
    let out = stops(&case, &args, "variable-depth=1", "KLN7009");
    assert!(text(&out.stderr).contains("maximum depth of 1"));
    stops(&case, &args, "output-bytes=100", "KLN1009");
    // --max-depth is the same limit and wins over --limit.
    let out = kiln(
        &case,
        &[
            "render",
            "app.kurel",
            "--limit",
            "variable-depth=1",
            "--max-depth",
            "10",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // Values files are read with the same limits.
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("app.kurel");
    copy_dir(&case.join("app.kurel"), &pkg);
    write(
        tmp.path(),
        "values.yaml",
        "replicas: 3\nlabels: {team: a}\n",
    );
    stops(
        tmp.path(),
        &["render", "app.kurel", "--values", "values.yaml"],
        "yaml-depth=1",
        "KLN1005",
    );
}

#[test]
fn output_over_the_limit_is_not_written() {
    let example = root().join("examples/webapp");
    let d = example.as_path();
    let full = kiln(d, &["render", "."]);
    assert_eq!(full.status.code(), Some(0));
    let size = full.stdout.len();
    // Exactly the size passes; one byte less fails.
    let at = format!("output-bytes={size}");
    assert_eq!(
        kiln(d, &["render", ".", "--limit", &at]).stdout,
        full.stdout
    );
    let below = format!("output-bytes={}", size - 1);
    let out = stops(d, &["render", "."], &below, "KLN1009");
    assert!(
        text(&out.stderr).contains(&format!(
            "is {size} bytes, more than the limit of {}",
            size - 1
        )),
        "{}",
        text(&out.stderr)
    );
    // JSON output, validate's silence and every other command's stdout.
    stops(
        d,
        &["render", ".", "--output-format", "json"],
        "output-bytes=1Ki",
        "KLN1009",
    );
    let out = kiln(d, &["validate", ".", "--limit", "output-bytes=1"]);
    assert_eq!(out.status.code(), Some(0), "validate prints no output");
    stops(d, &["graph", "rgd.yaml"], "output-bytes=10", "KLN1009");
    stops(d, &["schema", "rgd.yaml"], "output-bytes=10", "KLN1009");
    // Human diagnostics say the same.
    let out = kiln(d, &["render", ".", "--limit", "output-bytes=1Ki"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        err.contains("KLN1009") && err.contains("--limit output-bytes="),
        "{err}"
    );

    // -o DIR: all files together count; an existing directory is left as it was.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("out");
    let webapp = example.to_string_lossy().to_string();
    let dir_arg = dir.to_string_lossy().to_string();
    let out = kiln(tmp.path(), &["render", &webapp, "-o", &dir_arg]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let before = fs::read_to_string(dir.join("manifests.yaml")).unwrap();
    let out = kiln(
        tmp.path(),
        &[
            "render",
            &webapp,
            "-o",
            &dir_arg,
            "--layout",
            "by-resource",
            "--limit",
            "output-bytes=1Ki",
            "--diagnostics",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(codes(&out), ["KLN1009"]);
    assert_eq!(
        fs::read_to_string(dir.join("manifests.yaml")).unwrap(),
        before
    );
    assert_eq!(
        fs::read_dir(&dir).unwrap().count(),
        2,
        "marker and manifests.yaml"
    );
    let leftovers: Vec<_> = fs::read_dir(tmp.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, ["out"]);
}

#[test]
fn bad_settings_are_usage_errors_on_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    let commands: [&[&str]; 7] = [
        &["render", "."],
        &["validate", "."],
        &["graph", "."],
        &["schema", "."],
        &["info", "."],
        &["snapshot", "create", "--component", "c", "--env", "e"],
        &["promote", "--from", "a", "--to", "b"],
    ];
    let bad = [
        ("nope=1", "unknown limit \"nope\""),
        ("documents", "expected NAME=VALUE"),
        ("documents=", "is not a number"),
        ("documents=many", "is not a number"),
        ("documents=1.5", "is not a number"),
        ("documents=-3", "is not a number"),
        ("documents=0", "must be at least 1"),
        ("output-bytes=3Xi", "is not a number"),
        ("output-bytes=99999999999Ti", "too large"),
        ("yaml-depth=513", "highest accepted value, 512"),
        ("expression-nesting=97", "highest accepted value, 96"),
        ("variable-depth=101", "highest accepted value, 100"),
    ];
    for cmd in commands {
        for (setting, why) in bad {
            let mut args = cmd.to_vec();
            args.extend(["--limit", setting]);
            let out = kiln(tmp.path(), &args);
            let err = text(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(out.stdout.is_empty());
            assert!(
                err.contains("--limit") && err.contains(why),
                "{args:?}: {err}"
            );
        }
    }
    // The unknown-name error lists the names; --help lists them with their defaults.
    let out = kiln(tmp.path(), &["render", "--limit", "nope=1"]);
    assert!(text(&out.stderr).contains("output-bytes"));
    let out = kiln(tmp.path(), &["render", "--help"]);
    let help = text(&out.stdout);
    for line in [
        "input-bytes=64Mi",
        "documents=100000",
        "yaml-depth=128",
        "yaml-nodes=5000000",
        "alias-nodes=500000",
        "aliases=10000",
        "expression-length=100000",
        "expression-nesting=64",
        "eval-cost=1000000",
        "value-bytes=10Mi",
        "collection-size=1000",
        "variable-depth=10",
        "output-bytes=1Gi",
    ] {
        assert!(help.contains(line), "--help lacks {line}:\n{help}");
    }
    // Good settings with suffixes are accepted.
    let out = kiln(
        &root().join("examples/webapp"),
        &[
            "render",
            ".",
            "--limit",
            "input-bytes=1Gi",
            "--limit",
            "eval-cost=2M",
            "--limit",
            "documents=10_000",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

/// issue 24: a long chain of binary operators has no brackets, yet its tree is as deep as the
/// chain is long, and every walk over the tree recursed once per link: 5,000 `+` of integers
/// aborted `kiln render` with a stack overflow, 4,000 `+` of strings aborted `kiln validate`. The
/// tree's depth is now a limit (`expression-depth`, KLN3006), checked before any walk.
#[test]
fn long_operator_chains_are_a_limit_not_a_crash() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let rgd = |expr: &str| {
        RGD.replace(
            "nested: ${string(size([[[[[1]]]]]))}",
            &format!("nested: ${{{expr}}}"),
        )
    };
    write(d, "instance.yaml", INSTANCE);
    let ints = format!("string({})", vec!["1"; 5000].join("+"));
    write(d, "ints.yaml", &rgd(&ints));
    let strings = vec!["\"a\""; 4000].join("+");
    write(d, "strings.yaml", &rgd(&strings));
    for args in [
        ["render", "ints.yaml", "instance.yaml"],
        ["validate", "strings.yaml", "ints.yaml"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--diagnostics", "json"]);
        let out = kiln(d, &all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: partial output");
        assert!(
            !codes(&out).is_empty() && codes(&out).iter().all(|c| c == "KLN3006"),
            "{args:?}: {err}"
        );
        assert!(err.contains("more than 250 levels deep"), "{err}");
    }
    // Raised within its cap, the same 5,000-term chain is still refused; the cap itself is
    // checked as a usage error.
    let out = kiln(
        d,
        &["validate", "ints.yaml", "--limit", "expression-depth=1001"],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
}
