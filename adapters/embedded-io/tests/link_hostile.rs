//! Hostile and reordered version-2 and version-1 streams, built byte by byte from
//! `docs/LINK.md`: the decoder never panics, and every event is delivered or counted
//! lost once.

use telering_core::{Category, Event, event_name};
use telering_embedded_io::link::varint;
use telering_embedded_io::link::{LinkDecoder, LinkItem, LossCause};
use telering_embedded_io::{FRAME_WIRE_LEN, encode_frame};

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xEDB8_8320 & (crc & 1).wrapping_neg());
        }
    }
    !crc
}

fn cobs(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut block = Vec::new();
    for &b in data {
        if b == 0 {
            out.push(block.len() as u8 + 1);
            out.append(&mut block);
        } else {
            block.push(b);
            if block.len() == 254 {
                out.push(255);
                out.append(&mut block);
            }
        }
    }
    out.push(block.len() as u8 + 1);
    out.extend(block);
    out
}

fn vi(value: u64) -> Vec<u8> {
    let mut out = [0u8; varint::MAX_VARINT_LEN];
    let n = varint::put(value, &mut out).unwrap();
    out[..n].to_vec()
}

fn text(s: &str) -> Vec<u8> {
    [&[s.len() as u8][..], s.as_bytes()].concat()
}

fn frame(version: u8, kind: u8, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut body = vec![version, kind];
    body.extend(seq.to_le_bytes());
    body.extend(payload);
    let crc = crc32(&body);
    body.extend(crc.to_le_bytes());
    let mut out = cobs(&body);
    out.push(0);
    out
}

fn hello(seq: u32) -> Vec<u8> {
    let p = [vi(1_000_000), vi(256), text("dev"), text("1.0")].concat();
    frame(2, 1, seq, &p)
}

fn names(seq: u32) -> Vec<u8> {
    frame(2, 2, seq, &[vi(1), vec![1], text("ev")].concat())
}

/// A batch of `n` events named by id 1, one tick apart, starting at `first`.
fn batch(seq: u32, first: u64, n: u64) -> Vec<u8> {
    let mut p = [vi(first), vi(100)].concat();
    for i in 0..n {
        p.extend([vi(1), vi(varint::zigzag(1)), vi(first.wrapping_add(i))].concat());
    }
    frame(2, 3, seq, &p)
}

#[derive(Debug, Default, PartialEq)]
struct Tally {
    values: Vec<u64>,
    damaged: u64,
    missing: u64,
    unknown_name: u64,
    resets: u64,
    noise: u64,
    problems: usize,
}

fn tally(line: &[u8]) -> Tally {
    let mut decoder = LinkDecoder::new();
    let mut items: Vec<LinkItem> = decoder.feed(line).collect();
    items.extend(decoder.finish());
    let mut t = Tally::default();
    for item in items {
        match item {
            LinkItem::Event { event, .. } => t.values.push(event.value()),
            LinkItem::Lost { events, cause } => match cause {
                LossCause::Damaged => t.damaged += events,
                LossCause::Missing => t.missing += events,
                LossCause::UnknownName => t.unknown_name += events,
            },
            LinkItem::ResetWithoutHello => t.resets += 1,
            LinkItem::Epoch { reset: true, .. } => t.resets += 1,
            LinkItem::Noise { bytes } => t.noise += bytes,
            LinkItem::Problem(_) => t.problems += 1,
            _ => {}
        }
    }
    t
}

#[test]
fn a_batch_whose_event_indices_pass_2_to_the_64_is_malformed_not_a_panic() {
    for first in [u64::MAX, u64::MAX - 2, u64::MAX - 3] {
        let last = batch(3, first, 5);
        let line = [hello(0), names(1), batch(2, 0, 1), last.clone()].concat();
        let t = tally(&line);
        assert_eq!(t.values, [0], "first_event {first}");
        // Intact but unreadable, and no later frame shows a gap: its bytes are noise.
        assert_eq!(t.noise, last.len() as u64 - 1, "first_event {first}");
        assert_eq!((t.missing, t.damaged, t.unknown_name), (0, 0, 0));
        // The stream goes on after it.
        let more = [line, batch(4, 1, 2)].concat();
        let t = tally(&more);
        assert_eq!(t.values, [0, 1, 2], "first_event {first}");
    }
}

