//! `kiln diff` over real git repositories made in the test: the working tree against HEAD,
//! two committed revisions, a merge base, two environments; identity matching (a moved object,
//! a renamed file and a reordered stream are not changes), provenance, Secrets, exit codes and
//! the errors that name their side.

use crate::common;
use crate::common::KILN;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{kiln, text, write, ESCAPED_SECRET, ESCAPED_SECRET_BASE64};

/// Run git in `dir` with a fixed identity and dates (commit ids do not depend on the clock).
fn git(dir: &Path, args: &[&str]) -> String {
    let o = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "kiln")
        .env("GIT_AUTHOR_EMAIL", "kiln@localhost")
        .env("GIT_COMMITTER_NAME", "kiln")
        .env("GIT_COMMITTER_EMAIL", "kiln@localhost")
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .expect("git runs (it must be installed for these tests)");
    assert!(o.status.success(), "git {args:?}: {}", text(&o.stderr));
    text(&o.stdout).trim().to_string()
}

fn commit_all(dir: &Path, msg: &str) {
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-q", "-m", msg]);
}

/// A repository at `<tmp>/repo` (the temp dir also holds things outside it).
fn repo() -> (tempfile::TempDir, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let r = t.path().join("repo");
    fs::create_dir_all(&r).unwrap();
    git(&r, &["init", "-q", "-b", "main"]);
    (t, r)
}

const CM_WEB: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\n  namespace: prod\ndata:\n  mode: slow\n  size: \"3\"\n";
const CM_OLD: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: old\n  namespace: prod\ndata:\n  a: b\n";
const CM_NEW: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: new\n  namespace: prod\n";

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// The working tree (uncommitted changes, a new untracked file, a deleted file) against HEAD:
/// the exact text, and the exit status with and without --exit-code.
#[test]
fn the_working_tree_against_head() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, "apps/old.yaml", CM_OLD);
    commit_all(&r, "one");
    write(&r, "apps/web.yaml", &CM_WEB.replace("slow", "fast"));
    fs::remove_file(r.join("apps/old.yaml")).unwrap();
    write(&r, "apps/new.yaml", CM_NEW);
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "+ added ConfigMap prod/new\n\
         - removed ConfigMap prod/old\n\
         ~ changed ConfigMap prod/web\n\
         --- a/ConfigMap/prod/web\n\
         +++ b/ConfigMap/prod/web\n\
         @@ -4,5 +4,5 @@\n   \
         name: web\n   \
         namespace: prod\n \
         data:\n\
         -  mode: slow\n\
         +  mode: fast\n   \
         size: \"3\"\n\
         1 changed, 1 added, 1 removed, 0 unchanged\n"
    );
    assert_eq!(text(&o.stderr), "");
    // Colours when asked (on a terminal by default): removed lines red, added green.
    let o = kiln(&r, &["diff", "--color", "always", "apps"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("\x1b[31m-  mode: slow\x1b[0m\n\x1b[32m+  mode: fast\x1b[0m\n"),
        "{out:?}"
    );
    assert!(
        out.contains("\x1b[1;32m+ added ConfigMap prod/new\x1b[0m\n"),
        "{out:?}"
    );
    // Less context.
    let o = kiln(&r, &["diff", "-U", "0", "apps"]);
    assert!(
        text(&o.stdout).contains("@@ -7 +7 @@\n-  mode: slow\n+  mode: fast\n1 changed"),
        "{}",
        text(&o.stdout)
    );
    let o = kiln(&r, &["diff", "--exit-code", "apps"]);
    assert_eq!(code(&o), 1);
    // From a subdirectory, paths are the user's, relative to where kiln runs.
    let o = kiln(&r.join("apps"), &["diff", "--exit-code", "."]);
    assert_eq!(code(&o), 1);
    assert!(text(&o.stdout).ends_with("1 changed, 1 added, 1 removed, 0 unchanged\n"));
    // Nothing uncommitted: no differences, exit 0 even with --exit-code.
    commit_all(&r, "two");
    let o = kiln(&r, &["diff", "--exit-code", "apps"]);
    assert_eq!(code(&o), 0);
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 2 unchanged\n"
    );
}

