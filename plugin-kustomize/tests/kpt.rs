//! kiln-krm driven by the real `kpt`: `fn eval --exec` with `--fn-config` and with
//! `-- key=value`, `fn render` with a Kptfile pipeline, and failures that leave files alone.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::*;
use kiln_test_support::{kpt_eval, kpt_render};

/// A copy of the kro package in a temporary directory, and the directory.
fn package() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("pkg");
    copy_dir(&testdata().join("krm/kro"), &pkg);
    (tmp, pkg)
}

/// A Kptfile in `pkg` whose pipeline runs `exe` as its one mutator, with `config` (the
/// mutator's other fields, indented under it) after the `exec:` line.
fn kptfile(pkg: &Path, exe: &Path, config: &str) {
    let head =
        "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: pkg\npipeline:\n  mutators:\n";
    let text = format!("{head}    - exec: {}\n{config}", exe.display());
    fs::write(pkg.join("Kptfile"), text).unwrap();
}

fn kpt(kpt: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    run(Command::new(kpt).args(args).current_dir(cwd), "")
}

#[test]
fn eval_with_fn_config_renders_beside_the_instances_and_keeps_other_files() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let cfg = tmp.path().join("render.yaml");
    fs::write(
        &cfg,
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: r}\nspec: {namespace: team}\n",
    )
    .unwrap();
    let before = tree(&pkg);
    let bin = bin();
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--fn-config", cfg.to_str().unwrap()])
        .output();
    assert!(o.status.success(), "{}", show(&o));
    let after = tree(&pkg);
    // Sources and unrelated files: byte for byte.
    for f in ["rgd.yaml", "apps/shop.yaml", "other/cm.yaml"] {
        assert_eq!(
            before[f],
            after[f],
            "{f} changed:\n{}",
            String::from_utf8_lossy(&after[f])
        );
    }
    let new: Vec<&String> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert_eq!(
        new,
        [
            "apps/configmap_blog-eu-west-1.yaml",
            "apps/configmap_shop-eu-west-1.yaml",
            "apps/deployment_blog.yaml",
            "apps/deployment_shop.yaml",
            "apps/service_blog.yaml",
            "apps/service_shop.yaml",
        ]
    );
    let shop = read(&pkg.join("apps/deployment_shop.yaml"));
    assert!(
        shop.contains("namespace: shop") && shop.contains("replicas: 3"),
        "{shop}"
    );
    assert!(
        shop.contains("kiln.dev/rendered-from: apps/shop.yaml"),
        "{shop}"
    );
    // The blog instance names no namespace: the configuration's applies.
    let blog = read(&pkg.join("apps/deployment_blog.yaml"));
    assert!(
        blog.contains("namespace: team") && blog.contains("replicas: 2"),
        "{blog}"
    );
    // No bookkeeping annotation of kpt's leaks into the files.
    assert!(!blog.contains("config.kubernetes.io"), "{blog}");

    // A second run replaces what the first rendered: nothing changes.
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--fn-config", cfg.to_str().unwrap()])
        .output();
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(tree(&pkg), after, "a second run changed the package");
}

#[test]
fn eval_with_key_value_arguments() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let bin = bin();
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--", "namespace=from-args", "strict=false"])
        .output();
    assert!(o.status.success(), "{}", show(&o));
    let blog = read(&pkg.join("apps/service_blog.yaml"));
    assert!(blog.contains("namespace: from-args"), "{blog}");
}

#[test]
fn an_invalid_instance_fails_with_a_result_and_changes_nothing() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let shop = pkg.join("apps/shop.yaml");
    fs::write(&shop, read(&shop).replace("replicas: 3", "replicas: 50")).unwrap();
    let before = tree(&pkg);
    let bin = bin();
    let results = tmp.path().join("results");
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--results-dir", results.to_str().unwrap()])
        .output();
    assert!(!o.status.success(), "{}", show(&o));
    assert_eq!(tree(&pkg), before, "files changed on failure");
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        all.contains("[error] example.com/v1alpha1/WebApp/shop/shop spec.replicas: KLN5001"),
        "{all}"
    );
    let r = read(&results.join("results.yaml"));
    assert!(r.contains("path: apps/shop.yaml"), "{r}");
    assert!(r.contains("severity: error"), "{r}");
}

