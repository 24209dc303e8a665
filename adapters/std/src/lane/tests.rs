use super::*;
use crate::names::NameTable;
use std::sync::Arc;
use telering_core::event_name;

/// The names of a fresh table: ids of the built-ins.
fn names() -> Vec<Named> {
    NameTable::new().read().names().to_vec()
}

fn values(events: &[Event]) -> Vec<u64> {
    events.iter().map(Event::value).collect()
}

#[test]
fn a_lane_delivers_in_order_and_counts_what_it_refuses() {
    let (mut p, mut c) = new_lane(8).unwrap();
    for v in 0..10 {
        p.push(v as u16 % 3, 100 + v, v);
    }
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), 7);
    assert_eq!(values(&out), [0, 1, 2, 3, 4, 5, 6]);
    assert_eq!(
        out.iter().map(Event::timestamp_us).collect::<Vec<_>>(),
        [100, 101, 102, 103, 104, 105, 106]
    );
    let table = names();
    for (v, e) in out.iter().enumerate() {
        let (name, category) = table[v % 3];
        assert_eq!((e.event_name(), e.category()), (Ok(name), Ok(category)));
    }
    assert_eq!((c.written(), c.dropped()), (7, 3));
    assert_eq!(c.take_new_drops(), 3);
    assert_eq!(c.take_new_drops(), 0);
}

#[test]
fn push_all_writes_all_or_counts_all_as_dropped() {
    let (mut p, mut c) = new_lane(8).unwrap();
    assert!(p.push_all_with(4, 7, |i| (0, i as u64)));
    assert!(!p.push_all_with(4, 7, |i| (0, 10 + i as u64))); // 3 free slots
    assert!(p.push_all_with(3, 7, |i| (0, 20 + i as u64)));
    let mut out = Vec::new();
    c.drain(&names(), &mut out);
    assert_eq!(values(&out), [0, 1, 2, 3, 20, 21, 22]);
    assert_eq!((c.written(), c.dropped()), (7, 4));
}

#[test]
fn written_counts_events_waiting_and_drained() {
    let (mut p, mut c) = new_lane(8).unwrap();
    p.push(0, 1, 1);
    assert!(p.push_all_with(2, 1, |i| (0, i as u64)));
    assert_eq!(c.written(), 3);
    let mut out = Vec::new();
    c.drain(&names(), &mut out);
    p.push(0, 1, 4);
    assert_eq!((c.written(), c.dropped()), (4, 0));
}

#[test]
fn push_all_sees_the_room_a_drain_frees() {
    let (mut p, mut c) = new_lane(8).unwrap();
    assert!(p.push_all_with(6, 0, |i| (0, 1 + i as u64)));
    assert!(!p.push_all_with(2, 0, |i| (0, 7 + i as u64))); // 1 free slot
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), 6);
    assert!(p.push_all_with(4, 0, |i| (0, 9 + i as u64)));
    for v in 13..16 {
        p.push(0, 0, v);
    }
    assert!(!p.push_all_with(1, 0, |_| (0, 16))); // full: 7 waiting
    out.clear();
    assert_eq!(c.drain(&names(), &mut out), 7);
    assert_eq!(values(&out), [9, 10, 11, 12, 13, 14, 15]);
    assert_eq!((c.written(), c.dropped()), (13, 3));
}

/// Stamps whose high bits change between records, with the lane never drained
/// between them: longer undrained than the 48-bit wrap time, many times over.
#[test]
fn stamps_are_restored_whole_across_wraps_of_their_low_48_bits_while_undrained() {
    let (mut p, mut c) = new_lane(64).unwrap();
    let wrap = 1u64 << 48;
    let stamps = [
        5,
        wrap - 1,
        wrap, // the low bits wrapped: a marker
        wrap + 3,
        3 * wrap + 7, // two wraps at once
        3 * wrap + 7,
        u64::MAX, // the last epoch
        2,        // back to epoch 0 (a realtime clock stepped back)
    ];
    for (i, &s) in stamps.iter().enumerate() {
        assert!(p.push(0, s, i as u64));
    }
    assert!(p.push_all_with(2, 9 * wrap + 1, |i| (1, 100 + i as u64)));
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), stamps.len() + 2);
    let got: Vec<u64> = out.iter().map(Event::timestamp_us).collect();
    let mut want = stamps.to_vec();
    want.extend([9 * wrap + 1, 9 * wrap + 1]);
    assert_eq!(got, want);
    // Markers are no events.
    assert_eq!((c.written(), c.dropped()), (10, 0));
}

