//! Per-worker counters and latency histograms, merged into the run's result.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::sys::{self, CpuTimes, Who};

/// The first corrupted byte a worker found with `--verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Corruption {
    /// The file.
    pub path: PathBuf,
    /// Offset of the block that was read.
    pub block_offset: u64,
    /// Offset of the first byte that differs from the pattern.
    pub offset: u64,
}

/// What one thread measured.
#[derive(Debug, Clone)]
pub struct Stats {
    /// Bytes read after the ramp.
    pub bytes: u64,
    /// Reads completed after the ramp.
    pub ios: u64,
    /// Submit-to-completion latency of each read, in nanoseconds.
    pub latency_ns: Histogram<u64>,
    /// Bytes checked against the pattern.
    pub verified_bytes: u64,
    /// Blocks that did not match the pattern.
    pub corrupt_blocks: u64,
    /// The first corruption seen.
    pub first_corruption: Option<Corruption>,
    /// Reads that returned fewer bytes than asked and were resubmitted.
    pub short_reads: u64,
    /// Unaligned tails read without `O_DIRECT`.
    pub buffered_tails: u64,
    /// CPU time of the thread(s) after the ramp.
    pub cpu: CpuTimes,
    /// When the last read completed.
    pub finished: Option<Instant>,
    ramp_end: Instant,
    cpu_mark: Option<CpuTimes>,
}

impl Stats {
    /// Empty stats for a thread whose measurement starts at `ramp_end`.
    pub fn new(ramp_end: Instant) -> Stats {
        Stats {
            bytes: 0,
            ios: 0,
            // 1 ns to 1 hour at 3 significant digits: about 30 KiB per histogram.
            latency_ns: Histogram::new_with_bounds(1, 3_600_000_000_000, 3)
                .expect("static bounds are valid"),
            verified_bytes: 0,
            corrupt_blocks: 0,
            first_corruption: None,
            short_reads: 0,
            buffered_tails: 0,
            cpu: CpuTimes::default(),
            finished: None,
            ramp_end,
            cpu_mark: None,
        }
    }

    /// Starts the CPU clock of the calling thread once the ramp is over.
    /// Cheap enough to call on every completion.
    #[inline]
    pub fn tick(&mut self, now: Instant) {
        if self.cpu_mark.is_none() && now >= self.ramp_end {
            self.cpu_mark = Some(sys::cpu_times(Who::Thread));
        }
    }

    /// Records a completed read of `len` bytes submitted at `submitted`.
    #[inline]
    pub fn record(&mut self, submitted: Instant, now: Instant, len: u64) {
        self.tick(now);
        if now < self.ramp_end {
            return;
        }
        self.bytes += len;
        self.ios += 1;
        let ns = now
            .saturating_duration_since(submitted)
            .as_nanos()
            .clamp(1, 3_600_000_000_000) as u64;
        self.latency_ns.saturating_record(ns);
        self.finished = Some(now);
    }

    /// Records a corrupted block.
    pub fn corrupt(&mut self, path: &std::path::Path, block_offset: u64, offset: u64) {
        self.corrupt_blocks += 1;
        if self.first_corruption.is_none() {
            self.first_corruption = Some(Corruption {
                path: path.to_path_buf(),
                block_offset,
                offset,
            });
        }
    }

    /// Stops the CPU clock of the calling thread.
    pub fn finish_thread(&mut self) {
        if let Some(mark) = self.cpu_mark.take() {
            self.cpu = self.cpu.plus(sys::cpu_times(Who::Thread).since(mark));
        }
    }

    /// Adds another thread's stats (CPU clocks must be finished).
    pub fn merge(&mut self, other: &Stats) {
        self.bytes += other.bytes;
        self.ios += other.ios;
        // Same bounds on both sides, so adding cannot fail.
        let _ = self.latency_ns.add(&other.latency_ns);
        self.verified_bytes += other.verified_bytes;
        self.corrupt_blocks += other.corrupt_blocks;
        if self.first_corruption.is_none() {
            self.first_corruption.clone_from(&other.first_corruption);
        }
        self.short_reads += other.short_reads;
        self.buffered_tails += other.buffered_tails;
        self.cpu = self.cpu.plus(other.cpu);
        self.finished = self.finished.max(other.finished);
    }
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Latency {
    /// Fastest read.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Slowest read.
    pub max: f64,
}

impl Latency {
    /// Percentiles of a nanosecond histogram, in microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        let us = |ns: u64| ns as f64 / 1000.0;
        Latency {
            min: us(h.min()),
            mean: h.mean() / 1000.0,
            p50: us(h.value_at_quantile(0.50)),
            p90: us(h.value_at_quantile(0.90)),
            p99: us(h.value_at_quantile(0.99)),
            p999: us(h.value_at_quantile(0.999)),
            max: us(h.max()),
        }
    }
}

/// Seconds as a float, for the JSON document.
pub fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_during_the_ramp_are_not_counted() {
        let start = Instant::now();
        let mut stats = Stats::new(start + Duration::from_secs(3600));
        stats.record(start, start + Duration::from_micros(5), 4096);
        assert_eq!(stats.ios, 0);
        let mut measured = Stats::new(start);
        measured.record(start, start + Duration::from_micros(5), 4096);
        measured.record(start, start + Duration::from_micros(15), 4096);
        assert_eq!((measured.ios, measured.bytes), (2, 8192));
        stats.merge(&measured);
        let lat = Latency::from_histogram(&stats.latency_ns);
        assert!(
            (lat.p50 - 5.0).abs() < 0.1 && (lat.max - 15.0).abs() < 0.1,
            "{lat:?}"
        );
    }
}
