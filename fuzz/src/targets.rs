//! The fuzz targets' bodies: untrusted bytes → a public entry point of `kiln_core`.
//!
//! Every function ignores the `Result` it gets: an error diagnostic is the correct answer to most
//! random inputs. What the fuzzer looks for is a panic (libfuzzer-sys turns every panic, even one
//! caught later by `catch_unwind` or a thread join, into an abort and a `crash-*` artifact), a
//! stack overflow, an allocation over the RSS limit (`oom-*`) or an input that runs longer than
//! `-timeout` (`timeout-*`). The few assertions check documented contracts of kiln itself, so a
//! failing one is a kiln bug too.
//!
//! The harness must never be the thing that fails, so the helpers here only do what the `kiln`
//! binary does around the library: decode bytes the way `source.rs` does, and run the work on a
//! thread with the stack size the CLI gives its workers.
//!
//! This file is also compiled into `core/tests/fuzz_regressions.rs` (with `#[path]`), which replays
//! saved inputs through these functions on stable Rust: it may use only `std` and what kiln-core
//! itself depends on (`serde_json`, `rayon`).

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use kiln_core::diag::codes;
use kiln_core::document::{
    locate, parse_source, parse_source_with_warnings, Document, SourceFile, YamlLimits,
};
use kiln_core::fieldpath::FieldPath;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Helpers

/// Stack of the worker thread, as `kiln` configures its rayon pool (`cli/src/main.rs`): nested CEL
/// is evaluated recursively, and a fuzz input must not overflow a stack the real binary would not.
const WORKER_STACK: usize = 16 << 20;

/// A one-thread rayon pool with the CLI's worker stack. One thread because the fuzz script runs a
/// single fuzzing process on a two-core machine shared with other work; `pipeline::render` and the
/// front-ends still go through rayon exactly as in production.
fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .stack_size(WORKER_STACK)
            .thread_name(|_| "kiln-fuzz-worker".into())
            .build()
            .expect("a one-thread pool can be built")
    })
}

/// Run `f` on the worker thread (big stack, rayon context), as the CLI runs a render.
fn on_worker<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    pool().install(f)
}

/// The bytes as text, or `None` when they are not UTF-8. kiln never sees non-UTF-8 text past
/// `source.rs` (which refuses it with KLN1003), so targets below the source layer skip such
/// inputs; [`yaml_load`] fuzzes the refusal itself.
fn text(data: &[u8]) -> Option<&str> {
    std::str::from_utf8(data).ok()
}

/// A shared source file, as `source::load_inputs` builds one.
fn source(name: &str, text: &str) -> Arc<SourceFile> {
    Arc::new(SourceFile {
        name: name.to_string(),
        text: text.to_string(),
    })
}

/// Parse text as a YAML stream with the default limits; `None` when kiln rejects it.
fn documents(name: &str, text: &str) -> Option<Vec<Document>> {
    parse_source(&source(name, text), &YamlLimits::default()).ok()
}

/// A document built from a value rather than read, with YAML text kiln emitted for it, so
/// diagnostics that look up lines (`document::locate`) have a real text to walk.
fn generated_document(name: &str, value: Value) -> Document {
    let text = kiln_core::output::yaml_stream(std::slice::from_ref(&value)).unwrap_or_default();
    Document {
        source: source(name, &text),
        index: 0,
        item: None,
        value,
    }
}

// ---------------------------------------------------------------------------------------------
// yaml_load

/// Most documents, and path steps per document, handed to `locate` (it re-parses the text each
/// time, so an unbounded walk would measure the harness rather than kiln).
const MAX_LOCATED_DOCS: usize = 8;
const MAX_PATH_STEPS: usize = 16;

