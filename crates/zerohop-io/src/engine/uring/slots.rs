//! The buffer slots of one io_uring worker: which are free, what the read
//! in each asked for, and which the sink is still reading.

use std::collections::VecDeque;
use std::time::Instant;

use crate::engine::RunError;
use crate::plan::Request;
use crate::sink::QueueLane;

/// The in-flight state of one buffer slot.
#[derive(Debug, Clone, Copy)]
pub(super) struct Slot {
    /// The read the slot holds.
    pub(super) request: Request,
    /// Bytes of it read so far.
    pub(super) done: u64,
    /// When it was first submitted.
    pub(super) submitted: Instant,
}

/// Every slot is in exactly one place: the free list, in flight (its read
/// submitted), or with the sink until the lane says it is done with it.
#[derive(Debug)]
pub(super) struct Slots {
    free: Vec<usize>,
    table: Vec<Slot>,
    with_sink: VecDeque<usize>,
}

impl Slots {
    /// `count` free slots.
    pub(super) fn new(count: usize) -> Slots {
        let idle = Slot {
            request: Request {
                target: 0,
                offset: 0,
                len: 0,
            },
            done: 0,
            submitted: Instant::now(),
        };
        Slots {
            free: (0..count).rev().collect(),
            table: vec![idle; count],
            with_sink: VecDeque::new(),
        }
    }

    /// A free slot, if any.
    pub(super) fn take(&mut self) -> Option<usize> {
        self.free.pop()
    }

    /// Returns a slot taken and not used.
    pub(super) fn give_back(&mut self, slot: usize) {
        self.free.push(slot);
    }

    /// Records that slot `slot` now holds `request`, submitted now.
    pub(super) fn start(&mut self, slot: usize, request: Request) {
        self.table[slot] = Slot {
            request,
            done: 0,
            submitted: Instant::now(),
        };
    }

    /// The state of slot `slot`.
    pub(super) fn get(&self, slot: usize) -> Slot {
        self.table[slot]
    }

    /// The state of slot `slot`, to count what a completion read.
    pub(super) fn get_mut(&mut self, slot: usize) -> &mut Slot {
        &mut self.table[slot]
    }

    /// Hands the first `len` bytes of slot `slot` to the sink: the slot is
    /// free at once, or once the sink is done with it.
    pub(super) fn deliver(
        &mut self,
        lane: &mut dyn QueueLane,
        slot: usize,
        len: usize,
    ) -> Result<(), RunError> {
        if lane.deliver(slot, len)? {
            self.free.push(slot);
        } else {
            self.with_sink.push_back(slot);
        }
        Ok(())
    }

    /// Frees, oldest first, the slots the sink is done with.
    pub(super) fn reclaim(&mut self, lane: &dyn QueueLane) -> Result<(), RunError> {
        while let Some(&slot) = self.with_sink.front() {
            if !lane.is_done(slot)? {
                break;
            }
            self.with_sink.pop_front();
            self.free.push(slot);
        }
        Ok(())
    }

    /// Waits until the sink is done with the oldest slot it holds; `false`
    /// when it holds none.
    pub(super) fn wait_oldest(&self, lane: &dyn QueueLane) -> Result<bool, RunError> {
        match self.with_sink.front() {
            Some(&slot) => {
                lane.wait(slot)?;
                Ok(true)
            }
            None => Ok(false),
        }
    }
}
