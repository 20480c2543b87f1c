//! The doors' round trips, each against the alternative it stands in for, measured in the same
//! run:
//!
//! - **Argo CD** (issue 15): a refresh runs `discover`, `parameters` and `generate` as three
//!   processes on a fresh copy of the repository (the copy is Argo CD's, untimed here), for a
//!   small app (`testdata/argocd/repo`, `apps/web-kro`) and for a repository of 200 components
//!   (the component fleet, one environment).
//! - **kpt** (issue 14): `kpt fn eval PKG --exec kiln-krm` on a small package
//!   (`testdata/krm/kro`) against the same `kpt fn eval` with a no-op function (`cat`): the
//!   difference is what kiln adds.
//! - **kustomize** (issue 14): `kubectl kustomize --enable-alpha-plugins` with kiln as the legacy
//!   exec generator against plain `kubectl kustomize` of the objects it renders.
//! - **pass-through** (issue 14): a 5,000-item ResourceList (kpt's annotations, about 1 KiB an
//!   item) through `kiln-krm`, in MB/s of input: the file on its stdin (no shell in between),
//!   the median of 10 runs after two that are not counted.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::fleet::{ComponentFleet, Fleet, COMPONENT_DIR, ENVIRONMENTS};
use crate::measure::{self, Sink, Stats};
use crate::report::{at_most, goal, secs, Goal, Status};

/// Where the doors' binaries and tools are, or why each is missing.
#[derive(Debug, Clone)]
pub struct Tools {
    /// `kiln-cmp`.
    pub kiln_cmp: Result<PathBuf, String>,
    /// `kiln-krm`.
    pub kiln_krm: Result<PathBuf, String>,
    /// `kpt`.
    pub kpt: Result<PathBuf, String>,
    /// `kubectl`.
    pub kubectl: Result<PathBuf, String>,
}

/// The doors' figures: table rows (label, value), goals, and JSON.
#[derive(Debug, Default)]
pub struct Doors {
    /// Rows of the table.
    pub rows: Vec<(String, String)>,
    /// Goals of issues 14 and 15.
    pub goals: Vec<Goal>,
    /// Every figure.
    pub json: Value,
}

/// The doors' rows and goals (issues 14, 15 and 29), as the report prints them.
pub fn text(d: &Doors) -> String {
    let mut out =
        String::from("\ndoors (one small app or package per row; see bench/src/doors.rs)\n");
    let width = d
        .rows
        .iter()
        .map(|(l, _)| l.chars().count())
        .max()
        .unwrap_or(0);
    for (label, value) in &d.rows {
        let _ = writeln!(out, "  {label:<width$}  {value}");
    }
    let _ = writeln!(out, "\ngoals (issues 14, 15, 29, 41 and 43; doors)");
    for g in &d.goals {
        let _ = writeln!(out, "  {} {}: {}", g.status.label(), g.goal, g.detail);
    }
    out
}

const G_ARGO: &str =
    "Argo CD refresh of a small app (discover + parameters + generate) under 10 ms (issue 29)";
const G_ARGO_200: &str =
    "Argo CD refresh of an application of 200 components under 15 ms, median (issue 43)";
const G_KPT: &str =
    "kiln adds under 10 ms to a small package's kpt fn eval, median of paired runs (issue 29)";
const G_KUST: &str =
    "kiln adds under 10 ms to a small package's kustomize build, median of paired runs (issue 29)";
const G_PASS: &str = "5,000 items pass through kiln-krm at ≥ 100 MB/s (issue 29)";

/// Runs of the pass-through made and not counted before the measured ones.
const WARM_UP: usize = 2;

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    std::fs::create_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    for e in std::fs::read_dir(from).map_err(|e| format!("{}: {e}", from.display()))? {
        let e = e.map_err(|e| e.to_string())?;
        let dest = to.join(e.file_name());
        if e.file_type().map_err(|e| e.to_string())?.is_dir() {
            copy_tree(&e.path(), &dest)?;
        } else {
            std::fs::copy(e.path(), &dest).map_err(|e| format!("{}: {e}", dest.display()))?;
        }
    }
    Ok(())
}

