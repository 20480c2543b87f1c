//! libFuzzer entry of the `cel_deep` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::cel_deep`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::cel_deep(data));
