//! Link format version 2: round trips, the byte layout, and every way a link loses
//! events, each counted once with its cause.

mod common;

use common::{HELLO, Rng};
use telering_core::{Category, Event, EventName, event_name};
use telering_embedded_io::link::{LinkDecoder, LinkEncoder, LinkItem, LossCause, MAX_BODY_V2};
use telering_embedded_io::{FrameErrorKind, FrameExporter};

fn name(i: u64) -> EventName {
    EventName::new(&format!("fw_name_{i:02}_{}", "x".repeat((i % 14) as usize))).unwrap()
}

fn random_events(rng: &mut Rng, n: usize, names: u64) -> Vec<Event> {
    let mut ts = 1_000u64;
    (0..n)
        .map(|_| {
            ts = match rng.below(10) {
                0 => ts.saturating_sub(rng.below(500)), // timestamps may go back
                1 => ts + rng.below(1 << 40),
                _ => ts + rng.below(300),
            };
            let value = match rng.below(4) {
                0 => rng.next(),
                1 => rng.below(128),
                _ => rng.below(70_000),
            };
            let category = Category::ALL[rng.below(8) as usize];
            Event::new(ts, category, name(rng.below(names)), value)
        })
        .collect()
}

/// The stream an encoder with a `NAMES`-entry table writes for `events`, with a
/// flush or clock frame now and then.
fn encode<const NAMES: usize>(events: &[Event], rng: &mut Rng) -> Vec<u8> {
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, NAMES> = LinkEncoder::new(&mut line, HELLO);
    for e in events {
        encoder.push(e).unwrap();
        match rng.below(20) {
            0 => encoder.flush().unwrap(),
            1 => encoder.clock(e.timestamp_us()).unwrap(),
            _ => {}
        }
    }
    encoder.flush().unwrap();
    line
}

fn decode_in_pieces(line: &[u8], piece: usize) -> Vec<LinkItem> {
    let mut decoder = LinkDecoder::new();
    let mut items = Vec::new();
    for p in line.chunks(piece.max(1)) {
        items.extend(decoder.feed(p));
    }
    items.extend(decoder.finish());
    items
}

#[derive(Debug, Default, PartialEq)]
struct Tally {
    events: Vec<Event>,
    lost: Vec<(u64, LossCause)>,
    noise: u64,
    epochs: Vec<bool>,
    resets_without_hello: u64,
    clocks: Vec<u64>,
}

fn tally(items: &[LinkItem]) -> Tally {
    let mut t = Tally::default();
    for item in items {
        match item {
            LinkItem::Event { event, .. } => t.events.push(*event),
            LinkItem::Lost { events, cause } => t.lost.push((*events, *cause)),
            LinkItem::Noise { bytes } => t.noise += bytes,
            LinkItem::Epoch { reset, .. } => t.epochs.push(*reset),
            LinkItem::ResetWithoutHello => t.resets_without_hello += 1,
            LinkItem::Clock { ticks } => t.clocks.push(*ticks),
            LinkItem::Problem(_) => {}
        }
    }
    t
}

/// Byte ranges of the frames of a stream (each with its delimiter).
fn frames(line: &[u8]) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &b) in line.iter().enumerate() {
        if b == 0 {
            if i > start {
                out.push(start..i + 1);
            }
            start = i + 1;
        }
    }
    out
}

/// The kind byte of an encoded frame (the COBS code byte comes first; version and
/// kind are never zero, so they follow it unchanged).
fn kind(line: &[u8], frame: &std::ops::Range<usize>) -> u8 {
    line[frame.start + 2]
}

#[test]
fn random_event_streams_round_trip_whatever_the_split() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..60 {
        let n = rng.below(400) as usize;
        // 40 names through a 16-entry table: later names travel inline.
        let events = random_events(&mut rng, n, 40);
        let line = encode::<16>(&events, &mut rng);
        let piece = 1 + rng.below(300) as usize;
        let t = tally(&decode_in_pieces(&line, piece));
        assert_eq!(t.events, events, "round {round}, pieces of {piece}");
        assert_eq!((t.lost, t.noise), (vec![], 0), "round {round}");
        assert_eq!(t.epochs, [false]);
    }
}

#[test]
fn a_full_name_table_sends_names_inline_and_loses_nothing() {
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 2> = LinkEncoder::new(&mut line, HELLO);
    let events: Vec<Event> = (0..10)
        .map(|i| Event::new(i, Category::Custom, name(i % 5), i))
        .collect();
    for e in &events {
        encoder.push(e).unwrap();
    }
    assert_eq!(encoder.names(), 2);
    encoder.flush().unwrap();
    assert_eq!(tally(&decode_in_pieces(&line, 7)).events, events);
}

