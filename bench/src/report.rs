//! The plain-text table, the goal lines of issue 6, and the same figures as JSON.

use std::fmt::Write as _;
use std::time::Duration;

use serde_json::{json, Value};

use crate::instructions::Instructions;
use crate::suite::{ratio, FleetResult, PerProcess, SizeFigures};

/// Facts about the run printed above the table and stored in the JSON.
#[derive(Debug, Clone)]
pub struct Environment {
    /// Cores available to the processes (`available_parallelism`).
    pub cores: usize,
    /// The kiln binary measured.
    pub kiln: String,
    /// kubectl's version line, or why kustomize was skipped.
    pub kubectl: Result<String, String>,
    /// Repetitions (batch, serialisation, small app) and the sampling rule.
    pub batch_runs: usize,
    /// Best-of count of the in-process serialisation.
    pub serialise_runs: usize,
    /// Runs of the small-app latency.
    pub small_app_runs: usize,
    /// Per-process series run every unit up to this N.
    pub full_limit: usize,
    /// Sample size above it.
    pub sample: usize,
}

/// Goal outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Met.
    Pass,
    /// Not met; the detail says by how much.
    Miss,
    /// Not measured in this run (size not requested, kubectl missing, fleet not available).
    Skip,
}

impl Status {
    /// The word the table prints.
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Miss => "MISS",
            Status::Skip => "SKIP",
        }
    }
}

/// One goal of issue 6 with the measured figure.
#[derive(Debug, Clone)]
pub struct Goal {
    /// The goal as the issue states it.
    pub goal: &'static str,
    /// Outcome.
    pub status: Status,
    /// Measured figure and, on a miss, by how much.
    pub detail: String,
}

/// The size at which the issue states its fleet goals.
pub const GOAL_N: usize = 10_000;
/// The smaller size of the linear-growth goal.
pub const GROWTH_FROM: usize = 1_000;
/// Growth counts as linear when t(10 000)/t(1 000) is at most this factor over the ideal 10: a
/// per-instance cost within 15% across a tenfold size change, which leaves room for noise but not
/// for a quadratic term.
pub const LINEAR_TOLERANCE: f64 = 1.15;

pub(crate) fn secs(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else {
        format!("{:.1} ms", s * 1e3)
    }
}

/// Small durations (per-unit costs) in µs, larger ones as [`secs`].
fn fine(d: Duration) -> String {
    if d < Duration::from_millis(1) {
        format!("{:.1} µs", d.as_secs_f64() * 1e6)
    } else {
        secs(d)
    }
}

/// An instruction count in billions.
fn giga(n: u64) -> String {
    format!("{:.3} G", n as f64 / 1e9)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn mib_kib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn per_second(count: f64, d: Duration) -> f64 {
    if d.is_zero() {
        0.0
    } else {
        count / d.as_secs_f64()
    }
}

fn thousands(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2} M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1} k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// A table with a label column and one column per size.
struct Table {
    header: Vec<String>,
    rows: Vec<(String, Vec<String>)>,
}

impl Table {
    fn new(sizes: &[SizeFigures]) -> Self {
        Table {
            header: sizes.iter().map(|s| format!("N={}", s.n)).collect(),
            rows: Vec::new(),
        }
    }

    fn row(&mut self, label: impl Into<String>, cells: Vec<String>) {
        self.rows.push((label.into(), cells));
    }

    fn render(&self, out: &mut String) {
        let label_w = self
            .rows
            .iter()
            .map(|(l, _)| l.chars().count())
            .max()
            .unwrap_or(0);
        let col_w = self
            .rows
            .iter()
            .flat_map(|(_, c)| c.iter())
            .chain(self.header.iter())
            .map(|c| c.chars().count())
            .max()
            .unwrap_or(0)
            .max(10);
        let _ = write!(out, "  {:label_w$}", "");
        for h in &self.header {
            let _ = write!(out, "  {h:>col_w$}");
        }
        out.push('\n');
        for (label, cells) in &self.rows {
            let _ = write!(out, "  {label:label_w$}");
            for c in cells {
                let _ = write!(out, "  {c:>col_w$}");
            }
            out.push('\n');
        }
    }
}

fn cells<T>(sizes: &[SizeFigures], f: impl Fn(&SizeFigures) -> T) -> Vec<String>
where
    T: Into<String>,
{
    sizes.iter().map(|s| f(s).into()).collect()
}

fn or_dash<T>(r: &Result<T, String>, f: impl Fn(&T) -> String) -> String {
    match r {
        Ok(v) => f(v),
        Err(_) => "-".into(),
    }
}

/// Mark totals that are mean × N over a sample.
fn total_cell(p: &PerProcess) -> String {
    if p.extrapolated() {
        format!("{} *", secs(p.total))
    } else {
        secs(p.total)
    }
}

