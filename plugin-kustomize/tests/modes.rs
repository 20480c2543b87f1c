//! The kiln-krm binary's modes and exit codes, without an orchestrator: the envelope answered in
//! kind, pass-through items byte for byte, bad input as error results with exit 1, the schema,
//! standalone mode.

mod common;

use std::process::Command;

use common::*;

fn krm(args: &[&str], stdin: &str, cwd: &std::path::Path) -> std::process::Output {
    run(Command::new(bin()).args(args).current_dir(cwd), stdin)
}

const RL: &str = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\n";

#[test]
fn pass_through_items_come_back_byte_for_byte_with_their_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let input = format!(
        "{RL}items:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: a\n    annotations:\n      config.kubernetes.io/index: '0'\n      internal.config.kubernetes.io/path: 'x.yaml'\n      config.kubernetes.io/path: 'x.yaml'\n      config.k8s.io/id: '1'\n      kustomize.config.k8s.io/id: |\n        kind: ConfigMap\n  data: {{k: 'v', n: \"1\"}}   # flow style\n"
    );
    let o = krm(&[], &input, tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out, input, "pass-through changed");
}

#[test]
fn envelopes_are_answered_in_kind() {
    let tmp = tempfile::tempdir().unwrap();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n";
    let o = krm(
        &[],
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: ResourceList\nitems: []\nfunctionConfig: {apiVersion: v1, kind: ConfigMap, data: {allowEmpty: 'true'}}\n",
        tmp.path(),
    );
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "apiVersion: config.kubernetes.io/v1alpha1\nkind: ResourceList\nitems: []\n"
    );
    let o = krm(&[], "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n", tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    // A pass-through item keeps its own text (flow style here).
    assert_eq!(String::from_utf8_lossy(&o.stdout), "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n");
    let o = krm(&[], &format!("{cm}---\n{cm}"), tmp.path());
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("{cm}---\n{cm}"));
}

#[test]
fn bad_input_is_an_error_result_and_exit_1() {
    let tmp = tempfile::tempdir().unwrap();
    for (input, expect) in [
        (format!("{RL}items: {{a: 1}}\n"), "items must be a list"),
        (format!("{RL}items:\n- 3\n"), "items[0] is a number"),
        (format!("{RL}items: [\n"), "KLN1004"),
        (format!("{RL}items: []\nfunctionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, spec: {{paths: 3}}}}\n"), "spec.paths must be a list"),
        (format!("{RL}items: []\nfunctionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, spec: {{paths: [../up]}}}}\n"), "KLN1002"),
        (format!("{RL}items:\n- {{kind: ConfigMap, metadata: {{name: x}}}}\n"), "KLN1006"),
    ] {
        let o = krm(&[], &input, tmp.path());
        assert_eq!(o.status.code(), Some(1), "{input}\n{}", show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.starts_with("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:"), "{out}");
        assert!(out.contains("severity: error") && out.contains(expect), "{expect}: {out}");
        assert!(String::from_utf8_lossy(&o.stderr).contains("error[KLN"), "{}", show(&o));
    }
    // On failure the input items come back, never an empty list.
    let input = format!("{RL}items:\n- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: keep}}}}\nfunctionConfig: {{apiVersion: v1, kind: ConfigMap, data: {{bogus: x}}}}\n");
    let o = krm(&[], &input, tmp.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("name: keep"),
        "{}",
        show(&o)
    );
}

#[test]
fn schema_and_usage() {
    let tmp = tempfile::tempdir().unwrap();
    let o = krm(&["schema"], "", tmp.path());
    assert!(o.status.success());
    let s: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["properties"]["kind"]["const"], "Render");
    let o = krm(&["install-exec-plugin", "--bogus"], "", tmp.path());
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn standalone_reads_a_config_file_and_inputs() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("krm/kro"), tmp.path());
    std::fs::write(tmp.path().join("c.yaml"), "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\nspec: {namespace: ns}\n").unwrap();
    let o = krm(
        &["c.yaml", "rgd.yaml", "apps/shop.yaml", "-"],
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-stdin}\n",
        tmp.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("name: from-stdin") && out.contains("kind: Deployment"),
        "{out}"
    );
    assert!(
        !out.contains("kind: WebApp") && !out.contains("kind: ResourceGraphDefinition"),
        "{out}"
    );
    // A failure writes nothing on stdout.
    std::fs::write(tmp.path().join("bad.yaml"), "apiVersion: example.com/v1alpha1\nkind: WebApp\nmetadata: {name: x}\nspec: {replicas: 2}\n").unwrap();
    let o = krm(&["c.yaml", "rgd.yaml", "bad.yaml"], "", tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(o.stdout.is_empty());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("bad.yaml"),
        "{}",
        show(&o)
    );
}

