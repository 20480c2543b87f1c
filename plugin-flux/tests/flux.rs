//! The `kiln-flux` executable end to end, over `testdata/flux-door/`.

use kiln_test_support::Cmd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use kiln_test_support::{copy_dir, flux_preview, text, tool};
use sha2::{Digest, Sha256};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/flux-door/repo")
}

fn vars() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/flux-door/vars")
}

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("runs")
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn ks() -> String {
    repo().join("clusters/prod/apps.yaml").display().to_string()
}

#[test]
fn a_kustomization_with_postbuild_and_substitute_from_shows_what_flux_applies() {
    tool("kubectl");
    let out = run(&flux_preview(
        &ks(),
        s(&repo()),
        &["--substitute", "--vars-from", s(&vars())],
    ));
    let stdout = text(&out.stdout);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let docs: Vec<&str> = stdout.split("\n---\n").collect();
    assert_eq!(
        docs.len(),
        5,
        "two sites of two objects and the settings:\n{stdout}"
    );
    // kustomize's order, the Kustomization's transformations, then substitution.
    let find = |name: &str| {
        *docs
            .iter()
            .find(|d| d.contains(&format!("name: {name}\n")))
            .unwrap_or_else(|| panic!("{name} in\n{stdout}"))
    };
    let settings = find("prod-settings");
    assert!(settings.contains("region: eu-west-1"), "{settings}");
    assert!(settings.contains("env: prod"), "{settings}");
    assert!(settings.contains("namespace: web"), "{settings}");
    assert!(settings.contains("team: web"), "commonMetadata: {settings}");
    let shop = find("prod-shop");
    assert!(
        shop.contains("image: ghcr.io/example/shop:1.0.1"),
        "images: {shop}"
    );
    assert!(
        shop.contains("rollout: prod"),
        "patches, substituted: {shop}"
    );
    assert!(
        shop.contains("name: prod-shop-start"),
        "a reference renamed: {shop}"
    );
    // The script's ${HOME} came from the ConfigMap: Flux substitutes kiln's output too, and
    // the safety check said so.
    assert!(find("prod-shop-start").contains("--home /home/app"));
    assert!(
        stderr.contains("warning[KLN8008]: sites.yaml: data[\"start.sh\"]: ConfigMap shop-start"),
        "{stderr}"
    );
    assert!(!stdout.contains("${"), "{stdout}");
}