#[test]
fn bad_configuration_and_escaping_paths_fail_without_changes() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let before = tree(&pkg);
    let bin = bin();
    for (args, expect) in [
        (vec!["--", "colour=red"], "unknown option \\\"colour\\\""),
        (vec!["--", "paths=../outside"], "KLN1002"),
    ] {
        let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
            .args(args)
            .output();
        assert!(!o.status.success(), "{}", show(&o));
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(
            all.contains(expect) || all.contains(&expect.replace("\\\"", "\"")),
            "{expect}: {all}"
        );
        assert_eq!(tree(&pkg), before, "files changed on failure");
    }
    let cfg = tmp.path().join("bad.yaml");
    fs::write(&cfg, "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: r}\nspec: {pathz: [a], strict: \"yes\"}\n").unwrap();
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--fn-config", cfg.to_str().unwrap()])
        .output();
    assert!(!o.status.success(), "{}", show(&o));
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        all.contains("spec.pathz") && all.contains("spec.strict"),
        "{all}"
    );
    assert_eq!(tree(&pkg), before);
}

#[test]
fn render_runs_a_kptfile_pipeline() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let bin = bin();
    kptfile(&pkg, &bin, "      configMap:\n        namespace: piped\n");
    let before = tree(&pkg);
    let o = kpt_render(&kpt_bin, tmp.path(), &["pkg"]).output();
    assert!(o.status.success(), "{}", show(&o));
    let after = tree(&pkg);
    for f in ["rgd.yaml", "apps/shop.yaml", "other/cm.yaml"] {
        assert_eq!(before[f], after[f], "{f} changed");
    }
    let blog = read(&pkg.join("apps/deployment_blog.yaml"));
    assert!(blog.contains("namespace: piped"), "{blog}");
    // Rendering again is a no-op.
    let o = kpt_render(&kpt_bin, tmp.path(), &["pkg"]).output();
    assert!(o.status.success(), "{}", show(&o));
    let again = tree(&pkg);
    assert_eq!(
        again.keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    for (k, v) in &after {
        if k != "Kptfile" {
            assert_eq!(&again[k], v, "{k} changed on the second render");
        }
    }
}

#[test]
fn eval_renders_a_component_and_a_kurel_package_from_paths() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    // Definitions kept outside the kpt package (kpt reads only KRM files; a kurel package's
    // parameters.yaml is not one), named by `paths` relative to kpt's working directory.
    copy_dir(
        &testdata().join("component/seed-web-app"),
        &tmp.path().join("component"),
    );
    fs::remove_file(tmp.path().join("component/expected.yaml")).unwrap();
    copy_dir(&testdata().join("kurel/values"), &tmp.path().join("kurel"));
    let bin = bin();
    let before = tree(&pkg);
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args(["--", "paths=component", "environment=development"])
        .output();
    assert!(o.status.success(), "{}", show(&o));
    let after = tree(&pkg);
    assert_eq!(before["other/cm.yaml"], after["other/cm.yaml"]);
    let dep = read(&pkg.join("component/deployment_checkout-service.yaml"));
    assert!(
        dep.contains("openchoreo.org/environment: development"),
        "{dep}"
    );
    assert!(
        dep.contains("kiln.dev/rendered-from: component/03-component.yaml"),
        "{dep}"
    );

    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin)
        .args([
            "--",
            "paths=kurel/app.kurel",
            "values=kurel/values/prod.yaml,kurel/values/region.yaml",
            "set.replicas=7",
        ])
        .output();
    assert!(o.status.success(), "{}", show(&o));
    let files: Vec<String> = tree(&pkg)
        .into_keys()
        .filter(|k| k.starts_with("kurel/"))
        .collect();
    assert!(
        !files.is_empty(),
        "no kurel output in {:?}",
        tree(&pkg).keys()
    );
    let all: String = files.iter().map(|f| read(&pkg.join(f))).collect();
    assert!(all.contains("replicas: 7"), "{all}");
    // The component's objects came from another configuration's `paths`: they stay.
    assert!(
        pkg.join("component/deployment_checkout-service.yaml")
            .is_file(),
        "{:?}",
        tree(&pkg).keys()
    );
}

/// Names of the kinds and objects below `dir` whose files hold `kind: K` and `name: N` lines,
/// as `K/N` (rendered objects sit one per file).
fn rendered_objects(pkg: &Path) -> Vec<String> {
    let mut out: Vec<String> = tree(pkg)
        .into_iter()
        .filter(|(_, bytes)| String::from_utf8_lossy(bytes).contains("kiln.dev/rendered-from"))
        .map(|(f, bytes)| {
            let t = String::from_utf8_lossy(&bytes).into_owned();
            let from = t
                .lines()
                .find_map(|l| l.trim().strip_prefix("kiln.dev/rendered-from: "))
                .unwrap_or("?")
                .to_string();
            format!("{f} <- {from}")
        })
        .collect();
    out.sort();
    out
}

