//! libFuzzer entry of the `yaml_load` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::yaml_load`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::yaml_load(data));
