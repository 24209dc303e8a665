//! The C API's version-2 link (`telering_link_*`), called as C calls it: a ring and a
//! link in caller memory, frames out through a C callback, read back with
//! telering-embedded-io's `LinkDecoder`.

use std::ffi::{CString, c_void};
use std::ptr;
use telering_embedded_io::link::{LinkDecoder, LinkItem, LossCause};
use telering_firmware::*;

/// What the write callback sees: the bytes so far, and whether to fail the next writes.
#[derive(Default)]
struct Line {
    bytes: Vec<u8>,
    fail: bool,
}

unsafe extern "C" fn write(context: *mut c_void, bytes: *const u8, len: usize) -> i32 {
    // SAFETY: the tests pass a `&mut Line` as the context, unused elsewhere meanwhile.
    let line = unsafe { &mut *context.cast::<Line>() };
    if line.fail {
        return -1;
    }
    // SAFETY: the library passes `len` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(bytes, len) };
    line.bytes.extend_from_slice(bytes);
    0
}

/// An 8-byte aligned buffer of `bytes` bytes.
fn buffer(bytes: usize) -> Vec<u64> {
    vec![0u64; bytes.div_ceil(8)]
}

fn record(ring: &mut [u64], name: &str, value: u64, at: u64) -> telering_ring_status_t {
    let name = CString::new(name).unwrap();
    // SAFETY: an initialised ring and a NUL-terminated name.
    unsafe { telering_ring_record(ring.as_mut_ptr().cast(), 7, name.as_ptr(), value, at) }
}

fn init_link(link: &mut [u64], agent: &str, line: &mut Line) -> telering_ring_status_t {
    let agent = CString::new(agent).unwrap();
    // SAFETY: the buffer is aligned and as long as given; the strings NUL-terminated;
    // the context outlives every use of the link in these tests.
    unsafe {
        telering_link_init(
            link.as_mut_ptr().cast(),
            link.len() * 8,
            agent.as_ptr(),
            c"1.2.3".as_ptr(),
            1_000_000,
            64,
            Some(write),
            ptr::from_mut(line).cast(),
        )
    }
}

fn stats(link: &mut [u64]) -> telering_link_stats_t {
    let mut s = telering_link_stats_t::default();
    // SAFETY: an initialised link and a valid destination.
    let status = unsafe { telering_link_stats(link.as_mut_ptr().cast(), &mut s) };
    assert_eq!(status, telering_ring_status_t::TELERING_RING_OK);
    s
}

