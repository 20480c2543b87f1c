//! libFuzzer entry of the `cmp_kustomization` target: kiln-cmp's confinement of an application
//! directory with a kustomization (`kiln_cmp::generate::generate`, which renders the directory
//! in place, stages it with the rest of the checkout and checks every path the kustomizations
//! name before kustomize runs).
//!
//! The body lives in this file: it belongs to the kiln-cmp door, not to kiln-core's targets.
//!
//! Input: UTF-8 text (other bytes are skipped), the application's `kustomization.yaml` up to a
//! NUL and a base's (`apps/base/`) after it, in a checkout beside a file it must never read,
//! with a symlink from the application to the base. The program that builds is one that does
//! not exist, so "kustomize ran" shows as `cannot run` in the answer. The contract checked,
//! beyond "no panic":
//! - the answer does not change when asked twice, and never holds a partial output;
//! - the outside file's content is never quoted;
//! - kustomize never runs over a `resources` entry of the application's kustomization that is
//!   absolute or climbs out of the checkout (the path check refuses it, KLN1002).
#![no_main]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::Value;

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

const OUTSIDE_CONTENT: &str = "kiln-fuzz-cmp-outside-content";
const PROGRAM: &str = "/nonexistent/kiln-fuzz-kustomize";

/// The scratch checkout, made once per process.
fn checkout() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kiln-fuzz-cmp-{}", std::process::id()));
        let repo = dir.join("repo");
        for d in ["apps/app", "apps/base"] {
            std::fs::create_dir_all(repo.join(d)).expect("temp dir is writable");
        }
        let write = |p: &Path, t: &str| std::fs::write(p, t).expect("temp dir is writable");
        write(&dir.join("outside"), OUTSIDE_CONTENT);
        write(
            &repo.join("apps/app/cm.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app}\ndata: {a: b}\n",
        );
        write(
            &repo.join("apps/base/d.yaml"),
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: base}\n",
        );
        #[cfg(unix)]
        let _ = std::os::unix::fs::symlink("../base", repo.join("apps/app/inner"));
        dir
    })
}

fn env() -> kiln_cmp::env::Env {
    let vars = [
        ("ARGOCD_APP_NAME", "app"),
        ("ARGOCD_APP_NAMESPACE", "default"),
        ("ARGOCD_APP_SOURCE_PATH", "apps/app"),
        ("ARGOCD_APP_PARAMETERS", "null"),
        ("KUBE_VERSION", "1.37.1"),
        ("KILN_KUSTOMIZE", PROGRAM),
    ];
    kiln_cmp::env::Env::read(vars.iter().map(|(k, v)| (k.to_string(), v.to_string())))
        .expect("the fuzz target's environment is valid")
}

fn run(data: &[u8]) {
    let Ok(input) = std::str::from_utf8(data) else {
        return;
    };
    let (top, base) = input.split_once('\0').unwrap_or((input, ""));
    let dir = checkout();
    let repo = dir.join("repo");
    if std::fs::write(repo.join("apps/app/kustomization.yaml"), top).is_err()
        || std::fs::write(repo.join("apps/base/kustomization.yaml"), base).is_err()
    {
        return;
    }
    let env = env();
    let cwd = repo.join("apps/app");
    let first = kiln_cmp::generate::generate(&cwd, &env);
    let second = kiln_cmp::generate::generate(&cwd, &env);
    assert_eq!(
        (&first.stdout, &first.stderr, first.code),
        (&second.stdout, &second.stderr, second.code),
        "the answer is not deterministic"
    );
    assert_ne!(
        first.code, 0,
        "a build without a program succeeded: {}",
        first.stdout
    );
    assert!(
        first.stdout.is_empty(),
        "a partial output: {}",
        first.stdout
    );
    assert!(
        !first.stderr.contains(OUTSIDE_CONTENT),
        "the outside file was quoted: {}",
        first.stderr
    );
    let ran = first.stderr.contains(PROGRAM);
    // Oracle: an absolute or escaping entry of a plain `resources` list stops the run before
    // kustomize.
    let Ok(docs) = kiln_core::document::parse_file(
        "kustomization.yaml",
        top.to_string(),
        &kiln_core::document::YamlLimits::default(),
    ) else {
        return;
    };
    for doc in &docs {
        let Some(list) = doc.value.get("resources").and_then(Value::as_array) else {
            continue;
        };
        for e in list.iter().filter_map(Value::as_str) {
            let out = e.starts_with('/') || escapes(e);
            // Nothing between the path check and the program can fail (the program is named),
            // so "it did not run" is "something refused the kustomization first".
            assert!(!(out && ran), "kustomize ran over {e:?}: {}", first.stderr);
        }
    }
}

/// Whether a path relative to `apps/app` climbs out of the checkout (two levels up is its top).
fn escapes(p: &str) -> bool {
    let mut depth: i32 = 2;
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                depth -= 1;
                if depth < 0 {
                    return true;
                }
            }
            _ => depth += 1,
        }
    }
    false
}