#[test]
fn protect_keeps_kiln_output_through_substitution() {
    tool("kubectl");
    for how in ["escape", "annotate"] {
        let out = run(&flux_preview(
            &ks(),
            s(&repo()),
            &[
                "--substitute",
                "--vars-from",
                s(&vars()),
                &format!("--protect={how}"),
            ],
        ));
        let stdout = text(&out.stdout);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        assert!(
            stdout.contains("exec /app --home ${HOME}"),
            "{how}: {stdout}"
        );
        // The user's own manifests are still substituted.
        assert!(stdout.contains("region: eu-west-1"), "{how}: {stdout}");
        // Protected objects are not reported as changed by substitution.
        assert!(
            !text(&out.stderr).contains("KLN8008"),
            "{how}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn the_in_place_tree_keeps_the_layout_and_the_bytes() {
    let d = tempfile::tempdir().unwrap();
    let out_dir = d.path().join("out");
    let deploy = repo().join("deploy");
    let out = run(&["build", s(&deploy), "-o", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
    let mut files = Vec::new();
    fn list(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                list(&p, base, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    list(&out_dir, &out_dir, &mut files);
    files.sort();
    // The definition is consumed; the instances' file holds their objects; the rest as written,
    // but for what the tree's `.sourceignore` leaves out of Flux's artifact (`hooks/`).
    assert_eq!(
        files,
        [
            ".sourceignore",
            "kustomization.yaml",
            "settings.yaml",
            "sites.yaml"
        ]
    );
    for same in [".sourceignore", "kustomization.yaml", "settings.yaml"] {
        assert_eq!(
            std::fs::read(out_dir.join(same)).unwrap(),
            std::fs::read(deploy.join(same)).unwrap(),
            "{same} is copied byte for byte"
        );
    }
    let sites = std::fs::read_to_string(out_dir.join("sites.yaml")).unwrap();
    assert_eq!(
        sites.matches("\nkind: ").count() + usize::from(sites.starts_with("kind: ")),
        4,
        "{sites}"
    );
    #[cfg(unix)]
    {
        // Without the `.sourceignore`, the hook is kept, and stays executable.
        use std::os::unix::fs::PermissionsExt;
        let tree = d.path().join("deploy");
        std::fs::create_dir_all(&tree).unwrap();
        copy_dir(&deploy, &tree);
        std::fs::remove_file(tree.join(".sourceignore")).unwrap();
        let all = d.path().join("all");
        let out = run(&["build", s(&tree), "-o", s(&all)]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let mode = std::fs::metadata(all.join("hooks/migrate.sh"))
            .unwrap()
            .permissions()
            .mode();
        assert_ne!(mode & 0o100, 0, "the script stays executable");
    }
    // The stream on stdout is the same tree's manifests.
    let stream = run(&["build", s(&deploy)]);
    let stdout = text(&stream.stdout);
    assert!(
        stdout.starts_with("# Plain manifests"),
        "settings.yaml first, as written: {stdout}"
    );
    assert!(stdout.contains("name: shop-start"));
    assert!(!stdout.contains("kind: ResourceGraphDefinition"));
    assert!(
        !stdout.contains("resources:"),
        "kustomization.yaml is not a manifest"
    );

    // A non-empty output directory is refused, and left alone.
    let again = run(&["build", s(&deploy), "-o", s(&out_dir)]);
    assert_eq!(again.status.code(), Some(1));
    assert!(text(&again.stderr).contains("not empty"));
}

#[test]
fn kubectl_kustomize_accepts_the_in_place_tree() {
    let kubectl = tool("kubectl");
    let d = tempfile::tempdir().unwrap();
    let out_dir = d.path().join("out");
    let out = run(&["build", s(&repo().join("deploy")), "-o", s(&out_dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let k = Command::new(kubectl)
        .arg("kustomize")
        .arg(&out_dir)
        .output()
        .unwrap();
    assert!(k.status.success(), "{}", text(&k.stderr));
    let built = text(&k.stdout);
    assert_eq!(built.matches("kind: Deployment").count(), 2, "{built}");
    assert!(built.contains("name: settings"));
}

#[test]
fn the_artifact_is_reproducible_and_its_digest_is_the_files_sha256() {
    let d = tempfile::tempdir().unwrap();
    // Without its `.sourceignore`, so that the hook (and its directory) is packed.
    let deploy = d.path().join("deploy");
    std::fs::create_dir_all(&deploy).unwrap();
    copy_dir(&repo().join("deploy"), &deploy);
    std::fs::remove_file(deploy.join(".sourceignore")).unwrap();
    let mut seen = Vec::new();
    for name in ["a.tar.gz", "b.tar.gz"] {
        let file = d.path().join(name);
        let out = run(&[
            "build",
            s(&deploy),
            "--artifact",
            s(&file),
            "--revision",
            "v1.2.0",
        ]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let bytes = std::fs::read(&file).unwrap();
        let hex: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(status["digest"], format!("sha256:{hex}"));
        assert_eq!(status["revision"], format!("v1.2.0@sha256:{hex}"));
        assert_eq!(status["size"], bytes.len());
        assert_eq!(status["path"], s(&file));
        seen.push(bytes);
    }
    assert_eq!(seen[0], seen[1], "same tree, same bytes");

    // A real tar reads it: Flux's header rules, no symlinks.
    let tar = tool("tar");
    let list = Command::new(tar)
        .args(["--numeric-owner", "-tvzf"])
        .arg(d.path().join("a.tar.gz"))
        .output()
        .unwrap();
    assert!(list.status.success(), "{}", text(&list.stderr));
    let listing = text(&list.stdout);
    let lines: Vec<&str> = listing.lines().collect();
    assert_eq!(lines.len(), 5, "{listing}");
    for l in &lines {
        assert!(l.contains(" 0/0 "), "uid/gid 0: {l}");
        assert!(l.contains("1970-01-01"), "no time: {l}");
        let mode = l.split_whitespace().next().unwrap();
        let name = l.split_whitespace().last().unwrap();
        let want = match name {
            "hooks/" => "drwxr-x---",
            "hooks/migrate.sh" => "-rwx------",
            _ => "-rw-------",
        };
        assert_eq!(mode, want, "{l}");
    }
}

#[test]
fn a_failed_build_writes_nothing() {
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("t");
    std::fs::create_dir_all(&tree).unwrap();
    copy_dir(&repo().join("deploy"), &tree);
    // An instance of a kind nobody defines.
    std::fs::write(
        tree.join("broken.yaml"),
        "apiVersion: example.com/v1alpha1\nkind: Sight\nmetadata: {name: x}\nspec: {image: y}\n",
    )
    .unwrap();
    let art = d.path().join("a.tar.gz");
    let out = run(&["build", s(&tree), "--artifact", s(&art)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("KLN1011"),
        "{}",
        text(&out.stderr)
    );
    assert!(!art.exists());
    let dir = d.path().join("o");
    let out = run(&["build", s(&tree), "-o", s(&dir)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!dir.exists());
    assert_eq!(
        std::fs::read_dir(d.path()).unwrap().count(),
        1,
        "no temporary file is left"
    );
}

/// A copy of the repository with `apps.yaml` changed by `edit`, and its paths.
fn variant(edit: impl Fn(String) -> String) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    copy_dir(&repo(), &root);
    let ks = root.join("clusters/prod/apps.yaml");
    let text = std::fs::read_to_string(&ks).unwrap();
    std::fs::write(&ks, edit(text)).unwrap();
    (d, root, ks)
}

/// Every `--option` a hint names is one of kiln-flux's (issue 23.6): core's hints speak the
/// `kiln` command line's language, and the door must not send its users to options it lacks.
fn hints_name_our_options(stderr: &str) {
    use std::sync::OnceLock;
    static HELP: OnceLock<String> = OnceLock::new();
    let help = HELP.get_or_init(|| {
        let mut h = text(&run(&["build", "--help"]).stdout);
        h.push_str(&text(&run(&["envsubst", "--help"]).stdout));
        h
    });
    for line in stderr.lines() {
        let Some((_, hint)) = line.split_once("(hint: ") else {
            continue;
        };
        for (i, _) in hint.match_indices("--") {
            let flag: String = hint[i..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                .collect();
            if flag.len() > 2 {
                assert!(
                    help.contains(&format!("{flag} "))
                        || help.contains(&format!("{flag}\n"))
                        || help.contains(&format!("{flag}["))
                        || help.contains(&format!("{flag}="))
                        || help.contains(&format!("{flag} <")),
                    "a hint names {flag}, which kiln-flux does not have: {line}"
                );
            }
        }
    }
}

fn fails_with(out: &Output, code: &str) -> String {
    let stderr = text(&out.stderr);
    hints_name_our_options(&stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        out.stdout.is_empty(),
        "no partial output: {}",
        text(&out.stdout)
    );
    assert!(stderr.contains(code), "{code} in {stderr}");
    stderr
}

#[test]
fn a_path_that_leaves_the_root_is_refused() {
    for path in ["../outside", "./deploy/../../outside", "/etc"] {
        let (d, root, ks) = variant(|t| t.replace("path: ./deploy", &format!("path: {path}")));
        std::fs::create_dir_all(d.path().join("outside")).unwrap();
        std::fs::write(
            d.path().join("outside/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: stolen}\n",
        )
        .unwrap();
        let out = run(&flux_preview(s(&ks), s(&root), &[]));
        let err = fails_with(&out, "KLN1002");
        assert!(err.contains("spec.path"), "{err}");
    }
    #[cfg(unix)]
    {
        let (d, root, ks) = variant(|t| t.replace("path: ./deploy", "path: ./link"));
        std::os::unix::fs::symlink(d.path(), root.join("link")).unwrap();
        let out = run(&flux_preview(s(&ks), s(&root), &[]));
        fails_with(&out, "KLN1002");
    }
}

/// Version-control data is never read nor packed (issue 39): a `spec.path` naming `.git`, and a
/// link of the tree into it, are refused with KLN1002 naming `.git` (the token in `.git/config`
/// never printed); `.git`, `.hg`, `.svn` and `.bzr` of a tree are left out of its artifact.
#[cfg(unix)]
#[test]
fn version_control_data_is_never_read_nor_packed() {
    const TOKEN: &str = "ghp_k1lnCiT0ken";
    let with_git = |path: &str| {
        let (d, root, ks) = variant(|t| t.replace("path: ./deploy", &format!("path: {path}")));
        for vcs in [".git", ".hg", ".svn", ".bzr"] {
            std::fs::create_dir_all(root.join(vcs)).unwrap();
            std::fs::write(
                root.join(vcs).join("config"),
                format!("[remote \"origin\"]\n\turl = https://ci:{TOKEN}@example.com/r.git\n"),
            )
            .unwrap();
        }
        (d, root, ks)
    };
    for path in ["./.git", ".git/", "./gitlink", ".hg"] {
        let (d, root, ks) = with_git(path);
        std::os::unix::fs::symlink(".git", root.join("gitlink")).unwrap();
        let art = d.path().join("a.tar.gz");
        for extra in [&[][..], &["--artifact", s(&art)][..]] {
            let args = flux_preview(s(&ks), s(&root), extra);
            let err = fails_with(&run(&args), "KLN1002");
            assert!(
                err.contains("spec.path") && !err.contains(TOKEN),
                "{path}: {err}"
            );
            assert!(err.contains(".git") || err.contains(".hg"), "{path}: {err}");
        }
        assert!(!art.exists());
    }
    // A link into `.git` inside spec.path: refused, nothing written.
    let (d, root, ks) = with_git("./deploy");
    std::os::unix::fs::symlink("../.git/config", root.join("deploy/token.yaml")).unwrap();
    let art = d.path().join("a.tar.gz");
    let out = run(&flux_preview(s(&ks), s(&root), &["--artifact", s(&art)]));
    let err = fails_with(&out, "KLN1002");
    assert!(
        err.contains("token.yaml") && err.contains(".git") && !err.contains(TOKEN),
        "{err}"
    );
    assert!(!art.exists());
    // A tree holding all four: none of them is in its artifact.
    let (d, root, _) = with_git("./deploy");
    for vcs in [".git", ".hg", ".svn", ".bzr"] {
        std::fs::create_dir_all(root.join("deploy").join(vcs)).unwrap();
        std::fs::write(root.join("deploy").join(vcs).join("config.yaml"), TOKEN).unwrap();
    }
    let art = d.path().join("a.tar.gz");
    let out = run(&["build", s(&root), "--artifact", s(&art)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let list = Command::new(tool("tar"))
        .args(["-tzf", s(&art)])
        .output()
        .unwrap();
    let listing = text(&list.stdout);
    assert!(listing.contains("deploy/sites.yaml"), "{listing}");
    for vcs in [".git", ".hg", ".svn", ".bzr"] {
        assert!(!listing.contains(vcs), "{vcs} packed: {listing}");
    }
    let all = Command::new(tool("tar"))
        .args(["-xzOf", s(&art)])
        .output()
        .unwrap();
    assert!(!text(&all.stdout).contains(TOKEN));
}

/// A Kustomization's namespaces are the API server's to check (issue 39): `targetNamespace` is
/// written into every object of the build, `metadata.namespace` is where its variables' sources
/// live. One it would refuse is KLN1010 on its field, in the API server's words, quoted short;
/// nothing is built or written. So is `-n`, kiln's own default namespace.
#[test]
fn a_namespace_the_api_server_refuses_is_refused() {
    let long = "a".repeat(1_000_000);
    for (field, from, to) in [
        (
            "spec.targetNamespace",
            "targetNamespace: web",
            "targetNamespace: ../../etc".to_string(),
        ),
        (
            "spec.targetNamespace",
            "targetNamespace: web",
            "targetNamespace: Web".to_string(),
        ),
        (
            "metadata.namespace",
            "namespace: flux-system",
            format!("namespace: {long}"),
        ),
    ] {
        let (d, root, ks) = variant(|t| t.replace(from, &to));
        let art = d.path().join("a.tar.gz");
        let out = run(&flux_preview(s(&ks), s(&root), &["--artifact", s(&art)]));
        let err = fails_with(&out, "KLN1010");
        assert!(
            err.contains(&format!("{field}: Invalid value: ")),
            "{field}: {err}"
        );
        assert!(err.len() < 2_000, "{field}: {} bytes", err.len());
        assert!(!art.exists());
    }
    let out = run(&["build", s(&repo().join("deploy")), "-n", "../../etc"]);
    let err = fails_with(&out, "KLN1010");
    assert!(err.contains("Invalid value: \"../../etc\""), "{err}");
}

#[test]
fn a_missing_required_configmap_is_an_error() {
    tool("kubectl");
    // No --vars-from: cluster-vars is required.
    let out = run(&flux_preview(&ks(), s(&repo()), &["--substitute"]));
    let err = fails_with(&out, "KLN8006");
    assert!(err.contains("ConfigMap/cluster-vars not found"), "{err}");
    assert!(err.contains("spec.postBuild.substituteFrom[0]"), "{err}");
    // The optional Secret alone is fine (tested above); a required one is not.
    let (_d, root, ks) = variant(|t| t.replace("optional: true", "optional: false"));
    let out = run(&flux_preview(
        s(&ks),
        s(&root),
        &["--substitute", "--vars-from", s(&vars())],
    ));
    let err = fails_with(&out, "KLN8006");
    assert!(err.contains("Secret/cluster-secrets"), "{err}");
}

#[test]
fn an_invalid_variable_name_is_an_error() {
    tool("kubectl");
    let (_d, root, ks) = variant(|t| {
        t.replace(
            "cluster_env: prod",
            "cluster_env: prod\n      cluster-env: prod",
        )
    });
    let out = run(&flux_preview(
        s(&ks),
        s(&root),
        &["--substitute", "--vars-from", s(&vars())],
    ));
    let err = fails_with(&out, "KLN8003");
    assert!(err.contains("\"cluster-env\""), "{err}");
}

#[test]
fn unbalanced_substitution_is_an_error() {
    tool("kubectl");
    let (_d, root, ks) = variant(|t| t);
    let settings = root.join("deploy/settings.yaml");
    let t = std::fs::read_to_string(&settings).unwrap();
    std::fs::write(&settings, t.replace("${region}", "${region")).unwrap();
    let out = run(&flux_preview(
        s(&ks),
        s(&root),
        &["--substitute", "--vars-from", s(&vars())],
    ));
    fails_with(&out, "KLN8002");
    // And in envsubst.
    let out = Cmd::new(env!("CARGO_BIN_EXE_kiln-flux"))
        .arg("envsubst")
        .stdin(b"a: 1\nb: ${HOME\n")
        .output();
    let err = fails_with(&out, "KLN8002");
    assert!(err.contains("<stdin>:2"), "{err}");
}

#[test]
fn an_invalid_kustomization_is_an_error() {
    let (_d, root, ks) = variant(|t| {
        t.replace(
            "targetNamespace: web",
            "targetNamespace: web\n  patchesStrategicMerge: []",
        )
    });
    let out = run(&flux_preview(s(&ks), s(&root), &[]));
    let err = fails_with(&out, "KLN1010");
    assert!(err.contains("spec.patchesStrategicMerge"), "{err}");
}

fn envsubst(input: &str, strict: bool, env: &[(&str, &str)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln-flux"));
    cmd.arg("envsubst");
    if strict {
        cmd.arg("--strict");
    }
    let mut child = cmd
        .env_clear()
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn envsubst_substitutes_from_the_environment() {
    let out = envsubst(
        "env: ${ENV}\nmissing: '${NOPE}'\nkept: $${ENV} $HOME\n",
        false,
        &[("ENV", "prod")],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "env: prod\nmissing: ''\nkept: ${ENV} $HOME\n"
    );
    let out = envsubst("a: ${NOPE}\n", true, &[]);
    let err = fails_with(&out, "KLN8001");
    assert!(err.contains("\"NOPE\""), "{err}");
    let out = envsubst("a: ${NOPE:=d}\n", true, &[]);
    assert_eq!(text(&out.stdout), "a: d\n");
}

#[test]
fn kro_mode_ships_the_definitions_and_observed_state_resolves_external_refs() {
    let deploy = repo().join("deploy");
    let out = run(&["build", s(&deploy), "--mode", "kro"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let y = text(&out.stdout);
    assert!(y.contains("kind: ResourceGraphDefinition"), "{y}");
    assert!(
        !y.contains("kiln.dev/node"),
        "kro mode rendered objects:\n{y}"
    );

    // An externalRef resolved against live objects the operator dumped outside the tree.
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/strategies/external-refs");
    for f in ["rgd.yaml", "instance.yaml"] {
        std::fs::copy(case.join(f), tree.join(f)).unwrap();
    }
    let out = run(&["build", s(&tree)]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "no observed state: {}",
        text(&out.stdout)
    );
    assert!(
        text(&out.stderr).contains("KLN5003"),
        "{}",
        text(&out.stderr)
    );
    let out = run(&["build", s(&tree), "--observed", s(&case.join("observed"))]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let y = text(&out.stdout);
    assert!(y.contains("domain: acme.example.com"), "{y}");
    assert!(
        y.contains("backends: acme/api:8080,acme-edge/web:80"),
        "{y}"
    );
}

/// The secret an outside file holds: no escape test may ever see it on stdout or stderr.
const SECRET: &str = "s3cr3t-outside-the-root";

/// A copy of the repository beside files outside it that hold [`SECRET`], with
/// `deploy/kustomization.yaml` given `extra` (YAML appended; `{OUT}` is the outside directory),
/// and `setup` run on the root before the build.
fn escaping(extra: &str, setup: impl Fn(&Path, &Path)) -> Output {
    let d = tempfile::tempdir().unwrap();
    let outside = d.path();
    let root = outside.join("repo");
    std::fs::create_dir_all(&root).unwrap();
    copy_dir(&repo(), &root);
    std::fs::write(
        outside.join("secret.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: stolen}}\ndata: {{key: {SECRET}}}\n"),
    )
    .unwrap();
    std::fs::write(outside.join("secret.txt"), SECRET).unwrap();
    std::fs::write(outside.join("secret.env"), format!("KEY={SECRET}\n")).unwrap();
    std::fs::write(
        outside.join("patch.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: settings}}\ndata: {{stolen: {SECRET}}}\n"),
    )
    .unwrap();
    let kfile = root.join("deploy/kustomization.yaml");
    let mut k = std::fs::read_to_string(&kfile).unwrap();
    k.push_str(&extra.replace("{OUT}", s(outside)));
    std::fs::write(&kfile, k).unwrap();
    setup(&root, outside);
    run(&flux_preview(
        s(&root.join("clusters/prod/apps.yaml")),
        s(&root),
        &[],
    ))
}

fn refused(out: &Output, code: &str) -> String {
    let err = fails_with(out, code);
    assert!(
        !err.contains(SECRET),
        "the outside file's content leaked: {err}"
    );
    err
}

#[test]
fn a_kustomization_may_not_read_outside_the_source_root() {
    tool("kubectl");
    let none = |_: &Path, _: &Path| {};
    // An absolute resource, and `../` from spec.path (one more `../` than the source root).
    let err = refused(&escaping("  - {OUT}/secret.yaml\n", none), "KLN1002");
    assert!(err.contains("resources[2]"), "{err}");
    let err = refused(&escaping("  - ../../secret.yaml\n", none), "KLN1002");
    assert!(err.contains("resources[2]"), "{err}");
    assert!(err.contains("kustomization.yaml"), "{err}");
    // A nested base that escapes: reported in the base's own file.
    let err = refused(
        &escaping("  - ../base\n", |root, _| {
            std::fs::create_dir_all(root.join("base")).unwrap();
            std::fs::write(
                root.join("base/kustomization.yaml"),
                "resources: [../../secret.yaml]\n",
            )
            .unwrap();
        }),
        "KLN1002",
    );
    assert!(err.contains("base/kustomization.yaml"), "{err}");
    // A patch file, a strategic-merge patch file, and configMapGenerator files and envs.
    for (extra, field) in [
        ("patches:\n  - path: ../../patch.yaml\n", "patches[0].path"),
        (
            "patchesStrategicMerge:\n  - {OUT}/patch.yaml\n",
            "patchesStrategicMerge[0]",
        ),
        (
            "configMapGenerator:\n  - name: gen\n    files: [stolen=../../secret.txt]\n",
            "configMapGenerator[0].files[0]",
        ),
        (
            "configMapGenerator:\n  - name: gen\n    envs: [../../secret.env]\n",
            "configMapGenerator[0].envs[0]",
        ),
        (
            "secretGenerator:\n  - name: gen\n    files: [{OUT}/secret.txt]\n",
            "secretGenerator[0].files[0]",
        ),
    ] {
        let err = refused(&escaping(extra, none), "KLN1002");
        assert!(err.contains(field), "{field} in {err}");
    }
}

#[cfg(unix)]
#[test]
fn a_symlink_out_of_the_source_root_is_refused() {
    for (link, target) in [("deploy/stolen.yaml", "secret.yaml"), ("deploy/out", "")] {
        let out = escaping("  - stolen.yaml\n", |root, outside| {
            std::os::unix::fs::symlink(outside.join(target), root.join(link)).unwrap();
        });
        refused(&out, "KLN1002");
    }
}

#[test]
fn a_remote_base_is_refused_unless_allowed() {
    let out = escaping(
        "  - https://github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0\n",
        |_, _| {},
    );
    let err = refused(&out, "KLN1014");
    assert!(err.contains("--allow-remote-bases"), "{err}");
    for remote in ["git@github.com:org/repo.git", "github.com/org/repo/base"] {
        let out = escaping(&format!("  - {remote}\n"), |_, _| {});
        refused(&out, "KLN1014");
    }
}

/// Issue 24.4: `build DIR --artifact DIR/m.tar.gz` run twice packed the first artifact into the
/// second, so the digest changed every run. An artifact inside the tree it packs is refused
/// before anything is read or written; one beside the tree gives the same digest every time.
#[test]
fn an_artifact_inside_its_own_tree_is_refused_and_builds_are_repeatable() {
    let d = tempfile::tempdir().unwrap();
    let tree = d.path().join("deploy");
    std::fs::create_dir_all(&tree).unwrap();
    copy_dir(&repo().join("deploy"), &tree);
    for inside in [tree.join("m.tar.gz"), tree.join("hooks/m.tar.gz")] {
        for _ in 0..2 {
            let out = run(&["build", s(&tree), "--artifact", s(&inside)]);
            let err = fails_with(&out, "KLN1010");
            assert!(err.contains("outside the tree"), "{err}");
            assert!(!inside.exists(), "nothing written");
        }
    }
    // Relative to the working directory, as `kiln-flux build . --artifact m.tar.gz` is typed.
    let out = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
        .args(["build", ".", "--artifact", "m.tar.gz"])
        .current_dir(&tree)
        .output()
        .unwrap();
    fails_with(&out, "KLN1010");
    // With --kustomization: the tree is spec.path.
    let root = d.path().join("repo");
    std::fs::create_dir_all(&root).unwrap();
    copy_dir(&repo(), &root);
    let out = run(&flux_preview(
        s(&root.join("clusters/prod/apps.yaml")),
        s(&root),
        &["--artifact", s(&root.join("deploy/m.tar.gz"))],
    ));
    fails_with(&out, "KLN1010");
    // Beside the tree: twice, the same digest.
    let beside = d.path().join("m.tar.gz");
    let digests: Vec<String> = (0..2)
        .map(|_| {
            let out = run(&["build", s(&tree), "--artifact", s(&beside)]);
            assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
            let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            status["digest"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(digests[0], digests[1]);
}

/// Issue 24.6: with stdout on a full device the door exited 1 with no message. It now says why,
/// with the CLI's words, for each kind of output (a stream, the artifact's status, envsubst).
#[cfg(target_os = "linux")]
#[test]
fn a_full_stdout_is_reported() {
    let d = tempfile::tempdir().unwrap();
    let artifact = d.path().join("m.tar.gz");
    let deploy = repo().join("deploy");
    let runs: [&[&str]; 3] = [
        &["build", s(&deploy)],
        &["build", s(&deploy), "--artifact", s(&artifact)],
        &["envsubst"],
    ];
    for args in runs {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let input = d.path().join("in.yaml");
        std::fs::write(&input, "a: b\n").unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
            .args(args)
            .stdin(std::fs::File::open(&input).unwrap())
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(
            stderr.contains("cannot write output: No space left on device")
                && stderr.contains("KLN1001"),
            "{args:?}: {stderr}"
        );
    }
}

/// A reader that closes the pipe early: exit 141, as SIGPIPE would end the process (the output is
/// incomplete), no message, no panic.
#[test]
fn a_closed_stdout_pipe_fails_quietly() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
        .arg("envsubst")
        .env("V", "x")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Close the read end before the child has anything to write: it reads all of stdin first.
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all("a: ${V}\n".repeat(10_000).as_bytes())
        .unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{}", text(&out.stderr));
    assert_eq!(text(&out.stderr), "", "quietly");
}

/// The objects of a YAML stream, as (kind, name), sorted.
fn identities(stream: &str) -> Vec<(String, String)> {
    let docs = kiln_core::document::parse_file(
        "stream",
        stream.to_string(),
        &kiln_core::document::YamlLimits::default(),
    )
    .unwrap();
    let mut ids: Vec<(String, String)> = docs
        .iter()
        .map(|d| {
            let s = |p: &str| {
                d.value
                    .pointer(p)
                    .and_then(|v| v.as_str())
                    .unwrap_or("")
                    .to_string()
            };
            (s("/kind"), s("/metadata/name"))
        })
        .collect();
    ids.sort();
    ids
}

/// Issue 23.15: the kept `kustomization.yaml` listed files kiln consumed (an RGD file, a kurel
/// package directory, a Component's file), so `kubectl kustomize` of the output failed with
/// "no such file" and Flux could not build the artifact. For every tree with a kustomization
/// that kiln-flux builds, `kubectl kustomize` of the output now builds and gives exactly the
/// rendered objects (those of the output's manifest stream).
#[test]
fn kubectl_kustomize_builds_every_rendered_tree_with_a_kustomization() {
    let kubectl = tool("kubectl");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/flux-door");
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flux");
    let trees: [(PathBuf, &[&str]); 3] = [
        (data.join("repo/deploy"), &[]),
        (data.join("mixed"), &["--env", "prod"]),
        (examples.join("deploy"), &[]),
    ];
    for (tree, extra) in trees {
        let d = tempfile::tempdir().unwrap();
        let out_dir = d.path().join("out");
        let mut args = vec!["build", s(&tree), "-o", s(&out_dir)];
        args.extend(extra);
        let out = run(&args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{tree:?}: {}",
            text(&out.stderr)
        );
        let k = Command::new(&kubectl)
            .arg("kustomize")
            .arg(&out_dir)
            .output()
            .unwrap();
        assert!(k.status.success(), "{tree:?}: {}", text(&k.stderr));
        let mut args = vec!["build", s(&tree)];
        args.extend(extra);
        let stream = run(&args);
        assert_eq!(stream.status.code(), Some(0));
        assert_eq!(
            identities(&text(&k.stdout)),
            identities(&text(&stream.stdout)),
            "{tree:?}: kustomize builds the rendered objects, all of them"
        );
    }
}

/// Issue 23.18: examples/flux runs as its README says. Every `kiln-flux …` line of the README's
/// `sh` blocks runs, in a copy of the example, with the built binary; each succeeds, and the
/// rendered tree builds with `kubectl kustomize`.
#[test]
fn the_flux_example_runs_as_its_readme_says() {
    let kubectl = tool("kubectl");
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/flux");
    let readme = std::fs::read_to_string(example.join("README.md")).unwrap();
    assert!(
        readme.contains("cargo install --locked --path plugin-flux"),
        "the README says how to install kiln-flux"
    );
    let d = tempfile::tempdir().unwrap();
    let work = d.path().join("flux");
    std::fs::create_dir_all(&work).unwrap();
    copy_dir(&example, &work);
    let mut ran = 0;
    let mut in_sh = false;
    for line in readme.lines() {
        match line.trim() {
            "```sh" => in_sh = true,
            "```" => in_sh = false,
            l if in_sh && l.starts_with("kiln-flux ") => {
                let args: Vec<&str> = l.split_whitespace().skip(1).collect();
                let out = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
                    .args(&args)
                    .current_dir(&work)
                    .stdin(Stdio::null())
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(0), "{l}: {}", text(&out.stderr));
                ran += 1;
            }
            _ => {}
        }
    }
    assert_eq!(ran, 3, "the README's three commands");
    let k = Command::new(kubectl)
        .arg("kustomize")
        .arg(work.join("rendered"))
        .output()
        .unwrap();
    assert!(k.status.success(), "{}", text(&k.stderr));
    assert_eq!(text(&k.stdout).matches("kind: Deployment").count(), 2);
    assert!(d.path().join("manifests.tar.gz").is_file());
}

/// Issue 23.17: Flux substitutes each object as go-yaml v2 writes it (kustomize's JSON through
/// `sigs.k8s.io/yaml.JSONToYAML`, fluxcd/pkg `kustomize/kustomize_varsub.go`), so kiln writes
/// the same text (`kiln_core::flux::goyaml`). kubectl's `-o yaml` is that same writer: for
/// strings of every style (plain, single- and double-quoted, literal, folded at 80 columns) and
/// keys in go-yaml's order, kiln's text equals kubectl's.
#[test]
fn the_text_flux_substitutes_is_go_yamls() {
    let kubectl = tool("kubectl");
    let long = "word ".repeat(30);
    let long_ref = format!("{} ${{db_password}} {}", "x".repeat(70), "tail ".repeat(10));
    let values: Vec<(&str, String)> = vec![
        ("a", "${db_password}".into()),
        ("b", "${a}:${b}".into()),
        ("c", "${a}: x".into()),
        ("d", "it's ${a}".into()),
        ("e", "a #b".into()),
        ("f", "- x".into()),
        ("g", String::new()),
        ("h", "8080".into()),
        ("i", "yes".into()),
        ("j", "1:30".into()),
        ("k", "2001-12-14".into()),
        ("l", "a\tb".into()),
        ("m", "😀 ${a}".into()),
        ("n", " lead".into()),
        ("o", "l1\nl2".into()),
        ("p", "l1\n".into()),
        ("q", " x\ny".into()),
        ("r", long.clone()),
        ("s", long.trim_end().to_string()),
        ("t", long_ref),
        ("u", "\"quoted\" and \\".into()),
        ("v", "0x1F".into()),
        ("w", "1e3".into()),
        ("x", ".5".into()),
        ("y2", "~".into()),
        ("a10", "+1".into()),
        ("a9", "-.inf".into()),
        ("_x", "0o17".into()),
        ("1", "1_000".into()),
        ("B", "é ${a} #x".into()),
        ("C", "trailing ".into()),
        ("D", "tab\there and ${x:-a b}".into()),
        ("E", "---x".into()),
        ("F", "?x".into()),
        ("G", "x: ".into()),
        ("H", "@x".into()),
        ("I", "%x".into()),
    ];
    let mut cmd = Command::new(&kubectl);
    cmd.args(["create", "configmap", "y", "--dry-run=client", "-o", "yaml"]);
    for (k, v) in &values {
        cmd.arg(format!("--from-literal={k}={v}"));
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let data: serde_json::Map<String, serde_json::Value> = values
        .iter()
        .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.clone())))
        .collect();
    let object = serde_json::json!({
        "apiVersion": "v1",
        "data": data,
        "kind": "ConfigMap",
        "metadata": {"creationTimestamp": null, "name": "y"},
    });
    let ours = kiln_core::flux::goyaml::marshal(&object);
    let theirs = text(&out.stdout);
    assert_same_text(&ours, &theirs);
    // Structure: nested mappings, sequences of mappings and of strings, empty mappings.
    let runs: [(&[&str], &[&str]); 3] = [
        (
            &[
                "create",
                "deployment",
                "web",
                "--image=nginx:1.27",
                "--port=80",
                "--replicas=3",
            ],
            &[],
        ),
        (
            &[
                "create",
                "cronjob",
                "backup",
                "--image=busybox",
                "--schedule=*/5 * * * *",
            ],
            &["sh", "-c", "echo ${HOME} && date: now # x"],
        ),
        (
            &["create", "job", "j", "--image=busybox"],
            &["a b", "", "- x", "x\ny"],
        ),
    ];
    for (args, command) in runs {
        let get = |format: &str| {
            let o = Command::new(&kubectl)
                .args(args)
                .args(["--dry-run=client", "-o", format, "--"])
                .args(command)
                .output()
                .unwrap();
            assert!(o.status.success(), "{}", text(&o.stderr));
            text(&o.stdout)
        };
        let object: serde_json::Value = serde_json::from_str(&get("json")).unwrap();
        assert_same_text(&kiln_core::flux::goyaml::marshal(&object), &get("yaml"));
    }
}

fn assert_same_text(ours: &str, theirs: &str) {
    if ours != theirs {
        let diff: Vec<String> = ours
            .lines()
            .zip(theirs.lines())
            .filter(|(a, b)| a != b)
            .map(|(a, b)| format!("kiln:    {a}\nkubectl: {b}"))
            .collect();
        panic!(
            "{}\n--- kiln\n{ours}\n--- kubectl\n{theirs}",
            diff.join("\n")
        );
    }
}

/// Issue 23.17, end to end: the preview substitutes what Flux substitutes. Flux writes each
/// object of the build with go-yaml v2 from kustomize's JSON (fluxcd/pkg
/// kustomize/kustomize_varsub.go), so a quoted `"${replicas:=2}"` comes back the number 2, and a
/// quoted `"${db_password}"` whose value holds `: ` fails in Flux (the field is written bare:
/// fluxcd/flux2#1839) and so in the preview (KLN8004), without the value in the message.
#[test]
fn the_preview_substitutes_what_flux_substitutes() {
    tool("kubectl");
    let d = tempfile::tempdir().unwrap();
    let root = d.path();
    std::fs::create_dir_all(root.join("deploy")).unwrap();
    std::fs::write(
        root.join("deploy/kustomization.yaml"),
        "resources: [app.yaml]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("deploy/app.yaml"),
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n  annotations:\n    colon: '${greeting}: x'\nspec:\n  replicas: \"${replicas:=2}\"\n  template:\n    spec:\n      containers:\n      - name: app\n        env:\n        - name: PASSWORD\n          value: \"${db_password}\"\n",
    )
    .unwrap();
    let ks = |password: &str| {
        let k = root.join("ks.yaml");
        std::fs::write(
            &k,
            format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {{name: app, namespace: flux-system}}\nspec:\n  interval: 1m\n  sourceRef: {{kind: GitRepository, name: repo}}\n  path: ./deploy\n  postBuild:\n    substitute: {{db_password: '{password}', greeting: hi}}\n"),
        )
        .unwrap();
        run(&flux_preview(s(&k), s(root), &["--substitute"]))
    };
    let ok = ks("s3cret");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let out = text(&ok.stdout);
    assert!(
        out.contains("replicas: 2\n"),
        "a number, as Flux gives it: {out}"
    );
    assert!(out.contains("value: s3cret"), "{out}");
    assert!(out.contains("colon: \"hi: x\""), "{out}");
    let bad = ks("pa: ss");
    let err = fails_with(&bad, "KLN8004");
    assert!(!err.contains("pa: ss"), "{err}");
}

/// Issue 23.6: hints name kiln-flux's own options. An unknown kind's hint (core: "or --crds")
/// speaks of the tree and `--pass-through`; the substitution check's hint names `--protect`.
#[test]
fn hints_name_kiln_flux_options() {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(
        d.path().join("x.yaml"),
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
    )
    .unwrap();
    let out = run(&["build", s(d.path())]);
    let err = fails_with(&out, "KLN1011");
    assert!(!err.contains("--crds"), "{err}");
    assert!(
        err.contains("to the tree") && err.contains("--pass-through example.com"),
        "{err}"
    );
    tool("kubectl");
    let out = run(&flux_preview(
        &ks(),
        s(&repo()),
        &["--substitute", "--vars-from", s(&vars())],
    ));
    let err = text(&out.stderr);
    assert!(err.contains("warning[KLN8008]"), "{err}");
    assert!(err.contains("build with --protect"), "{err}");
    assert!(!err.contains("flux::lint::escape"), "{err}");
    hints_name_our_options(&err);
}

/// The objects of a YAML stream, whole, sorted by (kind, name): what two builds must agree on.
fn objects(stream: &str) -> Vec<serde_json::Value> {
    let docs = kiln_core::document::parse_file(
        "stream",
        stream.to_string(),
        &kiln_core::document::YamlLimits::default(),
    )
    .unwrap();
    let mut v: Vec<serde_json::Value> = docs.into_iter().map(|d| d.value).collect();
    v.sort_by_key(|o| (o["kind"].to_string(), o["metadata"]["name"].to_string()));
    v
}

fn kubectl_kustomize(kubectl: &Path, dir: &Path) -> String {
    let k = Command::new(kubectl)
        .arg("kustomize")
        .arg(dir)
        .args(["--load-restrictor", "LoadRestrictionsNone"])
        .output()
        .unwrap();
    assert!(k.status.success(), "{dir:?}: {}", text(&k.stderr));
    text(&k.stdout)
}

/// Issue 38.1 and 38.2: Flux's monorepo layout (testdata/layouts/flux-monorepo, after fluxcd's
/// flux2-kustomize-helm-example): `apps/staging` and `apps/production` overlays over
/// `apps/base/podinfo` (a kro RGD and its instance), a kustomize Component in `components/`
/// holding a second instance, `infrastructure/configs` holding a kurel package. Before, the
/// preview printed the base's ResourceGraphDefinition and instance unrendered, and
/// `build apps/production` exited 0 with a kustomization naming a base its output lacked.
///
/// Every flow must agree with Flux's own build (`kubectl kustomize` with load restrictions off,
/// fluxcd/pkg `kustomize`): the preview, `-o DIR` and `--artifact` rooted at the source (so the
/// Kustomization's spec.path builds from them), and the in-place build of the whole source.
#[test]
fn the_flux_monorepo_layout_builds_through_every_flow() {
    let kubectl = tool("kubectl");
    let tar = tool("tar");
    let layout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/layouts/flux-monorepo");
    let d = tempfile::tempdir().unwrap();
    // The whole source rendered in place: every overlay builds from it.
    let whole = d.path().join("whole");
    let out = run(&["build", s(&layout), "-o", s(&whole)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (env, path) in [
        ("staging", "apps/staging"),
        ("production", "apps/production"),
        ("staging", "infrastructure/configs"),
    ] {
        let file = if path.starts_with("apps") {
            "apps.yaml"
        } else {
            "infrastructure.yaml"
        };
        let k = layout.join("clusters").join(env).join(file);
        // What Flux applies, without substitution (the trees hold the variables as written).
        let preview = run(&flux_preview(s(&k), s(&layout), &[]));
        assert_eq!(
            preview.status.code(),
            Some(0),
            "{path}: {}",
            text(&preview.stderr)
        );
        let preview = text(&preview.stdout);
        for unrendered in [
            "kind: ResourceGraphDefinition",
            "kind: WebService",
            "kind: Kurel",
        ] {
            assert!(!preview.contains(unrendered), "{path}: {preview}");
        }
        let expected = objects(&preview);
        assert!(!expected.is_empty(), "{path}");
        // The in-place tree, built at the Kustomization's path.
        assert_eq!(
            objects(&kubectl_kustomize(&kubectl, &whole.join(path))),
            expected,
            "{path}: the in-place tree"
        );
        // -o DIR: the tree this Kustomization reads, at the source's paths.
        let dir = d.path().join(format!("{env}-{}", path.replace('/', "-")));
        let out = run(&flux_preview(s(&k), s(&layout), &["-o", s(&dir)]));
        assert_eq!(out.status.code(), Some(0), "{path}: {}", text(&out.stderr));
        assert_eq!(
            objects(&kubectl_kustomize(&kubectl, &dir.join(path))),
            expected,
            "{path}: -o"
        );
        // --artifact: the same tree, as Flux's source-controller would serve it.
        let art = d.path().join(format!("{env}.tar.gz"));
        let out = run(&flux_preview(s(&k), s(&layout), &["--artifact", s(&art)]));
        assert_eq!(out.status.code(), Some(0), "{path}: {}", text(&out.stderr));
        let unpacked = d.path().join(format!("{env}-unpacked"));
        std::fs::create_dir_all(&unpacked).unwrap();
        let x = Command::new(&tar)
            .arg("-xzf")
            .arg(&art)
            .arg("-C")
            .arg(&unpacked)
            .output()
            .unwrap();
        assert!(x.status.success(), "{}", text(&x.stderr));
        assert_eq!(
            objects(&kubectl_kustomize(&kubectl, &unpacked.join(path))),
            expected,
            "{path}: the artifact"
        );
        std::fs::remove_dir_all(&unpacked).unwrap();
    }
    // What the overlays do to kiln's objects, with the cluster's variables.
    let production = run(&flux_preview(
        s(&layout.join("clusters/production/apps.yaml")),
        s(&layout),
        &["--substitute"],
    ));
    assert_eq!(
        production.status.code(),
        Some(0),
        "{}",
        text(&production.stderr)
    );
    let objs = objects(&text(&production.stdout));
    let podinfo = objs
        .iter()
        .find(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "podinfo")
        .expect("the base's instance, rendered");
    assert_eq!(podinfo["spec"]["replicas"], 3, "the overlay's patch");
    let c = &podinfo["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["image"], "ghcr.io/stefanprodan/podinfo:6.7.1", "images");
    assert_eq!(c["env"][0]["value"], "production", "postBuild");
    assert!(
        objs.iter()
            .any(|o| o["kind"] == "Deployment" && o["metadata"]["name"] == "podinfo-canary"),
        "the component's instance, rendered with the base's definition"
    );
    // A tree that is an overlay alone does not hold its base: refused, saying what to build.
    let out = run(&["build", s(&layout.join("apps/production"))]);
    let err = fails_with(&out, "KLN1002");
    assert!(err.contains("../base/podinfo"), "{err}");
    assert!(err.contains("--source-root"), "{err}");
}

/// Issue 38.2 and 38.6: the monorepo with an `environments/` folder of component deployments
/// (testdata/layouts/component-environments). In place, the shared `components/` kustomization
/// would name every environment's release, so each environment's build would apply all of
/// them: without `--env` that is an error naming the fix; with it, the environment's overlay
/// builds its release alone. A Kustomization per environment needs no `--env`: its reach holds
/// one environment's binding.
#[test]
fn the_component_environments_layout_builds_per_environment() {
    let kubectl = tool("kubectl");
    let layout =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/layouts/component-environments");
    let out = run(&["build", s(&layout)]);
    let err = fails_with(&out, "KLN1010");
    assert!(
        err.contains("2 environments (dev, prod)") && err.contains("--env"),
        "{err}"
    );
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("prod");
    let out = run(&["build", s(&layout), "--env", "prod", "-o", s(&dir)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let built = objects(&kubectl_kustomize(&kubectl, &dir.join("environments/prod")));
    let replicas: Vec<&serde_json::Value> = built
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .map(|o| &o["spec"]["replicas"])
        .collect();
    assert_eq!(replicas, [4]);
    let k = d.path().join("ks.yaml");
    std::fs::write(
        &k,
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: api\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./environments/dev\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .unwrap();
    let out = run(&flux_preview(s(&k), s(&layout), &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let objs = objects(&text(&out.stdout));
    let envs: Vec<&serde_json::Value> = objs
        .iter()
        .filter(|o| o["kind"] == "Deployment")
        .map(|o| &o["metadata"]["labels"]["openchoreo.dev/environment"])
        .collect();
    assert_eq!(envs, ["dev"]);
}

/// A source root of one kustomization directory `deploy/` holding `files`, and a Kustomization
/// for it with the given `postBuild` block.
fn small_source(files: &[(&str, &str)], post_build: &str) -> (tempfile::TempDir, PathBuf) {
    let d = tempfile::tempdir().unwrap();
    for (rel, text) in files {
        let p = d.path().join("src/deploy").join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let k = d.path().join("ks.yaml");
    std::fs::write(
        &k,
        format!("apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: apps\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./deploy\n  prune: true\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n  postBuild:\n{post_build}"),
    )
    .unwrap();
    (d, k)
}

/// Issue 38.7: the preview fails where Flux would fail. Flux substitutes an object's YAML, so
/// `port: "${PORT}"` becomes the number 8080 (fluxcd/pkg `kustomize/kustomize_varsub.go`), which
/// the API server refuses in a ConfigMap's data: the preview said nothing. Now it is the API
/// server's error, on the file the object came from (kustomize's origin annotation), never a
/// line of kustomize's output; and the annotation kiln asked kustomize for is not in the output.
#[test]
fn the_preview_checks_objects_after_substitution_and_names_their_file() {
    let (d, k) = small_source(
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\nnamePrefix: p-\n"),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  port: \"${PORT}\"\n",
            ),
        ],
        "    substitute:\n      PORT: \"8080\"\n",
    );
    let root = d.path().join("src");
    let out = run(&flux_preview(s(&k), s(&root), &["--substitute"]));
    let err = fails_with(&out, "KLN1020");
    assert!(err.contains("deploy/cm.yaml"), "{err}");
    assert!(err.contains("ConfigMap p-settings"), "{err}");
    assert!(err.contains("after postBuild substitution"), "{err}");
    assert!(err.contains("data.port"), "{err}");
    assert!(!err.contains("kustomize build"), "{err}");
    // Without substitution the object is fine, and kustomize's origin annotation is not shown.
    let ok = run(&flux_preview(s(&k), s(&root), &[]));
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let stream = text(&ok.stdout);
    assert!(!stream.contains("config.kubernetes.io/origin"), "{stream}");
    assert!(!stream.contains("annotations"), "{stream}");
    // A substitution error is placed on the source file too.
    let (d, k) = small_source(
        &[
            ("kustomization.yaml", "resources: [cm.yaml]\n"),
            (
                "cm.yaml",
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  port: \"${UNSET}\"\n",
            ),
        ],
        "    substitute:\n      PORT: \"8080\"\n",
    );
    let root = d.path().join("src");
    let out = run(&flux_preview(s(&k), s(&root), &["--substitute"]));
    let err = fails_with(&out, "KLN8001");
    assert!(
        err.contains("deploy/cm.yaml") && err.contains("ConfigMap settings"),
        "{err}"
    );
}

/// Issue 38.7: `--protect` escapes `${` as `$${`, which only substitution turns back. A
/// Kustomization whose variables all come from optional sources that are missing sets none, so
/// Flux skips substitution (`substituteStrategy` unset) and the escapes would reach the cluster:
/// a warning says so and names the fix. With a variable set there is no warning.
#[test]
fn protect_warns_when_flux_would_not_substitute() {
    let files = [
        ("kustomization.yaml", "resources: [site.yaml, rgd.yaml]\n"),
        (
            "rgd.yaml",
            &std::fs::read_to_string(repo().join("deploy/site-rgd.yaml")).unwrap() as &str,
        ),
        (
            "site.yaml",
            "apiVersion: example.com/v1alpha1\nkind: Site\nmetadata:\n  name: web\n  namespace: web\nspec:\n  image: nginx\n",
        ),
    ];
    let optional = "    substituteFrom:\n      - kind: ConfigMap\n        name: missing\n        optional: true\n";
    let (d, k) = small_source(&files, optional);
    let root = d.path().join("src");
    let out = run(&flux_preview(
        s(&k),
        s(&root),
        &["--substitute", "--protect"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning[KLN8008]") && err.contains("skips substitution"),
        "{err}"
    );
    assert!(err.contains("--protect=annotate"), "{err}");
    let (d, k) = small_source(&files, "    substitute:\n      X: \"1\"\n");
    let root = d.path().join("src");
    let out = run(&flux_preview(
        s(&k),
        s(&root),
        &["--substitute", "--protect"],
    ));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("skips substitution"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 38.7: an artifact is what a Flux Kustomization applies; kiln cannot see whether it
/// substitutes, so rendered objects holding `${` are named (KLN8008) unless --protect.
#[test]
fn an_artifact_names_rendered_objects_that_substitution_would_change() {
    let d = tempfile::tempdir().unwrap();
    let art = d.path().join("m.tar.gz");
    let out = run(&["build", s(&repo().join("deploy")), "--artifact", s(&art)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("warning[KLN8008]") && err.contains("--protect"),
        "{err}"
    );
    let art2 = d.path().join("p.tar.gz");
    let out = run(&[
        "build",
        s(&repo().join("deploy")),
        "--artifact",
        s(&art2),
        "--protect",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        !text(&out.stderr).contains("KLN8008"),
        "{}",
        text(&out.stderr)
    );
}

/// Issue 38.5: kiln-flux passes kurel values and sets (`--values`, `--set`, relative to the
/// tree), and a package's values files beside it are carried in the tree as written, never in
/// its stream of manifests.
#[test]
fn values_and_sets_reach_a_kurel_package_in_the_tree() {
    let tree = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/argocd/repo/apps/cache");
    let out = run(&["build", s(&tree), "--values", "values/prod.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let stream = text(&out.stdout);
    assert_eq!(stream.matches("replicas:").count(), 1, "{stream}");
    assert!(stream.contains("replicas: 3"), "{stream}");
    let out = run(&["build", s(&tree), "--set", "replicas=5"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("replicas: 5"));
    let d = tempfile::tempdir().unwrap();
    let dir = d.path().join("out");
    let out = run(&[
        "build",
        s(&tree),
        "--values",
        "values/prod.yaml",
        "-o",
        s(&dir),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        std::fs::read(dir.join("values/prod.yaml")).unwrap(),
        std::fs::read(tree.join("values/prod.yaml")).unwrap()
    );
}

/// Issue 38.2: Argo CD's example layout through Flux: a Kustomization whose path is the
/// guestbook's production overlay builds the base's rendered instance, transformed.
#[test]
fn the_argocd_example_layout_builds_through_flux() {
    tool("kubectl");
    let layout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/layouts/argocd-apps");
    let d = tempfile::tempdir().unwrap();
    let k = d.path().join("ks.yaml");
    std::fs::write(
        &k,
        "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata:\n  name: guestbook\n  namespace: flux-system\nspec:\n  interval: 10m\n  path: ./guestbook/overlays/prod\n  prune: true\n  targetNamespace: guestbook\n  sourceRef:\n    kind: GitRepository\n    name: flux-system\n",
    )
    .unwrap();
    let out = run(&flux_preview(s(&k), s(&layout), &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let objs = objects(&text(&out.stdout));
    let ids: Vec<String> = objs
        .iter()
        .map(|o| {
            format!(
                "{}/{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or(""),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            "Deployment/guestbook/prod-guestbook-ui",
            "Service/guestbook/prod-guestbook-ui"
        ]
    );
}

/// `kiln-flux build --kustomization KS --source-root ROOT`: what Flux would apply.
fn preview(ks: &Path, root: &Path) -> Output {
    run(&flux_preview(s(ks), s(root), &[]))
}

/// No secret value reaches what kiln-flux prints (issue 39): the warnings of the render in place
/// (a kurel parameter a Secret template reads, quoted by a warning, was printed unredacted), and
/// `kubectl kustomize`'s failure in the preview, which quotes the node it fails on in its escaped
/// form (`node contents: [1, "Hunter2-Escaped\x01-secret"]`).
#[test]
fn secret_values_never_reach_warnings_or_kustomize_messages() {
    tool("kubectl");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo");
    for (path, text) in [
        (
            "app/s.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: web}\nstringData:\n  pw: \"Hunter2-Escaped\\x01-secret\"\n",
        ),
        (
            "app/pkg.kurel/parameters.yaml",
            "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\ndb:\n  password: \"{{ Hunter2-Template-secret }}\"\n",
        ),
        (
            "app/pkg.kurel/resources/s.yaml",
            "apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: web}\nstringData:\n  pw: \"${db.password}\"\n",
        ),
        (
            "app/kustomization.yaml",
            "resources: [s.yaml]\npatches:\n- patch: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {name: s, namespace: web}\n    stringData:\n      pw: [1, \"Hunter2-Escaped\\x01-secret\"]\n",
        ),
        (
            "ks.yaml",
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\nmetadata: {name: app, namespace: flux-system}\nspec: {path: ./app}\n",
        ),
    ] {
        let p = root.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    let out = d.path().join("out");
    let built = run(&["build", s(&root.join("app")), "-o", s(&out)]);
    let err = text(&built.stderr);
    assert_eq!(built.status.code(), Some(0), "{err}");
    assert!(
        err.contains("KLN7028") && err.contains("[redacted]"),
        "{err}"
    );
    assert!(!err.contains("Hunter2"), "{err}");
    let err = fails_with(&preview(&root.join("ks.yaml"), &root), "node contents");
    assert!(err.contains("[redacted]"), "{err}");
    assert!(!err.contains("Hunter2"), "{err}");
}

/// Values of a Flux Kustomization (a configuration, not the person running kiln-flux) of 100 KiB:
/// an unknown field's name, the apiVersion, spec.path, an environment given on the command line.
/// Each is quoted by a prefix of 48 characters and its length (or, for a path, whole only when
/// it could name a file), never printed whole (issue 39).
#[test]
fn huge_values_of_a_kustomization_are_quoted_by_a_prefix() {
    let big = "v".repeat(100 << 10);
    // What a message holds of the value: a prefix and the length (a path's includes the rest).
    let quoted = |out: &Output, length: &str| {
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{}", &err[..err.len().min(300)]);
        assert!(
            err.len() < 2048 && err.contains(length),
            "{}",
            &err[..err.len().min(600)]
        );
    };
    let exact = format!("… ({} bytes)", big.len());
    for (from, to, length) in [
        (
            "targetNamespace: web",
            format!("targetNamespace: web\n  ? {big}\n  : 1"),
            exact.as_str(),
        ),
        ("path: ./deploy", format!("path: ./{big}"), "bytes)"),
        ("path: ./deploy", format!("path: ../{big}"), "bytes)"),
        (
            "kustomize.toolkit.fluxcd.io/v1",
            big.clone(),
            exact.as_str(),
        ),
    ] {
        let (_d, root, ks) = variant(|t| t.replace(from, &to));
        quoted(&preview(&ks, &root), length);
    }
    quoted(
        &run(&["build", s(&repo().join("deploy")), "--env", &big]),
        &exact,
    );
}

/// source-controller's exclusion rules decide what of a tree the build writes (issue 39): the
/// patterns of every `.sourceignore` file, each scoped to its directory, the last matching one
/// deciding (`!` re-includes); version-control data always out; without any pattern the
/// defaults (images, archives, CI files, `**/.sops.yaml`). Rules: fluxcd/pkg
/// `sourceignore/sourceignore.go` (`LoadIgnorePatterns`, the defaults) and
/// `artifact/storage/archive.go` (`SourceIgnoreFilter`: the defaults only without patterns).
#[cfg(unix)]
#[test]
fn the_artifact_holds_what_source_controllers_rules_keep() {
    let cm = |name: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: web}}\n")
    };
    let listing = |args: &[&str], art: &Path| -> Vec<String> {
        let mut all = args.to_vec();
        all.extend(["--artifact", s(art)]);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let list = Command::new(tool("tar"))
            .args(["-tzf", s(art)])
            .output()
            .unwrap();
        text(&list.stdout)
            .lines()
            .filter(|l| !l.ends_with('/'))
            .map(str::to_string)
            .collect()
    };
    let d = tempfile::tempdir().unwrap();
    let t = d.path().join("t");
    for (rel, body) in [
        (
            ".sourceignore",
            "# not for Flux\ndrafts/\n!drafts/keep.yaml\n*.md\n".to_string(),
        ),
        ("app.yaml", cm("app")),
        ("README.md", "# t\n".to_string()),
        ("drafts/a.yaml", cm("draft")),
        ("drafts/keep.yaml", cm("keep")),
        ("sub/.sourceignore", "local.yaml\n".to_string()),
        ("sub/local.yaml", cm("sub-local")),
        ("local.yaml", cm("local")),
        ("logo.png", "png".to_string()),
        (".git/config", "[core]\n".to_string()),
    ] {
        std::fs::create_dir_all(t.join(rel).parent().unwrap()).unwrap();
        std::fs::write(t.join(rel), body).unwrap();
    }
    let got = listing(&["build", s(&t)], &d.path().join("a.tar.gz"));
    assert_eq!(
        got,
        [
            ".sourceignore",
            "app.yaml",
            "drafts/keep.yaml",
            "local.yaml",
            "logo.png",
            "sub/.sourceignore"
        ]
    );
    // The stream holds the same manifests.
    let stream = text(&run(&["build", s(&t)]).stdout);
    assert!(
        stream.contains("name: keep") && !stream.contains("name: draft"),
        "{stream}"
    );
    assert!(!stream.contains("name: sub-local"), "{stream}");

    // No pattern at all: source-controller's defaults. A 100 MiB archive they leave out is not
    // even read (it would be over the input limit).
    let u = d.path().join("u");
    for (rel, body) in [
        ("app.yaml", cm("app")),
        (".github/workflows/ci.yml", "on: push\n".to_string()),
        ("logo.png", "png".to_string()),
        ("deep/.sops.yaml", "creation_rules: []\n".to_string()),
        ("empty/.sourceignore", "# comments only\n\n".to_string()),
    ] {
        std::fs::create_dir_all(u.join(rel).parent().unwrap()).unwrap();
        std::fs::write(u.join(rel), body).unwrap();
    }
    std::fs::File::create(u.join("big.zip"))
        .unwrap()
        .set_len(100 << 20)
        .unwrap();
    let got = listing(&["build", s(&u)], &d.path().join("b.tar.gz"));
    assert_eq!(got, ["app.yaml", "empty/.sourceignore"]);

    // A file kiln renders that the rules leave out: a warning naming it (Flux would not apply
    // it), a failure with --strict.
    let p = d.path().join("p");
    for (rel, body) in [
        (".sourceignore", "pkg.yaml\n".to_string()),
        (
            "pkg/parameters.yaml",
            "kurel: {name: pkg, version: 1.0.0, appVersion: \"1.0\"}\nname: x\n".to_string(),
        ),
        ("pkg/resources/cm.yaml", cm("\"${name}\"")),
    ] {
        std::fs::create_dir_all(p.join(rel).parent().unwrap()).unwrap();
        std::fs::write(p.join(rel), body).unwrap();
    }
    let out = run(&["build", s(&p), "-o", s(&d.path().join("p-out"))]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("warning[KLN1017]") && err.contains("pkg.yaml"),
        "{err}"
    );
    assert!(!d.path().join("p-out/pkg.yaml").exists());
    let out = run(&["build", s(&p), "--strict"]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty());
}

/// The preview shows what Flux applies from its artifact (issue 39): a file the source's
/// `.sourceignore` leaves out is not in it, even where Flux generates the kustomization (every
/// YAML file of spec.path); a spec.path the rules leave out entirely is an error, as Flux
/// finds no such path.
#[test]
fn the_preview_leaves_out_what_the_artifact_would() {
    tool("kubectl");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("repo");
    let ks = d.path().join("ks.yaml");
    std::fs::create_dir_all(root.join("apps")).unwrap();
    std::fs::write(root.join(".sourceignore"), "*.draft.yaml\n").unwrap();
    for (f, name) in [("apps/a.yaml", "kept"), ("apps/b.draft.yaml", "drafted")] {
        std::fs::write(
            root.join(f),
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: web}}\n"
            ),
        )
        .unwrap();
    }
    let kustomization = |path: &str| {
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
             metadata: {{name: apps, namespace: flux-system}}\n\
             spec: {{interval: 10m, prune: true, path: {path}, sourceRef: {{kind: GitRepository, name: repo}}}}\n"
        )
    };
    std::fs::write(&ks, kustomization("./apps")).unwrap();
    let out = run(&flux_preview(s(&ks), s(&root), &[]));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("name: kept"), "{stdout}");
    assert!(!stdout.contains("name: drafted"), "{stdout}");
    // Outside spec.path too: a base's file the rules leave out is missing, in Flux as here.
    std::fs::create_dir_all(root.join("shared")).unwrap();
    std::fs::write(
        root.join("shared/extra.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: extra, namespace: web}\n",
    )
    .unwrap();
    std::fs::write(
        root.join("apps/kustomization.yaml"),
        "resources: [a.yaml, ../shared/extra.yaml]\n",
    )
    .unwrap();
    let out = run(&flux_preview(s(&ks), s(&root), &[]));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("name: extra"));
    std::fs::write(root.join(".sourceignore"), "*.draft.yaml\nshared/\n").unwrap();
    let out = run(&flux_preview(s(&ks), s(&root), &[]));
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    assert!(
        text(&out.stderr).contains("extra.yaml"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
    std::fs::remove_file(root.join("apps/kustomization.yaml")).unwrap();
    std::fs::write(root.join(".sourceignore"), "apps/\n").unwrap();
    let out = run(&flux_preview(s(&ks), s(&root), &[]));
    let err = fails_with(&out, "KLN1017");
    assert!(err.contains("spec.path"), "{err}");
}

/// A fake kubectl: a shell script in `dir` that ignores its arguments and runs `body`.
fn fake_kubectl(dir: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let p = dir.join("kubectl");
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

/// The preview's `kubectl kustomize` is bounded (issue 39): a build past the time limit
/// (`KILN_KUSTOMIZE_TIMEOUT`), past the bytes kiln reads back (`--limit output-bytes` when
/// lower than `input-bytes`) or past the documents limit is stopped: KLN1018, nothing on stdout.
/// A time limit that is not a number is a usage error.
#[test]
fn the_preview_build_is_bounded_in_time_bytes_and_documents() {
    let d = tempfile::tempdir().unwrap();
    /// A fake build, the environment and options of the run, and what the message says.
    struct Case {
        body: &'static str,
        env: &'static [(&'static str, &'static str)],
        extra: &'static [&'static str],
        why: &'static str,
    }
    let cases = [
        Case {
            body: "sleep 600",
            env: &[("KILN_KUSTOMIZE_TIMEOUT", "1")],
            extra: &[],
            why: "did not finish within 1 s",
        },
        Case {
            body: "yes 'a: 1'",
            env: &[],
            extra: &["--limit", "output-bytes=1Mi"],
            why: "printed more than 1048576 bytes, the limit (output-bytes)",
        },
        Case {
            body: "yes -- '---'",
            env: &[],
            extra: &["--limit", "documents=50"],
            why: "printed more than 50 documents, the limit (documents)",
        },
    ];
    let (ks, root) = (ks(), repo());
    for Case {
        body,
        env,
        extra,
        why,
    } in cases
    {
        let kubectl = fake_kubectl(d.path(), body);
        let mut args = flux_preview(&ks, s(&root), &["--kubectl", s(&kubectl)]);
        args.extend(extra);
        let out = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
            .args(&args)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let err = fails_with(&out, "KLN1018");
        assert!(err.contains(why), "{body}: {err}");
        assert!(err.contains("deploy"), "{body}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_kiln-flux"))
        .args(flux_preview(&ks, s(&root), &[]))
        .env("KILN_KUSTOMIZE_TIMEOUT", "soon")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("KILN_KUSTOMIZE_TIMEOUT is not a whole number of seconds"),
        "{}",
        text(&out.stderr)
    );
    assert!(out.stdout.is_empty());
}

/// Substitution stays within the output limit, `--limit output-bytes` included, in the preview
/// (the objects' results together: the object named is the one that passes the limit) and in
/// `envsubst` (which read only `input-bytes` of its limits before).
#[test]
fn substitution_stays_within_the_output_limit() {
    tool("kubectl");
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("src");
    std::fs::create_dir_all(root.join("app")).unwrap();
    let names: Vec<String> = (0..5).map(|i| format!("c{i}.yaml")).collect();
    for n in &names {
        std::fs::write(
            root.join("app").join(n),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {}}}\ndata: {{v: \"${{V}}\"}}\n", &n[..2]),
        )
        .unwrap();
    }
    std::fs::write(
        root.join("app/kustomization.yaml"),
        format!("resources: [{}]\n", names.join(", ")),
    )
    .unwrap();
    let ks = d.path().join("ks.yaml");
    std::fs::write(
        &ks,
        format!(
            "apiVersion: kustomize.toolkit.fluxcd.io/v1\nkind: Kustomization\n\
             metadata: {{name: apps, namespace: flux-system}}\n\
             spec:\n  interval: 10m\n  path: ./app\n  prune: true\n  \
             sourceRef: {{kind: GitRepository, name: repo}}\n  \
             postBuild:\n    substitute:\n      V: {}\n",
            "x".repeat(100_000)
        ),
    )
    .unwrap();
    let build = |limit: &str| {
        run(&flux_preview(
            s(&ks),
            s(&root),
            &["--substitute", "--limit", limit],
        ))
    };
    let ok = build("output-bytes=1Mi");
    assert_eq!(ok.status.code(), Some(0), "{}", text(&ok.stderr));
    let err = fails_with(&build("output-bytes=300k"), "KLN8005");
    assert!(
        err.contains("ConfigMap c2: with this object the substituted objects would be more than 300000 bytes together"),
        "{err}"
    );
    assert!(!err.contains("xxxx"), "{err}");
    let value = "x".repeat(1000);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kiln-flux"));
    let out = cmd
        .args(["envsubst", "--limit", "output-bytes=10k"])
        .env("V", &value)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all("${V}".repeat(11).as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let err = fails_with(&out, "KLN8005");
    assert!(err.contains("more than 10000 bytes"), "{err}");
}