fn serialisation_ratio(s: &SizeFigures, serialise: Duration) -> String {
    format!("{:.2}×", ratio(s.all.wall, serialise))
}

/// The whole text report.
pub fn text(env: &Environment, fleets: &[FleetResult], goals: &[Goal]) -> String {
    let mut out = String::new();
    let kubectl = match &env.kubectl {
        Ok(v) => v.clone(),
        Err(why) => format!("kustomize figures skipped: {why}"),
    };
    let _ = writeln!(out, "kiln-bench");
    let _ = writeln!(out, "  machine: {} cores; kiln: {}", env.cores, env.kiln);
    let _ = writeln!(out, "  kubectl: {kubectl}");
    let _ = writeln!(
        out,
        "  batch renders: best of {}; serialisation: best of {}; one app: median of {}; per-process \
         series: every unit up to N={}, above that an evenly spaced sample of {}",
        env.batch_runs, env.serialise_runs, env.small_app_runs, env.full_limit, env.sample
    );
    for f in fleets {
        out.push('\n');
        let _ = writeln!(out, "fleet {}: N × {}", f.name, f.unit);
        match &f.sizes {
            Err(why) => {
                let _ = writeln!(out, "  not available: {why}");
            }
            Ok(sizes) => fleet_table(&mut out, env, f, sizes),
        }
    }
    out.push('\n');
    let _ = writeln!(out, "goals (issues 6, 27 and 29; web-app fleet)");
    if goals.is_empty() {
        let _ = writeln!(out, "  (the web-app fleet was not run: --fleets)");
    }
    for g in goals {
        let _ = writeln!(out, "  {} {}: {}", g.status.label(), g.goal, g.detail);
    }
    let webapp = fleets.iter().find(|f| f.name == "webapp");
    for f in fleets.iter().filter(|f| f.name != "webapp") {
        out.push('\n');
        let _ = writeln!(out, "goals (issue 43; {} fleet)", f.name);
        for g in fleet_goals(f, webapp) {
            let _ = writeln!(out, "  {} {}: {}", g.status.label(), g.goal, g.detail);
        }
    }
    out
}