#[test]
fn a_batch_at_the_top_of_the_event_index_range_still_decodes() {
    let line = [hello(0), names(1), batch(2, u64::MAX - 3, 3)].concat();
    let t = tally(&line);
    assert_eq!(t.values.len(), 3);
}

#[test]
fn timestamp_deltas_that_pass_the_ends_of_u64_decode_modulo_2_to_the_64() {
    // base u64::MAX, then +1 and -1: the encoder's wrapping deltas, given back exactly.
    let mut p = [vi(0), vi(u64::MAX)].concat();
    for (delta, value) in [(0i64, 7u64), (1, 8), (-1, 9), (i64::MIN, 10)] {
        p.extend([vi(1), vi(varint::zigzag(delta)), vi(value)].concat());
    }
    let line = [hello(0), names(1), frame(2, 3, 2, &p)].concat();
    let mut decoder = LinkDecoder::new();
    let stamps: Vec<u64> = decoder
        .feed(&line)
        .filter_map(|i| match i {
            LinkItem::Event { event, .. } => Some(event.timestamp_us()),
            _ => None,
        })
        .collect();
    assert_eq!(stamps, [u64::MAX, 0, u64::MAX, u64::MAX / 2]);
}

fn v1_frames(seqs: &[u32]) -> Vec<u8> {
    let mut line = Vec::new();
    let mut wire = [0u8; FRAME_WIRE_LEN];
    for &seq in seqs {
        let e = Event::new(
            1,
            Category::Custom,
            event_name!("v1ev"),
            u64::from(seq % 100),
        );
        let len = encode_frame(seq, &e, &mut wire);
        line.extend_from_slice(&wire[..len]);
    }
    line
}

#[test]
fn a_late_or_duplicated_version_1_frame_is_counted_once() {
    let top = u32::MAX;
    let line = v1_frames(&[top - 2, top - 1, top, 0, 1, 3, 2, 2, 7]);
    let t = tally(&line);
    // 11 sent; seq 2 counted missing when 3 came, so not delivered when it comes late.
    assert_eq!(t.values, [93, 94, 95, 0, 1, 3, 7]);
    assert_eq!(
        (t.missing, t.damaged, t.unknown_name, t.noise),
        (4, 0, 0, 0)
    );
    assert_eq!(t.values.len() as u64 + t.missing, 11);
    assert_eq!(t.problems, 2);
}

#[test]
fn a_version_1_frame_far_behind_is_a_restart_not_a_gap() {
    let line = v1_frames(&[500, 501, 502, 7, 8]);
    let t = tally(&line);
    assert_eq!(t.values, [0, 1, 2, 7, 8]);
    assert_eq!(t.missing, 0);
}

fn clock(seq: u32, ticks: u64) -> Vec<u8> {
    frame(2, 4, seq, &vi(ticks))
}

#[test]
fn a_batch_arriving_after_the_next_is_late_not_a_restart() {
    let line = [
        hello(0),
        names(1),
        batch(2, 0, 5),
        batch(4, 10, 5),
        batch(3, 5, 5),
        batch(5, 15, 5),
    ]
    .concat();
    let t = tally(&line);
    // 20 sent: 5 to 9 were counted missing when 10 came, so they are not delivered
    // late; the name table stays.
    assert_eq!(
        t.values,
        [(0..5).collect::<Vec<_>>(), (10..20).collect()].concat()
    );
    assert_eq!((t.missing, t.damaged, t.unknown_name), (5, 0, 0));
    assert_eq!(t.resets, 0);
    assert_eq!(t.values.len() as u64 + t.missing, 20);
    assert_eq!(t.problems, 1);
}