#[test]
fn a_name_with_a_control_character_read_from_a_ring_crosses_the_link_unchanged() {
    // Recording refuses such names, but a ring written by another program may hold
    // one; forwarded, it arrives as it was (outputs escape it), in the table or inline.
    let mut field = [0u8; 32];
    field[0] = 8;
    let odd = EventName::from_field(&field).unwrap();
    for table in [true, false] {
        let mut line = Vec::new();
        let events = vec![Event::new(0, Category::Custom, odd, 0)];
        if table {
            let mut encoder: LinkEncoder<_, 4> = LinkEncoder::new(&mut line, HELLO);
            encoder.push(&events[0]).unwrap();
            encoder.flush().unwrap();
        } else {
            let mut encoder: LinkEncoder<_, 0> = LinkEncoder::new(&mut line, HELLO);
            encoder.push(&events[0]).unwrap();
            encoder.flush().unwrap();
        }
        let got = tally(&decode_in_pieces(&line, 3));
        assert_eq!(got.events, events, "name table: {table}");
        assert!(got.lost.is_empty(), "{:?}", got.lost);
    }
}

#[test]
fn the_demo_mix_takes_under_eight_bytes_per_event() {
    let names = [
        (Category::Transfer, event_name!("agent_tx_bytes")),
        (Category::Transfer, event_name!("agent_tx_requests_num")),
        (Category::Performance, event_name!("agent_xfer_time")),
        (Category::Transfer, event_name!("agent_rx_bytes")),
        (Category::Custom, event_name!("dpu_queue_depth")),
    ];
    let mut rng = Rng(7);
    let mut ts = 0;
    let events: Vec<Event> = (0..10_000)
        .map(|i| {
            ts += 900 + rng.below(200);
            let (c, n) = names[i % names.len()];
            Event::new(ts, c, n, 1 + rng.below(8192))
        })
        .collect();
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, HELLO);
    for chunk in events.chunks(32) {
        for e in chunk {
            encoder.push(e).unwrap();
        }
        encoder.flush().unwrap();
    }
    let per_event = line.len() as f64 / events.len() as f64;
    assert!(per_event < 8.0, "{per_event} bytes per event");
    assert_eq!(tally(&decode_in_pieces(&line, 64)).events, events);
}

#[test]
fn hello_and_clock_bodies_hold_their_fields_at_documented_offsets() {
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, HELLO);
    encoder.clock(300).unwrap();
    // Sync zero, hello, clock.
    assert_eq!(line[0], 0);
    let f = frames(&line);
    assert_eq!(f.len(), 2);
    let mut hello = vec![0u8; 64];
    let n = cobs::decode(&line[f[0].start..f[0].end - 1], &mut hello)
        .unwrap()
        .frame_size();
    let hello = &hello[..n];
    // version, kind, seq 0 (LE), ticks/s 1_000_000 (LEB128: C0 84 3D), capacity 64,
    // agent (length, bytes), firmware version (length, bytes), CRC-32.
    assert_eq!(hello[..6], [2, 1, 0, 0, 0, 0]);
    assert_eq!(hello[6..10], [0xC0, 0x84, 0x3D, 64]);
    assert_eq!(hello[10], 7);
    assert_eq!(&hello[11..18], b"dpu0-fw");
    assert_eq!(hello[18], 5);
    assert_eq!(&hello[19..24], b"2.1.0");
    assert_eq!(hello.len(), 28);
    let mut clock = vec![0u8; 64];
    let n = cobs::decode(&line[f[1].start..f[1].end - 1], &mut clock)
        .unwrap()
        .frame_size();
    // version, kind 4, seq 1, ticks 300 (AC 02), CRC-32.
    assert_eq!(clock[..n - 4], [2, 4, 1, 0, 0, 0, 0xAC, 0x02]);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC).checksum(&clock[..n - 4]);
    assert_eq!(clock[n - 4..n], crc.to_le_bytes());
    let t = tally(&decode_in_pieces(&line, 3));
    assert_eq!(t.clocks, [300]);
}

#[test]
fn no_frame_is_longer_than_the_limit() {
    let mut rng = Rng(3);
    let events = random_events(&mut rng, 2000, 200);
    let line = encode::<4>(&events, &mut rng);
    for f in frames(&line) {
        assert!(f.len() <= MAX_BODY_V2 + 2, "{}", f.len());
    }
}

/// Events sent in a stream of `n` demo events, the stream, and its batch frames.
fn stream(n: u64) -> (Vec<Event>, Vec<u8>) {
    let events: Vec<Event> = (0..n)
        .map(|i| Event::new(1000 + i * 10, Category::Custom, name(i % 3), i))
        .collect();
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, HELLO);
    for chunk in events.chunks(8) {
        for e in chunk {
            encoder.push(e).unwrap();
        }
        encoder.flush().unwrap();
    }
    (events, line)
}