/// `mode: kro` in the functionConfig: the RGD and the defaulted instance come back as items, with
/// sync waves; nothing is rendered. Observed paths stay inside the root.
#[test]
fn kro_mode_ships_definitions_through_the_function() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("krm/kro"), tmp.path());
    let cfg = "functionConfig: {apiVersion: fn.kiln.dev/v1alpha1, kind: Render, spec: {paths: [rgd.yaml, apps], mode: kro, syncWaves: true}}\n";
    let o = krm(&[], &format!("{RL}items: []\n{cfg}"), tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("kind: ResourceGraphDefinition"), "{out}");
    assert!(
        out.contains("argocd.argoproj.io/sync-wave: \"-1\""),
        "{out}"
    );
    assert!(
        !out.contains("kiln.dev/node"),
        "kro mode rendered objects:\n{out}"
    );
    let escape = "functionConfig: {apiVersion: fn.kiln.dev/v1alpha1, kind: Render, spec: {paths: [rgd.yaml], observed: [../live.yaml]}}\n";
    let o = krm(&[], &format!("{RL}items: []\n{escape}"), tmp.path());
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("KLN1002"),
        "{}",
        show(&o)
    );
}

/// A ResourceList of `n` ConfigMaps in flow style (about 60 bytes each).
fn big_list(n: usize) -> String {
    let mut s = format!("{RL}items:\n");
    for i in 0..n {
        s.push_str(&format!(
            "- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: c{i}}}}}\n"
        ));
    }
    s
}

/// stdin is read within `input-bytes` (`--limit`, as the CLI's): a larger input is refused
/// with KLN1005 naming the limit, as a KRM result in function mode and on stderr in standalone
/// mode, before the whole input is held in memory.
#[test]
fn input_over_the_limit_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let input = big_list(20_000);
    assert!(input.len() > 1 << 20);
    let o = krm(&["--limit", "input-bytes=64Ki"], &input, tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.starts_with(&format!("{RL}items: []\nresults:\n")),
        "{out}"
    );
    assert!(
        out.contains("KLN1005") && out.contains("65536 bytes") && out.contains("input-bytes"),
        "{out}"
    );
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("error[KLN1005]"),
        "{}",
        show(&o)
    );
    // The limit stops the reading: of an endless input, kiln-krm reads little more than the
    // limit (the pipe holds at most a few of the 1 MiB chunks) and answers.
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(bin())
        .args(["--limit", "input-bytes=64Ki"])
        .current_dir(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = format!("{RL}items:\n{}", "# padding\n".repeat(100_000));
        let mut written = 0usize;
        // At most 512 MiB: an unbounded reader would take them all.
        while written < 512 << 20 && stdin.write_all(chunk.as_bytes()).is_ok() {
            written += chunk.len();
        }
        written
    });
    let o = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("KLN1005"));
    assert!(
        written < 16 << 20,
        "kiln-krm read {written} bytes of an input over a 64 KiB limit"
    );

    // Within the limit the same input is answered.
    let o = krm(&["--limit=input-bytes=4Mi"], &input, tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), input);

    // Standalone: stdin and files alike.
    std::fs::write(
        tmp.path().join("c.yaml"),
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\n",
    )
    .unwrap();
    std::fs::write(tmp.path().join("big.yaml"), &input).unwrap();
    for args in [
        ["--limit", "input-bytes=64Ki", "c.yaml", "-"],
        ["--limit", "input-bytes=64Ki", "c.yaml", "big.yaml"],
    ] {
        let o = krm(&args, &input, tmp.path());
        assert_eq!(o.status.code(), Some(1), "{args:?}\n{}", show(&o));
        assert!(o.stdout.is_empty(), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("KLN1005") && err.contains("65536"), "{err}");
    }
    // A malformed limit is a usage error.
    let o = krm(&["--limit", "input-bytes=lots"], "", tmp.path());
    assert_eq!(o.status.code(), Some(2), "{}", show(&o));
}

