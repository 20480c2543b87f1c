//! One request for every input: mixed trees render in one walk, deterministically, and kurel
//! overrides that have no package, or several, to act on are usage errors (KLN1010).

use crate::common;

use std::path::{Path, PathBuf};

use common::{kiln, text, write};

fn mixed_tree() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/render/mixed-tree")
}

#[test]
fn a_mixed_tree_renders_the_same_bytes_for_any_jobs() {
    let dir = mixed_tree();
    let run = |jobs: &str| {
        let out = kiln(
            &dir,
            &[
                "render",
                "tree",
                "--env",
                "production",
                "--namespace",
                "default",
                "-j",
                jobs,
            ],
        );
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        out.stdout
    };
    let one = run("1");
    assert!(!one.is_empty());
    for jobs in ["2", "4"] {
        assert!(run(jobs) == one, "--jobs {jobs} differs from --jobs 1");
    }
    // Each front-end is in it: kro objects, a plain manifest, a component release, both packages.
    let s = text(&one);
    for want in [
        "name: shop-eu-west-1",
        "name: platform-settings",
        "openchoreo.org/environment: production",
        "name: cache",
        "name: web",
    ] {
        assert!(s.contains(want), "{want} missing");
    }
}

#[test]
fn overrides_need_exactly_one_package() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    write(d, "values.yaml", "mode: prod\n");
    write(
        d,
        "plain/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
    );
    for pkg in ["one.kurel", "two.kurel"] {
        write(
            d,
            &format!("pkgs/{pkg}/parameters.yaml"),
            "kurel: {name: p, version: 1.0.0, appVersion: \"1\"}\nmode: x\n",
        );
        write(
            d,
            &format!("pkgs/{pkg}/resources/cm.yaml"),
            &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {pkg}}}\n"),
        );
    }
    // No package at all.
    let out = kiln(d, &["render", "plain", "--values", "values.yaml"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(text(&out.stderr).contains("KLN1010"));
    assert!(text(&out.stderr).contains("no kurel package"));
    // Two packages: ambiguous.
    let out = kiln(d, &["render", "pkgs", "--set", "mode=y"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let err = text(&out.stderr);
    assert!(
        err.contains("KLN1010") && err.contains("ambiguous"),
        "{err}"
    );
    assert!(
        err.contains("one.kurel") && err.contains("two.kurel"),
        "{err}"
    );
    // Both packages render without overrides; one renders with them.
    let out = kiln(d, &["render", "pkgs"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = kiln(d, &["render", "pkgs/one.kurel", "--set", "mode=y"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}