fn fresh_copy(from: &Path, to: &Path) -> Result<(), String> {
    if to.exists() {
        std::fs::remove_dir_all(to).map_err(|e| format!("{}: {e}", to.display()))?;
    }
    copy_tree(from, to)
}

fn once(cmd: &mut Command) -> Result<Duration, String> {
    let r = measure::run(cmd, Sink::Null)?;
    if !r.success() {
        return Err(format!("{:?} failed ({})", cmd.get_program(), r.reason()));
    }
    Ok(r.wall)
}

/// The three commands of an Argo CD refresh, `runs` times: medians of each and of the sum.
fn argocd(
    cmp: &Path,
    repo: &Path,
    app: &str,
    parameters: &str,
    scratch: &Path,
    runs: usize,
) -> Result<[Stats; 4], String> {
    let checkout = scratch.join("argocd-checkout");
    let mut times: [Vec<Duration>; 4] = Default::default();
    for _ in 0..runs.max(1) {
        let mut total = Duration::ZERO;
        for (k, command) in ["discover", "parameters", "generate"].iter().enumerate() {
            // Argo CD unpacks the repository afresh for every call.
            fresh_copy(repo, &checkout)?;
            let mut c = Command::new(cmp);
            c.arg(command)
                .current_dir(checkout.join(app))
                .env("ARGOCD_APP_NAME", "bench")
                .env("ARGOCD_APP_NAMESPACE", "bench")
                .env("ARGOCD_APP_SOURCE_PATH", app)
                .env(
                    "ARGOCD_APP_REVISION",
                    "0123456789abcdef0123456789abcdef01234567",
                )
                .env("ARGOCD_APP_PARAMETERS", parameters);
            let t = once(&mut c)?;
            times[k].push(t);
            total += t;
        }
        times[3].push(total);
    }
    let s = |v: &[Duration]| Stats::of(v).ok_or_else(|| "no runs".to_string());
    Ok([s(&times[0])?, s(&times[1])?, s(&times[2])?, s(&times[3])?])
}

fn median_of(
    runs: usize,
    mut f: impl FnMut() -> Result<Duration, String>,
) -> Result<Duration, String> {
    let mut v = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        v.push(f()?);
    }
    Ok(Stats::of(&v).ok_or("no runs")?.median)
}

/// `runs` pairs of (with kiln, without), each pair run back to back and the order alternating
/// from pair to pair, so background load hits both sides alike: the medians of each side and the
/// median of the per-pair differences (what kiln adds). A difference of two separately taken
/// medians of noisy 100–250 ms runs is not a measurement of a few milliseconds; this is.
fn paired(
    runs: usize,
    mut with: impl FnMut() -> Result<Duration, String>,
    mut without: impl FnMut() -> Result<Duration, String>,
) -> Result<(Duration, Duration, f64), String> {
    let (mut a, mut b, mut added) = (Vec::new(), Vec::new(), Vec::new());
    for k in 0..runs.max(1) {
        let (w, wo) = if k % 2 == 0 {
            let w = with()?;
            (w, without()?)
        } else {
            let wo = without()?;
            (with()?, wo)
        };
        added.push(w.as_secs_f64() * 1e3 - wo.as_secs_f64() * 1e3);
        a.push(w);
        b.push(wo);
    }
    added.sort_by(f64::total_cmp);
    let mid = added.len() / 2;
    let median_added = if added.len() % 2 == 0 {
        (added[mid - 1] + added[mid]) / 2.0
    } else {
        added[mid]
    };
    let med = |v: &[Duration]| Stats::of(v).map(|s| s.median).ok_or("no runs");
    Ok((med(&a)?, med(&b)?, median_added))
}

