//! libFuzzer entry of the `flux_kustomization` target: kiln-flux's reader of a Flux
//! `kustomize.toolkit.fluxcd.io/v1` Kustomization (`kiln_flux::kustomization::parse`).
//!
//! The body lives in this file: it belongs to the kiln-flux door, not to kiln-core's targets.
//!
//! Input: UTF-8 text (other bytes are skipped: the binary reads the file as UTF-8 and refuses
//! the rest). The contract checked, beyond "no panic": every diagnostic of a refused file is an
//! error naming the file; an accepted one has a name, and its `spec.path` (when set) is text the
//! door then resolves inside the source root.
#![no_main]

use kiln_core::document::YamlLimits;

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));

fn run(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match kiln_flux::kustomization::parse("ks.yaml", text, &YamlLimits::default()) {
        Ok(k) => assert!(!k.name.is_empty(), "accepted without a name"),
        Err(ds) => {
            assert!(!ds.0.is_empty(), "refused without a reason");
            for d in &ds.0 {
                assert!(d.is_error(), "a refusal that is only a warning: {d}");
                assert_eq!(d.file.as_deref(), Some("ks.yaml"), "a diagnostic without its file: {d}");
            }
        }
    }
}
