//! libFuzzer entry of the `scan` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::scan`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::scan(data));