/// A directory that exists on one side only (an application added, or removed, by the change):
/// its objects are added or removed, the other side does not fail.
#[test]
fn a_path_on_one_side_only() {
    let (_t, r) = repo();
    write(&r, "apps/web/cm.yaml", CM_WEB);
    commit_all(&r, "one");
    write(&r, "apps/shop/cm.yaml", CM_NEW);
    let o = kiln(&r, &["diff", "apps/web", "apps/shop"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "+ added ConfigMap prod/new\n0 changed, 1 added, 0 removed, 1 unchanged\n"
    );
    let o = kiln(&r, &["diff", "apps/shop"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "+ added ConfigMap prod/new\n0 changed, 1 added, 0 removed, 0 unchanged\n"
    );
    // Removed by the change.
    fs::remove_dir_all(r.join("apps/web")).unwrap();
    let o = kiln(&r, &["diff", "apps/web"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "- removed ConfigMap prod/web\n0 changed, 0 added, 1 removed, 0 unchanged\n"
    );
    // On neither side: the path does not exist.
    let o = kiln(&r, &["diff", "apps/nothing"]);
    assert_eq!(code(&o), 4);
    assert!(
        text(&o.stderr).contains("apps/nothing"),
        "{}",
        text(&o.stderr)
    );
}

/// Objects are matched by identity: a file renamed, an object moved to another file, a stream
/// reordered and keys written in another order are not changes.
#[test]
fn moves_renames_and_reorders_are_not_changes() {
    let (_t, r) = repo();
    write(&r, "apps/a.yaml", &format!("{CM_WEB}---\n{CM_OLD}"));
    write(&r, "apps/b.yaml", CM_NEW);
    commit_all(&r, "one");
    fs::remove_file(r.join("apps/a.yaml")).unwrap();
    fs::remove_file(r.join("apps/b.yaml")).unwrap();
    // Renamed, moved between files, reordered, keys in another order.
    write(&r, "apps/z/renamed.yaml", &format!("{CM_OLD}---\n{CM_NEW}"));
    write(
        &r,
        "apps/moved.yaml",
        "kind: ConfigMap\ndata:\n  size: \"3\"\n  mode: slow\nmetadata:\n  namespace: prod\n  name: web\napiVersion: v1\n",
    );
    let o = kiln(&r, &["diff", "--exit-code", "apps"]);
    assert_eq!(code(&o), 0, "{}{}", text(&o.stdout), text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 3 unchanged\n"
    );
    // A change among moved keys shows alone, in the base's key order.
    write(
        &r,
        "apps/moved.yaml",
        "kind: ConfigMap\ndata:\n  size: \"4\"\n  mode: slow\nmetadata:\n  namespace: prod\n  name: web\napiVersion: v1\n",
    );
    let o = kiln(&r, &["diff", "apps"]);
    assert!(
        text(&o.stdout)
            .contains(" data:\n   mode: slow\n-  size: \"3\"\n+  size: \"4\"\n1 changed"),
        "{}",
        text(&o.stdout)
    );
}

const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata:
  name: webapp
spec:
  schema:
    apiVersion: v1alpha1
    kind: WebApp
    spec:
      replicas: integer | default=1
      password: string
  resources:
  - id: config
    template:
      apiVersion: v1
      kind: ConfigMap
      metadata:
        name: ${schema.metadata.name}-config
      data:
        replicas: ${string(schema.spec.replicas)}
        dsn: postgres://app:${schema.spec.password}@db
  - id: secret
    template:
      apiVersion: v1
      kind: Secret
      metadata:
        name: ${schema.metadata.name}-db
      stringData:
        password: ${schema.spec.password}
"#;

fn instance(replicas: u32, password: &str) -> String {
    format!(
        "apiVersion: kro.run/v1alpha1\nkind: WebApp\nmetadata:\n  name: shop\n  namespace: prod\nspec:\n  replicas: {replicas}\n  password: {password}\n"
    )
}

/// Secrets never appear: a Secret's value (changed and unchanged), and the same value where a
/// template copies it into another object, in text, markdown and JSON.
#[test]
fn secret_values_never_appear() {
    let (_t, r) = repo();
    write(&r, "apps/rgd.yaml", RGD);
    write(&r, "apps/shop.yaml", &instance(1, "old-hunter2-secret"));
    commit_all(&r, "one");
    write(&r, "apps/shop.yaml", &instance(1, "new-hunter2-secret"));
    for format in ["text", "markdown", "json"] {
        let o = kiln(&r, &["diff", "--format", format, "apps"]);
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(!out.contains("hunter2"), "{format}: {out}");
        if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(v["summary"]["changed"], 2);
        } else {
            assert!(out.contains("2 changed"), "{format}: {out}");
            assert!(
                out.contains("-  password: \"[redacted]\"\n+  password: \"[redacted, changed]\"\n"),
                "{format}: {out}"
            );
        }
        // The ConfigMap that copies the value: redaction hides it on both sides, and the added
        // line says that it changed, not an identical pair (issue 40), in every format.
        let dsn =
            "-  dsn: postgres://app:[redacted]@db\n+  dsn: postgres://app:[redacted, changed]@db\n";
        let shown = if format == "json" {
            let v: serde_json::Value = serde_json::from_str(&out).unwrap();
            v["objects"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|o| o["diff"].as_str())
                .collect::<String>()
        } else {
            out.clone()
        };
        assert!(shown.contains(dsn), "{format}: {shown}");
    }
    // An unchanged Secret value stays [redacted] on both sides and is no change.
    write(&r, "apps/shop.yaml", &instance(2, "old-hunter2-secret"));
    let o = kiln(&r, &["diff", "apps"]);
    let out = text(&o.stdout);
    assert!(!out.contains("hunter2"), "{out}");
    assert!(
        out.contains("1 changed, 0 added, 0 removed, 1 unchanged"),
        "{out}"
    );
    assert!(
        out.contains("-  replicas: \"1\"\n+  replicas: \"2\"\n"),
        "{out}"
    );
}

/// A Secret is compared as the API server stores it (kubernetes `pkg/apis/core/v1/conversion.go`,
/// `Convert_v1_Secret_To_core_Secret`: each `stringData` key is written into `data`, over a
/// `data` value of the same key): a key moved from `data` (base64) to `stringData` (plain) with
/// the same value, or back, is no change; so is a `data` value spelt another way (a line break
/// in the base64) and a `data` value that `stringData` overrides. A real change of value still
/// shows, masked.
#[test]
fn a_secret_key_moved_between_data_and_string_data_is_no_change() {
    let secret = |fields: &str| {
        format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: prod\n{fields}")
    };
    let (_t, r) = repo();
    // "hunter2-secret-value", "admin-user".
    let in_data =
        secret("data:\n  password: aHVudGVyMi1zZWNyZXQtdmFsdWU=\n  user: YWRtaW4tdXNlcg==\n");
    write(&r, "apps/db.yaml", &in_data);
    commit_all(&r, "data");
    let same = [
        // One key moved to stringData.
        "stringData:\n  password: hunter2-secret-value\ndata:\n  user: YWRtaW4tdXNlcg==\n",
        // Both moved.
        "stringData:\n  password: hunter2-secret-value\n  user: admin-user\n",
        // In data, with a line break in the base64 (the API server reads the same bytes).
        "data:\n  password: |-\n    aHVudGVyMi1zZWNy\n    ZXQtdmFsdWU=\n  user: YWRtaW4tdXNlcg==\n",
        // A data value stringData overrides with the base's value: stringData wins.
        "data:\n  password: b3RoZXI=\n  user: YWRtaW4tdXNlcg==\nstringData:\n  password: hunter2-secret-value\n",
    ];
    for fields in same {
        write(&r, "apps/db.yaml", &secret(fields));
        let o = kiln(&r, &["diff", "--exit-code", "apps"]);
        assert_eq!(
            code(&o),
            0,
            "{fields}: {}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        assert_eq!(
            text(&o.stdout),
            "0 changed, 0 added, 0 removed, 1 unchanged\n",
            "{fields}"
        );
    }
    // And back: the base in stringData, the head in data.
    write(
        &r,
        "apps/db.yaml",
        &secret("stringData:\n  password: hunter2-secret-value\n  user: admin-user\n"),
    );
    commit_all(&r, "stringData");
    write(&r, "apps/db.yaml", &in_data);
    let o = kiln(&r, &["diff", "--exit-code", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stdout));
    // A value that differs is a change, whichever field holds it, and shows masked.
    let changed = [
        "stringData:\n  password: hunter2-other-value\n  user: admin-user\n",
        "data:\n  password: aHVudGVyMi1vdGhlci12YWx1ZQ==\n  user: YWRtaW4tdXNlcg==\n",
        // stringData wins over data: here it holds the other value.
        "data:\n  password: aHVudGVyMi1zZWNyZXQtdmFsdWU=\n  user: YWRtaW4tdXNlcg==\nstringData:\n  password: hunter2-other-value\n",
    ];
    for fields in changed {
        write(&r, "apps/db.yaml", &secret(fields));
        let o = kiln(&r, &["diff", "--exit-code", "apps"]);
        assert_eq!(code(&o), 1, "{fields}: {}", text(&o.stdout));
        let out = text(&o.stdout);
        assert!(
            out.contains(
                "-  password: \"[redacted]\"\n+  password: \"[redacted, changed]\"\n   user: \"[redacted]\"\n"
            ),
            "{fields}: {out}"
        );
        assert!(
            !out.contains("hunter2") && !out.contains("aHVudGVy"),
            "{out}"
        );
        assert!(
            !out.contains("admin-user") && !out.contains("YWRtaW4"),
            "{out}"
        );
    }
}

/// A Secret's values holding a control character and the line separator, copied into a
/// ConfigMap (as text and as base64 in `binaryData`): the diff writes the ConfigMap's YAML, which
/// escapes them (`"hunter22\x01zz-secret"`, `\L`), and JSON escapes that text again; no form is
/// printed, in text, markdown or JSON (issue 39: the YAML form was).
#[test]
fn escaped_and_encoded_secret_values_never_appear() {
    let (_t, r) = repo();
    let cm = |size: u32| {
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c, namespace: prod}}\ndata:\n  size: \"{size}\"\n  mode: \"hunter22\\x01zz-secret\"\n  sep: \"line\\u2028sep-secret\"\nbinaryData:\n  b: {ESCAPED_SECRET_BASE64}\n"
        )
    };
    write(&r, "apps/secret.yaml", ESCAPED_SECRET);
    write(&r, "apps/cm.yaml", &cm(1));
    commit_all(&r, "one");
    write(&r, "apps/cm.yaml", &cm(2));
    for format in ["text", "markdown", "json"] {
        let o = kiln(&r, &["diff", "--format", format, "-U", "9", "apps"]);
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
        let out = text(&o.stdout);
        for leaked in ["hunter22", "sep-secret", ESCAPED_SECRET_BASE64] {
            assert!(!out.contains(leaked), "{format}: {leaked}: {out}");
        }
        assert!(
            out.contains("size: \\\"2\\\"") || out.contains("size: \"2\""),
            "{format}: {out}"
        );
        assert_eq!(out.matches("[redacted]").count(), 3, "{format}: {out}");
    }
}

