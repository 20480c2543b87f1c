//! libFuzzer entry of the `kpatch` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::kpatch`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::kpatch(data));
