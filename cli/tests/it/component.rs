//! Snapshots and promotion, driving the real `kiln` binary: a snapshot renders exactly like the live
//! definitions it froze, a tampered snapshot is refused, and `kiln promote` commits a snapshot into
//! the next environment of a temporary git repository.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common::kiln;

fn seed() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/component/seed-web-app")
}

/// The seed's definitions (without its expected output) in a fresh folder.
fn seed_inputs(dir: &Path) {
    for f in ["01-web-app.yaml", "02-addons.yaml", "03-component.yaml"] {
        fs::copy(seed().join(f), dir.join(f)).unwrap();
    }
}

fn deployments() -> (String, String) {
    let text = fs::read_to_string(seed().join("04-deployments.yaml")).unwrap();
    let mut parts = text.split("\n---\n");
    let prod = parts.next().unwrap().to_string();
    let dev = parts.next().unwrap().to_string();
    (prod, dev)
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "kiln failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

#[test]
fn snapshot_renders_like_the_live_definitions() {
    let tmp = tempfile::tempdir().unwrap();
    let live = tmp.path().join("live");
    fs::create_dir(&live).unwrap();
    seed_inputs(&live);
    let (prod, _) = deployments();
    fs::write(live.join("04-prod.yaml"), &prod).unwrap();
    let snap_dir = tmp.path().join("snap");
    fs::create_dir(&snap_dir).unwrap();

    let created = kiln(
        &live,
        &[
            "snapshot",
            "create",
            "--component",
            "checkout-service",
            "--env",
            "production",
            "-o",
            "../snap/snapshot.yaml",
            ".",
        ],
    );
    stdout(&created);
    fs::write(snap_dir.join("deployment.yaml"), &prod).unwrap();

    let from_live = stdout(&kiln(&live, &["render", "--env", "production", "."]));
    let from_snap = stdout(&kiln(&snap_dir, &["render", "--env", "production", "."]));
    assert_eq!(from_live, from_snap);
    assert!(from_snap.contains("kind: HorizontalPodAutoscaler"));

    // The same snapshot on stdout, byte for byte.
    let again = stdout(&kiln(
        &live,
        &[
            "snapshot",
            "create",
            "--component",
            "checkout-service",
            "--env",
            "production",
            ".",
        ],
    ));
    assert_eq!(
        again,
        fs::read_to_string(snap_dir.join("snapshot.yaml")).unwrap()
    );

    // A hand edit is detected.
    let text = fs::read_to_string(snap_dir.join("snapshot.yaml")).unwrap();
    fs::write(
        snap_dir.join("snapshot.yaml"),
        text.replacen("minAvailable: 1", "minAvailable: 2", 1),
    )
    .unwrap();
    let tampered = kiln(
        &snap_dir,
        &[
            "render",
            "--diagnostics",
            "json",
            "--env",
            "production",
            ".",
        ],
    );
    assert_eq!(tampered.status.code(), Some(1));
    assert!(tampered.stdout.is_empty());
    let err = String::from_utf8_lossy(&tampered.stderr);
    assert!(err.contains("KLN6014"), "{err}");
}

#[test]
fn snapshot_of_an_unknown_component_fails() {
    let tmp = tempfile::tempdir().unwrap();
    seed_inputs(tmp.path());
    let o = kiln(
        tmp.path(),
        &[
            "snapshot",
            "create",
            "--diagnostics",
            "json",
            "--component",
            "nope",
            "--env",
            "dev",
            ".",
        ],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("KLN6019"));
}

fn git(repo: &git2::Repository, message: &str) {
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"].iter(), git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let sig = git2::Signature::now("test", "test@example.com").unwrap();
    let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), &sig, &sig, message, &tree, &parents)
        .unwrap();
}