/// A source that stops rendering an object takes the object with it: an instance file emptied,
/// renamed or deleted under `kpt fn render`, with no stale copy left (a renamed file used to
/// fail with KLN1012 against them).
#[test]
fn render_removes_what_a_source_no_longer_renders() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let bin = bin();
    kptfile(&pkg, &bin, "");
    let render = || {
        let o = kpt_render(&kpt_bin, tmp.path(), &["pkg"]).output();
        assert!(o.status.success(), "{}", show(&o));
    };
    render();
    let all = [
        "apps/configmap_blog-eu-west-1.yaml <- apps/shop.yaml",
        "apps/configmap_shop-eu-west-1.yaml <- apps/shop.yaml",
        "apps/deployment_blog.yaml <- apps/shop.yaml",
        "apps/deployment_shop.yaml <- apps/shop.yaml",
        "apps/service_blog.yaml <- apps/shop.yaml",
        "apps/service_shop.yaml <- apps/shop.yaml",
    ];
    assert_eq!(rendered_objects(&pkg), all);
    let instances = read(&pkg.join("apps/shop.yaml"));

    // Renamed: the objects follow the file, none is left behind.
    fs::rename(pkg.join("apps/shop.yaml"), pkg.join("apps/store.yaml")).unwrap();
    render();
    assert_eq!(
        rendered_objects(&pkg),
        all.map(|s| s.replace("<- apps/shop.yaml", "<- apps/store.yaml"))
    );

    // One instance removed from the file: only its objects go.
    let (shop, _blog) = instances.split_once("---\n").unwrap();
    fs::write(pkg.join("apps/store.yaml"), shop).unwrap();
    render();
    assert_eq!(
        rendered_objects(&pkg),
        [
            "apps/configmap_shop-eu-west-1.yaml <- apps/store.yaml",
            "apps/deployment_shop.yaml <- apps/store.yaml",
            "apps/service_shop.yaml <- apps/store.yaml",
        ]
    );

    // Emptied: every object it rendered is gone.
    fs::write(pkg.join("apps/store.yaml"), "").unwrap();
    render();
    assert_eq!(rendered_objects(&pkg), Vec::<String>::new());

    // Written again, then deleted: the same.
    fs::write(pkg.join("apps/store.yaml"), &instances).unwrap();
    render();
    assert_eq!(rendered_objects(&pkg).len(), 6);
    fs::remove_file(pkg.join("apps/store.yaml")).unwrap();
    render();
    assert_eq!(rendered_objects(&pkg), Vec::<String>::new());
    // The package's own files are untouched throughout.
    assert_eq!(
        read(&pkg.join("other/cm.yaml")),
        read(&testdata().join("krm/kro/other/cm.yaml"))
    );
}

/// A failed run echoes the input items: `kpt fn source | kiln-krm | kpt fn sink` without
/// `pipefail` writes the package back as it was, never an empty one.
#[test]
fn a_failed_run_in_a_source_sink_pipe_keeps_the_package() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let shop = pkg.join("apps/shop.yaml");
    fs::write(&shop, read(&shop).replace("replicas: 3", "replicas: 50")).unwrap();
    let source = kpt(&kpt_bin, tmp.path(), &["fn", "source", "pkg"]);
    assert!(source.status.success(), "{}", show(&source));
    let o = run(
        Command::new(bin()).current_dir(tmp.path()),
        &String::from_utf8(source.stdout).unwrap(),
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("KLN5001"));
    let sink = run(
        Command::new(&kpt_bin)
            .args(["fn", "sink", "out"])
            .current_dir(tmp.path()),
        &String::from_utf8(o.stdout).unwrap(),
    );
    assert!(sink.status.success(), "{}", show(&sink));
    let out = tree(&tmp.path().join("out"));
    let before = tree(&pkg);
    assert_eq!(
        out.keys().collect::<Vec<_>>(),
        before.keys().collect::<Vec<_>>()
    );
    assert!(out == before, "the package came back changed");
}

