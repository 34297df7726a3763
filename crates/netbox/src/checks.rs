//! The box's end-to-end checks: each a name, passed or not, and what was seen.

use serde_json::{Value, json};

/// The checks of one run, in order.
#[derive(Debug, Default)]
pub struct Checks {
    list: Vec<(String, bool, String)>,
}

impl Checks {
    /// Records check `name`; prints it as it happens.
    pub fn add(&mut self, name: &str, passed: bool, detail: impl Into<String>) {
        let detail = detail.into();
        println!(
            "   [{}] {name}{}",
            if passed { "ok" } else { "FAIL" },
            if detail.is_empty() {
                String::new()
            } else {
                format!(": {detail}")
            }
        );
        self.list.push((name.to_string(), passed, detail));
    }

    /// (passed, failed).
    pub fn counts(&self) -> (usize, usize) {
        let passed = self.list.iter().filter(|c| c.1).count();
        (passed, self.list.len() - passed)
    }

    /// The checks as JSON.
    pub fn to_json(&self) -> Value {
        json!(
            self.list
                .iter()
                .map(|(n, p, d)| json!({"name": n, "passed": p, "detail": d}))
                .collect::<Vec<_>>()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_json() {
        let mut c = Checks::default();
        c.add("a", true, "");
        c.add("b", false, "why");
        assert_eq!(c.counts(), (1, 1));
        assert_eq!(c.to_json()[1]["detail"], "why");
    }
}