#[test]
fn promotion_commits_the_snapshot_into_the_next_environment() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    let repo = git2::Repository::init(&root).unwrap();
    {
        let mut cfg = repo.config().unwrap();
        cfg.set_str("user.name", "kiln test").unwrap();
        cfg.set_str("user.email", "kiln@example.com").unwrap();
    }
    let defs = root.join("definitions");
    fs::create_dir_all(&defs).unwrap();
    seed_inputs(&defs);
    let (prod, dev) = deployments();
    fs::create_dir_all(root.join("environments/development")).unwrap();
    fs::create_dir_all(root.join("environments/production")).unwrap();
    fs::write(
        root.join("environments/development/checkout-service.deployment.yaml"),
        &dev,
    )
    .unwrap();
    fs::write(
        root.join("environments/production/checkout-service.deployment.yaml"),
        &prod,
    )
    .unwrap();
    stdout(&kiln(
        &root,
        &[
            "snapshot",
            "create",
            "--component",
            "checkout-service",
            "--env",
            "development",
            "-o",
            "environments/development/checkout-service.snapshot.yaml",
            "definitions",
            "environments/development",
        ],
    ));
    git(&repo, "initial");

    // A dirty tree is refused, and nothing is committed.
    fs::write(root.join("notes.txt"), "wip").unwrap();
    let refused = kiln(
        &root,
        &[
            "promote",
            "--diagnostics",
            "json",
            "--from",
            "development",
            "--to",
            "production",
        ],
    );
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("KLN6020"));
    assert!(!root
        .join("environments/production/checkout-service.snapshot.yaml")
        .exists());
    fs::remove_file(root.join("notes.txt")).unwrap();

    let promoted = stdout(&kiln(
        &root,
        &["promote", "--from", "development", "--to", "production"],
    ));
    let digest = {
        let text = fs::read_to_string(
            root.join("environments/development/checkout-service.snapshot.yaml"),
        )
        .unwrap();
        let line = text
            .lines()
            .find(|l| l.contains("kiln.dev/snapshot-digest"))
            .unwrap()
            .to_string();
        line.split_whitespace().last().unwrap().to_string()
    };
    assert!(promoted.contains(&digest), "{promoted}");

    // The commit: one new file, a message naming component, environments and digest.
    let head = repo.head().unwrap().peel_to_commit().unwrap();
    let msg = head.message().unwrap().to_string();
    assert!(
        msg.starts_with("promote checkout-service from development to production"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("checkout-service: {digest}")),
        "{msg}"
    );
    let parent = head.parent(0).unwrap();
    let diff = repo
        .diff_tree_to_tree(
            Some(&parent.tree().unwrap()),
            Some(&head.tree().unwrap()),
            None,
        )
        .unwrap();
    let changed: Vec<String> = diff
        .deltas()
        .map(|d| d.new_file().path().unwrap().display().to_string())
        .collect();
    assert_eq!(
        changed,
        ["environments/production/checkout-service.snapshot.yaml"]
    );
    let statuses = repo.statuses(None).unwrap();
    assert_eq!(statuses.len(), 0, "promotion leaves a clean tree");

    // The rendered difference between the environments: same snapshot content, different
    // ComponentDeployments.
    let dev_out = stdout(&kiln(&root, &["render", "environments/development"]));
    let prod_out = stdout(&kiln(&root, &["render", "environments/production"]));
    assert!(!dev_out.contains("HorizontalPodAutoscaler"));
    assert!(prod_out.contains("kind: HorizontalPodAutoscaler"));
    assert!(prod_out.contains("storage: 200Gi") && dev_out.contains("storage: 50Gi"));
    assert!(prod_out.contains("cpu: 500m") && dev_out.contains("cpu: 200m"));
    assert_eq!(
        prod_out,
        stdout(&kiln(
            &root,
            &[
                "render",
                "--env",
                "production",
                "definitions",
                "environments/production/checkout-service.deployment.yaml"
            ]
        ))
    );

    // Promoting again changes nothing and makes no commit.
    stdout(&kiln(
        &root,
        &["promote", "--from", "development", "--to", "production"],
    ));
    assert_eq!(
        repo.head().unwrap().peel_to_commit().unwrap().id(),
        head.id()
    );
}

fn testdata(case: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/component")
        .join(case)
}

/// The documents of a render, without the pass-through ones of other openchoreo.dev kinds.
fn rendered_objects(out: &str) -> Vec<String> {
    out.split("\n---\n")
        .filter(|d| !d.contains("apiVersion: openchoreo.dev/"))
        .map(|d| d.trim().to_string())
        .collect()
}

#[test]
fn component_release_renders_like_the_live_definitions() {
    let live = stdout(&kiln(
        &testdata("upstream-aliases"),
        &["render", "--env", "prod", "00-platform.yaml", "inputs.yaml"],
    ));
    // A release does not record the Component's uid: the live Component comes from --observed.
    let released = stdout(&kiln(
        &testdata("component-release"),
        &[
            "render",
            "--env",
            "prod",
            "--observed",
            "observed.live",
            "00-platform.yaml",
            "binding.yaml",
            "release.yaml",
        ],
    ));
    assert_eq!(rendered_objects(&live), rendered_objects(&released));
    assert!(released.contains("image: ghcr.io/shop/api:1.0"));
}