/// A kpt package holding a kurel package, with the documented steps (`examples/kpt/kurel`): a
/// `.krmignore` hiding the kurel files from kpt, the package in the Kptfile's `paths`, kpt run
/// from inside the package. Without the `.krmignore` kpt itself refuses the package.
#[test]
fn render_a_kurel_package_inside_a_kpt_package_as_documented() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("kurel");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kpt/kurel"),
        &pkg,
    );
    // kiln-krm on PATH, as the example's Kptfile (`exec: kiln-krm`) expects.
    let path = std::env::join_paths(
        std::iter::once(bin().parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap();
    let render = || kpt_render(&kpt_bin, &pkg, &[]).env("PATH", &path).output();
    let o = render();
    assert!(o.status.success(), "{}", show(&o));
    let dep = read(&pkg.join("deployment_web.yaml"));
    assert!(
        dep.contains("value: prod-eu") && dep.contains("memory: 1Gi"),
        "{dep}"
    );
    assert!(dep.contains("kiln.dev/rendered-from: app.kurel"), "{dep}");
    // The kurel files are untouched, and rendering again changes nothing.
    let after = tree(&pkg);
    let example = tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kpt/kurel"));
    for (f, bytes) in &example {
        if f != "Kptfile" {
            assert_eq!(&after[f], bytes, "{f} changed");
        }
    }
    let o = render();
    assert!(o.status.success(), "{}", show(&o));
    let again = tree(&pkg);
    for (f, bytes) in &after {
        if f != "Kptfile" {
            assert_eq!(&again[f], bytes, "{f} changed on the second render");
        }
    }
    // Without the ignore file, kpt aborts on parameters.yaml before any function runs.
    fs::remove_file(pkg.join(".krmignore")).unwrap();
    let o = render();
    assert!(!o.status.success(), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("parameters.yaml"),
        "{}",
        show(&o)
    );
}

/// Sources marked `config.kubernetes.io/local-config` (as docs/krm.md advises, so that `kpt live
/// apply` leaves them out) are still rendered: local-config means "not for the cluster", not
/// "not for kiln".
#[test]
fn local_config_sources_are_rendered() {
    let kpt_bin = tool("kpt");
    let (tmp, pkg) = package();
    let local = "  annotations: {config.kubernetes.io/local-config: \"true\"}\n";
    for (f, name) in [
        ("rgd.yaml", "  name: webapps.example.com\n"),
        ("apps/shop.yaml", "  name: shop\n"),
    ] {
        let p = pkg.join(f);
        fs::write(&p, read(&p).replacen(name, &format!("{name}{local}"), 1)).unwrap();
    }
    let bin = bin();
    let o = kpt_eval(&kpt_bin, tmp.path(), "pkg", &bin).output();
    assert!(o.status.success(), "{}", show(&o));
    let shop = read(&pkg.join("apps/deployment_shop.yaml"));
    assert!(shop.contains("replicas: 3"), "{shop}");
    assert!(!shop.contains("local-config"), "{shop}");
    assert!(pkg.join("apps/deployment_blog.yaml").is_file());
}

/// `PATH` with the kiln-krm under test first, for Kptfiles that say `exec: kiln-krm`.
fn path_with_kiln_krm() -> std::ffi::OsString {
    std::env::join_paths(
        std::iter::once(bin().parent().unwrap().to_path_buf()).chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        )),
    )
    .unwrap()
}

/// `kpt fn render ARGS… --allow-exec` in `cwd` with kiln-krm on PATH; fails the test on failure.
fn render_in(kpt_bin: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    let o = kpt_render(kpt_bin, cwd, args)
        .env("PATH", path_with_kiln_krm())
        .output();
    assert!(o.status.success(), "{}", show(&o));
    o
}

/// The `namespace:` of the first object of a rendered file.
fn namespace_of(file: &Path) -> String {
    read(file)
        .lines()
        .find_map(|l| l.strip_prefix("  namespace: "))
        .unwrap_or_else(|| panic!("{} names no namespace", file.display()))
        .to_string()
}

