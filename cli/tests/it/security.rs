//! Security properties through the real `kiln` binary: secrets never appear in diagnostics or
//! logs (human text with snippets, `--diagnostics json`, `-v` logs), and `-o DIR` never writes
//! outside the directory whatever the objects are named. The limits themselves are covered by the
//! golden cases under `testdata/bad/hostile/` and `testdata/bad/secrets/`.

use std::fs;
use std::path::Path;

use crate::common;
use common::{kiln, text, write, ESCAPED_SECRET, ESCAPED_SECRET_BASE64};

/// Runs `args` in `dir` with human and with JSON diagnostics; both must fail, name the problem
/// (`needle`), print `[redacted]`, and never print any of `secrets`.
fn fails_without_leaking(dir: &Path, args: &[&str], needle: &str, secrets: &[&str]) {
    for format in ["human", "json"] {
        let mut all = args.to_vec();
        all.extend(["--diagnostics", format]);
        let out = kiln(dir, &all);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        assert!(out.stdout.is_empty(), "{format}: partial output");
        assert!(err.contains(needle), "{format}: {err}");
        assert!(err.contains("[redacted]"), "{format}: {err}");
        for s in secrets {
            assert!(!err.contains(s), "{format}: {s:?} leaked:\n{err}");
        }
    }
}

const RGD: &str = r#"apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: app}
spec:
  schema:
    apiVersion: v1alpha1
    kind: App
    spec:
      password: string | pattern="^[a-z]+$"
      token: string | default=x
      port: string | default="80"
  resources:
    - id: creds
      template:
        apiVersion: v1
        kind: Secret
        metadata: {name: "${schema.metadata.name}"}
        stringData:
          password: ${schema.spec.password}
    - id: cm
      template:
        apiVersion: v1
        kind: ConfigMap
        metadata: {name: "${schema.metadata.name}"}
        data:
          port: ${string(int(schema.spec.port))}
"#;