/// The input layer: bytes → `source.rs` decoding → `document::parse_source_with_warnings` (YAML
/// and JSON streams, default `YamlLimits`) → `document::locate`, which every located diagnostic
/// uses.
pub fn yaml_load(data: &[u8]) {
    let limits = YamlLimits::default();
    match std::str::from_utf8(data) {
        Ok(text) => {
            // The extension picks the parser: anything but `.json` is YAML.
            for name in ["in.yaml", "in.json"] {
                let file = source(name, text);
                if let Ok((docs, _warnings)) = parse_source_with_warnings(&file, &limits) {
                    for d in docs.iter().take(MAX_LOCATED_DOCS) {
                        locate_along(text, d.index, &d.value);
                    }
                }
            }
        }
        Err(_) => {
            // Non-UTF-8 bytes never reach the parser: `source.rs` refuses the file with KLN1003
            // and the line of the first bad byte. That decoding is private, so go through the
            // public loader with a real file, and check the refusal is the documented one.
            use kiln_core::source::{load_inputs, Input};
            let path = scratch_file();
            if std::fs::write(&path, data).is_ok() {
                match load_inputs(&[Input::Path(path)], &limits) {
                    Ok(_) => panic!("non-UTF-8 input was accepted"),
                    Err(ds) => {
                        let d = &ds.0[0];
                        assert_eq!(d.code, codes::NOT_UTF8, "{d:?}");
                        assert!(d.line.is_some_and(|l| l >= 1), "{d:?}");
                    }
                }
            }
            // What a lossy reader would have parsed must not crash the parser either.
            let lossy = String::from_utf8_lossy(data);
            let _ = parse_source_with_warnings(&source("lossy.yaml", &lossy), &limits);
        }
    }
}

/// Locate every prefix of the path that follows the first child at each level (the deepest path a
/// diagnostic could name), plus one key that does not exist.
fn locate_along(text: &str, doc: usize, value: &Value) {
    let mut path = FieldPath::root();
    let mut v = value;
    let _ = locate(text, doc, &path);
    for _ in 0..MAX_PATH_STEPS {
        let (next_path, next) = match v {
            Value::Object(m) => match m.iter().next() {
                Some((k, child)) => (path.key(k), child),
                None => break,
            },
            Value::Array(a) => match a.first() {
                Some(child) => (path.index(0), child),
                None => break,
            },
            _ => break,
        };
        path = next_path;
        v = next;
        let _ = locate(text, doc, &path);
    }
    let _ = locate(text, doc, &path.key("kiln-fuzz-missing"));
}

/// One file per process, in the temp dir, rewritten for each non-UTF-8 input.
fn scratch_file() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kiln-fuzz-yaml-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir is writable");
        dir.join("in.yaml")
    })
    .clone()
}

// ---------------------------------------------------------------------------------------------
// scan