#[test]
fn a_binding_with_release_name_renders_the_release_not_the_live_component() {
    let tmp = tempfile::tempdir().unwrap();
    let live = fs::read_to_string(testdata("upstream-aliases").join("inputs.yaml")).unwrap();
    // Replace the live binding by one bound to the older release (no traits, no environment
    // configs): the live Component (image 1.0) is not rendered for prod.
    let (defs, binding) = live.rsplit_once("---\n").unwrap();
    assert!(binding.contains("kind: ReleaseBinding"));
    let bound = format!(
        "{defs}---\napiVersion: openchoreo.dev/v1alpha1\nkind: ReleaseBinding\nmetadata: {{name: api-prod, namespace: default}}\nspec:\n  owner: {{projectName: shop, componentName: api}}\n  environment: prod\n  releaseName: api-1a2b3c\n"
    );
    fs::write(tmp.path().join("live.yaml"), bound).unwrap();
    fs::copy(
        testdata("component-release").join("release.yaml"),
        tmp.path().join("release.yaml"),
    )
    .unwrap();
    fs::copy(
        testdata("upstream-aliases").join("00-platform.yaml"),
        tmp.path().join("00-platform.yaml"),
    )
    .unwrap();
    let out = stdout(&kiln(tmp.path(), &["render", "."]));
    assert!(out.contains("image: ghcr.io/shop/api:0.9"), "{out}");
    assert!(!out.contains("image: ghcr.io/shop/api:1.0"), "{out}");
    assert_eq!(out.matches("kind: Deployment").count(), 1, "{out}");
}

/// OpenChoreo's default component types (samples/getting-started/component-types, copied into the
/// golden case) load and type-check on their own: `kiln validate` accepts each, with the
/// upstream context's variables (`configurations`, `dependencies`, `dataplane`, `gateway`,
/// `metadata.componentName`…) and helper functions.
#[test]
fn upstream_default_types_pass_validate() {
    let dir = testdata("upstream-default-types");
    for t in [
        "01-type-service.yaml",
        "01-type-webapp.yaml",
        "01-type-worker.yaml",
        "01-type-scheduled-task.yaml",
    ] {
        let o = kiln(&dir, &["validate", t]);
        assert!(
            o.status.success(),
            "{t}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

/// A misspelt context field of an upstream type is caught when it loads (KLN3008), as upstream's
/// admission webhook checks templates against its context: upstream's `metadata` has
/// `componentName`, not the proposal's `component`.
#[test]
fn upstream_type_templates_are_type_checked_against_upstream_context() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("type.yaml"),
        "apiVersion: openchoreo.dev/v1alpha1\nkind: ClusterComponentType\nmetadata: {name: web}\nspec:\n  workloadType: deployment\n  resources:\n    - id: deployment\n      template:\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata: {name: \"${metadata.componentNme}\"}\n",
    )
    .unwrap();
    let o = kiln(tmp.path(), &["validate", "type.yaml"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("KLN3008") && err.contains("componentNme"),
        "{err}"
    );
    // The same template reading upstream's field validates.
    fs::write(
        tmp.path().join("type.yaml"),
        "apiVersion: openchoreo.dev/v1alpha1\nkind: ClusterComponentType\nmetadata: {name: web}\nspec:\n  workloadType: deployment\n  resources:\n    - id: deployment\n      template:\n        apiVersion: apps/v1\n        kind: Deployment\n        metadata: {name: \"${metadata.componentName}\"}\n",
    )
    .unwrap();
    let o = kiln(tmp.path(), &["validate", "type.yaml"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The platform objects an upstream render reads (Project, Environment, data plane, with their
/// uids) may come from `--observed` instead of the inputs: the component renders the same
/// objects, and the observed ones are not part of the output.
#[test]
fn upstream_platform_objects_may_come_from_observed_state() {
    let dir = testdata("upstream-embedded-traits");
    let from_inputs = stdout(&kiln(
        &dir,
        &[
            "render",
            "--namespace",
            "default",
            "00-platform.yaml",
            "inputs.yaml",
        ],
    ));
    let from_observed = stdout(&kiln(
        &dir,
        &[
            "render",
            "--namespace",
            "default",
            "--observed",
            "00-platform.yaml",
            "inputs.yaml",
        ],
    ));
    assert_eq!(
        rendered_objects(&from_inputs),
        rendered_objects(&from_observed)
    );
    assert!(
        !from_observed.contains("kind: Environment"),
        "{from_observed}"
    );
    // Without either, the render names what it misses.
    let o = kiln(&dir, &["render", "--namespace", "default", "inputs.yaml"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("KLN6024") && err.contains("Environment \"dev\""),
        "{err}"
    );
}
