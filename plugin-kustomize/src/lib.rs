//! kiln-krm: kiln behind the KRM function door, for kustomize and kpt.
//!
//! The executable speaks three dialects of one protocol, all translated into one
//! [`kiln_core::request`] call:
//!
//! - **KRM function** (no arguments): a `ResourceList` on stdin (any apiVersion, or a `List`, or
//!   a plain stream), the same envelope on stdout with `results`. This is what `kpt fn eval
//!   --exec`, a Kptfile pipeline's `exec:` and kustomize's `--enable-exec` run.
//! - **Legacy exec plugin** (invoked as `…/fn.kiln.dev/v1alpha1/render/Render CONFIG`): the
//!   configuration in a file, a plain stream on stdin (empty for a generator), a plain stream on
//!   stdout. What `kubectl kustomize --enable-alpha-plugins` runs.
//! - **Standalone** (`kiln-krm CONFIG.yaml [FILES…|-]`): the same, with inputs from files, to
//!   debug a configuration by hand.
//!
//! Every input is read within the `input-bytes` limit ([`read_input`]; `--limit NAME=VALUE` in
//! function and standalone mode, as `kiln --limit`).
//!
//! The crate holds no rendering logic: [`envelope`] reads and writes the wire format, [`config`]
//! reads the `Render` configuration, [`render`] makes the one call into kiln-core and places its
//! objects in files ([`annotations`]) of kpt's packages ([`packages`]), [`kustomize`] checks
//! kustomize's transformer order, [`results`] turns diagnostics into KRM results.
//!
//! ```
//! use kiln_krm::{function, render::Context};
//!
//! let input = "apiVersion: config.kubernetes.io/v1\nkind: ResourceList\nitems:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: plain}\n";
//! let ctx = Context { root: std::env::current_dir().unwrap(), ..Context::default() };
//! let out = function(input.to_string(), &ctx);
//! assert_eq!(out.code, 0, "{}", out.stderr);
//! assert!(out.stdout.contains("items:\n- apiVersion: v1\n  kind: ConfigMap\n"));
//! ```
#![deny(missing_docs)]
// Diagnostics are large but travel only on the cold error path, as in kiln-core.
#![allow(clippy::result_large_err)]

pub mod annotations;
pub mod config;
pub mod envelope;
pub mod install;
pub mod kustomize;
pub mod packages;
pub mod render;
pub mod results;

use kiln_core::diag::Diagnostic;
use serde_json::Value;

use envelope::{Envelope, Out};
use render::{Context, Item, Output};
use results::Location;

/// What a run writes and how it exits: stderr human text only; 0 success, 1 an error result,
/// 2 a usage error.
pub type Outcome = kiln_core::output::Outcome;

/// KRM function mode: answer a ResourceList (or List, or stream) read from stdin.
///
/// On failure the answer holds the input items unchanged beside the error results and the exit
/// code is 1: kpt and kustomize then write nothing, and a pipe without `pipefail` into
/// `kpt fn sink` still cannot delete the package's files with an empty list.
pub fn function(stdin: String, ctx: &Context) -> Outcome {
    let req = match envelope::read(envelope::STDIN, stdin, &ctx.limits.yaml) {
        Ok(r) => r,
        Err(d) => return unreadable(&d),
    };
    let opts = match config::parse(req.function_config.as_ref()) {
        Ok(o) => o,
        Err(ds) => {
            // The configuration is the resource at fault: kpt then shows the field path too.
            let at = Location {
                file: None,
                resource: req.function_config.as_ref().and_then(results::resource_ref),
            };
            let results: Vec<Value> = ds
                .iter()
                .map(|d| results::from_diagnostic(d, &at))
                .collect();
            let stderr = ds.iter().map(|d| d.to_string()).collect();
            let outs: Vec<Out<'_>> = match req.raw_items() {
                Some(r) => r.into_iter().map(Out::Raw).collect(),
                None => req.items.iter().map(Out::Value).collect(),
            };
            return answer(&req.envelope, &outs, results, stderr, true);
        }
    };
    // The items own what was read (values and texts are moved, not copied: at thousands of
    // items every copy is fresh memory the kernel must zero, the largest cost of a pass-through).
    let envelope::Request {
        envelope,
        items,
        texts,
        raw,
        text,
        function_config: _,
    } = req;
    let raw: Option<Vec<&str>> = raw.map(|r| r.into_iter().map(|r| &text[r]).collect());
    let mut texts = texts.map(Vec::into_iter);
    let mut items: Vec<Item> = items
        .into_iter()
        .map(|value| Item {
            value,
            origin: None,
            text: texts.as_mut().and_then(Iterator::next),
        })
        .collect();
    let a = render::render(&mut items, &opts, ctx);
    let input = |k: usize| match &raw {
        Some(r) => Out::Raw(r[k]),
        None => Out::Value(&items[k].value),
    };
    let outs: Vec<Out<'_>> = if a.failed {
        (0..items.len()).map(input).collect()
    } else {
        a.items
            .iter()
            .map(|o| match o {
                Output::Input(k) => input(*k),
                Output::New(v) => Out::Value(v),
            })
            .collect()
    };
    let o = answer(&envelope, &outs, a.results, a.stderr, a.failed);
    drop(outs);
    drop(raw);
    kiln_core::process::discard((items, a.items, text));
    o
}