/// The `${…}` scanner (`expr::scan::scan` and `classify`), with its documented contract checked:
/// matches are ordered, non-overlapping, delimited by `${` and `}` and hold the text between them
/// verbatim; `classify`'s parts rebuild the input exactly.
pub fn scan(data: &[u8]) {
    use kiln_core::expr::scan::{classify, scan, Part, Template};
    // The scanner takes `&str`: text that reaches it was decoded by `source.rs`.
    let Some(s) = text(data) else {
        return;
    };
    let scanned = scan(s);
    if let Ok(matches) = &scanned {
        let mut pos = 0;
        for m in matches {
            assert!(
                m.start >= pos && m.start < m.end && m.end <= s.len(),
                "{m:?}"
            );
            assert!(s[m.start..].starts_with("${"), "{m:?}");
            assert_eq!(&s[m.end - 1..m.end], "}", "{m:?}");
            assert_eq!(m.expr, s[m.start + 2..m.end - 1], "{m:?}");
            pos = m.end;
        }
    }
    match classify(s) {
        Err(e) => {
            assert!(
                scanned.is_err(),
                "classify failed where scan did not: {e:?}"
            );
            assert!(
                e.offset < s.len() && s[e.offset..].starts_with("${"),
                "{e:?}"
            );
        }
        Ok(t) => {
            let matches = scanned.expect("classify succeeded where scan failed");
            let rebuilt = match t {
                Template::Literal => {
                    assert!(matches.is_empty());
                    s.to_string()
                }
                Template::Standalone(expr) => format!("${{{expr}}}"),
                Template::Interpolated(parts) => parts
                    .iter()
                    .map(|p| match p {
                        Part::Text(t) => {
                            assert!(!t.is_empty(), "empty text part");
                            t.clone()
                        }
                        Part::Expr(e) => format!("${{{e}}}"),
                    })
                    .collect(),
            };
            assert_eq!(rebuilt, s);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// cel_eval

/// Longest CEL input evaluated (the fuzz script also passes it as `-max_len`).
pub const CEL_MAX_INPUT: usize = 256;

/// CEL compile (`expr::cel::compile`, default `ExprLimits`) and evaluation in kiln's environment
/// under the default evaluation budget (`expr::budget::execute`, as templates are evaluated),
/// then conversion of the result to JSON (`value::from_cel`) as a template field would be.
///
/// Inputs are capped at [`CEL_MAX_INPUT`] bytes: short programs can already loop for a very long
/// time or grow huge strings, and those are exactly what the evaluation budget must stop. A
/// `timeout-*` or `oom-*` artifact from this target is a finding about that budget, not a harness
/// problem, so no expression is filtered out here.
pub fn cel_eval(data: &[u8]) {
    use kiln_core::expr::budget::{execute, EvalBudget};
    use kiln_core::expr::cel::{compile, new_context, ExprLimits};
    use kiln_core::expr::value::from_cel;
    if data.len() > CEL_MAX_INPUT {
        return;
    }
    let Some(src) = text(data) else {
        return;
    };
    let Ok(compiled) = compile(src, &ExprLimits::default()) else {
        return;
    };
    // Evaluation runs where the CLI runs it: on a rayon worker with the CLI's stack.
    on_worker(|| {
        if let Ok(v) = execute(&compiled.program, &new_context(), &EvalBudget::default()) {
            let _ = from_cel(&v);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// simpleschema

/// Most documents of one input converted.
const MAX_DOCS: usize = 8;

/// SimpleSchema → OpenAPI (`schema::simple_to_openapi`) on values the document parser produced,
/// as kro's front-end feeds it. A ResourceGraphDefinition's `spec.schema.spec` and `types` are
/// used when the input is one (so `testdata/` RGDs seed the corpus as they are); any other value
/// is fed as the `spec` itself, and, when it has a `types` key, its `spec` and `types` too.
pub fn simpleschema(data: &[u8]) {
    use kiln_core::schema::simple_to_openapi;
    let Some(text) = text(data) else {
        return;
    };
    let Some(docs) = documents("schema.yaml", text) else {
        return;
    };
    for d in docs.iter().take(MAX_DOCS) {
        let v = &d.value;
        match v.pointer("/spec/schema") {
            Some(schema) => {
                let spec = schema.get("spec").unwrap_or(&Value::Null);
                let _ = simple_to_openapi(spec, schema.get("types"));
            }
            None => {
                let _ = simple_to_openapi(v, None);
                if let Some(types) = v.get("types") {
                    let spec = v.get("spec").unwrap_or(&Value::Null);
                    let _ = simple_to_openapi(spec, Some(types));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// shorthand

/// The component shorthand schema parser (`component/shorthand.rs`, crate-private) through its
/// public entry `component::json_schemas`.
///
/// Inputs that hold component documents (the `testdata/component` seeds) go in as they are.
/// Anything else is taken as a schema section and wrapped in generated definitions: a
/// ComponentTypeDefinition with it as the shorthand `spec.schema`, and an Addon with it as the
/// upstream `spec.parameters.openAPIV3Schema` and `spec.environmentConfigs.openAPIV3Schema`, so
/// both the shorthand and the openAPIV3Schema readers see every value.
pub fn shorthand(data: &[u8]) {
    use kiln_core::component::{is_component_document, json_schemas};
    let Some(text) = text(data) else {
        return;
    };
    let Some(docs) = documents("defs.yaml", text) else {
        return;
    };
    if docs.iter().any(is_component_document) {
        let _ = json_schemas(&docs);
        return;
    }
    let Some(section) = docs.into_iter().next().map(|d| d.value) else {
        return;
    };
    let generated = [
        generated_document("type.yaml", shorthand_type(section.clone())),
        generated_document("addon.yaml", shorthand_addon(section)),
    ];
    let _ = json_schemas(&generated);
}

fn shorthand_type(schema: Value) -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "ComponentTypeDefinition",
        "metadata": {"name": "fuzz"},
        "spec": {
            "workloadType": "deployment",
            "schema": schema,
            "resources": [{
                "id": "deployment",
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": "${metadata.name}"},
                },
            }],
        },
    })
}

fn shorthand_addon(schema: Value) -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "Addon",
        "metadata": {"name": "fuzz"},
        "spec": {
            "parameters": {"openAPIV3Schema": schema.clone()},
            "environmentConfigs": {"openAPIV3Schema": schema},
        },
    })
}

// ---------------------------------------------------------------------------------------------
// json_pointer_filters

/// JSON Pointer paths with filters (`component/pointer.rs`, crate-private), reached through the
/// public `component::render` with generated documents: an Addon whose one patch operation has
/// the fuzzed op, path and value, applied to a Deployment with lists to filter (containers, env,
/// ports, volumes).
///
/// Input format (text): line 1 is the operation (`add`, `replace`, `remove`, `mergeShallow`, …),
/// line 2 the path, and the rest, when not empty, the YAML of the operation's `value`.
pub fn json_pointer_filters(data: &[u8]) {
    use kiln_core::component::{render, Options};
    let Some(text) = text(data) else {
        return;
    };
    let mut lines = text.splitn(3, '\n');
    let op = lines.next().unwrap_or_default();
    let path = lines.next().unwrap_or_default();
    let value = match lines.next() {
        Some(rest) if !rest.trim().is_empty() => match documents("value.yaml", rest) {
            // An empty stream (comments only) parses to no document: an op without a value.
            Some(mut docs) if !docs.is_empty() => Some(docs.swap_remove(0).value),
            Some(_) => None,
            None => return,
        },
        _ => None,
    };
    let mut operation = json!({"op": op, "path": path});
    if let Some(v) = value {
        operation["value"] = v;
    }
    let docs = [
        generated_document("type.yaml", pointer_type()),
        generated_document("addon.yaml", pointer_addon(operation)),
        generated_document("component.yaml", pointer_component()),
        generated_document("workload.yaml", pointer_workload()),
    ];
    let refs: Vec<_> = docs.iter().collect();
    let opts = Options {
        env: Some("dev".into()),
        namespace: Some("default".into()),
        ..Options::default()
    };
    on_worker(|| {
        let _ = render(&refs, &opts);
    });
}

fn pointer_type() -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "ComponentTypeDefinition",
        "metadata": {"name": "web"},
        "spec": {
            "workloadType": "deployment",
            "resources": [{
                "id": "deployment",
                "template": {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {
                        "name": "${metadata.name}",
                        "labels": {"app": "web", "tier": "front"},
                        "annotations": {"a/b": "1", "c~d": "2"},
                    },
                    "spec": {
                        "replicas": 2,
                        "selector": {"matchLabels": {"app": "web"}},
                        "template": {
                            "metadata": {"labels": {"app": "web"}},
                            "spec": {
                                "containers": [
                                    {
                                        "name": "app",
                                        "image": "${workload.containers.app.image}",
                                        "env": [
                                            {"name": "A", "value": "1"},
                                            {"name": "B", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}},
                                        ],
                                        "ports": [{"containerPort": 8080, "name": "http"}],
                                        "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                                    },
                                    {"name": "sidecar", "image": "busybox", "args": ["a", "b"]},
                                ],
                                "volumes": [{"name": "data", "emptyDir": {}}],
                            },
                        },
                    },
                },
            }],
        },
    })
}

fn pointer_addon(operation: Value) -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "Addon",
        "metadata": {"name": "fuzz"},
        "spec": {
            "patches": [{
                "target": {"group": "apps", "version": "v1", "kind": "Deployment"},
                "operations": [operation],
            }],
        },
    })
}

