//! kiln-krm as kustomize's legacy exec plugin, driven by the real `kubectl kustomize
//! --enable-alpha-plugins`: as a generator and as a transformer, with kustomize's own features
//! (namePrefix, labels, patches) applied after kiln's output; for kro, a component and a kurel
//! package.

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::*;

/// A plugin directory with kiln-krm installed by its own `install-exec-plugin`.
fn plugin_home(tmp: &Path) -> std::path::PathBuf {
    let xdg = tmp.join("xdg");
    let o = run(
        Command::new(bin())
            .args(["install-exec-plugin", "--dir"])
            .arg(xdg.join("kustomize/plugin")),
        "",
    );
    assert!(o.status.success(), "{}", show(&o));
    let installed = String::from_utf8_lossy(&o.stdout).trim().to_string();
    assert!(
        installed.ends_with("kustomize/plugin/fn.kiln.dev/v1alpha1/render/Render"),
        "{installed}"
    );
    xdg
}

fn build(kubectl: &Path, xdg: &Path, dir: &Path) -> std::process::Output {
    run(
        Command::new(kubectl)
            .args(["kustomize", "--enable-alpha-plugins"])
            .arg(dir)
            .env("XDG_CONFIG_HOME", xdg),
        "",
    )
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", show(o));
    String::from_utf8(o.stdout.clone()).unwrap()
}

/// Names and kinds in a kustomize output, in order.
fn objects(out: &str) -> Vec<String> {
    out.split("\n---\n")
        .map(|d| {
            let kind = d
                .lines()
                .find_map(|l| l.strip_prefix("kind: "))
                .unwrap_or("?");
            let name = d
                .lines()
                .find_map(|l| l.strip_prefix("  name: "))
                .unwrap_or("?");
            format!("{kind}/{name}")
        })
        .collect()
}

const RENDER: &str = "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata:\n  name: render\n";

#[test]
fn generator_with_name_prefix_labels_and_patches() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let k = tmp.path().join("app");
    copy_dir(&testdata().join("krm/kro"), &k.join("kro"));
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  paths: [kro/rgd.yaml, kro/apps]\n  namespace: team\n"),
    )
    .unwrap();
    fs::write(
        k.join("kustomization.yaml"),
        "namePrefix: pre-\nlabels:\n- pairs: {env: dev}\ngenerators: [render.yaml]\npatches:\n- target: {kind: Deployment, name: shop}\n  patch: |\n    - op: replace\n      path: /spec/replicas\n      value: 9\n",
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &k));
    let objs = objects(&out);
    assert_eq!(objs.len(), 6, "{out}");
    for o in [
        "Deployment/pre-shop",
        "Deployment/pre-blog",
        "Service/pre-shop",
        "ConfigMap/pre-blog-eu-west-1",
    ] {
        assert!(objs.contains(&o.to_string()), "{o} missing: {objs:?}");
    }
    // kustomize's patch ran after kiln (the instance said 3); labels on everything.
    let shop = out
        .split("\n---\n")
        .find(|d| d.contains("name: pre-shop\n") && d.contains("kind: Deployment"))
        .unwrap();
    assert!(shop.contains("replicas: 9"), "{shop}");
    // `labels` without includeSelectors: metadata only, once per object.
    assert_eq!(out.matches("env: dev").count(), objs.len(), "{out}");
    // kiln's bookkeeping does not reach the output.
    assert!(
        !out.contains("config.kubernetes.io") && !out.contains("kiln.dev/rendered-from"),
        "{out}"
    );
    assert!(out.contains("namespace: team"), "{out}");
}

#[test]
fn transformer_renders_resources_and_passes_the_rest() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let base = tmp.path().join("base");
    copy_dir(&testdata().join("krm/kro"), &base);
    fs::write(base.join("render.yaml"), RENDER).unwrap();
    fs::write(
        base.join("kustomization.yaml"),
        "resources: [rgd.yaml, apps/shop.yaml, other/cm.yaml]\ntransformers: [render.yaml]\n",
    )
    .unwrap();
    let overlay = tmp.path().join("overlay");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../base]\nnamePrefix: o-\nlabels:\n- pairs: {tier: web}\npatches:\n- target: {kind: Service, name: blog}\n  patch: |\n    - op: add\n      path: /metadata/annotations\n      value: {patched: \"yes\"}\n",
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &overlay));
    let objs = objects(&out);
    // The definition and the instances are consumed; the unrelated objects pass through.
    assert!(
        !out.contains("kind: ResourceGraphDefinition") && !out.contains("kind: WebApp"),
        "{out}"
    );
    for o in [
        "ConfigMap/o-settings",
        "Deployment/o-legacy",
        "Deployment/o-shop",
        "Service/o-blog",
    ] {
        assert!(objs.contains(&o.to_string()), "{o} missing: {objs:?}");
    }
    assert_eq!(objs.len(), 8, "{objs:?}");
    assert!(out.contains("patched: \"yes\""), "{out}");
    assert!(
        out.contains("team: platform"),
        "the pass-through annotation was lost: {out}"
    );
    assert!(
        !out.contains("config.kubernetes.io") && !out.contains("kiln.dev/rendered-from"),
        "{out}"
    );
}

