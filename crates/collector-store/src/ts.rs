//! The time-series store interface and the InfluxDB line protocol both backends accept.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::future::Future;

/// A measurement, field or tag name: borrowed when it is a constant (the collector's own names),
/// so a sample costs no allocation for them.
pub type Name = Cow<'static, str>;

/// One value of one series at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    /// Measurement name (`[a-zA-Z_][a-zA-Z0-9_]*`).
    pub measurement: Name,
    /// Tags identifying the series (names as for measurements; values any text).
    pub tags: Vec<(Name, String)>,
    /// Field name (as for measurements).
    pub field: Name,
    /// The value.
    pub value: f64,
    /// Unix time, ns. VictoriaMetrics keeps milliseconds.
    pub time_ns: u64,
}

/// How values are combined within each step of a range query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Aggregation {
    /// Arithmetic mean.
    #[default]
    Avg,
    /// Smallest value.
    Min,
    /// Largest value.
    Max,
    /// Last value.
    Last,
    /// Sum.
    Sum,
    /// Number of values.
    Count,
}

impl Aggregation {
    /// Parses `avg|mean|min|max|last|sum|count`.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "avg" | "mean" => Self::Avg,
            "min" => Self::Min,
            "max" => Self::Max,
            "last" => Self::Last,
            "sum" => Self::Sum,
            "count" => Self::Count,
            _ => return None,
        })
    }
}

/// A range query over one field of one measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct RangeQuery {
    /// Measurement.
    pub measurement: String,
    /// Field.
    pub field: String,
    /// Tags that must match exactly (others are free: one series per distinct tag set).
    pub tags: Vec<(String, String)>,
    /// Start, Unix ns (inclusive).
    pub start_ns: u64,
    /// End, Unix ns (inclusive).
    pub end_ns: u64,
    /// Step, ns; 0 = raw values, no aggregation.
    pub step_ns: u64,
    /// Aggregation within a step.
    pub aggregation: Aggregation,
}

/// The answer for one series: its tags and (Unix ns, value) pairs in time order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Series {
    /// The series' tags.
    pub tags: BTreeMap<String, String>,
    /// Points in time order.
    pub points: Vec<(u64, f64)>,
}

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store could not be reached (down, refused, timed out): worth retrying.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The store refused the request (4xx): retrying the same request will not help.
    #[error("store rejected the request: {0}")]
    Rejected(String),
    /// The store answered something unexpected.
    #[error("unexpected answer from the store: {0}")]
    Protocol(String),
    /// A name the line protocol cannot carry.
    #[error("invalid name {0:?}: use [a-zA-Z_][a-zA-Z0-9_]*")]
    InvalidName(String),
}

impl StoreError {
    /// Whether retrying later may succeed.
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}

/// Something written as one line of InfluxDB line protocol: [`Sample`], or a caller's own
/// point type that renders itself without building a `Sample` (no allocation per point).
pub trait Line: Clone + Send + Sync + 'static {
    /// Whether the item can be written (valid names, finite value); checked when a
    /// [`crate::writer::BufferedWriter`] takes it, so the store never refuses it later.
    fn check(&self) -> Result<(), StoreError>;
    /// Appends the item as one line (ending in `\n`), nanosecond timestamp, tags sorted by
    /// name. Only called after [`Self::check`] passed.
    fn write_line(&self, out: &mut String);
}

impl Line for Sample {
    fn check(&self) -> Result<(), StoreError> {
        check_name(&self.measurement)?;
        check_name(&self.field)?;
        for (k, _) in &self.tags {
            check_name(k)?;
        }
        if !self.value.is_finite() {
            return Err(StoreError::Rejected(format!(
                "non-finite value for {}.{}",
                self.measurement, self.field
            )));
        }
        Ok(())
    }

    fn write_line(&self, out: &mut String) {
        out.push_str(&self.measurement);
        // Tags in key order (as the protocol recommends); only unsorted ones are sorted, in a
        // copy.
        if self.tags.is_sorted_by(|a, b| a.0 <= b.0) {
            push_tags(out, self.tags.iter());
        } else {
            let mut tags: Vec<&(Name, String)> = self.tags.iter().collect();
            tags.sort_by(|a, b| a.0.cmp(&b.0));
            push_tags(out, tags.into_iter());
        }
        push_field(out, &self.field, self.value, self.time_ns);
    }
}

/// Appends ` field=value time\n` (the end of a line).
pub fn push_field(out: &mut String, field: &str, value: f64, time_ns: u64) {
    // `{:?}` prints the shortest representation that round-trips exactly.
    let _ = writeln!(out, " {field}={value:?} {time_ns}");
}