/// A failed write of the answer is reported, not swallowed: stdout on a full device exits 1
/// with the error on stderr; a reader that went away (a broken pipe) exits 141 quietly, as SIGPIPE would end it.
#[test]
fn write_errors_fail_the_run() {
    let tmp = tempfile::tempdir().unwrap();
    let input = big_list(10);
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let o = run_to(
        Command::new(bin()).current_dir(tmp.path()).stdout(full),
        &input,
    );
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot write") && err.contains("No space left on device"),
        "{err}"
    );

    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(bin())
        .current_dir(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before kiln-krm answers (it answers only once stdin is closed).
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(big_list(2000).as_bytes()).unwrap();
    drop(stdin);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(141), "{}", show(&o));
    assert!(o.stderr.is_empty(), "{}", show(&o));
}

/// Standalone and legacy exec-plugin output is `kiln render`'s output of the same inputs, byte
/// for byte: no kpt bookkeeping (`config.kubernetes.io/path`, `…/index`, `internal.…`), the
/// same order.
#[test]
fn standalone_and_legacy_output_equal_kiln_render() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("krm/kro"), tmp.path());
    std::fs::write(
        tmp.path().join("c.yaml"),
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\nspec: {namespace: team}\n",
    )
    .unwrap();
    let kiln = kiln_cli();
    let files = ["rgd.yaml", "apps/shop.yaml", "other/cm.yaml"];
    let expected = run(
        Command::new(&kiln)
            .args(["render", "--namespace", "team"])
            .args(files)
            .current_dir(tmp.path()),
        "",
    );
    assert!(expected.status.success(), "{}", show(&expected));
    let expected = String::from_utf8(expected.stdout).unwrap();
    assert!(expected.contains("kind: Deployment"), "{expected}");

    let mut args = vec!["c.yaml"];
    args.extend(files);
    let o = krm(&args, "", tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(String::from_utf8(o.stdout).unwrap(), expected, "standalone");

    // The legacy exec plugin: the same objects as a stream on stdin.
    let stream: Vec<String> = files.iter().map(|f| read(&tmp.path().join(f))).collect();
    let stream = stream.join("---\n");
    let expected = run(
        Command::new(&kiln)
            .args(["render", "--namespace", "team", "-"])
            .current_dir(tmp.path()),
        &stream,
    );
    assert!(expected.status.success(), "{}", show(&expected));
    let expected = String::from_utf8(expected.stdout).unwrap();
    let plugin = tmp.path().join("plugin");
    let o = krm(
        &["install-exec-plugin", "--dir", plugin.to_str().unwrap()],
        "",
        tmp.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    let render = plugin.join("fn.kiln.dev/v1alpha1/render/Render");
    let o = run(
        Command::new(&render).arg("c.yaml").current_dir(tmp.path()),
        &stream,
    );
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert!(!out.contains("config.kubernetes.io"), "{out}");
    assert_eq!(out, expected, "legacy exec plugin");

    // A kurel package under `paths`, with values and overrides.
    let k = tmp.path().join("kurel");
    copy_dir(&testdata().join("kurel/values"), &k);
    std::fs::write(
        k.join("c.yaml"),
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\nspec:\n  paths: [app.kurel]\n  values: [values/prod.yaml, values/region.yaml]\n  set: {replicas: 7, image: \"nginx:1.28\"}\n",
    )
    .unwrap();
    let expected = run(
        Command::new(&kiln)
            .args(["render", "app.kurel", "--values", "values/prod.yaml"])
            .args(["--values", "values/region.yaml", "--set", "replicas=7"])
            .args(["--set", "image=nginx:1.28"])
            .current_dir(&k),
        "",
    );
    assert!(expected.status.success(), "{}", show(&expected));
    let o = krm(&["c.yaml"], "", &k);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(o.stdout, expected.stdout, "kurel");
}

/// A generator with nothing to render fails, as the other doors do, unless `allowEmpty` says
/// an empty output is meant: `paths` that render nothing, or neither items nor `paths`.
#[test]
fn a_generator_with_nothing_to_render_fails_unless_empty_is_allowed() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join("empty")).unwrap();
    std::fs::write(tmp.path().join("empty/cm.yaml"), "# nothing here yet\n").unwrap();
    let cfg = |spec: &str| {
        format!("{RL}items: []\nfunctionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, spec: {spec}}}\n")
    };
    for spec in ["{paths: [empty]}", "{}"] {
        let o = krm(&[], &cfg(spec), tmp.path());
        assert_eq!(o.status.code(), Some(1), "{spec}\n{}", show(&o));
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(
            out.contains("KLN1010: nothing to render") && out.contains("allowEmpty"),
            "{out}"
        );
        // Issue 38.6: in plain words, no double negative.
        let plain = if spec == "{}" {
            "given no items to render and no `paths`"
        } else {
            "`paths` (empty) hold no definition with instances"
        };
        assert!(out.contains(plain) && !out.contains("neither"), "{out}");
        let allowed = spec.replacen('{', "{allowEmpty: true, ", 1);
        let o = krm(&[], &cfg(&allowed), tmp.path());
        assert!(o.status.success(), "{allowed}\n{}", show(&o));
        assert_eq!(
            String::from_utf8_lossy(&o.stdout),
            format!("{RL}items: []\n")
        );
    }
    // Standalone (the legacy exec plugin's form): nothing on stdout, exit 1.
    std::fs::write(
        tmp.path().join("c.yaml"),
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\nspec: {paths: [empty]}\n",
    )
    .unwrap();
    let o = krm(&["c.yaml"], "", tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(o.stdout.is_empty());
    assert!(String::from_utf8_lossy(&o.stderr).contains("nothing to render"));
    // A transformer handed items but no source of kiln's hands them back: the orchestrator's
    // items, not a generator.
    let o = krm(
        &[],
        &format!("{RL}items:\n- {{apiVersion: v1, kind: ConfigMap, metadata: {{name: a}}}}\n"),
        tmp.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
}

/// The KRM rule for failures: the answer holds the input items exactly as received (never an
/// empty list a `kpt fn sink` would turn into an empty package), beside the error results, and
/// the exit code is 1. Each kind of failure after the input was read: a configuration error, a
/// rendering error, nothing to render.
#[test]
fn a_failed_run_echoes_the_input_items() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&testdata().join("krm/kro"), tmp.path());
    let rgd = read(&tmp.path().join("rgd.yaml"));
    let indent = |doc: &str| -> String {
        let mut s = String::new();
        for (i, l) in doc.lines().enumerate() {
            s.push_str(if i == 0 {
                "- "
            } else if l.is_empty() {
                ""
            } else {
                "  "
            });
            s.push_str(l);
            s.push('\n');
        }
        s
    };
    let items = format!(
        "items:\n{}- {{apiVersion: example.com/v1alpha1, kind: WebApp, metadata: {{name: big}}, spec: {{image: x, replicas: 50}}}}\n- apiVersion: v1   # a comment\n  kind: ConfigMap\n  metadata: {{name: 'quoted', annotations: {{config.kubernetes.io/path: cm.yaml}}}}\n",
        indent(rgd.trim_start_matches("---\n"))
    );
    let config = |spec: &str| {
        format!("functionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, metadata: {{name: r}}, spec: {spec}}}\n")
    };
    for (config, expect) in [
        (config("{}"), "KLN5001"),
        (config("{colour: red}"), "spec.colour"),
        (config("{paths: [missing.yaml]}"), "KLN1001"),
    ] {
        let input = format!("{RL}{items}{config}");
        let o = krm(&[], &input, tmp.path());
        assert_eq!(o.status.code(), Some(1), "{input}\n{}", show(&o));
        let out = String::from_utf8(o.stdout.clone()).unwrap();
        let (answered, results) = out
            .strip_prefix(RL)
            .and_then(|r| r.split_once("results:\n"))
            .unwrap_or_else(|| panic!("{out}"));
        assert_eq!(answered, items, "the items were not echoed");
        assert!(
            results.contains(expect) && results.contains("severity: error"),
            "{expect}: {results}"
        );
    }
}

