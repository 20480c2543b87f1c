//! Golden cases of Flux postBuild substitution: every folder under `testdata/flux/`.
//!
//! - `input.yaml`: the objects, as `kustomize build` hands them to kustomize-controller.
//! - `vars.yaml`: the Kustomization's `spec.postBuild` block (`substitute`, `substituteFrom`,
//!   `substituteStrategy`), with test-only additions: a `substituteFrom` entry carries the data
//!   of its ConfigMap or Secret inline under `data` (a Secret's already decoded; an entry
//!   without `data` names an object that does not exist); top-level `strict: false` turns strict
//!   mode off (a kustomize-controller feature gate, on by default); top-level `maxOutputBytes`
//!   sets the output limit.
//! - `expected-objects.yaml`: the substituted objects, compared as values (key order and scalar
//!   types included). Not `expected.yaml`: the CLI's golden runner renders every folder under
//!   `testdata/` that has one.
//! - `expected.err` instead: the error diagnostics, one per line, `CODE [FILE[:LINE]] [PATH:]
//!   MESSAGE`. Every error must carry a hint.
//! - `expected-lint.txt` (optional): the warnings of `flux::lint::diagnostics` on the input
//!   objects, one per line, `CODE PATH: MESSAGE`.
//!
//! `KILN_BLESS=1 cargo test -p kiln-core --test flux_postbuild` rewrites the expected files that
//! differ from the actual result (only files that exist, and only of the same kind: a case that
//! expected objects and now fails, or the reverse, still fails). A blessed file must then be read
//! and checked by hand.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use kiln_core::diag::Diagnostic;
use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::flux::lint;
use kiln_core::flux::postbuild::{apply_documents, PostBuild, SourceKind, Spec};
use serde_json::Value;

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/flux");
    let mut dirs: Vec<PathBuf> = fs::read_dir(&root)
        .expect("testdata/flux exists")
        .map(|e| e.expect("readable entry").path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    dirs
}

fn yaml(name: &str, text: &str) -> Result<Vec<Value>, String> {
    parse_file(name, text.to_string(), &YamlLimits::default())
        .map(|docs| docs.into_iter().map(|d| d.value).collect())
        .map_err(|d| d.to_string())
}

fn canonical(docs: &[Value]) -> Vec<String> {
    // serde_json keeps key order (preserve_order), so this compares order and types exactly.
    docs.iter()
        .map(|d| serde_json::to_string_pretty(d).expect("JSON values serialise"))
        .collect()
}