/// Provenance annotations are compared like any field: renaming the definition shows.
#[test]
fn a_definition_rename_shows_in_provenance() {
    let (_t, r) = repo();
    write(&r, "apps/rgd.yaml", RGD);
    write(&r, "apps/shop.yaml", &instance(1, "pw-123456"));
    commit_all(&r, "one");
    write(
        &r,
        "apps/rgd.yaml",
        &RGD.replace("name: webapp", "name: webapp-v2"),
    );
    let o = kiln(&r, &["diff", "apps"]);
    let out = text(&o.stdout);
    assert!(
        out.contains("-    kiln.dev/definition: ResourceGraphDefinition/webapp\n+    kiln.dev/definition: ResourceGraphDefinition/webapp-v2\n"),
        "{out}"
    );
    assert!(
        out.ends_with("2 changed, 0 added, 0 removed, 0 unchanged\n"),
        "{out}"
    );
    // --no-provenance leaves them out of both sides.
    let o = kiln(&r, &["diff", "--no-provenance", "apps"]);
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 2 unchanged\n"
    );
}

/// Two committed revisions (--base, --head), a merge base (A...B), and a revision compared with
/// itself while the working tree is dirty: a revision sees only its own files (an untracked or
/// ignored file in the working tree is not part of it).
#[test]
fn committed_revisions_see_only_their_own_files() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, ".gitignore", "apps/ignored.yaml\n");
    commit_all(&r, "one");
    git(&r, &["checkout", "-q", "-b", "feature"]);
    write(&r, "apps/web.yaml", &CM_WEB.replace("slow", "fast"));
    commit_all(&r, "feature");
    git(&r, &["checkout", "-q", "main"]);
    write(&r, "apps/other.yaml", CM_OLD);
    commit_all(&r, "main moves on");
    // Untracked and ignored files in the working tree.
    write(&r, "apps/untracked.yaml", CM_NEW);
    write(&r, "apps/ignored.yaml", &CM_NEW.replace("new", "ignored"));

    let o = kiln(&r, &["diff", "--base", "main", "--head", "feature", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout).lines().last().unwrap(),
        "1 changed, 0 added, 1 removed, 0 unchanged"
    );
    // The merge base of main and feature is the first commit: only the feature's change.
    let o = kiln(
        &r,
        &[
            "diff",
            "--base",
            "main...feature",
            "--head",
            "feature",
            "apps",
        ],
    );
    assert_eq!(
        text(&o.stdout).lines().last().unwrap(),
        "1 changed, 0 added, 0 removed, 0 unchanged"
    );
    // HEAD against itself: the untracked and ignored files are in neither side.
    let o = kiln(
        &r,
        &[
            "diff",
            "--base",
            "HEAD",
            "--head",
            "HEAD",
            "--exit-code",
            "apps",
        ],
    );
    assert_eq!(code(&o), 0);
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 2 unchanged\n"
    );
    // The working tree has both.
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(
        text(&o.stdout),
        "+ added ConfigMap prod/ignored\n+ added ConfigMap prod/new\n0 changed, 2 added, 0 removed, 2 unchanged\n"
    );
    // JSON names both sides.
    let head = git(&r, &["rev-parse", "--short=7", "main"]);
    let feature = git(&r, &["rev-parse", "--short=7", "feature"]);
    let o = kiln(
        &r,
        &[
            "diff", "--base", "main", "--head", "feature", "--format", "json", "apps",
        ],
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["base"], format!("main ({head})"));
    assert_eq!(v["head"], format!("feature ({feature})"));
    assert_eq!(
        v["summary"],
        serde_json::json!({"added": 0, "removed": 1, "changed": 1, "unchanged": 0})
    );
    assert_eq!(v["objects"][0]["change"], "removed");
    assert_eq!(v["objects"][0]["name"], "old");
    assert_eq!(v["objects"][0]["diff"], serde_json::Value::Null);
    assert_eq!(v["objects"][1]["change"], "changed");
    assert_eq!(v["objects"][1]["apiVersion"], "v1");
    assert_eq!(v["objects"][1]["namespace"], "prod");
    assert!(v["objects"][1]["diff"]
        .as_str()
        .unwrap()
        .contains("-  mode: slow\n+  mode: fast\n"));
}