fn fleet_table(out: &mut String, env: &Environment, f: &FleetResult, sizes: &[SizeFigures]) {
    let mut t = Table::new(sizes);
    t.row(
        "objects (counted in output)",
        cells(sizes, |s| {
            if s.objects == s.expected_objects {
                s.objects.to_string()
            } else {
                format!("{} (expected {})", s.objects, s.expected_objects)
            }
        }),
    );
    if sizes.iter().any(|s| s.units != s.n) {
        t.row("units (one per app)", cells(sizes, |s| s.units.to_string()));
    }
    t.row("output size", cells(sizes, |s| mb(s.output_bytes)));
    t.row(
        "kiln render --jobs 1 (wall)",
        cells(sizes, |s| secs(s.jobs1.wall)),
    );
    t.row(
        format!("kiln render, all {} cores (wall)", env.cores),
        cells(sizes, |s| secs(s.all.wall)),
    );
    t.row("speedup", cells(sizes, |s| format!("{:.2}×", s.speedup())));
    t.row(
        "identical bytes, --jobs 1 vs all",
        cells(sizes, |s| if s.identical { "yes" } else { "NO" }),
    );
    t.row(
        "objects/s (all cores)",
        cells(sizes, |s| thousands(objects_per_second(s))),
    );
    t.row(
        "output MB/s (all cores)",
        cells(sizes, |s| {
            format!("{:.1}", per_second(s.output_bytes as f64 / 1e6, s.all.wall))
        }),
    );
    t.row(
        "time per unit (all cores)",
        cells(sizes, |s| fine(s.all.wall / s.units.max(1) as u32)),
    );
    if sizes.iter().any(|s| s.flux_artifact.is_ok()) {
        t.row(
            "kiln-flux build --artifact (wall)",
            cells(sizes, |s| match &s.flux_artifact {
                Ok(b) => secs(b.wall),
                Err(_) => "–".into(),
            }),
        );
        t.row(
            "  ÷ kiln render, all cores",
            cells(sizes, |s| match &s.flux_artifact {
                Ok(b) => format!("{:.2}×", ratio(b.wall, s.all.wall)),
                Err(_) => "–".into(),
            }),
        );
    }
    if sizes.iter().any(|s| s.diff.is_ok()) {
        t.row(
            "kiln diff, one instance changed (wall)",
            cells(sizes, |s| match &s.diff {
                Ok(d) => secs(d.diff.wall),
                Err(_) => "–".into(),
            }),
        );
        t.row(
            "  ÷ kiln render of the same tree",
            cells(sizes, |s| match &s.diff {
                Ok(d) => format!("{:.2}×", ratio(d.diff.wall, d.render.wall)),
                Err(_) => "–".into(),
            }),
        );
    }
    if sizes.iter().any(|s| s.kcl.is_ok()) {
        t.row(
            "KCL, kcl-lib in-process exec_program (best)",
            cells(sizes, |s| match &s.kcl {
                Ok(k) => secs(k.best),
                Err(_) => "–".into(),
            }),
        );
        t.row(
            "  KCL ÷ kiln render, all cores",
            cells(sizes, |s| match &s.kcl {
                Ok(k) => format!("{:.1}×", ratio(k.best, s.all.wall)),
                Err(_) => "–".into(),
            }),
        );
    }
    t.row(
        "growth t(N)/t(prev N) (ideal)",
        sizes
            .iter()
            .enumerate()
            .map(|(k, s)| match k.checked_sub(1).map(|p| &sizes[p]) {
                None => "-".into(),
                Some(prev) => format!(
                    "{:.2} ({:.0})",
                    ratio(s.all.wall, prev.all.wall),
                    s.n as f64 / prev.n as f64
                ),
            })
            .collect(),
    );
    t.row(
        "max RSS --jobs 1 / all cores",
        cells(sizes, |s| {
            format!(
                "{} / {}",
                mib_kib(s.jobs1.max_rss_kib),
                mib_kib(s.all.max_rss_kib)
            )
        }),
    );
    t.row(
        "in-process load (read + parse)",
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| ip.load.map_or("-".into(), secs))
        }),
    );
    // The kurel front-end's in-process stages have their own names.
    let (definitions, render) = if f.name == "kurel" {
        (
            "in-process kurel::Prepared::new alone",
            "in-process kurel::render_instances",
        )
    } else {
        (
            "in-process pipeline::definitions alone",
            "in-process request::render (read included)",
        )
    };
    t.row(
        definitions,
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| ip.definitions.map_or("-".into(), secs))
        }),
    );
    t.row(
        render,
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| ip.render.map_or("-".into(), secs))
        }),
    );
    t.row(
        "serialisation only (output::yaml_stream)",
        cells(sizes, |s| or_dash(&s.in_process, |ip| secs(ip.serialise))),
    );
    t.row(
        "serialisation only (output::saphyr_yaml)",
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| secs(ip.serialise_saphyr))
        }),
    );
    t.row(
        "render wall (all cores) ÷ yaml_stream",
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| serialisation_ratio(s, ip.serialise))
        }),
    );
    t.row(
        "render wall (all cores) ÷ saphyr_yaml",
        cells(sizes, |s| {
            or_dash(&s.in_process, |ip| {
                serialisation_ratio(s, ip.serialise_saphyr)
            })
        }),
    );
    if sizes.iter().any(|s| s.instructions.is_ok()) {
        type Show = fn(&Instructions) -> String;
        let rows: [(&str, Show); 3] = [
            ("instructions, kiln render --jobs 1 (callgrind)", |i| {
                giga(i.render)
            }),
            ("instructions, serialisation only (yaml_stream)", |i| {
                giga(i.serialise)
            }),
            ("render ÷ serialisation (instructions)", |i| {
                let mark = if i.same_bytes { "" } else { " (other bytes)" };
                format!("{:.2}×{mark}", i.ratio())
            }),
        ];
        for (label, show) in rows {
            t.row(label, cells(sizes, |s| or_dash(&s.instructions, show)));
        }
    }
    t.row(
        "kiln per app as a process, mean",
        cells(sizes, |s| or_dash(&s.per_app, |p| secs(p.stats.mean))),
    );
    t.row(
        "kiln per app, total for N",
        cells(sizes, |s| or_dash(&s.per_app, total_cell)),
    );
    t.row(
        "kubectl kustomize per overlay, mean",
        cells(sizes, |s| or_dash(&s.kustomize, |p| secs(p.stats.mean))),
    );
    t.row(
        "kubectl kustomize, total for N",
        cells(sizes, |s| or_dash(&s.kustomize, total_cell)),
    );
    t.row(
        "batch: kustomize total ÷ kiln all cores",
        cells(sizes, |s| {
            or_dash(&s.kustomize, |k| {
                format!("{:.1}×", ratio(k.total, s.all.wall))
            })
        }),
    );
    t.row(
        "per app: kustomize ÷ kiln (mean process)",
        cells(sizes, |s| match (&s.kustomize, &s.per_app) {
            (Ok(k), Ok(a)) => format!("{:.1}×", ratio(k.stats.mean, a.stats.mean)),
            _ => "-".into(),
        }),
    );
    t.render(out);

    // Notes: what the table could not say in a cell.
    if sizes.iter().any(|s| {
        matches!((&s.per_app, &s.kustomize), (Ok(p), _) if p.extrapolated())
            || matches!(&s.kustomize, Ok(k) if k.extrapolated())
    }) {
        let _ = writeln!(
            out,
            "  * extrapolated: mean of an evenly spaced sample of {} processes × N",
            env.sample
        );
    }
    let _ = writeln!(
        out,
        "  render wall ÷ serialisation uses the process wall time with all cores (start-up, read, \
         parse, render, serialise, write) over in-process serialisation of the same objects, one \
         thread: yaml_stream is kiln's direct emitter, saphyr_yaml serde-saphyr alone (the \
         library path); the goal is computed against yaml_stream"
    );
    for s in sizes {
        if let Ok(ip) = &s.in_process {
            if !ip.same_bytes {
                let _ = writeln!(
                    out,
                    "  N={}: in-process serialisation differs from kiln's output bytes",
                    s.n
                );
            }
            if !ip.saphyr_same_bytes {
                let _ = writeln!(
                    out,
                    "  N={}: serde-saphyr's bytes differ from yaml_stream's (the direct emitter \
                     should write exactly what serde-saphyr writes)",
                    s.n
                );
            }
        }
        if let Ok(k) = &s.kcl {
            if k.objects != s.expected_objects {
                let _ = writeln!(
                    out,
                    "  N={}: KCL wrote {} objects, the fleet expects {}",
                    s.n, k.objects, s.expected_objects
                );
            }
        }
        for (what, r) in [
            ("in-process", s.in_process.as_ref().err()),
            ("KCL", s.kcl.as_ref().err()),
            ("kiln per app", s.per_app.as_ref().err()),
            ("kustomize", s.kustomize.as_ref().err()),
        ] {
            if let Some(why) = r {
                let _ = writeln!(out, "  N={}: {what} not available: {why}", s.n);
            }
        }
        for (what, p) in [("kiln", &s.per_app), ("kustomize", &s.kustomize)] {
            if let Ok(PerProcess {
                first_objects: Some((got, want)),
                ..
            }) = p
            {
                if got != want {
                    let _ = writeln!(
                        out,
                        "  N={}: {what} wrote {got} objects for app 0, the fleet expects {want}",
                        s.n
                    );
                }
            }
        }
    }
    match &f.small_app {
        Some(Ok((st, objects))) => {
            let _ = writeln!(
                out,
                "  one app end to end as a process ({objects} objects): median {}, p90 {}, min {} \
                 over {} runs",
                secs(st.median),
                secs(st.p90),
                secs(st.min),
                st.n
            );
        }
        Some(Err(why)) => {
            let _ = writeln!(out, "  one app end to end: not available: {why}");
        }
        None => {}
    }
}

