//! `kiln-krm`: see the crate documentation of `kiln_krm` for the modes.

// Diagnostics are large but travel only on the cold error path, as in the library.
#![allow(clippy::result_large_err)]

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kiln_core::diag::Diagnostic;
use kiln_core::limits::{Limits, Setting};
use kiln_core::process::HUGE_INPUT;
use kiln_krm::envelope::STDIN;
use kiln_krm::render::Context;
use kiln_krm::{config, function, install, read_input, standalone, unreadable, NamedText, Outcome};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
kiln-krm: kiln as a KRM function for kustomize and kpt

usage:
  kiln-krm [--limit NAME=VALUE]...      KRM function: ResourceList on stdin, ResourceList on stdout
  kiln-krm [--limit NAME=VALUE]... CONFIG.yaml [FILES...|-]
                                        standalone: Render config from a file, objects from files
                                        (or stdin), a plain YAML stream on stdout
  kiln-krm schema                       print the JSON Schema of the Render configuration
  kiln-krm install-exec-plugin [--dir DIR]
                                        install as kustomize's legacy exec plugin for
                                        fn.kiln.dev/v1alpha1 Render (DIR defaults to
                                        $XDG_CONFIG_HOME/kustomize/plugin)

`--limit` changes a limit as `kiln --limit` does (e.g. --limit input-bytes=64Mi; names and
defaults in `kiln render --help`). Invoked as .../fn.kiln.dev/v1alpha1/render/Render CONFIG it
is that legacy exec plugin, with the default limits.
`paths` and `values` in the configuration are relative to the working directory and may not
leave it. See docs/krm.md.
";

// No huge pages, freed memory kept: set before the allocator's first arena.
kiln_core::run_at_load!();

fn main() -> ExitCode {
    kiln_core::process::end(main_run())
}

fn main_run() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    // The reader went away (`kiln-krm … | head`): nothing to tell it, but the answer was not
    // delivered, so the run did not succeed (`output::EXIT_BROKEN_PIPE`).
    ExitCode::from(run(&args).print(|d| format!("kiln-krm: {}", d.message)))
}

fn usage(msg: &str) -> Outcome {
    Outcome {
        stderr: format!("kiln-krm: {msg}\n\n{USAGE}"),
        code: 2,
        ..Outcome::default()
    }
}

fn context(limits: Limits) -> Result<Context, Outcome> {
    match std::env::current_dir() {
        Ok(root) => Ok(Context { root, limits }),
        Err(e) => Err(Outcome {
            stderr: format!("kiln-krm: cannot read the working directory: {e}\n"),
            code: 1,
            ..Outcome::default()
        }),
    }
}

/// A failure to read an input of standalone or legacy mode: the diagnostic on stderr.
fn read_failure(d: &Diagnostic) -> Outcome {
    Outcome {
        stderr: format!("{d}\n"),
        code: 1,
        ..Outcome::default()
    }
}

/// Start the workers once the input is read, for its size (`process::worker_pool`): items are
/// parsed and rendered on them, recursively, and a small input gets none.
fn start_workers<'a>(inputs: impl IntoIterator<Item = &'a str>) {
    let bytes: usize = inputs.into_iter().map(str::len).sum();
    kiln_core::process::worker_pool(None, bytes as u64 <= kiln_core::process::SMALL_INPUT);
}

/// Read stdin within the input limit.
fn read_stdin(ctx: &Context) -> Result<String, Diagnostic> {
    let stdin = std::io::stdin();
    let size = file_size(&stdin);
    // Known to be large before it is read: the buffer, too, goes on huge pages.
    kiln_core::process::huge_pages_for(size);
    kiln_core::source::read_limited_sized(
        LargeRun::new(stdin.lock()),
        STDIN,
        ctx.limits.yaml.max_input_bytes,
        size,
    )
}

/// The size of the file stdin is, when it is one (`kiln-krm < list.yaml`); 0 for a pipe.
fn file_size(stdin: &std::io::Stdin) -> usize {
    use std::os::fd::AsFd;
    let Ok(fd) = stdin.as_fd().try_clone_to_owned() else {
        return 0;
    };
    match std::fs::File::from(fd).metadata() {
        Ok(m) if m.is_file() => usize::try_from(m.len()).unwrap_or(0),
        _ => 0,
    }
}

/// A reader that tells the process when a run is a large one: once [`HUGE_INPUT`] bytes have
/// come, the rest is read, and rendered, on huge pages (`process::huge_pages_for`).
struct LargeRun<R> {
    inner: R,
    seen: usize,
}

impl<R> LargeRun<R> {
    fn new(inner: R) -> Self {
        Self { inner, seen: 0 }
    }
}

impl<R: std::io::Read> std::io::Read for LargeRun<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let before = self.seen;
        self.seen += n;
        if before < HUGE_INPUT && self.seen >= HUGE_INPUT {
            kiln_core::process::huge_pages_for(self.seen);
        }
        Ok(n)
    }
}