fn delivered_plus_lost(t: &Tally) -> u64 {
    t.events.len() as u64 + t.lost.iter().map(|l| l.0).sum::<u64>()
}

#[test]
fn a_damaged_batch_counts_its_events_as_damaged() {
    let (events, mut line) = stream(40);
    let f = frames(&line);
    let batch = f
        .iter()
        .filter(|r| kind(&line, r) == 3)
        .nth(2)
        .unwrap()
        .clone();
    line[batch.start + 10] ^= 0x40;
    let t = tally(&decode_in_pieces(&line, 11));
    assert_eq!(t.lost, [(8, LossCause::Damaged)]);
    assert_eq!(t.noise, 0);
    assert_eq!(delivered_plus_lost(&t), events.len() as u64);
    let mut expected = events.clone();
    expected.drain(16..24);
    assert_eq!(t.events, expected);
}

#[test]
fn a_batch_that_never_arrived_counts_its_events_as_missing() {
    let (events, mut line) = stream(40);
    let f = frames(&line);
    let batch = f
        .iter()
        .filter(|r| kind(&line, r) == 3)
        .nth(1)
        .unwrap()
        .clone();
    line.drain(batch);
    let t = tally(&decode_in_pieces(&line, 5));
    assert_eq!(t.lost, [(8, LossCause::Missing)]);
    assert_eq!(delivered_plus_lost(&t), events.len() as u64);
}

#[test]
fn noise_between_frames_is_counted_as_noise_and_loses_nothing() {
    let (events, mut line) = stream(24);
    let f = frames(&line);
    let at = f[3].start;
    line.splice(at..at, [0x41, 0x42, 0x43, 0x00, 0x07, 0x00]);
    let t = tally(&decode_in_pieces(&line, 9));
    assert_eq!(t.events, events);
    assert_eq!((t.lost, t.noise), (vec![], 4));
}

#[test]
fn a_lost_name_table_counts_the_events_it_names_as_unknown_name() {
    let (events, mut line) = stream(16);
    let f = frames(&line);
    let names = f.iter().find(|r| kind(&line, r) == 2).unwrap().clone();
    line.drain(names);
    let t = tally(&decode_in_pieces(&line, 64));
    assert!(
        t.lost.iter().all(|l| l.1 == LossCause::UnknownName),
        "{:?}",
        t.lost
    );
    assert!(t.events.is_empty());
    assert_eq!(delivered_plus_lost(&t), events.len() as u64);
}

#[test]
fn a_device_restart_is_a_new_epoch_not_a_gap() {
    let (first, mut line) = stream(20);
    let (second, again) = stream(12);
    line.extend_from_slice(&again);
    let t = tally(&decode_in_pieces(&line, 13));
    assert_eq!(t.epochs, [false, true]);
    assert!(t.lost.is_empty());
    assert_eq!(t.events, [first, second].concat());
}

#[test]
fn a_restart_whose_hello_was_lost_is_a_reset_and_its_missing_events_are_counted() {
    // Longer than the window of frames a copy is recognised in (docs/LINK.md, "Frames
    // out of order"): the second epoch's frames are byte for byte the first's.
    let (first, mut line) = stream(600);
    let (_, again) = stream(16);
    let f = frames(&again);
    // Drop the second epoch's hello and its first batch (with its name table).
    let keep = f
        .iter()
        .filter(|r| kind(&again, r) == 3)
        .nth(1)
        .unwrap()
        .start;
    line.extend_from_slice(&again[keep..]);
    let t = tally(&decode_in_pieces(&line, 17));
    assert_eq!(t.resets_without_hello, 1);
    assert_eq!(t.events, first);
    // The first batch never arrived (8), the second's names are unknown (8).
    assert_eq!(
        t.lost,
        [(8, LossCause::Missing), (8, LossCause::UnknownName)]
    );
}

#[test]
fn a_receiver_joining_late_decodes_from_the_next_definitions() {
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(&mut line, HELLO);
    let e = |i: u64| Event::new(i, Category::Custom, name(i % 2), i);
    for i in 0..4 {
        encoder.push(&e(i)).unwrap();
    }
    encoder.flush().unwrap();
    let joined_at = encoder.writer().len();
    encoder.resend_definitions().unwrap();
    for i in 4..8 {
        encoder.push(&e(i)).unwrap();
    }
    encoder.flush().unwrap();
    let t = tally(&decode_in_pieces(&line[joined_at..], 5));
    assert_eq!(t.epochs, [false]);
    assert_eq!(t.events, (4..8).map(e).collect::<Vec<_>>());
    assert!(t.lost.is_empty());
}