#[test]
fn a_value_read_by_a_secret_template_is_redacted_in_messages_and_snippets() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "rgd.yaml", RGD);
    write(
        tmp.path(),
        "instance.yaml",
        "apiVersion: kro.run/v1alpha1\nkind: App\nmetadata: {name: a}\nspec:\n  password: Hunter2-Secret\n  token: tok-0123456789\n",
    );
    fails_without_leaking(
        tmp.path(),
        &["render", "."],
        "does not match the pattern",
        &["Hunter2-Secret"],
    );
    // The human form shows the snippet, with the value blanked and the rest intact.
    let out = kiln(tmp.path(), &["render", "."]);
    let err = text(&out.stderr);
    assert!(err.contains("password: [redacted]"), "{err}");
    assert!(err.contains("tok-0123456789"), "not secret: {err}");
    // Named with --secret, the token is blanked too.
    let out = kiln(tmp.path(), &["render", ".", "--secret", "spec.token"]);
    let err = text(&out.stderr);
    assert!(!err.contains("tok-0123456789"), "{err}");
    // A bad --secret path is a usage error.
    let out = kiln(tmp.path(), &["render", ".", "--secret", "spec..x"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn secret_documents_are_blanked_from_snippets_of_broken_files() {
    let tmp = tempfile::tempdir().unwrap();
    // The file does not parse: its Secret data is found by indentation.
    write(
        tmp.path(),
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: hunter2-very-secret\n  broken: [unclosed\n",
    );
    let out = kiln(tmp.path(), &["render", "secret.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("KLN1004"), "{err}");
    assert!(!err.contains("hunter2-very-secret"), "{err}");
    // A Secret next to a failing instance: the snippet of its file shows no data value, also
    // base64 ones and their decoded text.
    write(
        tmp.path(),
        "secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\ndata:\n  key: c3VwZXItc2VjcmV0LXRva2Vu\n---\napiVersion: kro.run/v1alpha1\nkind: App\nmetadata: {name: a}\nspec: {password: Bad-Value}\n",
    );
    write(tmp.path(), "rgd.yaml", RGD);
    let out = kiln(tmp.path(), &["render", ".", "--secret", "spec.password"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    for leaked in [
        "c3VwZXItc2VjcmV0LXRva2Vu",
        "super-secret-token",
        "Bad-Value",
    ] {
        assert!(!err.contains(leaked), "{leaked}: {err}");
    }
}

/// A Secret's values copied into ConfigMaps, escaped as YAML writes them or spelled otherwise
/// (`\u2028`), and as base64: the snippets of the ConfigMaps' broken files show none of them
/// (issue 39; the same text was printed whole).
#[test]
fn secret_values_copied_in_escaped_forms_are_blanked_from_snippets() {
    let tmp = tempfile::tempdir().unwrap();
    write(tmp.path(), "secret.yaml", ESCAPED_SECRET);
    write(
        tmp.path(),
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata:\n  mode: \"hunter22\\x01zz-secret\"\n  size: 2x: [\n  sep: \"line\\u2028sep-secret\"\n",
    );
    write(
        tmp.path(),
        "cm2.yaml",
        &format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: d}}\nbinaryData:\n  b: {ESCAPED_SECRET_BASE64}\n  size: 2x: [\n"),
    );
    for format in ["human", "json"] {
        let out = kiln(tmp.path(), &["render", ".", "--diagnostics", format]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{format}: {err}");
        assert_eq!(err.matches("KLN1004").count(), 2, "{format}: {err}");
        for leaked in ["hunter22", "sep-secret", ESCAPED_SECRET_BASE64] {
            assert!(!err.contains(leaked), "{format}: {leaked} leaked:\n{err}");
        }
        if format == "human" {
            for shown in [
                "5 │   mode: [redacted]",
                "7 │   sep: \"[redacted]\"",
                "5 │   b: [redacted]",
            ] {
                assert!(err.contains(shown), "{shown}: {err}");
            }
        }
    }
}

#[test]
fn component_parameters_marked_sensitive_are_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "all.yaml",
        r#"apiVersion: openchoreo.dev/v1alpha1
kind: ComponentTypeDefinition
metadata: {name: svc}
spec:
  workloadType: deployment
  schema:
    parameters:
      apiKey: string | oc:sensitive pattern=^[a-z]+$
  resources:
    - id: deployment
      template:
        apiVersion: apps/v1
        kind: Deployment
        metadata: {name: "${metadata.name}"}
        spec:
          selector: {matchLabels: {app: x}}
          template:
            metadata: {labels: {app: x}}
            spec:
              containers: [{name: app, image: nginx, env: [{name: KEY, value: "${parameters.apiKey}"}]}]
---
apiVersion: openchoreo.dev/v1alpha1
kind: Component
metadata: {name: shop, namespace: shop}
spec:
  componentType: deployment/svc
  parameters: {apiKey: Sensitive-Api-Key-42}
---
apiVersion: openchoreo.dev/v1alpha1
kind: Workload
metadata: {name: shop, namespace: shop}
spec: {containers: {app: {image: nginx}}}
---
apiVersion: openchoreo.dev/v1alpha1
kind: ComponentDeployment
metadata: {name: shop-dev, namespace: shop}
spec: {owner: {componentName: shop}, environment: dev}
"#,
    );
    fails_without_leaking(
        tmp.path(),
        &["render", "--env", "dev", "all.yaml"],
        "does not match the pattern",
        &["Sensitive-Api-Key-42"],
    );
}

fn kurel_package(dir: &Path) {
    write(
        dir,
        "app.kurel/parameters.yaml",
        "kurel: {name: app, version: \"1.0.0\", appVersion: \"1.0\"}\ndb:\n  password: default-pass-123\n  pin: 1234\n",
    );
    write(
        dir,
        "app.kurel/resources/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData:\n  password: ${db.password}\n  pin: \"${db.pin}\"\n",
    );
    write(
        dir,
        "app.kurel/patches/10-extra.kpatch",
        "[secret.db]\nstringData.extra: patched-extra-secret\n",
    );
}

#[test]
fn kurel_values_set_on_the_command_line_and_patch_logs_are_redacted() {
    let tmp = tempfile::tempdir().unwrap();
    kurel_package(tmp.path());
    // `-v` logs every patch operation; values written into a Secret are blanked there too.
    let out = kiln(
        tmp.path(),
        &[
            "render",
            "app.kurel",
            "-v",
            "--set",
            "db.password=set-pass-456",
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("stringData.extra: [redacted]"), "{err}");
    for leaked in ["patched-extra-secret", "set-pass-456", "default-pass-123"] {
        assert!(!err.contains(leaked), "{leaked}: {err}");
    }
    // The data itself is rendered: redaction is for diagnostics and logs, not output.
    assert!(text(&out.stdout).contains("set-pass-456"));
    fails_without_leaking(
        tmp.path(),
        &["render", "app.kurel", "--set", "db.pin=abcdef-secret"],
        "KLN7021",
        &["abcdef-secret", "1234"],
    );
}

#[test]
fn output_file_names_never_leave_the_directory() {
    let tmp = tempfile::tempdir().unwrap();
    write(
        tmp.path(),
        "in/objects.yaml",
        r#"apiVersion: v1
kind: ConfigMap
metadata: {name: ../../etc/passwd, namespace: web}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a/b/c}
---
apiVersion: example.com/v1
kind: ../../Evil
metadata: {name: ..}
---
apiVersion: example.com/v1
kind: Nul
metadata: {name: x}
"#,
    );
    for layout in ["by-resource", "by-kind"] {
        let out_dir = tmp.path().join("work").join(layout);
        fs::create_dir_all(out_dir.parent().unwrap()).unwrap();
        let o = out_dir.to_str().unwrap();
        let r = kiln(
            tmp.path(),
            &[
                "render",
                "in",
                "-o",
                o,
                "--layout",
                layout,
                "--pass-through",
                "example.com",
            ],
        );
        assert!(r.status.success(), "{layout}: {}", text(&r.stderr));
        let mut names: Vec<String> = fs::read_dir(&out_dir)
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                assert!(e.file_type().unwrap().is_file(), "{:?}", e.path());
                e.file_name().into_string().unwrap()
            })
            .collect();
        names.sort();
        for n in &names {
            assert!(n == ".kiln-output" || !n.starts_with('.'), "{n}");
            assert!(!n.contains('/') && !n.contains('\\'), "{n}");
        }
        // Nothing was written beside the output directory or above it.
        let siblings: Vec<_> = fs::read_dir(out_dir.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(siblings.len(), if layout == "by-resource" { 1 } else { 2 });
        if layout == "by-resource" {
            assert_eq!(
                names,
                [
                    ".kiln-output",
                    "_.._.._evil-...yaml",
                    "configmap-a_b_c.yaml",
                    "configmap-web-.._.._etc_passwd.yaml",
                    "nul-x.yaml",
                ]
            );
        } else {
            assert_eq!(
                names,
                [
                    ".kiln-output",
                    "_.._.._evil.yaml",
                    "_nul.yaml",
                    "configmap.yaml"
                ]
            );
        }
    }
    assert!(!tmp.path().join("etc").exists());
    // A namespace that would climb (`../..`) never reaches a file name: the API server's rule
    // refuses it first (issue 39), and nothing is written.
    write(
        tmp.path(),
        "ns/objects.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ../..}\n",
    );
    let out_dir = tmp.path().join("work/ns");
    let r = kiln(
        tmp.path(),
        &["render", "ns", "-o", out_dir.to_str().unwrap()],
    );
    assert_eq!(r.status.code(), Some(1), "{}", text(&r.stderr));
    assert!(text(&r.stderr).contains("KLN5006"), "{}", text(&r.stderr));
    assert!(!out_dir.exists());
}

/// A kurel patch file is read for secrets by kurel itself (`kurel::secrets`, handed to redaction
/// by `request::collect_secrets`): a patch that does not parse still has the value it writes into
/// a Secret blanked from the snippet of its own syntax error.
#[test]
fn a_broken_kurel_patch_keeps_its_secret_lines_out_of_snippets() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    write(
        dir,
        "app.kurel/parameters.yaml",
        "kurel: {name: app, version: \"1.0.0\", appVersion: \"1.0\"}\nreplicas: 1\n",
    );
    write(
        dir,
        "app.kurel/resources/secret.yaml",
        "apiVersion: v1\nkind: Secret\nmetadata: {name: db}\nstringData: {password: from-resource}\n",
    );
    write(
        dir,
        "app.kurel/patches/10-extra.kpatch",
        "[secret.db]\nstringData.extra: patched-extra-secret\nstringData.other: [unclosed\n",
    );
    fails_without_leaking(
        dir,
        &["render", "app.kurel"],
        "KLN7011",
        &["patched-extra-secret"],
    );
}