/// kiln diff reads revisions from the object database: the working tree, the index and HEAD are
/// exactly as they were.
#[test]
fn the_working_tree_and_index_are_never_touched() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    commit_all(&r, "one");
    write(&r, "apps/web.yaml", &CM_WEB.replace("slow", "fast"));
    write(&r, "apps/staged.yaml", CM_NEW);
    git(&r, &["add", "apps/staged.yaml"]);
    let status = git(&r, &["status", "--porcelain"]);
    let index = fs::read(r.join(".git/index")).unwrap();
    let head = git(&r, &["rev-parse", "HEAD"]);
    let o = kiln(&r, &["diff", "--base", "HEAD", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(fs::read(r.join(".git/index")).unwrap(), index);
    assert_eq!(git(&r, &["status", "--porcelain"]), status);
    assert_eq!(git(&r, &["rev-parse", "HEAD"]), head);
    assert_eq!(
        fs::read_to_string(r.join("apps/web.yaml")).unwrap(),
        CM_WEB.replace("slow", "fast")
    );
}

const BAD_YAML: &str = "apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n";

/// A base that does not render (the change that fixes a broken main): the diff is against an
/// empty base, every object of the head added, and each format says the base does not render
/// and why; the base's diagnostics go to stderr, named `REV:path`. Exit 0 (1 with --exit-code,
/// as there are differences); 4 with --fail-on-base-error, the diff written all the same.
#[test]
fn a_base_that_does_not_render_is_compared_as_empty() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, "apps/bad.yaml", BAD_YAML);
    commit_all(&r, "broken");
    fs::remove_file(r.join("apps/bad.yaml")).unwrap();
    let short = git(&r, &["rev-parse", "--short=7", "HEAD"]);
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!(
            "! the base, HEAD ({short}), does not render (1 error(s)): every object of the head \
             is shown as added\n  \
             error[KLN1004]: HEAD:apps/bad.yaml:3: unclosed bracket '[' at line 3, column 11\n\
             + added ConfigMap prod/web\n\
             0 changed, 1 added, 0 removed, 0 unchanged\n"
        )
    );
    let err = text(&o.stderr);
    assert!(
        err.contains(&format!(
            "warning: HEAD ({short}) does not render: the diff is against an empty base"
        )),
        "{err}"
    );
    assert!(err.contains("HEAD:apps/bad.yaml"), "{err}");
    assert!(
        !err.contains("kiln-rev-"),
        "the temporary directory is not shown: {err}"
    );
    // Markdown: the warning under the heading, then the head's objects.
    let o = kiln(&r, &["diff", "--format", "markdown", "apps"]);
    assert_eq!(code(&o), 0);
    let md = text(&o.stdout);
    assert!(
        md.contains(
            "**0 changed, 1 added, 0 removed, 0 unchanged**\n\n> [!WARNING]\n> **The base does \
             not render** (1 error(s)): every object of the head is shown as added.\n> - \
             `error[KLN1004]: HEAD:apps/bad.yaml:3: unclosed bracket '[' at line 3, column 11`\n"
        ),
        "{md}"
    );
    assert!(md.contains("- added `ConfigMap prod/web`"), "{md}");
    // JSON: `baseError`, the diagnostics as --diagnostics json writes them, without hints.
    let o = kiln(&r, &["diff", "--format", "json", "apps"]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["baseError"]["errors"], 1);
    let d = &v["baseError"]["diagnostics"][0];
    assert_eq!(d["code"], "KLN1004");
    assert_eq!(d["file"], "HEAD:apps/bad.yaml");
    assert_eq!(d["line"], 3);
    assert_eq!(d["hint"], serde_json::Value::Null);
    assert_eq!(v["objects"][0]["change"], "added");
    // JSON diagnostics on stderr name the side through the file.
    let o = kiln(&r, &["diff", "--diagnostics", "json", "apps"]);
    assert_eq!(code(&o), 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
    assert_eq!(v["diagnostics"][0]["file"], "HEAD:apps/bad.yaml");
    // Exit status: differences with --exit-code; 4 when asked to fail, the diff still written.
    let o = kiln(&r, &["diff", "--exit-code", "apps"]);
    assert_eq!(code(&o), 1);
    let o = kiln(&r, &["diff", "--fail-on-base-error", "apps"]);
    assert_eq!(code(&o), 4);
    assert!(text(&o.stdout).contains("+ added ConfigMap prod/web\n"));
    assert!(
        text(&o.stderr).contains(&format!("error: HEAD ({short}) does not render:")),
        "{}",
        text(&o.stderr)
    );
    // A base that renders: no such line, and `baseError` is null.
    git(&r, &["rm", "-q", "apps/bad.yaml"]);
    git(&r, &["commit", "-q", "-m", "fixed"]);
    let o = kiln(
        &r,
        &["diff", "--fail-on-base-error", "--format", "json", "apps"],
    );
    assert_eq!(code(&o), 0);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["baseError"], serde_json::Value::Null);
}

/// With --strict, warnings fail the run on the head's side only: the base's are printed and are
/// the base's own, like its errors (they fail it only with --fail-on-base-error, after the diff
/// is written).
#[test]
fn strict_fails_on_the_head_warnings_not_the_base() {
    let (_t, r) = repo();
    let duplicate = CM_WEB.replace("  size: \"3\"\n", "  size: \"3\"\n  size: \"4\"\n");
    write(&r, "apps/web.yaml", &duplicate);
    commit_all(&r, "a duplicate key");
    write(&r, "apps/web.yaml", CM_WEB);
    let o = kiln(&r, &["diff", "--strict", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("KLN1008"), "{}", text(&o.stderr));
    assert!(text(&o.stdout).ends_with("1 changed, 0 added, 0 removed, 0 unchanged\n"));
    let o = kiln(&r, &["diff", "--strict", "--fail-on-base-error", "apps"]);
    assert_eq!(code(&o), 4);
    assert!(text(&o.stdout).ends_with("1 changed, 0 added, 0 removed, 0 unchanged\n"));
    // The head's warning fails the run, nothing written.
    commit_all(&r, "fixed");
    write(&r, "apps/web.yaml", &duplicate);
    let o = kiln(&r, &["diff", "--strict", "apps"]);
    assert_eq!(code(&o), 4);
    assert_eq!(text(&o.stdout), "");
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 0, "without --strict a warning is a warning");
}

