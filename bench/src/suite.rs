//! What is measured for each fleet and size, in which order, and with how many repetitions.
//!
//! For each size N of a fleet: the batch render (`--jobs 1` and all cores, interleaved so a
//! background load hits both alike), the same render in-process through `kiln_core` with the
//! serialisation alone timed on its objects, `kiln` once per app, and `kubectl kustomize` once per
//! overlay. Per-process series above `full_limit` units run on an evenly spaced sample and are
//! extrapolated to N; the figures say so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::kurel;
use kiln_core::output;
use kiln_core::pipeline;
use kiln_core::request;
use kiln_core::source::{load_inputs, Input, Root};
use serde_json::Value;

use crate::fleet::{self, Fleet, Generated, InProcess, Invocation};
use crate::instructions::{self, Instructions};
use crate::kcl::{self, KclFigures};
use crate::measure::{self, ProcRun, Stats};

/// How the run is set up.
#[derive(Debug, Clone)]
pub struct Config {
    /// Fleet sizes, ascending.
    pub sizes: Vec<usize>,
    /// The `kiln` binary.
    pub kiln: PathBuf,
    /// `kubectl`, or why the kustomize figures are skipped.
    pub kubectl: Result<PathBuf, String>,
    /// `kiln-flux`, or why its figures are skipped.
    pub kiln_flux: Result<PathBuf, String>,
    /// Where fleets are generated.
    pub scratch: PathBuf,
    /// Repetitions of each batch render (the best is reported).
    pub batch_runs: usize,
    /// Repetitions of the in-process serialisation (the best is reported).
    pub serialise_runs: usize,
    /// Runs of the one-app latency measurement (the median is reported).
    pub small_app_runs: usize,
    /// Per-process series run every unit up to this N, and a sample above it.
    pub full_limit: usize,
    /// Sample size of per-process series above `full_limit`.
    pub sample: usize,
    /// The python of `kcl-lib`'s virtual environment (`scripts/kcl.sh`), or why the KCL figures
    /// are skipped.
    pub kcl: Result<PathBuf, String>,
    /// The workspace root (where `bench/kcl/` is).
    pub root: PathBuf,
    /// Count instructions with callgrind (`--instructions`).
    pub instructions: bool,
}

/// The best of repeated batch renders.
#[derive(Debug, Clone)]
pub struct Batch {
    /// Fastest wall time (summed over the fleet's invocations).
    pub wall: Duration,
    /// Largest peak RSS of any of its processes, in KiB.
    pub max_rss_kib: u64,
    /// Every run's wall time, for the JSON.
    pub walls: Vec<Duration>,
}

/// The in-process stages of the same render.
#[derive(Debug, Clone)]
pub struct InProcessFigures {
    /// Reading and parsing the inputs (`source::load_inputs`; for a kurel fleet `kurel::load`
    /// and the instance files), or `None` when the objects were obtained by parsing kiln's
    /// output (front-ends without an in-process entry point).
    pub load: Option<Duration>,
    /// `pipeline::definitions` alone (loading and compiling the definitions, part of `render`),
    /// or for a kurel fleet `kurel::Prepared::new` (the instance-independent part): the fixed
    /// cost every process pays before its first unit. `None` as above.
    pub definitions: Option<Duration>,
    /// `pipeline::render` (for a kurel fleet `Prepared::new` + `kurel::render_instances`), or
    /// `None` as above.
    pub render: Option<Duration>,
    /// `output::yaml_stream` on the objects alone: the serialisation bound (best of runs).
    pub serialise: Duration,
    /// `output::saphyr_yaml` (serde-saphyr alone, the library path) on the same objects, joined
    /// as `yaml_stream` joins them (best of runs).
    pub serialise_saphyr: Duration,
    /// Whether the serialised bytes equal `kiln render`'s output, i.e. the bound is timed on
    /// exactly the objects the process wrote.
    pub same_bytes: bool,
    /// Whether serde-saphyr wrote the same bytes as `yaml_stream` (the direct emitter promises
    /// it).
    pub saphyr_same_bytes: bool,
}