/// Read an input (stdin, or a file of standalone mode) within `max_bytes`: a larger input is
/// refused as soon as the limit is passed (KLN1005), before it fills the memory, and one that is
/// not UTF-8 is refused too (KLN1003).
pub fn read_input(
    reader: impl std::io::Read,
    name: &str,
    max_bytes: usize,
) -> Result<String, Diagnostic> {
    kiln_core::source::read_limited(reader, name, max_bytes)
}

/// Input that is not a readable envelope: there are no items to echo. The answer is a
/// ResourceList with the error result and `items: []`, and exit code 1, which both
/// orchestrators treat as a failure whatever the list holds (they write nothing).
pub fn unreadable(d: &Diagnostic) -> Outcome {
    let r = results::from_diagnostic(d, &Location::default());
    let env = Envelope::ResourceList("config.kubernetes.io/v1".into());
    let stdout = envelope::write(&env, &[], &[r]).unwrap_or_default();
    Outcome {
        stdout,
        stderr: format!("{d}\n"),
        code: 1,
    }
}

fn answer(
    env: &Envelope,
    items: &[Out<'_>],
    results: Vec<Value>,
    stderr: Vec<String>,
    failed: bool,
) -> Outcome {
    let mut err = String::new();
    for l in &stderr {
        err.push_str(l);
        err.push('\n');
    }
    match envelope::write_out(env, items, &results) {
        Ok(stdout) => Outcome {
            stdout,
            stderr: err,
            code: u8::from(failed || results::exit_code(&results) == 1),
        },
        Err(d) => Outcome {
            stdout: String::new(),
            stderr: format!("{err}{d}\n"),
            code: 1,
        },
    }
}

/// An input of standalone or legacy mode: a file's name and text (`<stdin>` for stdin).
pub type NamedText = (String, String);

/// Standalone and legacy exec-plugin mode: the configuration from a file, the items from files
/// or stdin, a plain stream out. On failure nothing is written to stdout (kustomize fails the
/// build on the exit code) and the diagnostics go to stderr.
pub fn standalone(config: NamedText, inputs: Vec<NamedText>, ctx: &Context) -> Outcome {
    let fail = |lines: Vec<String>| Outcome {
        stdout: String::new(),
        stderr: lines.iter().map(|l| format!("{l}\n")).collect(),
        code: 1,
    };
    let (cname, ctext) = config;
    let cfg = match envelope::read(&cname, ctext, &ctx.limits.yaml) {
        Ok(r) => match (r.envelope, r.items.as_slice()) {
            (Envelope::Stream, [one]) => Some(one.clone()),
            (Envelope::Stream, []) => None,
            _ => {
                return fail(vec![format!(
                    "{cname}: the configuration file must hold one object (a Render or a ConfigMap)"
                )])
            }
        },
        Err(d) => return fail(vec![d.to_string()]),
    };
    let opts = match config::parse(cfg.as_ref()) {
        Ok(o) => o,
        Err(ds) => {
            return fail(
                ds.iter()
                    .map(|d| d.clone().in_file(cname.clone()).to_string())
                    .collect(),
            )
        }
    };
    let mut items = Vec::new();
    for (name, text) in inputs {
        match envelope::read(&name, text, &ctx.limits.yaml) {
            Ok(r) => {
                let several = r.items.len() > 1;
                items.extend(r.items.into_iter().enumerate().map(|(i, value)| Item {
                    value,
                    text: None,
                    origin: Some(if several {
                        format!("{name} (document {i})")
                    } else {
                        name.clone()
                    }),
                }));
            }
            Err(d) => return fail(vec![d.to_string()]),
        }
    }
    let a = render::render(&mut items, &opts, ctx);
    if a.failed {
        return fail(a.stderr);
    }
    let outs: Vec<Out<'_>> = a
        .items
        .iter()
        .map(|o| match o {
            Output::Input(k) => Out::Value(&items[*k].value),
            Output::New(v) => Out::Value(v),
        })
        .collect();
    match envelope::write_out(&Envelope::Stream, &outs, &[]) {
        Ok(stdout) => Outcome {
            stdout,
            stderr: a.stderr.iter().map(|l| format!("{l}\n")).collect(),
            code: 0,
        },
        Err(d) => fail(vec![d.to_string()]),
    }
}
