//! `kiln-bench`: generates synthetic fleets, measures `kiln` on them (and `kubectl kustomize` on
//! the equivalent tree, and KCL on the same instances), and prints a table of figures with the
//! goals of issues 6, 27 and 29.
//!
//! ```text
//! cargo run --release -p kiln-bench -- [--sizes 100,1000,10000] [--quick] [--out FILE]
//! ```
//!
//! Exit codes: 0 figures printed; 1 a figure could not be measured as it must be (the web-app fleet
//! failed, a fleet's outputs differ between thread counts, kubectl missing without
//! `--no-kustomize`, kcl-lib not installable without `--no-kcl`);
//! 2 usage error. Goals that are missed do not fail the run: they are reported, not tested.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use kiln_bench::doors;
use kiln_bench::fleet;
use kiln_bench::kustomize::probe_kubectl;
use kiln_bench::measure;
use kiln_bench::report::{self, Environment};
use kiln_bench::suite::{self, Config};

const USAGE: &str = "\
usage: kiln-bench [OPTIONS]

Generates a synthetic fleet of each size, renders it with kiln (one process with --jobs 1 and with
all cores, in-process to find the serialisation bound, one process per app) and with kubectl
kustomize on an equivalent tree, and prints the figures and the goals of issue 6.

options:
  --sizes LIST       fleet sizes, comma-separated (default 100,1000,10000)
  --quick            fewer repetitions and smaller samples (a smoke run, not for publishing)
  --out PATH         also write the figures as JSON (a directory gets kiln-bench.json)
  --fleet-dir DIR    where fleets are generated (default target/bench-fleet)
  --fleets LIST      which fleets to run: webapp,component,kurel (default all; `none` for the
                     doors alone)
  --no-doors         skip the doors' round trips (Argo CD, kpt, kustomize, kiln lsp; see
                     src/doors.rs and src/lsp.rs)
  --kiln PATH        measure this kiln binary instead of building target/release/kiln
  --no-build         do not run `cargo build --release -p kiln` first
  --kubectl PATH     kubectl to time `kubectl kustomize` with (default: kubectl on PATH)
  --no-kustomize     skip the kustomize figures (otherwise a missing kubectl is an error)
  --no-kcl           skip the KCL comparison (otherwise scripts/kcl.sh installs kcl-lib from
                     PyPI into target/tools once; when it cannot, the run says so and exits 1)
  --runs N           repetitions of each batch render, best reported (default 3, quick 1)
  --sample N         per-process series above 1000 units (quick: 100) run an evenly spaced
                     sample of N and extrapolate (default 200, quick 50)
  --instructions     also count instructions with callgrind (valgrind): kiln render --jobs 1
                     and the serialisation of its output alone, and their ratio, per fleet and
                     size (slow: about 50× a render; the figures do not move with the host)
  --write-fleet DIR  only write the web-app fleet of the first size into DIR (its kiln/
                     directory) and exit: a tree to profile one command on (scripts/diff-measure.sh)
  -h, --help         this text
";

#[derive(Debug)]
struct Args {
    sizes: Vec<usize>,
    quick: bool,
    out: Option<PathBuf>,
    fleet_dir: Option<PathBuf>,
    fleets: Option<Vec<String>>,
    kiln: Option<PathBuf>,
    build: bool,
    kubectl: Option<PathBuf>,
    kustomize: bool,
    kcl: bool,
    runs: Option<usize>,
    sample: Option<usize>,
    doors: bool,
    write_fleet: Option<PathBuf>,
    instructions: bool,
}