/// Nested kpt packages (`testdata/layouts/kpt-nested/`, after kpt's
/// `e2e/testdata/fn-render/subpkgs/`). `kpt fn render PARENT` runs each subpackage's pipeline on
/// the subpackage's resources first, then the parent's pipeline on the parent's resources and
/// all the subpackages' (`hydrate` in kpt's `internal/util/render/executor.go`, v1.0.0-beta.56);
/// during the run each item's `internal.config.kubernetes.io/path` is relative to its own
/// package, which `internal.config.kubernetes.io/package-path` names (`LocalResources` in
/// `internal/pkg/pkg.go`; `adjustRelPath` in the executor makes paths relative to the root only
/// after the last pipeline). So the parent's kiln step:
/// - leaves the items of a subpackage with its own kiln step alone (db/, cache/ and cache's
///   subpackage replica/): they were rendered with that subpackage's options a moment before;
/// - renders the instances of a subpackage without one (web/) with its own options, and writes
///   the objects beside them, in the subpackage.
#[test]
fn render_nested_packages_each_with_its_own_options_beside_the_sources() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let layout = testdata().join("layouts/kpt-nested");
    let pkg = tmp.path().join("kpt-nested");
    copy_dir(&layout, &pkg);
    // From the repository root (the directory holding the package), as the Kptfiles' `paths`
    // are written.
    render_in(&kpt_bin, tmp.path(), &["kpt-nested"]);
    let webapp = |dir: &str, name: &str, from: &str| {
        ["configmap_{n}-eu-west-1", "deployment_{n}", "service_{n}"]
            .map(|f| format!("{dir}{}.yaml <- {from}", f.replace("{n}", name)))
    };
    let mut expected: Vec<String> = [
        webapp("", "shop", "shop.yaml"),
        webapp("web/", "blog", "blog.yaml"),
        webapp("cache/", "cache", "cache.yaml"),
        webapp("cache/replica/", "cache-replica", "replica.yaml"),
    ]
    .concat();
    expected.push("db/statefulset_db.yaml <- kpt-nested/db/db.kurel".into());
    expected.sort();
    let rendered = rendered_objects(&pkg);
    assert_eq!(rendered, expected);
    // Each with the options of the step that owns it.
    for r in &rendered {
        let file = r.split(" <- ").next().unwrap();
        let want = match file.split('/').next().unwrap() {
            "db" => "db",
            "cache" => "cache",
            _ => "platform",
        };
        assert_eq!(namespace_of(&pkg.join(file)), want, "{file}");
    }
    let db = read(&pkg.join("db/statefulset_db.yaml"));
    assert!(
        db.contains("replicas: 3") && db.contains("storage: 20Gi"),
        "{db}"
    );
    // The sources are untouched.
    let after = tree(&pkg);
    for (f, bytes) in tree(&layout) {
        if !f.ends_with("Kptfile") {
            assert_eq!(after[&f], bytes, "{f} changed");
        }
    }
    // Rendering again, from the parent or a subpackage alone, changes nothing.
    let unchanged = |what: &str| {
        let again = tree(&pkg);
        assert_eq!(
            again.keys().collect::<Vec<_>>(),
            after.keys().collect::<Vec<_>>(),
            "{what}"
        );
        for (f, bytes) in &after {
            if !f.ends_with("Kptfile") {
                assert_eq!(&again[f], bytes, "{f} changed on {what}");
            }
        }
    };
    render_in(&kpt_bin, tmp.path(), &["kpt-nested"]);
    unchanged("the second render");
    render_in(&kpt_bin, tmp.path(), &["kpt-nested/cache"]);
    unchanged("rendering cache/ alone");
    render_in(&kpt_bin, tmp.path(), &["kpt-nested/db"]);
    unchanged("rendering db/ alone");
}

/// A kurel package named in `paths` with kpt run from the repository root (docs/krm.md):
/// `paths` are relative to kpt's working directory, and the objects land beside the package in
/// the kpt package (kpt names it in `internal.config.kubernetes.io/package-path`), not at the
/// path again below the package.
#[test]
fn render_a_kurel_package_named_from_the_repository_root() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("examples/kpt/kurel");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kpt/kurel"),
        &pkg,
    );
    let kptfile = pkg.join("Kptfile");
    let example = read(&kptfile);
    fs::write(
        &kptfile,
        example
            .replace("paths: app.kurel", "paths: examples/kpt/kurel/app.kurel")
            .replace(
                "values: values/prod.yaml",
                "values: examples/kpt/kurel/values/prod.yaml",
            ),
    )
    .unwrap();
    render_in(&kpt_bin, tmp.path(), &["examples/kpt/kurel"]);
    assert_eq!(
        rendered_objects(&pkg),
        ["deployment_web.yaml <- examples/kpt/kurel/app.kurel"]
    );
    let dep = read(&pkg.join("deployment_web.yaml"));
    assert!(dep.contains("value: prod-eu"), "{dep}");
    let after = tree(&pkg);
    render_in(&kpt_bin, tmp.path(), &["examples/kpt/kurel"]);
    assert_eq!(
        tree(&pkg).keys().collect::<Vec<_>>(),
        after.keys().collect::<Vec<_>>()
    );
    assert_eq!(read(&pkg.join("deployment_web.yaml")), dep);
}