pub(crate) fn goal(goal: &'static str, status: Status, detail: impl Into<String>) -> Goal {
    Goal {
        goal,
        status,
        detail: detail.into(),
    }
}

/// `at least` goal: PASS when `got >= want`, else the factor still missing.
fn at_least(name: &'static str, got: f64, want: f64, what: &str) -> Goal {
    if got >= want {
        goal(name, Status::Pass, format!("{got:.2}× {what}"))
    } else {
        goal(
            name,
            Status::Miss,
            format!(
                "{got:.2}× {what}, goal {want}×: missed by a factor of {:.2}",
                want / got.max(f64::MIN_POSITIVE)
            ),
        )
    }
}

/// `at most` goal: PASS when under, else by how much over. `show` formats the figure; `excess`
/// says whether "N over" reads sensibly for it (a duration or size: yes; a ratio: no).
pub(crate) fn at_most(
    name: &'static str,
    got: f64,
    limit: f64,
    excess: bool,
    show: impl Fn(f64) -> String,
) -> Goal {
    if got < limit {
        return goal(name, Status::Pass, show(got));
    }
    let over = if excess {
        format!("{} over, ", show(got - limit))
    } else {
        String::new()
    };
    goal(
        name,
        Status::Miss,
        format!("{}: {over}{:.2}× the limit", show(got), got / limit),
    )
}