fn read_file(p: &str, ctx: &Context) -> Result<NamedText, Outcome> {
    if p == "-" {
        return read_stdin(ctx)
            .map(|t| (STDIN.into(), t))
            .map_err(|d| read_failure(&d));
    }
    let file = std::fs::File::open(p).map_err(|e| Outcome {
        stderr: format!(
            "kiln-krm: cannot read {}: {e}\n",
            kiln_core::diag::path_shown(p)
        ),
        code: 1,
        ..Outcome::default()
    })?;
    read_input(file, p, ctx.limits.yaml.max_input_bytes)
        .map(|t| (p.to_string(), t))
        .map_err(|d| read_failure(&d))
}

/// The leading `--limit NAME=VALUE` options (as `kiln --limit`), and the arguments after them.
fn limits(args: &[String]) -> Result<(Limits, &[String]), Outcome> {
    let mut settings = Vec::new();
    let mut rest = args;
    loop {
        let value = match rest {
            [flag, v, ..] if flag == "--limit" => {
                rest = &rest[2..];
                v.as_str()
            }
            [flag, ..] if flag.starts_with("--limit=") => {
                rest = &rest[1..];
                &flag["--limit=".len()..]
            }
            [flag] if flag == "--limit" => return Err(usage("--limit needs NAME=VALUE")),
            _ => break,
        };
        match Setting::parse(value) {
            Ok(s) => settings.push(s),
            Err(e) => {
                return Err(usage(&format!(
                    "--limit {}: {e}",
                    kiln_core::diag::bounded(value)
                )))
            }
        }
    }
    Ok((Limits::with(&settings), rest))
}

fn run(args: &[String]) -> Outcome {
    let invoked_as = args
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    let args = args.get(1..).unwrap_or_default();
    // kustomize's legacy exec plugin: argv[1] is the config file, the objects are on stdin.
    // Further arguments come from the configuration's `argsOneLiner`: the repository's, which
    // may not raise limits, so they are not read.
    if invoked_as == "Render" {
        let ctx = match context(Limits::default()) {
            Ok(c) => c,
            Err(o) => return o,
        };
        let [cfg, ..] = args else {
            return usage("the Render exec plugin needs its configuration file as argument");
        };
        let config = match read_file(cfg, &ctx) {
            Ok(c) => c,
            Err(o) => return o,
        };
        return match read_stdin(&ctx) {
            Ok(s) => {
                start_workers([config.1.as_str(), &s]);
                standalone(config, vec![(STDIN.into(), s)], &ctx)
            }
            Err(d) => read_failure(&d),
        };
    }
    let (limits, rest) = match limits(args) {
        Ok(l) => l,
        Err(o) => return o,
    };
    let ctx = match context(limits) {
        Ok(c) => c,
        Err(o) => return o,
    };
    match rest.first().map(String::as_str) {
        // Over the limit or not UTF-8, the input is answered as any unreadable input: an error
        // result in a ResourceList, exit 1.
        None => match read_stdin(&ctx) {
            Ok(s) => {
                start_workers([s.as_str()]);
                function(s, &ctx)
            }
            Err(d) => unreadable(&d),
        },
        Some("-h" | "--help" | "help") => Outcome {
            stdout: USAGE.into(),
            ..Outcome::default()
        },
        Some("-V" | "--version") => Outcome {
            stdout: format!("kiln-krm {}\n", env!("CARGO_PKG_VERSION")),
            ..Outcome::default()
        },
        Some("schema") if rest.len() == 1 => Outcome {
            stdout: format!(
                "{}\n",
                serde_json::to_string_pretty(&config::schema()).expect("a JSON value")
            ),
            ..Outcome::default()
        },
        Some("install-exec-plugin") => install_cmd(&rest[1..]),
        Some(cfg) => {
            let config = match read_file(cfg, &ctx) {
                Ok(c) => c,
                Err(o) => return o,
            };
            let mut inputs = Vec::new();
            let files = &rest[1..];
            if files.is_empty() {
                match read_file("-", &ctx) {
                    Ok(t) => inputs.push(t),
                    Err(o) => return o,
                }
            }
            for f in files {
                match read_file(f, &ctx) {
                    Ok(t) => inputs.push(t),
                    Err(o) => return o,
                }
            }
            start_workers(
                std::iter::once(&config)
                    .chain(&inputs)
                    .map(|t| t.1.as_str()),
            );
            standalone(config, inputs, &ctx)
        }
    }
}

fn install_cmd(args: &[String]) -> Outcome {
    let dir = match args {
        [] => {
            let env = |k: &str| std::env::var(k).ok();
            match install::default_dir(env("XDG_CONFIG_HOME").as_deref(), env("HOME").as_deref()) {
                Some(d) => d,
                None => return usage("neither XDG_CONFIG_HOME nor HOME is set; pass --dir DIR"),
            }
        }
        [flag, d] if flag == "--dir" => PathBuf::from(d),
        [d] if d.starts_with("--dir=") => PathBuf::from(&d["--dir=".len()..]),
        _ => return usage("install-exec-plugin takes only --dir DIR"),
    };
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            return Outcome {
                stderr: format!("kiln-krm: cannot find its own executable: {e}\n"),
                code: 1,
                ..Outcome::default()
            }
        }
    };
    match install::install(&exe, &dir) {
        Ok(p) => Outcome {
            stdout: format!("{}\n", p.display()),
            ..Outcome::default()
        },
        Err(e) => Outcome {
            stderr: format!("kiln-krm: cannot install into {}: {e}\n", dir.display()),
            code: 1,
            ..Outcome::default()
        },
    }
}