#[test]
fn c_link_sends_a_hello_names_and_batches_the_decoder_reads_back_exactly() {
    let mut ring = buffer(TELERING_RING_BUFFER_SIZE_64);
    // SAFETY: aligned, valid for its length.
    let status =
        unsafe { telering_ring_init(ring.as_mut_ptr().cast(), ring.len() * 8, ptr::null_mut()) };
    assert_eq!(status, telering_ring_status_t::TELERING_RING_OK);
    let mut line = Line::default();
    let mut link = buffer(TELERING_LINK_SIZE);
    // The agent name is copied: the C string is freed before the link writes it.
    assert_eq!(
        init_link(&mut link, "c-fw", &mut line),
        telering_ring_status_t::TELERING_RING_OK
    );
    let names = [
        "agent_tx_bytes",
        "dpu_queue_depth",
        "a",
        "b",
        "c",
        "d",
        "e",
        "f",
        "g",
        "h",
    ];
    let mut expected = Vec::new();
    for (i, name) in names.iter().cycle().take(40).enumerate() {
        let (value, at) = (i as u64 * 1000, 5_000 + i as u64 * 7);
        assert_eq!(
            record(&mut ring, name, value, at),
            telering_ring_status_t::TELERING_RING_OK
        );
        expected.push((name.to_string(), value, at));
    }
    let mut taken = 0usize;
    // SAFETY: an initialised link and ring.
    let status = unsafe {
        telering_link_drain(
            link.as_mut_ptr().cast(),
            ring.as_mut_ptr().cast(),
            usize::MAX,
            &mut taken,
        )
    };
    assert_eq!(
        (status, taken),
        (telering_ring_status_t::TELERING_RING_OK, 40)
    );
    // SAFETY: an initialised link.
    let status = unsafe { telering_link_clock(link.as_mut_ptr().cast(), 123_456) };
    assert_eq!(status, telering_ring_status_t::TELERING_RING_OK);

    let mut decoder = LinkDecoder::new();
    let (mut agent, mut events, mut clocks) = (None, Vec::new(), Vec::new());
    for item in decoder.feed(&line.bytes) {
        match item {
            LinkItem::Epoch { device, reset } => {
                assert!(!reset);
                agent = Some((device.agent, device.firmware_version, device.ring_capacity));
            }
            LinkItem::Event { event, version } => {
                assert_eq!(version, 2);
                events.push((
                    event.name().unwrap().to_owned(),
                    event.value(),
                    event.timestamp_us(),
                ));
            }
            LinkItem::Clock { ticks } => clocks.push(ticks),
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(agent, Some(("c-fw".to_owned(), "1.2.3".to_owned(), 64)));
    // Ten names, eight in the table, two inline: every event arrives as recorded.
    assert_eq!(events, expected);
    assert_eq!(clocks, [123_456]);
    let s = stats(&mut link);
    assert_eq!(
        (s.events_taken, s.events_failed, s.frames_failed),
        (40, 0, 0)
    );
    assert!(s.frames_written >= 4, "{s:?}"); // hello, names, batches, clock
}

#[test]
fn a_failed_write_counts_its_events_lost_and_the_host_sees_the_gap() {
    let mut ring = buffer(TELERING_RING_BUFFER_SIZE_64);
    // SAFETY: aligned, valid for its length.
    unsafe { telering_ring_init(ring.as_mut_ptr().cast(), ring.len() * 8, ptr::null_mut()) };
    let mut line = Line::default();
    let mut link = buffer(TELERING_LINK_SIZE);
    init_link(&mut link, "c-fw", &mut line);
    let drain = |link: &mut [u64], ring: &mut [u64]| {
        // SAFETY: an initialised link and ring.
        unsafe {
            telering_link_drain(
                link.as_mut_ptr().cast(),
                ring.as_mut_ptr().cast(),
                usize::MAX,
                ptr::null_mut(),
            )
        }
    };
    for i in 0..5 {
        record(&mut ring, "agent_tx_bytes", i, i);
    }
    assert_eq!(
        drain(&mut link, &mut ring),
        telering_ring_status_t::TELERING_RING_OK
    );
    line.fail = true;
    for i in 5..8 {
        record(&mut ring, "agent_tx_bytes", i, i);
    }
    assert_eq!(
        drain(&mut link, &mut ring),
        telering_ring_status_t::TELERING_RING_ERR_WRITE_FAILED
    );
    line.fail = false;
    for i in 8..10 {
        record(&mut ring, "agent_tx_bytes", i, i);
    }
    assert_eq!(
        drain(&mut link, &mut ring),
        telering_ring_status_t::TELERING_RING_OK
    );
    let s = stats(&mut link);
    assert_eq!((s.events_taken, s.events_failed), (10, 3), "{s:?}");

    let mut decoder = LinkDecoder::new();
    let (mut values, mut lost) = (Vec::new(), 0);
    for item in decoder.feed(&line.bytes) {
        match item {
            LinkItem::Event { event, .. } => values.push(event.value()),
            LinkItem::Lost { events, cause } => {
                assert_eq!(cause, LossCause::Missing);
                lost += events;
            }
            _ => {}
        }
    }
    assert_eq!(values, [0, 1, 2, 3, 4, 8, 9]);
    assert_eq!(lost, 3);
}

#[test]
fn bad_link_arguments_are_refused_and_leave_the_memory_alone() {
    let mut line = Line::default();
    let mut link = buffer(TELERING_LINK_SIZE);
    for agent in ["", &"x".repeat(65)] {
        assert_eq!(
            init_link(&mut link, agent, &mut line),
            telering_ring_status_t::TELERING_RING_ERR_INVALID_NAME,
            "{agent:?}"
        );
    }
    assert!(
        link.iter().all(|&w| w == 0),
        "a refused init wrote to the link"
    );
    // Not UTF-8.
    let bad = [0xFFu8, 0xFE, 0];
    // SAFETY: the string is NUL-terminated; the buffer aligned and long enough.
    let status = unsafe {
        telering_link_init(
            link.as_mut_ptr().cast(),
            TELERING_LINK_SIZE,
            bad.as_ptr().cast(),
            c"1".as_ptr(),
            1,
            64,
            Some(write),
            ptr::null_mut(),
        )
    };
    assert_eq!(
        status,
        telering_ring_status_t::TELERING_RING_ERR_INVALID_NAME
    );
    let mut short = buffer(TELERING_LINK_SIZE - 8);
    assert_eq!(
        init_link(&mut short, "c-fw", &mut line),
        telering_ring_status_t::TELERING_RING_ERR_BUFFER_TOO_SMALL
    );
    // SAFETY: NULL is refused before anything is read.
    let status = unsafe { telering_link_clock(ptr::null_mut(), 1) };
    assert_eq!(
        status,
        telering_ring_status_t::TELERING_RING_ERR_NULL_POINTER
    );
    // Memory no init has touched.
    // SAFETY: aligned and readable: the tag is read and does not match.
    let status = unsafe { telering_link_clock(link.as_mut_ptr().cast(), 1) };
    assert_eq!(
        status,
        telering_ring_status_t::TELERING_RING_ERR_NOT_INITIALISED
    );
    // A ring's memory is not a link.
    let mut ring = buffer(TELERING_RING_BUFFER_SIZE_64);
    // SAFETY: aligned, valid for its length.
    unsafe { telering_ring_init(ring.as_mut_ptr().cast(), ring.len() * 8, ptr::null_mut()) };
    // SAFETY: an initialised ring, readable.
    let status = unsafe { telering_link_clock(ring.as_mut_ptr().cast(), 1) };
    assert_eq!(
        status,
        telering_ring_status_t::TELERING_RING_ERR_NOT_INITIALISED
    );
    assert!(line.bytes.is_empty());
}

const TELERING_RING_BUFFER_SIZE_64: usize =
    TELERING_RING_CONTROL_SIZE + TELERING_RING_HEADER_SIZE + 64 * TELERING_RING_SLOT_SIZE;
