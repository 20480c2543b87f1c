//! libFuzzer entry of the `shorthand` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::shorthand`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::shorthand(data));