/// A per-process series (one process per app or per overlay).
#[derive(Debug, Clone)]
pub struct PerProcess {
    /// Statistics over the processes run.
    pub stats: Stats,
    /// Processes run.
    pub sampled: usize,
    /// Units in the fleet.
    pub of: usize,
    /// Total for the whole fleet: measured when every unit ran, else mean × N.
    pub total: Duration,
    /// Largest peak RSS seen, KiB.
    pub max_rss_kib: u64,
    /// Objects the first process wrote vs the objects the fleet expects of that unit, when
    /// counted (a check that the compared tools do the same work).
    pub first_objects: Option<(usize, usize)>,
}

impl PerProcess {
    /// Whether the total is extrapolated from a sample.
    pub fn extrapolated(&self) -> bool {
        self.sampled < self.of
    }
}

/// Everything measured for one fleet at one size.
#[derive(Debug, Clone)]
pub struct SizeFigures {
    /// The size asked for (the table's column).
    pub n: usize,
    /// Units rendered (one per app; more than `n` when a unit is e.g. a component in one of two
    /// environments).
    pub units: usize,
    /// Objects counted in the output.
    pub objects: usize,
    /// Objects the generator expects.
    pub expected_objects: usize,
    /// Bytes of the output.
    pub output_bytes: u64,
    /// `--jobs 1`.
    pub jobs1: Batch,
    /// All cores (kiln's default).
    pub all: Batch,
    /// Whether both wrote identical bytes.
    pub identical: bool,
    /// In-process stages and the serialisation bound.
    pub in_process: Result<InProcessFigures, String>,
    /// `kiln` once per app.
    pub per_app: Result<PerProcess, String>,
    /// `kubectl kustomize` once per overlay.
    pub kustomize: Result<PerProcess, String>,
    /// `kiln-flux build DIR --artifact FILE` of the same tree (fleets rendered from one
    /// directory), interleaved with the all-cores render.
    pub flux_artifact: Result<Batch, String>,
    /// `kiln diff TREE` with one instance changed in the working tree of a git repository
    /// holding the fleet, interleaved with `kiln render TREE` of the same tree.
    pub diff: Result<DiffFigures, String>,
    /// The same instances rendered by KCL (`bench/kcl/webapp.k`) in-process through `kcl-lib`
    /// (web-app fleet only).
    pub kcl: Result<KclFigures, String>,
    /// Instructions of the render (`--jobs 1`) and of the serialisation alone (`--instructions`).
    pub instructions: Result<Instructions, String>,
}

/// `kiln diff` against `kiln render` of the same tree, measured in the same run.
#[derive(Debug, Clone)]
pub struct DiffFigures {
    /// `kiln diff TREE` (HEAD against the working tree, one instance changed).
    pub diff: Batch,
    /// `kiln render TREE`, all cores, interleaved with the diff runs.
    pub render: Batch,
    /// The diff's summary line (`N changed, N added, N removed, N unchanged`).
    pub summary: String,
}

impl SizeFigures {
    /// Speedup of all cores over one.
    pub fn speedup(&self) -> f64 {
        ratio(self.jobs1.wall, self.all.wall)
    }
}

/// One fleet's results.
#[derive(Debug, Clone)]
pub struct FleetResult {
    /// Fleet name.
    pub name: &'static str,
    /// What a unit is.
    pub unit: String,
    /// Per size, or why the fleet is not available (generator or front-end missing).
    pub sizes: Result<Vec<SizeFigures>, String>,
    /// The latency of one app as a process, with its object count.
    pub small_app: Option<Result<(Stats, usize), String>>,
}

/// `a / b` as a float, 0 when `b` is zero.
pub fn ratio(a: Duration, b: Duration) -> f64 {
    if b.is_zero() {
        0.0
    } else {
        a.as_secs_f64() / b.as_secs_f64()
    }
}

fn log(msg: impl AsRef<str>) {
    eprintln!("kiln-bench: {}", msg.as_ref());
}

/// Measure one fleet at every size.
pub fn run_fleet(cfg: &Config, fleet: &dyn Fleet) -> FleetResult {
    let mut result = FleetResult {
        name: fleet.name(),
        unit: fleet.unit(),
        sizes: Ok(Vec::new()),
        small_app: None,
    };
    let mut sizes = Vec::new();
    for &n in &cfg.sizes {
        let dir = fleet::fleet_dir(&cfg.scratch, fleet.name(), n);
        let generated = match prepare(fleet, n, &dir) {
            Ok(g) => g,
            Err(reason) => {
                result.sizes = Err(reason);
                return result;
            }
        };
        match measure_size(cfg, fleet.name(), n, &dir, &generated) {
            Ok(f) => sizes.push(f),
            Err(reason) => {
                result.sizes = Err(reason);
                return result;
            }
        }
        if result.small_app.is_none() {
            result.small_app = Some(small_app(cfg, &dir, &generated));
        }
    }
    result.sizes = Ok(sizes);
    result
}

