//! libFuzzer entry of the `kustomization_paths` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::kustomization_paths`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::kustomization_paths(data));
