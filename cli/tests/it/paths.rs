//! The trust boundary on the command line: every path-taking flag reads what the person running
//! kiln names, as given — a relative path, a `..` path, an absolute path and, where the flag
//! reads a file, a fifo (what `<(helm template …)` hands over). Paths from inside inputs (a
//! package's files) stay confined: `kurel.rs` covers those (KLN1002).

use crate::common;
use crate::common::KILN;
use kiln_test_support::Cmd;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;

use common::{kiln, text, write};

const RGD: &str = include_str!("../../../examples/webapp/rgd.yaml");
const INSTANCES: &str = include_str!("../../../examples/webapp/instances.yaml");

const PACKAGE_PARAMS: &str = "kurel: {name: app, version: 1.0.0, appVersion: \"1\"}\nmode: x\n";
const PACKAGE_CM: &str =
    "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: \"cm-${mode}\"}\ndata: {mode: \"${mode}\"}\n";

const CRD: &str = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.acme.io}
spec:
  group: acme.io
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
";

/// An RGD whose template is a Widget: a literal of the wrong type is caught only when the CRD
/// is known, which proves `--crds` was read.
const WIDGET_RGD: &str = "apiVersion: kro.run/v1alpha1
kind: ResourceGraphDefinition
metadata: {name: gadget}
spec:
  schema:
    apiVersion: v1alpha1
    kind: Gadget
    spec: {name: string}
  resources:
  - id: widget
    template:
      apiVersion: acme.io/v1
      kind: Widget
      metadata: {name: '${schema.spec.name}'}
      spec: {size: big}
";

/// The layout every case uses: `work/` is the working directory, `outside/` its sibling.
struct Tree {
    _tmp: tempfile::TempDir,
    work: PathBuf,
    outside: PathBuf,
}

fn tree() -> Tree {
    let tmp = tempfile::tempdir().unwrap();
    let work = tmp.path().join("work");
    let outside = tmp.path().join("outside");
    fs::create_dir_all(&work).unwrap();
    fs::create_dir_all(&outside).unwrap();
    write(&work, "app.kurel/parameters.yaml", PACKAGE_PARAMS);
    write(&work, "app.kurel/resources/cm.yaml", PACKAGE_CM);
    Tree {
        _tmp: tmp,
        work,
        outside,
    }
}

/// A fifo at `path` that a thread fills with `content` once kiln opens it.
fn fifo(path: &Path, content: &str) -> JoinHandle<()> {
    let status = Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("mkfifo runs");
    assert!(status.success(), "mkfifo failed");
    let path = path.to_path_buf();
    let content = content.to_string();
    std::thread::spawn(move || {
        let mut f = fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all(content.as_bytes()).unwrap();
    })
}

/// The three spellings of a file `name` that exists both in `work/` and in `outside/`:
/// relative, `..` and absolute.
fn spellings(t: &Tree, name: &str) -> Vec<String> {
    vec![
        name.to_string(),
        format!("../outside/{name}"),
        t.outside.join(name).display().to_string(),
    ]
}

fn ok(out: &std::process::Output, what: &str) -> String {
    assert_eq!(out.status.code(), Some(0), "{what}: {}", text(&out.stderr));
    text(&out.stdout)
}