/// Evaluate the goals of issue 6 on the web-app fleet's figures.
pub fn goals(webapp: &FleetResult) -> Vec<Goal> {
    const G_WALL: &str = "10 000 instances in under 1 s wall (all cores)";
    const G_SPEEDUP: &str = "parallel speedup ≥ 1.8× over --jobs 1 at 10 000 (issue 29)";
    const G_SERIAL: &str =
        "render within 2× of the serialisation bound over kiln's own output bytes (issue 29)";
    const G_BATCH: &str = "≥ 20× faster than kubectl kustomize in batch";
    const G_APP: &str = "≥ 5× faster than kubectl kustomize per app as a process";
    const G_SMALL: &str = "a small app as a process in under 5 ms, median (issue 29)";
    const G_LINEAR: &str = "linear growth from 1 000 to 10 000";
    const G_MEM: &str = "peak memory for 10 000 instances ≤ 128 MiB with provenance on (issue 29)";
    const G_KCL: &str = "≥ 20× faster than KCL at every fleet size from 400 to 10 000 (issue 29)";
    const G_FLUX: &str = "kiln-flux build --artifact within 1.3× of kiln render (issue 16)";
    let all = [
        G_WALL, G_SPEEDUP, G_SERIAL, G_BATCH, G_APP, G_SMALL, G_LINEAR, G_MEM, G_KCL, G_FLUX,
    ];
    let sizes = match &webapp.sizes {
        Ok(s) if !s.is_empty() => s,
        Ok(_) => {
            return all
                .iter()
                .map(|g| goal(g, Status::Skip, "no sizes"))
                .collect()
        }
        Err(why) => {
            return all
                .iter()
                .map(|g| {
                    goal(
                        g,
                        Status::Skip,
                        format!("web-app fleet not available: {why}"),
                    )
                })
                .collect()
        }
    };
    let at = |n: usize| sizes.iter().find(|s| s.n == n);
    let largest = sizes.iter().max_by_key(|s| s.n).expect("non-empty");
    let no_goal_n = || format!("N={GOAL_N} not in --sizes");
    let mut out = Vec::new();

    out.push(match at(GOAL_N) {
        Some(s) => at_most(G_WALL, s.all.wall.as_secs_f64(), 1.0, true, |v| {
            format!("{v:.2} s")
        }),
        None => goal(G_WALL, Status::Skip, no_goal_n()),
    });
    out.push(speedup_goal(G_SPEEDUP, at(GOAL_N)));
    out.push(serialisation_goal(G_SERIAL, largest));
    // Kustomize goals: at the largest size where kustomize ran.
    let with_kust = sizes
        .iter()
        .filter(|s| s.kustomize.is_ok())
        .max_by_key(|s| s.n);
    match with_kust {
        Some(s) => {
            let k = s.kustomize.as_ref().expect("filtered");
            let sampled = if k.extrapolated() {
                format!(", kustomize total extrapolated from {} overlays", k.sampled)
            } else {
                String::new()
            };
            let g = at_least(G_BATCH, ratio(k.total, s.all.wall), 20.0, "faster");
            out.push(Goal {
                detail: format!("{} at N={}{sampled}", g.detail, s.n),
                ..g
            });
            match &s.per_app {
                Ok(a) => {
                    let g = at_least(G_APP, ratio(k.stats.mean, a.stats.mean), 5.0, "faster");
                    out.push(Goal {
                        detail: format!(
                            "{} (mean {} vs {} per process)",
                            g.detail,
                            secs(a.stats.mean),
                            secs(k.stats.mean)
                        ),
                        ..g
                    });
                }
                Err(why) => out.push(goal(G_APP, Status::Skip, why.clone())),
            }
        }
        None => {
            let why = sizes
                .iter()
                .find_map(|s| s.kustomize.as_ref().err().cloned())
                .unwrap_or_default();
            out.push(goal(G_BATCH, Status::Skip, why.clone()));
            out.push(goal(G_APP, Status::Skip, why));
        }
    }
    out.push(match &webapp.small_app {
        Some(Ok((st, _))) => at_most(G_SMALL, st.median.as_secs_f64() * 1e3, 5.0, true, |v| {
            format!("{v:.1} ms")
        }),
        Some(Err(why)) => goal(G_SMALL, Status::Skip, why.clone()),
        None => goal(G_SMALL, Status::Skip, "not measured"),
    });
    out.push(linear_goal(G_LINEAR, sizes));
    out.push(memory_goal(G_MEM, at(GOAL_N)));
    out.push(kcl_goal(G_KCL, sizes));
    const G_DIFF: &str = "kiln diff within 2.5× of one render (issue 27)";
    const G_DIFF_WALL: &str = "kiln diff of 10 000 instances in under 1 s (issue 27)";
    out.push(diff_goal(G_DIFF, webapp));
    out.push(match at(GOAL_N).map(|s| &s.diff) {
        Some(Ok(d)) => at_most(G_DIFF_WALL, d.diff.wall.as_secs_f64(), 1.0, true, |v| {
            format!("{v:.3} s")
        }),
        Some(Err(why)) => goal(G_DIFF_WALL, Status::Skip, why.clone()),
        None => goal(G_DIFF_WALL, Status::Skip, no_goal_n()),
    });
    out.push(match at(GOAL_N).map(|s| (s, &s.flux_artifact)) {
        Some((s, Ok(b))) => at_most(G_FLUX, ratio(b.wall, s.all.wall), 1.3, false, |v| {
            format!("{v:.2}× ({} vs {})", secs(b.wall), secs(s.all.wall))
        }),
        Some((_, Err(why))) => goal(G_FLUX, Status::Skip, why.clone()),
        None => goal(G_FLUX, Status::Skip, no_goal_n()),
    });
    out
}

