//! Which worker reads which part of which file, and the stream of read
//! requests each worker issues.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use crate::config::{AccessPattern, Amount};

/// A byte range of one target assigned to a worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Extent {
    /// Index of the target in the run.
    pub target: usize,
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

/// Assigns targets to workers. With at least as many files as workers each
/// worker gets whole files (round robin); otherwise the workers sharing a file
/// split it into block-aligned ranges for sequential reads, and each reads the
/// whole file for random reads.
pub fn assign(
    lens: &[u64],
    workers: usize,
    block_size: u64,
    pattern: AccessPattern,
) -> Vec<Vec<Extent>> {
    let mut plan = vec![Vec::new(); workers];
    if lens.len() >= workers {
        for (target, &len) in lens.iter().enumerate() {
            plan[target % workers].push(Extent {
                target,
                start: 0,
                end: len,
            });
        }
        return plan;
    }
    for (target, &len) in lens.iter().enumerate() {
        let sharing: Vec<usize> = (0..workers).filter(|w| w % lens.len() == target).collect();
        let blocks = len.div_ceil(block_size);
        for (i, &worker) in sharing.iter().enumerate() {
            let extent = match pattern {
                AccessPattern::Rand => Extent {
                    target,
                    start: 0,
                    end: len,
                },
                AccessPattern::Seq => {
                    let n = sharing.len() as u64;
                    let first = blocks * i as u64 / n;
                    let last = blocks * (i as u64 + 1) / n;
                    Extent {
                        target,
                        start: first * block_size,
                        end: (last * block_size).min(len),
                    }
                }
            };
            if extent.end > extent.start {
                plan[worker].push(extent);
            }
        }
    }
    plan
}

/// One read to issue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Index of the target in the run.
    pub target: usize,
    /// File offset.
    pub offset: u64,
    /// Bytes to read.
    pub len: u64,
}

/// The budget of a worker.
#[derive(Debug, Clone, Copy)]
enum Budget {
    OnePass,
    Bytes(u64),
    Until(Instant),
}

/// A small, fast, seedable generator (xorshift64*), enough for offsets.
#[derive(Debug, Clone)]
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

/// The request stream of one worker.
#[derive(Debug)]
pub struct Requests<'a> {
    extents: Vec<Extent>,
    block_size: u64,
    pattern: AccessPattern,
    budget: Budget,
    ramp_end: Instant,
    stop: &'a AtomicBool,
    rng: Rng,
    /// Sequential cursor: extent index and offset.
    cursor: (usize, u64),
    /// Bytes issued after the ramp, for byte budgets.
    issued: u64,
    /// Whole blocks per extent, for random picks.
    blocks: Vec<u64>,
    total_blocks: u64,
    /// Reads left in a one-pass random run.
    pass_left: u64,
}

impl<'a> Requests<'a> {
    /// The stream for `extents` under `amount`, measured from `start` with
    /// `ramp_end` marking the end of the warm-up, stopping early when `stop`
    /// is raised.
    #[expect(
        clippy::too_many_arguments,
        reason = "one constructor for the whole run shape"
    )]
    pub fn new(
        extents: Vec<Extent>,
        block_size: u64,
        pattern: AccessPattern,
        amount: Amount,
        ramp_end: Instant,
        seed: u64,
        worker: usize,
        stop: &'a AtomicBool,
    ) -> Requests<'a> {
        let budget = match amount {
            Amount::OnePass => Budget::OnePass,
            Amount::Bytes(bytes) => Budget::Bytes(bytes),
            Amount::Time(time) => Budget::Until(ramp_end + time),
        };
        let blocks: Vec<u64> = extents
            .iter()
            .map(|e| (e.end - e.start) / block_size)
            .collect();
        let total_blocks = blocks.iter().sum();
        let pass_left = extents
            .iter()
            .map(|e| (e.end - e.start).div_ceil(block_size))
            .sum();
        let cursor = (0, extents.first().map_or(0, |e| e.start));
        Requests {
            extents,
            block_size,
            pattern,
            budget,
            ramp_end,
            stop,
            rng: Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (worker as u64 + 1) | 1),
            cursor,
            issued: 0,
            blocks,
            total_blocks,
            pass_left,
        }
    }

    /// The total bytes a one-pass or byte-budget run will read, for progress.
    pub fn planned_bytes(&self) -> Option<u64> {
        match self.budget {
            Budget::OnePass => Some(self.extents.iter().map(|e| e.end - e.start).sum()),
            Budget::Bytes(bytes) => Some(bytes),
            Budget::Until(_) => None,
        }
    }

    fn budget_left(&mut self, len: u64) -> bool {
        match self.budget {
            Budget::OnePass => true,
            Budget::Until(deadline) => Instant::now() < deadline,
            Budget::Bytes(bytes) => {
                if self.issued >= bytes {
                    return false;
                }
                if Instant::now() >= self.ramp_end {
                    self.issued += len;
                }
                true
            }
        }
    }

    fn next_seq(&mut self) -> Option<Request> {
        let (mut index, mut offset) = self.cursor;
        let mut wrapped = false;
        loop {
            let extent = *self.extents.get(index)?;
            if offset < extent.end {
                let len = self.block_size.min(extent.end - offset);
                self.cursor = (index, offset + len);
                return Some(Request {
                    target: extent.target,
                    offset,
                    len,
                });
            }
            index += 1;
            if index == self.extents.len() {
                if matches!(self.budget, Budget::OnePass) || wrapped {
                    self.cursor = (index, 0);
                    return None;
                }
                wrapped = true;
                index = 0;
            }
            offset = self.extents[index].start;
        }
    }

    fn next_rand(&mut self) -> Option<Request> {
        if self.total_blocks == 0 {
            return None;
        }
        if matches!(self.budget, Budget::OnePass) {
            if self.pass_left == 0 {
                return None;
            }
            self.pass_left -= 1;
        }
        let mut pick = self.rng.below(self.total_blocks);
        for (extent, &blocks) in self.extents.iter().zip(&self.blocks) {
            if pick < blocks {
                let offset = extent.start + pick * self.block_size;
                return Some(Request {
                    target: extent.target,
                    offset,
                    len: self.block_size,
                });
            }
            pick -= blocks;
        }
        None
    }
}