/// `strict: true` makes a warning fail the run like an error (issue 40: a component without a
/// Workload yet is a warning): exit 1 and the input items echoed. Without `strict` the warning is
/// a result and the other components render.
#[test]
fn a_strict_run_fails_on_a_warning_alone() {
    let case = testdata().join("component/upstream-sample-from-source-without-workload");
    let items = "items:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: keep, annotations: {config.kubernetes.io/path: cm.yaml}}}\n";
    let paths = "[00-platform.yaml, 01-type-service.yaml, 02-greeter-service.yaml, 03-greeting-service.yaml, 04-bindings.yaml]";
    for strict in [false, true] {
        let input = format!(
            "{RL}{items}functionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, metadata: {{name: r}}, spec: {{paths: {paths}, strict: {strict}}}}}\n"
        );
        let o = krm(&[], &input, &case);
        let out = String::from_utf8(o.stdout.clone()).unwrap();
        assert!(
            out.contains("KLN6010") && out.contains("greeting-service"),
            "{}",
            show(&o)
        );
        if strict {
            assert_eq!(o.status.code(), Some(1), "{}", show(&o));
            let answered = out
                .strip_prefix(RL)
                .and_then(|r| r.split_once("results:\n"))
                .map(|(a, _)| a);
            assert_eq!(answered, Some(items), "the items were not echoed: {out}");
        } else {
            assert_eq!(o.status.code(), Some(0), "{}", show(&o));
            assert!(out.contains("kind: Deployment"), "{out}");
        }
    }
}

