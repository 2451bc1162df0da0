//! Randomness for schedules and back-off: a thousand agents started by one
//! DaemonSet rollout must not all run, write and retry in the same second.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// A number in `[0, 1)`, different on every call and in every process.
/// Not for secrets: only to spread load.
pub fn unit() -> f64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    // Each RandomState is seeded from the OS once per thread and then
    // incremented, so hashing a counter gives well-spread values.
    let hash = RandomState::new().hash_one(CALLS.fetch_add(1, Ordering::Relaxed));
    (hash >> 11) as f64 / (1u64 << 53) as f64
}

/// `base` spread by ±`fraction` (0.1 for ±10 %), using `random` in `[0, 1)`.
pub fn spread(base: Duration, fraction: f64, random: f64) -> Duration {
    base.mul_f64(1.0 - fraction + 2.0 * fraction * random)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_stays_in_range_and_varies() {
        let values: Vec<f64> = (0..1000).map(|_| unit()).collect();
        assert!(values.iter().all(|v| (0.0..1.0).contains(v)));
        let low = values.iter().filter(|v| **v < 0.5).count();
        assert!((300..700).contains(&low), "{low} of 1000 below one half");
    }

    #[test]
    fn spread_stays_within_its_fraction() {
        let base = Duration::from_secs(300);
        assert_eq!(spread(base, 0.1, 0.0), Duration::from_secs(270));
        assert_eq!(spread(base, 0.1, 0.5), Duration::from_secs(300));
        assert!(spread(base, 0.1, 0.999_999) < Duration::from_secs(330));
    }
}