#[test]
fn a_marker_that_finds_the_lane_full_refuses_its_events_and_is_written_later() {
    let (mut p, mut c) = new_lane(4).unwrap(); // 3 records
    let wrap = 1u64 << 48;
    assert!(p.push(0, 1, 0));
    assert!(p.push(0, 2, 1));
    // A new epoch needs a marker and a slot: one slot is free, so both are refused.
    assert!(!p.push(0, wrap + 1, 2));
    assert!(!p.push_all_with(3, wrap + 2, |i| (0, 3 + i as u64)));
    assert_eq!(c.dropped(), 4, "one event, then a batch of three");
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), 2);
    // Room again: the marker goes first.
    assert!(p.push(0, wrap + 5, 6));
    out.clear();
    c.drain(&names(), &mut out);
    assert_eq!(
        out.iter()
            .map(|e| (e.timestamp_us(), e.value()))
            .collect::<Vec<_>>(),
        [(wrap + 5, 6)]
    );
    assert_eq!((c.written(), c.dropped()), (3, 4));
}

#[test]
fn custom_ids_expand_to_their_names_and_categories() {
    let table = NameTable::new();
    let q = table
        .intern(&event_name!("queue_depth"), Category::System)
        .unwrap();
    let (mut p, mut c) = new_lane(8).unwrap();
    p.push(q, 42, 17);
    let mut out = Vec::new();
    c.drain(table.read().names(), &mut out);
    assert_eq!(
        out,
        [Event::new(
            42,
            Category::System,
            event_name!("queue_depth"),
            17
        )]
    );
}

#[test]
fn the_consumer_outlives_an_exited_producer_and_drains_it() {
    let (p, mut c) = new_lane(16).unwrap();
    let handle = std::thread::spawn(move || {
        let mut p = p;
        for v in 0..5 {
            p.push(0, v, v);
        }
    });
    handle.join().unwrap();
    assert!(c.producer_gone());
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), 5);
}

#[test]
fn a_threads_lanes_are_released_when_it_exits() {
    let (lane, consumer) = new_lane(4).unwrap();
    std::thread::spawn(move || {
        let mut lane = Some(lane);
        assert_eq!(
            with_lane(u64::MAX - 3, || lane.take(), |l| l.push(0, 1, 1)),
            Some(true)
        );
    })
    .join()
    .unwrap();
    assert!(consumer.producer_gone(), "lane released at exit");
}

/// Records from a thread-local destructor that runs while the thread exits.
struct RecordsOnExit(std::sync::mpsc::Sender<(Option<bool>, LaneConsumer)>);

impl Drop for RecordsOnExit {
    fn drop(&mut self) {
        let (lane, consumer) = new_lane(4).unwrap();
        let mut lane = Some(lane);
        let pushed = with_lane(u64::MAX - 4, || lane.take(), |l| l.push(0, 3, 3));
        let _ = self.0.send((pushed, consumer));
    }
}

#[test]
fn a_lane_asked_for_while_the_thread_exits_is_refused_or_released() {
    thread_local! {
        static ON_EXIT: std::cell::RefCell<Option<RecordsOnExit>> =
            const { std::cell::RefCell::new(None) };
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Registered before the lanes' guard, so destroyed after it.
        ON_EXIT.with(|o| *o.borrow_mut() = Some(RecordsOnExit(tx)));
        let (lane, _consumer) = new_lane(4).unwrap();
        let mut lane = Some(lane);
        assert_eq!(
            with_lane(u64::MAX - 5, || lane.take(), |l| l.push(0, 1, 1)),
            Some(true)
        );
    })
    .join()
    .unwrap();
    let (pushed, consumer) = rx.recv().unwrap();
    // Either the exiting thread got no lane (the caller counts the event), or the
    // lane it got was released with the thread: none outlives it unseen.
    assert!(
        pushed.is_none() || consumer.producer_gone(),
        "pushed {pushed:?} into a lane that outlived its thread"
    );
}