/// kiln-core's hints name the `kiln` CLI's flags; kiln-krm's results and stderr say the Render
/// spec fields instead (`passThrough`, not `--pass-through`).
#[test]
fn hints_name_render_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let input = format!(
        "{RL}items:\n- {{apiVersion: cert-manager.io/v1, kind: Certificate, metadata: {{name: shop}}}}\n"
    );
    let o = krm(&[], &input, tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let err = String::from_utf8_lossy(&o.stderr);
    for text in [&out, &err] {
        assert!(
            text.contains("KLN1011") && text.contains("passThrough: [cert-manager.io]"),
            "{text}"
        );
        assert!(
            !text.contains("--pass-through") && !text.contains("--crds"),
            "{text}"
        );
    }
}

/// The legacy exec plugin reads stdin within the default `input-bytes` limit (64 MiB; it takes
/// no `--limit`): an endless stdin is refused once past it, with nothing on stdout.
#[test]
fn the_legacy_exec_plugin_reads_stdin_within_the_default_limit() {
    use std::io::Write;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().unwrap();
    let plugin = tmp.path().join("plugin");
    let o = krm(
        &["install-exec-plugin", "--dir", plugin.to_str().unwrap()],
        "",
        tmp.path(),
    );
    assert!(o.status.success(), "{}", show(&o));
    std::fs::write(
        tmp.path().join("c.yaml"),
        "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: c}\n",
    )
    .unwrap();
    let mut child = Command::new(plugin.join("fn.kiln.dev/v1alpha1/render/Render"))
        .arg("c.yaml")
        .current_dir(tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let chunk = "# padding\n".repeat(100_000);
        let mut written = 0usize;
        while written < 512 << 20 && stdin.write_all(chunk.as_bytes()).is_ok() {
            written += chunk.len();
        }
        written
    });
    let o = child.wait_with_output().unwrap();
    let written = writer.join().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    assert!(o.stdout.is_empty());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("KLN1005") && err.contains("67108864"), "{err}");
    assert!(written < 80 << 20, "read {written} bytes");
}

/// Items are parsed and rendered on the worker threads: an item nested as deep as `yaml-depth`
/// allows (128) must not overflow their stacks, in this unoptimised build too (on rayon's
/// default 2 MiB stacks, 124 levels aborted the process).
#[test]
fn items_nested_to_the_depth_limit_pass_through_on_the_workers() {
    let tmp = tempfile::tempdir().unwrap();
    let depth = 124;
    let mut nested = String::new();
    for d in 0..depth {
        nested.push_str(&format!("{}k{d}:\n", " ".repeat(4 + 2 * d)));
    }
    nested.push_str(&format!("{}v\n", " ".repeat(4 + 2 * depth)));
    let mut input = format!(
        "{RL}functionConfig:\n  apiVersion: fn.kiln.dev/v1alpha1\n  kind: Render\n  metadata: {{name: f}}\n  spec:\n    passThrough: ['*']\nitems:\n"
    );
    for i in 0..64 {
        input.push_str(&format!(
            "- apiVersion: example.com/v1\n  kind: Thing\n  metadata:\n    name: t{i}\n  spec:\n{nested}"
        ));
    }
    let o = krm(&[], &input, tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(out.matches("kind: Thing\n").count(), 64, "{out}");
    assert!(
        out.contains(&format!("k{}:", depth - 1)),
        "the deepest key is kept"
    );
}

/// Set an item's file and index as kpt does (internal and legacy annotations alike).
fn place(v: &mut serde_json::Value, path: &str, index: usize) {
    let ann = serde_json::json!({
        "internal.config.kubernetes.io/path": path,
        "config.kubernetes.io/path": path,
        "internal.config.kubernetes.io/index": index.to_string(),
        "config.kubernetes.io/index": index.to_string(),
    });
    v["metadata"]["annotations"] = ann;
}

/// testdata/krm/kro's ResourceGraphDefinition as an item of `rgd.yaml`.
fn webapp_rgd() -> serde_json::Value {
    let text = read(&testdata().join("krm/kro/rgd.yaml"));
    let mut rgd = parse_one("rgd.yaml", text);
    place(&mut rgd, "rgd.yaml", 0);
    rgd
}

/// A ResourceList answer, read.
fn answer(stdout: Vec<u8>) -> serde_json::Value {
    parse_one("out", String::from_utf8(stdout).unwrap())
}

fn parse_one(name: &str, text: String) -> serde_json::Value {
    kiln_core::document::parse_file(name, text, &Default::default())
        .unwrap()
        .remove(0)
        .value
}

/// The item of `kind` and `name` in a ResourceList answer.
fn item<'a>(list: &'a serde_json::Value, kind: &str, name: &str) -> &'a serde_json::Value {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in {list}"))
}