#[test]
fn inputs_are_read_as_given() {
    let t = tree();
    for dir in [&t.work, &t.outside] {
        write(dir, "app.yaml", &format!("{RGD}---\n{INSTANCES}"));
    }
    for p in spellings(&t, "app.yaml") {
        let out = ok(&kiln(&t.work, &["render", &p]), &p);
        assert!(out.contains("name: shop"), "{p}");
    }
    // A directory, by every spelling.
    for p in ["../outside", t.outside.to_str().unwrap()] {
        assert!(ok(&kiln(&t.work, &["render", p]), p).contains("name: shop"));
    }
    // A fifo (process substitution), for render and for schema.
    let pipe = t.outside.join("pipe.yaml");
    let writer = fifo(&pipe, &format!("{RGD}---\n{INSTANCES}"));
    let out = ok(&kiln(&t.work, &["render", pipe.to_str().unwrap()]), "fifo");
    writer.join().unwrap();
    assert!(out.contains("name: shop"));
    fs::remove_file(&pipe).unwrap();
    let writer = fifo(&pipe, RGD);
    let out = ok(
        &kiln(&t.work, &["schema", pipe.to_str().unwrap()]),
        "schema fifo",
    );
    writer.join().unwrap();
    assert!(out.contains("kind: CustomResourceDefinition"));
    // stdin, `-`.
    let out = Cmd::new(KILN)
        .dir(&t.work)
        .args(["render", "-"])
        .stdin(format!("{RGD}---\n{INSTANCES}"))
        .output();
    assert!(ok(&out, "stdin").contains("name: shop"));
}

#[test]
fn values_are_read_as_given() {
    let t = tree();
    for dir in [&t.work, &t.outside] {
        write(dir, "prod.yaml", "mode: prod\n");
    }
    for v in spellings(&t, "prod.yaml") {
        let out = ok(&kiln(&t.work, &["render", "app.kurel", "--values", &v]), &v);
        assert!(out.contains("mode: prod"), "{v}: {out}");
    }
    let pipe = t.outside.join("values-pipe.yaml");
    let writer = fifo(&pipe, "mode: piped\n");
    let out = ok(
        &kiln(
            &t.work,
            &["render", "app.kurel", "--values", pipe.to_str().unwrap()],
        ),
        "values fifo",
    );
    writer.join().unwrap();
    assert!(out.contains("mode: piped"));
}

#[test]
fn instances_directories_are_read_as_given() {
    let t = tree();
    for dir in [&t.work, &t.outside] {
        write(dir, "fleet/a.yaml", "mode: a\n");
        write(dir, "fleet/b.yaml", "mode: b\n");
    }
    for d in spellings(&t, "fleet") {
        let out = ok(
            &kiln(&t.work, &["render", "app.kurel", "--instances", &d]),
            &d,
        );
        assert!(
            out.contains("mode: a") && out.contains("mode: b"),
            "{d}: {out}"
        );
    }
}

#[test]
fn crds_are_read_as_given() {
    let t = tree();
    write(&t.work, "rgd.yaml", WIDGET_RGD);
    for dir in [&t.work, &t.outside] {
        write(dir, "crds/widget.yaml", CRD);
    }
    // Without the CRD, the Widget template is not checked: it validates.
    let out = kiln(&t.work, &["validate", "rgd.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // With it, by each spelling, the wrong literal is found.
    let mut names = spellings(&t, "crds");
    names.extend(spellings(&t, "crds/widget.yaml"));
    for c in names {
        let out = kiln(&t.work, &["validate", "rgd.yaml", "--crds", &c]);
        assert_eq!(out.status.code(), Some(1), "{c}");
        assert!(
            text(&out.stderr).contains("KLN2010"),
            "{c}: {}",
            text(&out.stderr)
        );
    }
    let pipe = t.outside.join("crd-pipe.yaml");
    let writer = fifo(&pipe, CRD);
    let out = kiln(
        &t.work,
        &["validate", "rgd.yaml", "--crds", pipe.to_str().unwrap()],
    );
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("KLN2010"));
}

#[test]
fn output_directories_are_written_as_given() {
    let t = tree();
    let targets = [
        "out".to_string(),
        "../outside/out".to_string(),
        t.outside.join("abs-out").display().to_string(),
    ];
    for o in &targets {
        let out = kiln(&t.work, &["render", "app.kurel", "-o", o]);
        assert_eq!(out.status.code(), Some(0), "{o}: {}", text(&out.stderr));
        let written = t.work.join(o).join("manifests.yaml");
        let body = fs::read_to_string(&written).unwrap_or_else(|e| panic!("{o}: {e}"));
        assert!(body.contains("kind: ConfigMap"), "{o}");
    }
}
