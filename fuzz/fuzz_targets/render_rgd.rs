//! libFuzzer entry of the `render_rgd` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::render_rgd`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::render_rgd(data));