/// Generate the fleet and write it to a fresh directory.
fn prepare(fleet: &dyn Fleet, n: usize, dir: &Path) -> Result<Generated, String> {
    let start = Instant::now();
    let g = fleet.generate(n)?;
    if dir.exists() {
        // Only the fleet's own directory under the scratch dir: stale files from a larger or
        // older fleet would otherwise be rendered too.
        std::fs::remove_dir_all(dir).map_err(|e| format!("cannot clear {}: {e}", dir.display()))?;
    }
    g.write(dir)?;
    log(format!(
        "{} N={n}: generated {} files in {:.1} s under {}",
        fleet.name(),
        g.files.len() + g.kustomize.as_ref().map_or(0, |k| k.files.len()),
        start.elapsed().as_secs_f64(),
        dir.display()
    ));
    Ok(g)
}

fn kiln_cmd(cfg: &Config, dir: &Path, args: &[String], jobs: Option<usize>) -> Command {
    let mut c = Command::new(&cfg.kiln);
    c.current_dir(dir).args(args);
    if let Some(j) = jobs {
        c.arg("--jobs").arg(j.to_string());
    }
    c
}

/// Render the whole fleet once per invocation; returns the summed wall and max RSS.
fn batch_once(
    cfg: &Config,
    dir: &Path,
    batch: &[Invocation],
    jobs: Option<usize>,
    out_prefix: &str,
) -> Result<(Duration, u64, Vec<PathBuf>), String> {
    let mut wall = Duration::ZERO;
    let mut rss = 0;
    let mut outs = Vec::new();
    for (k, inv) in batch.iter().enumerate() {
        let out = dir.join(format!("{out_prefix}-{k}.yaml"));
        let r = measure::run(
            &mut kiln_cmd(cfg, dir, &inv.args, jobs),
            measure::Sink::File(&out),
        )?;
        if !r.success() {
            return Err(format!(
                "kiln {} failed ({})",
                inv.args.join(" "),
                r.reason()
            ));
        }
        wall += r.wall;
        rss = rss.max(r.max_rss_kib);
        outs.push(out);
    }
    Ok((wall, rss, outs))
}

fn read_outputs(paths: &[PathBuf]) -> Result<Vec<u8>, String> {
    let mut all = Vec::new();
    for p in paths {
        all.extend(std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?);
    }
    Ok(all)
}

/// Documents in a `---`-separated YAML stream as kiln writes it (separators at column 0; block
/// scalars are indented, so they cannot contain one).
pub fn count_documents(yaml: &[u8]) -> usize {
    if yaml.iter().all(u8::is_ascii_whitespace) {
        return 0;
    }
    1 + yaml.split(|&b| b == b'\n').filter(|l| *l == b"---").count()
}

