//! Random sequences of ring operations under both overflow policies, checked against
//! a `VecDeque` model: FIFO order, exact drop/loss counts, intact events, and
//! observers that never invent, reorder or miscount events.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use std::collections::VecDeque;
use telering_core::{Batch, Category, Event, EventName, ObserverStart, OverflowPolicy, Ring};

#[derive(Arbitrary, Debug)]
enum Op {
    Push,
    PushBatch(u8),
    Pop,
    PopBatch(u8),
    Observe,
}

#[derive(Arbitrary, Debug)]
struct Input {
    overwrite: bool,
    ops: Vec<Op>,
}

const CAPACITY: usize = 8;

fn ev(v: u64) -> Event {
    Event::new(v, Category::Custom, EventName::new("fuzz").unwrap(), v)
}

/// What the ring should hold, and what it should have counted.
struct Model {
    policy: OverflowPolicy,
    queue: VecDeque<u64>,
    next: u64,
    dropped: u64,
    lost: u64,
}

impl Model {
    fn push(&mut self, batch: &mut Batch<'_, &Ring<CAPACITY>>) {
        let full = self.queue.len() == CAPACITY - 1;
        if self.policy == OverflowPolicy::DropNewest && full {
            assert!(batch.push(&ev(self.next)).is_err());
            self.dropped += 1;
        } else {
            batch.push(&ev(self.next)).unwrap();
            self.queue.push_back(self.next);
            // An overwriting ring keeps the newest `CAPACITY` events.
            if self.queue.len() > CAPACITY {
                self.queue.pop_front();
                self.lost += 1;
            }
        }
        self.next += 1;
    }

    fn check_pop(&mut self, popped: Option<Event>) {
        match popped {
            Some(e) => {
                assert_eq!(e.timestamp_us(), e.value(), "torn event");
                assert_eq!(Some(e.value()), self.queue.pop_front());
            }
            None => assert!(self.queue.is_empty()),
        }
    }
}

fuzz_target!(|input: Input| {
    let policy = if input.overwrite {
        OverflowPolicy::OverwriteOldest
    } else {
        OverflowPolicy::DropNewest
    };
    let ring = Ring::<CAPACITY>::new();
    let (mut producer, mut consumer) = ring.split(policy).unwrap();
    let mut observer = ring.observer(ObserverStart::Oldest).unwrap();
    let mut model = Model {
        policy,
        queue: VecDeque::new(),
        next: 0,
        dropped: 0,
        lost: 0,
    };
    let mut last_observed: Option<u64> = None;
    let mut observed = 0u64;

    for op in input.ops {
        match op {
            Op::Push => model.push(&mut producer.batch()),
            Op::PushBatch(n) => {
                let mut batch = producer.batch();
                for _ in 0..n % 20 {
                    model.push(&mut batch);
                }
            }
            Op::Pop => model.check_pop(consumer.pop()),
            Op::PopBatch(n) => {
                let mut got = Vec::new();
                consumer.read_batch(n as usize % 20, |e| got.push(*e));
                for e in got {
                    model.check_pop(Some(e));
                }
            }
            Op::Observe => {
                while let Some(e) = observer.poll() {
                    assert_eq!(e.timestamp_us(), e.value(), "torn event");
                    if let Some(prev) = last_observed {
                        assert!(e.value() > prev, "observer went backwards");
                    }
                    last_observed = Some(e.value());
                    observed += 1;
                }
                // Caught up: everything published was seen or counted as missed.
                assert_eq!(
                    observed + observer.events_missed(),
                    model.next - model.dropped
                );
            }
        }
        assert_eq!(producer.events_dropped(), model.dropped);
    }
    // Drain: the consumer ends with exactly the model's events and loss count.
    while !model.queue.is_empty() {
        model.check_pop(consumer.pop());
    }
    model.check_pop(consumer.pop());
    assert_eq!(consumer.events_lost(), model.lost);
});