#[test]
fn component_generator_with_environment() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let k = tmp.path().join("k");
    copy_dir(
        &testdata().join("component/seed-web-app"),
        &k.join("component"),
    );
    fs::remove_file(k.join("component/expected.yaml")).unwrap();
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  paths: [component]\n  environment: development\n"),
    )
    .unwrap();
    fs::write(
        k.join("kustomization.yaml"),
        "namePrefix: dev-\ngenerators: [render.yaml]\n",
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &k));
    assert!(out.contains("name: dev-checkout-service\n"), "{out}");
    assert!(
        out.contains("openchoreo.org/environment: development"),
        "{out}"
    );
    assert!(!out.contains("environment: production"), "{out}");
    // The environment comes from the configuration.
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  paths: [component]\n  environment: production\n"),
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &k));
    assert!(
        out.contains("openchoreo.org/environment: production"),
        "{out}"
    );
    assert!(!out.contains("environment: development"), "{out}");
}

#[test]
fn kurel_generator_with_values() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let k = tmp.path().join("k");
    copy_dir(&testdata().join("kurel/values"), &k);
    fs::remove_file(k.join("expected.yaml")).unwrap();
    fs::remove_file(k.join("args")).unwrap();
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  paths: [app.kurel]\n  values: [values/prod.yaml, values/region.yaml]\n  set: {{replicas: 7, image: \"nginx:1.28\"}}\n"),
    )
    .unwrap();
    fs::write(
        k.join("kustomization.yaml"),
        "labels:\n- pairs: {via: kustomize}\ngenerators: [render.yaml]\n",
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &k));
    // The same objects `kiln render app.kurel --values … --set …` gives (expected.yaml), plus the label.
    let expected = read(&testdata().join("kurel/values/expected.yaml"));
    assert!(
        out.contains("replicas: 7") && out.contains("image: nginx:1.28"),
        "{out}"
    );
    assert!(out.contains("via: kustomize"), "{out}");
    assert_eq!(
        objects(&out).len(),
        expected.split("\n---\n").count(),
        "{out}"
    );
    // values may not leave the kustomization root.
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  paths: [app.kurel]\n  values: [../../etc/passwd]\n"),
    )
    .unwrap();
    let o = build(&kubectl, &xdg, &k);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("KLN1002"),
        "{}",
        show(&o)
    );
}

#[test]
fn a_custom_resource_in_a_transformer_passes_only_when_its_group_is_declared() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let k = tmp.path().join("k");
    copy_dir(&testdata().join("krm/kro"), &k);
    fs::write(
        k.join("cert.yaml"),
        "apiVersion: cert-manager.io/v1\nkind: Certificate\nmetadata:\n  name: shop\nspec:\n  secretName: shop-tls\n  dnsNames: [shop.example.com]\n",
    )
    .unwrap();
    fs::write(
        k.join("kustomization.yaml"),
        "resources: [rgd.yaml, apps/shop.yaml, cert.yaml]\ntransformers: [render.yaml]\n",
    )
    .unwrap();
    // Without passThrough kiln cannot tell a custom resource from a misspelt kind: it refuses.
    fs::write(k.join("render.yaml"), RENDER).unwrap();
    let refused = build(&kubectl, &xdg, &k);
    assert!(!refused.status.success());
    assert!(refused.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("KLN1011") && stderr.contains("cert-manager.io"),
        "{stderr}"
    );
    // Declared, it passes through untouched beside the rendered objects.
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec:\n  passThrough: [cert-manager.io]\n"),
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &k));
    let objs = objects(&out);
    assert!(objs.contains(&"Certificate/shop".to_string()), "{objs:?}");
    assert!(objs.contains(&"Deployment/shop".to_string()), "{objs:?}");
    assert!(out.contains("secretName: shop-tls"), "{out}");
}

