//! Finds keys repeated within one JSON object. `serde_json` (like most JSON readers) keeps only
//! the last of them, so a file with `"2": {..}, "2": {..}` would silently lose an interface;
//! this scan runs over the text (already known to be valid JSON) before it is interpreted.

use std::collections::HashSet;

/// A key that occurs twice in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Duplicate {
    /// Dotted path of the key, e.g. `border_routers.br1a.interfaces.2`.
    pub path: String,
    /// The key (escapes decoded).
    pub key: String,
    /// 1-based line of its second occurrence.
    pub line: usize,
}

enum Frame {
    Object {
        path: String,
        keys: HashSet<String>,
        /// The key whose value comes next (or came last).
        key: Option<String>,
        /// Whether the next string is a key (after `{` or `,`), not a value.
        want_key: bool,
    },
    Array {
        path: String,
        index: usize,
    },
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The path of a value that starts now inside `parent`.
fn child_path(parent: Option<&Frame>) -> String {
    match parent {
        None => String::new(),
        Some(Frame::Object { path, key, .. }) => join(path, key.as_deref().unwrap_or("")),
        Some(Frame::Array { path, index }) => format!("{path}[{index}]"),
    }
}

/// The first key that repeats within its object, in text order. `text` should be valid JSON
/// (anything else yields no finding rather than an error: the JSON parser reports it).
pub(crate) fn first_duplicate(text: &str) -> Option<Duplicate> {
    let b = text.as_bytes();
    let mut stack: Vec<Frame> = Vec::new();
    let mut line = 1;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\n' => line += 1,
            b'{' => {
                let path = child_path(stack.last());
                stack.push(Frame::Object {
                    path,
                    keys: HashSet::new(),
                    key: None,
                    want_key: true,
                });
            }
            b'[' => {
                let path = child_path(stack.last());
                stack.push(Frame::Array { path, index: 0 });
            }
            b'}' | b']' => {
                stack.pop();
            }
            b',' => match stack.last_mut() {
                Some(Frame::Object { want_key, .. }) => *want_key = true,
                Some(Frame::Array { index, .. }) => *index += 1,
                None => {}
            },
            b':' => {
                if let Some(Frame::Object { want_key, .. }) = stack.last_mut() {
                    *want_key = false;
                }
            }
            b'"' => {
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    // Skip the escaped character (`\"` does not end the string).
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let end = (i + 1).min(b.len());
                if let Some(Frame::Object {
                    path,
                    keys,
                    key,
                    want_key: true,
                }) = stack.last_mut()
                {
                    // `start` and `end` are at ASCII quotes (or the end): char boundaries.
                    let raw = text.get(start..end).unwrap_or("");
                    let k: String =
                        serde_json::from_str(raw).unwrap_or_else(|_| raw.trim_matches('"').into());
                    if keys.contains(&k) {
                        return Some(Duplicate {
                            path: join(path, &k),
                            key: k,
                            line,
                        });
                    }
                    keys.insert(k.clone());
                    *key = Some(k);
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_repeated_keys_with_their_path() {
        assert_eq!(first_duplicate(r#"{"a": 1, "b": {"a": 2}}"#), None);
        let d = first_duplicate("{\"a\": {\"x\": [1, {\"k\": 1,\n \"k\": 2}]}}").unwrap();
        assert_eq!(
            d,
            Duplicate {
                path: "a.x[1].k".into(),
                key: "k".into(),
                line: 2
            }
        );
        // Escapes are decoded: "\u0032" is "2". Quotes and braces inside strings are text.
        let d = first_duplicate(r#"{"i": {"2": "}\"{", "\u0032": 0}}"#).unwrap();
        assert_eq!((d.path.as_str(), d.key.as_str()), ("i.2", "2"));
        // Values equal to keys are not keys.
        assert_eq!(first_duplicate(r#"{"a": "a", "b": ["a", "a"]}"#), None);
        let d = first_duplicate(r#"{"isd_as": "1-1", "isd_as": "1-2"}"#).unwrap();
        assert_eq!(d.path, "isd_as");
        // Garbage never panics.
        assert_eq!(first_duplicate("\"\\"), None);
        assert_eq!(first_duplicate("}}]]{\"a"), None);
    }
}
