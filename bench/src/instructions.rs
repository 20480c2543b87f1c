//! Instruction counts (`--instructions`, issue 43): `kiln render` with `--jobs 1` under
//! callgrind, and the serialisation of the same objects alone, counted the same way.
//!
//! Wall-time ratios move with the host's memory system and load; instruction counts do not, so
//! a render ÷ serialisation ratio in instructions can be compared across machines and runs.
//! The serialisation is counted in a child process of this harness (`SERIALISE_ARG`): it parses
//! kiln's output back into objects, outside what is counted, and serialises them with
//! `output::yaml_stream` inside `serialise_counted`, the only function callgrind collects in.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::output;
use serde_json::Value;

/// First argument of the child process that serialises kiln's outputs (see the module doc).
pub const SERIALISE_ARG: &str = "--internal-serialise";

/// The function callgrind collects in when counting the serialisation.
const COUNTED: &str = "*instructions::serialise_counted*";

/// Instructions of one fleet at one size.
#[derive(Debug, Clone)]
pub struct Instructions {
    /// `kiln render … --jobs 1`, every process of the batch, summed (start-up, read, parse,
    /// render, serialise, write).
    pub render: u64,
    /// `output::yaml_stream` alone over the objects of kiln's output, one stream per process.
    pub serialise: u64,
    /// Whether the counted serialisation wrote exactly kiln's output bytes.
    pub same_bytes: bool,
}

impl Instructions {
    /// Render instructions over serialisation instructions.
    pub fn ratio(&self) -> f64 {
        self.render as f64 / self.serialise.max(1) as f64
    }
}

/// Whether callgrind can be run, or why not.
pub fn probe() -> Result<(), String> {
    match Command::new("valgrind")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
    {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(format!("valgrind --version failed ({s})")),
        Err(e) => Err(format!("valgrind not found ({e}); install valgrind")),
    }
}

/// `summary:` of a callgrind profile: the instructions collected.
fn collected(profile: &Path) -> Result<u64, String> {
    let text = std::fs::read_to_string(profile)
        .map_err(|e| format!("cannot read {}: {e}", profile.display()))?;
    text.lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| format!("no summary in {}", profile.display()))
}

fn callgrind(
    dir: &Path,
    profile: &Path,
    extra: &[&str],
    program: &Path,
    args: &[String],
) -> Command {
    let mut c = Command::new("valgrind");
    c.current_dir(dir)
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.display()))
        .args(extra)
        .arg(program)
        .args(args)
        .stderr(Stdio::piped());
    c
}

fn run(mut c: Command, what: &str) -> Result<Vec<u8>, String> {
    let out = c
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .output()
        .map_err(|e| format!("cannot run valgrind for {what}: {e}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: String = err.lines().rev().take(3).collect::<Vec<_>>().join(" | ");
        return Err(format!(
            "{what} under callgrind failed ({}): {tail}",
            out.status
        ));
    }
    Ok(out.stdout)
}

/// Count the render (each of `batch`, run in `dir` with `--jobs 1`) and the serialisation of
/// the objects of `outputs` (kiln's output of each process, in the same order).
pub fn measure(
    kiln: &Path,
    dir: &Path,
    batch: &[Vec<String>],
    outputs: &[PathBuf],
) -> Result<Instructions, String> {
    probe()?;
    let mut render = 0;
    for (k, args) in batch.iter().enumerate() {
        let profile = dir.join(format!("callgrind-render-{k}.out"));
        let mut args = args.clone();
        args.extend(["--jobs".to_string(), "1".to_string()]);
        run(
            callgrind(dir, &profile, &[], kiln, &args),
            &format!("kiln {}", args.join(" ")),
        )?;
        render += collected(&profile)?;
        let _ = std::fs::remove_file(&profile);
    }
    let me = std::env::current_exe().map_err(|e| format!("cannot find kiln-bench itself: {e}"))?;
    let profile = dir.join("callgrind-serialise.out");
    let mut args = vec![SERIALISE_ARG.to_string()];
    args.extend(outputs.iter().map(|p| p.display().to_string()));
    let said = run(
        callgrind(
            dir,
            &profile,
            &[&format!("--toggle-collect={COUNTED}")],
            &me,
            &args,
        ),
        "the serialisation",
    )?;
    let serialise = collected(&profile)?;
    let _ = std::fs::remove_file(&profile);
    Ok(Instructions {
        render,
        serialise,
        same_bytes: said == b"same\n",
    })
}

/// `output::yaml_stream` of one process's objects: all callgrind counts of the serialisation.
#[inline(never)]
fn serialise_counted(objects: &[Value]) -> Result<String, String> {
    output::yaml_stream(objects).map_err(|d| d.message)
}

/// The child process: parse each output file back into objects, serialise them (counted), and
/// say on stdout whether the bytes are kiln's (`same`) or not (`different`).
pub fn serialise_main(files: &[String]) -> std::process::ExitCode {
    let mut same = true;
    for f in files {
        let text = match std::fs::read_to_string(f) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("kiln-bench: cannot read {f}: {e}");
                return std::process::ExitCode::from(1);
            }
        };
        let objects: Vec<Value> = match parse_file(f, text.clone(), &YamlLimits::default()) {
            Ok(docs) => docs.into_iter().map(|d| d.value).collect(),
            Err(d) => {
                eprintln!("kiln-bench: cannot parse {f}: {}", d.message);
                return std::process::ExitCode::from(1);
            }
        };
        match serialise_counted(&objects) {
            Ok(yaml) => same &= yaml == text,
            Err(m) => {
                eprintln!("kiln-bench: serialisation of {f} failed: {m}");
                return std::process::ExitCode::from(1);
            }
        }
    }
    println!("{}", if same { "same" } else { "different" });
    std::process::ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The count is callgrind's `summary:` line (the collected events), not `totals:` or a
    /// number elsewhere in the profile.
    #[test]
    fn the_count_is_the_summary_line() {
        let dir = std::env::temp_dir().join(format!("kiln-bench-cg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let profile = dir.join("callgrind.out");
        std::fs::write(
            &profile,
            "version: 1\ncreator: callgrind-3.19.0\nevents: Ir\nsummary: 1234567\nfn=main\n1 99\ntotals: 1234567\n",
        )
        .expect("written");
        assert_eq!(collected(&profile), Ok(1_234_567));
        std::fs::write(&profile, "events: Ir\ntotals: 5\n").expect("written");
        assert!(collected(&profile).is_err());
        let _ = std::fs::remove_dir_all(&dir);
        let i = Instructions {
            render: 900,
            serialise: 100,
            same_bytes: true,
        };
        assert_eq!(i.ratio(), 9.0);
    }
}