#[test]
fn a_call_re_entering_a_recording_call_finds_no_lane_and_the_lanes_come_back() {
    let (lane, mut consumer) = new_lane(8).unwrap();
    let mut lane = Some(lane);
    let id = u64::MAX - 6;
    let inner = with_lane(
        id,
        || lane.take(),
        |l| {
            assert!(l.push(0, 1, 1));
            // Recording again from inside (a global allocator that records).
            with_lane(id, || panic!("no registration while lent"), |_| ())
        },
    );
    assert_eq!(inner, Some(None), "the re-entered call found a lane");
    // Put back: the next call finds the registered lane, no new registration.
    assert_eq!(
        with_lane(id, || panic!("registered twice"), |l| l.push(0, 2, 2)),
        Some(true)
    );
    let mut out = Vec::new();
    assert_eq!(consumer.drain(&names(), &mut out), 2);
}

#[test]
fn lanes_lent_to_a_call_that_panics_are_put_back() {
    let (lane, mut consumer) = new_lane(8).unwrap();
    let mut lane = Some(lane);
    let id = u64::MAX - 7;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        with_lane(
            id,
            || lane.take(),
            |l| {
                l.push(1, 5, 5);
                panic!("inside the recording call");
            },
        )
    }));
    assert!(unwound.is_err());
    assert_eq!(
        with_lane(id, || panic!("registered twice"), |l| l.push(1, 5, 5)),
        Some(true)
    );
    let mut out = Vec::new();
    assert_eq!(consumer.drain(&names(), &mut out), 2);
}

#[test]
fn thread_lanes_of_a_closed_telemetry_are_freed_at_the_next_registration() {
    let (p1, c1) = new_lane(4).unwrap();
    let weak = Arc::downgrade(&c1.storage);
    let mut p1 = Some(p1);
    assert_eq!(with_lane(u64::MAX - 1, || p1.take(), |_| 1), Some(1));
    drop(c1); // the Telemetry went away
    let (p2, _c2) = new_lane(4).unwrap();
    let mut p2 = Some(p2);
    assert_eq!(with_lane(u64::MAX - 2, || p2.take(), |_| 2), Some(2));
    assert!(weak.upgrade().is_none(), "closed lane still allocated");
}

#[test]
fn a_lane_signals_the_flush_once_per_crossing_of_its_half_full_mark() {
    use std::time::Instant;
    let signal = Arc::new(FlushSignal::default());
    let (mut p, mut c) = new_lane_waking(16, Some(Arc::clone(&signal))).unwrap();
    // A deadline already past: the wait answers at once with what was signalled.
    let now = || Instant::now();
    for v in 0..7 {
        assert!(p.push(0, 0, v));
    }
    assert_eq!(signal.wait_until(now()), Woken::Deadline, "7 of 16: below");
    assert!(p.push(0, 0, 7));
    assert_eq!(signal.wait_until(now()), Woken::Early, "8 of 16: the mark");
    for v in 8..15 {
        assert!(p.push(0, 0, v));
    }
    assert_eq!(
        signal.wait_until(now()),
        Woken::Deadline,
        "no drain: no second signal"
    );
    let mut out = Vec::new();
    assert_eq!(c.drain(&names(), &mut out), 15);
    for v in 0..7 {
        assert!(p.push(0, 0, v));
    }
    assert_eq!(signal.wait_until(now()), Woken::Deadline);
    assert!(p.push_all_with(2, 0, |i| (0, i as u64)));
    assert_eq!(
        signal.wait_until(now()),
        Woken::Early,
        "a batch crosses it too"
    );
    assert_eq!(c.written(), 24);
}

#[test]
fn a_stop_request_wins_over_an_early_wake() {
    let signal = FlushSignal::default();
    signal.wake_early();
    signal.stop();
    assert_eq!(signal.wait_until(std::time::Instant::now()), Woken::Stop);
}