/// The 5,000-item ResourceList of the pass-through figure.
pub fn pass_through_list(items: usize) -> String {
    let mut s = String::from("apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n");
    for i in 0..items {
        s.push_str(&format!(
            "- apiVersion: v1\n  kind: ConfigMap\n  metadata:\n    name: cm-{i}\n    namespace: ns-{ns}\n    labels:\n      app.kubernetes.io/name: app-{i}\n      app.kubernetes.io/part-of: fleet\n    annotations:\n      config.kubernetes.io/index: '0'\n      config.kubernetes.io/path: 'apps/cm-{i}.yaml'\n      internal.config.kubernetes.io/index: '0'\n      internal.config.kubernetes.io/path: 'apps/cm-{i}.yaml'\n      internal.config.kubernetes.io/seqindent: 'compact'\n      internal.config.kubernetes.io/id: '{id}'\n      config.k8s.io/id: '{id}'\n  data:\n    key1: \"value number one for item {i}\"\n    key2: 'another value, quoted differently'\n    list: \"a,b,c,d,e,f,g,h\"\n    url: https://example.com/path/{i}?q=1\n    number: \"{n}\"\n    text: plain text that goes on for a while to make the item about a kilobyte long in total\n    more: still more plain text so that five thousand items make roughly five megabytes here\n",
            ns = i % 7,
            id = i + 1,
            n = i * 37
        ));
    }
    s
}

/// A refresh's row of the table and its JSON, from the medians of discover, parameters, generate
/// and their sum.
fn refresh_figures([disc, par, gen, all]: &[Stats; 4]) -> (String, Value) {
    let ms = |x: Duration| x.as_secs_f64() * 1e3;
    (
        format!(
            "{} (discover {}, parameters {}, generate {})",
            secs(all.median),
            secs(disc.median),
            secs(par.median),
            secs(gen.median)
        ),
        json!({"sequence": ms(all.median), "discover": ms(disc.median),
               "parameters": ms(par.median), "generate": ms(gen.median)}),
    )
}

