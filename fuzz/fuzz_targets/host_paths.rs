//! Arbitrary text as an `idint-ping` paths file: parsing never panics, and a file that parses
//! is written back (`to_json`) to a file that parses to the same paths.
#![no_main]

use idint_host::paths::PathsFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(file) = PathsFile::parse(text) else {
        return;
    };
    let again = PathsFile::parse(&file.to_json()).expect("written paths parse");
    assert_eq!(again, file);
});
