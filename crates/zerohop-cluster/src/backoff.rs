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
    /// do not line up, and never come sooner than half the first delay),
    /// and never shorter than what the server asked for in `retry_after`,
    /// itself spread over a fifth more so that the clients told the same
    /// second do not all come back in it. Never longer than the cap.
    pub fn next_delay(&mut self, random: f64, retry_after: Option<Duration>) -> Duration {
        let random = random.clamp(0.0, 1.0);
        let doubled = self
            .first
            .checked_mul(1u32 << self.failures.min(20))
            .unwrap_or(self.max)
            .min(self.max);
        self.failures = self.failures.saturating_add(1);
        let ours = doubled.mul_f64(0.5 + random / 2.0);
        match retry_after {
            Some(asked) => ours
                .max(asked.min(self.max).mul_f64(1.0 + random / 5.0))
                .min(self.max),
            None => ours,
        }
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
        let delays: Vec<u64> = (0..10)
            .map(|_| backoff.next_delay(1.0, None).as_secs())
            .collect();
        assert_eq!(delays, [1, 2, 4, 8, 16, 32, 60, 60, 60, 60]);
        assert_eq!(backoff.failures(), 10);
        backoff.reset();
        assert_eq!(backoff.next_delay(0.0, None), Duration::from_millis(500));
    }

    #[test]
    fn many_failures_never_overflow() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        for _ in 0..10_000 {
            assert!(backoff.next_delay(0.7, None) <= Duration::from_secs(300));
            assert!(backoff.next_delay(0.7, Some(Duration::MAX)) <= Duration::from_secs(300));
        }
    }

    #[test]
    fn the_servers_retry_after_is_a_floor_spread_and_capped() {
        let mut backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(300));
        let asked = Some(Duration::from_secs(20));
        assert_eq!(backoff.next_delay(0.0, asked), Duration::from_secs(20));
        assert_eq!(backoff.next_delay(0.5, asked), Duration::from_secs(22));
        assert!(backoff.next_delay(0.999, asked) < Duration::from_secs(24));
        // A longer back-off of our own wins over a shorter request.
        let mut long = Backoff::new(Duration::from_secs(60), Duration::from_secs(300));
        assert_eq!(
            long.next_delay(1.0, Some(Duration::from_secs(1))),
            Duration::from_secs(60)
        );
        assert_eq!(
            long.next_delay(0.0, Some(Duration::from_secs(3600))),
            Duration::from_secs(300)
        );
    }
}