fn line_of(d: &Diagnostic) -> String {
    let mut s = d.code.id.to_string();
    if let Some(f) = &d.file {
        s.push(' ');
        s.push_str(f);
        if let Some(l) = d.line {
            s.push_str(&format!(":{l}"));
        }
    }
    if let Some(p) = &d.path {
        s.push_str(&format!(" {p}:"));
    }
    s.push(' ');
    s.push_str(&d.message);
    s
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// Run one case: the substituted objects, or the error diagnostics (each with a hint).
fn run(case: &Path) -> Result<Result<Vec<Value>, Vec<String>>, String> {
    let read = |name: &str| fs::read_to_string(case.join(name)).map_err(|e| format!("{name}: {e}"));
    let input = read("input.yaml")?;
    let docs =
        parse_file("input.yaml", input, &YamlLimits::default()).map_err(|d| d.to_string())?;
    let vars_text = read("vars.yaml")?;
    let mut block = yaml("vars.yaml", &vars_text)?
        .into_iter()
        .next()
        .unwrap_or(Value::Null);
    let mut strict = true;
    let mut max_output_bytes = None;
    let mut data: BTreeMap<(String, String), BTreeMap<String, String>> = BTreeMap::new();
    if let Value::Object(m) = &mut block {
        if let Some(v) = m.shift_remove("strict") {
            strict = v.as_bool().ok_or("vars.yaml: strict must be a boolean")?;
        }
        if let Some(v) = m.shift_remove("maxOutputBytes") {
            max_output_bytes = Some(
                v.as_u64()
                    .ok_or("vars.yaml: maxOutputBytes must be a number")?,
            );
        }
        if let Some(Value::Array(entries)) = m.get_mut("substituteFrom") {
            for e in entries.iter_mut().filter_map(Value::as_object_mut) {
                let key = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                let id = (key("kind"), key("name"));
                if let Some(d) = e.shift_remove("data") {
                    let d: BTreeMap<String, String> = serde_json::from_value(d)
                        .map_err(|err| format!("vars.yaml: inline data: {err}"))?;
                    data.insert(id, d);
                }
            }
        }
    }
    let errors =
        |ds: kiln_core::diag::Diagnostics, file: Option<&str>| -> Result<Vec<String>, String> {
            let mut out = Vec::new();
            for d in ds.iter().filter(|d| d.is_error()) {
                if d.hint.as_deref().is_none_or(str::is_empty) {
                    return Err(format!("error without a hint: {d}"));
                }
                let d = match (file, &d.file) {
                    (Some(f), None) => d.clone().in_file(f),
                    _ => d.clone(),
                };
                out.push(line_of(&d));
            }
            Ok(out)
        };
    let spec = match Spec::parse(&block) {
        Ok(s) => s,
        Err(ds) => return Ok(Err(errors(ds, Some("vars.yaml"))?)),
    };
    let variables = match spec.variables(|r| {
        let kind = match r.kind {
            SourceKind::ConfigMap => "ConfigMap",
            SourceKind::Secret => "Secret",
        };
        data.get(&(kind.to_string(), r.name.clone())).cloned()
    }) {
        Ok(v) => v,
        Err(ds) => return Ok(Err(errors(ds, Some("vars.yaml"))?)),
    };
    let mut settings = PostBuild::new(variables);
    settings.strategy = spec.strategy;
    settings.strict = strict;
    if let Some(n) = max_output_bytes {
        settings.max_output_bytes = usize::try_from(n).map_err(|e| e.to_string())?;
    }
    Ok(match apply_documents(&docs, &settings) {
        Ok(objects) => Ok(objects),
        Err(ds) => Err(errors(ds, None)?),
    })
}

fn check(case: &Path, bless: bool) -> Result<(), String> {
    let outcome = run(case)?;
    let objects_file = case.join("expected-objects.yaml");
    let err_file = case.join("expected.err");
    match (objects_file.exists(), err_file.exists()) {
        (true, true) | (false, false) => {
            return Err("needs exactly one of expected-objects.yaml and expected.err".into())
        }
        _ => {}
    }
    match outcome {
        Ok(objects) => {
            if !objects_file.exists() {
                return Err(format!(
                    "expected errors, got objects:\n{}",
                    kiln_core::output::yaml_stream(&objects).map_err(|d| d.to_string())?
                ));
            }
            let want = yaml(
                "expected-objects.yaml",
                &fs::read_to_string(&objects_file).map_err(|e| e.to_string())?,
            )?;
            let (w, g) = (canonical(&want), canonical(&objects));
            if w != g {
                let text = kiln_core::output::yaml_stream(&objects).map_err(|d| d.to_string())?;
                if bless {
                    fs::write(&objects_file, text).map_err(|e| e.to_string())?;
                } else {
                    return Err(format!(
                        "objects differ.\n--- expected\n{}\n--- actual\n{}",
                        w.join("\n"),
                        g.join("\n")
                    ));
                }
            }
        }
        Err(got) => {
            if !err_file.exists() {
                return Err(format!("expected objects, got errors:\n{}", got.join("\n")));
            }
            let want = lines(&fs::read_to_string(&err_file).map_err(|e| e.to_string())?);
            if want != got {
                if bless {
                    fs::write(&err_file, got.join("\n") + "\n").map_err(|e| e.to_string())?;
                } else {
                    return Err(format!(
                        "diagnostics differ.\n--- expected\n{}\n--- actual\n{}",
                        want.join("\n"),
                        got.join("\n")
                    ));
                }
            }
        }
    }
    let lint_file = case.join("expected-lint.txt");
    if lint_file.exists() {
        let input = fs::read_to_string(case.join("input.yaml")).map_err(|e| e.to_string())?;
        let got: Vec<String> = yaml("input.yaml", &input)?
            .iter()
            .flat_map(lint::diagnostics)
            .map(|d| line_of(&d))
            .collect();
        let want = lines(&fs::read_to_string(&lint_file).map_err(|e| e.to_string())?);
        if want != got {
            if bless {
                fs::write(&lint_file, got.join("\n") + "\n").map_err(|e| e.to_string())?;
            } else {
                return Err(format!(
                    "lint warnings differ.\n--- expected\n{}\n--- actual\n{}",
                    want.join("\n"),
                    got.join("\n")
                ));
            }
        }
    }
    Ok(())
}

#[test]
fn golden_cases() {
    let bless = std::env::var_os("KILN_BLESS").is_some();
    assert!(
        !(bless && std::env::var_os("CI").is_some()),
        "KILN_BLESS is refused under CI: it would turn every mismatch into a pass"
    );
    // Every folder of testdata/flux is a case, and one without exactly one expectation fails
    // (`check`): none can go unrun. The floor only catches a missing testdata/flux.
    let all = cases();
    assert!(!all.is_empty(), "no flux golden cases found");
    let mut failures = Vec::new();
    for case in &all {
        if let Err(e) = check(case, bless) {
            failures.push(format!(
                "== {}\n{e}",
                case.file_name().unwrap_or_default().to_string_lossy()
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} flux golden cases failed:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n\n")
    );
}