/// Parallel speedup at N = 10 000.
fn speedup_goal(name: &'static str, at: Option<&SizeFigures>) -> Goal {
    match at {
        Some(s) => at_least(name, s.speedup(), 1.8, "speedup"),
        None => goal(name, Status::Skip, format!("N={GOAL_N} not in --sizes")),
    }
}

/// Render wall over the serialisation bound at the largest size.
fn serialisation_goal(name: &'static str, largest: &SizeFigures) -> Goal {
    match &largest.in_process {
        // A bound timed on other bytes than kiln wrote bounds nothing.
        Ok(ip) if !ip.same_bytes => goal(
            name,
            Status::Skip,
            format!(
                "at N={}: the in-process serialisation differs from kiln's output bytes",
                largest.n
            ),
        ),
        Ok(ip) => {
            let r = ratio(largest.all.wall, ip.serialise);
            let g = at_most(name, r, 2.0, false, |v| format!("{v:.2}×"));
            Goal {
                detail: format!("{} at N={}", g.detail, largest.n),
                ..g
            }
        }
        Err(why) => goal(name, Status::Skip, why.clone()),
    }
}

/// t(10 000) ÷ t(1 000) against the ideal 10, with [`LINEAR_TOLERANCE`].
fn linear_goal(name: &'static str, sizes: &[SizeFigures]) -> Goal {
    let at = |n: usize| sizes.iter().find(|s| s.n == n);
    let (Some(a), Some(b)) = (at(GROWTH_FROM), at(GOAL_N)) else {
        return goal(
            name,
            Status::Skip,
            format!("needs N={GROWTH_FROM} and N={GOAL_N} in --sizes"),
        );
    };
    let r = ratio(b.all.wall, a.all.wall);
    let ideal = GOAL_N as f64 / GROWTH_FROM as f64;
    let limit = ideal * LINEAR_TOLERANCE;
    if r <= limit {
        goal(
            name,
            Status::Pass,
            format!("t(10 000)/t(1 000) = {r:.2} (ideal {ideal:.0}, limit {limit:.1})"),
        )
    } else {
        goal(
            name,
            Status::Miss,
            format!(
                "t(10 000)/t(1 000) = {r:.2} (ideal {ideal:.0}, limit {limit:.1}): \
                 {:.0}% more time per instance at 10 000",
                (r / ideal - 1.0) * 100.0
            ),
        )
    }
}

/// Largest peak RSS of the N = 10 000 batch runs, at most 128 MiB.
fn memory_goal(name: &'static str, at: Option<&SizeFigures>) -> Goal {
    let Some(s) = at else {
        return goal(name, Status::Skip, format!("N={GOAL_N} not in --sizes"));
    };
    let mib = s.all.max_rss_kib.max(s.jobs1.max_rss_kib) as f64 / 1024.0;
    if mib <= 128.0 {
        goal(name, Status::Pass, format!("{mib:.0} MiB"))
    } else {
        at_most(name, mib, 128.0, true, |v| format!("{v:.0} MiB"))
    }
}

/// `kiln diff` with one unit changed over one render of the same tree, at the largest size
/// where it was measured.
fn diff_goal(name: &'static str, fleet: &FleetResult) -> Goal {
    let sizes = fleet.sizes.as_ref().ok();
    match sizes.and_then(|v| {
        v.iter()
            .rev()
            .find_map(|s| Some((s, s.diff.as_ref().ok()?)))
    }) {
        Some((s, d)) => at_most(name, ratio(d.diff.wall, d.render.wall), 2.5, false, |v| {
            format!(
                "{v:.2}× at N={} ({} vs {}; {})",
                s.n,
                secs(d.diff.wall),
                secs(d.render.wall),
                d.summary
            )
        }),
        None => goal(
            name,
            Status::Skip,
            sizes
                .and_then(|v| v.iter().find_map(|s| s.diff.as_ref().err().cloned()))
                .unwrap_or_else(|| "no size measured".into()),
        ),
    }
}

/// Objects per second (all cores) of `s`.
fn objects_per_second(s: &SizeFigures) -> f64 {
    per_second(s.objects as f64, s.all.wall)
}

