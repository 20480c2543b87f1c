//! libFuzzer entry of the `krm_envelope` target: kiln-krm's reader of what kpt and kustomize send
//! (`kiln_krm::envelope`), and its writer.
//!
//! The body lives in this file (as in `yaml_fast.rs`): it belongs to the kiln-krm door, not to
//! kiln-core's targets in `fuzz/src/targets.rs`.
//!
//! Input: UTF-8 text (other bytes are skipped: the binary reads stdin as UTF-8 and refuses the
//! rest). The contract checked, beyond "no panic":
//! - whenever the reader splits a ResourceList into item texts (to hand pass-through items back
//!   byte for byte), the whole-text reading, if it accepts the input, gives the same envelope,
//!   items and functionConfig: the split never changes what the items mean;
//! - the answer written from the items (raw texts where the reader kept them) reads back as the
//!   same items in the same envelope;
//! - the functionConfig, when there is one, is read by `config::parse` without a panic.
#![no_main]

use kiln_core::document::YamlLimits;
use kiln_krm::envelope::{self, Envelope, Out};

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let limits = YamlLimits::default();
    let Ok(req) = envelope::read("<stdin>", text.to_string(), &limits) else {
        return;
    };
    if req.raw.is_some() {
        if let Ok(whole) = envelope::read_whole("<stdin>", text.to_string(), &limits) {
            assert_eq!(whole.envelope, req.envelope, "split and whole readings differ: envelope");
            assert_eq!(whole.items, req.items, "split and whole readings differ: items");
            assert_eq!(
                whole.function_config, req.function_config,
                "split and whole readings differ: functionConfig"
            );
        }
    }
    let _ = kiln_krm::config::parse(req.function_config.as_ref());
    let outs: Vec<Out<'_>> = match req.raw_items() {
        Some(raw) => raw.into_iter().map(Out::Raw).collect(),
        None => req.items.iter().map(Out::Value).collect(),
    };
    let Ok(written) = envelope::write_out(&req.envelope, &outs, &[]) else {
        return;
    };
    // Aliases expanded within the reading limits (a "billion laughs" input stopped at the
    // alias-node limit) can write megabytes; reading them back only measures the sanitizer's
    // speed, and the writer's output for such values is the core emitter's, fuzzed elsewhere.
    if written.len() > 64 * data.len() + 4096 {
        return;
    }
    let back = envelope::read("<stdout>", written.clone(), &limits)
        .unwrap_or_else(|d| panic!("the answer does not read back: {d}\n{written}"));
    // A stream of one ResourceList-shaped item is read back as that envelope, as kyaml would.
    if req.envelope == Envelope::Stream && req.items.len() == 1 && back.envelope != Envelope::Stream {
        return;
    }
    // An envelope without an apiVersion is answered with the default one.
    let expected = match &req.envelope {
        Envelope::ResourceList(v) if v.is_empty() => {
            Envelope::ResourceList("config.kubernetes.io/v1".into())
        }
        Envelope::List(v) if v.is_empty() => Envelope::List("v1".into()),
        e => e.clone(),
    };
    assert_eq!(back.envelope, expected, "envelope changed:\n{written}");
    assert_eq!(back.items, req.items, "items changed:\n{written}");
}