impl Iterator for Requests<'_> {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        let request = match self.pattern {
            AccessPattern::Seq => self.next_seq(),
            AccessPattern::Rand => self.next_rand(),
        }?;
        self.budget_left(request.len).then_some(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::time::Duration;

    fn requests(
        extents: Vec<Extent>,
        bs: u64,
        pattern: AccessPattern,
        amount: Amount,
        stop: &AtomicBool,
    ) -> Vec<Request> {
        Requests::new(extents, bs, pattern, amount, Instant::now(), 1, 0, stop).collect()
    }

    #[test]
    fn files_are_dealt_round_robin_when_there_are_enough() {
        let plan = assign(&[10, 20, 30], 2, 4, AccessPattern::Seq);
        assert_eq!(
            plan[0],
            vec![
                Extent {
                    target: 0,
                    start: 0,
                    end: 10
                },
                Extent {
                    target: 2,
                    start: 0,
                    end: 30
                }
            ]
        );
        assert_eq!(
            plan[1],
            vec![Extent {
                target: 1,
                start: 0,
                end: 20
            }]
        );
    }

    #[test]
    fn a_shared_file_is_split_at_block_boundaries() {
        let plan = assign(&[10 * 4096 + 100], 3, 4096, AccessPattern::Seq);
        let flat: Vec<Extent> = plan.iter().flatten().copied().collect();
        assert_eq!(flat[0].start, 0);
        for pair in flat.windows(2) {
            assert_eq!(pair[0].end, pair[1].start);
            assert_eq!(pair[1].start % 4096, 0);
        }
        assert_eq!(flat.last().unwrap().end, 10 * 4096 + 100);
        let random = assign(&[8192], 2, 4096, AccessPattern::Rand);
        assert!(random.iter().all(|w| w
            == &[Extent {
                target: 0,
                start: 0,
                end: 8192
            }]));
    }

    #[test]
    fn one_pass_reads_every_byte_once_with_a_short_tail() {
        let stop = AtomicBool::new(false);
        let reqs = requests(
            vec![Extent {
                target: 0,
                start: 0,
                end: 10_000,
            }],
            4096,
            AccessPattern::Seq,
            Amount::OnePass,
            &stop,
        );
        let lens: Vec<u64> = reqs.iter().map(|r| r.len).collect();
        assert_eq!(lens, vec![4096, 4096, 1808]);
    }

    #[test]
    fn byte_budgets_wrap_around() {
        let stop = AtomicBool::new(false);
        let reqs = requests(
            vec![Extent {
                target: 0,
                start: 0,
                end: 8192,
            }],
            4096,
            AccessPattern::Seq,
            Amount::Bytes(5 * 4096),
            &stop,
        );
        let offsets: Vec<u64> = reqs.iter().map(|r| r.offset).collect();
        assert_eq!(offsets, vec![0, 4096, 0, 4096, 0]);
    }

    #[test]
    fn time_budgets_end_and_stop_ends_everything() {
        let stop = AtomicBool::new(false);
        let mut timed = Requests::new(
            vec![Extent {
                target: 0,
                start: 0,
                end: 8192,
            }],
            4096,
            AccessPattern::Rand,
            Amount::Time(Duration::from_millis(20)),
            Instant::now(),
            1,
            0,
            &stop,
        );
        assert!(timed.next().is_some());
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(timed.next(), None);
        stop.store(true, Ordering::Relaxed);
        assert!(
            requests(
                vec![Extent {
                    target: 0,
                    start: 0,
                    end: 8192
                }],
                4096,
                AccessPattern::Seq,
                Amount::OnePass,
                &stop
            )
            .is_empty()
        );
    }

    proptest! {
        #[test]
        fn random_reads_are_whole_aligned_blocks_inside_the_extent(len in 4096u64..1_000_000, seed in any::<u64>()) {
            let stop = AtomicBool::new(false);
            let extents = vec![Extent { target: 0, start: 0, end: len }];
            let reqs: Vec<Request> = Requests::new(extents, 4096, AccessPattern::Rand, Amount::OnePass, Instant::now(), seed, 0, &stop).collect();
            prop_assert_eq!(reqs.len() as u64, len.div_ceil(4096));
            for r in reqs {
                prop_assert_eq!(r.offset % 4096, 0);
                prop_assert!(r.offset + r.len <= len);
            }
        }

        #[test]
        fn sequential_plans_cover_each_file_exactly_once(lens in prop::collection::vec(1u64..100_000, 1..4), workers in 1usize..6, bs in 1u64..9000) {
            let plan = assign(&lens, workers, bs, AccessPattern::Seq);
            let stop = AtomicBool::new(false);
            let mut read = vec![0u64; lens.len()];
            for extents in plan {
                for r in Requests::new(extents, bs, AccessPattern::Seq, Amount::OnePass, Instant::now(), 0, 0, &stop) {
                    read[r.target] += r.len;
                }
            }
            prop_assert_eq!(read, lens);
        }
    }
}