/// The goals of issue 43 for a fleet other than the web-app one (the component and kurel
/// fleets), each computed from figures of the same run; objects per second are compared with the
/// web-app fleet's at the largest size both ran.
pub fn fleet_goals(f: &FleetResult, webapp: Option<&FleetResult>) -> Vec<Goal> {
    const G_SERIAL: &str =
        "render within 2× of the serialisation bound over kiln's own output bytes (issue 43)";
    const G_SPEEDUP: &str = "parallel speedup ≥ 1.8× over --jobs 1 at 10 000 (issue 43)";
    const G_MEM: &str = "peak memory at 10 000 ≤ 128 MiB with provenance on (issue 43)";
    const G_LINEAR: &str = "linear growth from 1 000 to 10 000 (issue 43)";
    const G_RATE: &str =
        "objects/s (all cores) at least half the web-app fleet's at the same N (issue 43)";
    const G_DIFF: &str = "kiln diff with one unit changed within 2.5× of one render (issue 43)";
    let sizes = match &f.sizes {
        Ok(s) if !s.is_empty() => s,
        other => {
            let why = match other {
                Err(why) => format!("{} fleet not available: {why}", f.name),
                Ok(_) => "no sizes".into(),
            };
            return [G_SERIAL, G_SPEEDUP, G_MEM, G_LINEAR, G_RATE, G_DIFF]
                .iter()
                .map(|g| goal(g, Status::Skip, why.clone()))
                .collect();
        }
    };
    let at = |n: usize| sizes.iter().find(|s| s.n == n);
    let largest = sizes.iter().max_by_key(|s| s.n).expect("non-empty");
    let kro = webapp
        .and_then(|w| w.sizes.as_ref().ok())
        .into_iter()
        .flatten();
    let rate = match kro
        .filter_map(|k| Some((at(k.n)?, k)))
        .max_by_key(|(s, _)| s.n)
    {
        Some((s, k)) => {
            let (mine, theirs) = (objects_per_second(s), objects_per_second(k));
            let r = mine / theirs.max(f64::MIN_POSITIVE);
            let shown = format!(
                "{r:.2}× the web-app fleet's at N={} ({} vs {} objects/s)",
                s.n,
                thousands(mine),
                thousands(theirs)
            );
            if r >= 0.5 {
                goal(G_RATE, Status::Pass, shown)
            } else {
                goal(
                    G_RATE,
                    Status::Miss,
                    format!("{shown}, goal 0.5×: missed by a factor of {:.2}", 0.5 / r),
                )
            }
        }
        None => goal(
            G_RATE,
            Status::Skip,
            "the web-app fleet did not run at a size of this fleet",
        ),
    };
    vec![
        serialisation_goal(G_SERIAL, largest),
        speedup_goal(G_SPEEDUP, at(GOAL_N)),
        memory_goal(G_MEM, at(GOAL_N)),
        linear_goal(G_LINEAR, sizes),
        rate,
        diff_goal(G_DIFF, f),
    ]
}

/// KCL's in-process time over kiln's all-cores process wall, at every size from 400 to 10 000
/// that ran: PASS only when every one of them is at least 20×.
fn kcl_goal(name: &'static str, sizes: &[SizeFigures]) -> Goal {
    let in_range: Vec<&SizeFigures> = sizes
        .iter()
        .filter(|s| (400..=GOAL_N).contains(&s.n))
        .collect();
    if in_range.is_empty() {
        return goal(name, Status::Skip, "no size from 400 to 10 000 in --sizes");
    }
    let mut parts = Vec::new();
    let mut worst = f64::INFINITY;
    for s in &in_range {
        match &s.kcl {
            Ok(k) => {
                let r = ratio(k.best, s.all.wall);
                worst = worst.min(r);
                parts.push(format!("{r:.1}× at N={}", s.n));
            }
            Err(why) => return goal(name, Status::Skip, format!("N={}: {why}", s.n)),
        }
    }
    let g = at_least(name, worst, 20.0, "faster at the worst size");
    Goal {
        detail: format!("{} ({})", g.detail, parts.join(", ")),
        ..g
    }
}

fn dur(d: Duration) -> Value {
    json!(d.as_secs_f64())
}

fn per_process_json(r: &Result<PerProcess, String>) -> Value {
    match r {
        Err(why) => json!({"available": false, "reason": why}),
        Ok(p) => json!({
            "available": true,
            "processes": p.sampled,
            "of": p.of,
            "extrapolated": p.extrapolated(),
            "mean_s": dur(p.stats.mean),
            "median_s": dur(p.stats.median),
            "p90_s": dur(p.stats.p90),
            "min_s": dur(p.stats.min),
            "total_s": dur(p.total),
            "max_rss_kib": p.max_rss_kib,
        }),
    }
}

