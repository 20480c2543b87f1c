//! libFuzzer entry of the `json_pointer_filters` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::json_pointer_filters`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::json_pointer_filters(data));
