//! libFuzzer entry of the `revision_read` target; what it fuzzes and why is documented on
//! [`kiln_fuzz::targets::revision_read`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kiln_fuzz::targets::revision_read(data));