/// Measure every door the tools allow; what cannot be measured says why.
pub fn run(root: &Path, scratch: &Path, tools: &Tools, runs: usize) -> Doors {
    let mut d = Doors::default();
    let mut j = serde_json::Map::new();
    let ms = |x: Duration| x.as_secs_f64() * 1e3;

    // Argo CD.
    match &tools.kiln_cmp {
        Err(why) => {
            d.rows
                .push(("Argo CD refresh".into(), format!("skipped: {why}")));
            d.goals.push(goal(G_ARGO, Status::Skip, why.clone()));
            d.goals.push(goal(G_ARGO_200, Status::Skip, why.clone()));
        }
        Ok(cmp) => {
            let small = argocd(
                cmp,
                &root.join("testdata/argocd/repo"),
                "apps/web-kro",
                "null",
                scratch,
                runs,
            );
            match &small {
                Ok(stats) => {
                    let (row, figures) = refresh_figures(stats);
                    d.rows
                        .push(("Argo CD refresh, small app (median)".into(), row));
                    d.goals
                        .push(at_most(G_ARGO, ms(stats[3].median), 10.0, false, |v| {
                            format!("{v:.1} ms")
                        }));
                    j.insert("argocd_small_ms".into(), figures);
                }
                Err(why) => {
                    d.rows.push((
                        "Argo CD refresh, small app".into(),
                        format!("failed: {why}"),
                    ));
                    d.goals.push(goal(G_ARGO, Status::Skip, why.clone()));
                }
            }
            let repo = scratch.join("argocd-200");
            let big = ComponentFleet.generate(200).and_then(|g| {
                if repo.exists() {
                    std::fs::remove_dir_all(&repo).map_err(|e| e.to_string())?;
                }
                g.write(&repo)?;
                let params = format!(
                    r#"[{{"name":"environment","string":"{}"}}]"#,
                    ENVIRONMENTS[1]
                );
                argocd(cmp, &repo, COMPONENT_DIR, &params, scratch, runs.min(5))
            });
            match big {
                Ok(stats) => {
                    let (row, figures) = refresh_figures(&stats);
                    d.rows
                        .push(("Argo CD refresh, 200 components (median)".into(), row));
                    d.goals
                        .push(at_most(G_ARGO_200, ms(stats[3].median), 15.0, false, |v| {
                            format!("{v:.1} ms")
                        }));
                    j.insert("argocd_200_components_ms".into(), figures);
                }
                Err(why) => {
                    d.rows.push((
                        "Argo CD refresh, 200 components".into(),
                        format!("failed: {why}"),
                    ));
                    d.goals.push(goal(G_ARGO_200, Status::Skip, why));
                }
            }
        }
    }

    // kpt and kustomize.
    let krm = match &tools.kiln_krm {
        Ok(k) => k.clone(),
        Err(why) => {
            for g in [G_KPT, G_KUST, G_PASS] {
                d.goals.push(goal(g, Status::Skip, why.clone()));
            }
            d.rows
                .push(("KRM function".into(), format!("skipped: {why}")));
            d.json = Value::Object(j);
            return d;
        }
    };
    let pkg = root.join("testdata/krm/kro");
    match &tools.kpt {
        Err(why) => d.goals.push(goal(G_KPT, Status::Skip, why.clone())),
        Ok(kpt) => {
            let work = scratch.join("kpt-pkg");
            let eval = |function: &Path| {
                fresh_copy(&pkg, &work)?;
                once(
                    Command::new(kpt)
                        .arg("fn")
                        .arg("eval")
                        .arg(&work)
                        .arg("--exec")
                        .arg(function),
                )
            };
            match paired(runs, || eval(&krm), || eval(Path::new("cat"))) {
                Ok((with, noop, added)) => {
                    d.rows.push((
                        "kpt fn eval, small package".into(),
                        format!(
                            "{} with kiln-krm, {} with a no-op function (medians): kiln adds {added:.1} ms (median of {runs} paired runs)",
                            secs(with),
                            secs(noop)
                        ),
                    ));
                    d.goals
                        .push(at_most(G_KPT, added, 10.0, false, |v| format!("{v:.1} ms")));
                    j.insert(
                        "kpt_ms".into(),
                        json!({"with_kiln": ms(with), "noop": ms(noop), "added": added}),
                    );
                }
                Err(why) => {
                    d.rows.push((
                        "kpt fn eval, small package".into(),
                        format!("failed: {why}"),
                    ));
                    d.goals.push(goal(G_KPT, Status::Skip, why));
                }
            }
        }
    }
    match &tools.kubectl {
        Err(why) => d.goals.push(goal(G_KUST, Status::Skip, why.clone())),
        Ok(kubectl) => {
            let r = (|| -> Result<(Duration, Duration, f64), String> {
                let base = scratch.join("kustomize-krm");
                if base.exists() {
                    std::fs::remove_dir_all(&base).map_err(|e| e.to_string())?;
                }
                let (xdg, gen, plain) = (base.join("xdg"), base.join("gen"), base.join("plain"));
                for dir in [&gen, &plain] {
                    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
                }
                once(
                    Command::new(&krm)
                        .arg("install-exec-plugin")
                        .arg("--dir")
                        .arg(xdg.join("kustomize/plugin")),
                )?;
                for f in ["rgd.yaml", "apps/shop.yaml"] {
                    let name = Path::new(f).file_name().unwrap_or_default();
                    std::fs::copy(pkg.join(f), gen.join(name)).map_err(|e| e.to_string())?;
                }
                let write = |p: PathBuf, t: &str| {
                    std::fs::write(&p, t).map_err(|e| format!("{}: {e}", p.display()))
                };
                write(gen.join("render.yaml"), "apiVersion: fn.kiln.dev/v1alpha1\nkind: Render\nmetadata: {name: r}\nspec: {paths: [rgd.yaml, shop.yaml]}\n")?;
                write(
                    gen.join("kustomization.yaml"),
                    "generators: [render.yaml]\nnamePrefix: p-\n",
                )?;
                // The same objects, rendered once, for plain kustomize.
                let out = Command::new(&krm)
                    .arg("render.yaml")
                    .current_dir(&gen)
                    .stdin(std::process::Stdio::null())
                    .output()
                    .map_err(|e| e.to_string())?;
                if !out.status.success() {
                    return Err(format!(
                        "kiln-krm render.yaml: {}",
                        String::from_utf8_lossy(&out.stderr)
                    ));
                }
                std::fs::write(plain.join("objects.yaml"), &out.stdout)
                    .map_err(|e| e.to_string())?;
                write(
                    plain.join("kustomization.yaml"),
                    "resources: [objects.yaml]\nnamePrefix: p-\n",
                )?;
                let build = |dir: &Path| {
                    once(
                        Command::new(kubectl)
                            .env("XDG_CONFIG_HOME", &xdg)
                            .args(["kustomize", "--enable-alpha-plugins"])
                            .arg(dir),
                    )
                };
                paired(runs, || build(&gen), || build(&plain))
            })();
            match r {
                Ok((with, plain, added)) => {
                    d.rows.push((
                        "kubectl kustomize, small package".into(),
                        format!("{} with kiln-krm as legacy exec generator, {} plain (medians): kiln adds {added:.1} ms (median of {runs} paired runs)", secs(with), secs(plain)),
                    ));
                    d.goals.push(at_most(G_KUST, added, 10.0, false, |v| {
                        format!("{v:.1} ms")
                    }));
                    j.insert(
                        "kustomize_ms".into(),
                        json!({"with_kiln": ms(with), "plain": ms(plain), "added": added}),
                    );
                }
                Err(why) => {
                    d.rows.push((
                        "kubectl kustomize, small package".into(),
                        format!("failed: {why}"),
                    ));
                    d.goals.push(goal(G_KUST, Status::Skip, why));
                }
            }
        }
    }
    let list = scratch.join("pass-through.yaml");
    let text = pass_through_list(5000);
    let bytes = text.len();
    let r = std::fs::write(&list, text)
        .map_err(|e| e.to_string())
        .and_then(|()| {
            // kiln-krm alone, the file on its stdin (a shell in between adds a millisecond to
            // what is measured), after runs that warm what the kubectl and kpt rows before it
            // left cold (its first runs after them are slower than the rest).
            let pass = || {
                let r = measure::run_reading(&mut Command::new(&krm), Some(&list), Sink::Null)?;
                if !r.success() {
                    return Err(format!("kiln-krm failed ({})", r.reason()));
                }
                Ok(r.wall)
            };
            for _ in 0..WARM_UP {
                pass()?;
            }
            median_of(runs.min(10), pass)
        });
    match r {
        Ok(t) => {
            let mbs = bytes as f64 / 1e6 / t.as_secs_f64();
            d.rows.push((
                "kiln-krm pass-through, 5,000 items".into(),
                format!(
                    "{} for {:.1} MB: {mbs:.0} MB/s",
                    secs(t),
                    bytes as f64 / 1e6
                ),
            ));
            d.goals.push(if mbs >= 100.0 {
                goal(G_PASS, Status::Pass, format!("{mbs:.0} MB/s"))
            } else {
                goal(
                    G_PASS,
                    Status::Miss,
                    format!("{mbs:.0} MB/s: {:.2}× short", 100.0 / mbs),
                )
            });
            j.insert(
                "pass_through".into(),
                json!({"ms": ms(t), "bytes": bytes, "mb_per_s": mbs}),
            );
        }
        Err(why) => {
            d.rows
                .push(("kiln-krm pass-through".into(), format!("failed: {why}")));
            d.goals.push(goal(G_PASS, Status::Skip, why));
        }
    }
    d.json = Value::Object(j);
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pass_through_list_is_five_thousand_kilobyte_items() {
        let s = pass_through_list(5000);
        assert_eq!(s.matches("\n- apiVersion: v1\n").count(), 5000);
        assert!((4_000_000..6_000_000).contains(&s.len()), "{}", s.len());
    }
}