fn size_json(s: &SizeFigures) -> Value {
    let in_process = match &s.in_process {
        Err(why) => json!({"available": false, "reason": why}),
        Ok(ip) => json!({
            "available": true,
            "load_s": ip.load.map(dur),
            "definitions_s": ip.definitions.map(dur),
            "render_s": ip.render.map(dur),
            "serialise_s": dur(ip.serialise),
            "serialise_saphyr_s": dur(ip.serialise_saphyr),
            "same_bytes_as_kiln": ip.same_bytes,
            "saphyr_same_bytes": ip.saphyr_same_bytes,
            "render_wall_over_serialise": ratio(s.all.wall, ip.serialise),
            "render_wall_over_serialise_saphyr": ratio(s.all.wall, ip.serialise_saphyr),
        }),
    };
    let kust_ratios = match (&s.kustomize, &s.per_app) {
        (Ok(k), Ok(a)) => json!({
            "batch_kustomize_total_over_kiln_all_cores": ratio(k.total, s.all.wall),
            "per_app_kustomize_over_kiln": ratio(k.stats.mean, a.stats.mean),
        }),
        _ => Value::Null,
    };
    json!({
        "n": s.n,
        "objects": s.objects,
        "expected_objects": s.expected_objects,
        "output_bytes": s.output_bytes,
        "jobs1": {"best_s": dur(s.jobs1.wall), "runs_s": s.jobs1.walls.iter().map(|d| dur(*d)).collect::<Vec<_>>(), "max_rss_kib": s.jobs1.max_rss_kib},
        "all_cores": {"best_s": dur(s.all.wall), "runs_s": s.all.walls.iter().map(|d| dur(*d)).collect::<Vec<_>>(), "max_rss_kib": s.all.max_rss_kib},
        "speedup": s.speedup(),
        "identical_output": s.identical,
        "objects_per_s": per_second(s.objects as f64, s.all.wall),
        "output_mb_per_s": per_second(s.output_bytes as f64 / 1e6, s.all.wall),
        "units": s.units,
        "seconds_per_unit": s.all.wall.as_secs_f64() / s.units.max(1) as f64,
        "in_process": in_process,
        "kiln_per_app": per_process_json(&s.per_app),
        "kustomize_per_overlay": per_process_json(&s.kustomize),
        "ratios": kust_ratios,
        "diff": match &s.diff {
            Ok(d) => json!({"best_s": dur(d.diff.wall), "render_best_s": dur(d.render.wall), "over_render": ratio(d.diff.wall, d.render.wall), "max_rss_kib": d.diff.max_rss_kib, "summary": d.summary}),
            Err(why) => json!({"skipped": why}),
        },
        "kcl": match &s.kcl {
            Ok(k) => json!({"best_s": dur(k.best), "runs_s": k.runs.iter().map(|d| dur(*d)).collect::<Vec<_>>(), "objects": k.objects, "bytes": k.bytes, "over_kiln_all_cores": ratio(k.best, s.all.wall)}),
            Err(why) => json!({"skipped": why}),
        },
        "instructions": match &s.instructions {
            Ok(i) => json!({"render_jobs1": i.render, "serialise_yaml_stream": i.serialise, "render_over_serialise": i.ratio(), "same_bytes_as_kiln": i.same_bytes}),
            Err(why) => json!({"skipped": why}),
        },
        "flux_artifact": match &s.flux_artifact {
            Ok(b) => json!({"best_s": dur(b.wall), "runs_s": b.walls.iter().map(|d| dur(*d)).collect::<Vec<_>>(), "max_rss_kib": b.max_rss_kib, "over_kiln_all_cores": ratio(b.wall, s.all.wall)}),
            Err(why) => json!({"skipped": why}),
        },
    })
}

/// The figures as JSON.
pub fn json(env: &Environment, fleets: &[FleetResult], goals: &[Goal]) -> Value {
    let webapp = fleets.iter().find(|f| f.name == "webapp");
    let per_fleet_goals: Vec<Value> = fleets
        .iter()
        .filter(|f| f.name != "webapp")
        .map(|f| {
            let goals: Vec<Value> = fleet_goals(f, webapp).iter().map(goal_json).collect();
            json!({"fleet": f.name, "goals": goals})
        })
        .collect();
    let fleets: Vec<Value> = fleets
        .iter()
        .map(|f| {
            let sizes = match &f.sizes {
                Ok(s) => {
                    json!({"available": true, "sizes": s.iter().map(size_json).collect::<Vec<_>>()})
                }
                Err(why) => json!({"available": false, "reason": why}),
            };
            let small = match &f.small_app {
                Some(Ok((st, objects))) => json!({
                    "objects": objects, "runs": st.n, "median_s": dur(st.median),
                    "p90_s": dur(st.p90), "min_s": dur(st.min),
                }),
                Some(Err(why)) => json!({"available": false, "reason": why}),
                None => Value::Null,
            };
            json!({"fleet": f.name, "unit": f.unit, "results": sizes, "small_app": small})
        })
        .collect();
    json!({
        "environment": {
            "cores": env.cores,
            "kiln": env.kiln,
            "kubectl": env.kubectl.as_ref().ok(),
            "kustomize_skipped": env.kubectl.as_ref().err(),
            "batch_runs": env.batch_runs,
            "serialise_runs": env.serialise_runs,
            "small_app_runs": env.small_app_runs,
            "full_limit": env.full_limit,
            "sample": env.sample,
        },
        "fleets": fleets,
        "goals": goals.iter().map(goal_json).collect::<Vec<_>>(),
        "fleet_goals": per_fleet_goals,
    })
}

fn goal_json(g: &Goal) -> Value {
    json!({"goal": g.goal, "status": g.status.label(), "detail": g.detail})
}