fn parse_list(flag: &str, v: &str) -> Result<Vec<usize>, String> {
    let mut sizes = v
        .split(',')
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| format!("{flag}: {s:?} is not a positive number"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    sizes.sort_unstable();
    sizes.dedup();
    Ok(sizes)
}

fn parse_args(mut it: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut a = Args {
        sizes: vec![100, 1_000, 10_000],
        quick: false,
        out: None,
        fleet_dir: None,
        fleets: None,
        kiln: None,
        build: true,
        kubectl: None,
        kustomize: true,
        kcl: true,
        runs: None,
        sample: None,
        doors: true,
        write_fleet: None,
        instructions: false,
    };
    while let Some(flag) = it.next() {
        // Accept both `--flag value` and `--flag=value`.
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (flag, None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--sizes" => a.sizes = parse_list("--sizes", &value("--sizes")?)?,
            "--quick" => a.quick = true,
            "--out" => a.out = Some(value("--out")?.into()),
            "--fleet-dir" => a.fleet_dir = Some(value("--fleet-dir")?.into()),
            "--fleets" => {
                a.fleets = Some(
                    value("--fleets")?
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .collect(),
                )
            }
            "--kiln" => a.kiln = Some(value("--kiln")?.into()),
            "--no-build" => a.build = false,
            "--kubectl" => a.kubectl = Some(value("--kubectl")?.into()),
            "--no-kustomize" => a.kustomize = false,
            "--no-kcl" => a.kcl = false,
            "--no-doors" => a.doors = false,
            "--runs" => a.runs = Some(parse_list("--runs", &value("--runs")?)?[0]),
            "--sample" => a.sample = Some(parse_list("--sample", &value("--sample")?)?[0]),
            "--instructions" => a.instructions = true,
            "--write-fleet" => a.write_fleet = Some(value("--write-fleet")?.into()),
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    if a.sizes.is_empty() {
        return Err("--sizes: no sizes given".into());
    }
    Ok(Some(a))
}

/// The workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

fn target_dir(root: &Path) -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) => root.join(t),
        None => root.join("target"),
    }
}

/// Build the release `kiln` (a no-op when up to date) so the figures are never of a stale binary.
fn build_kiln(root: &Path) -> Result<PathBuf, String> {
    // `cargo run` tells its child which cargo it is; fall back to the one on PATH.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("kiln-bench: cargo build --release -p kiln");
    let status = Command::new(&cargo)
        .current_dir(root)
        .args([
            "build",
            "--release",
            "-p",
            "kiln",
            "-p",
            "kiln-flux",
            "-p",
            "kiln-krm",
            "-p",
            "kiln-cmp",
        ])
        .status()
        .map_err(|e| format!("cannot run cargo ({}): {e}", Path::new(&cargo).display()))?;
    if !status.success() {
        return Err(format!("cargo build --release -p kiln failed ({status})"));
    }
    Ok(target_dir(root).join("release").join("kiln"))
}

fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

fn absolute(p: &Path) -> Result<PathBuf, String> {
    std::path::absolute(p).map_err(|e| format!("cannot resolve {}: {e}", p.display()))
}

