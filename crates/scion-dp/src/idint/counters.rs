//! [`IdIntCounters`]: what a worker's ID-INT stage did, with stable metric names and a
//! saturating merge across workers.

/// What the ID-INT stage did, per worker.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IdIntCounters {
    /// Packets with ID-INT options seen after a forwarding decision.
    pub packets: u64,
    /// New entries written.
    pub pushed: u64,
    /// Entries aggregated into the top entry.
    pub aggregated: u64,
    /// Entries encrypted.
    pub encrypted: u64,
    /// Packets whose stack had no room (X set).
    pub stack_full: u64,
    /// Packets skipped because of DelayHops.
    pub delayed: u64,
    /// Packets forwarded without an entry because no key was available.
    pub no_key: u64,
    /// Entries written (counted in `pushed` or `aggregated`) whose key was gone by the time
    /// the burst sealed them: they carry zeros and a zero MAC, which verifiers reject.
    pub unsealed: u64,
    /// Packets with malformed ID-INT options (forwarded unchanged).
    pub malformed: u64,
    /// Packets with an unsupported version or verifier (forwarded unchanged).
    pub unsupported: u64,
    /// Records taken by the exporter.
    pub exported: u64,
    /// Records the exporter refused.
    pub export_refused: u64,
    /// Packets whose options were stripped at the sink.
    pub stripped: u64,
    /// Packets dropped at the sink as their D flag asked.
    pub consumed: u64,
}

impl IdIntCounters {
    /// Counts a packet whose ID-INT options cannot be used (`IdInt::locate` failed): as
    /// unsupported (a version or verifier type this router does not know) or malformed.
    pub(super) fn unusable(&mut self, e: &idint_wire::Error) {
        self.packets += 1;
        if matches!(e, idint_wire::Error::Unsupported { .. }) {
            self.unsupported += 1;
        } else {
            self.malformed += 1;
        }
    }

    /// `(metric name, value)` pairs with stable names.
    pub fn named(&self) -> [(&'static str, u64); 14] {
        [
            ("idint_packets", self.packets),
            ("idint_pushed", self.pushed),
            ("idint_aggregated", self.aggregated),
            ("idint_encrypted", self.encrypted),
            ("idint_stack_full", self.stack_full),
            ("idint_delayed", self.delayed),
            ("idint_no_key", self.no_key),
            ("idint_unsealed", self.unsealed),
            ("idint_malformed", self.malformed),
            ("idint_unsupported", self.unsupported),
            ("idint_exported", self.exported),
            ("idint_export_refused", self.export_refused),
            ("idint_stripped", self.stripped),
            ("idint_consumed", self.consumed),
        ]
    }

    /// Adds another worker's counters (saturating: a counter never wraps back to small).
    pub fn merge(&mut self, o: &IdIntCounters) {
        self.packets = self.packets.saturating_add(o.packets);
        self.pushed = self.pushed.saturating_add(o.pushed);
        self.aggregated = self.aggregated.saturating_add(o.aggregated);
        self.encrypted = self.encrypted.saturating_add(o.encrypted);
        self.stack_full = self.stack_full.saturating_add(o.stack_full);
        self.delayed = self.delayed.saturating_add(o.delayed);
        self.no_key = self.no_key.saturating_add(o.no_key);
        self.unsealed = self.unsealed.saturating_add(o.unsealed);
        self.malformed = self.malformed.saturating_add(o.malformed);
        self.unsupported = self.unsupported.saturating_add(o.unsupported);
        self.exported = self.exported.saturating_add(o.exported);
        self.export_refused = self.export_refused.saturating_add(o.export_refused);
        self.stripped = self.stripped.saturating_add(o.stripped);
        self.consumed = self.consumed.saturating_add(o.consumed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_counters_saturate() {
        let mut a = IdIntCounters {
            packets: u64::MAX - 1,
            ..IdIntCounters::default()
        };
        let b = IdIntCounters {
            packets: 5,
            pushed: 2,
            ..IdIntCounters::default()
        };
        a.merge(&b);
        assert_eq!((a.packets, a.pushed), (u64::MAX, 2));
    }
}