#[test]
fn a_late_batch_whose_events_were_not_counted_yet_is_delivered() {
    let line = [
        hello(0),
        names(1),
        batch(2, 0, 5),
        clock(4, 77),
        batch(3, 5, 5),
        batch(5, 10, 5),
    ]
    .concat();
    let t = tally(&line);
    assert_eq!(t.values, (0..15).collect::<Vec<_>>());
    assert_eq!(
        (t.missing, t.damaged, t.unknown_name, t.resets),
        (0, 0, 0, 0)
    );
}

#[test]
fn a_late_name_table_defines_its_names_and_a_repeated_batch_is_delivered_once() {
    let line = [
        hello(0),
        batch(2, 0, 5),
        names(1),
        batch(3, 5, 5),
        batch(3, 5, 5),
    ]
    .concat();
    let t = tally(&line);
    assert_eq!(t.values, (5..10).collect::<Vec<_>>());
    assert_eq!((t.missing, t.unknown_name, t.resets), (0, 5, 0));
}

#[test]
fn a_first_batch_lost_after_the_hello_is_counted_missing() {
    let t = tally(&[hello(0), names(1), batch(3, 4, 2)].concat());
    assert_eq!(t.values, [4, 5]);
    assert_eq!(t.missing, 4);
}

#[test]
fn sequence_numbers_going_back_with_other_content_are_still_a_restart() {
    // The device restarted after 6 frames; its hello was lost.
    let line = [
        hello(0),
        names(1),
        batch(2, 0, 5),
        batch(3, 5, 5),
        batch(4, 10, 5),
        clock(5, 9),
        names(1),
        batch(2, 0, 3),
    ]
    .concat();
    let t = tally(&line);
    assert_eq!(t.resets, 1);
    // Its name table is byte for byte the one received 5 frames before: a copy, by
    // the rule; the new epoch's batch names ids not defined in it.
    assert_eq!(t.values.len(), 15);
    assert_eq!((t.unknown_name, t.missing), (3, 0));
    // Far back also.
    let mut far = vec![hello(0), names(1)];
    far.extend((0..100).map(|i| batch(2 + i, u64::from(i), 1)));
    far.push(batch(5, 0, 1));
    let t = tally(&far.concat());
    assert_eq!(t.resets, 1);
}

/// The fuzz targets' seeds for these streams (`fuzz/seeds/`): a piece length byte
/// (and for `frame_decode` a sequence number), then the stream.
fn fuzz_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let top = u32::MAX;
    let v2 = |frames: Vec<Vec<u8>>| [vec![7u8], frames.concat()].concat();
    let v1 = [top - 2, top - 1, top, 0, 1, 3, 2, 2, 7];
    vec![
        (
            "link_decode/batch-index-overflow",
            v2(vec![
                hello(0),
                names(1),
                batch(2, 0, 1),
                batch(3, u64::MAX, 1),
            ]),
        ),
        (
            "link_decode/batch-reordered",
            v2(vec![
                hello(0),
                names(1),
                batch(2, 0, 5),
                batch(4, 10, 5),
                batch(3, 5, 5),
                batch(5, 15, 5),
            ]),
        ),
        (
            "link_decode/names-late-batch-repeated",
            v2(vec![
                hello(0),
                batch(2, 0, 5),
                names(1),
                batch(3, 5, 5),
                batch(3, 5, 5),
            ]),
        ),
        (
            "link_decode/v1-late-and-repeated",
            [vec![5u8], v1_frames(&v1)].concat(),
        ),
        (
            "frame_decode/v1-late-and-repeated",
            [vec![5u8, 0, 0, 0, 0], v1_frames(&v1)].concat(),
        ),
    ]
}

#[test]
fn the_committed_fuzz_seeds_are_the_generated_ones() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds");
    let write = std::env::var_os("TELERING_WRITE_FUZZ_SEEDS").is_some();
    for (name, bytes) in fuzz_seeds() {
        let path = dir.join(name);
        if write {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &bytes).unwrap();
        }
        let committed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (TELERING_WRITE_FUZZ_SEEDS=1 writes it)",
                path.display()
            )
        });
        assert!(
            committed == bytes,
            "{} differs from its generator",
            path.display()
        );
    }
}

