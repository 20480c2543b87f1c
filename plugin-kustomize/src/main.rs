//! `kiln-krm`: see the crate documentation of `kiln_krm` for the modes.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use kiln_krm::render::Context;
use kiln_krm::{config, function, install, standalone, NamedText, Outcome};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const USAGE: &str = "\
kiln-krm: kiln as a KRM function for kustomize and kpt

usage:
  kiln-krm                              KRM function: ResourceList on stdin, ResourceList on stdout
  kiln-krm CONFIG.yaml [FILES...|-]     standalone: Render config from a file, objects from files
                                        (or stdin), a plain YAML stream on stdout
  kiln-krm schema                       print the JSON Schema of the Render configuration
  kiln-krm install-exec-plugin [--dir DIR]
                                        install as kustomize's legacy exec plugin for
                                        fn.kiln.dev/v1alpha1 Render (DIR defaults to
                                        $XDG_CONFIG_HOME/kustomize/plugin)

Invoked as .../fn.kiln.dev/v1alpha1/render/Render CONFIG it is that legacy exec plugin.
`paths` and `values` in the configuration are relative to the working directory and may not
leave it. See docs/krm.md.
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let out = run(&args);
    let _ = std::io::stderr().write_all(out.stderr.as_bytes());
    let mut stdout = std::io::stdout().lock();
    if stdout
        .write_all(out.stdout.as_bytes())
        .and_then(|()| stdout.flush())
        .is_err()
    {
        return ExitCode::from(1);
    }
    ExitCode::from(out.code)
}

fn usage(msg: &str) -> Outcome {
    Outcome {
        stderr: format!("kiln-krm: {msg}\n\n{USAGE}"),
        code: 2,
        ..Outcome::default()
    }
}

fn context() -> Result<Context, Outcome> {
    match std::env::current_dir() {
        Ok(root) => Ok(Context {
            root,
            ..Context::default()
        }),
        Err(e) => Err(Outcome {
            stderr: format!("kiln-krm: cannot read the working directory: {e}\n"),
            code: 1,
            ..Outcome::default()
        }),
    }
}

fn read_stdin() -> Result<String, Outcome> {
    let mut s = String::new();
    std::io::stdin()
        .read_to_string(&mut s)
        .map_err(|e| Outcome {
            stderr: format!("kiln-krm: cannot read stdin: {e}\n"),
            code: 1,
            ..Outcome::default()
        })?;
    Ok(s)
}

fn read_file(p: &str) -> Result<NamedText, Outcome> {
    if p == "-" {
        return Ok(("<stdin>".into(), read_stdin()?));
    }
    std::fs::read_to_string(p)
        .map(|t| (p.to_string(), t))
        .map_err(|e| Outcome {
            stderr: format!("kiln-krm: cannot read {p}: {e}\n"),
            code: 1,
            ..Outcome::default()
        })
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
    let rest = args.get(1..).unwrap_or_default();
    let ctx = match context() {
        Ok(c) => c,
        Err(o) => return o,
    };
    // kustomize's legacy exec plugin: argv[1] is the config file, the objects are on stdin.
    if invoked_as == "Render" {
        let [cfg, ..] = rest else {
            return usage("the Render exec plugin needs its configuration file as argument");
        };
        return match (read_file(cfg), read_stdin()) {
            (Ok(c), Ok(s)) => standalone(c, vec![("<stdin>".into(), s)], &ctx),
            (Err(o), _) | (_, Err(o)) => o,
        };
    }
    match rest.first().map(String::as_str) {
        None => match read_stdin() {
            Ok(s) => function(s, &ctx),
            Err(o) => o,
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
            let config = match read_file(cfg) {
                Ok(c) => c,
                Err(o) => return o,
            };
            let mut inputs = Vec::new();
            let files = &rest[1..];
            if files.is_empty() {
                match read_file("-") {
                    Ok(t) => inputs.push(t),
                    Err(o) => return o,
                }
            }
            for f in files {
                match read_file(f) {
                    Ok(t) => inputs.push(t),
                    Err(o) => return o,
                }
            }
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
