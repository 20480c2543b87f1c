//! `kiln lsp` as an editor feels it (issue 41): the time from a change of an open RGD to its
//! diagnostics, for a small one (examples/webapp) and a 2,000-line one of 100 resources; the
//! time to answer a completion; and the memory of the server once it has checked the largest
//! case folder of testdata/. Each is the median of `runs` round trips over stdio, through the
//! same driver the protocol tests use (`kiln_test_support::lsp`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use kiln_test_support::lsp::{file_uri, Lsp};
use serde_json::{json, Value};

use crate::doors::Doors;
use crate::measure::Stats;
use crate::report::{at_most, goal, secs, Status};

const G_SMALL: &str = "diagnostics published within 20 ms of a change to a small RGD (issue 41)";
const G_LARGE: &str =
    "diagnostics published within 50 ms of a change to a 2,000-line RGD of 100 resources (issue 41)";
const G_COMPLETE: &str = "completion answered within 20 ms (issue 41)";
const G_RSS: &str = "server memory after opening the largest testdata case ≤ 64 MiB (issue 41)";

/// An RGD of `n` resources, each a ConfigMap of 20 lines reading the schema and the resource
/// before it (100 resources: about 2,000 lines).
pub fn large_rgd(n: usize) -> String {
    let mut s = String::from(
        "apiVersion: kro.run/v1alpha1\nkind: ResourceGraphDefinition\nmetadata:\n  name: bigs.example.com\nspec:\n  schema:\n    apiVersion: v1alpha1\n    kind: Big\n    group: example.com\n    spec:\n      name: string | default=\"big\"\n      replicas: integer | default=1\n  resources:\n",
    );
    for i in 0..n {
        let previous = if i == 0 {
            "${schema.spec.name}".to_string()
        } else {
            format!("${{cm{}.metadata.name}}", i - 1)
        };
        s.push_str(&format!(
            "    - id: cm{i}\n      template:\n        apiVersion: v1\n        kind: ConfigMap\n        metadata:\n          name: ${{schema.spec.name}}-{i}\n          labels:\n            app: ${{schema.spec.name}}\n            index: \"{i}\"\n        data:\n          name: ${{schema.spec.name}}\n          replicas: \"${{string(schema.spec.replicas)}}\"\n          previous: {previous}\n          size: \"${{string(schema.spec.replicas * {i})}}\"\n          plain: a value that is not an expression\n          other: another value\n          upper: ${{schema.spec.name.upperAscii()}}\n          joined: ${{schema.spec.name + '-' + string({i})}}\n          last: \"{i}\"\n          note: resource {i} of the graph\n"
        ));
    }
    s
}

/// The median time from a change of `file` (alternately `bad` and `good`, so every change
/// publishes: a diagnostic, then its clearing) to its publishDiagnostics.
fn change_to_diagnostics(
    kiln: &Path,
    dir: &Path,
    file: &Path,
    good: &str,
    bad: &str,
    runs: usize,
) -> Result<Duration, String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(file, good).map_err(|e| e.to_string())?;
    let (mut lsp, _) = Lsp::start(kiln, dir);
    let uri = file_uri(file);
    lsp.open(&uri, good);
    let mut times = Vec::new();
    // Two rounds not counted: the first check of each text warms the caches an editor's
    // session has warm.
    for k in 0..runs + 2 {
        let text = if k % 2 == 0 { bad } else { good };
        let started = Instant::now();
        lsp.notify(
            "textDocument/didChange",
            json!({"textDocument": {"uri": uri, "version": k + 2}, "contentChanges": [{"text": text}]}),
        );
        let u = uri.clone();
        let published = lsp.wait_for(move |m| {
            m["method"] == "textDocument/publishDiagnostics" && m["params"]["uri"] == u
        });
        let elapsed = started.elapsed();
        let n = published["params"]["diagnostics"]
            .as_array()
            .map_or(0, Vec::len);
        if (n == 0) == (k % 2 == 0) {
            return Err(format!("change {k}: {n} diagnostic(s) published"));
        }
        if k >= 2 {
            times.push(elapsed);
        }
    }
    lsp.shutdown();
    Ok(Stats::of(&times).ok_or("no runs")?.median)
}