/// Appends `,key=value` with the value escaped (nothing for an empty value: the protocol has
/// no empty tag values).
fn push_tag(out: &mut String, key: &str, value: &str) {
    if value.is_empty() {
        return;
    }
    out.push(',');
    out.push_str(key);
    out.push('=');
    escape_tag_value(out, value);
}

/// A time-series store: writes samples, answers range and latest-value queries.
pub trait TimeSeriesStore: Send + Sync + 'static {
    /// Writes items (one request).
    fn write<L: Line>(&self, items: &[L]) -> impl Future<Output = Result<(), StoreError>> + Send;
    /// Series matching the query, with raw or aggregated points.
    fn query_range(
        &self,
        q: &RangeQuery,
    ) -> impl Future<Output = Result<Vec<Series>, StoreError>> + Send;
    /// Whether the store answers.
    fn health(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// Checks a measurement, tag or field name.
pub fn check_name(s: &str) -> Result<(), StoreError> {
    // Bytewise: any byte of a non-ASCII character fails as the character would.
    let ok = match s.as_bytes() {
        [first, rest @ ..] => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'_')
        }
        [] => false,
    };
    if ok {
        Ok(())
    } else {
        Err(StoreError::InvalidName(s.to_string()))
    }
}

fn escape_tag_value(out: &mut String, v: &str) {
    if !v
        .bytes()
        .any(|b| matches!(b, b',' | b'=' | b' ' | b'\\' | b'\n' | b'\r'))
    {
        out.push_str(v);
        return;
    }
    for ch in v.chars() {
        if matches!(ch, ',' | '=' | ' ' | '\\') {
            out.push('\\');
        }
        // Line breaks cannot be escaped in the line protocol: replace them.
        out.push(if ch == '\n' || ch == '\r' { ' ' } else { ch });
    }
}

/// Appends the items in InfluxDB line protocol (ns timestamps), one line per item. Invalid
/// names and non-finite values are refused (nothing of a refused item is written).
pub fn line_protocol<L: Line>(out: &mut String, items: &[L]) -> Result<(), StoreError> {
    for s in items {
        s.check()?;
        s.write_line(out);
    }
    Ok(())
}

fn push_tags<'a>(out: &mut String, tags: impl Iterator<Item = &'a (Name, String)>) {
    for (k, v) in tags {
        push_tag(out, k, v);
    }
}

/// Quotes a value for a PromQL/MetricsQL label matcher or an InfluxQL string literal.
pub(crate) fn quote(v: &str, q: char) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    s.push(q);
    for ch in v.chars() {
        if ch == q || ch == '\\' {
            s.push('\\');
        }
        s.push(ch);
    }
    s.push(q);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(v: f64) -> Sample {
        Sample {
            measurement: "hop".into(),
            tags: vec![
                ("path".into(), "a b,c=d".into()),
                ("hop".into(), "2".into()),
            ],
            field: "latency_ns".into(),
            value: v,
            time_ns: 1_700_000_000_123_456_789,
        }
    }

    #[test]
    fn line_protocol_escapes_and_sorts_tags() {
        let mut out = String::new();
        line_protocol(&mut out, &[sample(1.5), sample(1e21)]).unwrap();
        assert_eq!(
            out,
            "hop,hop=2,path=a\\ b\\,c\\=d latency_ns=1.5 1700000000123456789\n\
             hop,hop=2,path=a\\ b\\,c\\=d latency_ns=1e21 1700000000123456789\n"
        );
    }

    #[test]
    fn tag_order_does_not_change_the_line() {
        let unsorted = sample(3.0);
        let mut sorted = unsorted.clone();
        sorted.tags.reverse();
        assert!(sorted.tags.is_sorted_by(|a, b| a.0 <= b.0));
        let (mut a, mut b) = (String::new(), String::new());
        line_protocol(&mut a, &[unsorted]).unwrap();
        line_protocol(&mut b, &[sorted]).unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with("hop,hop=2,path="), "{a}");
    }

    #[test]
    fn bad_names_and_values_are_refused() {
        let mut s = sample(1.0);
        s.measurement = "hop latency".into();
        assert!(matches!(
            line_protocol(&mut String::new(), &[s]),
            Err(StoreError::InvalidName(_))
        ));
        assert!(matches!(
            line_protocol(&mut String::new(), &[sample(f64::NAN)]),
            Err(StoreError::Rejected(_))
        ));
        assert!(check_name("_a1").is_ok() && check_name("1a").is_err() && check_name("").is_err());
        assert!(
            check_name("a-b").is_err() && check_name("é").is_err() && check_name("aé").is_err()
        );
    }

    #[test]
    fn quoting() {
        assert_eq!(quote(r#"a"b\c"#, '"'), r#""a\"b\\c""#);
        assert_eq!(quote("it's", '\''), r"'it\'s'");
    }
}
