//! libFuzzer entry of the `yaml_fast` target: the fast YAML reader (`kiln_core::document::fast`)
//! against serde-saphyr, the reader it stands in for.
//!
//! Like `envsubst.rs`, the body lives in this file rather than in `fuzz/src/targets.rs`:
//! `core/tests/fuzz_regressions.rs` includes this file with `#[path]` and replays inputs through
//! [`run`] on stable Rust. The libFuzzer entry point is left out of test builds (`cfg(test)`,
//! which the fuzz crate's binaries never have), so the same file compiles as a plain module there.
//! It may use only `std` and what kiln-core depends on.
//!
//! Input: UTF-8 text (other bytes are skipped: kiln refuses them before any parser sees them).
//! The contract checked: whenever `fast::parse` answers, serde-saphyr accepts the same text
//! (`document::parse_yaml_reference`, kiln's options) and gives the same documents, compared as
//! JSON text so that key order and number kinds count. Both with the default limits and with
//! small ones, so that inputs near a limit are common: near a limit the fast path must decline
//! and leave the diagnostic to serde-saphyr. serde-saphyr runs only when the fast path answers,
//! so the time goes to inputs the fast path takes.
// Compiled into a test (`core/tests/fuzz_regressions.rs`) this is a plain module.
#![cfg_attr(not(test), no_main)]

use kiln_core::document::{fast, parse_yaml_reference, YamlLimits};

#[cfg(not(test))]
libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

/// Limits small enough that generated inputs reach them.
fn small_limits() -> YamlLimits {
    YamlLimits {
        max_input_bytes: 2048,
        max_documents: 4,
        max_depth: 6,
        max_nodes: 64,
        max_alias_nodes: 32,
        max_aliases: 8,
    }
}

/// Check the fast path's contract on `data`; panics on a breach.
pub fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for limits in [YamlLimits::default(), small_limits()] {
        let Some(docs) = fast::parse(text, &limits) else {
            continue;
        };
        let got = serde_json::to_string(&docs).expect("values serialise");
        match parse_yaml_reference("in.yaml", text, &limits) {
            Ok(want) => {
                let want = serde_json::to_string(&want).expect("values serialise");
                assert_eq!(got, want, "fast path and serde-saphyr differ on {text:?}");
            }
            Err(d) => panic!(
                "fast path answered {got} for {text:?}, which serde-saphyr refuses: {} ({})",
                d.message, d.code
            ),
        }
    }
}