/// The documented layout: kiln in a base, the user's transformations in an overlay. The example
/// `examples/kustomize/overlay/` builds with kustomize's prefix, label and replicas patch on the
/// rendered objects, and selectors as the definition wrote them.
#[test]
fn example_overlay_applies_the_users_transformations_to_kilns_output() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/kustomize");
    let out = ok(&build(&kubectl, &xdg, &examples.join("overlay/prod")));
    let objs = objects(&out);
    assert_eq!(
        objs,
        [
            "ConfigMap/eu-shop-eu-west-1",
            "Service/eu-shop",
            "Deployment/eu-shop"
        ],
        "{out}"
    );
    let dep = out
        .split("\n---\n")
        .find(|d| d.contains("kind: Deployment"))
        .unwrap();
    assert!(dep.contains("replicas: 5"), "the patch was lost: {dep}");
    assert!(
        dep.contains("matchLabels:\n      app.kubernetes.io/name: shop\n"),
        "the prefix leaked into the selector: {dep}"
    );
    assert_eq!(out.matches("region: eu\n").count(), 3, "{out}");
    // The generator example keeps kiln and the transformations in one kustomization: generators
    // run before kustomize's own transformers, so that works too.
    let out = ok(&build(&kubectl, &xdg, &examples.join("generator")));
    assert!(
        out.contains("name: eu-shop\n") && out.contains("replicas: 5"),
        "{out}"
    );
}

/// The transformer form after kustomize's own transformers would render inputs kustomize
/// already changed and lose the changes: the build is refused, from the kustomization's fields
/// or from the rename records kustomize leaves on the items.
#[test]
fn transformer_after_kustomizes_own_transformers_is_refused() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let base = tmp.path().join("base");
    copy_dir(&testdata().join("krm/kro"), &base);
    fs::write(base.join("render.yaml"), RENDER).unwrap();
    let resources = "resources: [rgd.yaml, apps/shop.yaml, other/cm.yaml]\n";
    let refused = |dir: &Path, expect: &[&str]| {
        let o = build(&kubectl, &xdg, dir);
        assert!(!o.status.success(), "{}", show(&o));
        assert!(o.stdout.is_empty(), "{}", show(&o));
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("KLN1010"), "{err}");
        for e in expect {
            assert!(err.contains(e), "{e}: {err}");
        }
    };
    // In the same kustomization: each field, including those that leave no mark on the items.
    for (fields, name) in [
        ("namePrefix: pre-\n", "namePrefix"),
        ("labels:\n- pairs: {env: dev}\n", "labels"),
        ("patches:\n- target: {kind: WebApp}\n  patch: |\n    - op: replace\n      path: /spec/replicas\n      value: 2\n", "patches"),
        ("replicas:\n- {name: legacy, count: 4}\n", "replicas"),
        ("images:\n- {name: busybox, newTag: \"2\"}\n", "images"),
    ] {
        fs::write(
            base.join("kustomization.yaml"),
            format!("{resources}transformers: [render.yaml]\n{fields}"),
        )
        .unwrap();
        refused(&base, &["kustomization.yaml", name]);
    }
    // The same with what kiln renders from `paths` while transforming other resources.
    fs::write(
        base.join("paths.yaml"),
        format!("{RENDER}spec:\n  paths: [rgd.yaml, apps/shop.yaml]\n"),
    )
    .unwrap();
    fs::write(
        base.join("kustomization.yaml"),
        "resources: [other/cm.yaml]\ntransformers: [paths.yaml]\nnamePrefix: pre-\n",
    )
    .unwrap();
    refused(&base, &["kustomization.yaml", "namePrefix"]);
    // A base renamed the inputs; kiln transforms in the overlay: the items say so.
    fs::write(
        base.join("kustomization.yaml"),
        format!("{resources}namePrefix: pre-\n"),
    )
    .unwrap();
    let overlay = tmp.path().join("overlay");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(overlay.join("render.yaml"), RENDER).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../base]\ntransformers: [render.yaml]\n",
    )
    .unwrap();
    refused(&overlay, &["WebApp \"pre-shop\"", "prefixes"]);
    // Empty fields change nothing and are accepted.
    fs::write(
        base.join("kustomization.yaml"),
        format!("{resources}transformers: [render.yaml]\nnamePrefix: \"\"\nlabels: []\n"),
    )
    .unwrap();
    ok(&build(&kubectl, &xdg, &base));
}

