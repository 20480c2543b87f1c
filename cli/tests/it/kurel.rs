//! kurel packages through the real `kiln` binary: info, schema, logs, `-v`, `--strict`, `-o DIR`
//! layouts, path security and determinism. Rendering rules themselves are covered by the golden
//! cases under `testdata/kurel/` and `testdata/bad/kurel/`.

use crate::common::KILN;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common;
use common::{kiln, text};
#[cfg(target_os = "linux")]
use kiln_test_support::answering;

fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

fn monitoring() -> PathBuf {
    testdata().join("kurel/monitoring")
}

#[test]
fn render_logs_auto_enabled_patches_on_stderr_only() {
    let out = kiln(&monitoring(), &["render", "shop.kurel"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("enabling 05-metrics (required by 10-monitoring)"),
        "{err}"
    );
    assert!(!text(&out.stdout).contains("enabling"));
    assert!(!err.contains("applying"), "details only with -v: {err}");
    let out = kiln(&monitoring(), &["render", "-v", "shop.kurel"]);
    let err = text(&out.stderr);
    assert!(
        err.contains("applying features/10-monitoring.kpatch (monitoring.enabled = true)"),
        "{err}"
    );
    assert!(
        err.contains("10-monitoring.kpatch:2: service.shop:"),
        "{err}"
    );
}

#[test]
fn json_output_and_determinism() {
    let a = kiln(
        &monitoring(),
        &["render", "shop.kurel", "--output-format", "json"],
    );
    let b = kiln(
        &monitoring(),
        &["render", "shop.kurel", "--output-format", "json"],
    );
    assert!(a.status.success());
    assert_eq!(a.stdout, b.stdout, "same inputs, same bytes");
    let v: serde_json::Value = serde_json::from_slice(&a.stdout).unwrap();
    assert_eq!(v["kind"], "List");
    assert_eq!(v["items"][0]["spec"]["replicas"], 2);
    let y1 = kiln(&monitoring(), &["render", "shop.kurel", "-j", "1"]);
    let y2 = kiln(&monitoring(), &["render", "shop.kurel", "-j", "4"]);
    assert_eq!(y1.stdout, y2.stdout);
}

#[test]
fn info_lists_patches_with_reasons() {
    let out = kiln(&monitoring(), &["info", "shop.kurel"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let info = text(&out.stdout);
    for want in [
        "name: shop",
        "appVersion: \"1.4.0\"",
        "patch: features/05-metrics.kpatch",
        "why: required by 10-monitoring",
        "why: monitoring.enabled = true",
        "kind: Deployment",
        "replicas: 2",
    ] {
        assert!(info.contains(want), "missing {want:?} in\n{info}");
    }
    // A directory holding the package is read as `render` reads it: the package found is
    // described as it is alone, and the plain manifests beside it are named and skipped.
    let tree = kiln(&monitoring(), &["info", "."]);
    assert!(tree.status.success(), "{}", text(&tree.stderr));
    assert_eq!(text(&tree.stdout), info);
    assert!(
        text(&tree.stderr).contains("skipped 2 plain manifest(s)"),
        "{}",
        text(&tree.stderr)
    );
    let empty = tempfile::tempdir().unwrap();
    let out = kiln(empty.path(), &["info", "."]);
    assert_eq!(out.status.code(), Some(1), "no package");
    assert!(
        text(&out.stderr).contains("no kurel package found"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn schema_is_tightened_by_kubernetes_fields() {
    let out = kiln(
        &monitoring(),
        &["schema", "shop.kurel", "--output-format", "json"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // The format flag is honoured: YAML by default, the same schema.
    let yaml = kiln(&monitoring(), &["schema", "shop.kurel"]);
    assert!(yaml.status.success(), "{}", text(&yaml.stderr));
    let as_yaml =
        kiln_core::document::parse_file("schema.yaml", text(&yaml.stdout), &Default::default())
            .unwrap();
    assert_eq!(as_yaml[0].value, s);
    let replicas = &s["properties"]["app"]["properties"]["replicas"];
    assert_eq!(replicas["type"], "integer");
    assert_eq!(replicas["default"], 2);
    assert_eq!(replicas["format"], "int32");
    assert_eq!(
        replicas["x-kiln-used-at"][0],
        "apps/v1 Deployment spec.replicas"
    );
    assert_eq!(
        s["properties"]["monitoring"]["properties"]["enabled"]["type"],
        "boolean"
    );
    assert!(s["properties"].get("kurel").is_none());
    assert_eq!(s["additionalProperties"], false);
}

#[test]
fn strict_turns_warnings_into_errors() {
    // The prototype's simple package loads with warnings (kurel.yaml without appVersion).
    let dir = testdata().join("kurel/corpus/simple");
    let ok = kiln(&dir, &["render", "simple"]);
    assert!(ok.status.success());
    assert!(text(&ok.stderr).contains("KLN7003"));
    let strict = kiln(&dir, &["render", "--strict", "simple"]);
    assert_eq!(strict.status.code(), Some(1));
    assert!(
        strict.stdout.is_empty(),
        "no output with --strict and warnings"
    );
    let v = kiln(&dir, &["validate", "--strict", "simple"]);
    assert_eq!(v.status.code(), Some(1));
    let v = kiln(&dir, &["validate", "simple"]);
    assert!(v.status.success());
    assert!(
        text(&v.stderr).contains("ok: package simple-app 1.0.0"),
        "{}",
        text(&v.stderr)
    );
}

#[test]
fn output_directory_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = monitoring().join("shop.kurel");
    let pkg = pkg.to_str().unwrap();
    let cases: [(&str, &[&str]); 3] = [
        ("single", &["manifests.yaml"]),
        ("by-kind", &["deployment.yaml", "service.yaml"]),
        (
            "by-resource",
            &["deployment-shop.yaml", "service-shop.yaml"],
        ),
    ];
    for (layout, files) in cases {
        let out_dir = tmp.path().join(layout);
        let o = out_dir.to_str().unwrap();
        let r = kiln(tmp.path(), &["render", pkg, "-o", o, "--layout", layout]);
        assert!(r.status.success(), "{layout}: {}", text(&r.stderr));
        assert!(r.stdout.is_empty());
        let mut got: Vec<String> = fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| !n.starts_with('.'))
            .collect();
        got.sort();
        assert_eq!(got, files, "{layout}");
        assert!(out_dir.join(".kiln-output").is_file());
        // Rendering again replaces the directory with the same bytes.
        let first: Vec<Vec<u8>> = files
            .iter()
            .map(|f| fs::read(out_dir.join(f)).unwrap())
            .collect();
        let r = kiln(tmp.path(), &["render", pkg, "-o", o, "--layout", layout]);
        assert!(r.status.success());
        let second: Vec<Vec<u8>> = files
            .iter()
            .map(|f| fs::read(out_dir.join(f)).unwrap())
            .collect();
        assert_eq!(first, second);
    }
    // A directory kiln did not write is never clobbered.
    let theirs = tmp.path().join("theirs");
    fs::create_dir(&theirs).unwrap();
    fs::write(theirs.join("notes.txt"), "mine").unwrap();
    let r = kiln(tmp.path(), &["render", pkg, "-o", theirs.to_str().unwrap()]);
    assert_eq!(r.status.code(), Some(1));
    assert_eq!(
        fs::read_to_string(theirs.join("notes.txt")).unwrap(),
        "mine"
    );
    // An error leaves nothing behind.
    let bad = testdata().join("bad/kurel/conflict/app.kurel");
    let target = tmp.path().join("never");
    let r = kiln(
        tmp.path(),
        &[
            "render",
            bad.to_str().unwrap(),
            "-o",
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(!target.exists());
}

fn write(p: &Path, s: &str) {
    fs::create_dir_all(p.parent().unwrap()).unwrap();
    fs::write(p, s).unwrap();
}

/// A minimal valid package at `dir`.
fn minimal(dir: &Path) {
    write(
        &dir.join("parameters.yaml"),
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: x\n",
    );
    write(
        &dir.join("resources/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {mode: \"${mode}\"}\n",
    );
}

#[cfg(unix)]
#[test]
fn paths_outside_the_package_are_refused() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.yaml");
    write(
        &secret,
        "apiVersion: v1\nkind: Secret\nmetadata: {name: stolen}\n",
    );

    // A resource file that is a symlink out of the package.
    let a = tmp.path().join("a/app.kurel");
    minimal(&a);
    symlink(&secret, a.join("resources/link.yaml")).unwrap();
    // resources/ itself a symlink out of the package.
    let b = tmp.path().join("b/app.kurel");
    minimal(&b);
    fs::remove_dir_all(b.join("resources")).unwrap();
    fs::create_dir_all(tmp.path().join("elsewhere")).unwrap();
    fs::copy(&secret, tmp.path().join("elsewhere/s.yaml")).unwrap();
    symlink(tmp.path().join("elsewhere"), b.join("resources")).unwrap();
    // A patch that is a symlink out of the package.
    let c = tmp.path().join("c/app.kurel");
    minimal(&c);
    write(&tmp.path().join("p.kpatch"), "[configmap.app]\ndata.x: y\n");
    fs::create_dir_all(c.join("patches")).unwrap();
    symlink(tmp.path().join("p.kpatch"), c.join("patches/10-p.kpatch")).unwrap();
    // A local extension that is a symlink out of the directory holding the package.
    let d = tmp.path().join("d/app.kurel");
    minimal(&d);
    let ext = tmp.path().join("ext.local.kurel");
    write(&ext.join("parameters.yaml"), "mode: hijacked\n");
    symlink(&ext, tmp.path().join("d/app.local.kurel")).unwrap();
    // A file inside the local extension that leaves it.
    let e = tmp.path().join("e/app.kurel");
    minimal(&e);
    fs::create_dir_all(tmp.path().join("e/app.local.kurel")).unwrap();
    symlink(
        &secret,
        tmp.path().join("e/app.local.kurel/parameters.yaml"),
    )
    .unwrap();

    for pkg in [&a, &b, &c, &d, &e] {
        let out = kiln(
            tmp.path(),
            &["render", "--diagnostics", "json", pkg.to_str().unwrap()],
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}: {err}", pkg.display());
        assert!(out.stdout.is_empty());
        assert!(err.contains("KLN1002"), "{}: {err}", pkg.display());
        assert!(!text(&out.stdout).contains("stolen"));
    }

    // Values files are named by the person running kiln: `..`, absolute paths and symlinks
    // are theirs to name, and are read as given (only paths from inside inputs are confined).
    let work = tmp.path().join("work");
    minimal(&work.join("app.kurel"));
    let values = tmp.path().join("values.yaml");
    write(&values, "mode: from-values\n");
    symlink(&values, work.join("v.yaml")).unwrap();
    for v in ["../values.yaml", values.to_str().unwrap(), "v.yaml"] {
        let out = kiln(&work, &["render", "app.kurel", "--values", v]);
        assert_eq!(out.status.code(), Some(0), "{v}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("mode: from-values"), "{v}");
    }
}

#[test]
fn local_extension_is_found_next_to_the_package() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("app.kurel");
    minimal(&pkg);
    write(
        &tmp.path().join("app.local.kurel/parameters.yaml"),
        "mode: local\n",
    );
    write(
        &tmp.path().join("app.local.kurel/patches/10-extra.kpatch"),
        "[configmap.app]\ndata.extra: \"yes\"\n",
    );
    let out = kiln(tmp.path(), &["render", "app.kurel", "--set", "mode=cli"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let y = text(&out.stdout);
    assert!(
        y.contains("mode: cli") && y.contains("extra: \"yes\""),
        "{y}"
    );
    let out = kiln(tmp.path(), &["render", "app.kurel"]);
    assert!(text(&out.stdout).contains("mode: local"));
}

/// Every package of the prototype's corpus (`testdata/kurel/corpus/SOURCE.md`) loads; those the
/// prototype considered valid render (their goldens are under `testdata/kurel/corpus/`), the
/// others fail with the diagnostics in `testdata/bad/kurel/corpus-*`.
///
/// corpus_differences — where kiln's output differs from the prototype's, and why (the prototype's
/// documented bugs, see the kurel reference):
///
/// - simple: the prototype parsed resources with `${…}` as "template resources" and silently
///   skipped patches on them, so it rendered `replicas: 3` without `DEBUG`; kiln applies
///   `production.toml` (replicas 5) and `debug.toml` (env DEBUG, a YAML flow value). Patch files
///   without metadata apply in name order (debug before production), not Go map order.
/// - complex: `production.toml`'s header spells the full path
///   (`[deployment.complex-app.spec.template.spec.containers.0]`), which the prototype expanded a
///   second time (`spec.template.spec.spec.template.spec…`); kiln applies it to the container.
///   `monitoring.toml`'s `metadata.annotations.prometheus.io/scrape` sets the annotation
///   `prometheus.io/scrape` (annotations are a string map), not a nested `prometheus: {io/scrape}`.
/// - extensions: the prototype's `production.local.kurel` *file* is not read (warning KLN7028);
///   `extensions-local` shows the same customisation as a design-style directory.
/// - all: metadata in `kurel.yaml` lacks `appVersion` (warning KLN7003); unknown metadata keys
///   (`labels`, `annotations`, `tags`, …) are reported, not silently ignored; `${kurel.*}` resolves
///   from `kurel.yaml` too; output keeps source key order instead of sorting keys.
/// - frigate: the example ships no resources, so every patch target is unmatched: an error in kiln
///   (KLN7018), a silent no-op in the prototype.
/// - cert-manager examples: `advanced.kpatch` sets `image.repository` on a string, targets an
///   Ingress that does not exist and selects a container by an image that does not match; the
///   prototype swallowed these per-operation failures, kiln reports each one.
/// - invalid: rejected by both, kiln reports every problem at once.
#[test]
fn corpus_packages_load() {
    let corpus = testdata().join("kurel/corpus");
    for (case, pkg) in [
        ("simple", "simple"),
        ("complex", "complex"),
        ("extensions", "extensions"),
        ("extensions-local", "extensions"),
        ("kubernetes", "resources.kurel"),
    ] {
        let out = kiln(&corpus.join(case), &["info", pkg]);
        assert!(out.status.success(), "{case}: {}", text(&out.stderr));
    }
    let bad = testdata().join("bad/kurel");
    for (case, pkg) in [
        ("corpus-frigate", "frigate"),
        ("corpus-cert-manager", "cert-manager.kurel"),
    ] {
        let out = kiln(&bad.join(case), &["info", pkg]);
        assert!(out.status.success(), "{case} loads: {}", text(&out.stderr));
    }
    let out = kiln(&bad.join("corpus-invalid"), &["info", "invalid"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the prototype's invalid package is invalid"
    );
}

/// `kiln info` reports what is wrong with a package's patch structure, as `render` does: a
/// `requires` naming no patch is KLN7015 with exit 1 (the package is still described: info is not a
/// manifest) (issue 30: a mutant that ignored structure errors in `enablement::plan` survived).
#[test]
fn info_reports_a_missing_requirement() {
    let dir = testdata().join("bad/kurel/requires-missing");
    let out = kiln(&dir, &["info", "app.kurel"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("KLN7015"),
        "{}",
        text(&out.stderr)
    );
}

/// `--max-depth` sets how deep variable references may nest: the golden case that fails at the
/// default depth of 10 renders with a larger one, and a smaller one fails earlier.
#[test]
fn max_depth_is_configurable() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/bad/kurel/variable-too-deep");
    let o = kiln(&dir, &["render", "app.kurel"]);
    assert_eq!(o.status.code(), Some(1));
    let o = kiln(&dir, &["render", "--max-depth", "20", "app.kurel"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!o.stdout.is_empty());
    let o = kiln(&dir, &["render", "--max-depth", "3", "app.kurel"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("maximum depth of 3"));
    let o = kiln(&dir, &["render", "--max-depth", "0", "app.kurel"]);
    assert_eq!(o.status.code(), Some(2));
}

/// A package of a ConfigMap and a Deployment named after `${name}`, with a monitoring patch that
/// requires a labels patch, and `n` instance files under `instances/` (every third one
/// monitored), all under `dir`.
fn fleet(dir: &Path, n: usize) {
    let pkg = dir.join("app.kurel");
    write(
        &pkg.join("parameters.yaml"),
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\n\
         name: app\nreplicas: 1\nmode: base\nmonitoring: {enabled: false}\n",
    );
    write(
        &pkg.join("resources/app.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"${name}\"}\n\
         data: {mode: \"${mode}\"}\n---\n\
         apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: \"${name}\"}\n\
         spec:\n  replicas: ${replicas}\n  selector: {matchLabels: {app: \"${name}\"}}\n\
         \x20 template:\n    metadata: {labels: {app: \"${name}\"}}\n\
         \x20   spec: {containers: [{name: main, image: \"nginx:1.27\"}]}\n",
    );
    write(
        &pkg.join("patches/05-labels.kpatch"),
        "[deployment.${name}]\nmetadata.labels.monitored: \"yes\"\n",
    );
    write(&pkg.join("patches/05-labels.yaml"), "enabled: false\n");
    write(
        &pkg.join("patches/10-monitoring.kpatch"),
        "[deployment.${name}]\nmetadata.annotations.prometheus.io/scrape: \"true\"\n",
    );
    write(
        &pkg.join("patches/10-monitoring.yaml"),
        "enabled: ${monitoring.enabled}\nrequires: [05-labels]\n",
    );
    for i in 0..n {
        write(
            &dir.join(format!("instances/app-{i:03}.yaml")),
            &format!(
                "name: app-{i:03}\nreplicas: {}\nmonitoring: {{enabled: {}}}\n",
                1 + i % 4,
                i % 3 == 0
            ),
        );
    }
}

/// Issue 6: many instances of one package in one process give the same bytes whatever the
/// number of threads, and instance i's part of the output is exactly what a single render with
/// its file as the last `--values` gives (the instance file sits between `--values` and `--set`).
#[test]
fn instances_render_identically_with_1_and_4_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path(), 60);
    write(
        &tmp.path().join("common.yaml"),
        "mode: fleet\nreplicas: 9\n",
    );
    let args = |jobs: &'static str, format: &'static str| {
        [
            "render",
            "app.kurel",
            "--instances",
            "instances",
            "--values",
            "common.yaml",
            "--set",
            "mode=forced",
            "--output-format",
            format,
            "-j",
            jobs,
        ]
    };
    for format in ["yaml", "json"] {
        let one = kiln(tmp.path(), &args("1", format));
        assert!(one.status.success(), "{}", text(&one.stderr));
        let four = kiln(tmp.path(), &args("4", format));
        assert!(four.status.success(), "{}", text(&four.stderr));
        assert!(!one.stdout.is_empty());
        assert!(
            one.stdout == four.stdout,
            "{format}: output depends on --jobs"
        );
        assert_eq!(one.stderr, four.stderr, "{format}: logs depend on --jobs");
    }

    // The same objects, but for the provenance annotation naming the instance: a fleet
    // instance is its values file, a single render is the package itself.
    let mut fleet_args = args("4", "yaml").to_vec();
    fleet_args.push("--no-provenance");
    let all = text(&kiln(tmp.path(), &fleet_args).stdout);
    let mut expected = String::new();
    for i in 0..60 {
        let file = format!("instances/app-{i:03}.yaml");
        let one = kiln(
            tmp.path(),
            &[
                "render",
                "app.kurel",
                "--values",
                "common.yaml",
                "--values",
                &file,
                "--set",
                "mode=forced",
                "--no-provenance",
            ],
        );
        assert!(one.status.success(), "{file}: {}", text(&one.stderr));
        if i > 0 {
            expected.push_str("---\n");
        }
        expected.push_str(&text(&one.stdout));
    }
    assert!(
        all == expected,
        "a fleet render is the single renders joined"
    );
    assert!(all.contains("mode: forced") && all.contains("replicas: 2"));
    assert_eq!(all.matches("kind: Deployment").count(), 60);
}

/// The files of `--instances` (and of `--values`) count towards the size of a run: a small
/// package rendered for 200 instances gets a worker a core (`kiln_core::process::worker_pool`).
#[cfg(target_os = "linux")]
#[test]
fn instances_count_towards_the_size_of_a_run() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path(), 200);
    let a = answering::while_answering(
        std::process::Command::new(KILN)
            .current_dir(tmp.path())
            .args(["render", "app.kurel", "--instances", "instances"]),
        b"",
    );
    assert!(a.output.status.success(), "{}", text(&a.output.stderr));
    assert_eq!(a.threads, answering::a_worker_a_core());
}

#[test]
fn instances_log_validate_and_layouts() {
    let tmp = tempfile::tempdir().unwrap();
    fleet(tmp.path(), 6);
    // Subdirectories, hidden files and other extensions are not instances.
    write(&tmp.path().join("instances/old/app-x.yaml"), "name: x\n");
    write(&tmp.path().join("instances/.app-y.yaml"), "name: y\n");
    write(&tmp.path().join("instances/README.md"), "# fleet\n");
    let out = kiln(
        tmp.path(),
        &["render", "app.kurel", "--instances", "instances", "-v"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    // An auto-enable several instances share is logged once, naming them.
    assert!(
        err.contains(
            "instances instances/app-000.yaml and instances/app-003.yaml: enabling 05-labels \
             (required by 10-monitoring)"
        ),
        "{err}"
    );
    assert!(
        err.contains("instances/app-003.yaml: applying 10-monitoring.kpatch"),
        "{err}"
    );
    let y = text(&out.stdout);
    assert_eq!(y.matches("kind: ConfigMap").count(), 6);
    assert!(!y.contains("name: x") && !y.contains("name: y"));

    let v = kiln(
        tmp.path(),
        &["validate", "app.kurel", "--instances", "instances"],
    );
    assert!(v.status.success(), "{}", text(&v.stderr));
    assert!(
        text(&v.stderr).contains("ok: package app 1.0.0: 6 instance(s), 12 resource(s)"),
        "{}",
        text(&v.stderr)
    );

    let dir = tmp.path().join("out");
    let r = kiln(
        tmp.path(),
        &[
            "render",
            "app.kurel",
            "--instances",
            "instances",
            "-o",
            dir.to_str().unwrap(),
            "--layout",
            "by-resource",
        ],
    );
    assert!(r.status.success(), "{}", text(&r.stderr));
    assert!(dir.join("deployment-app-005.yaml").is_file());
    assert!(dir.join("configmap-app-000.yaml").is_file());

    // A duplicate identity fails the run: nothing on stdout, nothing written.
    write(
        &tmp.path().join("instances/app-999.yaml"),
        "name: app-001\n",
    );
    let target = tmp.path().join("never");
    let r = kiln(
        tmp.path(),
        &[
            "render",
            "app.kurel",
            "--instances",
            "instances",
            "-o",
            target.to_str().unwrap(),
        ],
    );
    assert_eq!(r.status.code(), Some(1));
    assert!(text(&r.stderr).contains("KLN7030"), "{}", text(&r.stderr));
    assert!(!target.exists());
    let r = kiln(
        tmp.path(),
        &["validate", "app.kurel", "--instances", "instances"],
    );
    assert_eq!(r.status.code(), Some(1));
}

#[test]
fn instances_directory_is_read_where_the_user_names_it() {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    fleet(&work, 1);
    fs::create_dir_all(tmp.path().join("outside")).unwrap();
    write(&tmp.path().join("outside/one.yaml"), "{}\n");
    // `..` is the user's to name: the directory outside the working directory is read.
    let out = kiln(&work, &["render", "app.kurel", "--instances", "../outside"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(!out.stdout.is_empty());
    let out = kiln(
        &work,
        &[
            "render",
            "app.kurel",
            "--instances",
            "missing",
            "--diagnostics",
            "json",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("KLN1001"),
        "{}",
        text(&out.stderr)
    );
    // An empty directory renders nothing, with a warning; --strict makes that an error.
    fs::create_dir_all(work.join("none")).unwrap();
    let out = kiln(&work, &["render", "app.kurel", "--instances", "none"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("holds no instance files"));
    let out = kiln(
        &work,
        &["render", "app.kurel", "--instances", "none", "--strict"],
    );
    assert_eq!(out.status.code(), Some(1));
}

/// Issue 38.5: values files beside a package (`cache.kurel/` + `values/prod.yaml`, the layout of
/// testdata/argocd/repo/apps/cache). The values file used to be read as a manifest (KLN1006:
/// no apiVersion), so rendering the directory failed even with `--set`. A `values/` directory
/// beside a package now holds the package's values files: never manifests, used when named, and
/// named in a warning when the render uses none of them (it renders the defaults).
#[test]
fn values_files_beside_a_package_are_values_not_manifests() {
    let dir = testdata().join("argocd/repo/apps");
    let out = kiln(&dir, &["render", "cache"]);
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("KLN7022"), "{err}");
    assert!(
        err.contains("cache/values/prod.yaml") && err.contains("--values"),
        "{err}"
    );
    assert!(text(&out.stdout).contains("replicas: 1"), "the defaults");
    let out = kiln(
        &dir,
        &["render", "cache", "--values", "cache/values/prod.yaml"],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("KLN7022"), "{err}");
    assert!(text(&out.stdout).contains("replicas: 3"));
    let out = kiln(&dir, &["render", "cache", "--set", "replicas=2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("replicas: 2"));
    // Strict makes the unused values files fatal, as any warning.
    let out = kiln(&dir, &["render", "cache", "--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
}
