//! libFuzzer entry of the `envsubst` target: Flux postBuild substitution (`kiln_core::flux`).
//!
//! Unlike the other targets, the body lives in this file rather than in `fuzz/src/targets.rs`:
//! `core/tests/fuzz_regressions.rs` includes this file with `#[path]` and replays inputs
//! through [`run`] on stable Rust. The libFuzzer entry point is left out of test builds
//! (`cfg(test)`, which the fuzz crate's binaries never have), so the same file compiles as a
//! plain module there.
//! Like `targets.rs`, it may use only `std` and what kiln-core depends on.
//!
//! Input: UTF-8 text (other bytes are skipped; kiln never substitutes text that is not UTF-8).
//! Before the first NUL: variables, one `NAME=VALUE` per line (names are not checked, so invalid
//! ones reach the name check); after it: the template. Without a NUL the whole input is the
//! template, with a fixed set of variables.
//!
//! Besides "no panic, no hang, no runaway allocation", it checks kiln's own contracts:
//! - a result is never larger than the output limit;
//! - when strict substitution succeeds, non-strict substitution gives the same text, and
//!   non-strict substitution never reports an unset variable;
//! - escaped text (`flux::lint::escape_text`) has no reference left and substitutes back to the
//!   template, whatever the variables;
//! - read as YAML, each mapping document substitutes without panicking (strict and not, with
//!   its quoted fields), and an escaped object substitutes back to itself (when kiln's YAML
//!   writer and reader round-trip it at all).
// Compiled into a test (`core/tests/fuzz_regressions.rs`) this is a plain module.
#![cfg_attr(not(test), no_main)]

use kiln_core::diag::codes;
use kiln_core::document::{parse_file, YamlLimits};
use kiln_core::flux::envsubst::{self, ErrorKind, Options};
use kiln_core::flux::lint;
use kiln_core::flux::postbuild::{self, PostBuild, Strategy};
use kiln_core::flux::variables::{is_valid_name, Variables};

#[cfg(not(test))]
libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

/// The output limit of every substitution here: small, so that inputs that multiply text reach
/// it quickly instead of spending the fuzzer's time.
const LIMIT: usize = 64 << 10;

/// Reading limits for the YAML side, small for the same reason.
fn yaml_limits() -> YamlLimits {
    YamlLimits {
        max_input_bytes: 1 << 20,
        max_documents: 16,
        max_depth: 64,
        max_nodes: 50_000,
        max_alias_nodes: 10_000,
        max_aliases: 1_000,
    }
}

fn split(text: &str) -> (Variables, &str) {
    let mut vars = Variables::new();
    match text.split_once('\0') {
        Some((head, template)) => {
            for line in head.lines() {
                if let Some((k, v)) = line.split_once('=') {
                    vars.insert(k, v);
                }
            }
            (vars, template)
        }
        None => {
            for (k, v) in [
                ("a", "x"),
                ("b", ""),
                ("n", "123"),
                ("v", "v1.2.3"),
                ("p", "a/b.c"),
                ("u", "é€"),
                ("s", "a: b"),
            ] {
                vars.insert(k, v);
            }
            (vars, text)
        }
    }
}

/// Whether kiln's YAML writer and reader give `v` back (the escape round trip relies on it).
fn yaml_round_trips(v: &serde_json::Value) -> bool {
    let Ok(text) = kiln_core::output::to_yaml(v) else {
        return false;
    };
    match parse_file("rt.yaml", text, &yaml_limits()) {
        Ok(docs) => docs.len() == 1 && &docs[0].value == v,
        Err(_) => false,
    }
}

/// The fuzz target's body.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (vars, template) = split(text);
    let strict = Options {
        strict: true,
        max_output_bytes: LIMIT,
    };
    let lax = Options {
        strict: false,
        ..strict
    };
    let s = envsubst::substitute(template, &vars, &strict);
    let l = envsubst::substitute(template, &vars, &lax);
    if let Ok(out) = &s {
        assert!(out.len() <= LIMIT, "result over the limit");
        assert_eq!(
            l.as_ref().ok(),
            Some(out),
            "strict substitution succeeded, non-strict differs"
        );
    }
    if let Err(e) = &l {
        assert!(
            !matches!(e.kind, ErrorKind::Unset(_)),
            "non-strict substitution reported an unset variable"
        );
    }
    let escaped = lint::escape_text(template);
    assert!(
        !lint::text_hazards(&escaped).0,
        "escaped text still holds a reference"
    );
    match envsubst::substitute(&escaped, &vars, &strict) {
        Ok(back) => assert_eq!(back, template, "escaped text did not substitute back"),
        Err(e) => assert!(
            matches!(e.kind, ErrorKind::TooLarge(_)),
            "escaped text failed: {e}"
        ),
    }

    let Ok(docs) = parse_file("fuzz.yaml", template.to_string(), &yaml_limits()) else {
        return;
    };
    let base = {
        let mut p = PostBuild::new(vars.clone());
        p.max_output_bytes = LIMIT;
        p.yaml = yaml_limits();
        p
    };
    for doc in docs.iter().filter(|d| d.value.is_object()).take(4) {
        let one = std::slice::from_ref(doc);
        let _ = postbuild::apply_documents(one, &base);
        let mut lax = base.clone();
        lax.strict = false;
        lax.strategy = Strategy::Always;
        let _ = postbuild::apply_documents(one, &lax);
        let _ = lint::diagnostics(&doc.value);
        if !yaml_round_trips(&doc.value) {
            continue;
        }
        // Valid names only: an invalid one fails every object, escaped or not.
        let mut valid = Variables::new();
        for (k, v) in vars.iter().filter(|(k, _)| is_valid_name(k)) {
            valid.insert(k, v);
        }
        let mut some = lax.clone();
        some.variables = valid;
        let mut always = base.clone();
        always.strategy = Strategy::Always;
        always.variables = Variables::new();
        for settings in [&always, &some] {
            match postbuild::apply(lint::escape(&doc.value), settings) {
                Ok(back) => assert_eq!(back, doc.value, "escaped object did not substitute back"),
                Err(ds) => assert!(
                    ds.iter().all(|d| d.code == codes::FLUX_SUBSTITUTION_LIMIT),
                    "escaped object failed: {:?}",
                    ds.iter().map(|d| d.to_string()).collect::<Vec<_>>()
                ),
            }
        }
    }
}