fn measure_size(
    cfg: &Config,
    fleet_name: &str,
    n: usize,
    dir: &Path,
    g: &Generated,
) -> Result<SizeFigures, String> {
    // Units can outnumber N (a component in two environments is two units).
    let units = g.apps.len();
    log(format!(
        "N={n}: kiln render, --jobs 1 and all cores, {} run(s) each",
        cfg.batch_runs
    ));
    let mut jobs1 = Batch {
        wall: Duration::MAX,
        max_rss_kib: 0,
        walls: Vec::new(),
    };
    let mut all = jobs1.clone();
    let (mut out1, mut out_all) = (Vec::new(), Vec::new());
    // A fleet rendered as one directory (`kiln render DIR`) is also built in place as a Flux
    // artifact.
    let flux_tree = match g.batch.as_slice() {
        [inv] if inv.args.len() == 2 && inv.args[0] == "render" => Some(inv.args[1].as_str()),
        _ => None,
    };
    let mut flux_artifact = match (&cfg.kiln_flux, flux_tree) {
        (Err(why), _) => Err(format!("skipped: {why}")),
        (Ok(_), None) => Err("the fleet is not rendered from one directory".into()),
        (Ok(_), Some(_)) => Ok(Batch {
            wall: Duration::MAX,
            max_rss_kib: 0,
            walls: Vec::new(),
        }),
    };
    for _ in 0..cfg.batch_runs.max(1) {
        for (jobs, b, outs) in [
            (Some(1), &mut jobs1, &mut out1),
            (None, &mut all, &mut out_all),
        ] {
            let prefix = if jobs.is_some() {
                "out-jobs1"
            } else {
                "out-all"
            };
            let (wall, rss, o) = batch_once(cfg, dir, &g.batch, jobs, prefix)?;
            b.wall = b.wall.min(wall);
            b.max_rss_kib = b.max_rss_kib.max(rss);
            b.walls.push(wall);
            *outs = o;
        }
        if let (Ok(fb), Some(tree)) = (&mut flux_artifact, flux_tree) {
            match flux_once(cfg, dir, tree) {
                Ok((wall, rss)) => {
                    fb.wall = fb.wall.min(wall);
                    fb.max_rss_kib = fb.max_rss_kib.max(rss);
                    fb.walls.push(wall);
                }
                Err(why) => flux_artifact = Err(why),
            }
        }
    }
    // The first process of the batch (one environment of the component fleet), as a diff.
    let diff = match g.batch.first().map(|b| b.args.as_slice()) {
        Some([render, args @ ..]) if render == "render" && !args.is_empty() => {
            log(format!(
                "N={n}: kiln diff (one unit changed) and kiln render of the same inputs, {} run(s) each",
                cfg.batch_runs
            ));
            diff_figures(cfg, dir, args, g)
        }
        _ => Err("the fleet has no batch render to compare with".into()),
    };
    let kcl = match (&cfg.kcl, fleet_name) {
        (Err(why), _) => Err(format!("skipped: {why}")),
        (Ok(python), "webapp") => {
            log(format!(
                "N={n}: KCL (kcl-lib, in-process), best of {}",
                cfg.batch_runs
            ));
            let apps = format!("{}/apps", fleet::WEBAPP_DIR);
            kcl::measure(python, &cfg.root, dir, &apps, cfg.batch_runs)
        }
        (Ok(_), _) => Err("no KCL version of this fleet".into()),
    };
    let bytes_all = read_outputs(&out_all)?;
    let identical = read_outputs(&out1)? == bytes_all;
    // Counted per process: two streams end to end are not one stream.
    let mut objects = 0;
    for p in &out_all {
        objects += count_documents(&read_outputs(std::slice::from_ref(p))?);
    }
    let output_bytes = bytes_all.len() as u64;

    log(format!(
        "N={n}: in-process load, render and serialisation (best of {})",
        cfg.serialise_runs
    ));
    let in_process = in_process(cfg, dir, &g.batch, &bytes_all);
    drop(bytes_all);
    let instructions = if cfg.instructions {
        log(format!(
            "N={n}: instructions (callgrind) of kiln render --jobs 1 and of the serialisation"
        ));
        let batch: Vec<Vec<String>> = g.batch.iter().map(|b| b.args.clone()).collect();
        instructions::measure(&cfg.kiln, dir, &batch, &out_all)
    } else {
        Err("not asked (--instructions)".into())
    };

    let picks = fleet::sample_indices(
        units,
        if units <= cfg.full_limit {
            units
        } else {
            cfg.sample
        },
    );
    log(format!(
        "N={n}: kiln once per app ({} processes)",
        picks.len()
    ));
    let per_app = per_process(
        &picks,
        units,
        |i| kiln_cmd(cfg, dir, &g.apps[i], None),
        &dir.join("out-app.yaml"),
        g.objects_per_app.first().copied(),
    );

    let kustomize = match (&cfg.kubectl, &g.kustomize) {
        (Err(why), _) => Err(format!("skipped: {why}")),
        (Ok(_), None) => Err("no equivalent kustomize tree for this fleet".into()),
        (Ok(kubectl), Some(tree)) => {
            log(format!(
                "N={n}: kubectl kustomize once per overlay ({} processes)",
                picks.len()
            ));
            per_process(
                &picks,
                units,
                |i| {
                    let mut c = Command::new(kubectl);
                    c.current_dir(dir).arg("kustomize").arg(&tree.overlays[i]);
                    c
                },
                &dir.join("out-kustomize.yaml"),
                g.objects_per_app.first().copied(),
            )
        }
    };

    Ok(SizeFigures {
        n,
        units,
        objects,
        expected_objects: g.objects(),
        output_bytes,
        jobs1,
        all,
        identical,
        in_process,
        per_app,
        kustomize,
        flux_artifact,
        diff,
        kcl,
        instructions,
    })
}

