//! libFuzzer entry of the `simpleschema` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::simpleschema`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::simpleschema(data));
