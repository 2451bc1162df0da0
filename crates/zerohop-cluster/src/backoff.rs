//! Exponential back-off with jitter, for calls to the API server that
//! failed: an unreachable or overloaded API server sees each agent retry
//! less and less often, at spread-out times, and never in a tight loop.

use std::time::Duration;

/// The delays before successive retries.
#[derive(Debug, Clone)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    /// Starts at `first`, doubles on each failure, never exceeds `max`.
    pub fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max: max.max(first),
            failures: 0,
        }
    }

    /// The delay after one more failure: the doubled delay, spread over
    /// its upper half by `random` in `[0, 1)` (so retries of many agents
    /// do not line up, and never come sooner than half the delay).
    pub fn next_delay(&mut self, random: f64) -> Duration {
        let doubled = self
            .first
            .checked_mul(1u32 << self.failures.min(20))
            .unwrap_or(self.max)
            .min(self.max);
        self.failures = self.failures.saturating_add(1);
        doubled.mul_f64(0.5 + random.clamp(0.0, 1.0) / 2.0)
    }

    /// Back to the first delay, after a success.
    pub fn reset(&mut self) {
        self.failures = 0;
    }

    /// Failures since the last success.
    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));
        let delays: Vec<u64> = (0..10).map(|_| backoff.next_delay(1.0).as_secs()).collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        assert_eq!(backoff.failures(), 10);
        backoff.reset();
        assert_eq!(backoff.next_delay(0.0), Duration::from_millis(500));
    }

    #[test]
    fn many_failures_never_overflow() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        for _ in 0..10_000 {
            assert!(backoff.next_delay(0.7) <= Duration::from_secs(300));
        }
    }
}