/// A generator that renders nothing fails the build unless `allowEmpty` says so.
#[test]
fn an_empty_generator_fails_the_build_unless_allowed() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let k = tmp.path().join("k");
    fs::create_dir_all(&k).unwrap();
    fs::write(k.join("kustomization.yaml"), "generators: [render.yaml]\n").unwrap();
    fs::write(k.join("render.yaml"), RENDER).unwrap();
    let o = build(&kubectl, &xdg, &k);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("nothing to render"),
        "{}",
        show(&o)
    );
    fs::write(
        k.join("render.yaml"),
        format!("{RENDER}spec: {{allowEmpty: true}}\n"),
    )
    .unwrap();
    let o = build(&kubectl, &xdg, &k);
    assert!(o.status.success(), "{}", show(&o));
}

/// The transformer form in a base that sets `namespace:` (kustomize's namespace transformer runs
/// before `transformers:`, `runTransformers` in kustomize's
/// `api/internal/target/kusttarget.go`), or below an overlay that runs kiln: the instances reach
/// kiln in that namespace, and what kiln renders from them is in it too. kustomize records the
/// move as `previousNames`/`previousKinds`/`previousNamespaces` with the name and kind
/// unchanged (`StorePreviousId` in kustomize's `api/resource/resource.go`): not a rename.
#[test]
fn transformer_with_a_namespace_renders_the_instances_in_it() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let base = tmp.path().join("base");
    copy_dir(&testdata().join("krm/kro"), &base);
    fs::write(base.join("render.yaml"), RENDER).unwrap();
    let resources = "resources: [rgd.yaml, apps/shop.yaml, other/cm.yaml]\n";
    let namespaces = |out: &str| -> Vec<String> {
        out.split("\n---\n")
            .map(|d| {
                let kind = d
                    .lines()
                    .find_map(|l| l.strip_prefix("kind: "))
                    .unwrap_or("?");
                let ns = d
                    .lines()
                    .find_map(|l| l.strip_prefix("  namespace: "))
                    .unwrap_or("-");
                format!("{kind}:{ns}")
            })
            .collect()
    };
    // In the same kustomization.
    fs::write(
        base.join("kustomization.yaml"),
        format!("{resources}namespace: team\ntransformers: [render.yaml]\n"),
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &base));
    assert!(
        !out.contains("kind: ResourceGraphDefinition") && !out.contains("kind: WebApp"),
        "{out}"
    );
    let ns = namespaces(&out);
    assert_eq!(ns.len(), 8, "{out}");
    assert!(ns.iter().all(|n| n.ends_with(":team")), "{ns:?}");
    // In a base below the kustomization that runs kiln.
    fs::write(
        base.join("kustomization.yaml"),
        format!("{resources}namespace: team\n"),
    )
    .unwrap();
    let overlay = tmp.path().join("overlay");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(overlay.join("render.yaml"), RENDER).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../base]\ntransformers: [render.yaml]\n",
    )
    .unwrap();
    let out = ok(&build(&kubectl, &xdg, &overlay));
    let ns = namespaces(&out);
    assert_eq!(ns.len(), 8, "{out}");
    assert!(ns.iter().all(|n| n.ends_with(":team")), "{ns:?}");
    // A prefix in the base is still a rename kiln cannot carry over.
    fs::write(
        base.join("kustomization.yaml"),
        format!("{resources}namespace: team\nnamePrefix: pre-\n"),
    )
    .unwrap();
    let o = build(&kubectl, &xdg, &overlay);
    assert!(!o.status.success(), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("prefixes"),
        "{}",
        show(&o)
    );
}

