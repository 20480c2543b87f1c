//! The KCL comparison of issue 29: the web-app fleet's instances rendered by KCL
//! (`bench/kcl/webapp.k`, the same web app written in KCL) through PyPI's `kcl-lib`, which runs
//! KCL's compiler and evaluator in-process in Python. `bench/kcl/run.py` times
//! `API().exec_program` alone (no interpreter start-up, no import): the figure most favourable to
//! KCL. `scripts/kcl.sh` installs `kcl-lib` into a virtual environment under `target/tools` once
//! and prints its python; when that fails, the bench says so loudly and the goal is a SKIP.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The KCL figures at one size.
#[derive(Debug, Clone)]
pub struct KclFigures {
    /// Fastest in-process `exec_program` over the runs.
    pub best: Duration,
    /// Every run.
    pub runs: Vec<Duration>,
    /// Objects KCL wrote (counted in its YAML stream).
    pub objects: usize,
    /// Bytes KCL wrote.
    pub bytes: u64,
}

/// The python of the `kcl-lib` virtual environment, installed by `scripts/kcl.sh` if needed.
pub fn find(root: &Path) -> Result<PathBuf, String> {
    let script = root.join("scripts/kcl.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} failed: {}",
            script.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let python = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if python.is_file() {
        Ok(python)
    } else {
        Err(format!("{} printed no python", script.display()))
    }
}

/// Run `bench/kcl/run.py` on the fleet at `fleet_dir` (instances under `apps`, relative to it),
/// `runs` times in one process.
pub fn measure(
    python: &Path,
    root: &Path,
    fleet_dir: &Path,
    apps: &str,
    runs: usize,
) -> Result<KclFigures, String> {
    let script = root.join("bench/kcl/run.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(fleet_dir)
        .arg(apps)
        .arg(runs.max(1).to_string())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", python.display()))?;
    if !out.status.success() {
        return Err(format!(
            "KCL failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    let v: serde_json::Value = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("cannot read run.py's figures: {e}"))?;
    let runs: Vec<Duration> = v["seconds"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_f64())
        .map(Duration::from_secs_f64)
        .collect();
    let best = runs.iter().min().copied().ok_or("run.py timed no run")?;
    Ok(KclFigures {
        best,
        runs,
        objects: v["objects"].as_u64().unwrap_or(0) as usize,
        bytes: v["bytes"].as_u64().unwrap_or(0),
    })
}