fn pointer_component() -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "Component",
        "metadata": {"name": "shop", "namespace": "default"},
        "spec": {
            "owner": {"projectName": "p"},
            "componentType": "deployment/web",
            "addons": [{"name": "fuzz", "instanceName": "f"}],
        },
    })
}

fn pointer_workload() -> Value {
    json!({
        "apiVersion": "openchoreo.dev/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "shop-workload", "namespace": "default"},
        "spec": {
            "owner": {"componentName": "shop"},
            "containers": {"app": {"image": "registry.example/shop:1"}},
        },
    })
}

// ---------------------------------------------------------------------------------------------
// kpatch

/// kurel patch files: the `.kpatch` text format (`kurel::kpatch::parse_kpatch`) and, when the
/// bytes are also a YAML stream, the YAML patch form (`kurel::kpatch::parse_yaml_patch`) on each
/// document.
pub fn kpatch(data: &[u8]) {
    use kiln_core::kurel::kpatch::{parse_kpatch, parse_yaml_patch};
    let Some(text) = text(data) else {
        return;
    };
    let _ = parse_kpatch(&source("10-fuzz.kpatch", text));
    if let Some(docs) = documents("10-fuzz.yaml", text) {
        for d in docs.iter().take(MAX_DOCS) {
            let _ = parse_yaml_patch(d);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// render_rgd

/// The whole pipeline, as `kiln render --namespace default FILE` runs it: bytes → documents →
/// `pipeline::render` (kro graphs, instances, component types, pass-through) on a rayon worker
/// with the CLI's stack → the YAML stream written to stdout.
pub fn render_rgd(data: &[u8]) {
    use kiln_core::output::yaml_stream;
    use kiln_core::pipeline::{render, Options};
    let Some(text) = text(data) else {
        return;
    };
    let Some(docs) = documents("in.yaml", text) else {
        return;
    };
    let opts = Options {
        namespace: Some("default".into()),
        ..Options::default()
    };
    on_worker(|| {
        if let Ok(out) = render(&docs, &opts) {
            let _ = yaml_stream(&out.objects);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// cel_deep

/// Longest expression `cel_deep` builds: past the default `expression-length` (100,000 bytes),
/// so the length check is reached too.
const CEL_DEEP_MAX_LEN: usize = 120_000;

/// The expression `cel_deep` builds from `data`: each byte pair is one step applied to the
/// expression so far, from `1`. Steps make what is deep without brackets (a chain of binary
/// operators, of member calls, of unary operators, of selections) and what nests (parentheses,
/// calls, lists, maps, ternaries), with chain lengths up to thousands of links; the result
/// uses only single quotes so it sits in a double-quoted YAML string as it is.
pub fn cel_deep_expression(data: &[u8]) -> String {
    let mut e = String::from("1");
    for step in data.chunks(2) {
        let (op, n) = (step[0], usize::from(*step.get(1).unwrap_or(&1)));
        // Chains from 1 to ~8,000 links: a high second byte multiplies.
        let links = if n > 200 { (n - 200) * 150 } else { n + 1 };
        let chain =
            |link: &str, links: usize| link.repeat(links.min(CEL_DEEP_MAX_LEN / link.len().max(1)));
        e = match op % 16 {
            0 => format!("{e}{}", chain("+1", links)),
            1 => format!("({e})"),
            2 => format!("!{e}"),
            3 => format!("{}{e}", chain("- ", links)),
            4 => format!("string({e}){}", chain(".lowerAscii()", links)),
            5 => format!("true ? {e} : {e}"),
            6 => format!("[{e}][0]"),
            7 => format!("{{'a': {e}}}.a"),
            8 => format!("{e}{}", chain(" && true", links)),
            9 => format!("size([{e}])"),
            10 => format!("'s'{}", chain("+'t'", links)),
            11 => format!("[{e}].map(x, x){}", chain("[0]", 1)),
            12 => format!("{}{e}{}", "(".repeat(n % 100), ")".repeat(n % 100)),
            13 => format!("schema.spec{}", chain(".a", links)),
            14 => format!("cel.bind(v, {e}, v)"),
            _ => format!("{e} == {e}"),
        };
        if e.len() > CEL_DEEP_MAX_LEN {
            break;
        }
    }
    e
}

/// Deep and long CEL expressions (issue 24: a 5,000-term `+` chain overflowed the stack). The
/// expression is rendered in an RGD template, so it goes through every walk kiln makes over an
/// expression tree (compile, references, reads, the checker, evaluation, drop), on a one-thread
/// pool with a 2 MiB stack: the doors' rayon workers, which do not enlarge it, not the CLI's.
pub fn cel_deep(data: &[u8]) {
    use kiln_core::pipeline::{render, Options};
    let expr = cel_deep_expression(data);
    let text = format!(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata: {{name: deep}}\n\
         spec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Deep\n    spec:\n      a: string\n\
         \x20 resources:\n  - id: cm\n    template:\n      apiVersion: v1\n      kind: ConfigMap\n\
         \x20     metadata: {{name: deep}}\n      data:\n        k: \"${{{expr}}}\"\n---\n\
         apiVersion: kro.run/v1alpha1\nkind: Deep\nmetadata: {{name: d}}\nspec: {{a: x}}\n"
    );
    let Some(docs) = documents("deep.yaml", &text) else {
        return;
    };
    static SMALL: std::sync::OnceLock<rayon::ThreadPool> = std::sync::OnceLock::new();
    let pool = SMALL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .stack_size(2 << 20)
            .build()
            .expect("a one-thread pool")
    });
    pool.install(|| {
        let _ = render(&docs, &Options::default());
    });
}

// ---------------------------------------------------------------------------------------------
// kustomization_paths

/// What the file outside the fuzzed root holds: no diagnostic may ever quote it.
const OUTSIDE_CONTENT: &str = "kiln-fuzz-outside-content";

/// A scratch source root per process: `outside` (a file beside the root), and in `root/` a base
/// with a kustomization, a symlink to the outside file and one to the base (unix), and the two
/// kustomization files the input fills.
fn kustomize_scratch() -> &'static PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kiln-fuzz-kpaths-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(root.join("base")).expect("temp dir is writable");
        std::fs::create_dir_all(root.join("sub")).expect("temp dir is writable");
        std::fs::write(dir.join("outside"), OUTSIDE_CONTENT).expect("temp dir is writable");
        std::fs::write(
            root.join("base/kustomization.yaml"),
            "resources: [d.yaml]\n",
        )
        .expect("temp dir is writable");
        std::fs::write(root.join("base/d.yaml"), "a: 1\n").expect("temp dir is writable");
        #[cfg(unix)]
        {
            let _ = std::os::unix::fs::symlink(dir.join("outside"), root.join("link"));
            let _ = std::os::unix::fs::symlink(root.join("base"), root.join("inner"));
        }
        dir
    })
}

/// The path check kiln runs before kustomize (`kustomize_paths::check`), over a kustomization
/// file (the input up to a NUL) and a second one in `sub/` (the rest), in a root beside a file
/// it must never read. Contract, beyond "no panic": the answer does not change when asked twice;
/// every diagnostic is an error naming a file, with one of the documented codes, and never
/// quotes the outside file; an absolute `resources` entry is always refused.
pub fn kustomization_paths(data: &[u8]) {
    use kiln_core::kustomize_paths::{check, Options};
    use kiln_core::source::Root;
    let Some(input) = text(data) else { return };
    let (top, sub) = input.split_once('\0').unwrap_or((input, ""));
    let dir = kustomize_scratch();
    let root_dir = dir.join("root");
    if std::fs::write(root_dir.join("kustomization.yaml"), top).is_err()
        || std::fs::write(root_dir.join("sub/kustomization.yaml"), sub).is_err()
    {
        return;
    }
    let Ok(root) = Root::new(&root_dir) else {
        return;
    };
    let opts = Options::default();
    let first = on_worker(|| check(&root, std::path::Path::new(""), &opts));
    let second = on_worker(|| check(&root, std::path::Path::new(""), &opts));
    assert_eq!(first.0, second.0, "the check is not deterministic");
    let allowed = [
        codes::IO_READ,
        codes::PATH_ESCAPE,
        codes::NOT_UTF8,
        codes::YAML_BUDGET,
        codes::NOT_A_FILE,
        codes::KUSTOMIZE_REMOTE,
        codes::KUSTOMIZE_REFERENCES,
    ];
    for d in &first.0 {
        assert!(d.is_error(), "a warning from the path check: {d}");
        assert!(d.file.is_some(), "a diagnostic without its file: {d}");
        assert!(allowed.contains(&d.code), "an undocumented code: {d}");
        assert!(
            !d.to_string().contains(OUTSIDE_CONTENT),
            "the outside file was quoted: {d}"
        );
    }
    // Oracle: an absolute entry of a plain `resources` list is refused at its index.
    let Some(docs) = documents("kustomization.yaml", top) else {
        return;
    };
    for doc in &docs {
        let Some(list) = doc.value.get("resources").and_then(Value::as_array) else {
            continue;
        };
        for (i, e) in list.iter().enumerate() {
            if e.as_str().is_some_and(|s| s.starts_with('/')) {
                let at = format!("resources[{i}]");
                assert!(
                    first
                        .0
                        .iter()
                        .any(|d| d.path.as_deref() == Some(at.as_str())),
                    "an absolute resource was let through: {at} {e}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// revision_read

/// Bounds of one `revision_read` input: small, so that an input whose trees expand without end
/// meets them in milliseconds.
const REVISION_LIMITS: kiln_core::revision::Limits = kiln_core::revision::Limits {
    max_entries: 20_000,
    max_bytes: 1 << 20,
    max_file_bytes: 4096,
};

/// An object store and the paths named, from the input's lines (non-UTF-8 input is skipped):
///
/// - `@ PATH PATH …`: the paths named (`kiln diff PATH…`);
/// - `b TEXT`: a blob (a file's bytes or a link's target), the rest of the line;
/// - `t NAME:K:I NAME:K:I …`: a tree, each entry a name (anything but a space; the last two
///   `:`-separated fields are the kind and the object), `K` one of `t` (tree), `f` (file), `l`
///   (symlink), `s` (submodule), `I` the object's index among the `b` and `t` lines.
///
/// The last tree is the revision's top. Indexes that name nothing, or an object of the other
/// kind, are the store's errors (a damaged repository).
fn revision_input(text: &str) -> Option<(kiln_core::revision::MemoryObjects, usize, Vec<PathBuf>)> {
    use kiln_core::revision::{Entry, Kind, MemoryObject, MemoryObjects};
    let mut store = MemoryObjects::default();
    let mut named = Vec::new();
    let mut top = None;
    for line in text.lines().take(256) {
        if let Some(paths) = line.strip_prefix("@ ") {
            named.extend(
                paths
                    .split(' ')
                    .filter(|p| !p.is_empty())
                    .map(PathBuf::from),
            );
        } else if let Some(bytes) = line.strip_prefix("b ") {
            store
                .objects
                .push(MemoryObject::Blob(bytes.as_bytes().to_vec()));
        } else if let Some(entries) = line.strip_prefix("t ") {
            let mut tree = Vec::new();
            for e in entries.split(' ').take(256) {
                let mut parts = e.rsplitn(3, ':');
                let (Some(id), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                let kind = match kind {
                    "t" => Kind::Tree,
                    "f" => Kind::File,
                    "l" => Kind::Symlink,
                    "s" => Kind::Submodule,
                    _ => continue,
                };
                let Ok(id) = id.parse::<usize>() else {
                    continue;
                };
                tree.push(Entry {
                    name: name.as_bytes().to_vec(),
                    kind,
                    id,
                });
            }
            store.objects.push(MemoryObject::Tree(tree));
            top = Some(store.objects.len() - 1);
        }
    }
    Some((store, top?, named))
}

/// `kiln diff`'s reading of a revision (`revision::read`) over an object store the input
/// describes ([`revision_input`]): trees shared many times over, symlinks in and out and in
/// loops, submodules, names that are not file names. Contract, beyond "no panic": the answer
/// does not change when asked twice; an error is KLN1030 or a limit's KLN1005; a snapshot holds
/// no more entries than the limit lets it list and no more bytes than it lets it read; and when
/// the store holds no symlink, every path taken is under a path named or under a
/// `*.local.kurel` directory beside one (nothing else of the revision is read).
pub fn revision_read(data: &[u8]) {
    use kiln_core::revision::{read, Kind, MemoryObject};
    use kiln_core::source::SnapshotEntry;
    use std::path::Path;
    let Some((store, top, named)) = text(data).and_then(revision_input) else {
        return;
    };
    // Boxed: a diagnostic is large, and it crosses to the worker and back.
    let first = on_worker(|| read(&store, top, &named, &REVISION_LIMITS).map_err(Box::new));
    let second = on_worker(|| read(&store, top, &named, &REVISION_LIMITS).map_err(Box::new));
    let snap = match (first, second) {
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "the read is not deterministic");
            assert!(
                [codes::GIT_REVISION, codes::YAML_BUDGET].contains(&a.code),
                "an undocumented code: {a}"
            );
            return;
        }
        (Ok(a), Ok(b)) => {
            assert_eq!(a.entries(), b.entries(), "the read is not deterministic");
            a
        }
        (a, b) => panic!("the read is not deterministic: {a:?} / {b:?}"),
    };
    assert!(
        snap.len() <= REVISION_LIMITS.max_entries,
        "more entries than listed"
    );
    let bytes: usize = snap
        .entries()
        .iter()
        .map(|(_, e)| match e {
            SnapshotEntry::File(b) => b.len(),
            _ => 0,
        })
        .sum();
    assert!(
        bytes <= REVISION_LIMITS.max_bytes,
        "more bytes than the limit"
    );
    let links = store.objects.iter().any(|o| match o {
        MemoryObject::Tree(t) => t.iter().any(|e| e.kind == Kind::Symlink),
        MemoryObject::Blob(_) => false,
    });
    if links {
        return;
    }
    let named: Vec<PathBuf> = named
        .iter()
        .filter_map(|p| {
            let mut out = PathBuf::new();
            for c in p.components() {
                match c {
                    std::path::Component::Normal(n) => out.push(n),
                    std::path::Component::CurDir => {}
                    std::path::Component::ParentDir if out.pop() => {}
                    _ => return None,
                }
            }
            Some(out)
        })
        .collect();
    for (p, _) in snap.entries() {
        let beside = |n: &PathBuf| {
            n.parent()
                .filter(|_| !n.as_os_str().is_empty())
                .is_some_and(|dir| {
                    p.strip_prefix(dir)
                        .ok()
                        .and_then(|rest| rest.iter().next())
                        .is_some_and(|first| first.to_string_lossy().ends_with(".local.kurel"))
                })
        };
        assert!(
            named.iter().any(|n| p.starts_with(n) || beside(n)),
            "{} was read, but neither named nor beside a named path ({named:?})",
            p.display()
        );
        assert!(
            !Path::new(p).is_absolute(),
            "an absolute path: {}",
            p.display()
        );
    }
}

/// A fuzz target: takes any bytes, must not panic.
pub type Target = fn(&[u8]);

/// Every target by name, for replaying saved inputs (`core/tests/fuzz_regressions.rs`).
pub const TARGETS: &[(&str, Target)] = &[
    ("yaml_load", yaml_load),
    ("scan", scan),
    ("cel_eval", cel_eval),
    ("cel_deep", cel_deep),
    ("simpleschema", simpleschema),
    ("shorthand", shorthand),
    ("json_pointer_filters", json_pointer_filters),
    ("kpatch", kpatch),
    ("render_rgd", render_rgd),
    ("kustomization_paths", kustomization_paths),
    ("revision_read", revision_read),
];
