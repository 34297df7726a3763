//! Small helpers of the store tests (the services themselves: `test_kit::services`).

#![allow(dead_code)]

/// Unix time now, ns.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64
}

/// A tag value unique to this test run.
pub fn unique(name: &str) -> String {
    format!("{name}-{}-{}", std::process::id(), now_ns())
}