/// Make the fleet directory a git repository holding the inputs of `args` (a batch render's
/// arguments after `render`: the top directory of its first path), change the first unit's
/// file (its first `replicas:`) in the working tree, and time `kiln diff ARGS…` against
/// `kiln render ARGS…`, interleaved. The file is restored and the repository removed afterwards.
fn diff_figures(
    cfg: &Config,
    dir: &Path,
    args: &[String],
    g: &Generated,
) -> Result<DiffFigures, String> {
    let tree = args[0].split('/').next().unwrap_or(&args[0]);
    let git = |args: &[&str]| -> Result<(), String> {
        let o = Command::new("git")
            .current_dir(dir)
            .args(args)
            .env("GIT_AUTHOR_NAME", "kiln-bench")
            .env("GIT_AUTHOR_EMAIL", "kiln-bench@localhost")
            .env("GIT_COMMITTER_NAME", "kiln-bench")
            .env("GIT_COMMITTER_EMAIL", "kiln-bench@localhost")
            .output()
            .map_err(|e| format!("skipped: git cannot run: {e}"))?;
        if o.status.success() {
            Ok(())
        } else {
            Err(format!(
                "git {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    };
    // The first unit's own file (the last input of its per-app command), its first numeric
    // `replicas:` key changed.
    let change = |text: &str| -> Option<String> {
        let (at, _) = text
            .match_indices("replicas: ")
            .find(|(i, _)| *i == 0 || matches!(text.as_bytes()[*i - 1], b' ' | b'\n'))?;
        let at = at + "replicas: ".len();
        let end = text[at..].find('\n').map_or(text.len(), |e| at + e);
        let n: u64 = text[at..end].trim().parse().ok()?;
        Some(format!("{}{}{}", &text[..at], n % 9 + 1, &text[end..]))
    };
    let unit_file = g
        .apps
        .first()
        .and_then(|a| a.iter().rev().find(|p| p.ends_with(".yaml")))
        .ok_or("no unit file to change")?;
    let (instance, changed) = g
        .files
        .iter()
        .filter(|f| &f.path == unit_file)
        .find_map(|f| change(&f.text).map(|c| (f, c)))
        .ok_or("the first unit's file has no numeric replicas to change")?;
    let _ = std::fs::remove_dir_all(dir.join(".git"));
    git(&["init", "-q"])?;
    git(&["add", tree])?;
    git(&["commit", "-q", "-m", "fleet"])?;
    let path = dir.join(&instance.path);
    std::fs::write(&path, &changed).map_err(|e| e.to_string())?;
    let with = |command: &str| -> Vec<String> {
        std::iter::once(command.to_string())
            .chain(args.iter().cloned())
            .collect()
    };
    let shown = args.join(" ");
    let result = (|| {
        let mut diff = Batch {
            wall: Duration::MAX,
            max_rss_kib: 0,
            walls: Vec::new(),
        };
        let mut render = diff.clone();
        let out = dir.join("out-diff.txt");
        for _ in 0..cfg.batch_runs.max(1) {
            let r = measure::run(
                &mut kiln_cmd(cfg, dir, &with("diff"), None),
                measure::Sink::File(&out),
            )?;
            if !r.success() {
                return Err(format!("kiln diff {shown} failed ({})", r.reason()));
            }
            diff.wall = diff.wall.min(r.wall);
            diff.max_rss_kib = diff.max_rss_kib.max(r.max_rss_kib);
            diff.walls.push(r.wall);
            let r = measure::run(
                &mut kiln_cmd(cfg, dir, &with("render"), None),
                measure::Sink::File(&dir.join("out-diff-render.yaml")),
            )?;
            if !r.success() {
                return Err(format!("kiln render {shown} failed ({})", r.reason()));
            }
            render.wall = render.wall.min(r.wall);
            render.max_rss_kib = render.max_rss_kib.max(r.max_rss_kib);
            render.walls.push(r.wall);
        }
        let text = std::fs::read_to_string(&out).map_err(|e| e.to_string())?;
        let summary = text.lines().last().unwrap_or("").to_string();
        Ok(DiffFigures {
            diff,
            render,
            summary,
        })
    })();
    let _ = std::fs::write(&path, &instance.text);
    let _ = std::fs::remove_dir_all(dir.join(".git"));
    result
}

/// `kiln-flux build TREE --artifact FILE` once: wall and peak RSS.
fn flux_once(cfg: &Config, dir: &Path, tree: &str) -> Result<(Duration, u64), String> {
    let Ok(flux) = &cfg.kiln_flux else {
        return Err("no kiln-flux".into());
    };
    let artifact = dir.join("out-flux.tar.gz");
    let mut c = Command::new(flux);
    c.current_dir(dir)
        .args(["build", tree, "--artifact"])
        .arg(&artifact);
    let r = measure::run(&mut c, measure::Sink::File(&dir.join("out-flux.json")))?;
    if !r.success() {
        return Err(format!(
            "kiln-flux build {tree} --artifact failed ({})",
            r.reason()
        ));
    }
    Ok((r.wall, r.max_rss_kib))
}

/// The objects of the batch, rendered in-process when every invocation has an in-process form
/// (timing load and render), else parsed back from kiln's output; then the serialisation alone,
/// by kiln's direct emitter and by serde-saphyr. Each invocation's objects are serialised as one
/// stream, as its process writes them, and the streams are concatenated as the processes' outputs
/// are (`kiln_output`): a batch of two processes is two streams, not one stream of both.
fn in_process(
    cfg: &Config,
    dir: &Path,
    batch: &[Invocation],
    kiln_output: &[u8],
) -> Result<InProcessFigures, String> {
    let (streams, load, definitions, render) = if batch.iter().all(|b| b.in_process.is_some()) {
        let mut streams = Vec::new();
        let mut stages = Stages::default();
        for call in batch.iter().filter_map(|b| b.in_process.as_ref()) {
            streams.push(match call {
                InProcess::Documents {
                    inputs,
                    options,
                    environment,
                } => documents_in_process(dir, inputs, options, environment, &mut stages)?,
                InProcess::KurelInstances { package, instances } => {
                    kurel_in_process(dir, package, instances, &mut stages)?
                }
            });
        }
        (
            streams,
            Some(stages.load),
            Some(stages.definitions),
            Some(stages.render),
        )
    } else {
        let text = String::from_utf8(kiln_output.to_vec())
            .map_err(|_| "kiln output is not UTF-8".to_string())?;
        let docs = parse_file("kiln-output.yaml", text, &YamlLimits::default())
            .map_err(|d| format!("cannot parse kiln's output back: {}", d.message))?;
        let objects: Vec<Value> = docs.into_iter().map(|d| d.value).collect();
        (vec![objects], None, None, None)
    };
    let (serialise, yaml) = measure::best_of(cfg.serialise_runs, || {
        let mut all = String::new();
        for objects in &streams {
            all.push_str(&output::yaml_stream(objects).map_err(|d| d.message)?);
        }
        Ok::<_, String>(all)
    });
    let yaml = yaml.map_err(|m| format!("serialisation failed: {m}"))?;
    let (serialise_saphyr, saphyr) = measure::best_of(cfg.serialise_runs, || {
        let mut all = String::new();
        for objects in &streams {
            all.push_str(&saphyr_stream(objects)?);
        }
        Ok::<_, String>(all)
    });
    let saphyr = saphyr.map_err(|m| format!("serde-saphyr serialisation failed: {m}"))?;
    Ok(InProcessFigures {
        load,
        definitions,
        render,
        serialise,
        serialise_saphyr,
        same_bytes: yaml.as_bytes() == kiln_output,
        saphyr_same_bytes: saphyr == yaml,
    })
}

/// The YAML stream as serde-saphyr alone writes it (`output::saphyr_yaml` per object, `---`
/// between them, as `output::yaml_stream` joins its documents): the library path, for comparison
/// with kiln's direct emitter on the same objects.
pub fn saphyr_stream(objects: &[Value]) -> Result<String, String> {
    let mut out = String::new();
    for (i, o) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        let doc = output::saphyr_yaml(o).map_err(|d| d.message)?;
        out.push_str(&doc);
        if !doc.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// The request `kiln render INPUTS… [--env NAME]` makes.
pub fn request_of(inputs: Vec<Input>, environment: &Option<String>) -> request::Request {
    request::Request {
        inputs,
        environment: environment.clone(),
        ..request::Request::default()
    }
}

/// Time spent in each in-process stage, summed over a batch's invocations.
#[derive(Debug, Default)]
struct Stages {
    load: Duration,
    definitions: Duration,
    render: Duration,
}

/// `kiln render INPUTS…` in-process: load, definitions alone, render (definitions included).
/// The render is `request::render`, the call `kiln render` itself makes (reading included), so
/// its objects are the ones the process wrote and the serialisation bound is timed on exactly
/// kiln's output bytes (`pipeline::render` on pre-loaded documents skipped what the request
/// adds, and its bytes differed from kiln's at N = 1 000 and 10 000).
fn documents_in_process(
    dir: &Path,
    inputs: &[String],
    options: &pipeline::Options,
    environment: &Option<String>,
    stages: &mut Stages,
) -> Result<Vec<Value>, String> {
    let inputs: Vec<Input> = inputs.iter().map(|p| Input::Path(dir.join(p))).collect();
    let start = Instant::now();
    let docs = load_inputs(&inputs, &YamlLimits::default())
        .map_err(|d| format!("in-process load failed: {}", first_message(&d.0)))?;
    stages.load += start.elapsed();
    let start = Instant::now();
    pipeline::definitions(&docs, options)
        .map_err(|d| format!("in-process definitions failed: {}", first_message(&d.0)))?;
    stages.definitions += start.elapsed();
    drop(docs);
    let req = request_of(inputs, environment);
    let start = Instant::now();
    let out = request::render(&req).map_err(|f| {
        format!(
            "in-process render failed: {}",
            first_message(&f.diagnostics)
        )
    })?;
    stages.render += start.elapsed();
    Ok(out.units.into_iter().flatten().collect())
}

/// `kiln render PKG --instances DIR` in-process: loading the package and reading the instance
/// files, the shared part alone (`kurel::Prepared::new`), and the render (the shared part
/// included, as `pipeline::render` includes the definitions).
fn kurel_in_process(
    dir: &Path,
    package: &str,
    instances: &str,
    stages: &mut Stages,
) -> Result<Vec<Value>, String> {
    let start = Instant::now();
    let pkg = kurel::load(&dir.join(package)).map_err(|e| {
        format!(
            "in-process kurel::load failed: {}",
            first_message(&e.diagnostics.0)
        )
    })?;
    let root =
        Root::new(dir).map_err(|d| format!("cannot open {}: {}", dir.display(), d.message))?;
    let (docs, _, diags) =
        kurel::values::read_instances_dir(&root, instances, &YamlLimits::default());
    if diags.has_errors() {
        return Err(format!(
            "in-process instance files: {}",
            first_message(&diags.0)
        ));
    }
    stages.load += start.elapsed();
    // As `kiln render` renders a package: with provenance (on unless --no-provenance), so that
    // the serialisation bound is computed over the bytes kiln writes.
    let options = kurel::Options {
        provenance: true,
        ..kurel::Options::default()
    };
    let common = kurel::Instance::default();
    let start = Instant::now();
    kurel::Prepared::new(&pkg, &common, &options)
        .map_err(|d| format!("in-process Prepared::new failed: {}", first_message(&d.0)))?;
    stages.definitions += start.elapsed();
    let start = Instant::now();
    let prepared = kurel::Prepared::new(&pkg, &common, &options)
        .map_err(|d| format!("in-process Prepared::new failed: {}", first_message(&d.0)))?;
    let out = kurel::render_instances(&prepared, docs, Ok).map_err(|d| {
        format!(
            "in-process render_instances failed: {}",
            first_message(&d.0)
        )
    })?;
    stages.render += start.elapsed();
    Ok(out.units.into_iter().flatten().collect())
}

fn first_message(diags: &[kiln_core::diag::Diagnostic]) -> String {
    diags
        .first()
        .map(|d| format!("{} ({} diagnostics)", d.message, diags.len()))
        .unwrap_or_else(|| "no diagnostics".into())
}

/// Run one process per picked unit. The first one writes its output to `first_out` so its
/// objects can be counted against the fleet's expectation.
fn per_process(
    picks: &[usize],
    n: usize,
    mut make: impl FnMut(usize) -> Command,
    first_out: &Path,
    first_expected: Option<usize>,
) -> Result<PerProcess, String> {
    let mut walls = Vec::with_capacity(picks.len());
    let mut rss = 0;
    let mut first_objects = None;
    for (k, &i) in picks.iter().enumerate() {
        let sink = if k == 0 {
            measure::Sink::File(first_out)
        } else {
            measure::Sink::Null
        };
        let r: ProcRun = measure::run(&mut make(i), sink)?;
        if !r.success() {
            return Err(format!("unit {i} failed ({})", r.reason()));
        }
        if k == 0 {
            if let (0, Some(expected)) = (i, first_expected) {
                let text = std::fs::read(first_out)
                    .map_err(|e| format!("cannot read {}: {e}", first_out.display()))?;
                first_objects = Some((count_documents(&text), expected));
            }
        }
        walls.push(r.wall);
        rss = rss.max(r.max_rss_kib);
    }
    let stats = Stats::of(&walls).ok_or("no units to run")?;
    let total = if picks.len() == n {
        stats.total
    } else {
        stats.mean * n as u32
    };
    Ok(PerProcess {
        stats,
        sampled: picks.len(),
        of: n,
        total,
        max_rss_kib: rss,
        first_objects,
    })
}

/// One small app end to end as a process: app 0 of the fleet, run repeatedly.
fn small_app(cfg: &Config, dir: &Path, g: &Generated) -> Result<(Stats, usize), String> {
    let Some(args) = g.apps.first() else {
        return Err("the fleet has no apps".into());
    };
    log(format!(
        "one app as a process, {} runs: kiln {}",
        cfg.small_app_runs,
        args.join(" ")
    ));
    let runs = measure::repeat(cfg.small_app_runs, || kiln_cmd(cfg, dir, args, None), None)
        .map_err(|r| format!("kiln {} failed ({})", args.join(" "), r.reason()))?;
    let walls: Vec<Duration> = runs.iter().map(|r| r.wall).collect();
    let stats = Stats::of(&walls).ok_or("no runs")?;
    Ok((stats, g.objects_per_app[0]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-process kurel render, over which the serialisation bound of the kurel fleet is
    /// computed, gives the objects `kiln render PKG --instances DIR` gives (through
    /// `request::render`, the CLI's path): provenance and all. Without provenance it printed
    /// "in-process serialisation differs from kiln's output bytes" at every size.
    #[test]
    fn kurel_in_process_renders_what_kiln_render_does() {
        let g = fleet::KurelFleet
            .generate(12)
            .expect("kurel fleet generates");
        let dir =
            std::env::temp_dir().join(format!("kiln-bench-kurel-same-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        g.write(&dir).expect("fleet written");
        let mut stages = Stages::default();
        let here = kurel_in_process(
            &dir,
            fleet::KUREL_PACKAGE,
            fleet::KUREL_INSTANCES,
            &mut stages,
        )
        .expect("renders in process");
        let req = request::Request {
            inputs: vec![Input::Path(dir.join(fleet::KUREL_PACKAGE))],
            instances: Some(dir.join(fleet::KUREL_INSTANCES)),
            ..Default::default()
        };
        let kiln = request::render(&req).expect("renders as kiln render does");
        let _ = std::fs::remove_dir_all(&dir);
        let objects: Vec<Value> = kiln.units.into_iter().flatten().collect();
        assert_eq!(here.len(), objects.len());
        assert_eq!(
            output::yaml_stream(&here).unwrap(),
            output::yaml_stream(&objects).unwrap()
        );
    }

    #[test]
    fn documents_are_counted_by_separator() {
        assert_eq!(count_documents(b""), 0);
        assert_eq!(count_documents(b"a: 1\n"), 1);
        assert_eq!(count_documents(b"a: 1\n---\nb: |\n  ---x\n---\nc: 2\n"), 3);
    }
}