#[test]
fn version_1_and_version_2_frames_decode_in_one_stream() {
    let mut line = Vec::new();
    let mut v1 = FrameExporter::new(&mut line);
    let a = Event::new(5, Category::Transfer, event_name!("agent_tx_bytes"), 4096);
    v1.export(&a).unwrap();
    v1.export(&a).unwrap();
    let (events, v2) = stream(9);
    line.extend_from_slice(&v2);
    let t = tally(&decode_in_pieces(&line, 4));
    assert_eq!(t.events, [vec![a, a], events].concat());
    assert!(t.lost.is_empty());
}

#[test]
fn a_missing_version_1_frame_is_one_lost_event() {
    let mut line = Vec::new();
    let mut v1 = FrameExporter::new(&mut line);
    for v in 0..5 {
        v1.export(&Event::new(v, Category::Custom, event_name!("n"), v))
            .unwrap();
    }
    let f = frames(&line);
    line.drain(f[2].clone());
    let t = tally(&decode_in_pieces(&line, 4));
    assert_eq!(t.events.len(), 4);
    assert_eq!(t.lost, [(1, LossCause::Missing)]);
}

#[test]
fn an_intact_frame_of_an_unknown_version_or_kind_is_reported_by_name() {
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISO_HDLC);
    for (body_head, expected) in [
        (
            [3u8, 1, 0, 0, 0, 0],
            FrameErrorKind::UnsupportedVersion { found: 3 },
        ),
        (
            [2u8, 9, 0, 0, 0, 0],
            FrameErrorKind::UnknownKind { kind: 9 },
        ),
    ] {
        let mut body = body_head.to_vec();
        body.extend_from_slice(&crc.checksum(&body).to_le_bytes());
        let mut encoded = vec![0u8; 32];
        let n = cobs::encode(&body, &mut encoded);
        encoded.truncate(n);
        encoded.push(0);
        let items = decode_in_pieces(&encoded, 3);
        assert!(
            items
                .iter()
                .any(|i| matches!(i, LinkItem::Problem(e) if e.kind == expected)),
            "{items:?}"
        );
        let text = expected.to_string();
        assert!(text.contains("field `"), "{text}");
    }
}

/// A line that fails once, on the write that crosses `fail_at`.
struct FlakyLine {
    bytes: Vec<u8>,
    fail_at: usize,
    failed: bool,
}

impl embedded_io::ErrorType for FlakyLine {
    type Error = embedded_io::ErrorKind;
}

impl embedded_io::Write for FlakyLine {
    fn write(&mut self, buf: &[u8]) -> Result<usize, embedded_io::ErrorKind> {
        if !self.failed && self.bytes.len() + buf.len() > self.fail_at {
            self.failed = true;
            return Err(embedded_io::ErrorKind::BrokenPipe);
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> Result<(), embedded_io::ErrorKind> {
        Ok(())
    }
}

#[test]
fn a_failed_batch_write_is_counted_on_the_device_and_its_events_lost_once_on_the_host() {
    let (_, reference) = stream(24);
    let second_batch = frames(&reference)
        .into_iter()
        .filter(|r| kind(&reference, r) == 3)
        .nth(1)
        .unwrap();
    let line = FlakyLine {
        bytes: Vec::new(),
        fail_at: second_batch.start + 5,
        failed: false,
    };
    let mut encoder: LinkEncoder<_, 16> = LinkEncoder::new(line, HELLO);
    let events: Vec<Event> = (0..24)
        .map(|i| Event::new(1000 + i * 10, Category::Custom, name(i % 3), i))
        .collect();
    let mut failures = 0;
    for chunk in events.chunks(8) {
        for e in chunk {
            encoder.push(e).unwrap();
        }
        failures += u64::from(encoder.flush().is_err());
    }
    assert_eq!((failures, encoder.events_failed()), (1, 8));
    let line = encoder.into_inner().bytes;
    let t = tally(&decode_in_pieces(&line, 6));
    assert_eq!(t.events.len(), 16);
    // The torn frame arrived in part: a damaged frame; the next one is intact.
    assert_eq!(t.lost, [(8, LossCause::Damaged)]);
}

#[test]
fn a_stream_defining_endless_names_keeps_a_bounded_table_and_counts_the_rest_lost() {
    let limit = LinkDecoder::MAX_NAMES as u64;
    let mut line = Vec::new();
    let mut encoder: LinkEncoder<_, 8192> = LinkEncoder::new(&mut line, HELLO);
    for i in 0..limit + 100 {
        let name = EventName::new(&format!("n{i}")).unwrap();
        encoder
            .push(&Event::new(i, Category::Custom, name, i))
            .unwrap();
    }
    encoder.flush().unwrap();
    let t = tally(&decode_in_pieces(&line, 4096));
    assert_eq!(t.events.len() as u64, limit);
    assert_eq!(delivered_plus_lost(&t), limit + 100);
    assert!(t.lost.iter().all(|l| l.1 == LossCause::UnknownName));
}