/// The median time to answer a completion inside `${schema.spec.` of the small RGD.
fn completion(kiln: &Path, dir: &Path, rgd: &str, runs: usize) -> Result<Duration, String> {
    let file = dir.join("rgd.yaml");
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    std::fs::write(&file, rgd).map_err(|e| e.to_string())?;
    let (mut lsp, _) = Lsp::start(kiln, dir);
    let uri = file_uri(&file);
    lsp.open(&uri, rgd);
    let (line, text) = rgd
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains("${schema.spec.replicas}"))
        .ok_or("no ${schema.spec.replicas} in the RGD")?;
    let character = text.find("replicas}").unwrap_or(0) as u64;
    let mut times = Vec::new();
    for k in 0..runs + 2 {
        let started = Instant::now();
        let r = lsp.request(
            "textDocument/completion",
            json!({"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}),
        );
        let elapsed = started.elapsed();
        if r.get("error").is_some() {
            return Err(format!("completion failed: {r}"));
        }
        if k >= 2 {
            times.push(elapsed);
        }
    }
    lsp.shutdown();
    Ok(Stats::of(&times).ok_or("no runs")?.median)
}

/// The golden case folder of testdata/ with the most bytes of input.
fn largest_case(testdata: &Path) -> Option<(PathBuf, u64)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, u64)>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                if p.join("expected.yaml").exists() || p.join("expected-errors.txt").exists() {
                    out.push((p.clone(), bytes(&p)));
                }
                walk(&p, out);
            }
        }
    }
    fn bytes(dir: &Path) -> u64 {
        // Symlinks are not followed: a case about a link that leaves the tree is not big.
        std::fs::read_dir(dir).map_or(0, |es| {
            es.flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => bytes(&e.path()),
                    Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                    _ => 0,
                })
                .sum()
        })
    }
    let mut all = Vec::new();
    walk(testdata, &mut all);
    all.into_iter().max_by_key(|(p, b)| (*b, p.clone()))
}

/// The peak resident memory of process `pid` (VmHWM), in bytes.
fn peak_rss(pid: u32) -> Result<u64, String> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .map_err(|e| format!("/proc/{pid}/status: {e}"))?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kb| kb * 1024)
        .ok_or_else(|| "no VmHWM in /proc status".to_string())
}

/// Measure `kiln lsp` (the `kiln` executable) and add its rows, goals and figures to `d`.
pub fn run(d: &mut Doors, root: &Path, scratch: &Path, kiln: &Path, runs: usize) {
    let ms = |x: Duration| x.as_secs_f64() * 1e3;
    let mut figures = serde_json::Map::new();
    let small =
        std::fs::read_to_string(root.join("examples/webapp/rgd.yaml")).map_err(|e| e.to_string());
    let misspelt = |s: &str| s.replace("${schema.spec.replicas}", "${schema.spec.replica}");

    let measured = small.clone().and_then(|good| {
        let dir = scratch.join("lsp-small");
        change_to_diagnostics(
            kiln,
            &dir,
            &dir.join("rgd.yaml"),
            &good,
            &misspelt(&good),
            runs,
        )
    });
    report(
        d,
        &mut figures,
        G_SMALL,
        "kiln lsp: change → diagnostics, small RGD (median)",
        "change_small_ms",
        measured.map(ms),
        20.0,
    );

    let good = large_rgd(100);
    let bad = good.replacen("app: ${schema.spec.name}", "app: ${schema.spec.nme}", 1);
    let dir = scratch.join("lsp-large");
    let measured = change_to_diagnostics(kiln, &dir, &dir.join("rgd.yaml"), &good, &bad, runs);
    let label = format!(
        "kiln lsp: change → diagnostics, {}-line RGD of 100 resources (median)",
        good.lines().count()
    );
    report(
        d,
        &mut figures,
        G_LARGE,
        &label,
        "change_large_ms",
        measured.map(ms),
        50.0,
    );

    let measured =
        small.and_then(|rgd| completion(kiln, &scratch.join("lsp-complete"), &rgd, runs));
    report(
        d,
        &mut figures,
        G_COMPLETE,
        "kiln lsp: completion (median)",
        "completion_ms",
        measured.map(ms),
        20.0,
    );

    let rss = largest_case(&root.join("testdata"))
        .ok_or_else(|| "no case in testdata".to_string())
        .and_then(|(case, _)| {
            let (mut lsp, _) = Lsp::start(kiln, &case);
            lsp.sync();
            let rss = peak_rss(lsp.pid());
            lsp.shutdown();
            rss.map(|b| (case, b))
        });
    match rss {
        Ok((case, b)) => {
            let mib = b as f64 / (1024.0 * 1024.0);
            let name = case
                .strip_prefix(root)
                .unwrap_or(&case)
                .display()
                .to_string();
            d.rows.push((
                format!("kiln lsp: peak memory after checking {name}"),
                format!("{mib:.1} MiB"),
            ));
            d.goals
                .push(at_most(G_RSS, mib, 64.0 + f64::EPSILON, true, |v| {
                    format!("{v:.1} MiB")
                }));
            figures.insert("peak_rss_mib".into(), json!(mib));
        }
        Err(why) => d.goals.push(goal(G_RSS, Status::Skip, why)),
    }
    if let Value::Object(j) = &mut d.json {
        j.insert("lsp".into(), Value::Object(figures));
    } else {
        d.json = json!({"lsp": figures});
    }
}

fn report(
    d: &mut Doors,
    figures: &mut serde_json::Map<String, Value>,
    name: &'static str,
    label: &str,
    key: &str,
    measured: Result<f64, String>,
    limit_ms: f64,
) {
    match measured {
        Ok(v) => {
            d.rows
                .push((label.to_string(), secs(Duration::from_secs_f64(v / 1e3))));
            d.goals
                .push(at_most(name, v, limit_ms, true, |v| format!("{v:.1} ms")));
            figures.insert(key.into(), json!(v));
        }
        Err(why) => {
            d.rows.push((label.to_string(), format!("failed: {why}")));
            d.goals.push(goal(name, Status::Skip, why));
        }
    }
}
