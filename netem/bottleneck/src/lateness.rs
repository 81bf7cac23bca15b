//! How late the forwarded packets were released: the time from a packet's due time (`due_ns`: end of its
//! transmission + propagation delay) to its accept verdict. The loop cannot release early, only late (a wake-up
//! that came late, a core busy elsewhere); late releases add delay the scenario did not ask for and bunch packets
//! together. The counts go into every stats line, so a run can be judged on them before the log is read
//! (harness/validity.js `bottleneck_on_time`); they equal what the log's `release_ns - due_ns` gives.

/// Thresholds of the counts, in ns: more than 1, 10 and 100 ms late.
pub const THRESHOLDS_NS: [u64; 3] = [1_000_000, 10_000_000, 100_000_000];

#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct Lateness {
    /// Forwarded packets released later than each of THRESHOLDS_NS after their due time.
    pub over: [u64; 3],
    /// The latest release so far, ns after its due time.
    pub max_ns: u64,
}

impl Lateness {
    pub fn count(&mut self, release_ns: u64, due_ns: u64) {
        let late = release_ns.saturating_sub(due_ns);
        for (n, t) in self.over.iter_mut().zip(THRESHOLDS_NS) {
            *n += (late > t) as u64;
        }
        self.max_ns = self.max_ns.max(late);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_each_threshold_strictly_above_and_keeps_the_maximum() {
        let mut l = Lateness::default();
        let due = 5_000_000_000;
        for late_ns in [0, 1_000_000, 1_000_001, 10_000_000, 10_000_001, 250_000_000] {
            l.count(due + late_ns, due);
        }
        l.count(due - 3_000_000, due); // released before its due time (shutdown): not late
        assert_eq!(l.over, [4, 2, 1]);
        assert_eq!(l.max_ns, 250_000_000);
    }
}