/// The frames of a line, delimiter included.
fn split_frames(line: &[u8]) -> Vec<Vec<u8>> {
    line.split_inclusive(|&b| b == 0)
        .map(<[u8]>::to_vec)
        .collect()
}

#[test]
fn reordered_and_repeated_frames_never_count_an_event_twice() {
    use telering_embedded_io::link::{Hello, LinkEncoder};
    let hello = Hello {
        agent: "dev",
        firmware_version: "1.0",
        ticks_per_second: 1_000_000,
        ring_capacity: 64,
    };
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let names = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];
    for round in 0..200 {
        let sent = 50 + next() % 200;
        let mut line = Vec::new();
        let mut encoder: LinkEncoder<_, 4> = LinkEncoder::new(&mut line, hello);
        for v in 0..sent {
            let n = names[(next() % names.len() as u64) as usize];
            let name = telering_core::EventName::new(n).unwrap();
            encoder
                .push(&Event::new(1000 + v, Category::Custom, name, v))
                .unwrap();
            if next() % 6 == 0 {
                encoder.flush().unwrap();
            }
        }
        encoder.flush().unwrap();
        let mut frames = split_frames(&line);
        // Swap neighbours and repeat frames, never the leading delimiter and the hello
        // (a copy of a hello with sequence number 0 is a new epoch).
        let mut i = 2;
        while i + 1 < frames.len() {
            match next() % 10 {
                0 => frames.swap(i, i + 1),
                1 => {
                    let copy = frames[i].clone();
                    frames.insert(i + 1 + (next() % 3) as usize % (frames.len() - i), copy);
                }
                _ => {}
            }
            i += 1;
        }
        let t = tally(&frames.concat());
        let mut seen = t.values.clone();
        seen.sort_unstable();
        seen.dedup();
        assert_eq!(seen.len(), t.values.len(), "round {round}: delivered twice");
        assert!(seen.iter().all(|&v| v < sent), "round {round}");
        let lost = t.missing + t.damaged + t.unknown_name;
        assert_eq!(t.values.len() as u64 + lost, sent, "round {round}: {t:?}");
        assert_eq!(t.resets, 0, "round {round}");
    }
}

#[test]
fn reordered_and_repeated_version_1_frames_are_counted_once_by_both_decoders() {
    use telering_embedded_io::FrameDecoder;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for round in 0..200 {
        let sent = 20 + next() % 100;
        // Version 1 has no epoch but sequence number 0: stay clear of it.
        let start = 1 + (next() as u32) % (u32::MAX - 200);
        let mut order: Vec<u32> = (0..sent as u32).map(|i| start + i).collect();
        let mut i = 1;
        while i + 1 < order.len() {
            match next() % 10 {
                0 => order.swap(i, i + 1),
                1 => order.insert(i + 1 + (next() % 3) as usize % (order.len() - i), order[i]),
                _ => {}
            }
            i += 1;
        }
        let mut line = Vec::new();
        let mut wire = [0u8; FRAME_WIRE_LEN];
        for &seq in &order {
            let e = Event::new(1, Category::Custom, event_name!("v1ev"), u64::from(seq));
            let len = encode_frame(seq, &e, &mut wire);
            line.extend_from_slice(&wire[..len]);
        }
        let t = tally(&line);
        let mut values = t.values.clone();
        values.sort_unstable();
        values.dedup();
        assert_eq!(
            values.len(),
            t.values.len(),
            "round {round}: delivered twice"
        );
        // The last frame sent is never moved: every frame is delivered or counted.
        assert_eq!(t.values.len() as u64 + t.missing, sent, "round {round}");

        let mut decoder = FrameDecoder::new();
        let delivered = decoder.feed(&line).filter(Result::is_ok).count() as u64;
        assert_eq!(delivered, t.values.len() as u64, "round {round}");
        assert_eq!(decoder.frames_missing(), t.missing, "round {round}");
    }
}
