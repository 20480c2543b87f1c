//! `kiln-cmp`: see the crate documentation of `kiln_cmp`.

use std::io::Write;
use std::process::ExitCode;

use kiln_cmp::env::Env;
use kiln_cmp::{discover, generate, parameters};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "kiln-cmp: kiln as an Argo CD config-management plugin (docs/argocd.md)

usage:
  kiln-cmp generate      render the application in the working directory (Argo CD's generate)
  kiln-cmp parameters    print the parameter announcement (Argo CD's parameters.dynamic)
  kiln-cmp discover      print the opt-in marker .kiln-cmp if this directory has one (discover.find)
  kiln-cmp plugin-yaml   print the ConfigManagementPlugin this binary is installed with
  kiln-cmp --version
";

/// Print, and exit with `code`; a failed write of stdout is 141, quietly, for a closed pipe
/// (whoever read it stopped reading), and 1 with a message otherwise (a full disk, a bad
/// descriptor): Argo CD must never take a cut stream for the application's manifests.
fn out(stdout: &str, stderr: &str, code: u8) -> ExitCode {
    let _ = std::io::stderr().write_all(stderr.as_bytes());
    ExitCode::from(kiln_core::output::write_stdout(&[stdout], code, |d| {
        format!("error: {}", d.message)
    }))
}

// No huge pages, freed memory kept: set before the allocator's first arena.
kiln_core::run_at_load!();

fn main() -> ExitCode {
    kiln_core::process::end(main_run())
}

fn main_run() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let cmd = match args.as_slice() {
        [c] => c.as_str(),
        [] => return out("", USAGE, 2),
        _ => return out("", &format!("kiln-cmp: one command expected\n{USAGE}"), 2),
    };
    let cwd = match std::env::current_dir() {
        Ok(d) => d,
        Err(e) => return out("", &format!("kiln-cmp: no working directory: {e}\n"), 1),
    };
    // Only the documented variables are read (kiln_cmp::env); the rest of the environment is
    // never looked at.
    let vars = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)));
    let env = || Env::read_all(vars);
    match cmd {
        "generate" => match env() {
            (env, mut ds) if !ds.is_empty() => {
                // Every problem at once: the options' too.
                ds.extend(kiln_cmp::options::from_env(&env).err().unwrap_or_default());
                out("", &generate::report(&ds), 1)
            }
            (env, _) => {
                // Rendering runs on the workers, recursively: they get the CLI's stacks (only
                // here: discover and parameters start no threads); a small application, the
                // common case of a refresh, is rendered by the main thread alone. Values and
                // observed-state files named in the options are read too: with any, the run is
                // not taken for small (their paths are not followed here).
                let no_more = kiln_cmp::options::from_env(&env)
                    .is_ok_and(|o| o.values.is_empty() && o.observed.is_empty());
                let small = no_more && kiln_core::process::small_input(&[&cwd]);
                kiln_core::process::worker_pool(None, small);
                let o = generate::generate(&cwd, &env);
                out(&o.stdout, &o.stderr, o.code)
            }
        },
        "parameters" => {
            // The announcement is best effort: with variables it cannot read, it is still
            // printed (their errors are generate's to report).
            let (env, _) = env();
            let found = generate::place(&cwd, env.source_path.as_deref())
                .map(|p| parameters::find(&p))
                .unwrap_or_default();
            let mut s = serde_json::to_string(&parameters::announcement(&found))
                .unwrap_or_else(|_| "[]".into());
            s.push('\n');
            out(&s, "", 0)
        }
        "discover" => match discover::discover(&cwd) {
            Some(found) => out(&format!("{found}\n"), "", 0),
            None => out("", "", 0),
        },
        "plugin-yaml" => out(kiln_cmp::PLUGIN_YAML, "", 0),
        "--version" | "-V" => out(&format!("kiln-cmp {}\n", env!("CARGO_PKG_VERSION")), "", 0),
        "--help" | "-h" | "help" => out(USAGE, "", 0),
        other => out(
            "",
            &format!(
                "kiln-cmp: unknown command {}\n{USAGE}",
                kiln_core::diag::quote(other)
            ),
            2,
        ),
    }
}
