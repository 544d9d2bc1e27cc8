#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kk_fuzz::facts(data));