/// Where kpt writes the answer back, a rendered object goes after whatever already sits in its
/// file: with an item of the user's at index 0 of `apps/deployment_shop.yaml`, the Deployment
/// rendered into that file takes index 1 (written at 0, kpt would put two documents in one
/// place); the Service, alone in its file, takes 0.
#[test]
fn rendered_objects_go_after_the_items_already_in_their_file() {
    let tmp = tempfile::tempdir().unwrap();
    let rgd = webapp_rgd();
    let mut shop = serde_json::json!({"apiVersion": "example.com/v1alpha1", "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "shop"}, "spec": {"image": "shop:1"}});
    place(&mut shop, "apps/shop.yaml", 0);
    let mut notes = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "notes", "namespace": "shop"}, "data": {"k": "v"}});
    place(&mut notes, "apps/deployment_shop.yaml", 0);
    let input = format!("{RL}items:\n- {rgd}\n- {shop}\n- {notes}\n");
    let o = krm(&[], &input, tmp.path());
    assert!(o.status.success(), "{}", show(&o));
    let out = answer(o.stdout);
    let at = |kind: &str, name: &str| {
        let a = &item(&out, kind, name)["metadata"]["annotations"];
        (
            a["internal.config.kubernetes.io/path"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            a["internal.config.kubernetes.io/index"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    assert_eq!(
        at("ConfigMap", "notes"),
        ("apps/deployment_shop.yaml".into(), "0".into())
    );
    assert_eq!(
        at("Deployment", "shop"),
        ("apps/deployment_shop.yaml".into(), "1".into())
    );
    assert_eq!(
        at("Service", "shop"),
        ("apps/service_shop.yaml".into(), "0".into())
    );
}

/// Items of one file that share an index (a hand-made list) are still told apart: of two
/// instances at index 0 of `apps/two.yaml`, a problem with the first is reported on the first
/// (each is read under a name of its own), not on the other.
#[test]
fn items_that_share_a_file_and_index_are_told_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let rgd = webapp_rgd();
    let mut good = serde_json::json!({"apiVersion": "example.com/v1alpha1", "kind": "WebApp",
        "metadata": {"name": "good"}, "spec": {"image": "good:1"}});
    place(&mut good, "apps/two.yaml", 0);
    let mut bad = serde_json::json!({"apiVersion": "example.com/v1alpha1", "kind": "WebApp",
        "metadata": {"name": "bad"}, "spec": {"image": "bad:1", "replicas": 99}});
    place(&mut bad, "apps/two.yaml", 0);
    // The bad one first: were both read under one name, its problem would land on the last.
    let input = format!("{RL}items:\n- {rgd}\n- {bad}\n- {good}\n");
    let o = krm(&[], &input, tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let out = answer(o.stdout);
    let results = out["results"].as_array().expect("results");
    let errors: Vec<&serde_json::Value> = results
        .iter()
        .filter(|r| r["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{results:?}");
    assert_eq!(errors[0]["resourceRef"]["name"], "bad", "{results:?}");
}

/// A Secret's value (a control character and a line separator in it) that a template copies
/// into another object as base64, where a check quotes it: the results and stderr blank it
/// (issue 39; `testdata/bad/secrets/base64-of-a-secret`).
#[test]
fn secret_values_in_any_form_never_reach_results() {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(
        &testdata().join("bad/secrets/base64-of-a-secret"),
        &tmp.path().join("app"),
    );
    let input = format!(
        "{RL}items: []\nfunctionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, metadata: {{name: r}}, spec: {{paths: [app]}}}}\n"
    );
    let o = krm(&[], &input, tmp.path());
    assert_eq!(o.status.code(), Some(1), "{}", show(&o));
    let all = show(&o);
    assert!(
        all.contains("KLN5001") && all.contains("[redacted]"),
        "{all}"
    );
    // The value as written, and its base64.
    for leaked in ["Hunter2-Secret", "SHVudGVyMi1TZWNyZXQB"] {
        assert!(!all.contains(leaked), "{leaked}: {all}");
    }
}

/// A functionConfig's `set` value of 20 MB and an `environment` of 1 MB (issue 39: both were
/// echoed whole, into the results and again on stderr): each is quoted by its first 48
/// characters and its length.
#[test]
fn huge_set_and_environment_values_are_quoted_by_a_prefix() {
    let tmp = tempfile::tempdir().unwrap();
    let pkg = tmp.path().join("app.kurel");
    std::fs::create_dir_all(pkg.join("resources")).unwrap();
    std::fs::write(
        pkg.join("parameters.yaml"),
        "kurel: {name: app, version: 1.0.0, appVersion: \"1.0\"}\nreplicas: 1\n",
    )
    .unwrap();
    std::fs::write(
        pkg.join("resources/cm.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: web}\ndata: {replicas: \"${replicas}\"}\n",
    )
    .unwrap();
    for (field, len) in [
        ("set: {replicas: V}", 20 << 20),
        ("environment: V", 1 << 20),
    ] {
        let spec = field.replace('V', &"v".repeat(len));
        let input = format!(
            "{RL}items: []\nfunctionConfig: {{apiVersion: fn.kiln.dev/v1alpha1, kind: Render, metadata: {{name: r}}, spec: {{paths: [app.kurel], {spec}}}}}\n"
        );
        let o = krm(&[], &input, tmp.path());
        assert_eq!(o.status.code(), Some(1), "{field}");
        let printed = o.stdout.len() + o.stderr.len();
        let quoted = format!("\"{}\"… ({len} bytes)", "v".repeat(48));
        let all = show(&o);
        assert!(
            printed < 4096 && all.contains(&quoted),
            "{field}: {printed} bytes: {}",
            &all[..all.len().min(600)]
        );
    }
}

/// An object marked as rendered by another configuration stays while its source is a file with
/// documents under the root; the mark is the package's text, so looking the source up reads
/// only what a path of the package may (issue 39): never version-control data (`.git/config`,
/// which holds documents-like lines), never a file a link leads to outside the root. Such a
/// source counts as gone, as a deleted file does: the stale object is dropped.
#[cfg(unix)]
#[test]
fn a_rendered_mark_never_looks_into_version_control_data_or_outside_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("pkg");
    std::fs::create_dir_all(root.join(".git")).unwrap();
    std::fs::write(root.join(".git/config"), "[core]\n\tbare = false\n").unwrap();
    std::fs::write(tmp.path().join("outside.yaml"), "a: 1\n").unwrap();
    std::os::unix::fs::symlink("../outside.yaml", root.join("link.yaml")).unwrap();
    std::fs::write(root.join("other.yaml"), "a: 1\n").unwrap();
    for (source, kept) in [
        (".git/config", false),
        ("link.yaml", false),
        ("other.yaml", true),
    ] {
        let mut user = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "user", "namespace": "web"}});
        place(&mut user, "x.yaml", 0);
        let mut old = serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "old", "namespace": "web"}});
        place(&mut old, "old.yaml", 0);
        old["metadata"]["annotations"]["kiln.dev/rendered-from"] = source.into();
        let o = krm(&[], &format!("{RL}items:\n- {user}\n- {old}\n"), &root);
        assert!(o.status.success(), "{source}: {}", show(&o));
        let out = answer(o.stdout);
        let names: Vec<&str> = out["items"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|i| i["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names.contains(&"old"), kept, "{source}: {names:?}");
    }
}