/// `--write-fleet DIR`: the web-app fleet of `n` instances written under `dir`, nothing measured.
fn write_fleet(dir: &Path, n: usize) -> Result<ExitCode, String> {
    let g = fleet::Fleet::generate(&fleet::WebApp, n)?;
    let files = g
        .files
        .iter()
        .filter(|f| f.path.starts_with(fleet::WEBAPP_DIR));
    for f in files {
        let path = dir.join(&f.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &f.text)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    eprintln!(
        "kiln-bench: the web-app fleet of {n} instances written to {}",
        dir.join(fleet::WEBAPP_DIR).display()
    );
    Ok(ExitCode::SUCCESS)
}

fn run(args: Args) -> Result<ExitCode, String> {
    if let Some(dir) = &args.write_fleet {
        return write_fleet(dir, args.sizes[0]);
    }
    let root = workspace_root();
    let kiln = match &args.kiln {
        Some(k) => absolute(k)?,
        None if args.build => build_kiln(&root)?,
        None => target_dir(&root).join("release").join("kiln"),
    };
    if !kiln.is_file() {
        return Err(format!(
            "no kiln binary at {}: run `cargo build --release -p kiln` or pass --kiln PATH",
            kiln.display()
        ));
    }

    // A missing kubectl does not stop the kiln figures, but it fails the run unless the user
    // asked for no kustomize figures: a table silently without its comparison would mislead.
    let mut kubectl_missing = false;
    let (kubectl, kubectl_version) = if !args.kustomize {
        let why = "--no-kustomize".to_string();
        (Err(why.clone()), Err(why))
    } else {
        let path = args.kubectl.clone().or_else(|| find_on_path("kubectl"));
        match path.map(|p| probe_kubectl(&p).map(|v| (p, v))) {
            Some(Ok((p, v))) => (Ok(p), Ok(v)),
            Some(Err(why)) => {
                kubectl_missing = true;
                (Err(why.clone()), Err(why))
            }
            None => {
                kubectl_missing = true;
                let why =
                    "kubectl not found on PATH (install kubectl ≥ 1.14, or pass --kubectl PATH \
                           or --no-kustomize)"
                        .to_string();
                (Err(why.clone()), Err(why))
            }
        }
    };
    if let Err(why) = &kubectl {
        if kubectl_missing {
            eprintln!("kiln-bench: error: the kustomize rows are skipped: {why}");
        }
    }

    // The KCL comparison (issue 29): like kubectl, a missing tool fails the run unless it was
    // skipped on purpose, so a table without its comparison is never mistaken for a full one.
    let wants_webapp = args
        .fleets
        .as_ref()
        .is_none_or(|names| names.iter().any(|n| n == "webapp"));
    let mut kcl_missing = false;
    let kcl = if !args.kcl {
        Err("--no-kcl".to_string())
    } else if !wants_webapp {
        Err("the web-app fleet is not run".to_string())
    } else {
        eprintln!("kiln-bench: scripts/kcl.sh (finds or installs kcl-lib)");
        kiln_bench::kcl::find(&root).inspect_err(|why| {
            kcl_missing = true;
            eprintln!("kiln-bench: error: KCL IS MISSING, the KCL comparison is skipped: {why}");
        })
    };

    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let scratch = match &args.fleet_dir {
        Some(d) => absolute(d)?,
        None => target_dir(&root).join("bench-fleet"),
    };
    std::fs::create_dir_all(&scratch)
        .map_err(|e| format!("cannot create {}: {e}", scratch.display()))?;
    // kiln-flux beside the kiln binary (built with it): its artifact build is timed on the
    // web-app fleet, interleaved with kiln render.
    let kiln_flux = kiln.with_file_name("kiln-flux");
    let cfg = Config {
        sizes: args.sizes.clone(),
        kiln: kiln.clone(),
        kiln_flux: if kiln_flux.is_file() {
            Ok(kiln_flux)
        } else {
            Err(format!(
                "no kiln-flux beside {}: cargo build --release -p kiln-flux",
                kiln.display()
            ))
        },
        kubectl,
        scratch,
        batch_runs: args.runs.unwrap_or(if args.quick { 1 } else { 3 }),
        serialise_runs: if args.quick { 1 } else { 3 },
        small_app_runs: if args.quick { 10 } else { 30 },
        full_limit: if args.quick { 100 } else { 1_000 },
        sample: args.sample.unwrap_or(if args.quick { 50 } else { 200 }),
        kcl,
        root: root.clone(),
        instructions: args.instructions,
    };
    let env = Environment {
        cores,
        kiln: kiln.display().to_string(),
        kubectl: kubectl_version,
        batch_runs: cfg.batch_runs,
        serialise_runs: cfg.serialise_runs,
        small_app_runs: cfg.small_app_runs,
        full_limit: cfg.full_limit,
        sample: cfg.sample,
    };

    let fleets: Vec<_> = fleet::all()
        .into_iter()
        .filter(|f| {
            args.fleets
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == f.name()))
        })
        .collect();
    let no_fleets = args
        .fleets
        .as_ref()
        .is_some_and(|f| f.iter().all(|n| n == "none"));
    if fleets.is_empty() && !no_fleets {
        return Err("--fleets: no known fleet named (webapp, component, kurel, none)".into());
    }
    let results: Vec<_> = fleets
        .iter()
        .map(|f| suite::run_fleet(&cfg, f.as_ref()))
        .collect();
    let webapp = results.iter().find(|r| r.name == "webapp");
    let goals = webapp.map(report::goals).unwrap_or_default();

    print!("{}", report::text(&env, &results, &goals));
    let doors = args.doors.then(|| {
        let beside = |name: &str| {
            let p = kiln.with_file_name(name);
            if p.is_file() {
                Ok(p)
            } else {
                Err(format!(
                    "no {name} beside {}: cargo build --release -p {name}",
                    kiln.display()
                ))
            }
        };
        let tools = doors::Tools {
            kiln_cmp: beside("kiln-cmp"),
            kiln_krm: beside("kiln-krm"),
            kpt: find_on_path("kpt").ok_or_else(|| "kpt not found on PATH".to_string()),
            kubectl: cfg.kubectl.clone(),
        };
        let mut d = doors::run(&root, &cfg.scratch, &tools, cfg.small_app_runs.min(20));
        kiln_bench::lsp::run(
            &mut d,
            &root,
            &cfg.scratch,
            &kiln,
            cfg.small_app_runs.min(20),
        );
        d
    });
    if let Some(d) = &doors {
        print!("{}", doors::text(d));
    }
    if let Some(out) = &args.out {
        let path = if out.is_dir() {
            out.join("kiln-bench.json")
        } else {
            out.clone()
        };
        let mut json = report::json(&env, &results, &goals);
        if let Some(d) = &doors {
            json["doors"] = d.json.clone();
            json["door_goals"] = serde_json::json!(d
                .goals
                .iter()
                .map(|g| serde_json::json!({"goal": g.goal, "status": g.status.label(), "detail": g.detail}))
                .collect::<Vec<_>>());
        }
        let text = serde_json::to_string_pretty(&json)
            .map_err(|e| format!("cannot encode the JSON report: {e}"))?;
        std::fs::write(&path, text + "\n")
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        eprintln!("kiln-bench: figures written to {}", path.display());
    }

    // Failures of the measurement itself, as opposed to missed goals. A fleet that is not
    // available is reported in the table; one that ran must give the same bytes with any number
    // of threads and the object count it was generated for.
    let mut failed = kubectl_missing || kcl_missing;
    if let Some(Err(why)) = webapp.map(|w| &w.sizes) {
        eprintln!("kiln-bench: error: the web-app fleet did not render: {why}");
        failed = true;
    }
    for r in &results {
        for s in r.sizes.iter().flatten() {
            if !s.identical || s.objects != s.expected_objects {
                eprintln!(
                    "kiln-bench: error: {} N={}: --jobs 1 and all cores identical: {}, \
                     objects {} (expected {})",
                    r.name, s.n, s.identical, s.objects, s.expected_objects
                );
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some(measure::SPAWNER_ARG) {
        return measure::spawner_main();
    }
    if std::env::args().nth(1).as_deref() == Some(kiln_bench::instructions::SERIALISE_ARG) {
        let files: Vec<String> = std::env::args().skip(2).collect();
        return kiln_bench::instructions::serialise_main(&files);
    }
    // First, while this process is small: see `measure` for why measured processes are started
    // by a helper.
    if let Err(e) = measure::start_spawner() {
        eprintln!("kiln-bench: {e}");
        return ExitCode::from(1);
    }
    let code = run_main();
    measure::stop_spawner();
    code
}

fn run_main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(a)) => a,
        Ok(None) => {
            print!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("kiln-bench: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    // The in-process render evaluates CEL recursively on rayon workers, as the kiln CLI does: give
    // them the same room (16 MiB stacks) so the in-process figures run the same code paths.
    if let Err(e) = rayon::ThreadPoolBuilder::new()
        .stack_size(16 << 20)
        .build_global()
    {
        eprintln!("kiln-bench: cannot configure worker threads: {e}");
        return ExitCode::from(1);
    }
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kiln-bench: error: {e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: &[&str]) -> Result<Option<Args>, String> {
        parse_args(v.iter().map(|s| s.to_string()))
    }

    #[test]
    fn flags_parse_in_both_spellings() {
        let a = parse(&["--sizes", "1000,100", "--quick", "--out=x.json"])
            .expect("parses")
            .expect("not help");
        assert_eq!(a.sizes, vec![100, 1000]);
        assert!(a.quick);
        assert_eq!(a.out, Some(PathBuf::from("x.json")));
        assert!(parse(&["--sizes", "0"]).is_err());
        assert!(parse(&["--bogus"]).is_err());
        assert!(parse(&["--help"]).expect("parses").is_none());
    }
}