/// The head not rendering stays an error: its diagnostics, exit 4, nothing on stdout (whatever
/// the base does).
#[test]
fn a_head_that_does_not_render_is_an_error() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    commit_all(&r, "one");
    write(&r, "apps/bad.yaml", BAD_YAML);
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 4);
    assert_eq!(text(&o.stdout), "", "no partial output");
    let err = text(&o.stderr);
    assert!(
        err.contains("error: working tree does not render:"),
        "{err}"
    );
    assert!(err.contains("apps/bad.yaml"), "{err}");
    assert!(!err.contains("HEAD ("), "{err}");
    // Both broken: both named, still 4 and nothing written.
    commit_all(&r, "broken");
    write(&r, "apps/worse.yaml", BAD_YAML);
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 4);
    assert_eq!(text(&o.stdout), "");
    let err = text(&o.stderr);
    assert!(
        err.contains("error: working tree does not render:"),
        "{err}"
    );
    assert!(err.contains("HEAD:apps/bad.yaml"), "{err}");
}

/// What the output says of a base that does not render is safe for a pull-request comment: a
/// secret an error message quotes is blanked out (in every format), and the errors are bounded:
/// the first few, each message cut, the rest counted.
#[test]
fn a_base_failure_shows_no_secret_and_is_bounded() {
    let (_t, r) = repo();
    // The password fails the schema's pattern: the error message quotes it.
    let rgd = RGD.replace(
        "password: string\n",
        "password: string | pattern=\"^[a-z]+$\"\n",
    );
    write(&r, "apps/rgd.yaml", &rgd);
    write(&r, "apps/shop.yaml", &instance(1, "Hunter2-Base-Secret"));
    // Six more errors, each message naming a kind of 1000 characters (sorted after shop.yaml).
    let long = format!(
        "apiVersion: example.com/v1\nkind: K{}\nmetadata: {{name: x}}\n",
        "n".repeat(1000)
    );
    for i in 0..6 {
        write(&r, &format!("apps/z{i}.yaml"), &long);
    }
    commit_all(&r, "broken");
    write(&r, "apps/shop.yaml", &instance(1, "hunterheadsecret"));
    for i in 0..6 {
        fs::remove_file(r.join(format!("apps/z{i}.yaml"))).unwrap();
    }
    // The base reports every error (text shows 5 of them).
    let o = kiln(&r, &["diff", "--format", "json", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let errors = v["baseError"]["errors"].as_u64().unwrap();
    assert_eq!(errors, 7, "{v}");
    assert_eq!(v["baseError"]["diagnostics"].as_array().unwrap().len(), 5);
    for format in ["text", "markdown", "json"] {
        let o = kiln(&r, &["diff", "--format", format, "apps"]);
        assert_eq!(code(&o), 0, "{}", text(&o.stderr));
        let out = text(&o.stdout);
        assert!(!out.to_lowercase().contains("hunter"), "{format}: {out}");
        assert!(!text(&o.stderr).contains("Hunter2"), "{}", text(&o.stderr));
        if format != "json" {
            assert!(
                out.contains(&format!(
                    "… and {} more error(s); the log shows each",
                    errors - 5
                )),
                "{format}: {out}"
            );
        }
        for line in out.lines() {
            assert!(line.len() < 500, "{format}: a line of {} bytes", line.len());
        }
    }
    let o = kiln(&r, &["diff", "apps"]);
    let out = text(&o.stdout);
    assert!(
        out.contains(
            "HEAD:apps/shop.yaml:8: spec.password: \"[redacted]\" does not match the pattern"
        ),
        "{out}"
    );
}

/// A kustomization, and a patch one names, are kustomize's configuration, not objects: never
/// compared (with or without `--pass-through kustomize.config.k8s.io`), so a change that only
/// edits them shows no change; and, as `kiln render` does, kiln diff says on stderr that each
/// was not applied (the head's, then one only the base has).
#[test]
fn kustomizations_are_not_compared_and_are_named() {
    let (_t, r) = repo();
    let prod = |ns: &str| {
        format!(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- ../base\nnamespace: {ns}\npatches:\n- path: mode.yaml\n"
        )
    };
    let patch = |mode: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  mode: {mode}\n")
    };
    write(&r, "apps/base/cm.yaml", CM_WEB);
    write(
        &r,
        "apps/base/kustomization.yaml",
        "resources:\n- cm.yaml\n",
    );
    write(&r, "apps/prod/kustomization.yaml", &prod("prod"));
    write(&r, "apps/prod/mode.yaml", &patch("slow"));
    commit_all(&r, "one");
    write(&r, "apps/prod/kustomization.yaml", &prod("staging"));
    write(&r, "apps/prod/mode.yaml", &patch("fast"));
    fs::remove_file(r.join("apps/base/kustomization.yaml")).unwrap();
    for extra in [&[][..], &["--pass-through", "kustomize.config.k8s.io"][..]] {
        let mut args = vec!["diff", "--exit-code"];
        args.extend(extra);
        args.push("apps");
        let o = kiln(&r, &args);
        assert_eq!(code(&o), 0, "{extra:?}: {}", text(&o.stderr));
        assert_eq!(
            text(&o.stdout),
            "0 changed, 0 added, 0 removed, 1 unchanged\n",
            "{extra:?}"
        );
        let err = text(&o.stderr);
        let named: Vec<&str> = err
            .lines()
            .map(|l| {
                assert!(l.contains("not a manifest, was not applied"), "{l}");
                l.split(':').next().unwrap()
            })
            .collect();
        assert_eq!(
            named,
            [
                "apps/prod/kustomization.yaml",
                "apps/prod/mode.yaml",
                "apps/base/kustomization.yaml"
            ],
            "{extra:?}: {err}"
        );
    }
}

/// Unknown revisions, ranges, paths outside any repository and stdin are usage errors (2).
#[test]
fn usage_errors() {
    let (t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    commit_all(&r, "one");
    let o = kiln(&r, &["diff", "--base", "no-such-branch", "apps"]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("error[KLN1030]: unknown revision \"no-such-branch\""),
        "{}",
        text(&o.stderr)
    );
    let o = kiln(&r, &["diff", "--base", "HEAD..HEAD", "apps"]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("is a range of commits"),
        "{}",
        text(&o.stderr)
    );
    // Outside the repository (beside it), and outside any repository.
    write(t.path(), "outside/cm.yaml", CM_NEW);
    let o = kiln(&r, &["diff", "apps", "../outside"]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains("../outside is outside the repository"),
        "{}",
        text(&o.stderr)
    );
    let o = kiln(&t.path().join("outside"), &["diff", "."]);
    assert_eq!(code(&o), 2);
    assert!(
        text(&o.stderr).contains(". is not inside a git repository"),
        "{}",
        text(&o.stderr)
    );
    let o = kiln(&r, &["diff", "-"]);
    assert_eq!(code(&o), 2);
    let o = kiln(&r, &["diff", "--format", "yaml", "apps"]);
    assert_eq!(code(&o), 2);
}

/// Observed state is live objects, read once as given (here from outside the repository) for
/// both sides.
#[test]
fn observed_state_is_read_as_given_for_both_sides() {
    let (t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    commit_all(&r, "one");
    write(
        t.path(),
        "live/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: live, namespace: prod}\n",
    );
    let live = t.path().join("live/cm.yaml");
    let o = kiln(&r, &["diff", "--observed", live.to_str().unwrap(), "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 1 unchanged\n"
    );
    let o = kiln(&r, &["diff", "--observed", "../missing.yaml", "apps"]);
    assert_eq!(code(&o), 4);
    assert!(
        text(&o.stderr).contains("missing.yaml"),
        "{}",
        text(&o.stderr)
    );
}

/// A symlink committed in a revision may not lead out of the repository, as on disk.
#[cfg(unix)]
#[test]
fn a_revision_symlink_never_leaves_the_repository() {
    let (t, r) = repo();
    write(t.path(), "outside/stolen.yaml", CM_NEW);
    write(&r, "apps/web.yaml", CM_WEB);
    std::os::unix::fs::symlink("../../outside/stolen.yaml", r.join("apps/link.yaml")).unwrap();
    std::os::unix::fs::symlink(r.join("apps/web.yaml"), r.join("apps/abs.yaml")).unwrap();
    commit_all(&r, "links");
    let o = kiln(&r, &["diff", "--base", "HEAD", "--head", "HEAD", "apps"]);
    assert_eq!(code(&o), 4, "{}", text(&o.stdout));
    let err = text(&o.stderr);
    assert!(err.contains("KLN1002"), "{err}");
    assert!(err.contains("HEAD:apps/link.yaml"), "{err}");
    assert!(err.contains("HEAD:apps/abs.yaml"), "{err}");
    assert!(!err.contains("stolen"), "{err}");
    // A symlink to another directory of the same repository is followed.
    fs::remove_file(r.join("apps/link.yaml")).unwrap();
    fs::remove_file(r.join("apps/abs.yaml")).unwrap();
    write(&r, "shared/cm.yaml", CM_OLD);
    std::os::unix::fs::symlink("../shared", r.join("apps/shared")).unwrap();
    commit_all(&r, "shared");
    let o = kiln(&r, &["diff", "--base", "HEAD", "--head", "HEAD", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 2 unchanged\n"
    );
}

/// A submodule in a committed revision is only a commit id: naming a path that holds one (or a
/// path inside one) is an error naming it, not a render that silently lacks its files. A path
/// beside it is read as usual.
#[test]
fn a_submodule_is_refused_by_name() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, "other/cm.yaml", CM_OLD);
    commit_all(&r, "apps");
    // A gitlink entry, as `git submodule add` records it, without a second repository.
    git(
        &r,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            "160000,0123456789abcdef0123456789abcdef01234567,apps/vendor",
        ],
    );
    git(&r, &["commit", "-q", "-m", "submodule"]);
    for path in ["apps", "apps/vendor/x.yaml"] {
        let o = kiln(&r, &["diff", "--base", "HEAD", "--head", "HEAD", path]);
        assert_eq!(code(&o), 4, "{path}: {}", text(&o.stdout));
        let err = text(&o.stderr);
        assert!(
            err.contains("apps/vendor is a git submodule"),
            "{path}: {err}"
        );
        assert!(text(&o.stdout).is_empty(), "{path}");
    }
    let o = kiln(&r, &["diff", "--base", "HEAD", "--head", "HEAD", "other"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        "0 changed, 0 added, 0 removed, 1 unchanged\n"
    );
}

/// A kurel package in a revision: its parameters and local extension are read from the
/// revision.
#[test]
fn kurel_packages_render_from_a_revision() {
    let (_t, r) = repo();
    write(
        &r,
        "pkgs/app.kurel/parameters.yaml",
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: slow\n",
    );
    write(
        &r,
        "pkgs/app.kurel/resources/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: prod}\ndata: {mode: \"${mode}\"}\n",
    );
    commit_all(&r, "package");
    write(&r, "pkgs/app.local.kurel/parameters.yaml", "mode: fast\n");
    let o = kiln(&r, &["diff", "--no-provenance", "pkgs/app.kurel"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("-  mode: slow\n+  mode: fast\n1 changed"),
        "{}",
        text(&o.stdout)
    );
    // Values files are read from each side too.
    write(&r, "pkgs/values/prod.yaml", "mode: prod\n");
    commit_all(&r, "values");
    write(&r, "pkgs/values/prod.yaml", "mode: production\n");
    let o = kiln(
        &r,
        &[
            "diff",
            "--no-provenance",
            "--values",
            "pkgs/values/prod.yaml",
            "pkgs/app.kurel",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).contains("-  mode: prod\n+  mode: production\n1 changed"),
        "{}",
        text(&o.stdout)
    );
    // A package broken in the base: its files are named by their path in the revision (never
    // by the temporary directory the revision is read from).
    write(
        &r,
        "pkgs/app.kurel/parameters.yaml",
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: [slow\n",
    );
    commit_all(&r, "broken package");
    write(
        &r,
        "pkgs/app.kurel/parameters.yaml",
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: slow\n",
    );
    let o = kiln(&r, &["diff", "--diagnostics", "json", "pkgs/app.kurel"]);
    assert_eq!(code(&o), 0);
    let err = text(&o.stderr);
    let v: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(
        v["diagnostics"][0]["file"], "HEAD:pkgs/app.kurel/parameters.yaml",
        "{err}"
    );
    assert!(!err.contains("kiln-rev-"), "{err}");
}

/// A revision is read only where a render of the named paths reads (issue 39), and that
/// includes the local extension beside a package named and what a link there points to: the
/// base side sees its own extension (`fast`), not none (`slow`), and the linked directory.
#[test]
#[cfg(unix)]
fn a_revision_gives_a_named_package_its_local_extension_and_links_their_targets() {
    let (_t, r) = repo();
    write(
        &r,
        "pkgs/app.kurel/parameters.yaml",
        "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: slow\n",
    );
    write(
        &r,
        "pkgs/app.kurel/resources/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: prod}\ndata: {mode: \"${mode}\"}\n",
    );
    write(&r, "pkgs/app.local.kurel/parameters.yaml", "mode: fast\n");
    write(
        &r,
        "shared/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: prod}\ndata: {a: b}\n",
    );
    std::fs::create_dir_all(r.join("apps")).unwrap();
    std::os::unix::fs::symlink("../shared", r.join("apps/shared")).unwrap();
    commit_all(&r, "package and link");
    write(&r, "pkgs/app.local.kurel/parameters.yaml", "mode: faster\n");
    write(
        &r,
        "shared/cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: shared, namespace: prod}\ndata: {a: c}\n",
    );
    let o = kiln(&r, &["diff", "--no-provenance", "pkgs/app.kurel", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("-  mode: fast\n+  mode: faster\n"), "{out}");
    assert!(out.contains("-  a: b\n+  a: c\n"), "{out}");
    assert!(out.contains("2 changed"), "{out}");
}

/// Markdown for a pull-request comment: a table by kind, one collapsible section per changed
/// object, added and removed listed, and a size limit that never cuts an object.
#[test]
fn markdown_for_a_pull_request() {
    let (_t, r) = repo();
    for i in 0..30 {
        write(
            &r,
            &format!("apps/cm{i}.yaml"),
            &CM_WEB.replace("name: web", &format!("name: web{i}")),
        );
    }
    write(&r, "apps/old.yaml", CM_OLD);
    commit_all(&r, "one");
    for i in 0..30 {
        write(
            &r,
            &format!("apps/cm{i}.yaml"),
            &CM_WEB
                .replace("name: web", &format!("name: web{i}"))
                .replace("slow", "fast"),
        );
    }
    fs::remove_file(r.join("apps/old.yaml")).unwrap();
    let o = kiln(&r, &["diff", "--format", "markdown", "apps"]);
    let md = text(&o.stdout);
    let short = git(&r, &["rev-parse", "--short=7", "HEAD"]);
    assert!(md.starts_with(&format!(
        "### kiln diff: `HEAD ({short})` → `working tree`\n\n**30 changed, 0 added, 1 removed, 0 unchanged**\n\n| kind | changed | added | removed |\n| --- | ---: | ---: | ---: |\n| ConfigMap | 30 | 0 | 1 |\n"
    )), "{md}");
    assert_eq!(
        md.matches("<details><summary>changed ConfigMap prod/web")
            .count(),
        30
    );
    assert!(md.contains("- removed `ConfigMap prod/old`"), "{md}");
    let o = kiln(
        &r,
        &[
            "diff",
            "--format",
            "markdown",
            "--markdown-limit",
            "2000",
            "apps",
        ],
    );
    let md = text(&o.stdout);
    assert!(md.len() <= 2000, "{}", md.len());
    assert_eq!(
        md.matches("<details>").count(),
        md.matches("</details>").count()
    );
    assert!(md.contains("more object(s) not shown"), "{md}");
}

/// `--env` and `--base-env`: what promoting one environment to another changes.
#[test]
fn two_environments_of_one_revision() {
    let (_t, r) = repo();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/component/seed-web-app");
    for f in [
        "01-web-app.yaml",
        "02-addons.yaml",
        "03-component.yaml",
        "04-deployments.yaml",
    ] {
        fs::copy(seed.join(f), r.join(f)).unwrap();
    }
    commit_all(&r, "component");
    let o = kiln(
        &r,
        &[
            "diff",
            "--env",
            "production",
            "--base-env",
            "development",
            ".",
        ],
    );
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.contains("-    openchoreo.org/environment: development\n+    openchoreo.org/environment: production\n"), "{out}");
    assert!(
        out.contains("+ added HorizontalPodAutoscaler.autoscaling checkout-service\n"),
        "{out}"
    );
    assert!(
        out.ends_with("2 changed, 2 added, 0 removed, 0 unchanged\n"),
        "{out}"
    );
    // The same environment on both sides: nothing.
    let o = kiln(&r, &["diff", "--env", "production", "--exit-code", "."]);
    assert_eq!(code(&o), 0, "{}", text(&o.stdout));
}

/// What one run of the example CI workflow did.
struct Job {
    /// The exit status of the step that failed, if one did (later steps do not run).
    failed: Option<i32>,
    /// What `gh` was asked to post: each call's arguments, then the body file's text.
    posted: String,
    /// The comment kiln diff wrote (`diff.md`).
    comment: String,
}

/// Run examples/ci/kiln-diff.yml's job in the repository `r` as GitHub Actions would: each step's
/// `run` script in order with `bash -eo pipefail`, the workflow's and the step's `env` (with
/// `overrides`), `${{ … }}` replaced as for a pull request into `main`, `$GITHUB_OUTPUT`, and a
/// `gh` that records what it is asked to post. Checkout and installing kiln are the test's own.
fn run_ci_workflow(r: &Path, overrides: &[(&str, &str)]) -> Job {
    use kiln_core::document::{parse_file, YamlLimits};
    use serde_json::Value;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let path = root.join("examples/ci/kiln-diff.yml");
    let workflow = &parse_file(
        "kiln-diff.yml",
        fs::read_to_string(&path).unwrap(),
        &YamlLimits::default(),
    )
    .unwrap()[0]
        .value;
    let scratch = tempfile::tempdir().unwrap();
    let bin = scratch.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let gh_log = scratch.path().join("gh.log");
    write(
        &bin,
        "gh",
        "#!/bin/sh\necho \"gh $*\" >> \"$GH_LOG\"\nwhile [ $# -gt 0 ]; do\n  if [ \"$1\" = --body-file ]; then cat \"$2\" >> \"$GH_LOG\"; fi\n  shift\ndone\n",
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(bin.join("gh"), fs::Permissions::from_mode(0o755)).unwrap();
    }
    let kiln_dir = Path::new(KILN).parent().unwrap();
    let mut paths = vec![bin.clone(), kiln_dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    let path_var = std::env::join_paths(paths).unwrap();
    let output = scratch.path().join("github_output");
    let strings = |v: &Value| -> Vec<(String, String)> {
        v.as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut failed = None;
    for step in workflow["jobs"]["diff"]["steps"].as_array().unwrap() {
        let Some(script) = step["run"].as_str() else {
            assert!(
                step["uses"].is_string(),
                "a step that neither runs nor uses: {step}"
            );
            continue;
        };
        if script.starts_with("cargo install") {
            continue;
        }
        // The outputs of earlier steps, as `${{ steps.diff.outputs.NAME }}` reads them.
        let outputs = fs::read_to_string(&output).unwrap_or_default();
        let expand = |text: &str| -> String {
            let mut out = String::new();
            let mut rest = text;
            while let Some(i) = rest.find("${{") {
                out.push_str(&rest[..i]);
                let end = rest[i..].find("}}").expect("a closed expression") + i;
                let expr = rest[i + 3..end].trim();
                let value = match expr {
                    "github.base_ref" => "main".to_string(),
                    "github.token" => "a-token".to_string(),
                    "github.event.pull_request.number" => "7".to_string(),
                    e if e.starts_with("steps.diff.outputs.") => {
                        let name = &e["steps.diff.outputs.".len()..];
                        outputs
                            .lines()
                            .find_map(|l| l.strip_prefix(&format!("{name}=")))
                            .unwrap_or("")
                            .to_string()
                    }
                    e => panic!("the test does not know ${{{{ {e} }}}}"),
                };
                out.push_str(&value);
                rest = &rest[end + 2..];
            }
            out.push_str(rest);
            out
        };
        let mut cmd = Command::new("bash");
        cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c"])
            .arg(expand(script))
            .current_dir(r)
            .env("PATH", &path_var)
            .env("GITHUB_OUTPUT", &output)
            .env("GH_LOG", &gh_log)
            .env("NO_COLOR", "1");
        for (k, v) in strings(&workflow["env"])
            .into_iter()
            .chain(strings(&step["env"]))
        {
            cmd.env(&k, expand(&v));
        }
        for (k, v) in overrides {
            cmd.env(k, v);
        }
        let o = cmd.output().unwrap();
        if !o.status.success() {
            failed = Some(o.status.code().unwrap_or(-1));
            break;
        }
    }
    Job {
        failed,
        posted: fs::read_to_string(&gh_log).unwrap_or_default(),
        comment: fs::read_to_string(r.join("diff.md")).unwrap_or_default(),
    }
}

/// The example CI workflow (examples/ci/kiln-diff.yml) on the pull request that fixes a broken
/// main: it posts the comment (the head's objects, and why the base does not render) and passes;
/// with FAIL_ON_BASE_ERROR it posts the comment and fails. A head that does not render fails
/// and posts nothing; an ordinary change posts its diff and passes.
#[test]
fn the_ci_workflow_comments_on_the_change_that_fixes_a_broken_base() {
    let (_t, r) = repo();
    write(&r, ".gitignore", "diff.md\n");
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, "apps/bad.yaml", BAD_YAML);
    commit_all(&r, "broken main");
    // The pull request's branch, and the base as the checkout's remote-tracking branch.
    git(&r, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    git(&r, &["checkout", "-q", "-b", "fix"]);
    git(&r, &["rm", "-q", "apps/bad.yaml"]);
    git(&r, &["commit", "-q", "-m", "fix"]);

    let job = run_ci_workflow(&r, &[]);
    assert_eq!(
        job.failed, None,
        "the fixing pull request passes: {}",
        job.comment
    );
    assert!(
        job.comment
            .contains("> [!WARNING]\n> **The base does not render**"),
        "{}",
        job.comment
    );
    assert!(
        job.comment.contains("- added `ConfigMap prod/web`"),
        "{}",
        job.comment
    );
    assert!(
        job.posted
            .starts_with("gh pr comment 7 --edit-last --body-file diff.md\n"),
        "{}",
        job.posted
    );
    assert!(job.posted.contains(&job.comment), "{}", job.posted);

    // Asked to fail: the comment is posted first, then the check fails with kiln diff's 4.
    let job = run_ci_workflow(&r, &[("FAIL_ON_BASE_ERROR", "true")]);
    assert_eq!(job.failed, Some(4));
    assert!(job.posted.contains("> [!WARNING]"), "{}", job.posted);

    // A head that does not render: nothing to post, the check fails.
    write(&r, "apps/worse.yaml", BAD_YAML);
    let job = run_ci_workflow(&r, &[]);
    assert_eq!(job.failed, Some(4));
    assert_eq!(job.comment, "");
    assert_eq!(job.posted, "");
    fs::remove_file(r.join("apps/worse.yaml")).unwrap();

    // An ordinary change against a base that renders: its diff, and the check passes.
    git(&r, &["update-ref", "refs/remotes/origin/main", "HEAD"]);
    write(&r, "apps/web.yaml", &CM_WEB.replace("slow", "fast"));
    commit_all(&r, "faster");
    let job = run_ci_workflow(&r, &[]);
    assert_eq!(job.failed, None);
    assert!(!job.comment.contains("[!WARNING]"), "{}", job.comment);
    assert!(
        job.posted.contains("-  mode: slow\n+  mode: fast\n"),
        "{}",
        job.posted
    );
}

/// `kiln diff --help` has examples.
#[test]
fn help_has_an_example() {
    let o = kiln(Path::new("."), &["diff", "--help"]);
    assert_eq!(code(&o), 0);
    assert!(text(&o.stdout).contains("kiln diff --base origin/main --format markdown"));
}

/// Another system's version-control data committed to the tree (a vendored `.svn/`, `.hg/`) is
/// never an input (issue 39): left out of a revision, as a walk of the working tree leaves it
/// out, not an error that stops the diff.
#[test]
fn committed_version_control_data_of_other_systems_is_left_out() {
    let (_t, r) = repo();
    write(&r, "apps/web.yaml", CM_WEB);
    write(&r, "apps/vendor/.svn/entries.yaml", CM_OLD);
    write(&r, "apps/vendor/.hg/hgrc", "[auth]\nx.password = p\n");
    commit_all(&r, "one");
    write(&r, "apps/web.yaml", &CM_WEB.replace("slow", "fast"));
    let o = kiln(&r, &["diff", "apps"]);
    assert_eq!(code(&o), 0, "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("~ changed ConfigMap prod/web\n"),
        "{}",
        text(&o.stdout)
    );
    assert!(!text(&o.stdout).contains("prod/old"), "{}", text(&o.stdout));
}