/// `paths` written relative to the package while kpt runs elsewhere: the hint says what they
/// are relative to, and what to write instead.
#[test]
fn paths_relative_to_the_wrong_directory_get_a_hint() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("examples/kpt/kurel");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kpt/kurel"),
        &pkg,
    );
    let before = tree(&pkg);
    let o = kpt_render(&kpt_bin, tmp.path(), &["examples/kpt/kurel"])
        .env("PATH", path_with_kiln_krm())
        .output();
    assert!(!o.status.success(), "{}", show(&o));
    let all = show(&o);
    assert!(all.contains("KLN1001"), "{all}");
    assert!(
        all.contains("relative to kpt's working directory")
            && all.contains("examples/kpt/kurel/app.kurel"),
        "{all}"
    );
    assert_eq!(tree(&pkg), before, "files changed on failure");
}

/// A subpackage's file deleted: the objects the parent's step rendered from it go, even when
/// kpt runs in the parent's directory and the parent holds a file of the same name (the mark
/// names a file of the subpackage, not one of another step's `paths`).
#[test]
fn render_removes_a_subpackages_objects_when_its_source_goes() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("kpt-nested");
    copy_dir(&testdata().join("layouts/kpt-nested"), &pkg);
    // The steps whose `paths` are written from the repository root are not part of this.
    fs::remove_dir_all(pkg.join("db")).unwrap();
    fs::remove_dir_all(pkg.join("cache")).unwrap();
    fs::write(
        pkg.join("blog.yaml"),
        read(&pkg.join("web/blog.yaml")).replace("name: blog", "name: news"),
    )
    .unwrap();
    render_in(&kpt_bin, &pkg, &[]);
    let from_web = [
        "web/configmap_blog-eu-west-1.yaml <- blog.yaml",
        "web/deployment_blog.yaml <- blog.yaml",
        "web/service_blog.yaml <- blog.yaml",
    ];
    let rendered = rendered_objects(&pkg);
    assert!(
        from_web.iter().all(|o| rendered.contains(&o.to_string())),
        "{rendered:?}"
    );
    fs::remove_file(pkg.join("web/blog.yaml")).unwrap();
    render_in(&kpt_bin, &pkg, &[]);
    let rendered = rendered_objects(&pkg);
    assert!(
        rendered.iter().all(|o| !o.starts_with("web/")),
        "{rendered:?}"
    );
    assert!(pkg.join("deployment_news.yaml").is_file(), "{rendered:?}");
}

/// A parent whose only resources are those of subpackages with their own kiln steps has nothing
/// to render and hands them back: they are items, not a generator's empty output.
#[test]
fn a_parent_of_subpackages_with_their_own_steps_hands_them_back() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("kpt-nested");
    copy_dir(&testdata().join("layouts/kpt-nested"), &pkg);
    for f in ["rgd.yaml", "shop.yaml"] {
        fs::remove_file(pkg.join(f)).unwrap();
    }
    for d in ["web", "cache"] {
        fs::remove_dir_all(pkg.join(d)).unwrap();
    }
    render_in(&kpt_bin, tmp.path(), &["kpt-nested"]);
    assert_eq!(
        rendered_objects(&pkg),
        ["db/statefulset_db.yaml <- kpt-nested/db/db.kurel"]
    );
}

/// A diagnostic about a subpackage's item names its file from the package whose pipeline runs
/// (`web/blog.yaml`, not the subpackage's own `blog.yaml`, which may be the parent's too), and
/// the failed render writes nothing.
#[test]
fn a_subpackages_invalid_instance_is_named_from_the_parent() {
    let kpt_bin = tool("kpt");
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("kpt-nested");
    copy_dir(&testdata().join("layouts/kpt-nested"), &pkg);
    let blog = pkg.join("web/blog.yaml");
    fs::write(&blog, format!("{}  replicas: 50\n", read(&blog))).unwrap();
    let before = tree(&pkg);
    let results = tmp.path().join("results");
    let o = kpt_render(&kpt_bin, tmp.path(), &["kpt-nested"])
        .arg("--results-dir")
        .arg(&results)
        .env("PATH", path_with_kiln_krm())
        .output();
    assert!(!o.status.success(), "{}", show(&o));
    let all = show(&o);
    assert!(all.contains("web/blog.yaml: spec.replicas"), "{all}");
    let r = read(&results.join("results.yaml"));
    assert!(r.contains("path: web/blog.yaml"), "{r}");
    assert_eq!(tree(&pkg), before, "files changed on failure");
}