/// A transformer's diagnostics name the user's file, not kustomize's stdin: the kustomization's
/// `resources:` say which file an item came from (or kustomize's `config.kubernetes.io/origin`
/// annotation does, with `buildMetadata: [originAnnotations]`, for a base outside the
/// kustomization's directory).
#[test]
fn transformer_errors_name_the_file() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let base = tmp.path().join("base");
    copy_dir(&testdata().join("krm/kro"), &base);
    let shop = base.join("apps/shop.yaml");
    fs::write(
        &shop,
        read(&shop).replace(
            "image: 'ghcr.io/example/blog:2.0.0'",
            "image: 'ghcr.io/example/blog:2.0.0'\n  replicas: 50",
        ),
    )
    .unwrap();
    fs::write(base.join("render.yaml"), RENDER).unwrap();
    fs::write(
        base.join("kustomization.yaml"),
        "resources: [rgd.yaml, apps/shop.yaml, other/cm.yaml]\ntransformers: [render.yaml]\n",
    )
    .unwrap();
    let o = build(&kubectl, &xdg, &base);
    assert!(!o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("KLN5001"), "{err}");
    assert!(
        err.contains("apps/shop.yaml (document 1): spec.replicas"),
        "{err}"
    );
    assert!(!err.contains("<stdin>"), "{err}");
    // A base outside the kustomization's directory: kustomize's origin annotation names it.
    fs::write(
        base.join("kustomization.yaml"),
        "resources: [rgd.yaml, apps/shop.yaml, other/cm.yaml]\n",
    )
    .unwrap();
    let overlay = tmp.path().join("overlay");
    fs::create_dir_all(&overlay).unwrap();
    fs::write(overlay.join("render.yaml"), RENDER).unwrap();
    fs::write(
        overlay.join("kustomization.yaml"),
        "resources: [../base]\ntransformers: [render.yaml]\nbuildMetadata: [originAnnotations]\n",
    )
    .unwrap();
    let o = build(&kubectl, &xdg, &overlay);
    assert!(!o.status.success(), "{}", show(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("../base/apps/shop.yaml"), "{err}");
    assert!(!err.contains("<stdin>"), "{err}");
}

/// The repository layout of kustomize's variants (`testdata/layouts/krm-kustomize-overlays/`):
/// kiln as the generator of `base/`, overlays `overlays/prod` and `overlays/staging` listing
/// `../../base`, built from the repository root. kustomize runs a legacy exec plugin in the
/// directory of the kustomization that lists it (`cmd.Dir` set to the loader's root in
/// kustomize's `api/internal/plugins/execplugin/execplugin.go`), so `paths` resolve in the base
/// whichever overlay is built and wherever the build starts; the overlays' transformations apply
/// to what kiln rendered.
#[test]
fn overlays_over_a_generator_base_from_the_repository_root() {
    let kubectl = tool("kubectl");
    let tmp = tempfile::tempdir().unwrap();
    let xdg = plugin_home(tmp.path());
    let repo = testdata().join("layouts/krm-kustomize-overlays");
    let build_from_root = |overlay: &str| {
        ok(&run(
            Command::new(&kubectl)
                .args(["kustomize", "--enable-alpha-plugins", overlay])
                .current_dir(&repo)
                // What a shell in the repository root passes on.
                .env("PWD", &repo)
                .env("XDG_CONFIG_HOME", &xdg),
            "",
        ))
    };
    let prod = build_from_root("overlays/prod");
    let objs = objects(&prod);
    assert_eq!(
        objs,
        [
            "ConfigMap/prod-shop-eu-west-1",
            "ConfigMap/prod-shop-us-east-1",
            "Service/prod-shop",
            "Deployment/prod-shop"
        ],
        "{prod}"
    );
    assert_eq!(prod.matches("namespace: shop-prod\n").count(), 4, "{prod}");
    assert_eq!(prod.matches("env: prod\n").count(), 4, "{prod}");
    let dep = prod
        .split("\n---\n")
        .find(|d| d.contains("kind: Deployment"))
        .unwrap();
    assert!(dep.contains("replicas: 5"), "the patch was lost: {dep}");
    assert!(
        dep.contains("matchLabels:\n      app.kubernetes.io/name: shop\n"),
        "the prefix leaked into the selector: {dep}"
    );
    assert!(
        !prod.contains("kiln.dev/rendered-from") && !prod.contains("config.kubernetes.io"),
        "{prod}"
    );
    let staging = build_from_root("overlays/staging");
    assert_eq!(objects(&staging).len(), 4, "{staging}");
    assert!(
        staging.contains("name: shop\n") && staging.contains("replicas: 2"),
        "{staging}"
    );
    assert_eq!(
        staging.matches("namespace: shop-staging\n").count(),
        4,
        "{staging}"
    );
    // Built from inside the overlay, the same.
    let o = build(&kubectl, &xdg, &repo.join("overlays/prod"));
    assert_eq!(ok(&o), prod);
}
